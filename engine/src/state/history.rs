//! The telemetry log `.sdd/loop/{skill}.history.jsonl` (ADR-0028,
//! "Telemetry and observability"; DESIGN §4): append-only, one JSON line per
//! tick, the source of truth for `--resume`.
//!
//! History is the write-ahead log and `budget.json` a checkpoint, so the
//! reader has to survive a crash in the middle of an append:
//! - appends are one `write` plus `fsync` ([`append`]);
//! - the last complete line is found by seeking back from the end, in time
//!   independent of the file's length ([`read_tail`]);
//! - an unterminated last line that is not complete JSON is *torn*: it is
//!   reported and [`repair_torn`] moves its bytes to a sidecar file (nothing
//!   is deleted) before the run continues from the line before;
//! - ticks that do not hold the loop lock append too (a skipped tick's
//!   line), at the moment the holder reads and appends, and a reader can
//!   see a live append half-copied. So appending (read the tail, repair,
//!   append) runs under the file's exclusive advisory lock and reading
//!   under a shared one ([`files::LockedAppend`]): a torn line seen under
//!   the lock was left by a process that is gone, never by one still
//!   writing;
//! - a damaged line anywhere else is refused with its line number — the
//!   engine never guesses past it.
//!
//! What the engine writes is complete: it builds a [`TickRecord`], whose
//! fields are all required, and converts it. What it reads is tolerant:
//! [`HistoryLine`] accepts the contract's older and partial example shapes,
//! and keeps fields it does not know so a rewrite loses nothing.
//!
//! Chain telemetry presence rules (work skill only, see [`Chain`]):
//! `chain_invoked` is on every `/sdd:work` line and never on a
//! `/sdd:review` line; `review_outcome` and `autofix_pr_invoked` are present
//! exactly when `chain_invoked` is `true`; `autofix_pr_invocation_status` is
//! present exactly when `autofix_pr_invoked` is `true`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::state::budget::{Budget, ModelTokens, RunStop};
use crate::state::files::{self, FileError};

/// How a tick ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tick ran and the loop continues.
    Ok,
    /// A stop condition or a `stop` answer ended the loop.
    Halted,
    /// Another tick held the lock; nothing advanced.
    SkippedLock,
    /// The skill or the engine failed this tick.
    Errored,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Halted => "halted",
            Outcome::SkippedLock => "skipped_lock",
            Outcome::Errored => "errored",
        }
    }
}

/// A PR's state at the end of an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PrState {
    Open,
    Merged,
    Closed,
}

impl PrState {
    pub fn as_str(self) -> &'static str {
        match self {
            PrState::Open => "open",
            PrState::Merged => "merged",
            PrState::Closed => "closed",
        }
    }
}

