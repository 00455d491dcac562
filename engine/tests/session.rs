//! The in-session tick, in-process: `begin` and `end` as separate calls
//! with the session as the lock holder — the outcomes of `begin` (work,
//! skip, stop, ask), `end` from flags, results and events, and every way
//! `end` refuses without changing a byte.

#[expect(dead_code, reason = "the tick tests use the rest of the fakes")]
mod support;

use sdd_loop::exit;
use sdd_loop::rules::redact::Redactor;
use sdd_loop::state::history::{Outcome, PrState};
use sdd_loop::state::paths::Skill;
use sdd_loop::state::protocol::ModelUsage;
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

/// `begin` lists the remote's branches once for its snapshot of the
/// world (it used to list them twice: once to learn that it could), and
/// `end` once to compare.
#[test]
fn begin_and_end_each_list_the_remote_once() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    s.git
        .heads
        .borrow_mut()
        .insert("main".into(), "sha-main".into());
    let cfg = s.cfg(Skill::Work);
    let b = s.begin(&cfg, SESSION);
    assert_eq!(b.code, exit::TICK_DONE, "{}{}", b.out, b.err);
    assert_eq!(s.git.listings.get(), 1, "begin");
    let e = s.end(&cfg, &end_flags(EndFlags::default()));
    assert_eq!(e.code, exit::TICK_DONE, "{}{}", e.out, e.err);
    assert_eq!(s.git.listings.get(), 2, "end");
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
        r#"{{"parentUuid":"p","isSidechain":false,"userType":"external","cwd":"/x","sessionId":"s1","version":"2.1.328","type":"assistant","uuid":"u-{id}","timestamp":"{at}","requestId":"{request}","message":{{"id":"{id}","type":"message","role":"assistant","model":"{model}","content":[{{"type":"text","text":"ok"}}],"stop_reason":null,"usage":{usage}}}}}"#
    )
}

/// A prompt: a user entry that starts a turn.
fn prompt(uuid: &str, at: &str, text: &str) -> String {
    format!(
        r#"{{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/x","sessionId":"s1","version":"2.1.328","type":"user","uuid":"{uuid}","promptId":"pid-{uuid}","timestamp":"{at}","message":{{"role":"user","content":"{text}"}}}}"#
    )
}

/// A tool's result: part of the turn, not a prompt.
fn tool_result(at: &str) -> String {
    format!(
        r#"{{"type":"user","uuid":"r-{at}","timestamp":"{at}","message":{{"role":"user","content":[{{"tool_use_id":"t","type":"tool_result","content":"ok"}}]}}}}"#
    )
}

/// The session's Claude Code folder under the sandbox's home.
fn transcript_folder(s: &Sandbox) -> std::path::PathBuf {
    let slug = sdd_loop::transcript::project_slug(s.root());
    let folder = s.root().join("home/.claude/projects").join(slug);
    std::fs::create_dir_all(&folder).unwrap();
    folder
}

fn from_transcript(s: &Sandbox, caller: u32) -> EndInput {
    let mut input = end_flags(EndFlags::default());
    input.caller = Some(caller);
    input.transcript = Some(sdd_loop::tick::TranscriptSource {
        choice: sdd_loop::transcript::TranscriptChoice::Auto,
        dirs: sdd_loop::transcript::ClaudeDirs {
            config_dir: None,
            home: s.root().join("home"),
            session_id: None,
        },
        settle: None,
        prompt_id: None,
        last_message: None,
    });
    input
}

