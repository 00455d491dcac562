//! The in-session tick, in-process: `begin` and `end` as separate calls
//! with the session as the lock holder — the outcomes of `begin` (work,
//! skip, stop, ask), `end` from flags, results and events, and every way
//! `end` refuses without changing a byte.

#[expect(dead_code, reason = "the tick tests use the rest of the fakes")]
mod support;

use sdd_loop::exit;
use sdd_loop::history::{Outcome, PrState};
use sdd_loop::paths::Skill;
use sdd_loop::protocol::ModelUsage;
use sdd_loop::redact::Redactor;
use sdd_loop::tick::{EndFlags, EndInput, ResultInput, WorkReport, append_event};
use support::*;

const SESSION: u32 = 777;
const OTHER: u32 = 778;

fn ready() -> Sandbox {
    Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)])
}

fn opened_on_tracker(s: &Sandbox, number: u64) {
    s.tracker
        .pulls
        .borrow_mut()
        .push(pull(number, PrState::Open, &[], &format!("sha{number}")));
}

fn end_flags(flags: EndFlags) -> EndInput {
    EndInput {
        caller: Some(SESSION),
        flags,
        ..Default::default()
    }
}

#[test]
fn begin_opens_the_iteration_for_the_session_and_end_records_it() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    let b = s.begin(&cfg, SESSION);
    assert_eq!(b.code, exit::TICK_DONE, "{}{}", b.out, b.err);
    assert_eq!(b.summary["outcome"], "work");
    assert_eq!(b.summary["iteration"], 1);
    assert_eq!(b.summary["request"]["issues"][0]["number"], 1);
    let paths = s.paths(Skill::Work);
    let lock: serde_json::Value =
        serde_json::from_slice(&std::fs::read(paths.lock()).unwrap()).unwrap();
    assert_eq!(
        lock["pid"], SESSION,
        "the session holds the lock, not begin"
    );
    assert!(paths.inflight().exists(), "the journal hands over to end");
    assert!(s.history(Skill::Work).is_empty(), "nothing recorded yet");
    assert!(s.runner.requests.is_empty(), "begin runs no skill");

    opened_on_tracker(&s, 10);
    let mut flags = EndFlags {
        opened: vec![10],
        summary: Some("Opened #10 for #1".into()),
        agents: Some(1),
        ..Default::default()
    };
    flags.usage = vec![ModelUsage {
        model: "claude-sonnet-4-7".into(),
        tokens_in: 1000,
        tokens_out: 100,
        ..ModelUsage::default()
    }];
    let e = s.end(&cfg, &end_flags(flags));
    assert_eq!(e.code, exit::TICK_DONE, "{}{}", e.out, e.err);
    assert!(
        e.out
            .contains("Outcome: 1 PR opened (#10). Opened #10 for #1"),
        "{}",
        e.out
    );
    let line = s.last(Skill::Work);
    assert_eq!(line.outcome, Some(Outcome::Ok));
    assert_eq!(line.prs_touched_this_iter, Some(vec!["#10".to_owned()]));
    let tracked = line.tracked_prs.unwrap();
    assert_eq!(tracked[0].branch, "feature/10", "looked up on the tracker");
    assert_eq!(
        tracked[0].head_sha_at_iteration_end.as_deref(),
        Some("sha10")
    );
    let b = s.budget(Skill::Work);
    assert_eq!(
        (b.iterations_used, b.tokens_in, b.agents_dispatched),
        (1, 1000, 1)
    );
    assert!(!paths.lock().exists() && !paths.inflight().exists());
}

#[test]
fn begin_skips_while_the_same_session_has_an_iteration_open() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    assert_eq!(s.begin(&cfg, SESSION).code, exit::TICK_DONE);
    let again = s.begin(&cfg, SESSION);
    assert_eq!(again.code, exit::NOTHING_TO_DO, "{}", again.out);
    assert_eq!(again.summary["outcome"], "skip");
    assert!(
        again.out.contains("still open in this session"),
        "{}",
        again.out
    );
    let b = s.budget(Skill::Work);
    assert_eq!(b.iterations_used, 0, "no counter advanced");
}

