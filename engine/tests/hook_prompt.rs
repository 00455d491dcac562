//! `sdd-loop hook user-prompt-submit` against the mock tracker: a loop
//! prompt begins the tick with this session as the lock holder; work
//! becomes the model's context, while skip, stop and ask block the prompt
//! (no request would reach the model); a gate is answered by the next
//! prompt; any other prompt passes untouched, writing nothing.

#[expect(dead_code, reason = "each hook test binary uses part of the world")]
mod hooks;

use hooks::*;
use sdd_mocks::git::{Git, GitIdentity};

const WORK_PROMPT: &str = "/sdd:work --loop --max-prs 1";

#[test]
fn any_other_prompt_passes_untouched_and_writes_nothing() {
    let w = World::new(TWO_STORIES);
    for prompt in [
        "hello, what is this project?",
        "/sdd:work --max-prs 1",
        "/loop 5m /babysit-prs",
        "/sdd:plan --loop",
    ] {
        let a = w.hook("user-prompt-submit", &w.prompt(prompt, "p-1"));
        assert!(a.passed(), "{prompt}: {:?}", a.json);
        assert!(a.output.stdout.is_empty());
    }
    assert!(w.files().is_empty(), "no loop, no state: {:?}", w.files());
    assert!(w.tracker.requests().is_empty(), "the tracker is not asked");
}

#[test]
fn a_loop_prompt_in_input_the_hook_cannot_read_is_blocked_saying_why() {
    let w = World::new(TWO_STORIES);
    let mut input = w.prompt("/sdd:work --loop --max-prs 1", "p-1");
    input.as_object_mut().unwrap().remove("session_id");
    let a = w.hook("user-prompt-submit", &input);
    assert!(a.blocked(), "{:?}", a.json);
    assert!(
        a.text().contains("cannot read this prompt's hook input")
            && a.text().contains("session_id"),
        "{}",
        a.text()
    );
    let mut other = w.prompt("hello", "p-2");
    other.as_object_mut().unwrap().remove("session_id");
    assert!(
        w.hook("user-prompt-submit", &other).passed(),
        "any other prompt passes"
    );
    assert!(w.tracker.requests().is_empty());
}

#[test]
fn a_work_prompt_begins_the_tick_for_the_session_and_gives_the_request_as_context() {
    let w = World::new(TWO_STORIES);
    let a = w.hook("user-prompt-submit", &w.prompt(WORK_PROMPT, "p-1"));
    let context = a.context().unwrap_or_else(|| panic!("{:?}", a.json));
    assert!(
        context.contains("iteration 1 of the work loop is open"),
        "{context}"
    );
    assert!(context.contains("#1 Add login page"), "{context}");
    assert!(
        context.contains("Open at most 1 new pull request"),
        "{context}"
    );
    assert!(
        context.contains("Do not run `sdd-loop work begin` or `sdd-loop work end` yourself"),
        "{context}"
    );
    let lock: serde_json::Value =
        serde_json::from_slice(&std::fs::read(w.state("work.lock")).unwrap()).unwrap();
    assert_eq!(
        lock["pid"],
        std::process::id(),
        "the session holds the lock"
    );
    assert!(w.is_open("work"));
    assert!(
        w.state("work.exchange/1/agent-before.json").exists(),
        "begin kept the world's snapshot for end"
    );
    let log = w.log("work");
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["decision"], "context");
    assert_eq!(log[0]["prompt_id"], "p-1");
    assert_eq!(log[0]["iteration"], 1);
    assert!(
        log[0]["saw"][1]
            .as_str()
            .unwrap()
            .contains("sdd-loop work begin --loop --max-prs 1 --holder-pid"),
        "{log:?}"
    );
}

