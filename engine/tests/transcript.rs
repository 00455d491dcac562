//! Spend read from Claude Code transcripts by the rule of
//! `sdd_loop::transcript` — each response counted once, in the tick whose
//! prompt it answers, a closing message by the next `end` — on a session
//! recorded with the real Claude Code 2.1.328 and on hand-made files of
//! the shapes it and older builds write (`tests/fixtures/transcripts/`,
//! described in its README); then `auto` and the config-directory rules.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sdd_loop::rules::rates::RateTable;
use sdd_loop::state::budget::{Budget, Ceilings};
use sdd_loop::state::protocol::ModelUsage;
use sdd_loop::transcript::{
    ClaudeDirs, Counted, Ledger, Skipped, TickId, TokenTotals, TranscriptChoice, TranscriptError,
    count_spend, locate,
};
use serde_json::{Value, json};

const PROJECT: &str = "/home/me/my_app.v2";
const SLUG: &str = "-home-me-my-app-v2";
const SESSION_A: &str = "5f0c2a8e-1b7d-4c3e-9a61-0d2e8b7c4f10.jsonl";
const SESSION_B: &str = "9d4e7b21-6c3a-4f85-b2d0-7e1a5c9f3b62.jsonl";
const SESSION_C: &str = "c3a1e5f0-2d4b-4e6a-8c7d-1f2e3a4b5c6d.jsonl";
const SUBAGENT_B: &str = "9d4e7b21-6c3a-4f85-b2d0-7e1a5c9f3b62/subagents/agent-a7f3c91e.jsonl";

/// The real session: chat, three ticks, then a fourth in a forked session.
const REAL: &str = "real-2.1.328/projects/-work-demo-proj";
const REAL_FIRST: &str = "4b8e6284-baa1-4ae1-a8e9-7724a1654143.jsonl";
const REAL_FORK: &str = "b642edd5-7f8d-47c4-83df-6544686bb075.jsonl";
const REAL_MODEL: &str = "claude-sonnet-4-5";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts")
}

fn folder() -> PathBuf {
    fixtures().join("projects").join(SLUG)
}

fn tick(iteration: u64) -> TickId {
    TickId {
        iteration,
        began_at: format!("2026-11-25T04:47:{:02}Z", 10 + iteration),
    }
}

fn end(chosen: &Path, ledger: &Ledger, iteration: u64) -> Counted {
    count_spend(chosen, ledger, &tick(iteration), None).unwrap()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The index of each line holding a `Bash` call whose command contains
/// `command`, in file order.
fn calls(lines: &[String], command: &str) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["message"]["content"].as_array().is_some_and(|blocks| {
                blocks.iter().any(|b| {
                    b["type"] == "tool_use"
                        && b["input"]["command"]
                            .as_str()
                            .is_some_and(|c| c.contains(command))
                })
            })
        })
        .map(|(i, _)| i)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// The usage the scripted model gave response `msg_probe{n}` of the real
/// session (README): `n = 1` is the chat before the loop; then tick `t`'s
/// `k`-th response has input `100t + k`, output `10t + k`, cache reads
/// `1000t` and, on the first, 7 cache writes.
fn scripted(n: u64) -> TokenTotals {
    if n == 1 {
        return TokenTotals {
            input: 9,
            output: 9,
            ..TokenTotals::default()
        };
    }
    let (t, k) = ((n - 2) / 4 + 1, (n - 2) % 4 + 1);
    TokenTotals {
        input: 100 * t + k,
        output: 10 * t + k,
        cache_creation: if k == 1 { 7 } else { 0 },
        cache_creation_1h: 0,
        cache_read: 1000 * t,
    }
}

fn sum(responses: impl IntoIterator<Item = u64>) -> BTreeMap<String, TokenTotals> {
    let mut t = TokenTotals::default();
    for n in responses {
        let s = scripted(n);
        t.input += s.input;
        t.output += s.output;
        t.cache_creation += s.cache_creation;
        t.cache_read += s.cache_read;
    }
    BTreeMap::from([(REAL_MODEL.to_owned(), t)])
}

