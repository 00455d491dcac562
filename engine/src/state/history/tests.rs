//! Unit tests of the history room: the schema's lines and the log's I/O.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::*;

/// Seed 000's canonical example line (an older, partial shape).
const SEED_000: &str = r#"{"iteration": 2, "skill": "work", "started_at": "2026-05-09T14:50:00Z", "ended_at": "2026-05-09T14:58:00Z", "outcome": "ok", "tracked_prs": [{"number": 142, "branch": "feature/123-foo", "head_sha_at_iteration_start": "abc1234", "head_sha_at_iteration_end": "def5678", "state_at_end": "open"}], "active_worktrees": [{"path": ".sdd/worktrees/feature-123-foo", "branch": "feature/123-foo", "head_sha": "def5678"}], "gates": [], "stop_conditions_fired": []}"#;

/// Seed 001's line schema example.
const SEED_001: &str = r##"{"iteration": 3, "skill": "work", "started_at": "2026-05-09T14:50:00Z", "ended_at": "2026-05-09T14:58:00Z", "outcome": "ok", "prs_touched_this_iter": ["#151", "#152", "#153"], "agents_dispatched_this_iter": 3, "tokens_in_this_iter": 412300, "tokens_out_this_iter": 98417, "dollars_this_iter": 3.21, "budget_snapshot": {"iterations_used": 3, "prs_touched_total": 7, "minutes_elapsed": 24, "tokens_in": 1843210, "tokens_out": 412057, "dollars_estimate": 14.92, "qmd_failures_consecutive": 0}, "gates": [{"name": "ambiguous-criteria", "question": "Issue #149 has ambiguous criteria. Skip, escalate, or proceed?", "answer": "escalate", "at": "2026-05-09T14:54:13Z"}, {"name": "backlog-drift", "question": "Backlog changed since last iteration. Re-propose?", "answer": "continue", "at": "2026-05-09T14:50:42Z"}], "stop_conditions_fired": []}"##;

fn round_trip(text: &str) {
    let line: HistoryLine = serde_json::from_str(text).unwrap();
    let before: Value = serde_json::from_str(text).unwrap();
    let after: Value = serde_json::from_str(&line.to_json()).unwrap();
    assert_eq!(before, after);
}

#[test]
fn seed_example_lines_lose_nothing() {
    round_trip(SEED_000);
    round_trip(SEED_001);
}

#[test]
fn unknown_fields_at_every_level_are_kept() {
    let text = SEED_001
        .replace("\"outcome\"", "\"host\": \"ci-1\", \"outcome\"")
        .replace(
            "\"qmd_failures_consecutive\"",
            "\"cache_hits\": 4, \"qmd_failures_consecutive\"",
        )
        .replace(
            "\"at\": \"2026-05-09T14:54:13Z\"",
            "\"at\": \"2026-05-09T14:54:13Z\", \"by\": \"joe\"",
        );
    round_trip(&text);
    let text = SEED_000.replace(
        "\"state_at_end\": \"open\"",
        "\"state_at_end\": \"open\", \"title\": \"Foo\"",
    );
    round_trip(&text);
}

fn record(chain: Chain) -> TickRecord {
    TickRecord {
        iteration: 1,
        skill: "work".into(),
        started_at: "2026-05-09T14:50:00Z".into(),
        ended_at: "2026-05-09T14:58:00Z".into(),
        outcome: Outcome::Ok,
        prs_touched_this_iter: vec!["#1".into()],
        agents_dispatched_this_iter: 1,
        tokens_in_this_iter: 10,
        tokens_out_this_iter: 5,
        dollars_this_iter: 0.01,
        agent_cost_usd_this_iter: None,
        comments_pushed_this_iter: 0,
        merges_attempted_this_iter: 0,
        budget_snapshot: BudgetSnapshot {
            iterations_used: Some(1),
            ..Default::default()
        },
        tracked_prs: vec![],
        active_worktrees: vec![],
        gates: vec![],
        stop_conditions_fired: vec![],
        failures_this_iter: vec![],
        backlog_snapshot: Some(vec![1, 2]),
        issues_dispatched_this_iter: Some(vec![1]),
        chain,
        lock_held: true,
        error: None,
        turn_ended_by: None,
    }
}