#[test]
fn the_plugin_s_own_names_and_loop_resends_are_ticks_too() {
    for prompt in [
        "/sdd-loop:work --loop --max-prs 1",
        "/loop 5m /sdd:work --loop --max-prs 1",
        "/loop /sdd-loop:work --loop --max-prs 1 every 20m",
    ] {
        let w = World::new(TWO_STORIES);
        let a = w.hook("user-prompt-submit", &w.prompt(prompt, "p-1"));
        assert!(a.context().is_some(), "{prompt}: {:?}", a.json);
        assert!(w.is_open("work"), "{prompt}");
    }
}

#[test]
fn a_prompt_while_another_session_holds_the_lock_is_blocked_as_a_skip() {
    let w = World::new(TWO_STORIES);
    let other = OtherSession::start();
    let held = w.hook_as(
        "user-prompt-submit",
        &w.prompt(WORK_PROMPT, "other-1"),
        other.pid(),
    );
    assert!(held.context().is_some(), "{:?}", held.json);
    let a = w.hook("user-prompt-submit", &w.prompt(WORK_PROMPT, "p-1"));
    assert!(a.blocked(), "{:?}", a.json);
    assert!(
        a.text().contains("another tick holds the lock"),
        "{}",
        a.text()
    );
    assert!(
        a.text().contains("the model was not called"),
        "{}",
        a.text()
    );
    let last = w.history("work").pop().unwrap();
    assert_eq!(last["outcome"], "skipped_lock");
}

#[test]
fn a_prompt_after_the_loop_ended_is_blocked_with_the_final_report() {
    let w = World::new(EMPTY);
    let a = w.hook("user-prompt-submit", &w.prompt(WORK_PROMPT, "p-1"));
    assert!(a.blocked(), "{:?}", a.json);
    let text = a.text();
    assert!(
        text.contains("the work loop has ended (backlog_empty)"),
        "{text}"
    );
    assert!(text.contains("## Loop Ended"), "the final report: {text}");
    assert!(text.contains("To end /loop"), "{text}");
    // Ended runs stay ended: the next firing is refused the same way.
    let again = w.hook("user-prompt-submit", &w.prompt(WORK_PROMPT, "p-2"));
    assert!(again.blocked() && again.text().contains("has ended"));
}

/// Issue 33: a `/loop` cron job fires every minute for up to 7 days, and
/// each fire after the run ended appended another halted line.
#[test]
fn fires_after_the_session_was_told_the_run_ended_record_nothing_more() {
    let mut w = World::new(EMPTY);
    let first = w.hook("user-prompt-submit", &w.prompt(WORK_PROMPT, "p-1"));
    assert!(first.blocked(), "{:?}", first.json);
    assert_eq!(w.history("work").len(), 1, "the stop is recorded once");
    for n in 2..5 {
        let again = w.hook(
            "user-prompt-submit",
            &w.prompt(WORK_PROMPT, &format!("p-{n}")),
        );
        let text = again.text();
        assert!(again.blocked(), "{:?}", again.json);
        assert!(text.contains("this fire records nothing"), "{text}");
        assert!(
            text.contains("## Loop Ended"),
            "the same final report: {text}"
        );
    }
    assert_eq!(w.history("work").len(), 1, "later fires append nothing");
    // Another session was never told: its loop prompt runs begin, which
    // records the refusal (and tells it).
    w.session_id = "99999999-2222-3333-4444-555555555555".into();
    let other = w.hook("user-prompt-submit", &w.prompt(WORK_PROMPT, "q-1"));
    assert!(
        other.blocked() && !other.text().contains("this fire records nothing"),
        "{:?}",
        other.json
    );
    assert_eq!(w.history("work").len(), 2);
    // --fresh runs begin again, whatever this session was told.
    let fresh = format!("{WORK_PROMPT} --fresh");
    let fresh = w.hook("user-prompt-submit", &w.prompt(&fresh, "q-2"));
    assert!(
        !fresh.text().contains("this fire records nothing"),
        "{:?}",
        fresh.json
    );
    assert_eq!(w.history("work").len(), 3);
}