// The failure this pins: an in-session tick run by the real Claude Code
// counted 1 of its 4 responses (the one running `begin` came before the
// window, the one running `end` was missed, the closing one came after).
// Each `end` reads the file as it stood when that `end` ran: up to the
// call running it (`end` waits for Claude Code's writes).
#[test]
fn three_real_ticks_count_every_response_but_the_last_closing_one_and_a_fourth_counts_it() {
    let tmp = tempfile::tempdir().unwrap();
    let real = fixtures().join(REAL);
    let first = lines(&real.join(REAL_FIRST));
    let ends = calls(&first, "sdd-loop work end");
    assert_eq!(ends.len(), 3);
    let session = tmp.path().join(REAL_FIRST);
    let mut ledger = Ledger::default();
    let mut totals = Vec::new();
    for (t, cut) in (1..=3u64).zip(&ends) {
        write_lines(&session, &first[..=*cut]);
        let counted = end(&session, &ledger, t);
        let spend = &counted.spend;
        // Tick t: its begin, work and end responses, and (after the first)
        // the previous tick's closing message.
        let base = 4 * (t - 1) + 2;
        let mut want: Vec<u64> = (base..base + 3).collect();
        if t > 1 {
            want.push(base - 1);
        }
        assert_eq!(spend.by_model, sum(want.iter().copied()), "tick {t}");
        assert_eq!((spend.responses, spend.this_tick), (want.len() as u64, 3));
        assert_eq!(spend.skipped.not_loop, 1, "the chat before the loop");
        totals.push(spend.by_model[REAL_MODEL]);
        ledger = counted.ledger;
    }
    write_lines(&session, &first);
    let sum3 = totals.iter().fold(TokenTotals::default(), |mut a, t| {
        a.input += t.input;
        a.output += t.output;
        a.cache_creation += t.cache_creation;
        a.cache_read += t.cache_read;
        a
    });
    assert_eq!(
        BTreeMap::from([(REAL_MODEL.to_owned(), sum3)]),
        sum(2..=12),
        "every response of the three ticks but the one after the last end"
    );

    // The fourth tick runs in a forked session: a new file that copies the
    // first one's entries (same keys, same prompts) before its own.
    let fork = lines(&real.join(REAL_FORK));
    let cut = calls(&fork, "sdd-loop work end")[3];
    let forked = tmp.path().join(REAL_FORK);
    write_lines(&forked, &fork[..=cut]);
    let counted = end(&forked, &ledger, 4);
    let spend = &counted.spend;
    assert_eq!(spend.by_model, sum([13, 14, 15, 16]));
    assert_eq!((spend.responses, spend.this_tick), (4, 3));
    assert_eq!(
        spend.files.len(),
        2,
        "the fork and the file the ledger names"
    );
    // The 11 responses of ticks 1-3 are 17 entries (those with text
    // before their tool call are two), in each of the two files.
    assert_eq!(spend.skipped.counted_before, 2 * 17);
    ledger = counted.ledger;

    // After the session: the fourth closing message, once.
    write_lines(&forked, &fork);
    let counted = end(&forked, &ledger, 5);
    assert_eq!(counted.spend.by_model, sum([17]));
    assert_eq!(counted.spend.responses, 1);
    let again = end(&forked, &counted.ledger, 6);
    assert_eq!(again.spend.responses, 0, "nothing twice");
}

