//! `sdd-loop hook stop` against the mock tracker: the session's stop ends
//! the iteration it holds — PRs found in the world even when nobody
//! reported them, spend from the exact transcript, the summary from the
//! last message — never twice, and on a tracker outage it blocks once,
//! never when `stop_hook_active`.

#[expect(dead_code, reason = "each hook test binary uses part of the world")]
mod hooks;

use std::collections::BTreeMap;

use sdd_mocks::tracker::Fault;

use hooks::*;

fn begin(w: &World, prompt: &str, prompt_id: &str) {
    let a = w.hook("user-prompt-submit", &w.prompt(prompt, prompt_id));
    assert!(a.context().is_some(), "{:?}", a.json);
}

// Regression: a PR the model opened with `curl` and did not report was
// not counted (`prs_touched` stayed `[]`), so `--max-prs 1` did not stop
// the next tick.
#[test]
fn the_stop_ends_the_tick_with_an_unreported_pr_and_the_transcript_s_spend() {
    let w = World::new(TWO_STORIES);
    begin(&w, "/sdd:work --loop --max-prs 1 --max-agents 1", "p-1");
    let pr = w.open_pr("feature/1-login", "Closes #1");
    let stop = w.hook(
        "stop",
        &w.stop(false, "Opened the login page PR.\nMore detail here.", "p-1"),
    );
    assert!(stop.passed(), "{:?}", stop.json);
    assert!(!w.is_open("work"), "the iteration is ended");
    let line = w.history("work").pop().unwrap();
    assert_eq!(line["outcome"], "ok");
    assert_eq!(
        line["prs_touched_this_iter"],
        serde_json::json!([format!("#{pr}")])
    );
    assert!(
        line["tokens_in_this_iter"].as_u64().unwrap() > 0,
        "spend from the transcript: {line}"
    );
    let log = w.log("work");
    let last = log.last().unwrap();
    assert_eq!(
        (last["event"].as_str(), last["decision"].as_str()),
        (Some("stop"), Some("ended"))
    );
    // The PR counted, the PR budget stops the next tick before the model.
    let next = w.hook(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --max-prs 1 --max-agents 1", "p-2"),
    );
    assert!(next.blocked(), "{:?}", next.json);
    assert!(
        next.text().contains("prs_touched_budget"),
        "{}",
        next.text()
    );
}

#[test]
fn the_summary_is_the_first_line_of_the_last_message() {
    let w = World::new(TWO_STORIES);
    begin(&w, "/sdd:work --loop --max-prs 5", "p-1");
    let stop = w.hook(
        "stop",
        &w.stop(false, "\nImplemented #1 and #2.\nDetails follow.", "p-1"),
    );
    assert!(stop.passed());
    let log = w.log("work");
    let saw = log.last().unwrap()["saw"].to_string();
    assert!(saw.contains("--summary 'Implemented #1 and #2.'"), "{saw}");
    assert!(!saw.contains("Details follow"), "{saw}");
}

#[test]
fn an_iteration_ended_explicitly_is_not_ended_twice() {
    let w = World::new(TWO_STORIES);
    begin(&w, "/sdd:work --loop --max-prs 5", "p-1");
    let end = w.engine(&[
        "work",
        "end",
        "--iteration",
        "1",
        "--holder-pid",
        &std::process::id().to_string(),
        "--summary",
        "ended by the model",
    ]);
    assert!(
        end.status.success(),
        "{}",
        String::from_utf8_lossy(&end.stderr)
    );
    let before = w.files();
    let stop = w.hook("stop", &w.stop(false, "Done.", "p-1"));
    assert!(stop.passed());
    assert!(stop.output.stdout.is_empty());
    assert_eq!(w.files(), before, "nothing written");
    assert_eq!(w.history("work").len(), 1);
}