#[test]
fn end_reads_the_spend_of_the_tick_s_prompt_from_the_transcript() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    s.begin(&cfg, SESSION);
    let folder = transcript_folder(&s);
    let lines = [
        // Chat before the loop: never the loop's spend.
        prompt("chat", "2026-05-09T13:58:00.000Z", "what is in this repo?"),
        assistant(
            "msg_0",
            "req_0",
            "2026-05-09T13:59:00.000Z",
            "claude-sonnet-4-7",
            r#"{"input_tokens":999,"output_tokens":999}"#,
        ),
        prompt("p1", "2026-05-09T13:59:58.000Z", "/sdd:work --loop"),
        // A streamed response: two entries, the last one's usage counts.
        assistant(
            "msg_1",
            "req_1",
            "2026-05-09T13:59:59.000Z",
            "claude-sonnet-4-7",
            r#"{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":1000}"#,
        ),
        assistant(
            "msg_1",
            "req_1",
            "2026-05-09T13:59:59.500Z",
            "claude-sonnet-4-7",
            r#"{"input_tokens":10,"output_tokens":50,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200}"#,
        ),
        tool_result("2026-05-09T14:00:01.000Z"),
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
    let e = s.end(&cfg, &from_transcript(&s, SESSION));
    assert_eq!(e.code, 0, "{}{}", e.out, e.err);
    assert!(
        e.out.contains(
            "2 API response(s), 2 answering this tick's prompt and 0 left from earlier ticks (1 file(s) read; 1 line(s) that are not usable entries skipped)"
        ),
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
        "one response, its last entry; cache parts inside tokens_in; the one running begin too"
    );
    assert_eq!(b.tokens_by_model["claude-haiku-4-7"].tokens_in, 5);
    assert_eq!((b.tokens_in, b.tokens_out), (1215, 55));
    assert!(
        s.paths(Skill::Work).transcript_ledger().exists(),
        "the ledger remembers what was counted"
    );
}

/// Appends tick `t`'s four responses to the session transcript, as they
/// are written around its `begin` and `end`: the prompt and the response
/// running `begin`, then the work, then the response running `end`.
/// Response `k` of tick `t` spends `100t + k` tokens in and `10t + k` out.
fn tick_lines(t: u64, k: std::ops::RangeInclusive<u64>) -> Vec<String> {
    let mut lines = Vec::new();
    for k in k {
        if k == 1 {
            lines.push(prompt(
                &format!("p{t}"),
                &format!("2026-05-09T1{t}:00:00.000Z"),
                "/sdd:work --loop",
            ));
        }
        let at = format!("2026-05-09T1{t}:00:0{k}.000Z");
        lines.push(assistant(
            &format!("msg_{t}_{k}"),
            &format!("req_{t}_{k}"),
            &at,
            "claude-sonnet-4-7",
            &format!(
                r#"{{"input_tokens":{},"output_tokens":{}}}"#,
                100 * t + k,
                10 * t + k
            ),
        ));
        if k < 4 {
            lines.push(tool_result(&at));
        }
    }
    lines
}

fn append(path: &std::path::Path, lines: &[String]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for line in lines {
        writeln!(f, "{line}").unwrap();
    }
}

/// The tokens in and out history records per tick.
fn per_tick(s: &Sandbox) -> Vec<(u64, u64)> {
    s.history(Skill::Work)
        .iter()
        .map(|l| {
            (
                l.tokens_in_this_iter.unwrap_or(0),
                l.tokens_out_this_iter.unwrap_or(0),
            )
        })
        .collect()
}

// The failure this pins: with `begin`, the work and `end` as the session's
// own tool calls, a window between `begin` and `end` counted 1 of each
// tick's 4 responses.
#[test]
fn three_ticks_count_every_response_but_the_last_closing_one_and_a_fourth_tick_counts_it() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let mut cfg = s.cfg(Skill::Work);
    answer(&mut cfg, "budget-escalation=continue");
    let path = transcript_folder(&s).join("s1.jsonl");
    for t in 1..=4 {
        append(&path, &tick_lines(t, 1..=1));
        let b = s.begin(&cfg, SESSION);
        assert_eq!(b.code, 0, "{}{}", b.out, b.err);
        append(&path, &tick_lines(t, 2..=3));
        let e = s.end(&cfg, &from_transcript(&s, SESSION));
        assert_eq!(e.code, 0, "{}{}", e.out, e.err);
        append(&path, &tick_lines(t, 4..=4));
    }
    // tick t: its responses 1-3 (in 300t + 6), and tick t-1's 4th.
    assert_eq!(
        per_tick(&s),
        vec![
            (306, 36),
            (606 + 104, 66 + 14),
            (906 + 204, 96 + 24),
            (1206 + 304, 126 + 34)
        ]
    );
    let three: u64 = per_tick(&s)[..3].iter().map(|t| t.0).sum();
    let every: u64 = (1..=3)
        .flat_map(|t| (1..=4).map(move |k| 100 * t + k))
        .sum();
    assert_eq!(three, every - 304, "all but the closing response of tick 3");
}