fn keys(line: HistoryLine) -> Vec<String> {
    let v: Map<String, Value> = serde_json::from_str(&line.to_json()).unwrap();
    v.keys().cloned().collect()
}

#[test]
fn engine_lines_carry_every_contract_field() {
    let k = keys(record(Chain::NotInvoked).into());
    for field in [
        "iteration",
        "skill",
        "started_at",
        "ended_at",
        "outcome",
        "prs_touched_this_iter",
        "agents_dispatched_this_iter",
        "tokens_in_this_iter",
        "tokens_out_this_iter",
        "dollars_this_iter",
        "budget_snapshot",
        "tracked_prs",
        "active_worktrees",
        "gates",
        "stop_conditions_fired",
        "chain_invoked",
    ] {
        assert!(k.iter().any(|x| x == field), "missing {field}");
    }
}

#[test]
fn the_agents_own_cost_is_written_only_when_known() {
    let has = |r: TickRecord| {
        keys(r.into())
            .iter()
            .any(|k| k == "agent_cost_usd_this_iter")
    };
    assert!(!has(record(Chain::NotInvoked)));
    let line: HistoryLine = TickRecord {
        agent_cost_usd_this_iter: Some(0.42),
        ..record(Chain::NotInvoked)
    }
    .into();
    assert_eq!(line.agent_cost_usd_this_iter, Some(0.42));
    let back: HistoryLine = serde_json::from_str(&line.to_json()).unwrap();
    assert_eq!(back, line, "the field round-trips");
}

#[test]
fn chain_presence_rules() {
    let has = |c: Chain, f: &str| keys(record(c).into()).iter().any(|k| k == f);
    assert!(!has(Chain::NotApplicable, "chain_invoked"));
    assert!(has(Chain::NotInvoked, "chain_invoked"));
    assert!(!has(Chain::NotInvoked, "review_outcome"));
    assert!(!has(Chain::NotInvoked, "autofix_pr_invoked"));
    let invoked = |autofix| Chain::Invoked {
        review_outcome: "approved".into(),
        autofix,
    };
    assert!(has(invoked(Autofix::NotInvoked), "review_outcome"));
    assert!(has(invoked(Autofix::NotInvoked), "autofix_pr_invoked"));
    assert!(!has(
        invoked(Autofix::NotInvoked),
        "autofix_pr_invocation_status"
    ));
    assert!(has(
        invoked(Autofix::Invoked {
            status: "ok".into()
        }),
        "autofix_pr_invocation_status"
    ));
}

fn write(dir: &Path, content: &[u8]) -> PathBuf {
    let path = dir.join("work.history.jsonl");
    std::fs::write(&path, content).unwrap();
    path
}

fn line(i: u64) -> String {
    let mut l: HistoryLine = record(Chain::NotInvoked).into();
    l.iteration = Some(i);
    l.to_json()
}

#[test]
fn tail_reads_last_lines_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let body: String = (1..=5).map(|i| line(i) + "\n").collect();
    let path = write(tmp.path(), body.as_bytes());
    let tail = read_tail(&path, 2).unwrap();
    let its: Vec<_> = tail
        .lines
        .iter()
        .map(|l| l.line.iteration.unwrap())
        .collect();
    assert_eq!(its, vec![4, 5]);
    assert!(tail.torn.is_none());
    assert!(!tail.needs_separator);
    assert!(
        read_tail(&tmp.path().join("none"), 1)
            .unwrap()
            .lines
            .is_empty()
    );
}

#[test]
fn tail_does_not_read_damage_it_does_not_need() {
    let tmp = tempfile::tempdir().unwrap();
    let body = format!("garbage\n{}\n", line(2));
    let path = write(tmp.path(), body.as_bytes());
    assert_eq!(
        read_tail(&path, 1).unwrap().last().unwrap().iteration,
        Some(2)
    );
}

