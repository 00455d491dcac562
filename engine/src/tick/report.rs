//! What a tick prints (ADR-0028 "Telemetry and observability"):
//! the one-screen status block on every tick — skipped ones too — and the
//! final report on any stop, in the seeds' layouts.

use std::fmt::Write as _;

use crate::rules::stop::{Fired, dollars};
use crate::state::budget::Budget;
use crate::state::history::GateRecord;
use crate::state::paths::Skill;

/// Everything the status block shows.
#[derive(Debug, Clone)]
pub struct StatusView<'a> {
    pub skill: Skill,
    pub iteration: u64,
    pub started_at: &'a str,
    /// `Backlog: …` (work) or `Tracked PR: …` (review) line.
    pub context: String,
    /// The `Iteration plan:` text.
    pub plan: String,
    /// Review: (comments pushed, merges attempted), shown on every block.
    pub review_counters: Option<(u64, u64)>,
    pub budget: Option<&'a Budget>,
    /// The iteration ceiling shown (the budget's, or the flags' before a
    /// budget exists).
    pub max_iterations: u64,
    /// Elapsed minutes to show (the budget's, or the tick's view at entry).
    pub minutes: u64,
    pub single_pr: bool,
    pub stops: &'a [Fired],
    pub concurrency: String,
    pub outcome: String,
    pub ended: bool,
    /// This tick's spend by both estimates, when the work's agent gave its
    /// own.
    pub cost: Option<TickCost>,
    /// The usage windows before and after the work, and the tick's share
    /// (`Usage windows: …`), when the tick read them.
    pub windows: Option<String>,
}

/// One tick's spend as the engine prices it (tokens × rates, what the
/// cost stop uses) and as the agent reports it (Claude Code's
/// `total_cost_usd`, the sum of OpenCode's step costs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickCost {
    pub engine: f64,
    pub agent: f64,
}

/// How far apart the two estimates may be before the block warns.
pub const COST_DRIFT_WARN: f64 = 0.20;

impl TickCost {
    /// How far the engine's estimate is from the agent's, as a fraction of
    /// the agent's (`None` when the agent's is zero and the engine's not).
    pub fn drift(&self) -> Option<f64> {
        if self.agent > 0.0 {
            Some((self.engine - self.agent).abs() / self.agent)
        } else if self.engine > 0.0 {
            None
        } else {
            Some(0.0)
        }
    }

    /// The block's lines: both figures, and a warning when they differ by
    /// more than [`COST_DRIFT_WARN`]; none when neither spent anything.
    pub fn lines(&self) -> Vec<String> {
        if self.engine == 0.0 && self.agent == 0.0 {
            return Vec::new();
        }
        let mut out = vec![format!(
            "Cost this tick: ${:.4} engine estimate (tokens × rates; the cost stop uses it) · ${:.4} agent's own (as it reported)",
            self.engine, self.agent
        )];
        let drift = self.drift();
        if drift.is_none_or(|d| d > COST_DRIFT_WARN) {
            let by = drift.map_or_else(
                || "the agent reports $0".to_owned(),
                |d| format!("{:.0}%", d * 100.0),
            );
            out.push(format!(
                "warning: the two cost estimates differ by more than 20% ({by}) — check the rates under `### Loop Cost Rates` in CLAUDE.md against what the agent is billed"
            ));
        }
        out
    }
}

/// `Budget remaining: 2 iterations, 16 PRs, 42 minutes, $10.08`.
pub fn remaining(budget: &Budget, minutes: u64, single_pr: bool) -> String {
    let count = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = vec![count(
        budget.max_iterations.saturating_sub(budget.iterations_used),
        "iteration",
        "iterations",
    )];
    if !single_pr {
        parts.push(count(
            budget
                .max_prs
                .saturating_sub(budget.prs_touched.len() as u64),
            "PR",
            "PRs",
        ));
    }
    parts.push(count(
        budget.max_minutes.saturating_sub(minutes),
        "minute",
        "minutes",
    ));
    if budget.max_dollars > 0.0 {
        parts.push(dollars(
            (budget.max_dollars - budget.dollars_estimate).max(0.0),
        ));
    } else {
        parts.push(format!(
            "no cost ceiling ({} spent)",
            dollars(budget.dollars_estimate)
        ));
    }
    format!("Budget remaining: {}", parts.join(", "))
}