#[test]
fn a_gate_is_asked_in_one_prompt_and_answered_by_the_next() {
    let w = World::new(AMBIGUOUS);
    let prompt = "/sdd:work --loop --max-agents 1";
    let asked = w.hook("user-prompt-submit", &w.prompt(prompt, "p-1"));
    assert!(asked.blocked(), "{:?}", asked.json);
    let text = asked.text();
    assert!(
        text.contains(
            "Issue #20 has ambiguous criteria. Skip, escalate, or proceed with my best interpretation?"
        ),
        "the gate's exact question: {text}"
    );
    assert!(
        text.contains("`skip`, `escalate`, `proceed`, `stop`"),
        "{text}"
    );
    assert!(
        text.contains("--answer ambiguous-criteria=<option>"),
        "{text}"
    );
    assert!(!w.is_open("work"), "asking changed nothing");
    assert!(w.history("work").is_empty());

    let answered = w.hook("user-prompt-submit", &w.prompt("proceed", "p-2"));
    let context = answered
        .context()
        .unwrap_or_else(|| panic!("{:?}", answered.json));
    assert!(context.contains("#20"), "{context}");
    assert!(
        context.contains("best interpretation"),
        "criteria as the user answered: {context}"
    );
    let log = w.log("work");
    assert!(
        log[1]["saw"][0]
            .as_str()
            .unwrap()
            .contains("(the prompt answers ambiguous-criteria=proceed)"),
        "{log:?}"
    );
}

#[test]
fn a_gate_is_answered_by_the_loop_prompt_with_answer_too() {
    let w = World::new(AMBIGUOUS);
    let a = w.hook(
        "user-prompt-submit",
        &w.prompt(
            "/sdd:work --loop --max-agents 1 --answer ambiguous-criteria=proceed",
            "p-1",
        ),
    );
    assert!(a.context().is_some(), "{:?}", a.json);
}

#[test]
fn a_prompt_that_is_no_answer_passes_and_forgets_the_question() {
    let w = World::new(AMBIGUOUS);
    let asked = w.hook(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --max-agents 1", "p-1"),
    );
    assert!(asked.blocked());
    let chat = w.hook("user-prompt-submit", &w.prompt("what does #20 say?", "p-2"));
    assert!(chat.passed(), "{:?}", chat.json);
    let late = w.hook("user-prompt-submit", &w.prompt("proceed", "p-3"));
    assert!(late.passed(), "the question was forgotten: {:?}", late.json);
    assert!(!w.is_open("work"));
}

#[test]
fn a_begin_error_blocks_the_prompt_with_error_and_help() {
    let w = World::new(TWO_STORIES);
    let a = w.hook(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --max-prz 1", "p-1"),
    );
    assert!(a.blocked(), "{:?}", a.json);
    assert!(a.text().contains("begin failed"), "{}", a.text());
    assert!(a.text().contains("--max-prz"), "{}", a.text());
    assert!(!w.is_open("work"));
}

#[test]
fn an_iteration_the_session_left_open_is_ended_before_the_next_begin() {
    let w = World::new(TWO_STORIES);
    let first = w.hook(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --max-prs 5", "p-1"),
    );
    assert!(first.context().is_some());
    // No stop hook ran (the session was interrupted): the next loop
    // prompt of the same session ends iteration 1 first.
    let second = w.hook(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --max-prs 5", "p-2"),
    );
    let context = second
        .context()
        .unwrap_or_else(|| panic!("{:?}", second.json));
    assert!(context.contains("iteration 2"), "{context}");
    let history = w.history("work");
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0]["iteration"], 1);
    assert_eq!(history[0]["outcome"], "ok");
}

