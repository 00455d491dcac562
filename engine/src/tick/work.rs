//! Steps 4–5 for `/sdd:work`: discover the backlog (condition #1 empty,
//! #7 dependency cycle), then the gates in their fixed order — backlog
//! drift, repeated failure, ambiguous criteria per selected issue, the 80%
//! budget gate — and the request the work is dispatched with.

use std::collections::BTreeSet;

use super::Failure;
use super::ctx::{Ctx, list, plural, pr_ref};
use super::entry::{self, Halt};
use super::handover::Dispatch;
use super::load::Loaded;
use crate::rules::gates::Question;
use crate::rules::stop::{Fired, StopCause};
use crate::state::journal::Shown;
use crate::state::paths::Skill;
use crate::state::protocol::{Criteria, IssueAssignment, PROTOCOL_VERSION, SkillRequest};
use crate::world::backlog::{self, Backlog};
use crate::world::tracker::Pull;

/// Plans a work tick: the dispatch, or the halt.
pub(crate) fn plan(
    ctx: &mut Ctx<'_, '_>,
    run: &mut Loaded,
) -> Result<Result<Dispatch, Halt>, Failure> {
    let deferred: BTreeSet<u64> = run
        .budget
        .deferred
        .iter()
        .filter_map(|t| t.trim_start_matches('#').parse().ok())
        .collect();
    let issues = ctx.tracker.open_issues()?;
    let pulls = ctx.tracker.open_pulls()?;
    let linked: BTreeSet<u64> = pulls.iter().flat_map(Pull::closes).collect();
    let backlog = Backlog::discover(issues, &linked, &deferred);
    let snapshot = backlog.snapshot();
    let context = format!("Backlog: {}", backlog.summary());
    let halt = |plan| {
        Ok(Err(Halt::with(
            context.clone(),
            Some(snapshot.clone()),
            plan,
        )))
    };

    if let Some(message) = backlog.cycle_message() {
        ctx.note(message.clone());
        run.fired
            .push(Fired::new(StopCause::DependencyCycle, message));
    }
    if backlog.workable.is_empty() {
        let message = format!(
            "Backlog empty — {} iterations used, {} PRs touched",
            run.budget.iterations_used,
            run.budget.prs_touched.len()
        );
        ctx.note(message.clone());
        run.fired.push(Fired::new(StopCause::BacklogEmpty, message));
    }
    if !run.fired.is_empty() {
        return halt("halted at entry");
    }

    let mut candidates = backlog.workable.clone();
    let previous = run.run_lines.iter().rev().find_map(|l| {
        l.backlog_snapshot
            .clone()
            .map(|s| (s, l.issues_dispatched_this_iter.clone().unwrap_or_default()))
    });
    if let Some((prev_list, dispatched)) = previous {
        let prev: BTreeSet<u64> = prev_list.iter().copied().collect();
        if backlog::drifted(&prev_list, &dispatched, &snapshot) {
            let answer = ctx.ask(Question::backlog_drift())?;
            match answer.option {
                "re-propose" => {}
                "continue" => candidates.retain(|n| prev.contains(n)),
                _ => {
                    run.fired.push(Fired::new(
                        StopCause::PriorGateStop,
                        "Gate backlog-drift answered stop",
                    ));
                    return halt("stopped at a gate");
                }
            }
        }
    }
    match entry::repeated_failures(ctx, run)? {
        Ok(skip) => candidates.retain(|n| !skip.contains(&pr_ref(*n))),
        Err(stop) => {
            run.fired.push(stop);
            return halt("stopped at a gate");
        }
    }
    let remaining_prs = run
        .budget
        .max_prs
        .saturating_sub(run.budget.prs_touched.len() as u64);
    let take = ctx.cfg.max_agents.min(remaining_prs) as usize;
    let selected: Vec<u64> = candidates.iter().copied().take(take).collect();
    let mut assignments = Vec::new();
    let mut skipped = Vec::new();
    let mut escalated = Vec::new();
    for n in &selected {
        let issue = &backlog.issues[n];
        let criteria = if backlog::criteria_ambiguous(&issue.body) {
            let answer = ctx.ask(Question::ambiguous_criteria(*n))?;
            match answer.option {
                "proceed" => Criteria::BestInterpretation,
                "skip" => {
                    skipped.push(*n);
                    continue;
                }
                "escalate" => {
                    escalated.push(*n);
                    continue;
                }
                _ => {
                    run.fired.push(Fired::new(
                        StopCause::PriorGateStop,
                        "Gate ambiguous-criteria answered stop",
                    ));
                    return halt("stopped at a gate");
                }
            }
        } else {
            Criteria::Clear
        };
        assignments.push(IssueAssignment {
            number: *n,
            title: issue.title.clone(),
            criteria,
        });
    }
    if let Some(stop) = entry::budget_gate(ctx, run, assignments.len() as u64)? {
        run.fired.push(stop);
        return halt("stopped at a gate");
    }
    run.pending.escalate = escalated.clone();

    let numbers: Vec<u64> = assignments.iter().map(|a| a.number).collect();
    let plan = if numbers.is_empty() {
        "nothing to dispatch this tick".to_owned()
    } else {
        format!(
            "implement {} ({} of {} max-agents)",
            list(&numbers),
            numbers.len(),
            ctx.cfg.max_agents
        )
    };
    let mut gate_outcomes = Vec::new();
    if !escalated.is_empty() {
        gate_outcomes.push(format!(
            "{} ({}) escalated for ambiguous criteria.",
            plural(escalated.len(), "issue", "issues"),
            list(&escalated)
        ));
    }
    if !skipped.is_empty() {
        gate_outcomes.push(format!(
            "{} ({}) skipped for ambiguous criteria.",
            plural(skipped.len(), "issue", "issues"),
            list(&skipped)
        ));
    }
    Ok(Ok(Dispatch {
        request: SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill: Skill::Work,
            iteration: run.iteration,
            repository: ctx.cfg.repository.clone(),
            issues: assignments,
            prs: Vec::new(),
            max_new_prs: Some(remaining_prs),
            no_chain: ctx.cfg.no_chain,
            dry_run: ctx.cfg.dry_run,
        },
        tracked_at_start: run.carried.clone(),
        backlog: Some(snapshot),
        shown: Shown {
            context,
            plan,
            concurrency: run.concurrency.clone(),
            outcome: String::new(),
        },
        gate_outcomes,
    }))
}