#[test]
fn a_gate_is_answered_by_exit_and_rerun_and_the_ask_changes_nothing() {
    let mut s = Sandbox::new().with_issues(vec![issue(7, "make it better")]);
    s.procs.0 = vec![SESSION];
    let mut cfg = s.cfg(Skill::Work);
    let first = s.begin(&cfg, SESSION);
    assert_eq!(first.code, exit::NEEDS_ANSWER, "{}{}", first.out, first.err);
    assert_eq!(first.summary["outcome"], "ask");
    assert_eq!(first.summary["gate"], "ambiguous-criteria");
    assert_eq!(
        first.summary["question"],
        "Issue #7 has ambiguous criteria. Skip, escalate, or proceed with my best interpretation?"
    );
    assert_eq!(
        first.summary["options"],
        serde_json::json!(["skip", "escalate", "proceed", "stop"])
    );
    let before = s.files();
    let second = s.begin(&cfg, SESSION);
    assert_eq!(second.code, exit::NEEDS_ANSWER);
    assert_eq!(s.files(), before, "asking changed nothing");
    cfg.answers
        .push("ambiguous-criteria=proceed".parse().unwrap());
    let third = s.begin(&cfg, SESSION);
    assert_eq!(third.code, exit::TICK_DONE, "{}{}", third.out, third.err);
    assert_eq!(third.summary["gates"][0]["answer"], "proceed");
    assert_eq!(
        third.summary["request"]["issues"][0]["criteria"],
        "best_interpretation"
    );
}

#[test]
fn begin_with_nothing_selected_records_the_tick_and_says_skip() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, "no criteria here")]);
    s.procs.0 = vec![SESSION];
    let mut cfg = s.cfg(Skill::Work);
    cfg.answers.push("ambiguous-criteria=skip".parse().unwrap());
    let b = s.begin(&cfg, SESSION);
    assert_eq!(b.code, exit::NOTHING_TO_DO, "{}{}", b.out, b.err);
    assert_eq!(b.summary["outcome"], "skip");
    assert_eq!(b.summary["recorded"], "ok");
    assert_eq!(s.last(Skill::Work).iteration, Some(1));
    assert!(!s.paths(Skill::Work).lock().exists(), "the tick is over");
}

#[test]
fn begin_reports_a_stop_with_the_final_report() {
    let mut s = Sandbox::new();
    s.procs.0 = vec![SESSION];
    let b = s.begin(&s.cfg(Skill::Work), SESSION);
    assert_eq!(b.code, exit::LOOP_ENDED);
    assert_eq!(b.summary["outcome"], "stop");
    assert_eq!(b.summary["stop_cause"], "backlog_empty");
    assert!(b.out.contains("## Loop Ended"), "{}", b.out);
}

/// `end` refused: exit 66, an error saying what happened, and not one byte
/// changed under `.sdd/`.
fn refused(s: &mut Sandbox, input: &EndInput, says: &str) {
    let cfg = s.cfg(Skill::Work);
    let before = s.files();
    let r = s.end(&cfg, input);
    assert_eq!(r.code, exit::NOT_OPEN, "{}{}", r.out, r.err);
    assert!(r.err.contains(says), "wanted {says:?} in\n{}", r.err);
    assert!(r.err.contains("help: "), "{}", r.err);
    assert_eq!(s.files(), before, "a refused end changes nothing");
}

#[test]
fn end_without_begin_is_refused() {
    let mut s = ready();
    refused(
        &mut s,
        &end_flags(EndFlags::default()),
        "no tick of this loop has begun",
    );
}

#[test]
fn end_twice_is_refused_the_second_time() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    s.begin(&cfg, SESSION);
    assert_eq!(s.end(&cfg, &end_flags(EndFlags::default())).code, 0);
    refused(
        &mut s,
        &end_flags(EndFlags::default()),
        "iteration 1 already ended at",
    );
}

#[test]
fn end_after_another_tick_recovered_the_iteration_is_refused() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    s.begin(&cfg, SESSION);
    append_event(
        &s.paths(Skill::Work),
        r#"{"event":"usage","model":"claude-sonnet-4-7","tokens_in":500,"tokens_out":50}"#,
        &Redactor::default(),
    )
    .unwrap();
    // The session dies; another session's begin reaps and recovers.
    s.procs.0 = vec![OTHER];
    let b = s.begin(&cfg, OTHER);
    assert_eq!(b.code, 0, "{}{}", b.out, b.err);
    assert!(b.out.contains("Reaped stale lock for pid 777"), "{}", b.out);
    assert!(
        b.out
            .contains("Recovered interrupted iteration 1 (pid 777)"),
        "{}",
        b.out
    );
    let mut late = end_flags(EndFlags::default());
    late.iteration = Some(1);
    refused(
        &mut s,
        &late,
        "iteration 1 was recovered as interrupted by another tick",
    );
    // Without naming its iteration, the dead session cannot end the
    // other session's iteration either.
    refused(
        &mut s,
        &end_flags(EndFlags::default()),
        "was begun by session pid 778",
    );
}

