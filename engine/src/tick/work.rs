//! Steps 4–5 for `/sdd:work`: discover the backlog (condition #1 empty,
//! #7 dependency cycle), then the gates in their fixed order — backlog
//! drift, repeated failure, ambiguous criteria per selected issue, the 80%
//! budget gate — and the request the work is dispatched with. The plan is
//! what was claimed: the candidates are claimed on the shared remote in
//! plan order before the criteria are triaged ([`super::claims`]).

use std::collections::BTreeSet;

use super::Failure;
use super::claims::{self, Planned};
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
    let backlog = discover(ctx, run)?;
    // An interrupt since entry is among the halts below.
    entry::after_backlog(ctx, run);
    let snapshot = backlog.snapshot();
    let context = format!("Backlog: {}", backlog.summary());
    let halt = |plan| {
        Ok(Err(Halt::with(
            context.clone(),
            Some(snapshot.clone()),
            plan,
        )))
    };
    if halts_at_entry(ctx, run, &backlog) {
        return halt("halted at entry");
    }
    let Some(mut candidates) = past_drift(ctx, run, &backlog, &snapshot)? else {
        return halt("stopped at a gate");
    };
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
    let selected: Vec<u64> = match claims::plan(ctx, &candidates, take)? {
        Planned::Unclaimed => candidates.iter().copied().take(take).collect(),
        Planned::Won(won) => won,
        Planned::Nothing(note) => {
            return Ok(Err(Halt::claimed_nothing(
                context.clone(),
                Some(snapshot.clone()),
                note,
            )));
        }
    };
    let Some(triage) = triage_criteria(ctx, run, &backlog, &selected)? else {
        return halt("stopped at a gate");
    };
    let kept: Vec<u64> = triage.assignments.iter().map(|a| a.number).collect();
    claims::keep_only(ctx, &kept);
    if let Some(stop) = entry::budget_gate(ctx, run, triage.assignments.len() as u64)? {
        run.fired.push(stop);
        return halt("stopped at a gate");
    }
    run.pending.escalate = triage.escalated.clone();
    let plan = plan_line(&triage.assignments, ctx.cfg.max_agents);
    let gate_outcomes = triage.outcomes();
    Ok(Ok(Dispatch {
        request: SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill: Skill::Work,
            iteration: run.iteration,
            repository: ctx.cfg.repository.clone(),
            issues: triage.assignments,
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

/// The backlog: open issues, less those an open PR closes, those
/// deferred, and the loops' dashboard issues (docs/src/gates-away.md).
fn discover(ctx: &Ctx<'_, '_>, run: &Loaded) -> Result<Backlog, Failure> {
    let deferred: BTreeSet<u64> = run
        .budget
        .deferred
        .iter()
        .filter_map(|t| t.trim_start_matches('#').parse().ok())
        .collect();
    let mut issues = ctx.tracker.open_issues()?;
    issues.retain(|i| !i.has_label(super::away::DASHBOARD_LABEL));
    let pulls = ctx.tracker.open_pulls()?;
    let linked: BTreeSet<u64> = pulls.iter().flat_map(Pull::closes).collect();
    Ok(Backlog::discover(issues, &linked, &deferred))
}

/// The entry stops: a dependency cycle (#7), an empty backlog (#1) — or
/// one fired before.
fn halts_at_entry(ctx: &mut Ctx<'_, '_>, run: &mut Loaded, backlog: &Backlog) -> bool {
    if let Some(message) = backlog.cycle_message() {
        ctx.note(message.clone());
        run.fired
            .push(Fired::new(StopCause::DependencyCycle, message));
    }
    if backlog.workable.is_empty() {
        let message = crate::rules::stop::backlog_empty_message(
            run.budget.iterations_used,
            run.budget.prs_touched.len(),
        );
        ctx.note(message.clone());
        run.fired.push(Fired::new(StopCause::BacklogEmpty, message));
    }
    !run.fired.is_empty()
}

/// The workable issues, past the backlog-drift gate: all of them, or
/// (`continue`) only those in the last snapshot; `None` when it says stop.
fn past_drift(
    ctx: &mut Ctx<'_, '_>,
    run: &mut Loaded,
    backlog: &Backlog,
    snapshot: &[u64],
) -> Result<Option<Vec<u64>>, Failure> {
    let mut candidates = backlog.workable.clone();
    let previous = run.run_lines.iter().rev().find_map(|l| {
        l.backlog_snapshot
            .clone()
            .map(|s| (s, l.issues_dispatched_this_iter.clone().unwrap_or_default()))
    });
    if let Some((prev_list, dispatched)) = previous {
        let prev: BTreeSet<u64> = prev_list.iter().copied().collect();
        let in_flight: Vec<u64> = backlog
            .has_open_pr
            .iter()
            .chain(&backlog.in_progress)
            .copied()
            .collect();
        if backlog::drifted(&prev_list, &dispatched, snapshot, &in_flight) {
            let answer = ctx.ask(Question::backlog_drift())?;
            match answer.option {
                "re-propose" => {}
                "continue" => candidates.retain(|n| prev.contains(n)),
                _ => {
                    run.fired.push(Fired::new(
                        StopCause::PriorGateStop,
                        "Gate backlog-drift answered stop",
                    ));
                    return Ok(None);
                }
            }
        }
    }
    Ok(Some(candidates))
}

/// The selected issues after the ambiguous-criteria gate.
struct Triage {
    assignments: Vec<IssueAssignment>,
    skipped: Vec<u64>,
    escalated: Vec<u64>,
}

impl Triage {
    /// The gate's outcomes, as the status block says them.
    fn outcomes(&self) -> Vec<String> {
        let mut outcomes = Vec::new();
        if !self.escalated.is_empty() {
            outcomes.push(format!(
                "{} ({}) escalated for ambiguous criteria.",
                plural(self.escalated.len(), "issue", "issues"),
                list(&self.escalated)
            ));
        }
        if !self.skipped.is_empty() {
            outcomes.push(format!(
                "{} ({}) skipped for ambiguous criteria.",
                plural(self.skipped.len(), "issue", "issues"),
                list(&self.skipped)
            ));
        }
        outcomes
    }
}

/// Asks the ambiguous-criteria gate for each selected issue whose
/// criteria are unclear; `None` when it says stop.
fn triage_criteria(
    ctx: &mut Ctx<'_, '_>,
    run: &mut Loaded,
    backlog: &Backlog,
    selected: &[u64],
) -> Result<Option<Triage>, Failure> {
    let mut triage = Triage {
        assignments: Vec::new(),
        skipped: Vec::new(),
        escalated: Vec::new(),
    };
    for n in selected {
        let issue = &backlog.issues[n];
        let criteria = if backlog::criteria_ambiguous(&issue.body) {
            let answer = ctx.ask(Question::ambiguous_criteria(*n))?;
            match answer.option {
                "proceed" => Criteria::BestInterpretation,
                "skip" => {
                    triage.skipped.push(*n);
                    continue;
                }
                "escalate" => {
                    triage.escalated.push(*n);
                    continue;
                }
                _ => {
                    run.fired.push(Fired::new(
                        StopCause::PriorGateStop,
                        "Gate ambiguous-criteria answered stop",
                    ));
                    return Ok(None);
                }
            }
        } else {
            Criteria::Clear
        };
        triage.assignments.push(IssueAssignment {
            number: *n,
            title: issue.title.clone(),
            criteria,
        });
    }
    Ok(Some(triage))
}

/// The status block's plan line.
fn plan_line(assignments: &[IssueAssignment], max_agents: u64) -> String {
    let numbers: Vec<u64> = assignments.iter().map(|a| a.number).collect();
    if numbers.is_empty() {
        return "nothing to dispatch this tick".to_owned();
    }
    format!(
        "implement {} ({} of {} max-agents)",
        list(&numbers),
        numbers.len(),
        max_agents
    )
}
