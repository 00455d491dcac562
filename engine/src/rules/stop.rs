//! The twelve stop conditions of ADR-0028 and their names, plus the
//! weekly usage window's (#13, docs/src/usage-windows.md).
//!
//! A tick evaluates them on entry and on exit; any match halts the loop and
//! prints the final report. The causes are a closed set ([`StopCause`]) whose
//! names are what history's `stop_conditions_fired` and `budget.json`'s
//! `stopped.cause` record. This module holds the budget arithmetic; the
//! conditions that need the world (backlog, PR state, signals) are decided
//! by the tick and only named here.
//!
//! Entry uses "reached" (`used ≥ ceiling`: no room for another iteration);
//! exit checks catch overshoot by the tick just run (`prs_touched > max_prs`)
//! and spend reaching its ceiling (`dollars ≥ max_dollars`). That is what
//! confirmation 4 requires: with `--max-prs 1`, iteration 1 opens one PR
//! and the loop stops at iteration 2 with `prs_touched_budget`.

use std::fmt;

use crate::state::budget::Budget;

/// Why a loop stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopCause {
    /// #1 — work: no unblocked, unworked issues.
    BacklogEmpty,
    /// #2 — review: the watched PR was merged, closed or marked do-not-merge.
    TerminalPr,
    /// #3
    IterationBudget,
    /// #4
    PrsTouchedBudget,
    /// #5
    WallClockBudget,
    /// #6 — the repeated-failure gate was answered `stop`.
    RepeatedFailure,
    /// #7
    DependencyCycle,
    /// #8 — Ctrl-C, SIGTERM, or the stop-request file.
    UserInterrupt,
    /// #10 — a gate was answered `stop`.
    PriorGateStop,
    /// #11 — the qmd signal in two consecutive iterations.
    QmdUnreachable,
    /// #12
    CostBudget,
    /// #9 on `--resume`: the recorded holder is alive.
    LockContention,
    /// #13 (beyond ADR-0028's twelve): the weekly usage window reached
    /// `--max-week-percent` (docs/src/usage-windows.md).
    UsageWindow,
}

impl StopCause {
    pub const ALL: [StopCause; 13] = [
        StopCause::BacklogEmpty,
        StopCause::TerminalPr,
        StopCause::IterationBudget,
        StopCause::PrsTouchedBudget,
        StopCause::WallClockBudget,
        StopCause::RepeatedFailure,
        StopCause::DependencyCycle,
        StopCause::UserInterrupt,
        StopCause::PriorGateStop,
        StopCause::QmdUnreachable,
        StopCause::CostBudget,
        StopCause::LockContention,
        StopCause::UsageWindow,
    ];

    /// The recorded name.
    pub fn name(self) -> &'static str {
        match self {
            StopCause::BacklogEmpty => "backlog_empty",
            StopCause::TerminalPr => "terminal_pr",
            StopCause::IterationBudget => "iteration_budget",
            StopCause::PrsTouchedBudget => "prs_touched_budget",
            StopCause::WallClockBudget => "wall_clock_budget",
            StopCause::RepeatedFailure => "repeated_failure",
            StopCause::DependencyCycle => "dependency_cycle",
            StopCause::UserInterrupt => "user_interrupt",
            StopCause::PriorGateStop => "prior_gate_stop",
            StopCause::QmdUnreachable => "qmd_unreachable",
            StopCause::CostBudget => "cost_budget",
            StopCause::LockContention => "lock_contention",
            StopCause::UsageWindow => "usage_window",
        }
    }

    /// The condition's number in ADR-0028's table.
    pub fn number(self) -> u8 {
        match self {
            StopCause::BacklogEmpty => 1,
            StopCause::TerminalPr => 2,
            StopCause::IterationBudget => 3,
            StopCause::PrsTouchedBudget => 4,
            StopCause::WallClockBudget => 5,
            StopCause::RepeatedFailure => 6,
            StopCause::DependencyCycle => 7,
            StopCause::UserInterrupt => 8,
            StopCause::LockContention => 9,
            StopCause::PriorGateStop => 10,
            StopCause::QmdUnreachable => 11,
            StopCause::CostBudget => 12,
            StopCause::UsageWindow => 13,
        }
    }

    /// A short prose description for the final report.
    pub fn prose(self) -> &'static str {
        match self {
            StopCause::BacklogEmpty => "backlog empty after filtering",
            StopCause::TerminalPr => "PR reached a terminal state",
            StopCause::IterationBudget => "iteration budget reached",
            StopCause::PrsTouchedBudget => "PR-touch budget reached",
            StopCause::WallClockBudget => "wall-clock budget reached",
            StopCause::RepeatedFailure => "same target failed twice with the same root cause",
            StopCause::DependencyCycle => "dependency cycle in the backlog",
            StopCause::UserInterrupt => "user interrupt",
            StopCause::PriorGateStop => "a gate was answered stop",
            StopCause::QmdUnreachable => "qmd unreachable for 2 consecutive iterations",
            StopCause::CostBudget => "cost budget reached",
            StopCause::LockContention => "resume found the previous run still alive",
            StopCause::UsageWindow => "usage window budget reached",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl fmt::Display for StopCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A fired condition with its one-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    pub cause: StopCause,
    pub message: String,
}

