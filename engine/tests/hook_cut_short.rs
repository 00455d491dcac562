//! `sdd-loop hook stop-failure` and `sdd-loop hook session-end` against the
//! mock tracker (issue 33): a turn that a model-API error or the session's
//! end cuts short has its iteration ended — errored, with its cause in
//! `turn_ended_by`, its spend from the exact transcript, no target failed —
//! never left open; the next loop prompt begins the next iteration, and a
//! rate limit never asks repeated-failure.

#[expect(dead_code, reason = "each hook test binary uses part of the world")]
mod hooks;

use sdd_mocks::tracker::Fault;
use serde_json::json;

use hooks::*;

const LOOP: &str = "/loop /sdd-loop:work --loop --max-prs 5 --max-iterations 10";

fn begin(w: &World, prompt_id: &str) {
    let a = w.hook("user-prompt-submit", &w.prompt(LOOP, prompt_id));
    assert!(a.context().is_some(), "{:?}", a.json);
}

#[test]
fn a_turn_ended_by_a_rate_limit_ends_its_tick_with_the_cause_and_the_next_prompt_begins() {
    let w = World::new(TWO_STORIES);
    begin(&w, "p-1");
    let a = w.hook(
        "stop-failure",
        &w.stop_failure("rate_limit", "429 Too Many Requests\nretry later", "p-1"),
    );
    assert!(a.passed(), "StopFailure takes no answer: {:?}", a.json);
    assert!(!w.is_open("work"), "the iteration is ended");
    assert!(!w.state("work.lock").exists(), "the lock is released");
    let line = w.history("work").pop().unwrap();
    assert_eq!(line["outcome"], "errored");
    assert_eq!(line["turn_ended_by"], "rate_limit");
    assert_eq!(
        line["error"],
        "the turn ended on a model API error (rate_limit: 429 Too Many Requests), not on a failure of the work"
    );
    assert_eq!(line["failures_this_iter"], json!([]), "no target failed");
    assert!(
        line["tokens_in_this_iter"].as_u64().unwrap() > 0,
        "the spend so far, from the transcript: {line}"
    );
    let log = w.log("work");
    let last = log.last().unwrap();
    assert_eq!(
        (last["event"].as_str(), last["decision"].as_str()),
        (Some("stop-failure"), Some("ended"))
    );
    let next = w.hook("user-prompt-submit", &w.prompt(LOOP, "p-2"));
    let context = next.context().unwrap_or_else(|| panic!("{:?}", next.json));
    assert!(context.contains("iteration 2"), "{context}");
}