/// A PR the iteration interacted with; typed input for resume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrackedPr {
    pub number: u64,
    pub branch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_sha_at_iteration_start: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_sha_at_iteration_end: Option<String>,
    pub state_at_end: PrState,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A worktree left on disk (successful or failed; never auto-cleaned).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ActiveWorktree {
    pub path: String,
    pub branch: String,
    pub head_sha: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One gate asked this tick, verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GateRecord {
    pub name: String,
    pub question: String,
    pub answer: String,
    pub at: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A failed target with its root cause (drives repeated-failure, #6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FailureRecord {
    /// `"#N"`.
    pub target: String,
    pub root_cause: String,
}

/// Counters after the tick. The contract's seven fields, plus everything
/// needed to restore a run from this line alone (history wins).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BudgetSnapshot {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations_used: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prs_touched_total: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minutes_elapsed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_in: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_out: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dollars_estimate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qmd_failures_consecutive: Option<u64>,
    // Engine extras: the rest of budget.json.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prs_touched: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comments_pushed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merges_attempted: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents_dispatched: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_elapsed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_by_model: Option<BTreeMap<String, ModelTokens>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_prs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_dollars: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_table_source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<RunStop>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tick_ended_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred: Option<Vec<String>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl From<&Budget> for BudgetSnapshot {
    /// Everything in the budget, so the run can be restored from the line.
    fn from(b: &Budget) -> Self {
        Self {
            iterations_used: Some(b.iterations_used),
            prs_touched_total: Some(b.prs_touched.len() as u64),
            minutes_elapsed: Some(b.minutes_elapsed),
            tokens_in: Some(b.tokens_in),
            tokens_out: Some(b.tokens_out),
            dollars_estimate: Some(b.dollars_estimate),
            qmd_failures_consecutive: Some(b.qmd_failures_consecutive),
            prs_touched: Some(b.prs_touched.iter().map(str::to_owned).collect()),
            comments_pushed: Some(b.comments_pushed),
            merges_attempted: Some(b.merges_attempted),
            agents_dispatched: Some(b.agents_dispatched),
            seconds_elapsed: Some(b.elapsed_seconds()),
            tokens_by_model: Some(b.tokens_by_model.clone()),
            run_started_at: Some(b.started_at.clone()),
            max_iterations: Some(b.max_iterations),
            max_prs: Some(b.max_prs),
            max_minutes: Some(b.max_minutes),
            max_dollars: Some(b.max_dollars),
            rate_table_source: Some(b.rate_table_source.clone()),
            stopped: b.stopped.clone(),
            last_tick_ended_at: b.last_tick_ended_at.clone(),
            deferred: Some(b.deferred.clone()),
            extra: Map::new(),
        }
    }
}

/// One history line as read: every field optional (older writers and the
/// contract's partial examples omit some), unknown fields preserved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistoryLine {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prs_touched_this_iter: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents_dispatched_this_iter: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_in_this_iter: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_out_this_iter: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dollars_this_iter: Option<f64>,
    /// What the work's agent says it spent this tick, in USD (Claude Code's
    /// `total_cost_usd`), beside the engine's `dollars_this_iter`. Absent
    /// when the work reports no estimate of its own (a wrapped skill,
    /// Codex, an interrupted tick). Never used by the cost stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_cost_usd_this_iter: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comments_pushed_this_iter: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merges_attempted_this_iter: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_snapshot: Option<BudgetSnapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracked_prs: Option<Vec<TrackedPr>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_worktrees: Option<Vec<ActiveWorktree>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<Vec<GateRecord>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_conditions_fired: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures_this_iter: Option<Vec<FailureRecord>>,
    /// Work: the workable issue set seen at entry (backlog-drift input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backlog_snapshot: Option<Vec<u64>>,
    /// Work: the issues handed to the skill this tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issues_dispatched_this_iter: Option<Vec<u64>>,
    /// `false` on lines written by a tick that did not hold the lock
    /// (skipped ticks, an aborted resume): their snapshot is a read-only
    /// copy, never authoritative for reconciliation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_held: Option<bool>,
    /// Why an `errored` tick failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What ended the tick's turn before its work did, when something
    /// did (in-session ticks, issue 33): a model-API error as Claude
    /// Code's `StopFailure` names it (`rate_limit`, `overloaded`,
    /// `server_error`, …) or `session_end`. Such a tick is `errored` but
    /// fails none of its targets, so it never feeds the repeated-failure
    /// gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_ended_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_invoked: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_outcome: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autofix_pr_invoked: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autofix_pr_invocation_status: Option<String>,
    /// The account's usage windows before and after the tick's work, its
    /// share of each, and a wait it started (docs/src/usage-windows.md);
    /// only on lines of a loop that reads the windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_windows: Option<crate::state::windows::WindowsLine>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl HistoryLine {
    /// Compact one-line JSON (no newline).
    pub fn to_json(&self) -> String {
        let mut value = serde_json::to_value(self).expect("a history line always serialises");
        // What the engine writes it can read back: counts cap at MAX_COUNT.
        if let Value::Object(map) = &mut value {
            for (k, v) in map.iter_mut() {
                if LINE_COUNTS.contains(&format!("/{k}").as_str()) || k == "dollars_this_iter" {
                    crate::state::budget::clamp_counts(v);
                } else if k == "budget_snapshot"
                    && let Value::Object(snapshot) = v
                {
                    for (k, v) in snapshot.iter_mut() {
                        if SNAPSHOT_COUNTS.contains(&k.as_str())
                            || matches!(
                                k.as_str(),
                                "tokens_by_model" | "dollars_estimate" | "max_dollars"
                            )
                        {
                            crate::state::budget::clamp_counts(v);
                        }
                    }
                }
            }
        }
        value.to_string()
    }

    /// Whether the line was written under the lock (older shapes: yes).
    pub fn authoritative(&self) -> bool {
        self.lock_held != Some(false)
    }

    /// The budget snapshot, or an empty one for older shapes without it.
    pub fn snapshot(&self) -> BudgetSnapshot {
        self.budget_snapshot.clone().unwrap_or_default()
    }
}