impl Fired {
    pub fn new(cause: StopCause, message: impl Into<String>) -> Self {
        Self {
            cause,
            message: message.into(),
        }
    }
}

/// `$X.XX`.
pub fn dollars(d: f64) -> String {
    format!("${d:.2}")
}

/// The contract's backlog-empty line (#1), its counts in the right number.
pub fn backlog_empty_message(iterations_used: u64, prs_touched: usize) -> String {
    let iterations = if iterations_used == 1 {
        "iteration"
    } else {
        "iterations"
    };
    let prs = if prs_touched == 1 { "PR" } else { "PRs" };
    format!("Backlog empty — {iterations_used} {iterations} used, {prs_touched} {prs} touched")
}

/// The contract's cost-stop line.
pub fn cost_message(used: f64, max: f64) -> String {
    format!("Cost budget reached: {} / {}", dollars(used), dollars(max))
}

/// Entry checks on the budget: #3, #4 (unless single-PR), #5, #12.
/// `minutes` is the elapsed wall-clock at entry.
pub fn budget_on_entry(budget: &Budget, minutes: u64, single_pr: bool) -> Vec<Fired> {
    let mut fired = Vec::new();
    if budget.iterations_used >= budget.max_iterations {
        fired.push(Fired::new(
            StopCause::IterationBudget,
            format!(
                "Iteration budget reached: {}/{} iterations",
                budget.iterations_used, budget.max_iterations
            ),
        ));
    }
    if !single_pr && budget.prs_touched.len() as u64 >= budget.max_prs {
        fired.push(Fired::new(
            StopCause::PrsTouchedBudget,
            format!(
                "PR-touch budget reached: {}/{} PRs",
                budget.prs_touched.len(),
                budget.max_prs
            ),
        ));
    }
    if minutes >= budget.max_minutes {
        fired.push(Fired::new(
            StopCause::WallClockBudget,
            format!(
                "Wall-clock budget reached: {minutes}/{} minutes",
                budget.max_minutes
            ),
        ));
    }
    if let Some(f) = cost_reached(budget) {
        fired.push(f);
    }
    fired
}

/// #12 whenever spend has reached a non-zero ceiling.
pub fn cost_reached(budget: &Budget) -> Option<Fired> {
    (budget.max_dollars > 0.0 && budget.dollars_estimate >= budget.max_dollars).then(|| {
        Fired::new(
            StopCause::CostBudget,
            cost_message(budget.dollars_estimate, budget.max_dollars),
        )
    })
}

/// Exit checks on the budget after accounting: #4 overshoot (not
/// single-PR) and #12. (#11 is decided from the qmd counter by the tick.)
pub fn budget_on_exit(budget: &Budget, single_pr: bool) -> Vec<Fired> {
    let mut fired = Vec::new();
    if !single_pr && budget.prs_touched.len() as u64 > budget.max_prs {
        fired.push(Fired::new(
            StopCause::PrsTouchedBudget,
            format!(
                "PR-touch budget exceeded: {}/{} PRs",
                budget.prs_touched.len(),
                budget.max_prs
            ),
        ));
    }
    if let Some(f) = cost_reached(budget) {
        fired.push(f);
    }
    fired
}