// A rate limit is not a failure of the work: two in a row ask no
// repeated-failure gate, where the same root cause twice from the work
// does (the contrast keeps this test able to fail).
#[test]
fn rate_limits_in_a_row_do_not_feed_the_repeated_failure_gate() {
    let w = World::new(TWO_STORIES);
    for (n, kind) in [(1, "rate_limit"), (2, "overloaded"), (3, "rate_limit")] {
        begin(&w, &format!("p-{n}"));
        let stop = w.hook("stop-failure", &w.stop_failure(kind, "", &format!("p-{n}")));
        assert!(stop.passed());
        assert!(!w.is_open("work"), "tick {n}");
    }
    let next = w.hook("user-prompt-submit", &w.prompt(LOOP, "p-4"));
    let context = next.context().unwrap_or_else(|| panic!("{:?}", next.json));
    assert!(context.contains("iteration 4"), "{context}");
    assert!(w.history("work").iter().all(|l| l["gates"] == json!([])));

    let w = World::new(TWO_STORIES);
    let pid = std::process::id().to_string();
    for n in 1..=2 {
        begin(&w, &format!("p-{n}"));
        let n = n.to_string();
        let out = w.engine(&[
            "work",
            "end",
            "--iteration",
            &n,
            "--holder-pid",
            &pid,
            "--error",
            "tests fail in login",
        ]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    }
    let asked = w.hook("user-prompt-submit", &w.prompt(LOOP, "p-3"));
    assert!(asked.blocked(), "{:?}", asked.json);
    assert!(
        asked
            .text()
            .contains("failed twice with: tests fail in login"),
        "{}",
        asked.text()
    );
}

#[test]
fn the_session_s_end_ends_the_tick_its_turn_left_running() {
    let w = World::new(TWO_STORIES);
    begin(&w, "p-1");
    let a = w.hook("session-end", &w.session_end("prompt_input_exit", "p-1"));
    assert!(a.passed(), "{:?}", a.json);
    assert!(!w.is_open("work"));
    let line = w.history("work").pop().unwrap();
    assert_eq!(line["outcome"], "errored");
    assert_eq!(line["turn_ended_by"], "session_end");
    assert_eq!(
        line["error"],
        "the session ended (prompt_input_exit) before its turn did"
    );
    assert_eq!(line["failures_this_iter"], json!([]));
    let next = w.hook("user-prompt-submit", &w.prompt(LOOP, "p-2"));
    assert!(next.context().is_some(), "{:?}", next.json);
}

#[test]
fn the_session_s_end_ends_a_tick_its_stop_could_not_as_the_stop_would_have() {
    let w = World::new(TWO_STORIES);
    begin(&w, "p-1");
    let outage = w.tracker.inject(Fault::status("GET", "**/pulls", 503));
    assert!(w.hook("stop", &w.stop(false, "Done.", "p-1")).blocked());
    assert!(w.hook("stop", &w.stop(true, "Done.", "p-1")).passed());
    assert!(w.is_open("work"), "the stop left it open");
    w.tracker.remove_fault(outage);
    let a = w.hook("session-end", &w.session_end("other", "p-1"));
    assert!(a.passed());
    assert!(!w.is_open("work"));
    let line = w.history("work").pop().unwrap();
    assert_eq!(line["outcome"], "ok", "{line}");
    assert!(line.get("turn_ended_by").is_none(), "{line}");
}

#[test]
fn a_rate_limit_whose_end_failed_is_ended_with_its_cause_at_the_session_s_end() {
    let w = World::new(TWO_STORIES);
    begin(&w, "p-1");
    let outage = w.tracker.inject(Fault::status("GET", "**/pulls", 503));
    let a = w.hook("stop-failure", &w.stop_failure("overloaded", "", "p-1"));
    assert!(a.passed());
    assert!(w.is_open("work"), "end failed: the tracker is down");
    let log = w.log("work");
    assert_eq!(log.last().unwrap()["decision"], "left-open");
    w.tracker.remove_fault(outage);
    w.hook("session-end", &w.session_end("other", "p-1"));
    assert!(!w.is_open("work"));
    let line = w.history("work").pop().unwrap();
    assert_eq!(line["outcome"], "errored");
    assert_eq!(line["turn_ended_by"], "overloaded");
}

#[test]
fn without_an_iteration_of_this_session_nothing_is_run_or_written() {
    let w = World::new(TWO_STORIES);
    for input in [
        w.stop_failure("rate_limit", "", "p-1"),
        w.session_end("clear", "p-1"),
    ] {
        let event = input["hook_event_name"].as_str().unwrap();
        let command = if event == "StopFailure" {
            "stop-failure"
        } else {
            "session-end"
        };
        assert!(w.hook(command, &input).passed());
    }
    assert!(w.files().is_empty(), "{:?}", w.files().keys());

    let other = OtherSession::start();
    let theirs = w.hook_as("user-prompt-submit", &w.prompt(LOOP, "o-1"), other.pid());
    assert!(theirs.context().is_some());
    let before = w.files();
    w.hook("stop-failure", &w.stop_failure("rate_limit", "", "p-1"));
    w.hook("session-end", &w.session_end("other", "p-1"));
    assert_eq!(w.files(), before, "another session's tick is left to it");
    assert!(w.is_open("work"));
}

// Measured with 2.1.328: `claude -p` exits right after a failed turn and
// may never run its StopFailure hook; the session's end then reads the
// cause from Claude Code's own error entry, last in the transcript.
#[test]
fn the_session_s_end_reads_an_api_error_the_transcript_ends_on() {
    let w = World::new(TWO_STORIES);
    begin(&w, "p-1");
    let entry = json!({
        "type": "assistant",
        "uuid": "e-1",
        "timestamp": "2026-11-26T11:49:57.368Z",
        "sessionId": w.session_id,
        "isApiErrorMessage": true,
        "error": "overloaded",
        "apiErrorStatus": 529,
        "message": {
            "id": "00000000-0000-0000-0000-000000000001",
            "model": "<synthetic>",
            "role": "assistant",
            "type": "message",
            "usage": {"input_tokens": 0, "output_tokens": 0},
            "content": [{"type": "text", "text": "API Error: Repeated 529 Overloaded errors"}]
        }
    });
    let mut text = std::fs::read_to_string(&w.transcript).unwrap();
    text.push_str(&format!("{entry}\n"));
    std::fs::write(&w.transcript, text).unwrap();
    w.hook("session-end", &w.session_end("other", "p-1"));
    assert!(!w.is_open("work"));
    let line = w.history("work").pop().unwrap();
    assert_eq!(line["outcome"], "errored");
    assert_eq!(line["turn_ended_by"], "overloaded", "{line}");
    assert_eq!(line["failures_this_iter"], json!([]));
}

// Regression: a session-end hook out of time gave its fallback answer and
// wrote no line in the decision log, unlike every other path of the hooks:
// the iteration it was ending, perhaps left open, was on no record.
#[test]
fn a_session_end_out_of_time_logs_its_fallback_like_any_decision() {
    use sdd_loop::hook::in_time::{self, Waiting};
    use sdd_loop::hook::{Answer, HookEvent};

    let w = World::new(TWO_STORIES);
    begin(&w, "p-1");
    let (_never, answered) = std::sync::mpsc::channel::<Answer>();
    let vars = std::collections::BTreeMap::new();
    let waiting = Waiting {
        vars: &vars,
        project: Some(w.project.clone()),
        session: Ok(std::process::id()),
        clock: &sdd_loop::os::clock::SystemClock,
    };
    let input = w.session_end("other", "p-1").to_string();
    let answer = in_time::within(
        HookEvent::SessionEnd,
        input.as_bytes(),
        &answered,
        std::time::Duration::ZERO,
        &waiting,
    );
    assert_eq!(answer, Answer::Pass, "SessionEnd takes no answer");
    let log = w.log("work");
    let last = log.last().unwrap();
    assert_eq!(
        (
            last["event"].as_str(),
            last["decision"].as_str(),
            last["iteration"].as_u64(),
            last["session_id"].as_str(),
        ),
        (
            Some("session-end"),
            Some("left-open"),
            Some(1),
            Some(w.session_id.as_str())
        )
    );
    let reason = last["reason"].as_str().unwrap();
    assert!(
        reason.contains("did not end iteration 1 of the work loop within 0 s"),
        "{reason}"
    );
    assert!(
        last["saw"][0].as_str().unwrap().contains("fallback"),
        "{last}"
    );
}

// Without the transcript the session's end cannot count the spend: the
// iteration stays open for the next tick, and the log says why and how it
// ends (Claude Code reads no answer from this hook).
#[test]
fn a_session_end_without_its_transcript_logs_why_the_tick_stays_open() {
    let w = World::new(TWO_STORIES);
    begin(&w, "p-1");
    std::fs::remove_file(&w.transcript).unwrap();
    let a = w.hook("session-end", &w.session_end("other", "p-1"));
    assert!(a.passed(), "{:?}", a.json);
    assert!(w.is_open("work"));
    let log = w.log("work");
    let last = log.last().unwrap();
    assert_eq!(last["decision"], "left-open");
    let reason = last["reason"].as_str().unwrap();
    for part in [
        "the session ended (other) before its turn did; sdd-loop could not end iteration 1",
        "cannot read the Claude Code transcript",
        "`sdd-loop work end --iteration 1`",
    ] {
        assert!(reason.contains(part), "{part:?} in {reason}");
    }
}

// Issue 47: StopFailure's only word of a 429 on a usage window is its
// message ("You've hit your 5-hour limit · resets 7:31pm (UTC)"); it
// starts the wait for that reset, and the next loop prompt begins no
// iteration. Before, the next prompt began iteration 2 and hit the same
// limit.
#[test]
fn a_stop_failure_naming_a_window_limit_starts_the_wait_for_its_reset() {
    let w = World::new(TWO_STORIES);
    begin(&w, "p-1");
    let mut input = w.stop_failure("rate_limit", "", "p-1");
    input["last_assistant_message"] = json!("You've hit your 5-hour limit · resets 7:31pm (UTC)");
    assert!(w.hook("stop-failure", &input).passed());
    let line = w.history("work").pop().unwrap();
    assert_eq!(line["outcome"], "errored");
    assert_eq!(line["usage_windows"]["limited"]["window"], "five_hour");
    let until = line["usage_windows"]["wait"]["until"].as_str().unwrap();
    assert!(until.ends_with("T19:31:00Z"), "{line}");
    let next = w.hook("user-prompt-submit", &w.prompt(LOOP, "p-2"));
    assert!(
        !next.context().is_some_and(|c| c.contains("iteration 2")),
        "the prompt before the reset begins no iteration: {:?}",
        next.json
    );
    assert_eq!(w.history("work").len(), 1, "and writes no history line");
}

// Issue 47: after a 429 the transcript keeps the window and its reset
// (`apiErrorParams.rate_limit_info`, Claude Code 2.1.332) where the hook
// input has neither; the tick's end starts the wait for that reset.
#[test]
fn a_limit_in_the_transcript_after_the_ticks_prompt_starts_the_wait_for_its_reset() {
    let w = World::new(TWO_STORIES);
    begin(&w, "p-1");
    let reset = jiff::Timestamp::now().as_second() + 2 * 3600;
    let refusal = json!({
        "type": "assistant",
        "isApiErrorMessage": true,
        "error": "rate_limit",
        "apiErrorStatus": 429,
        "apiErrorParams": {"rate_limit_info": {"status": "rejected", "resetsAt": reset, "rateLimitType": "seven_day"}},
        "message": {"model": "<synthetic>", "content": [{"type": "text", "text": "You've hit your weekly limit"}]},
    });
    let mut text = std::fs::read_to_string(&w.transcript).unwrap();
    text.push_str(&format!("{refusal}\n"));
    std::fs::write(&w.transcript, text).unwrap();
    assert!(
        w.hook("stop-failure", &w.stop_failure("rate_limit", "", "p-1"))
            .passed()
    );
    let line = w.history("work").pop().unwrap();
    let wait = &line["usage_windows"]["wait"];
    assert_eq!(wait["window"], "seven_day", "{line}");
    let until: jiff::Timestamp = wait["until"].as_str().unwrap().parse().unwrap();
    assert_eq!(until.as_second(), reset);
}