/// Chain telemetry of a `/sdd:work` tick; its shape *is* the presence rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chain {
    /// A `/sdd:review` line: no chain fields.
    NotApplicable,
    /// Work did not chain into review (nothing ran, `--no-chain`, or the
    /// skill chose not to).
    NotInvoked,
    Invoked {
        review_outcome: String,
        autofix: Autofix,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Autofix {
    NotInvoked,
    Invoked { status: String },
}

/// Everything the engine writes for one tick; every field required.
#[derive(Debug, Clone, PartialEq)]
pub struct TickRecord {
    pub iteration: u64,
    pub skill: String,
    pub started_at: String,
    pub ended_at: String,
    pub outcome: Outcome,
    pub prs_touched_this_iter: Vec<String>,
    pub agents_dispatched_this_iter: u64,
    pub tokens_in_this_iter: u64,
    pub tokens_out_this_iter: u64,
    pub dollars_this_iter: f64,
    /// The agent's own estimate, when it gave one.
    pub agent_cost_usd_this_iter: Option<f64>,
    pub comments_pushed_this_iter: u64,
    pub merges_attempted_this_iter: u64,
    pub budget_snapshot: BudgetSnapshot,
    pub tracked_prs: Vec<TrackedPr>,
    pub active_worktrees: Vec<ActiveWorktree>,
    pub gates: Vec<GateRecord>,
    pub stop_conditions_fired: Vec<String>,
    pub failures_this_iter: Vec<FailureRecord>,
    /// `Some` on work lines.
    pub backlog_snapshot: Option<Vec<u64>>,
    /// `Some` on work lines.
    pub issues_dispatched_this_iter: Option<Vec<u64>>,
    pub chain: Chain,
    pub lock_held: bool,
    pub error: Option<String>,
    /// What ended the turn before the work did ([`HistoryLine::turn_ended_by`]).
    pub turn_ended_by: Option<String>,
}

impl From<TickRecord> for HistoryLine {
    fn from(r: TickRecord) -> Self {
        let (chain_invoked, review_outcome, autofix_pr_invoked, autofix_status) = match r.chain {
            Chain::NotApplicable => (None, None, None, None),
            Chain::NotInvoked => (Some(false), None, None, None),
            Chain::Invoked {
                review_outcome,
                autofix,
            } => match autofix {
                Autofix::NotInvoked => (Some(true), Some(review_outcome), Some(false), None),
                Autofix::Invoked { status } => {
                    (Some(true), Some(review_outcome), Some(true), Some(status))
                }
            },
        };
        HistoryLine {
            iteration: Some(r.iteration),
            skill: Some(r.skill),
            started_at: Some(r.started_at),
            ended_at: Some(r.ended_at),
            outcome: Some(r.outcome),
            prs_touched_this_iter: Some(r.prs_touched_this_iter),
            agents_dispatched_this_iter: Some(r.agents_dispatched_this_iter),
            tokens_in_this_iter: Some(r.tokens_in_this_iter),
            tokens_out_this_iter: Some(r.tokens_out_this_iter),
            dollars_this_iter: Some(r.dollars_this_iter),
            agent_cost_usd_this_iter: r.agent_cost_usd_this_iter,
            comments_pushed_this_iter: Some(r.comments_pushed_this_iter),
            merges_attempted_this_iter: Some(r.merges_attempted_this_iter),
            budget_snapshot: Some(r.budget_snapshot),
            tracked_prs: Some(r.tracked_prs),
            active_worktrees: Some(r.active_worktrees),
            gates: Some(r.gates),
            stop_conditions_fired: Some(r.stop_conditions_fired),
            failures_this_iter: Some(r.failures_this_iter),
            backlog_snapshot: r.backlog_snapshot,
            issues_dispatched_this_iter: r.issues_dispatched_this_iter,
            lock_held: Some(r.lock_held),
            error: r.error,
            turn_ended_by: r.turn_ended_by,
            chain_invoked,
            review_outcome,
            autofix_pr_invoked,
            autofix_pr_invocation_status: autofix_status,
            usage_windows: None,
            extra: Map::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("history file {} is damaged at line {line}: {detail}", path.display())]
    Damaged {
        path: PathBuf,
        line: u64,
        detail: String,
    },
    #[error(transparent)]
    File(#[from] FileError),
    #[error(transparent)]
    Witness(#[from] crate::state::witness::WitnessError),
}

impl HistoryError {
    pub fn help(&self) -> String {
        match self {
            HistoryError::Witness(e) => e.help(),
            HistoryError::Damaged { path, line, .. } => format!(
                "the loop will not guess past a damaged line: repair line {line} of {} by hand, \
                 or move the file aside to start a fresh history (keep it: it is the run's audit log)",
                path.display()
            ),
            HistoryError::File(e) => e.help(),
        }
    }
}

/// A line read from the file, with where it sits.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    /// Byte offset of the line's first byte.
    pub offset: u64,
    pub line: HistoryLine,
}

/// An unterminated, unparsable last line left by a crash mid-append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Where the torn bytes start (the file is cut back to here).
    pub offset: u64,
    pub bytes: Vec<u8>,
}

/// The end of a history file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tail {
    /// Up to the requested number of complete lines, oldest first.
    pub lines: Vec<Located>,
    /// A torn last line, if any.
    pub torn: Option<TornTail>,
    /// The last line is complete JSON without its `\n`: the next append
    /// must start with one.
    pub needs_separator: bool,
}

impl Tail {
    pub fn last(&self) -> Option<&HistoryLine> {
        self.lines.last().map(|l| &l.line)
    }
}

const CHUNK: u64 = 64 * 1024;

fn io_err(path: &Path, action: &'static str, source: std::io::Error) -> HistoryError {
    HistoryError::File(FileError::Io {
        action,
        path: path.to_path_buf(),
        source,
    })
}

fn read_range(file: &mut File, path: &Path, start: u64, end: u64) -> Result<Vec<u8>, HistoryError> {
    let mut buf = vec![0; (end - start) as usize];
    file.seek(SeekFrom::Start(start))
        .map_err(|e| io_err(path, "seek in", e))?;
    file.read_exact(&mut buf)
        .map_err(|e| io_err(path, "read", e))?;
    Ok(buf)
}

/// The offset just after the last `\n` strictly before `end`, or 0.
fn line_start_before(file: &mut File, path: &Path, end: u64) -> Result<u64, HistoryError> {
    let mut hi = end;
    while hi > 0 {
        let lo = hi.saturating_sub(CHUNK);
        let chunk = read_range(file, path, lo, hi)?;
        if let Some(i) = chunk.iter().rposition(|b| *b == b'\n') {
            return Ok(lo + i as u64 + 1);
        }
        hi = lo;
    }
    Ok(0)
}

/// 1-based line number of the line starting at `offset`.
fn line_number_at(file: &mut File, path: &Path, offset: u64) -> Result<u64, HistoryError> {
    let mut newlines = 0u64;
    let mut pos = 0;
    while pos < offset {
        let end = (pos + CHUNK).min(offset);
        newlines += read_range(file, path, pos, end)?
            .iter()
            .filter(|b| **b == b'\n')
            .count() as u64;
        pos = end;
    }
    Ok(newlines + 1)
}

/// One line's bytes (without its `\n`) as a history line; the error says
/// why not, for the damaged-line message.
pub fn parse_line(bytes: &[u8]) -> Result<HistoryLine, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 ({e})"))?;
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    check_numbers(&value)?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// The counters the engine reads from a line: whole numbers from 0 to
/// [`crate::state::budget::MAX_COUNT`]; dollars: numbers ≥ 0. A hand-edited one
/// is refused with its field named, never wrapped.
const LINE_COUNTS: [&str; 6] = [
    "/iteration",
    "/agents_dispatched_this_iter",
    "/tokens_in_this_iter",
    "/tokens_out_this_iter",
    "/comments_pushed_this_iter",
    "/merges_attempted_this_iter",
];
const SNAPSHOT_COUNTS: [&str; 13] = [
    "iterations_used",
    "prs_touched_total",
    "minutes_elapsed",
    "tokens_in",
    "tokens_out",
    "qmd_failures_consecutive",
    "comments_pushed",
    "merges_attempted",
    "agents_dispatched",
    "seconds_elapsed",
    "max_iterations",
    "max_prs",
    "max_minutes",
];

fn check_numbers(value: &Value) -> Result<(), String> {
    use crate::state::budget::MAX_COUNT;
    if let Some(by_model) = value.pointer("/budget_snapshot/tokens_by_model")
        && let Some((pointer, n)) = crate::state::budget::count_above_max(by_model)
    {
        return Err(format!(
            "field /budget_snapshot/tokens_by_model{pointer} holds {n}, above the largest count the engine accepts ({MAX_COUNT})"
        ));
    }
    let count = |pointer: String| -> Result<(), String> {
        match value.pointer(&pointer) {
            None | Some(Value::Null) => Ok(()),
            Some(v) if v.as_u64().is_some_and(|n| n <= MAX_COUNT) => Ok(()),
            Some(v) => Err(format!(
                "field {pointer} holds {v}, not a whole number from 0 to {MAX_COUNT}"
            )),
        }
    };
    for p in LINE_COUNTS {
        count(p.to_owned())?;
    }
    for f in SNAPSHOT_COUNTS {
        count(format!("/budget_snapshot/{f}"))?;
    }
    for p in [
        "/dollars_this_iter",
        "/budget_snapshot/dollars_estimate",
        "/budget_snapshot/max_dollars",
    ] {
        match value.pointer(p) {
            None | Some(Value::Null) => {}
            Some(v)
                if v.as_f64()
                    .is_some_and(|f| (0.0..=MAX_COUNT as f64).contains(&f)) => {}
            Some(v) => {
                return Err(format!(
                    "field {p} holds {v}, not a number from 0 to {MAX_COUNT}"
                ));
            }
        }
    }
    Ok(())
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes.iter().all(u8::is_ascii_whitespace)
}

/// Reads the last `want` complete lines of `path` (oldest first) without
/// reading the rest of the file, and detects a torn last line. A missing
/// file is an empty tail. Read-only; waits for a line being appended.
pub fn read_tail(path: &Path, want: usize) -> Result<Tail, HistoryError> {
    let Some(mut file) = files::open_read_shared(path)? else {
        return Ok(Tail::default());
    };
    tail_of(&mut file, path, want)
}

/// [`read_tail`] back to the `held`-th line from the end written under the
/// lock ([`HistoryLine::authoritative`]), or to the file's start: 64 lines
/// first, four times more each time (skipped ticks' lines come in runs).
pub fn read_tail_held(path: &Path, held: usize) -> Result<Tail, HistoryError> {
    let mut want = 64;
    loop {
        let tail = read_tail(path, want)?;
        let found = tail.lines.iter().filter(|l| l.line.authoritative()).count();
        if found >= held || tail.lines.len() < want {
            return Ok(tail);
        }
        want *= 4;
    }
}

/// [`read_tail`] on an open file (whose offset it moves).
fn tail_of(file: &mut File, path: &Path, want: usize) -> Result<Tail, HistoryError> {
    let len = file
        .metadata()
        .map_err(|e| io_err(path, "inspect", e))?
        .len();
    let mut tail = Tail::default();
    if len == 0 {
        return Ok(tail);
    }
    let mut end = len;
    let last_byte = read_range(file, path, len - 1, len)?[0];
    let mut found: Vec<Located> = Vec::new();
    if last_byte != b'\n' {
        let start = line_start_before(file, path, len)?;
        let bytes = read_range(file, path, start, len)?;
        // Blank is not a line, torn or whole (as in `read_all`).
        if !is_blank(&bytes) {
            match parse_line(&bytes) {
                Ok(line) => {
                    tail.needs_separator = true;
                    found.push(Located {
                        offset: start,
                        line,
                    });
                }
                Err(_) => {
                    tail.torn = Some(TornTail {
                        offset: start,
                        bytes,
                    })
                }
            }
        }
        end = start;
    }
    while found.len() < want && end > 0 {
        // `end` is just past a `\n`; the line is [start, end - 1).
        let start = line_start_before(file, path, end - 1)?;
        let bytes = read_range(file, path, start, end - 1)?;
        if !is_blank(&bytes) {
            let line = parse_line(&bytes).map_err(|detail| -> HistoryError {
                match line_number_at(file, path, start) {
                    Ok(line) => HistoryError::Damaged {
                        path: path.to_path_buf(),
                        line,
                        detail,
                    },
                    Err(e) => e,
                }
            })?;
            found.push(Located {
                offset: start,
                line,
            });
        }
        end = start;
    }
    found.reverse();
    tail.lines = found;
    Ok(tail)
}

/// Reads every complete line (oldest first), refusing mid-file damage with
/// its line number; the torn tail, if any, is returned, not repaired.
pub fn read_all(path: &Path) -> Result<Tail, HistoryError> {
    let Some(bytes) = files::read_bytes_shared(path)? else {
        return Ok(Tail::default());
    };
    let mut tail = Tail::default();
    let mut offset = 0usize;
    let mut number = 0u64;
    while offset < bytes.len() {
        number += 1;
        let (line_end, next, terminated) = match bytes[offset..].iter().position(|b| *b == b'\n') {
            Some(i) => (offset + i, offset + i + 1, true),
            None => (bytes.len(), bytes.len(), false),
        };
        let raw = &bytes[offset..line_end];
        if !is_blank(raw) {
            match parse_line(raw) {
                Ok(line) => {
                    tail.needs_separator = !terminated;
                    tail.lines.push(Located {
                        offset: offset as u64,
                        line,
                    });
                }
                Err(_) if !terminated => {
                    tail.torn = Some(TornTail {
                        offset: offset as u64,
                        bytes: raw.to_vec(),
                    })
                }
                Err(detail) => {
                    return Err(HistoryError::Damaged {
                        path: path.to_path_buf(),
                        line: number,
                        detail,
                    });
                }
            }
        }
        offset = next;
    }
    Ok(tail)
}

/// Moves a torn last line to a sidecar (`{file}.torn-{stamp}`), then cuts
/// the history back to its last complete line. The sidecar is durable
/// before the cut, so the bytes exist somewhere at every moment.
///
/// `seen` is what a read before this call took for torn; it is judged
/// again under the file's exclusive lock, where only a dead writer's
/// remnant can look torn: a line that was an append in flight has been
/// completed by then and is left alone (`Ok(None)`). Returns what was
/// moved and where.
pub fn repair_torn(
    path: &Path,
    seen: &TornTail,
    stamp: &str,
) -> Result<Option<(TornTail, PathBuf)>, HistoryError> {
    if files::open_read(path)?.is_none() {
        return Ok(None);
    }
    let mut file = files::open_append_locked(path)?;
    let tail = tail_of(file.file(), path, 1)?;
    match tail.torn {
        Some(torn) if torn.offset == seen.offset => {
            let sidecar = set_aside(&mut file, path, &torn, stamp)?;
            Ok(Some((torn, sidecar)))
        }
        // Another remnant than the one seen (or none): whoever appends
        // next repairs it under the lock.
        _ => Ok(None),
    }
}

/// Under the file's lock: the torn bytes to a new sidecar, then the cut.
fn set_aside(
    file: &mut files::LockedAppend,
    path: &Path,
    torn: &TornTail,
    stamp: &str,
) -> Result<PathBuf, HistoryError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "history.jsonl".into());
    let mut sidecar = path.with_file_name(format!("{name}.torn-{stamp}"));
    let mut n = 1;
    while sidecar.exists() || sidecar.is_symlink() {
        n += 1;
        sidecar = path.with_file_name(format!("{name}.torn-{stamp}-{n}"));
    }
    files::create_new_durable(&sidecar, &torn.bytes)?;
    file.truncate(torn.offset)?;
    Ok(sidecar)
}