// Issue 33: a `source: "system"` prompt `/sdd:work --loop --max-prs 99`
// began a tick with max_prs 99 — another session's or a channel's message
// could start a loop in this session and set its budgets.
#[test]
fn a_loop_prompt_from_the_user_the_sdk_or_loop_s_own_fires_begins_a_tick() {
    for source in [
        Some("user"),
        Some("sdk"),
        Some("loop_wakeup"),
        Some("schedule_wakeup"),
        None,
    ] {
        let w = World::new(TWO_STORIES);
        let a = w.hook(
            "user-prompt-submit",
            &w.prompt_from("/loop /sdd-loop:work --loop --max-prs 2", "p-1", source),
        );
        let context = a
            .context()
            .unwrap_or_else(|| panic!("{source:?}: {:?}", a.json));
        assert!(
            context.contains("iteration 1 of the work loop is open"),
            "{source:?}: {context}"
        );
        assert!(w.is_open("work"), "{source:?}");
        assert_eq!(w.budget("work")["max_prs"], 2, "{source:?}");
    }
}

#[test]
fn a_system_or_poll_event_prompt_quoting_a_loop_prompt_changes_nothing() {
    for source in ["system", "poll_event", "a_sender_not_known_yet"] {
        // No loop yet: nothing is created.
        let w = World::new(TWO_STORIES);
        let a = w.hook(
            "user-prompt-submit",
            &w.prompt_from("/sdd:work --loop --max-prs 99", "p-1", Some(source)),
        );
        assert!(a.passed(), "{source}: {:?}", a.json);
        assert!(w.files().is_empty(), "{source}: {:?}", w.files().keys());
        assert!(w.tracker.requests().is_empty(), "{source}");

        // An iteration open in this session: not ended, not begun again.
        let w = World::new(TWO_STORIES);
        let begun = w.hook(
            "user-prompt-submit",
            &w.prompt_from("/sdd:work --loop --max-prs 1", "p-1", Some("user")),
        );
        assert!(begun.context().is_some(), "{:?}", begun.json);
        let before = w.files();
        for prompt in [
            "/sdd:work --loop --max-prs 99 --fresh",
            "/loop /sdd:review --loop",
            "/sdd:work --loop --resume",
        ] {
            let a = w.hook(
                "user-prompt-submit",
                &w.prompt_from(prompt, "p-2", Some(source)),
            );
            assert!(a.passed(), "{source} {prompt}: {:?}", a.json);
        }
        assert_eq!(w.files(), before, "{source}: .sdd/loop/ changed");
        assert!(w.is_open("work"));
    }
}

#[test]
fn a_system_prompt_neither_answers_nor_forgets_a_pending_gate() {
    let w = World::new(AMBIGUOUS);
    let asked = w.hook(
        "user-prompt-submit",
        &w.prompt_from("/sdd:work --loop --max-agents 1", "p-1", Some("user")),
    );
    assert!(asked.blocked(), "{:?}", asked.json);
    let before = w.files();
    for (text, source) in [
        ("proceed", "system"),
        ("ambiguous-criteria=stop", "poll_event"),
        ("what does #20 say?", "system"),
    ] {
        let a = w.hook(
            "user-prompt-submit",
            &w.prompt_from(text, "p-2", Some(source)),
        );
        assert!(a.passed(), "{source} {text}: {:?}", a.json);
    }
    assert_eq!(w.files(), before, ".sdd/loop/ changed");
    let answered = w.hook(
        "user-prompt-submit",
        &w.prompt_from("proceed", "p-3", Some("user")),
    );
    assert!(
        answered.context().is_some_and(|c| c.contains("#20")),
        "the user's answer still answers: {:?}",
        answered.json
    );
}

/// The lock another session holds, for a loop prompt's tick to skip.
fn held_by_another(w: &World) -> OtherSession {
    let other = OtherSession::start();
    let held = w.hook_as(
        "user-prompt-submit",
        &w.prompt(WORK_PROMPT, "other-1"),
        other.pid(),
    );
    assert!(held.context().is_some(), "{:?}", held.json);
    other
}