// An iteration a session left open (its stop could not end it) is ended
// at the session's next loop prompt, whose entry may already be in the
// file. The hooks pass the tick's own `promptId` (`end --prompt-id`): its
// responses count as the tick's; taking the last prompt would charge
// them to no tick.
#[test]
fn a_tick_ended_after_the_next_prompt_was_written_counts_its_own_prompt_s_responses() {
    let tmp = tempfile::tempdir().unwrap();
    let first = lines(&fixtures().join(REAL).join(REAL_FIRST));
    let prompt_of = |line: &str| -> Option<String> {
        let v: Value = serde_json::from_str(line).unwrap();
        (v["type"] == "user" && v["message"]["content"] == "/sdd:work --loop --max-prs 50")
            .then(|| v["promptId"].as_str().unwrap().to_owned())
    };
    let prompts: Vec<(usize, String)> = first
        .iter()
        .enumerate()
        .filter_map(|(i, l)| prompt_of(l).map(|p| (i, p)))
        .collect();
    let (next_prompt, _) = prompts[1];
    let session = tmp.path().join(REAL_FIRST);
    write_lines(&session, &first[..=next_prompt]);

    let own = count_spend(&session, &Ledger::default(), &tick(1), Some(&prompts[0].1)).unwrap();
    assert_eq!(own.spend.by_model, sum(2..=5), "tick 1's four responses");
    assert_eq!((own.spend.responses, own.spend.this_tick), (4, 4));
    assert_eq!(own.ledger.ticks[0].prompt, own.spend.prompt);

    let last = end(&session, &Ledger::default(), 1);
    assert_eq!(last.spend.responses, 0, "the last prompt has no answer yet");
    assert_eq!(last.spend.skipped.not_loop, own.spend.skipped.not_loop + 6);

    let unknown = count_spend(
        &session,
        &Ledger::default(),
        &tick(1),
        Some("no-such-prompt"),
    )
    .unwrap();
    assert_eq!(
        unknown.spend, last.spend,
        "an id no prompt carries: the last prompt"
    );
}

// Recorded by another route: the real Claude Code against `mock-model`
// (its script beside the file), one prompt answered by four responses, the
// third a `Bash` call standing for `end`.
#[test]
fn a_real_tick_recorded_against_mock_model_counts_its_four_responses_once() {
    let tmp = tempfile::tempdir().unwrap();
    let real = fixtures().join("real-2.1.328-mock-model");
    let name = "80e0210c-fc40-4791-971c-34d9a14abae1.jsonl";
    let all = lines(&real.join(name));
    let path = tmp.path().join(name);
    write_lines(&path, &all[..=calls(&all, "echo end")[0]]);
    let totals = |input, output, cache_read, cache_creation| {
        BTreeMap::from([(
            // Claude Code's default model when none is named.
            "claude-opus-5-5".to_owned(),
            TokenTotals {
                input,
                output,
                cache_creation,
                cache_creation_1h: 0,
                cache_read,
            },
        )])
    };
    let first = end(&path, &Ledger::default(), 1);
    assert_eq!(
        first.spend.by_model,
        totals(
            3000 + 120 + 110,
            60 + 45 + 30,
            12_000 + 12_400,
            12_000 + 400 + 300
        )
    );
    write_lines(&path, &all);
    let second = end(&path, &first.ledger, 2);
    assert_eq!(second.spend.by_model, totals(90, 12, 12_700, 0));
    assert_eq!(end(&path, &second.ledger, 3).spend.responses, 0);
}

#[test]
fn every_line_of_a_real_transcript_is_counted_or_skipped_for_a_reason() {
    let real = fixtures().join(REAL);
    let counted = end(&real.join(REAL_FORK), &Ledger::default(), 1);
    let spend = &counted.spend;
    let s = spend.skipped;
    let read: usize = spend.files.iter().map(|f| lines(&f.path).len()).sum();
    assert_eq!(
        s.malformed
            + s.foreign
            + s.other_entries
            + s.incomplete
            + s.synthetic
            + s.not_loop
            + s.counted_before
            + s.streamed
            + s.replayed
            + spend.responses,
        read as u64
    );
    assert_eq!(
        (s.malformed, s.foreign, s.incomplete, s.synthetic),
        (0, 0, 0, 0),
        "every line of 2.1.328 is an entry the reader knows"
    );
    assert_eq!(
        spend.responses, 4,
        "the last prompt's: tick 4's and its closing one"
    );
}