/// The one-line report for a repaired torn line.
pub fn torn_note(path: &Path, torn: &TornTail, sidecar: &Path) -> String {
    format!(
        "History {}: torn last line ({} bytes, crash mid-append) moved to {}; continuing from the last complete line",
        path.display(),
        torn.bytes.len(),
        sidecar.display()
    )
}

/// What [`append`] did besides appending.
#[derive(Debug, Default)]
pub struct Appended {
    /// This call created the file.
    pub created: bool,
    /// A torn last line (a dead writer's remnant) it moved aside first.
    pub repaired: Option<(TornTail, PathBuf)>,
}

/// Appends one line durably, under the file's exclusive lock: the tail is
/// read there, a torn last line is moved aside first (only a dead writer
/// leaves one, see the module doc; `stamp` names its sidecar), and a last
/// line written without its `\n` gets one.
pub fn append(path: &Path, line: &HistoryLine, stamp: &str) -> Result<Appended, HistoryError> {
    let mut file = files::open_append_locked(path)?;
    let tail = tail_of(file.file(), path, 1)?;
    let mut done = Appended {
        created: file.created(),
        repaired: None,
    };
    if let Some(torn) = tail.torn {
        let sidecar = set_aside(&mut file, path, &torn, stamp)?;
        done.repaired = Some((torn, sidecar));
    }
    file.append_line(&line.to_json(), tail.needs_separator)?;
    Ok(done)
}