fn stops_line(stops: &[Fired]) -> String {
    if stops.is_empty() {
        "Stop conditions evaluated: none triggered".into()
    } else {
        let names: Vec<String> = stops
            .iter()
            .map(|f| format!("{} (#{})", f.cause.name(), f.cause.number()))
            .collect();
        format!("Stop conditions evaluated: {} triggered", names.join(", "))
    }
}

/// The block's first line: `## Loop Iteration {N}/{max} — /sdd:{skill}
/// --loop`; a tick the iteration budget halts on entry runs no iteration
/// `N` of `max`, so its header says what happened instead:
/// `## Loop Iteration — halted on entry: iteration budget 2/2 —
/// /sdd:work --loop`.
pub fn header(v: &StatusView<'_>) -> String {
    let halted_on_budget = v
        .stops
        .iter()
        .any(|f| f.cause == crate::rules::stop::StopCause::IterationBudget);
    match v.budget {
        Some(b) if halted_on_budget && v.iteration > v.max_iterations => format!(
            "## Loop Iteration — halted on entry: iteration budget {}/{} — /sdd:{} --loop",
            b.iterations_used, b.max_iterations, v.skill
        ),
        _ => format!(
            "## Loop Iteration {}/{} — /sdd:{} --loop",
            v.iteration, v.max_iterations, v.skill
        ),
    }
}

/// The status block, ending with a newline.
pub fn status_block(v: &StatusView<'_>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}\n", header(v));
    let _ = writeln!(s, "Started: {}", v.started_at);
    let _ = writeln!(s, "{}", v.context);
    let _ = writeln!(s, "Iteration plan: {}", v.plan);
    if let Some((comments, merges)) = v.review_counters {
        let _ = writeln!(
            s,
            "Comments pushed: {comments} · Merges attempted: {merges}"
        );
    }
    s.push('\n');
    match v.budget {
        Some(b) => {
            let _ = writeln!(s, "{}", remaining(b, v.minutes, v.single_pr));
        }
        None => s.push_str("Budget remaining: no budget recorded yet\n"),
    }
    for line in v.cost.iter().flat_map(TickCost::lines) {
        let _ = writeln!(s, "{line}");
    }
    if let Some(line) = &v.windows {
        let _ = writeln!(s, "{line}");
    }
    s.push('\n');
    let _ = writeln!(s, "{}", stops_line(v.stops));
    let _ = writeln!(s, "Concurrency: {}\n", v.concurrency);
    let _ = writeln!(s, "Outcome: {}\n", v.outcome);
    let _ = writeln!(
        s,
        "Next tick: {}",
        if v.ended {
            "Loop ended"
        } else {
            "scheduled by /loop"
        }
    );
    s
}

/// Everything the final report shows.
#[derive(Debug, Clone)]
pub struct FinalView<'a> {
    pub skill: Skill,
    pub cause: &'a Fired,
    pub budget: Option<&'a Budget>,
    pub minutes: u64,
    /// Review `--pr N`.
    pub single_pr: Option<u64>,
    /// Every gate fired in the run, with its iteration.
    pub gates: Vec<(u64, GateRecord)>,
    pub budget_path: String,
    pub history_path: String,
}

