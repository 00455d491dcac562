//! What a history line is. What the engine writes is complete: it builds
//! a [`TickRecord`], whose fields are all required, and converts it. What
//! it reads is tolerant: [`HistoryLine`] accepts the contract's older and
//! partial example shapes, and keeps fields it does not know so a rewrite
//! loses nothing. [`parse_line`] reads one line's bytes and refuses a
//! counter out of range with its field named.
//!
//! Chain telemetry presence rules (work skill only, see [`Chain`]):
//! `chain_invoked` is on every `/sdd:work` line and never on a
//! `/sdd:review` line; `review_outcome` and `autofix_pr_invoked` are present
//! exactly when `chain_invoked` is `true`; `autofix_pr_invocation_status` is
//! present exactly when `autofix_pr_invoked` is `true`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::state::budget::{Budget, ModelTokens, RunStop};

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
    /// A gate answered on the tracker: who answered, and where
    /// (docs/src/gates-away.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<AnsweredBy>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Who answered a posted gate, and where: a person's reply (its author
/// and address), or the deadline (`login` is `deadline`, `url` the notice
/// that said so).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AnsweredBy {
    pub login: String,
    pub url: String,
    /// The gate's id on the tracker.
    pub gate_id: String,
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
    /// What the tick's notifications did (docs/src/notifications.md);
    /// only on lines of a tick that sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notifications: Option<NotificationsLine>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A history line's `notifications`: the POSTs a tick made (one per
/// notice and URL, retries included), how many were delivered, each that
/// failed, and how many notices are kept for the next tick. URLs are
/// never recorded: a target is named by its format and `scheme://host`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NotificationsLine {
    pub sent: u64,
    pub delivered: u64,
    pub failed: Vec<NotificationFailure>,
    pub kept: u64,
}

/// One notification that was not delivered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NotificationFailure {
    /// `gate-posted`, `gate-asked`, `run-stopped` or `window-waits`.
    pub event: String,
    /// The target's format and `scheme://host/…`.
    pub target: String,
    /// Why: `HTTP 500: …`, `no answer within …`, `unreachable: …`.
    pub detail: String,
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
            notifications: None,
            extra: Map::new(),
        }
    }
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