/// Lines of history the engine did not write, moved aside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// How many lines were moved.
    pub lines: usize,
    pub sidecar: PathBuf,
}

/// The one-line report for lines moved aside by [`set_aside_foreign`].
pub fn foreign_note(path: &Path, foreign: &Foreign) -> String {
    format!(
        "History {}: {} line(s) the engine did not write (the engine keeps this file: a model or script appending its own telemetry line) moved to {}; never counted",
        path.display(),
        foreign.lines,
        foreign.sidecar.display()
    )
}

/// Under the file's lock: the lines after `witness.checked_len` that the
/// engine did not announce go to a new sidecar (`{file}.foreign-{stamp}`),
/// then the file keeps only the others, in order. An unterminated last
/// segment is left to the torn-line repair. The witness is not saved.
fn move_foreign(
    file: &mut files::LockedAppend,
    path: &Path,
    witness: &crate::state::witness::Witness,
    stamp: &str,
) -> Result<Option<Foreign>, HistoryError> {
    let len = file
        .file()
        .metadata()
        .map_err(|e| io_err(path, "inspect", e))?
        .len();
    let start = witness.checked_len;
    if len <= start {
        return Ok(None);
    }
    let bytes = read_range(file.file(), path, start, len)?;
    let mut foreign: Vec<u8> = Vec::new();
    let mut kept: Vec<u8> = Vec::new();
    let mut first_foreign: Option<u64> = None;
    let mut moved = 0;
    let mut at = 0usize;
    while at < bytes.len() {
        let end = bytes[at..].iter().position(|b| *b == b'\n').map(|i| at + i);
        let (line, next) = match end {
            Some(e) => (&bytes[at..e], e + 1),
            None => (&bytes[at..], bytes.len()),
        };
        let whole = &bytes[at..next];
        // An unterminated segment that is no line is a torn tail: the
        // torn-line repair's, not this one's.
        let engine = (end.is_none() && parse_line(line).is_err())
            || is_blank(line)
            || witness
                .pending
                .contains(&crate::state::witness::digest(line));
        if engine {
            if first_foreign.is_some() {
                kept.extend_from_slice(whole);
            }
        } else {
            first_foreign.get_or_insert(start + at as u64);
            foreign.extend_from_slice(whole);
            moved += 1;
        }
        at = next;
    }
    let Some(cut) = first_foreign else {
        return Ok(None);
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "history.jsonl".into());
    let mut sidecar = path.with_file_name(format!("{name}.foreign-{stamp}"));
    let mut n = 1;
    while sidecar.exists() || sidecar.is_symlink() {
        n += 1;
        sidecar = path.with_file_name(format!("{name}.foreign-{stamp}-{n}"));
    }
    // The sidecar is durable before the cut: the bytes exist somewhere at
    // every moment.
    files::create_new_durable(&sidecar, &foreign)?;
    file.truncate(cut)?;
    if !kept.is_empty() {
        file.append_bytes(&kept)?;
    }
    Ok(Some(Foreign {
        lines: moved,
        sidecar,
    }))
}