#[test]
fn a_killed_session_s_reported_spend_is_recovered_and_counted_once() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    s.begin(&cfg, SESSION);
    let paths = s.paths(Skill::Work);
    for tokens in [300, 200] {
        append_event(&paths, &format!(r#"{{"event":"usage","model":"claude-sonnet-4-7","tokens_in":{tokens},"tokens_out":10}}"#), &Redactor::default())
        .unwrap();
    }
    s.procs.0 = vec![OTHER];
    assert_eq!(s.begin(&cfg, OTHER).code, 0);
    let recovered = &s.history(Skill::Work)[0];
    assert_eq!(recovered.outcome, Some(Outcome::Errored));
    assert_eq!(recovered.error.as_deref(), Some("interrupted"));
    assert_eq!(recovered.tokens_in_this_iter, Some(500));
    let mut input = end_flags(EndFlags {
        usage: vec![ModelUsage {
            model: "claude-sonnet-4-7".into(),
            tokens_in: 1000,
            tokens_out: 100,
            ..ModelUsage::default()
        }],
        ..Default::default()
    });
    input.caller = Some(OTHER);
    assert_eq!(s.end(&cfg, &input).code, 0);
    let b = s.budget(Skill::Work);
    assert_eq!(
        b.tokens_in, 1500,
        "events recovered once, plus the new tick"
    );
    assert_eq!(b.iterations_used, 2);
}

#[test]
fn a_bad_result_or_an_unknown_pr_leaves_the_iteration_open() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    s.begin(&cfg, SESSION);
    let before = s.files();
    let mut bad = end_flags(EndFlags::default());
    bad.result = Some(ResultInput {
        source: "result.json".into(),
        bytes: br#"{"prs": 3}"#.to_vec(),
    });
    let r = s.end(&cfg, &bad);
    assert_eq!(r.code, exit::DATA, "{}", r.err);
    assert!(
        r.err.contains("result.json: not a skill result"),
        "{}",
        r.err
    );
    let unknown = end_flags(EndFlags {
        opened: vec![99],
        ..Default::default()
    });
    let r = s.end(&cfg, &unknown);
    assert_eq!(r.code, exit::DATA, "{}", r.err);
    assert!(r.err.contains("PR #99 is not on the tracker"), "{}", r.err);
    assert_eq!(s.files(), before, "still open, nothing written");
    let mut good = end_flags(EndFlags::default());
    good.result = Some(ResultInput {
        source: "-".into(),
        bytes: br#"{"summary": "nothing to report", "agents_dispatched": 2}"#.to_vec(),
    });
    let r = s.end(&cfg, &good);
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert_eq!(s.budget(Skill::Work).agents_dispatched, 2);
}

#[test]
fn a_failure_reported_by_the_session_is_an_errored_iteration() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    s.begin(&cfg, SESSION);
    let mut input = end_flags(EndFlags::default());
    input.work = WorkReport {
        failure: Some("tests failing in module X".into()),
        ..Default::default()
    };
    assert_eq!(s.end(&cfg, &input).code, 0);
    let line = s.last(Skill::Work);
    assert_eq!(line.outcome, Some(Outcome::Errored));
    let failures = line.failures_this_iter.unwrap();
    assert_eq!(failures[0].target, "#1");
    assert_eq!(failures[0].root_cause, "tests failing in module X");
}

