//! Broken cases are refused with `file:line:column`, the offending source
//! line and a `help:` that names the fix — the valid names, with the
//! nearest one suggested. Each message is a snapshot, reviewed like code.
//! The files live in `tests/broken/`, where the eval suite does not look.

mod support;

use std::path::Path;

use rstest::rstest;
use sdd_harness::loading::case::Case;
use sdd_harness::loading::diagnostics;

#[rstest]
#[case::unknown_key("unknown-key")]
#[case::wrong_type("wrong-type")]
#[case::unknown_fixture("unknown-fixture")]
#[case::unknown_gate("unknown-gate")]
#[case::unknown_check("unknown-check")]
#[case::unknown_crash_point("unknown-crash-point")]
#[case::unknown_stop_cause("unknown-stop-cause")]
#[case::unknown_event("unknown-event")]
#[case::bad_answer("bad-answer")]
#[case::bad_duration("bad-duration")]
#[case::barrier_without_action("barrier-without-action")]
#[case::tick_out_of_range("tick-out-of-range")]
#[case::bad_id("bad-id")]
#[case::no_ticks("no-ticks")]
#[case::comment_trap("comment-trap")]
#[case::unknown_requirement("unknown-requirement")]
#[case::session_wrapper_only_crash_point("session-wrapper-only-crash-point")]
#[case::unknown_pointer_field("unknown-pointer-field")]
#[case::bad_timeout("bad-timeout")]
#[case::late_unknown_key("late-unknown-key")]
#[case::agent_protocol_action("agent-protocol-action")]
#[case::agent_without_agent_driver("agent-without-agent-driver")]
#[case::model_without_real_driver("model-without-real-driver")]
#[case::real_driver_with_skill("real-driver-with-skill")]
#[case::real_session_answers("real-session-answers")]
#[case::real_barrier_without_helper("real-barrier-without-helper")]
#[case::unknown_driver("unknown-driver")]
#[case::plugin_without_real_session("plugin-without-real-session")]
#[case::tick_prompt_without_real_session("tick-prompt-without-real-session")]
#[case::quiet_without_real_loop("quiet-without-real-loop")]
#[case::statusline_without_real_loop("statusline-without-real-loop")]
#[case::dismiss_without_real_loop("dismiss-without-real-loop")]
#[case::real_loop_without_plugin("real-loop-without-plugin")]
#[case::real_loop_kill("real-loop-kill")]
#[case::real_loop_machines_at_once("real-loop-machines-at-once")]
#[case::real_loop_machines_before("real-loop-machines-before")]
#[case::edit_unknown_state_file("edit-unknown-state-file")]
#[case::edit_unknown_field("edit-unknown-field")]
#[case::edit_set_and_remove("edit-set-and-remove")]
#[case::edit_line_of_a_document("edit-line-of-a-document")]
#[case::source_without_hooks("source-without-hooks")]
#[case::release_lock_without_live_holder("release-lock-without-live-holder")]
#[case::answer_code_without_receiver("answer-code-without-receiver")]
fn broken_case_is_refused_at_its_location(#[case] name: &str) {
    let path = Path::new("tests/broken").join(format!("{name}.yaml"));
    let err = Case::load(&path, &support::fixtures()).expect_err("a broken case must not load");
    let rendered = diagnostics::render(&err, &path);
    let location = format!("{}:", path.display());
    assert!(
        rendered.starts_with(&format!("error: {location}")) && err.line > 0 && err.column > 0,
        "no file:line:column in\n{rendered}"
    );
    assert!(
        rendered
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("help: ")),
        "no help line in\n{rendered}"
    );
    assert_eq!(
        rendered.matches(" --> ").count(),
        1,
        "the source snippet is printed once:\n{rendered}"
    );
    insta::assert_snapshot!(name, rendered);
}