// Issue 45: a self-paced `/loop` (no interval) fires again only when the
// model arms its next wakeup in the turn. A skipped fire was blocked, so
// the model was not called, armed nothing, and the loop ended silently
// while there was still work for it.
#[test]
fn a_skipped_fire_of_a_self_paced_loop_goes_on_only_to_re_arm_its_wakeup() {
    for (prompt, source) in [
        (
            "/loop /sdd-loop:work --loop --max-prs 1",
            Some("loop_wakeup"),
        ),
        ("/sdd-loop:work --loop --max-prs 1", Some("loop_wakeup")),
        ("/loop /sdd-loop:work --loop --max-prs 1", Some("user")),
        ("/loop /sdd-loop:work --loop --max-prs 1", None),
    ] {
        let w = World::new(TWO_STORIES);
        let _other = held_by_another(&w);
        let before = w.history("work").len();
        let a = w.hook("user-prompt-submit", &w.prompt_from(prompt, "p-1", source));
        let context = a
            .context()
            .unwrap_or_else(|| panic!("{prompt} {source:?}: {:?}", a.json));
        for says in [
            "Nothing to do this tick of the work loop — another tick holds the lock",
            "re-arm it now as /loop says (ScheduleWakeup with the same prompt), then end the turn",
            "no iteration is open",
        ] {
            assert!(context.contains(says), "{prompt} {source:?}: {context}");
        }
        assert!(
            !context.contains("#1 Add login page") && !context.contains("iteration 1 of"),
            "no work is given: {context}"
        );
        let history = w.history("work");
        assert_eq!(history.len(), before + 1, "the skip is recorded once");
        assert_eq!(history[before]["outcome"], "skipped_lock");
        let log = w.log("work");
        assert_eq!(log.last().unwrap()["decision"], "context");

        // In that turn the model may re-arm the wakeup and nothing else.
        let pr = w.hook(
            "pre-tool-use",
            &w.bash("gh pr create --title x --body 'Closes #1'", "p-1"),
        );
        assert!(pr.denied(), "{prompt} {source:?}: {:?}", pr.json);
        assert!(
            pr.text().contains("tick of the work loop was skipped"),
            "{}",
            pr.text()
        );
        let skill = w.hook(
            "pre-tool-use",
            &w.tool(
                "Skill",
                serde_json::json!({"skill": "sdd-loop:work", "args": "--loop --max-prs 1"}),
                "p-1",
            ),
        );
        assert!(skill.denied(), "{prompt} {source:?}: {:?}", skill.json);
        let wakeup = w.hook(
            "pre-tool-use",
            &w.tool(
                "ScheduleWakeup",
                serde_json::json!({"delaySeconds": 60, "prompt": prompt}),
                "p-1",
            ),
        );
        assert!(wakeup.passed(), "{:?}", wakeup.json);
        // Its Stop has no iteration to end.
        let stop = w.hook("stop", &w.stop(false, "Re-armed.", "p-1"));
        assert!(stop.passed(), "{:?}", stop.json);
        assert_eq!(w.history("work").len(), before + 1);
        // A later prompt of the session is not held to the skip.
        let later = w.hook(
            "pre-tool-use",
            &w.bash("gh pr create --title x --body 'Closes #1'", "p-2"),
        );
        assert!(later.passed(), "{:?}", later.json);
    }
}

