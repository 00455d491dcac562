//! What the hooks remember is each session's own: two Claude Code
//! sessions in one project — a second terminal, another `/loop`, a peer
//! whose loop prompt is skipped because this one holds the lock — never
//! overwrite each other's record. Each test here failed while one record
//! per skill (`.sdd/loop/{skill}.hook.json`) was shared by every session.

#[expect(dead_code, reason = "each hook test binary uses part of the world")]
mod hooks;

use sdd_mocks::tracker::Fault;
use serde_json::{Value, json};

use hooks::*;

const FLAGS: &str = "/sdd:work --loop --max-prs 5";
const PEER: &str = "99999999-8888-7777-6666-555555555555";

/// `input` sent by the peer session instead.
fn from_peer(mut input: Value) -> Value {
    input["session_id"] = json!(PEER);
    input
}

/// Iteration 1, begun by an earlier process of this test's session (a
/// `claude -p` that `--continue` will replace).
fn begun_by_an_earlier_process(w: &World) -> OtherSession {
    let earlier = OtherSession::start();
    let began = w.hook_as("user-prompt-submit", &w.prompt(FLAGS, "p-1"), earlier.pid());
    assert!(began.context().is_some(), "{:?}", began.json);
    earlier
}

/// A loop prompt of the peer session while `earlier` holds the lock: it
/// is skipped, and records the skip.
fn peer_prompt_skipped(w: &World) {
    let peer = OtherSession::start();
    let skipped = w.hook_as(
        "user-prompt-submit",
        &from_peer(w.prompt(FLAGS, "q-1")),
        peer.pid(),
    );
    assert!(
        skipped.blocked() && skipped.text().contains("another tick holds the lock"),
        "{:?}",
        skipped.json
    );
}

// Two sessions' `/loop` cron jobs fire on one ended run, alternately:
// each was told once, and no later fire of either runs `begin` again
// (each appended another `halted` line, the other session's fire having
// overwritten the record of what this one was told).
#[test]
fn two_sessions_firing_on_an_ended_run_each_record_it_once() {
    let w = World::new(EMPTY);
    let pid = std::process::id();
    let peer = OtherSession::start();
    let first = w.hook("user-prompt-submit", &w.prompt(FLAGS, "p-1"));
    assert!(first.blocked() && first.text().contains("has ended"));
    let theirs = w.hook_as(
        "user-prompt-submit",
        &from_peer(w.prompt(FLAGS, "q-1")),
        peer.pid(),
    );
    assert!(theirs.blocked() && theirs.text().contains("has ended"));
    assert_eq!(w.history("work").len(), 2, "each session told once");
    for n in 2..6 {
        let (input, holder) = if n % 2 == 0 {
            (w.prompt(FLAGS, &format!("p-{n}")), pid)
        } else {
            (from_peer(w.prompt(FLAGS, &format!("q-{n}"))), peer.pid())
        };
        let fire = w.hook_as("user-prompt-submit", &input, holder);
        assert!(
            fire.blocked() && fire.text().contains("this fire records nothing"),
            "fire {n}: {:?}",
            fire.json
        );
    }
    assert_eq!(w.history("work").len(), 2, "later fires append nothing");
}

// The session's Stop left iteration 1 open (the tracker was down), its
// process then exited; a peer's skipped loop prompt came in between. The
// session's next prompt (a new process, `claude -p --continue`) still
// ends iteration 1 with the transcript's spend — it was recovered
// interrupted with none, the peer's prompt having overwritten the record
// that said this session's stop left it open.
#[test]
fn a_peer_s_prompt_leaves_the_iteration_a_session_s_stop_left_open_to_that_session() {
    let w = World::new(TWO_STORIES);
    let earlier = begun_by_an_earlier_process(&w);
    let outage = w.tracker.inject(Fault::status("GET", "**/pulls", 503));
    let first = w.hook_as("stop", &w.stop(false, "Done.", "p-1"), earlier.pid());
    assert!(first.blocked(), "{:?}", first.json);
    let second = w.hook_as("stop", &w.stop(true, "Done.", "p-1"), earlier.pid());
    assert!(second.passed(), "{:?}", second.json);
    w.tracker.remove_fault(outage);
    peer_prompt_skipped(&w);
    drop(earlier);

    let next = w.hook("user-prompt-submit", &w.prompt(FLAGS, "p-2"));
    let context = next.context().unwrap_or_else(|| panic!("{:?}", next.json));
    assert!(context.contains("iteration 2"), "{context}");
    let history: Vec<Value> = w
        .history("work")
        .into_iter()
        .filter(|l| l["iteration"] == 1 && l["outcome"] != "skipped_lock")
        .collect();
    assert_eq!(history.len(), 1, "iteration 1 recorded once: {history:?}");
    assert_eq!(history[0]["outcome"], "ok", "{}", history[0]);
    assert!(history[0].get("error").is_none(), "{}", history[0]);
    assert!(
        history[0]["tokens_in_this_iter"].as_u64().unwrap() > 0,
        "spend from the transcript: {}",
        history[0]
    );
    let saw = w.log("work").last().unwrap()["saw"].to_string();
    assert!(
        saw.contains("iteration 1 was still open in this session"),
        "{saw}"
    );
}