/// One line of a hand-made transcript in the 2.1.328 shape.
fn entry(kind: &str, uuid: &str, at: &str, rest: Value) -> String {
    let mut v = json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/work/demo", "sessionId": "s", "version": "2.1.328",
        "type": kind, "uuid": uuid, "timestamp": at,
    });
    v.as_object_mut()
        .unwrap()
        .extend(rest.as_object().unwrap().clone());
    v.to_string()
}

fn prompt(uuid: &str, at: &str, text: &str) -> String {
    entry(
        "user",
        uuid,
        at,
        json!({"promptId": format!("pid-{uuid}"), "message": {"role": "user", "content": text}}),
    )
}

fn tool_result(uuid: &str, at: &str, tool: &str) -> String {
    entry(
        "user",
        uuid,
        at,
        json!({"message": {"role": "user", "content": [{"tool_use_id": tool, "type": "tool_result", "content": "ok"}]}}),
    )
}

/// One entry of response `id`; `request` absent as with a server that
/// sends no `request-id` header.
fn response(id: &str, request: Option<&str>, at: &str, input: u64, output: u64) -> String {
    let mut rest = json!({"message": {
        "id": id, "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "…"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": input, "output_tokens": output, "cache_read_input_tokens": 0},
    }});
    if let Some(r) = request {
        rest["requestId"] = json!(r);
    }
    entry("assistant", &format!("u-{id}-{output}"), at, rest)
}

fn noise(at: &str) -> Vec<String> {
    vec![
        json!({"type": "queue-operation", "operation": "enqueue", "timestamp": at, "content": "/sdd:work --loop"}).to_string(),
        json!({"type": "attachment", "timestamp": at, "attachment": {"type": "total_tokens_reminder"}}).to_string(),
        json!({"type": "api-request", "timestamp": at, "id": "r"}).to_string(),
        json!({"type": "last-prompt", "lastPrompt": "/sdd:work --loop"}).to_string(),
        json!({"type": "cost-state", "totalCostUSD": 0.1}).to_string(),
        "{\"type\":\"assistant\",\"message\":{\"id\":\"torn".to_owned(),
    ]
}

fn output(c: &Counted) -> u64 {
    c.spend.by_model.get("m").map_or(0, |t| t.output)
}

// Chat before the loop and chat between ticks answer prompts no tick took.
#[test]
fn chat_before_the_loop_and_between_ticks_is_never_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    let mut file = vec![
        prompt(
            "chat",
            "2026-11-25T09:00:00.000Z",
            "what does this repo do?",
        ),
        response(
            "msg_chat",
            Some("req_chat"),
            "2026-11-25T09:00:01.000Z",
            1,
            1000,
        ),
        prompt("p1", "2026-11-25T09:01:00.000Z", "/sdd:work --loop"),
        response("msg_1a", Some("req_1a"), "2026-11-25T09:01:01.000Z", 1, 1),
        tool_result("t1", "2026-11-25T09:01:02.000Z", "toolu_1"),
        response("msg_1b", None, "2026-11-25T09:01:03.000Z", 1, 2),
    ];
    file.extend(noise("2026-11-25T09:01:03.500Z"));
    write_lines(&path, &file);
    let one = end(&path, &Ledger::default(), 1);
    assert_eq!(output(&one), 3);
    file.extend([
        response("msg_1c", None, "2026-11-25T09:01:04.000Z", 1, 4),
        prompt("chat2", "2026-11-25T09:02:00.000Z", "how is it going?"),
        response("msg_chat2", None, "2026-11-25T09:02:01.000Z", 1, 2000),
        prompt("p2", "2026-11-25T09:03:00.000Z", "/sdd:work --loop"),
        response("msg_2a", None, "2026-11-25T09:03:01.000Z", 1, 8),
    ]);
    write_lines(&path, &file);
    let two = end(&path, &one.ledger, 2);
    assert_eq!(
        output(&two),
        4 + 8,
        "tick 1's closing message, and tick 2's own"
    );
    assert_eq!(two.spend.skipped.not_loop, 2, "both chats");
    assert_eq!(two.spend.skipped.malformed, 1);
}

