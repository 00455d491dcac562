//! Unit tests of the transcript module: slugs, usage, what a prompt is,
//! one response per key, the ledger's bounds and the settle wait.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

const PROMPT: &str = r#"{"type":"user","uuid":"p1","timestamp":"2026-11-03T10:00:00.000Z","message":{"role":"user","content":"/sdd:work --loop"}}"#;

fn assistant(id: &str, request: Option<&str>, at: &str, output: u64) -> String {
    let request = request.map_or(String::new(), |r| format!(r#""requestId":"{r}","#));
    format!(
        r#"{{"type":"assistant",{request}"timestamp":"{at}","message":{{"id":"{id}","model":"m","content":[],"usage":{{"input_tokens":1,"output_tokens":{output}}}}}}}"#
    )
}

fn tick(iteration: u64) -> TickId {
    TickId {
        iteration,
        began_at: format!("2026-11-03T10:0{iteration}:00Z"),
    }
}

/// What the first `end` of a loop counts in a file holding `lines`.
fn spend_of(lines: &[u8]) -> Spend {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    std::fs::write(&path, lines).unwrap();
    count_spend(&path, &Ledger::default(), &tick(1), None)
        .unwrap()
        .spend
}

fn with_prompt(lines: &[String]) -> String {
    let mut all = vec![PROMPT.to_owned()];
    all.extend(lines.iter().cloned());
    all.join("\n")
}

#[test]
fn the_slug_replaces_every_character_outside_ascii_letters_and_digits() {
    for (path, slug) in [
        ("/home/me/my_app.v2", "-home-me-my-app-v2"),
        ("/home/me/My Project", "-home-me-My-Project"),
        ("/home/me/.agents", "-home-me--agents"),
        ("/srv/a-b/c", "-srv-a-b-c"),
        ("/home/josé/app", "-home-jos--app"),
        ("/tmp/🚀x", "-tmp---x"),
    ] {
        assert_eq!(project_slug(Path::new(path)), slug, "{path}");
    }
}

#[test]
fn the_config_dir_is_claude_config_dir_else_dot_claude_in_home() {
    let home = PathBuf::from("/home/me");
    let dirs = ClaudeDirs {
        config_dir: None,
        home: home.clone(),
        session_id: None,
    };
    assert_eq!(dirs.config_dir(), home.join(".claude"));
    let dirs = ClaudeDirs {
        config_dir: Some("/etc/claude".into()),
        home,
        session_id: None,
    };
    assert_eq!(dirs.config_dir(), PathBuf::from("/etc/claude"));
}

#[test]
fn missing_counts_are_zero_and_the_cache_split_never_loses_a_write() {
    let usage = |json: &str| serde_json::from_str::<RawUsage>(json).unwrap().totals();
    assert_eq!(usage("{}"), TokenTotals::default());
    assert_eq!(
        usage(r#"{"input_tokens":3,"cache_creation_input_tokens":500,"output_tokens":5}"#),
        TokenTotals {
            input: 3,
            output: 5,
            cache_creation: 500,
            cache_creation_1h: 0,
            cache_read: 0,
        },
        "older builds wrote no split"
    );
    assert_eq!(
        usage(
            r#"{"cache_creation_input_tokens":500,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":900}}"#
        ),
        TokenTotals {
            cache_creation: 1000,
            cache_creation_1h: 900,
            ..TokenTotals::default()
        },
        "a split larger than its total wins"
    );
    assert_eq!(
        usage(r#"{"input_tokens":null,"cache_read_input_tokens":7}"#).cache_read,
        7
    );
}

#[test]
fn a_streamed_response_keeps_its_last_usage_not_the_sum() {
    let lines = with_prompt(&[
        assistant("msg_1", Some("req_1"), "2026-11-03T10:01:00Z", 5),
        assistant("msg_1", Some("req_1"), "2026-11-03T10:01:01Z", 9),
        assistant("msg_1", Some("req_1"), "2026-11-03T10:01:02Z", 40),
    ]);
    let spend = spend_of(lines.as_bytes());
    assert_eq!(spend.by_model["m"].output, 40);
    assert_eq!(spend.responses, 1);
    assert_eq!(spend.skipped.streamed, 2);
}

#[test]
fn a_response_is_a_message_id_and_request_id_pair() {
    let lines = with_prompt(&[
        assistant("msg_1", Some("req_1"), "2026-11-03T10:01:00Z", 5),
        assistant("msg_1", Some("req_2"), "2026-11-03T10:02:00Z", 7),
        assistant("msg_2", None, "2026-11-03T10:03:00Z", 11),
    ]);
    let spend = spend_of(lines.as_bytes());
    assert_eq!(spend.responses, 3);
    assert_eq!(spend.by_model["m"].output, 23);
    assert_eq!(spend.by_model["m"].input, 3);
}

#[test]
fn bytes_that_are_not_utf8_are_a_malformed_line_not_an_error() {
    let mut bytes = format!("{PROMPT}\n").into_bytes();
    bytes.extend_from_slice(b"\xff\xfe\x00garbage\r\n");
    bytes.extend_from_slice(assistant("a", None, "2026-11-03T10:05:00Z", 3).as_bytes());
    bytes.extend_from_slice(b"\r\n\n   \n{\"type\":7}\n\"just a string\"\n");
    let spend = spend_of(&bytes);
    assert_eq!(spend.responses, 1, "a CRLF line still parses");
    assert_eq!(spend.skipped.malformed, 1);
    assert_eq!(
        spend.skipped.foreign, 2,
        "`type` not a string; not an object"
    );
}

#[test]
fn the_synthetic_model_and_incomplete_entries_are_skipped() {
    let lines = with_prompt(&[
            r#"{"type":"assistant","timestamp":"2026-11-03T10:05:00Z","message":{"id":"x","model":"<synthetic>","usage":{"input_tokens":0,"output_tokens":0}}}"#.to_owned(),
            r#"{"type":"assistant","timestamp":"2026-11-03T10:05:00Z","message":{"model":"m","usage":{}}}"#.to_owned(),
            r#"{"type":"assistant","timestamp":"2026-11-03T10:05:00Z","message":{"id":"y","usage":{}}}"#.to_owned(),
            r#"{"type":"assistant","timestamp":"2026-11-03T10:05:00Z","message":{"id":"y","model":"m","usage":{"input_tokens":-4}}}"#.to_owned(),
            r#"{"type":"assistant","timestamp":"2026-11-03T10:05:00Z"}"#.to_owned(),
    ]);
    let spend = spend_of(lines.as_bytes());
    assert_eq!(spend.skipped.synthetic, 1);
    assert_eq!(spend.skipped.incomplete, 4);
    assert!(spend.by_model.is_empty());
}

/// The prompts `scan_file` finds in `lines`, by identity.
fn prompts_in(lines: &[&str]) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    scan::scan_file(&path)
        .unwrap()
        .prompts
        .into_iter()
        .map(|p| p.id)
        .collect()
}

#[test]
fn a_prompt_is_a_user_entry_that_starts_a_turn() {
    let found = prompts_in(&[
        r#"{"type":"user","uuid":"text","message":{"role":"user","content":"hello"}}"#,
        r#"{"type":"user","uuid":"blocks","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{}}]}}"#,
        r#"{"type":"user","uuid":"result","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"ok"}]}}"#,
        r#"{"type":"user","uuid":"meta","isMeta":true,"message":{"role":"user","content":"Base directory for this skill: …"}}"#,
        r#"{"type":"user","uuid":"summary","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued…"}}"#,
        r#"{"type":"user","uuid":"only","isVisibleInTranscriptOnly":true,"message":{"role":"user","content":"x"}}"#,
        r#"{"type":"user","uuid":"task","isSidechain":true,"message":{"role":"user","content":"Find the tests"}}"#,
        r#"{"type":"user","uuid":"odd","message":{"role":"user","content":[1,"two",null,[3],{"type":7}]}}"#,
        r#"{"type":"user","uuid":"none","message":{"role":"user"}}"#,
        r#"{"type":"user","uuid":"number","message":{"role":"user","content":5}}"#,
        r#"{"type":"attachment","uuid":"att","attachment":{"type":"queued_command","prompt":"later"}}"#,
        r#"{"type":"queue-operation","operation":"enqueue","content":"/sdd:work --loop"}"#,
        r#"{"type":"last-prompt","lastPrompt":"/sdd:work --loop"}"#,
        r#"{"type":"user","promptId":"by-prompt-id","message":{"role":"user","content":"no uuid"}}"#,
        r#"{"type":"user","message":{"role":"user","content":"neither"}}"#,
    ]);
    assert_eq!(
        found,
        ["text", "blocks", "odd", "by-prompt-id", "s.jsonl:15"],
        "tool results, made-up messages, subagent tasks and other entry types start no turn"
    );
}

// Every tool result between a prompt and a response leaves the response
// answering that prompt; the next prompt takes over.
#[test]
fn a_response_answers_the_last_prompt_before_it_in_file_order() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    let lines = [
        assistant("before", None, "2026-11-03T09:59:00Z", 1),
        r#"{"type":"user","uuid":"p1","timestamp":"2026-11-03T10:00:00Z","message":{"content":"go"}}"#.to_owned(),
        assistant("r1", None, "2026-11-03T10:00:01Z", 1),
        r#"{"type":"user","uuid":"tr","timestamp":"2026-11-03T10:00:02Z","message":{"content":[{"type":"tool_result","tool_use_id":"t"}]}}"#.to_owned(),
        r#"{"type":"attachment","timestamp":"2026-11-03T10:00:02Z"}"#.to_owned(),
        // Written late, stamped early: the order of the file decides.
        assistant("r2", None, "2026-11-03T09:00:00Z", 1),
        r#"{"type":"user","uuid":"p2","timestamp":"2026-11-03T10:01:00Z","message":{"content":"again"}}"#.to_owned(),
        assistant("r3", None, "2026-11-03T10:01:01Z", 1),
    ];
    std::fs::write(&path, lines.join("\n")).unwrap();
    let scan = scan::scan_file(&path).unwrap();
    let answers = |id: &str| {
        let key = ResponseKey {
            message: id.to_owned(),
            request: None,
        };
        scan.responses[&key]
            .prompt
            .map(|i| scan.prompts[i].id.clone())
    };
    assert_eq!(answers("before"), None);
    assert_eq!(answers("r1").as_deref(), Some("p1"));
    assert_eq!(answers("r2").as_deref(), Some("p1"));
    assert_eq!(answers("r3").as_deref(), Some("p2"));
}

fn line(iteration: u64, keys: &[&str]) -> LedgerTick {
    LedgerTick {
        iteration,
        began_at: tick(iteration).began_at,
        transcript: PathBuf::from("/t/s.jsonl"),
        prompt: Some(format!("p{iteration}")),
        counted: keys
            .iter()
            .map(|k| ResponseKey {
                message: (*k).to_owned(),
                request: None,
            })
            .collect(),
    }
}

#[test]
fn the_ledger_keeps_the_last_ticks_and_a_tick_replaces_its_own_line() {
    let mut ledger = Ledger::default();
    for n in 1..=(MAX_TICKS as u64 + 3) {
        ledger = ledger.with(line(n, &["a"]));
    }
    assert_eq!(ledger.ticks.len(), MAX_TICKS);
    assert_eq!(ledger.ticks[0].iteration, 4, "the oldest are dropped first");
    let last = MAX_TICKS as u64 + 3;
    let again = ledger.with(line(last, &["b"]));
    assert_eq!(again.ticks.len(), MAX_TICKS);
    assert_eq!(again.ticks.last().unwrap().counted[0].message, "b");
    assert_eq!(
        again.earlier(&tick(last)).count(),
        MAX_TICKS - 1,
        "an end run again does not see its own first line"
    );
}

#[test]
fn a_ledger_round_trips_and_a_damaged_one_names_the_file_and_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("work.transcript.json");
    assert_eq!(Ledger::load(&path).unwrap(), Ledger::default());
    let ledger = Ledger::default().with(line(1, &["a", "b"]));
    ledger.save(&path).unwrap();
    assert_eq!(Ledger::load(&path).unwrap(), ledger);
    for bad in [
        r#"{"version":2,"ticks":[]}"#,
        r#"{"version":1,"tick":[]}"#,
        "{",
    ] {
        std::fs::write(&path, bad).unwrap();
        let err = Ledger::load(&path).unwrap_err();
        assert!(err.to_string().contains("work.transcript.json"), "{err}");
        assert!(err.help().starts_with("delete "), "{}", err.help());
    }
}

/// Runs `settle` on a file; each wait appends the next of `later` (Claude
/// Code writing its queue). Returns how it ended and how many waits it took.
fn settle_on(later: &[&str]) -> (Settled, usize) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    std::fs::write(&path, format!("{PROMPT}\n")).unwrap();
    let mut waits = 0;
    let mut sleep = |d: Duration| {
        assert_eq!(d, Settle::CLAUDE_CODE.poll);
        if let Some(more) = later.get(waits) {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap();
            std::io::Write::write_all(&mut f, format!("{more}\n").as_bytes()).unwrap();
        }
        waits += 1;
    };
    let settled = settle(&path, Settle::CLAUDE_CODE, &mut sleep).unwrap();
    (settled, waits)
}