// A rate limit cut the session's turn short and its `end` failed: the
// cause is kept for the session's end. A peer's skipped prompt in
// between dropped it, and the session's end recorded `session_end`.
#[test]
fn a_peer_s_prompt_keeps_the_cause_a_session_s_rate_limit_left_for_its_end() {
    let w = World::new(TWO_STORIES);
    let began = w.hook("user-prompt-submit", &w.prompt(FLAGS, "p-1"));
    assert!(began.context().is_some(), "{:?}", began.json);
    let outage = w.tracker.inject(Fault::status("GET", "**/pulls", 503));
    w.hook("stop-failure", &w.stop_failure("overloaded", "", "p-1"));
    assert!(w.is_open("work"), "end failed: the tracker is down");
    w.tracker.remove_fault(outage);
    peer_prompt_skipped(&w);

    w.hook("session-end", &w.session_end("other", "p-1"));
    assert!(!w.is_open("work"));
    let line = w.history("work").pop().unwrap();
    assert_eq!(line["iteration"], 1, "{line}");
    assert_eq!(line["outcome"], "errored", "{line}");
    assert_eq!(line["turn_ended_by"], "overloaded", "{line}");
}

// A gate asked of this session is answered by its next prompt, though a
// peer's loop prompt came in between (the answer went to the model as
// plain text: the peer's prompt had overwritten the pending question).
#[test]
fn a_gate_asked_of_a_session_is_answered_by_it_after_a_peer_s_prompt() {
    let w = World::new(AMBIGUOUS);
    let prompt = "/sdd:work --loop --max-agents 1";
    let asked = w.hook("user-prompt-submit", &w.prompt(prompt, "p-1"));
    assert!(asked.blocked(), "{:?}", asked.json);
    assert!(
        asked.text().contains("ambiguous-criteria"),
        "{}",
        asked.text()
    );
    let peer = OtherSession::start();
    let theirs = w.hook_as(
        "user-prompt-submit",
        &from_peer(w.prompt(prompt, "q-1")),
        peer.pid(),
    );
    assert!(theirs.blocked(), "{:?}", theirs.json);

    let answered = w.hook("user-prompt-submit", &w.prompt("proceed", "p-2"));
    let context = answered
        .context()
        .unwrap_or_else(|| panic!("the answer answers the gate: {:?}", answered.json));
    assert!(context.contains("#20"), "{context}");
    let log = w.log("work");
    assert!(
        log.last().unwrap()["saw"][0]
            .as_str()
            .unwrap()
            .contains("(the prompt answers ambiguous-criteria=proceed)"),
        "{log:?}"
    );
}

// What a session remembers is its own file, private like the rest of
// `.sdd/loop/`, and nothing is written to the old shared record.
#[test]
fn each_session_s_record_is_its_own_private_file() {
    use std::os::unix::fs::PermissionsExt;
    let w = World::new(AMBIGUOUS);
    let prompt = "/sdd:work --loop --max-agents 1";
    assert!(
        w.hook("user-prompt-submit", &w.prompt(prompt, "p-1"))
            .blocked()
    );
    let peer = OtherSession::start();
    let theirs = w.hook_as(
        "user-prompt-submit",
        &from_peer(w.prompt(prompt, "q-1")),
        peer.pid(),
    );
    assert!(theirs.blocked());
    assert!(!w.state("work.hook.json").exists());
    let dir = w.state("work.sessions");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    for id in [w.session_id.as_str(), PEER] {
        let file = dir.join(format!("{id}.json"));
        assert_eq!(mode(&file), 0o600, "{}", file.display());
        let record: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(record["session_id"], id);
        assert_eq!(record["pending"]["gate"], "ambiguous-criteria");
    }
}