// A session ended after its tick; the next tick runs in a new session.
// Its `end` reads the earlier file the ledger names for what came after.
#[test]
fn a_new_session_s_end_counts_the_closing_message_left_in_the_earlier_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.jsonl"), tmp.path().join("b.jsonl"));
    let mut first = vec![
        prompt("p1", "2026-11-25T09:01:00.000Z", "/sdd:work --loop"),
        response("msg_1", Some("req_1"), "2026-11-25T09:01:01.000Z", 1, 1),
    ];
    write_lines(&a, &first);
    let one = end(&a, &Ledger::default(), 1);
    first.push(response(
        "msg_close",
        Some("req_close"),
        "2026-11-25T09:01:05.000Z",
        1,
        10,
    ));
    write_lines(&a, &first);
    write_lines(
        &b,
        &[
            prompt("p2", "2026-11-25T10:00:00.000Z", "/sdd:work --loop"),
            response("msg_2", Some("req_2"), "2026-11-25T10:00:01.000Z", 1, 100),
        ],
    );
    let two = end(&b, &one.ledger, 2);
    assert_eq!(output(&two), 110);
    assert_eq!((two.spend.responses, two.spend.this_tick), (2, 1));
    assert_eq!(two.spend.files[1].path, a);
    assert_eq!(two.spend.files[1].responses, 1);

    // The earlier file is gone before the next end: noted, not an error.
    std::fs::remove_file(&a).unwrap();
    let three = end(&b, &two.ledger, 3);
    assert_eq!(three.spend.missing, [a]);
    assert_eq!(three.spend.responses, 0);
}

// Builds that copy a resumed session's turns into the new file give the
// copied prompts new uuids and some copies new timestamps.
#[test]
fn a_resumed_session_s_copies_never_count_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.jsonl"), tmp.path().join("b.jsonl"));
    write_lines(
        &a,
        &[
            prompt("p1", "2026-11-25T09:01:00.000Z", "/sdd:work --loop"),
            response("msg_1", None, "2026-11-25T09:01:01.000Z", 1, 1),
            response("msg_close", None, "2026-11-25T09:01:05.000Z", 1, 10),
        ],
    );
    let mut ledger = Ledger::default();
    ledger = ledger.with(sdd_loop::transcript::LedgerTick {
        iteration: 1,
        began_at: tick(1).began_at,
        transcript: a.clone(),
        prompt: Some("p1".into()),
        counted: vec![sdd_loop::transcript::ResponseKey {
            message: "msg_1".into(),
            request: None,
        }],
    });
    write_lines(
        &b,
        &[
            prompt("p1-copy", "2026-11-25T10:00:00.000Z", "/sdd:work --loop"),
            response("msg_1", None, "2026-11-25T10:00:00.100Z", 1, 1),
            response("msg_close", None, "2026-11-25T09:01:05.000Z", 1, 10),
            prompt("p2", "2026-11-25T10:01:00.000Z", "/sdd:work --loop"),
            response("msg_2", None, "2026-11-25T10:01:01.000Z", 1, 100),
        ],
    );
    let two = end(&b, &ledger, 2);
    assert_eq!(
        output(&two),
        110,
        "the closing message once, from either copy"
    );
    assert_eq!(two.spend.skipped.counted_before, 2);
    assert_eq!(two.spend.skipped.replayed, 1);
    let three = end(&b, &two.ledger, 3);
    assert_eq!(three.spend.responses, 0);
}

// An `end` that failed after writing the ledger is run again: it replaces
// its own line and counts the same responses again.
#[test]
fn an_end_run_again_for_the_same_tick_counts_what_it_counted_before() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    write_lines(
        &path,
        &[
            prompt("p1", "2026-11-25T09:01:00.000Z", "/sdd:work --loop"),
            response("msg_1", None, "2026-11-25T09:01:01.000Z", 1, 1),
        ],
    );
    let first = end(&path, &Ledger::default(), 1);
    let again = end(&path, &first.ledger, 1);
    assert_eq!(again.spend, first.spend);
    assert_eq!(again.ledger, first.ledger);
}