#[test]
fn tail_reads_lines_longer_than_a_chunk() {
    let tmp = tempfile::tempdir().unwrap();
    let mut big: HistoryLine = record(Chain::NotInvoked).into();
    big.extra
        .insert("blob".into(), Value::String("x".repeat(200_000)));
    let body = format!("{}\n{}\n{}\n", line(1), big.to_json(), line(3));
    let path = write(tmp.path(), body.as_bytes());
    let tail = read_tail(&path, 3).unwrap();
    assert_eq!(tail.lines.len(), 3);
    assert_eq!(
        tail.lines[1].line.extra["blob"].as_str().unwrap().len(),
        200_000
    );
}

#[test]
fn torn_line_at_every_byte_offset_is_detected_and_moved_aside() {
    let tmp = tempfile::tempdir().unwrap();
    let complete = format!("{}\n{}\n", line(1), line(2));
    let sample = line(3);
    for cut in 1..sample.len() {
        let mut body = complete.clone().into_bytes();
        body.extend_from_slice(&sample.as_bytes()[..cut]);
        let path = write(tmp.path(), &body);
        let tail = read_tail(&path, 1).unwrap();
        assert_eq!(tail.last().unwrap().iteration, Some(2), "cut at {cut}");
        let torn = tail
            .torn
            .clone()
            .unwrap_or_else(|| panic!("cut at {cut} not torn"));
        assert_eq!(torn.bytes, &sample.as_bytes()[..cut]);
        assert_eq!(read_all(&path).unwrap().torn, Some(torn.clone()));

        let (moved, sidecar) = repair_torn(&path, &torn, &format!("s{cut}"))
            .unwrap()
            .unwrap();
        assert_eq!(moved, torn);
        assert_eq!(std::fs::read(&sidecar).unwrap(), &sample.as_bytes()[..cut]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), complete);
        let after = read_tail(&path, 1).unwrap();
        assert!(after.torn.is_none());
        assert_eq!(after.last().unwrap().iteration, Some(2));
    }
}

#[test]
fn complete_last_line_without_newline_is_kept_and_separated_on_append() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), format!("{}\n{}", line(1), line(2)).as_bytes());
    let tail = read_tail(&path, 1).unwrap();
    assert!(tail.torn.is_none());
    assert!(tail.needs_separator);
    let next: HistoryLine = serde_json::from_str(&line(3)).unwrap();
    let done = append(&path, &next, "s").unwrap();
    assert!(done.repaired.is_none());
    let all = read_all(&path).unwrap();
    assert_eq!(all.lines.len(), 3);
    assert!(!all.needs_separator);
}

#[test]
fn torn_line_sidecar_never_overwrites() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), format!("{}\n{{\"itera", line(1)).as_bytes());
    let torn = read_tail(&path, 1).unwrap().torn.unwrap();
    let (_, first) = repair_torn(&path, &torn, "same").unwrap().unwrap();
    std::fs::write(&path, format!("{}\n{{\"x", line(1))).unwrap();
    let torn = read_tail(&path, 1).unwrap().torn.unwrap();
    let (_, second) = repair_torn(&path, &torn, "same").unwrap().unwrap();
    assert_ne!(first, second);
    assert_eq!(std::fs::read(&first).unwrap(), b"{\"itera");
    assert!(torn_note(&path, &torn, &second).contains("moved to"));
}

#[test]
fn mid_file_damage_is_refused_with_its_line_number() {
    let tmp = tempfile::tempdir().unwrap();
    let body = format!(
        "{}\n{}\n{{\"iteration\": oops}}\n{}\n",
        line(1),
        line(2),
        line(4)
    );
    let path = write(tmp.path(), body.as_bytes());
    let err = read_all(&path).unwrap_err();
    assert!(
        matches!(err, HistoryError::Damaged { line: 3, .. }),
        "{err}"
    );
    // The tail reader refuses it too once it has to read that far.
    let err = read_tail(&path, 2).unwrap_err();
    assert!(
        matches!(err, HistoryError::Damaged { line: 3, .. }),
        "{err}"
    );
    assert!(err.help().contains("line 3"));
}

#[test]
fn wrong_typed_field_is_damage_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        b"{\"iteration\": \"two\"}\n{\"iteration\": 3}\n",
    );
    let err = read_all(&path).unwrap_err();
    assert!(
        matches!(err, HistoryError::Damaged { line: 1, .. }),
        "{err}"
    );
}