/// The file's length.
fn length(file: &mut files::LockedAppend, path: &Path) -> Result<u64, HistoryError> {
    Ok(file
        .file()
        .metadata()
        .map_err(|e| io_err(path, "inspect", e))?
        .len())
}

/// Checks the history of `paths` against its witness (a loading tick,
/// under the loop's lock): lines the engine did not write are moved
/// aside, and the witness records the file as checked. Returns the
/// witness as it was before (`None`: there was none; one is started for
/// a history that exists) and what was moved. A history shorter than
/// the witness says is left alone: the loop's state went backwards, for
/// the caller to judge.
pub fn set_aside_foreign(
    paths: &crate::state::paths::StatePaths,
    stamp: &str,
) -> Result<(Option<crate::state::witness::Witness>, Option<Foreign>), HistoryError> {
    use crate::state::witness::{self, Witness};
    let path = paths.history();
    let wpath = witness::path(paths);
    let before = Witness::load(&wpath)?;
    if files::open_read(&path)?.is_none() {
        if before.is_none() {
            // The loop's first tick: from here on, every line is checked.
            Witness::adopt(0, witness::budget_file(paths)).save(&wpath)?;
        }
        return Ok((before, None));
    }
    let mut file = files::open_append_locked(&path)?;
    // Read again under the history's lock: appenders change it there.
    let mut w = match Witness::load(&wpath)? {
        Some(w) => w,
        None => {
            let len = length(&mut file, &path)?;
            Witness::adopt(len, witness::budget_file(paths)).save(&wpath)?;
            return Ok((before, None));
        }
    };
    let len = length(&mut file, &path)?;
    if len < w.checked_len {
        return Ok((before, None));
    }
    let moved = move_foreign(&mut file, &path, &w, stamp)?;
    let len = length(&mut file, &path)?;
    if moved.is_some() || w.checked_len != len || !w.pending.is_empty() {
        // An unterminated tail is not checked yet.
        let tail = tail_of(file.file(), &path, 1)?;
        w.checked_len = tail.torn.as_ref().map_or(len, |t| t.offset);
        w.pending.clear();
        w.save(&wpath)?;
    }
    Ok((before, moved))
}