#[test]
fn settle_waits_until_the_file_has_been_quiet_for_three_write_intervals() {
    let limits = Settle::CLAUDE_CODE;
    let quiet = (limits.quiet.as_millis() / limits.poll.as_millis()) as usize;
    assert_eq!(settle_on(&[]), (Settled::Quiet, quiet));
    let written = [r#"{"type":"assistant"}"#, r#"{"type":"user"}"#];
    assert_eq!(
        settle_on(&written),
        (Settled::Quiet, written.len() + quiet),
        "each write starts the quiet time again"
    );
}

#[test]
fn settle_gives_up_on_a_file_that_keeps_growing() {
    let limits = Settle::CLAUDE_CODE;
    let growing: Vec<String> = (0..200)
        .map(|i| format!("{{\"type\":\"attachment\",\"n\":{i}}}"))
        .collect();
    let growing: Vec<&str> = growing.iter().map(String::as_str).collect();
    let most = (limits.most.as_millis() / limits.poll.as_millis()) as usize;
    assert_eq!(settle_on(&growing), (Settled::GaveUp, most));
}

#[test]
fn settle_on_a_file_that_never_appears_waits_it_out_then_names_it() {
    let limits = Settle::CLAUDE_CODE;
    let most = (limits.most.as_millis() / limits.poll.as_millis()) as usize;
    let mut waits = 0;
    let err = settle(Path::new("/nonexistent/s.jsonl"), limits, &mut |_| {
        waits += 1;
    })
    .unwrap_err();
    assert!(err.to_string().contains("/nonexistent/s.jsonl"), "{err}");
    assert_eq!(waits, most, "a missing file is waited for, up to the limit");
}

// Claude Code creates a new session's transcript with its first queued
// write: a session whose only response was text reached its Stop hook's
// `end` before the file existed, and the tick was left open.
#[test]
fn settle_waits_for_a_file_claude_code_has_not_created_yet() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    let limits = Settle::CLAUDE_CODE;
    let quiet = (limits.quiet.as_millis() / limits.poll.as_millis()) as usize;
    let mut waits = 0;
    let settled = settle(&path, limits, &mut |_| {
        waits += 1;
        if waits == 3 {
            std::fs::write(&path, format!("{PROMPT}\n")).unwrap();
        }
    })
    .unwrap();
    assert_eq!(settled, Settled::Quiet);
    assert_eq!(
        waits,
        3 + quiet,
        "quiet is counted from the file's first look"
    );
}