#[test]
fn events_need_an_open_iteration_and_a_valid_shape() {
    let mut s = ready();
    let paths = s.paths(Skill::Work);
    let none = append_event(
        &paths,
        r#"{"event":"agent_dispatched"}"#,
        &Redactor::default(),
    )
    .unwrap_err();
    assert_eq!(none.code, exit::NOT_OPEN);
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    s.begin(&cfg, SESSION);
    let bad =
        append_event(&paths, r#"{"event":"tokens","n":1}"#, &Redactor::default()).unwrap_err();
    assert_eq!(bad.code, exit::DATA);
    assert!(
        bad.message.contains("not a progress event"),
        "{}",
        bad.message
    );
}

/// One assistant entry as Claude Code writes it.
fn assistant(id: &str, request: &str, at: &str, model: &str, usage: &str) -> String {
    format!(
        r#"{{"parentUuid":"p","isSidechain":false,"userType":"external","cwd":"/x","sessionId":"s1","version":"2.0.31","type":"assistant","uuid":"u-{id}","timestamp":"{at}","requestId":"{request}","message":{{"id":"{id}","type":"message","role":"assistant","model":"{model}","content":[{{"type":"text","text":"ok"}}],"stop_reason":null,"usage":{usage}}}}}"#
    )
}

#[test]
fn end_reads_the_session_s_spend_from_its_transcript_between_begin_and_end() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    // begin at 14:00:00; the sandbox clock reads 14:00:30 at end.
    s.begin(&cfg, SESSION);
    let home = s.root().join("home");
    let slug = sdd_loop::transcript::project_slug(s.root());
    let folder = home.join(".claude/projects").join(slug);
    std::fs::create_dir_all(&folder).unwrap();
    let lines = [
        // Before begin: another tick's spend.
        assistant(
            "msg_0",
            "req_0",
            "2026-05-09T13:59:00.000Z",
            "claude-sonnet-4-7",
            r#"{"input_tokens":999,"output_tokens":999}"#,
        ),
        // A streamed response: two entries, the last one's usage counts.
        assistant(
            "msg_1",
            "req_1",
            "2026-05-09T14:00:05.000Z",
            "claude-sonnet-4-7",
            r#"{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":1000}"#,
        ),
        assistant(
            "msg_1",
            "req_1",
            "2026-05-09T14:00:06.000Z",
            "claude-sonnet-4-7",
            r#"{"input_tokens":10,"output_tokens":50,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200}"#,
        ),
        "not json at all".to_owned(),
        assistant(
            "msg_2",
            "req_2",
            "2026-05-09T14:00:20.000Z",
            "claude-haiku-4-7",
            r#"{"input_tokens":5,"output_tokens":5}"#,
        ),
    ];
    std::fs::write(folder.join("s1.jsonl"), lines.join("\n") + "\n").unwrap();
    let mut input = end_flags(EndFlags::default());
    input.transcript = Some(sdd_loop::tick::TranscriptSource {
        choice: sdd_loop::transcript::TranscriptChoice::Auto,
        dirs: sdd_loop::transcript::ClaudeDirs {
            config_dir: None,
            home,
        },
    });
    let e = s.end(&cfg, &input);
    assert_eq!(e.code, 0, "{}{}", e.out, e.err);
    assert!(
        e.out.contains("Spend from the session transcript"),
        "{}",
        e.out
    );
    let b = s.budget(Skill::Work);
    let sonnet = &b.tokens_by_model["claude-sonnet-4-7"];
    assert_eq!(
        (
            sonnet.tokens_in,
            sonnet.tokens_out,
            sonnet.cache_read_tokens,
            sonnet.cache_write_tokens
        ),
        (1210, 50, 1000, 200),
        "one response, its last entry; cache parts inside tokens_in"
    );
    assert_eq!(b.tokens_by_model["claude-haiku-4-7"].tokens_in, 5);
    assert_eq!((b.tokens_in, b.tokens_out), (1215, 55));
}

#[test]
fn a_missing_transcript_leaves_the_iteration_open_with_a_help_line() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    s.begin(&cfg, SESSION);
    let before = s.files();
    let mut input = end_flags(EndFlags::default());
    input.transcript = Some(sdd_loop::tick::TranscriptSource {
        choice: sdd_loop::transcript::TranscriptChoice::Auto,
        dirs: sdd_loop::transcript::ClaudeDirs {
            config_dir: Some(s.root().join("nowhere")),
            home: s.root().to_path_buf(),
        },
    });
    let r = s.end(&cfg, &input);
    assert_eq!(r.code, exit::DATA, "{}", r.err);
    assert!(
        r.err.contains("no Claude Code transcripts for"),
        "{}",
        r.err
    );
    assert!(r.err.contains("help: "), "{}", r.err);
    assert_eq!(s.files(), before);
}

// An end that died right after appending the history line left the
// journal and the lock behind, its session alive: run again, it counted
// the iteration a second time.
#[test]
fn end_run_again_after_it_stopped_past_the_history_line_counts_nothing_twice() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    s.begin(&cfg, SESSION);
    let paths = s.paths(Skill::Work);
    let journal = std::fs::read(paths.inflight()).unwrap();
    let lock = std::fs::read(paths.lock()).unwrap();
    let budget_before = std::fs::read(paths.budget()).unwrap();
    let input = end_flags(EndFlags {
        usage: vec![ModelUsage {
            model: "claude-sonnet-4-7".into(),
            tokens_in: 1000,
            tokens_out: 100,
            ..ModelUsage::default()
        }],
        ..Default::default()
    });
    assert_eq!(s.end(&cfg, &input).code, 0);
    // The state of the crash point after-history: line appended, budget
    // not yet rewritten, journal and lock still there.
    std::fs::write(paths.inflight(), journal).unwrap();
    std::fs::write(paths.lock(), lock).unwrap();
    std::fs::write(paths.budget(), budget_before).unwrap();
    let again = s.end(&cfg, &input);
    assert_eq!(again.code, 0, "{}{}", again.out, again.err);
    assert!(again.out.contains("was already recorded"), "{}", again.out);
    assert_eq!(
        s.history(Skill::Work).len(),
        1,
        "one line for the iteration"
    );
    let b = s.budget(Skill::Work);
    assert_eq!((b.iterations_used, b.tokens_in), (1, 1000));
    assert!(!paths.inflight().exists() && !paths.lock().exists());
}