#[test]
fn blank_lines_are_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        format!("{}\n\n{}\n\n", line(1), line(2)).as_bytes(),
    );
    assert_eq!(read_all(&path).unwrap().lines.len(), 2);
    let tail = read_tail(&path, 5).unwrap();
    assert_eq!(tail.lines.len(), 2);
}

/// `read_tail` took trailing blanks without a newline for a torn line
/// (and would have moved them to a sidecar); `read_all` skipped them.
#[test]
fn a_blank_unterminated_tail_is_not_torn() {
    let tmp = tempfile::tempdir().unwrap();
    for text in ["   ".to_owned(), format!("{}\n \t", line(1))] {
        let path = write(tmp.path(), text.as_bytes());
        for tail in [read_tail(&path, 5).unwrap(), read_all(&path).unwrap()] {
            assert_eq!(tail.torn, None, "{text:?}");
            assert!(!tail.needs_separator, "{text:?}");
        }
    }
}

#[test]
fn append_creates_0600_and_reports_creation() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("work.history.jsonl");
    let l: HistoryLine = record(Chain::NotInvoked).into();
    assert!(append(&path, &l, "s").unwrap().created);
    assert!(!append(&path, &l, "s").unwrap().created);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(read_all(&path).unwrap().lines.len(), 2);
}

#[test]
fn an_append_after_a_dead_writer_s_torn_line_moves_it_aside_and_appends() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), format!("{}\n{{\"itera", line(1)).as_bytes());
    let next: HistoryLine = serde_json::from_str(&line(2)).unwrap();
    let done = append(&path, &next, "s").unwrap();
    let (torn, sidecar) = done.repaired.expect("the torn line is moved aside");
    assert_eq!(torn.bytes, b"{\"itera");
    assert_eq!(std::fs::read(&sidecar).unwrap(), b"{\"itera");
    let all = read_all(&path).unwrap();
    assert!(all.torn.is_none());
    let iterations: Vec<_> = all.lines.iter().map(|l| l.line.iteration).collect();
    assert_eq!(iterations, [Some(1), Some(2)]);
}

/// Regression: a tick read another process's append half-copied, took it
/// for a crash remnant, and truncated it (or, without the loop lock,
/// dropped its own line). A line in flight is written under the file's
/// lock; a repair judged from an earlier read re-reads under the lock.
#[test]
fn a_line_still_being_appended_is_neither_moved_nor_cut() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), format!("{}\n", line(1)).as_bytes());
    let full = format!("{}\n", line(2));
    let half = full.len() / 2;
    // A live appender: its lock taken, half its line written.
    let mut writer = crate::state::files::open_append_locked(&path).unwrap();
    writer.file().write_all(&full.as_bytes()[..half]).unwrap();
    // What a reader without the lock sees: a torn-looking tail.
    let bytes = std::fs::read(&path).unwrap();
    let seen = TornTail {
        offset: (line(1).len() + 1) as u64,
        bytes: bytes[line(1).len() + 1..].to_vec(),
    };
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let repairer = {
        let path = path.clone();
        std::thread::spawn(move || {
            started_tx.send(()).unwrap();
            repair_torn(&path, &seen, "s").unwrap()
        })
    };
    let appender = {
        let path = path.clone();
        std::thread::spawn(move || {
            let next: HistoryLine = serde_json::from_str(&line(3)).unwrap();
            append(&path, &next, "s").unwrap()
        })
    };
    started_rx.recv().unwrap();
    // Both wait on the writer's lock whenever they got there; the writer
    // finishes its line and lets go.
    writer.file().write_all(&full.as_bytes()[half..]).unwrap();
    drop(writer);
    assert!(repairer.join().unwrap().is_none(), "a live line was moved");
    assert!(appender.join().unwrap().repaired.is_none());
    let all = read_all(&path).unwrap();
    assert!(all.torn.is_none());
    let iterations: Vec<_> = all.lines.iter().map(|l| l.line.iteration).collect();
    assert_eq!(iterations, [Some(1), Some(2), Some(3)]);
    let sidecars = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".torn-")
        })
        .count();
    assert_eq!(sidecars, 0);
}