// A session killed between `begin` and `end` is recovered from the usage
// events it appended; its transcript responses must not count a second
// time through the ledger — while the earlier tick's closing message,
// left after that tick's `end`, still counts once.
#[test]
fn a_recovered_tick_s_responses_are_not_counted_again_from_the_transcript() {
    let mut s = ready().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR), issue(3, CLEAR)]);
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    let first = transcript_folder(&s).join("s1.jsonl");
    append(&first, &tick_lines(1, 1..=1));
    s.begin(&cfg, SESSION);
    append(&first, &tick_lines(1, 2..=3));
    assert_eq!(s.end(&cfg, &from_transcript(&s, SESSION)).code, 0);
    append(&first, &tick_lines(1, 4..=4));
    // Tick 2: begun, worked, reported its usage as an event, then killed.
    append(&first, &tick_lines(2, 1..=1));
    s.begin(&cfg, SESSION);
    append(&first, &tick_lines(2, 2..=3));
    append_event(
        &s.paths(Skill::Work),
        r#"{"event":"usage","model":"claude-sonnet-4-7","tokens_in":500,"tokens_out":50}"#,
        &Redactor::default(),
    )
    .unwrap();
    // A new session: tick 3 recovers tick 2, and its end reads its own
    // transcript and the earlier one the ledger names.
    s.procs.0 = vec![OTHER];
    let second = transcript_folder(&s).join("s2.jsonl");
    append(&second, &tick_lines(3, 1..=1));
    let b = s.begin(&cfg, OTHER);
    assert!(
        b.out.contains("Recovered interrupted iteration 2"),
        "{}",
        b.out
    );
    append(&second, &tick_lines(3, 2..=3));
    let e = s.end(&cfg, &from_transcript(&s, OTHER));
    assert_eq!(e.code, 0, "{}{}", e.out, e.err);
    assert!(e.out.contains("(2 file(s) read;"), "{}", e.out);
    assert_eq!(
        per_tick(&s),
        vec![(306, 36), (500, 50), (906 + 104, 96 + 14)],
        "tick 2 once, from its events; tick 1's closing message in tick 3"
    );
}

#[test]
fn a_damaged_ledger_leaves_the_iteration_open_and_says_how_to_recover() {
    let mut s = ready();
    s.procs.0 = vec![SESSION];
    let cfg = s.cfg(Skill::Work);
    append(
        &transcript_folder(&s).join("s1.jsonl"),
        &tick_lines(1, 1..=3),
    );
    s.begin(&cfg, SESSION);
    let ledger = s.paths(Skill::Work).transcript_ledger();
    std::fs::write(&ledger, "{\"version\": 1, \"ticks\": [").unwrap();
    let before = s.files();
    let r = s.end(&cfg, &from_transcript(&s, SESSION));
    assert_eq!(r.code, exit::DATA, "{}", r.err);
    assert!(
        r.err.contains("work.transcript.json is unreadable"),
        "{}",
        r.err
    );
    assert!(r.err.contains("help: delete "), "{}", r.err);
    assert_eq!(s.files(), before, "still open, nothing written");
    std::fs::remove_file(&ledger).unwrap();
    let r = s.end(&cfg, &from_transcript(&s, SESSION));
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert_eq!(per_tick(&s), vec![(306, 36)]);
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
            session_id: None,
        },
        settle: None,
        prompt_id: None,
        last_message: None,
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