/// The final report, ending with a newline.
pub fn final_report(v: &FinalView<'_>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Loop Ended — /sdd:{} --loop\n", v.skill);
    let _ = writeln!(
        s,
        "Stop cause: {} (#{}, {}) — {}",
        v.cause.cause.name(),
        v.cause.cause.number(),
        v.cause.cause.prose(),
        v.cause.message
    );
    if let Some(b) = v.budget {
        let _ = writeln!(s, "Iterations: {}/{}", b.iterations_used, b.max_iterations);
        let list: Vec<&str> = b.prs_touched.iter().collect();
        let list = if list.is_empty() {
            String::new()
        } else {
            format!(" ({})", list.join(", "))
        };
        match v.single_pr {
            Some(n) => {
                let _ = writeln!(s, "PRs touched: #{n} (single-PR mode, not budgeted)");
            }
            None => {
                let _ = writeln!(
                    s,
                    "PRs touched: {}/{}{list}",
                    b.prs_touched.len(),
                    b.max_prs
                );
            }
        }
        let _ = writeln!(s, "Minutes: {}/{}", v.minutes, b.max_minutes);
        if b.max_dollars > 0.0 {
            let _ = writeln!(
                s,
                "Dollars: {}/{}",
                dollars(b.dollars_estimate),
                dollars(b.max_dollars)
            );
        } else {
            let _ = writeln!(
                s,
                "Dollars: {} (no cost ceiling)",
                dollars(b.dollars_estimate)
            );
        }
        let _ = writeln!(
            s,
            "Comments pushed: {} · Merges attempted: {}",
            b.comments_pushed, b.merges_attempted
        );
    }
    if v.gates.is_empty() {
        s.push_str("Gates fired: none\n");
    } else {
        s.push_str("Gates fired:\n");
        for (iteration, g) in &v.gates {
            let _ = writeln!(
                s,
                "- iteration {iteration} · {} · \"{}\" → {}",
                g.name, g.question, g.answer
            );
        }
    }
    let _ = writeln!(s, "Budget: {}", v.budget_path);
    let _ = writeln!(s, "History: {}", v.history_path);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::stop::StopCause;
    use crate::state::budget::Ceilings;

    fn budget() -> Budget {
        let mut b = Budget::start(
            "2026-05-09T14:32:00Z",
            Ceilings::default(),
            "built-in default",
        );
        b.iterations_used = 3;
        for pr in ["#141", "#142", "#143", "#145"] {
            b.prs_touched.insert(pr);
        }
        b.dollars_estimate = 14.92;
        b.set_elapsed_seconds(18 * 60);
        b
    }

    #[test]
    fn status_block_layout() {
        let b = budget();
        let text = status_block(&StatusView {
            skill: Skill::Work,
            iteration: 3,
            started_at: "2026-05-09T14:50:00Z",
            context: "Backlog: 12 unblocked, 4 blocked, 0 in-progress".into(),
            plan: "implement #143, #145, #149 (3 of 4 max-agents)".into(),
            review_counters: None,
            budget: Some(&b),
            max_iterations: b.max_iterations,
            minutes: 18,
            single_pr: false,
            stops: &[],
            concurrency: "lock acquired".into(),
            outcome: "3 PRs opened (#151, #152, #153).".into(),
            ended: false,
            cost: None,
            windows: None,
        });
        assert_eq!(
            text,
            "## Loop Iteration 3/5 — /sdd:work --loop\n\nStarted: 2026-05-09T14:50:00Z\nBacklog: 12 unblocked, 4 blocked, 0 in-progress\nIteration plan: implement #143, #145, #149 (3 of 4 max-agents)\n\nBudget remaining: 2 iterations, 16 PRs, 42 minutes, $10.08\n\nStop conditions evaluated: none triggered\nConcurrency: lock acquired\n\nOutcome: 3 PRs opened (#151, #152, #153).\n\nNext tick: scheduled by /loop\n"
        );
    }

    #[test]
    fn both_cost_estimates_are_shown_and_a_drift_over_20_percent_warns() {
        let b = budget();
        let view = |cost| StatusView {
            skill: Skill::Work,
            iteration: 3,
            started_at: "t",
            context: "Backlog: 1 unblocked".into(),
            plan: "implement #1".into(),
            review_counters: None,
            budget: Some(&b),
            max_iterations: 5,
            minutes: 18,
            single_pr: false,
            stops: &[],
            concurrency: "lock acquired".into(),
            outcome: "ok".into(),
            ended: false,
            cost,
            windows: None,
        };
        let close = status_block(&view(Some(TickCost {
            engine: 0.42,
            agent: 0.40,
        })));
        assert!(close.contains("\nBudget remaining: 2 iterations, 16 PRs, 42 minutes, $10.08\nCost this tick: $0.4200 engine estimate (tokens × rates; the cost stop uses it) · $0.4000 agent's own (as it reported)\n\nStop conditions"), "{close}");
        assert!(!close.contains("warning:"));
        let far = status_block(&view(Some(TickCost {
            engine: 0.50,
            agent: 0.40,
        })));
        assert!(
            far.contains("\nwarning: the two cost estimates differ by more than 20% (25%)"),
            "{far}"
        );
        let free = TickCost {
            engine: 0.01,
            agent: 0.0,
        };
        assert_eq!(free.drift(), None);
        assert!(free.lines()[1].contains("(the agent reports $0)"));
        assert_eq!(
            TickCost {
                engine: 0.0,
                agent: 0.0
            }
            .lines()
            .len(),
            0,
            "nothing spent, nothing to compare"
        );
    }

    #[test]
    fn a_tick_halted_on_entry_by_the_iteration_budget_says_so_in_its_header() {
        let mut b = budget();
        b.iterations_used = 5;
        let fired = [Fired::new(
            StopCause::IterationBudget,
            "Iteration budget reached: 5/5 iterations",
        )];
        let view = |iteration, stops| StatusView {
            skill: Skill::Work,
            iteration,
            started_at: "t",
            context: "Backlog: not examined".into(),
            plan: "none — halted at entry".into(),
            review_counters: None,
            budget: Some(&b),
            max_iterations: b.max_iterations,
            minutes: 18,
            single_pr: false,
            stops,
            concurrency: "lock acquired".into(),
            outcome: "halted".into(),
            ended: true,
            cost: None,
            windows: None,
        };
        assert!(status_block(&view(6, &fired)).starts_with(
            "## Loop Iteration — halted on entry: iteration budget 5/5 — /sdd:work --loop\n\n"
        ));
        // The tick that used the last iteration is still iteration 5 of 5.
        assert!(
            status_block(&view(5, &fired))
                .starts_with("## Loop Iteration 5/5 — /sdd:work --loop\n\n")
        );
        assert!(
            status_block(&view(6, &[])).starts_with("## Loop Iteration 6/5 — /sdd:work --loop\n\n")
        );
    }

    #[test]
    fn single_pr_block_shows_review_counters_and_no_pr_budget() {
        let b = budget();
        let text = status_block(&StatusView {
            skill: Skill::Review,
            iteration: 2,
            started_at: "t",
            context: "Tracked PR: #142".into(),
            plan: "review #142".into(),
            review_counters: Some((3, 1)),
            budget: Some(&b),
            max_iterations: b.max_iterations,
            minutes: 18,
            single_pr: true,
            stops: &[Fired::new(
                StopCause::TerminalPr,
                "PR #142 reached terminal state: merged",
            )],
            concurrency: "lock acquired".into(),
            outcome: "halted".into(),
            ended: true,
            cost: None,
            windows: None,
        });
        assert!(text.contains("Comments pushed: 3 · Merges attempted: 1\n"));
        assert!(text.contains("Budget remaining: 2 iterations, 42 minutes, $10.08\n"));
        assert!(text.contains("Stop conditions evaluated: terminal_pr (#2) triggered\n"));
        assert!(text.ends_with("Next tick: Loop ended\n"));
    }

    #[test]
    fn final_report_lists_cause_budgets_gates_and_paths() {
        let b = budget();
        let fired = Fired::new(
            StopCause::PrsTouchedBudget,
            "PR-touch budget reached: 4/4 PRs",
        );
        let text = final_report(&FinalView {
            skill: Skill::Work,
            cause: &fired,
            budget: Some(&b),
            minutes: 18,
            single_pr: None,
            gates: vec![(
                2,
                GateRecord {
                    name: "backlog-drift".into(),
                    question: "Backlog changed since last iteration. Re-propose the next batch?"
                        .into(),
                    answer: "continue".into(),
                    at: "t".into(),
                    answered_by: None,
                    extra: Default::default(),
                },
            )],
            budget_path: ".sdd/loop/work.budget.json".into(),
            history_path: ".sdd/loop/work.history.jsonl".into(),
        });
        assert!(text.starts_with("## Loop Ended — /sdd:work --loop\n\nStop cause: prs_touched_budget (#4, PR-touch budget reached) — PR-touch budget reached: 4/4 PRs\n"));
        assert!(text.contains("Iterations: 3/5\nPRs touched: 4/20 (#141, #142, #143, #145)\nMinutes: 18/60\nDollars: $14.92/$25.00\n"));
        assert!(text.contains("- iteration 2 · backlog-drift · \"Backlog changed since last iteration. Re-propose the next batch?\" → continue\n"));
        assert!(text.ends_with(
            "Budget: .sdd/loop/work.budget.json\nHistory: .sdd/loop/work.history.jsonl\n"
        ));
    }

    #[test]
    fn no_cost_ceiling_is_spelled_out() {
        let mut b = budget();
        b.max_dollars = 0.0;
        assert!(remaining(&b, 0, false).ends_with("no cost ceiling ($14.92 spent)"));
    }
}