/// A cron `/loop` (an interval) fires again by itself: its skipped fire
/// stays blocked and reaches the model zero times, and so does a skip
/// sent by `claude -p` or the Agent SDK.
#[test]
fn a_skipped_fire_of_a_cron_loop_is_still_blocked() {
    for (prompt, source) in [
        ("/sdd-loop:work --loop --max-prs 1", Some("schedule_wakeup")),
        ("/loop 5m /sdd-loop:work --loop --max-prs 1", Some("user")),
        ("/loop /sdd-loop:work --loop --max-prs 1 every 20m", None),
        ("/sdd-loop:work --loop --max-prs 1", Some("user")),
        ("/loop /sdd-loop:work --loop --max-prs 1", Some("sdk")),
        ("/sdd-loop:work --loop --max-prs 1", None),
    ] {
        let w = World::new(TWO_STORIES);
        let _other = held_by_another(&w);
        let a = w.hook("user-prompt-submit", &w.prompt_from(prompt, "p-1", source));
        assert!(a.blocked(), "{prompt} {source:?}: {:?}", a.json);
        assert!(
            a.text().contains("another tick holds the lock")
                && a.text().contains("the model was not called"),
            "{}",
            a.text()
        );
        assert_eq!(w.history("work").last().unwrap()["outcome"], "skipped_lock");
    }
}

/// A stop ends a self-paced `/loop` as it ends any other: the wakeup's
/// prompt is blocked with the final report, so nothing re-arms it.
#[test]
fn a_stop_still_ends_a_self_paced_loop() {
    let w = World::new(EMPTY);
    let prompt = "/loop /sdd-loop:work --loop --max-prs 1";
    let a = w.hook(
        "user-prompt-submit",
        &w.prompt_from(prompt, "p-1", Some("loop_wakeup")),
    );
    assert!(a.blocked(), "{:?}", a.json);
    assert!(
        a.text().contains("the work loop has ended (backlog_empty)")
            && a.text().contains("the model was not called"),
        "{}",
        a.text()
    );
    let again = w.hook(
        "user-prompt-submit",
        &w.prompt_from(prompt, "p-2", Some("loop_wakeup")),
    );
    assert!(
        again.blocked() && again.text().contains("this fire records nothing"),
        "{:?}",
        again.json
    );
}

/// Issue 45 as it was seen: two clones of one origin, and the fire of
/// the self-paced `/loop` in one finds every issue claimed by the other's
/// open tick. That skip goes on to re-arm the wakeup; a cron fire on the
/// same skip is still blocked.
#[test]
fn a_self_paced_wakeup_skipped_on_another_clones_claims_goes_on_to_re_arm() {
    let w = World::with_git(TWO_STORIES);
    let origin = &w.git.as_ref().unwrap().origin;
    let elsewhere = w.dir.path().join("elsewhere");
    let git = Git::new(GitIdentity::default());
    git.run(
        w.dir.path(),
        ["clone", "-q", origin.to_str().unwrap(), "elsewhere"],
    )
    .unwrap();
    let other = OtherSession::start();
    let claimed = std::process::Command::new(env!("CARGO_BIN_EXE_sdd-loop"))
        .args(["work", "begin", "--loop", "--max-agents", "2", "--json"])
        .args(["--holder-pid", &other.pid().to_string()])
        .current_dir(&elsewhere)
        .env_clear()
        .envs(w.env())
        .output()
        .unwrap();
    assert_eq!(
        claimed.status.code(),
        Some(0),
        "the other clone's tick claims #1 and #2: {}",
        String::from_utf8_lossy(&claimed.stderr)
    );
    let prompt = "/loop /sdd-loop:work --loop --max-agents 2";
    let a = w.hook(
        "user-prompt-submit",
        &w.prompt_from(prompt, "p-1", Some("loop_wakeup")),
    );
    let context = a.context().unwrap_or_else(|| panic!("{:?}", a.json));
    assert!(
        context.contains("other clones hold the claims on the work")
            && context.contains("re-arm it now as /loop says"),
        "{context}"
    );
    assert!(!w.is_open("work"), "no iteration is open here");
    let cron = w.hook(
        "user-prompt-submit",
        &w.prompt_from(
            "/sdd-loop:work --loop --max-agents 2",
            "p-2",
            Some("schedule_wakeup"),
        ),
    );
    assert!(
        cron.blocked()
            && cron
                .text()
                .contains("other clones hold the claims on the work"),
        "{:?}",
        cron.json
    );
}