// A session started with `--no-session-persistence` never writes the file
// its hooks are told about: the help names that, and what to do instead.
#[test]
fn a_missing_transcript_names_session_persistence_and_the_way_round_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("never-written.jsonl");
    let err = count_spend(&missing, &Ledger::default(), &tick(1), None).unwrap_err();
    assert!(err.to_string().contains("never-written.jsonl"), "{err}");
    let help = err.help();
    assert!(help.contains("--no-session-persistence"), "{help}");
    assert!(help.contains("--usage MODEL:IN:OUT"), "{help}");
    // Any other read failure keeps its own help.
    std::fs::create_dir(&missing).unwrap();
    let other = count_spend(&missing, &Ledger::default(), &tick(1), None).unwrap_err();
    assert!(
        !other.help().contains("--no-session-persistence"),
        "{}",
        other.help()
    );
}

/// Measured in CI under load: a real `/loop` tick's last response (12,700
/// tokens) was not in the transcript when the quiet time had passed, and
/// the Stop hook's `end` left it out. Knowing the message that ended the
/// turn, the settle waits until the file holds it.
#[test]
fn settle_until_waits_for_the_last_message_past_a_quiet_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    std::fs::write(&path, format!("{PROMPT}\n")).unwrap();
    let limits = Settle::CLAUDE_CODE;
    let quiet = (limits.quiet.as_millis() / limits.poll.as_millis()) as usize;
    let words =
        crate::transcript::awaited_words("Opened the pull request for issue 1.\n\nDone.").unwrap();
    assert_eq!(words, "Opened the pull request for issue 1.");
    let late = quiet + 5;
    let mut waits = 0;
    let settled = crate::transcript::settle_until(&path, limits, Some(&words), &mut |_| {
        waits += 1;
        if waits == late {
            let line = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Opened the pull request for issue 1.\n\nDone."}]}}"#;
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();
        }
    })
    .unwrap();
    assert_eq!(settled, Settled::Quiet);
    assert_eq!(
        waits,
        late + quiet,
        "quiet, then the message, then quiet again"
    );
    // A message that never comes: the limit, then on.
    let mut waits = 0;
    let settled =
        crate::transcript::settle_until(&path, limits, Some("Never written here"), &mut |_| {
            waits += 1;
        })
        .unwrap();
    assert_eq!(settled, Settled::GaveUp);
    assert_eq!(
        waits,
        (limits.most.as_millis() / limits.poll.as_millis()) as usize
    );
}

#[test]
fn the_awaited_words_are_what_json_leaves_as_it_is() {
    use crate::transcript::awaited_words;
    assert_eq!(
        awaited_words("  \n Done: PR #3 opened (it's green). \"quoted\""),
        Some("Done: PR #3 opened (it's green).".to_owned())
    );
    assert_eq!(awaited_words("Ok."), None, "too little to tell");
    assert_eq!(
        awaited_words("Café ouvert"),
        None,
        "stops at the first character JSON may escape"
    );
    assert_eq!(awaited_words(""), None);
}