#[test]
fn a_tracker_outage_blocks_the_stop_once_and_the_next_prompt_ends_the_tick() {
    let w = World::new(TWO_STORIES);
    begin(&w, "/sdd:work --loop --max-prs 5", "p-1");
    let outage = w.tracker.inject(Fault::status("GET", "**/pulls", 503));
    let first = w.hook("stop", &w.stop(false, "Done.", "p-1"));
    assert!(first.blocked(), "{:?}", first.json);
    assert!(
        first.text().contains("could not end iteration 1"),
        "{}",
        first.text()
    );
    assert!(
        first.text().contains("Stop again to retry"),
        "{}",
        first.text()
    );
    assert!(w.is_open("work"), "nothing recorded");
    let second = w.hook("stop", &w.stop(true, "Done.", "p-1"));
    assert!(second.passed(), "never blocks twice: {:?}", second.json);
    assert!(w.is_open("work"));
    assert!(w.history("work").is_empty());
    let log = w.log("work");
    let decisions: Vec<&str> = log
        .iter()
        .filter(|e| e["event"] == "stop")
        .map(|e| e["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["block", "left-open"]);

    w.tracker.remove_fault(outage);
    let next = w.hook(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --max-prs 5", "p-2"),
    );
    let context = next.context().unwrap_or_else(|| panic!("{:?}", next.json));
    assert!(context.contains("iteration 2"), "{context}");
    assert_eq!(w.history("work").len(), 1, "iteration 1 recorded once");
}

const FLAGS: &str = "/sdd:work --loop --max-prs 5";

/// Iteration 1, begun by an earlier process of this test's session (a
/// `claude -p` that `--continue` will replace); dropping it ends it.
fn begun_by_an_earlier_process(w: &World) -> OtherSession {
    let earlier = OtherSession::start();
    let began = w.hook_as("user-prompt-submit", &w.prompt(FLAGS, "p-1"), earlier.pid());
    assert!(began.context().is_some(), "{:?}", began.json);
    earlier
}

/// The earlier process's turn ends with iteration 1 open: the tracker is
/// down at both stops (the first blocked, the second let through).
fn left_open_by(w: &World, earlier: &OtherSession) {
    let outage = w.tracker.inject(Fault::status("GET", "**/pulls", 503));
    let first = w.hook_as("stop", &w.stop(false, "Done.", "p-1"), earlier.pid());
    assert!(first.blocked(), "{:?}", first.json);
    let second = w.hook_as("stop", &w.stop(true, "Done.", "p-1"), earlier.pid());
    assert!(second.passed(), "never blocks twice: {:?}", second.json);
    w.tracker.remove_fault(outage);
}

/// Sends `prompt` from this process; iteration 2 begins. The history then.
fn next_prompt(w: &World, prompt: &serde_json::Value) -> Vec<serde_json::Value> {
    let next = w.hook("user-prompt-submit", prompt);
    let context = next.context().unwrap_or_else(|| panic!("{:?}", next.json));
    assert!(context.contains("iteration 2"), "{context}");
    let history = w.history("work");
    assert_eq!(history.len(), 1, "iteration 1 recorded once");
    history
}

// `claude -p --continue` runs each prompt in a new process under the same
// session id: an iteration the session's earlier process left open (its
// stops could not end it) is ended by the session's next loop prompt with
// the transcript's spend — not reaped as a dead holder's and recorded
// interrupted with none.
#[test]
fn an_iteration_the_session_s_earlier_process_left_open_is_ended_by_its_next_prompt() {
    let w = World::new(TWO_STORIES);
    let earlier = begun_by_an_earlier_process(&w);
    left_open_by(&w, &earlier);
    drop(earlier);

    let history = next_prompt(&w, &w.prompt(FLAGS, "p-2"));
    assert_eq!(history[0]["outcome"], "ok", "{}", history[0]);
    assert!(history[0].get("error").is_none(), "{}", history[0]);
    assert!(
        history[0]["tokens_in_this_iter"].as_u64().unwrap() > 0,
        "spend from the transcript: {}",
        history[0]
    );
    let log = w.log("work");
    let saw = log.last().unwrap()["saw"].to_string();
    assert!(
        saw.contains("iteration 1 was still open in this session"),
        "{saw}"
    );
}

// The same, but the next prompt is another session's: the dead process's
// iteration is not that session's to end, so `begin` reaps the lock and
// recovers it (interrupted), as for any dead holder.
#[test]
fn a_dead_process_s_iteration_is_recovered_not_ended_by_another_session() {
    let w = World::new(TWO_STORIES);
    let earlier = begun_by_an_earlier_process(&w);
    left_open_by(&w, &earlier);
    drop(earlier);

    let mut other = w.prompt(FLAGS, "o-1");
    other["session_id"] = serde_json::json!("99999999-8888-7777-6666-555555555555");
    let history = next_prompt(&w, &other);
    assert_eq!(history[0]["error"], "interrupted", "{}", history[0]);
}

// The session's earlier process died mid-turn (no Stop hook ran): its
// iteration was cut short, so even the same session's next prompt leaves
// it to `begin`, which recovers it as interrupted.
#[test]
fn a_session_killed_mid_turn_has_its_iteration_recovered_as_interrupted() {
    let w = World::new(TWO_STORIES);
    drop(begun_by_an_earlier_process(&w));

    let history = next_prompt(&w, &w.prompt(FLAGS, "p-2"));
    assert_eq!(history[0]["error"], "interrupted", "{}", history[0]);
}

#[test]
fn another_session_s_iteration_is_left_to_it() {
    let w = World::new(TWO_STORIES);
    let other = OtherSession::start();
    let a = w.hook_as(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --max-prs 5", "o-1"),
        other.pid(),
    );
    assert!(a.context().is_some());
    let mine = w.hook("stop", &w.stop(false, "Done.", "p-1"));
    assert!(mine.passed());
    assert!(w.is_open("work"), "still the other session's");
}

#[test]
fn a_stop_in_a_project_without_a_loop_does_nothing() {
    let w = World::new(TWO_STORIES);
    let stop = w.hook("stop", &w.stop(false, "Hello.", "p-1"));
    assert!(stop.passed());
    assert!(w.files().is_empty());
    assert!(w.tracker.requests().is_empty());
}

#[test]
fn the_stop_that_ends_the_loop_tells_the_user() {
    let w = World::new(TWO_STORIES);
    // The transcript's spend ($0.1182 at the built-in rates) passes the
    // cost ceiling: the exit stop fires at this end.
    begin(&w, "/sdd:work --loop --max-dollars 0.05 --max-prs 5", "p-1");
    let stop = w.hook("stop", &w.stop(false, "Done.", "p-1"));
    let message = stop
        .json
        .as_ref()
        .and_then(|j| j["systemMessage"].as_str())
        .unwrap_or_default();
    assert!(
        message.contains("iteration 1 is recorded and the work loop has ended (")
            && message.contains("further loop prompts are refused"),
        "{:?}",
        stop.json
    );
}

// Regression: a session whose transcript is missing (Claude Code writes
// none under `--no-session-persistence`) had its stop leave the iteration
// open printing nothing: the user never learnt that the tick went
// unrecorded, nor how to end it.
#[test]
fn a_missing_transcript_leaves_the_tick_open_and_the_stop_tells_the_user_why_and_how_to_end_it() {
    let w = World::new(TWO_STORIES);
    begin(&w, FLAGS, "p-1");
    std::fs::remove_file(&w.transcript).unwrap();
    let stop = w.hook("stop", &w.stop(false, "Done.", "p-1"));
    let told = stop
        .json
        .as_ref()
        .and_then(|j| j["systemMessage"].as_str())
        .unwrap_or_else(|| panic!("the user is told: {:?}", stop.json))
        .to_owned();
    for part in [
        "sdd-loop could not end iteration 1 of the work loop: error: cannot read the Claude Code transcript",
        "--no-session-persistence",
        "the iteration is still open",
        "run `sdd-loop work end --iteration 1` in the project (with `--usage MODEL:IN:OUT`",
    ] {
        assert!(told.contains(part), "{part:?} in {told}");
    }
    assert!(w.is_open("work"), "nothing recorded without the spend");
    let log = w.log("work");
    let last = log.last().unwrap();
    assert_eq!(
        (last["event"].as_str(), last["decision"].as_str()),
        (Some("stop"), Some("left-open"))
    );
    assert_eq!(last["reason"].as_str(), Some(told.as_str()));

    // The next loop prompt still cannot end it, and says how to.
    let next = w.hook("user-prompt-submit", &w.prompt(FLAGS, "p-2"));
    assert!(next.blocked(), "{:?}", next.json);
    assert!(
        next.text()
            .contains("end the iteration by hand: `sdd-loop work end --iteration 1`"),
        "{}",
        next.text()
    );
    // What it says to do ends it.
    let end = w.engine(&[
        "work",
        "end",
        "--iteration",
        "1",
        "--usage",
        "claude-sonnet-4-5:1000:100",
    ]);
    assert!(
        end.status.success(),
        "{}",
        String::from_utf8_lossy(&end.stderr)
    );
    assert!(!w.is_open("work"));
    let line = w.history("work").pop().unwrap();
    assert_eq!(line["tokens_in_this_iter"], 1000, "{line}");
}

// Regression: a stop out of time gave its fallback answer (nothing) and
// logged nothing: the iteration it was ending stayed open silently.
#[test]
fn a_stop_out_of_time_tells_the_user_the_tick_may_be_open_and_logs_it() {
    use sdd_loop::hook::in_time::{self, Waiting};
    use sdd_loop::hook::{Answer, HookEvent};

    let w = World::new(TWO_STORIES);
    begin(&w, FLAGS, "p-1");
    let (_never, answered) = std::sync::mpsc::channel::<Answer>();
    let vars = BTreeMap::new();
    let waiting = Waiting {
        vars: &vars,
        project: Some(w.project.clone()),
        session: Ok(std::process::id()),
        clock: &sdd_loop::os::clock::SystemClock,
    };
    let input = w.stop(false, "Done.", "p-1").to_string();
    let answer = in_time::within(
        HookEvent::Stop,
        input.as_bytes(),
        &answered,
        std::time::Duration::ZERO,
        &waiting,
    );
    let Answer::Tell(told) = &answer else {
        panic!("the user is told: {answer:?}");
    };
    assert!(
        told.contains("sdd-loop did not end iteration 1 of the work loop within 0 s")
            && told.contains("`sdd-loop work end --iteration 1`"),
        "{told}"
    );
    let log = w.log("work");
    let last = log.last().unwrap();
    assert_eq!(
        (
            last["event"].as_str(),
            last["decision"].as_str(),
            last["iteration"].as_u64()
        ),
        (Some("stop"), Some("left-open"), Some(1))
    );
    assert_eq!(last["reason"].as_str(), Some(told.as_str()));
}