// The old hand-made folder: session A, then B resumed from A (its copies
// of A's turns answer B's copy of A's prompt), a subagent of B.
#[test]
fn subagents_count_in_the_tick_of_the_prompt_their_session_had() {
    let counted = end(&folder().join(SESSION_B), &Ledger::default(), 1);
    let spend = &counted.spend;
    assert_eq!(
        spend.prompt.as_deref(),
        Some("53bcb279-8029-5123-96be-6418a0583cfe")
    );
    assert_eq!(spend.by_model, expected_models());
    assert_eq!(spend.responses, 5);
    let files: Vec<(PathBuf, u64)> = spend
        .files
        .iter()
        .map(|f| {
            (
                f.path.strip_prefix(folder()).unwrap().to_owned(),
                f.responses,
            )
        })
        .collect();
    assert_eq!(
        files,
        vec![
            (PathBuf::from(SESSION_B), 3),
            (PathBuf::from(SUBAGENT_B), 2)
        ],
        "another session of the project is not read"
    );
    assert_eq!(spend.skipped, EXPECTED_SKIPPED);
}

fn expected_models() -> BTreeMap<String, TokenTotals> {
    BTreeMap::from([
        (
            "claude-haiku-4-5-20251001".to_owned(),
            TokenTotals {
                input: 820,
                output: 210,
                cache_creation: 5_000,
                cache_creation_1h: 0,
                cache_read: 5_000,
            },
        ),
        (
            "claude-opus-4-5-20251101".to_owned(),
            TokenTotals {
                input: 10,
                output: 310,
                cache_creation: 3_000,
                cache_creation_1h: 3_000,
                cache_read: 25_000,
            },
        ),
        (
            "claude-sonnet-4-5-20250929".to_owned(),
            TokenTotals {
                input: 4,
                output: 110,
                cache_creation: 100,
                cache_creation_1h: 0,
                cache_read: 60_100,
            },
        ),
    ])
}

const EXPECTED_SKIPPED: Skipped = Skipped {
    malformed: 0,
    foreign: 0,
    other_entries: 6,
    incomplete: 0,
    synthetic: 0,
    not_loop: 4,
    counted_before: 0,
    streamed: 1,
    replayed: 0,
};

#[test]
fn usage_records_count_cache_tokens_inside_tokens_in() {
    let spend = end(&folder().join(SESSION_B), &Ledger::default(), 1).spend;
    assert_eq!(
        spend.usage(),
        vec![
            ModelUsage {
                model: "claude-haiku-4-5-20251001".into(),
                tokens_in: 820 + 5_000 + 5_000,
                tokens_out: 210,
                cache_read_tokens: 5_000,
                cache_write_tokens: 5_000,
                cache_write_1h_tokens: 0,
            },
            ModelUsage {
                model: "claude-opus-4-5-20251101".into(),
                tokens_in: 10 + 3_000 + 25_000,
                tokens_out: 310,
                cache_read_tokens: 25_000,
                cache_write_tokens: 3_000,
                cache_write_1h_tokens: 3_000,
            },
            ModelUsage {
                model: "claude-sonnet-4-5-20250929".into(),
                tokens_in: 4 + 100 + 60_100,
                tokens_out: 110,
                cache_read_tokens: 60_100,
                cache_write_tokens: 100,
                cache_write_1h_tokens: 0,
            },
        ]
    );
}