/// The qmd remediation line of condition #11.
pub fn qmd_message(captured: &str) -> String {
    let captured = captured.trim();
    if captured.is_empty() {
        "qmd unreachable for 2 iterations — fix per ADR-0024 (e.g., restart qmd daemon) and resume"
            .to_owned()
    } else {
        format!(
            "qmd unreachable for 2 iterations — fix per ADR-0024 (e.g., restart qmd daemon) and resume. Captured error: {captured}"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Regression: "Backlog empty — 1 iterations used, 1 PRs touched".
    #[test]
    fn the_backlog_empty_line_says_one_in_the_singular() {
        assert_eq!(
            backlog_empty_message(1, 1),
            "Backlog empty — 1 iteration used, 1 PR touched"
        );
        assert_eq!(
            backlog_empty_message(0, 2),
            "Backlog empty — 0 iterations used, 2 PRs touched"
        );
    }
    use crate::state::budget::{Budget, Ceilings};

    fn budget(iterations: u64, prs: u64, dollars: f64) -> Budget {
        let mut b = Budget::start(
            "t",
            Ceilings {
                max_iterations: 5,
                max_prs: 2,
                max_minutes: 60,
                max_dollars: 1.0,
            },
            "built-in default",
        );
        b.iterations_used = iterations;
        for i in 0..prs {
            b.prs_touched.insert(format!("#{i}"));
        }
        b.dollars_estimate = dollars;
        b
    }

    fn causes(f: Vec<Fired>) -> Vec<StopCause> {
        f.into_iter().map(|f| f.cause).collect()
    }

    #[test]
    fn names_are_the_contract_names() {
        let names: Vec<_> = StopCause::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(
            names,
            [
                "backlog_empty",
                "terminal_pr",
                "iteration_budget",
                "prs_touched_budget",
                "wall_clock_budget",
                "repeated_failure",
                "dependency_cycle",
                "user_interrupt",
                "prior_gate_stop",
                "qmd_unreachable",
                "cost_budget",
                "lock_contention",
                "usage_window"
            ]
        );
        for c in StopCause::ALL {
            assert_eq!(StopCause::from_name(c.name()), Some(c));
        }
    }

    #[test]
    fn iteration_budget_fires_at_the_ceiling_not_before() {
        assert!(causes(budget_on_entry(&budget(4, 0, 0.0), 0, false)).is_empty());
        assert_eq!(
            causes(budget_on_entry(&budget(5, 0, 0.0), 0, false)),
            [StopCause::IterationBudget]
        );
    }

    #[test]
    fn pr_budget_on_entry_and_overshoot_on_exit() {
        assert!(causes(budget_on_entry(&budget(1, 1, 0.0), 0, false)).is_empty());
        assert_eq!(
            causes(budget_on_entry(&budget(1, 2, 0.0), 0, false)),
            [StopCause::PrsTouchedBudget]
        );
        assert!(causes(budget_on_exit(&budget(1, 2, 0.0), false)).is_empty());
        assert_eq!(
            causes(budget_on_exit(&budget(1, 3, 0.0), false)),
            [StopCause::PrsTouchedBudget]
        );
    }

    #[test]
    fn single_pr_mode_never_fires_pr_budget() {
        assert!(causes(budget_on_entry(&budget(1, 9, 0.0), 0, true)).is_empty());
        assert!(causes(budget_on_exit(&budget(1, 9, 0.0), true)).is_empty());
    }

    #[test]
    fn minutes_fire_at_the_ceiling() {
        assert!(causes(budget_on_entry(&budget(0, 0, 0.0), 59, false)).is_empty());
        assert_eq!(
            causes(budget_on_entry(&budget(0, 0, 0.0), 60, false)),
            [StopCause::WallClockBudget]
        );
    }

    #[test]
    fn cost_fires_at_the_ceiling_and_zero_disables() {
        assert!(cost_reached(&budget(0, 0, 0.99)).is_none());
        let fired = cost_reached(&budget(0, 0, 1.0)).unwrap();
        assert_eq!(fired.message, "Cost budget reached: $1.00 / $1.00");
        let mut off = budget(0, 0, 100.0);
        off.max_dollars = 0.0;
        assert!(cost_reached(&off).is_none());
        assert_eq!(
            causes(budget_on_exit(&budget(0, 0, 2.0), false)),
            [StopCause::CostBudget]
        );
    }

    #[test]
    fn several_conditions_fire_together_in_order() {
        assert_eq!(
            causes(budget_on_entry(&budget(5, 2, 1.5), 61, false)),
            [
                StopCause::IterationBudget,
                StopCause::PrsTouchedBudget,
                StopCause::WallClockBudget,
                StopCause::CostBudget
            ]
        );
    }

    #[test]
    fn qmd_message_names_adr_0024_and_carries_the_error() {
        assert_eq!(
            qmd_message(""),
            "qmd unreachable for 2 iterations — fix per ADR-0024 (e.g., restart qmd daemon) and resume"
        );
        assert!(qmd_message("connection refused").ends_with("Captured error: connection refused"));
    }
}