/// [`append`], witnessed: the line is announced in the loop's witness
/// before it is appended and checked after, and lines the engine did not
/// write are moved aside first ([`crate::state::witness`]), all under the
/// history's lock.
pub fn append_witnessed(
    paths: &crate::state::paths::StatePaths,
    line: &HistoryLine,
    stamp: &str,
) -> Result<(Appended, Option<Foreign>), HistoryError> {
    use crate::state::witness::{self, Witness};
    let path = paths.history();
    let wpath = witness::path(paths);
    let mut file = files::open_append_locked(&path)?;
    let tail = tail_of(file.file(), &path, 1)?;
    let mut done = Appended {
        created: file.created(),
        repaired: None,
    };
    if let Some(torn) = tail.torn {
        let sidecar = set_aside(&mut file, &path, &torn, stamp)?;
        done.repaired = Some((torn, sidecar));
    }
    let len = length(&mut file, &path)?;
    let mut w = match Witness::load(&wpath)? {
        Some(w) => w,
        None => Witness::adopt(len, witness::budget_file(paths)),
    };
    if len < w.checked_len {
        // Shorter than checked: whatever is there now is adopted (the
        // loading tick already judged the loop's state).
        w.checked_len = len;
        w.pending.clear();
    }
    let foreign = move_foreign(&mut file, &path, &w, stamp)?;
    let tail = tail_of(file.file(), &path, 1)?;
    let json = line.to_json();
    w.version = 1;
    w.pending.push(witness::digest(json.as_bytes()));
    w.save(&wpath)?;
    file.append_line(&json, tail.needs_separator)?;
    w.checked_len = length(&mut file, &path)?;
    w.pending.clear();
    if line.authoritative() && line.outcome != Some(Outcome::SkippedLock) {
        let run = line
            .budget_snapshot
            .as_ref()
            .and_then(|s| s.run_started_at.clone());
        let iteration = line.iteration.unwrap_or(0);
        if run != w.run_started_at || iteration > w.iteration {
            w.run_started_at = run;
            w.iteration = iteration;
        }
    }
    w.budget_file = witness::budget_file(paths);
    // The old witness still announces the line, so it stays the engine's
    // if this rename is lost to a power failure: not waited for.
    w.save_with(&wpath, files::Durability::OldOrNew)?;
    Ok((done, foreign))
}

#[cfg(test)]
mod tests;