#[test]
fn the_spend_is_priced_by_the_rows_of_the_dated_ids() {
    let spend = end(&folder().join(SESSION_B), &Ledger::default(), 1).spend;
    let mut budget = Budget::start("2026-11-03T10:00:00Z", Ceilings::default(), "x");
    for u in spend.usage() {
        budget.add_model_tokens(&u.model, &u.tokens());
    }
    let cost = RateTable::built_in().cost(&budget.tokens_by_model);
    // per Mtok: sonnet-4-5 3 / 15, read 0.30, write 3.75, 1 h 6;
    //           opus-4-5 5 / 25, read 0.50, write 6.25, 1 h 10;
    //           haiku-4-5 1 / 5, read 0.10, write 1.25, 1 h 2.
    // sonnet 4×3 + 60,100×0.3 + 100×3.75 + 0 + 110×15          = 20,067
    // opus   10×5 + 25,000×0.5 + 0 + 3,000×10 + 310×25         = 50,300
    // haiku  820×1 + 5,000×0.1 + 5,000×1.25 + 0 + 210×5        =  8,620
    //                                              ÷ 10⁶ → $0.078987
    assert_eq!(cost.dollars, 0.078987);
    assert!(cost.unknown_models.is_empty());
    assert_eq!(cost.family_notes().len(), 3, "each dated id names its row");
}

/// Copies the fixture config directory to a temporary one, so a test can
/// set modification times or add folders.
fn config_copy() -> (tempfile::TempDir, PathBuf) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config");
    copy(&fixtures(), &config);
    (tmp, config)
}

fn touch(path: &Path, offset_secs: u64) {
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(base + Duration::from_secs(offset_secs))
        .unwrap();
}

fn dirs(config: &Path, home: PathBuf, session_id: Option<&str>) -> ClaudeDirs {
    ClaudeDirs {
        config_dir: Some(config.to_owned()),
        home,
        session_id: session_id.map(str::to_owned),
    }
}

#[test]
fn auto_picks_the_newest_transcript_of_the_project() {
    let (tmp, config) = config_copy();
    let dirs = dirs(&config, tmp.path().join("home"), None);
    let project_dir = config.join("projects").join(SLUG);
    touch(&project_dir.join(SESSION_A), 30);
    touch(&project_dir.join(SESSION_B), 20);
    touch(&project_dir.join(SESSION_C), 10);
    let chosen = locate(&TranscriptChoice::Auto, &dirs, Path::new(PROJECT)).unwrap();
    assert_eq!(chosen, project_dir.join(SESSION_A));
    touch(&project_dir.join(SESSION_B), 40);
    let chosen = locate(&TranscriptChoice::Auto, &dirs, Path::new(PROJECT)).unwrap();
    assert_eq!(chosen, project_dir.join(SESSION_B));
}

// Claude Code exports CLAUDE_CODE_SESSION_ID to the commands it runs: the
// session's own file wins over a newer one of another session, and is
// found even when `end` runs in another directory than the session's.
#[test]
fn auto_takes_the_session_s_own_file_when_its_id_is_known() {
    let (tmp, config) = config_copy();
    let project_dir = config.join("projects").join(SLUG);
    touch(&project_dir.join(SESSION_A), 10);
    touch(&project_dir.join(SESSION_B), 20);
    touch(&project_dir.join(SESSION_C), 5);
    let id = SESSION_A.trim_end_matches(".jsonl");
    let own = dirs(&config, tmp.path().join("home"), Some(id));
    let chosen = locate(&TranscriptChoice::Auto, &own, Path::new(PROJECT)).unwrap();
    assert_eq!(chosen, project_dir.join(SESSION_A));
    let elsewhere = locate(
        &TranscriptChoice::Auto,
        &own,
        Path::new("/home/me/my_app.v2/sub"),
    )
    .unwrap();
    assert_eq!(elsewhere, project_dir.join(SESSION_A));
    for unknown in ["0000", "../projects", ""] {
        let other = dirs(&config, tmp.path().join("home"), Some(unknown));
        let chosen = locate(&TranscriptChoice::Auto, &other, Path::new(PROJECT)).unwrap();
        assert_eq!(
            chosen,
            project_dir.join(SESSION_B),
            "{unknown:?}: the newest"
        );
    }
}

#[test]
fn an_explicit_path_is_taken_as_given() {
    let dirs = ClaudeDirs {
        config_dir: None,
        home: PathBuf::from("/nonexistent-home"),
        session_id: Some("ignored".into()),
    };
    let path = folder().join(SESSION_C);
    assert_eq!(
        locate(
            &TranscriptChoice::Path(path.clone()),
            &dirs,
            Path::new(PROJECT)
        )
        .unwrap(),
        path
    );
}

#[test]
fn claude_config_dir_overrides_the_home_directory() {
    let (tmp, config) = config_copy();
    let home = tmp.path().join("home");
    let home_folder = home.join(".claude/projects").join(SLUG);
    std::fs::create_dir_all(&home_folder).unwrap();
    std::fs::write(home_folder.join("from-home.jsonl"), "").unwrap();

    let with_override = dirs(&config, home.clone(), None);
    let chosen = locate(&TranscriptChoice::Auto, &with_override, Path::new(PROJECT)).unwrap();
    assert!(
        chosen.starts_with(config.join("projects").join(SLUG)),
        "{chosen:?}"
    );

    let without = ClaudeDirs {
        config_dir: None,
        home,
        session_id: None,
    };
    let chosen = locate(&TranscriptChoice::Auto, &without, Path::new(PROJECT)).unwrap();
    assert_eq!(chosen, home_folder.join("from-home.jsonl"));
}

#[test]
fn a_project_without_transcripts_names_the_folder_and_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = dirs(tmp.path(), tmp.path().join("home"), None);
    let err = locate(&TranscriptChoice::Auto, &dirs, Path::new("/srv/other app")).unwrap_err();
    let folder = tmp.path().join("projects/-srv-other-app");
    assert_eq!(
        err.to_string(),
        format!(
            "no Claude Code transcripts for /srv/other app: {} does not exist",
            folder.display()
        )
    );
    assert!(err.help().contains("CLAUDE_CONFIG_DIR"), "{}", err.help());
    assert!(err.help().contains("--transcript PATH"), "{}", err.help());

    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("notes.txt"), "").unwrap();
    let err = locate(&TranscriptChoice::Auto, &dirs, Path::new("/srv/other app")).unwrap_err();
    assert!(
        matches!(err, TranscriptError::NoTranscripts { .. }),
        "{err}"
    );

    let err = locate(&TranscriptChoice::Auto, &dirs, Path::new("relative/app")).unwrap_err();
    assert!(
        matches!(err, TranscriptError::RelativeProject { .. }),
        "{err}"
    );
}

#[test]
fn an_unreadable_transcript_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("gone.jsonl");
    let err = count_spend(&path, &Ledger::default(), &tick(1), None).unwrap_err();
    assert!(matches!(err, TranscriptError::Read { .. }), "{err}");
    assert!(
        err.to_string().starts_with(&format!(
            "cannot read the Claude Code transcript {}",
            path.display()
        )),
        "{err}"
    );
    // A directory where a transcript should be cannot be read either.
    let dir = tmp.path().join("dir.jsonl");
    std::fs::create_dir(&dir).unwrap();
    let err = count_spend(&dir, &Ledger::default(), &tick(1), None).unwrap_err();
    assert!(err.to_string().contains("dir.jsonl"), "{err}");
}

// Claude Code cuts a slug longer than 200 characters and appends a hash
// whose algorithm changed between builds; the folder is found by prefix.
#[test]
fn a_long_project_path_is_found_by_its_cut_slug() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = dirs(tmp.path(), tmp.path().join("home"), None);
    let project = PathBuf::from(format!("/work/{}", "deep_dir/".repeat(30)));
    let slug = sdd_loop::transcript::project_slug(&project);
    assert!(slug.len() > 200);
    let cut = &slug[..200];
    let folder = tmp.path().join("projects").join(format!("{cut}-1k2j3h"));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("s.jsonl"), "").unwrap();
    assert_eq!(dirs.project_dir(&project).unwrap(), folder);

    std::fs::create_dir_all(tmp.path().join("projects").join(format!("{cut}-zz9"))).unwrap();
    let err = dirs.project_dir(&project).unwrap_err();
    assert!(
        matches!(err, TranscriptError::AmbiguousProjectFolder { ref candidates, .. } if candidates.len() == 2),
        "{err}"
    );
}
