//! Steps 4–5 for `/sdd:review`: the watched PR's terminal state (#2) or
//! the open PRs to review, deferral of PRs with no new commits since the
//! iteration that last recorded them (SPEC-0020 "Concurrency Invariants
//! for /sdd:review": SHA equality is the sole rule), the repeated-failure
//! and 80% budget gates, and the post-feedback-merge gate per PR.

use std::collections::BTreeSet;

use super::Failure;
use super::ctx::{Ctx, list, pr_ref, short};
use super::entry::{self, Halt};
use super::handover::Dispatch;
use super::load::Loaded;
use crate::rules::gates::Question;
use crate::rules::stop::{Fired, StopCause};
use crate::state::history::{PrState, TrackedPr};
use crate::state::journal::Shown;
use crate::state::paths::Skill;
use crate::state::protocol::{PROTOCOL_VERSION, PrAssignment, SkillRequest};
use crate::world::git::same_commit;
use crate::world::tracker::{self, Pull};

/// The label that takes a PR out of the review loop (condition #2).
pub const DO_NOT_MERGE: &str = "do-not-merge";

/// Plans a review tick: the dispatch, or the halt.
pub(crate) fn plan(
    ctx: &mut Ctx<'_, '_>,
    run: &mut Loaded,
) -> Result<Result<Dispatch, Halt>, Failure> {
    let deferred: BTreeSet<String> = run.budget.deferred.iter().cloned().collect();
    let (pulls, context) = match ctx.cfg.pr {
        Some(n) => {
            let pr = ctx.tracker.pull(n)?;
            let terminal = match pr.state {
                PrState::Merged => Some("merged"),
                PrState::Closed => Some("closed"),
                PrState::Open if pr.has_label(DO_NOT_MERGE) => Some("do-not-merge"),
                PrState::Open => None,
            };
            let context = format!(
                "Tracked PR: #{n} ({}, head {})",
                terminal.unwrap_or("open"),
                short(&pr.head_sha)
            );
            if let Some(state) = terminal {
                let message = format!("PR #{n} reached terminal state: {state}");
                ctx.note(message.clone());
                run.fired.push(Fired::new(StopCause::TerminalPr, message));
                return Ok(Err(Halt::with(context, None, "halted at entry")));
            }
            (vec![pr], context)
        }
        None => {
            let open: Vec<Pull> = ctx
                .tracker
                .open_pulls()?
                .into_iter()
                .filter(|p| !p.has_label(DO_NOT_MERGE) && !deferred.contains(&pr_ref(p.number)))
                .collect();
            let context = format!("Tracked PRs: {} open for review", open.len());
            if open.is_empty() {
                let message = format!(
                    "Backlog empty — {} iterations used, {} PRs touched",
                    run.budget.iterations_used,
                    run.budget.prs_touched.len()
                );
                ctx.note(message.clone());
                run.fired.push(Fired::new(StopCause::BacklogEmpty, message));
                return Ok(Err(Halt::with(context, None, "halted at entry")));
            }
            (open, context)
        }
    };

    // No new commits since the iteration that last recorded the PR.
    let mut deferred_now: Vec<u64> = Vec::new();
    let mut deferred_tracked: Vec<TrackedPr> = Vec::new();
    let mut candidates: Vec<Pull> = Vec::new();
    for pr in pulls {
        let seen = run.run_lines.iter().rev().find_map(|l| {
            l.tracked_prs
                .iter()
                .flatten()
                .find(|t| t.number == pr.number)
                .map(|t| (l.iteration.unwrap_or(0), t.clone()))
        });
        match seen {
            Some((k, t))
                if t.head_sha_at_iteration_end
                    .as_deref()
                    .is_some_and(|end| same_commit(end, &pr.head_sha)) =>
            {
                ctx.note(format!(
                    "PR #{}: no new commits since iteration {k} (head_sha_at_iteration_end matches remote HEAD)",
                    pr.number
                ));
                deferred_now.push(pr.number);
                let mut t = t;
                t.head_sha_at_iteration_start = t.head_sha_at_iteration_end.clone();
                deferred_tracked.push(t);
            }
            _ => candidates.push(pr),
        }
    }

    match entry::repeated_failures(ctx, run)? {
        Ok(skip) => candidates.retain(|p| !skip.contains(&pr_ref(p.number))),
        Err(stop) => {
            run.fired.push(stop);
            return Ok(Err(Halt::with(context, None, "stopped at a gate")));
        }
    }
    // Select: up to max-agents; new PRs only within the PR budget.
    let single = ctx.cfg.single_pr();
    let remaining = run
        .budget
        .max_prs
        .saturating_sub(run.budget.prs_touched.len() as u64);
    let mut room = remaining;
    let mut selected = Vec::new();
    let mut new_prs = 0;
    for pr in candidates {
        if selected.len() as u64 >= ctx.cfg.max_agents {
            break;
        }
        let known = run.budget.prs_touched.contains(&pr_ref(pr.number));
        if !single && !known {
            if room == 0 {
                continue;
            }
            room -= 1;
            new_prs += 1;
        }
        selected.push(pr);
    }
    if let Some(stop) = entry::budget_gate(ctx, run, new_prs)? {
        run.fired.push(stop);
        return Ok(Err(Halt::with(context, None, "stopped at a gate")));
    }
    let mut assignments = Vec::new();
    for pr in &selected {
        let comments = ctx.tracker.review_comments(pr.number)?;
        let merge_allowed = if tracker::addressed_human_feedback(&comments, &ctx.inputs.agents) {
            let answer = ctx.ask(Question::post_feedback_merge(pr.number))?;
            match answer.option {
                "merge" => true,
                "hold" => false,
                _ => {
                    run.fired.push(Fired::new(
                        StopCause::PriorGateStop,
                        "Gate post-feedback-merge answered stop",
                    ));
                    return Ok(Err(Halt::with(context, None, "stopped at a gate")));
                }
            }
        } else {
            true
        };
        assignments.push(PrAssignment {
            number: pr.number,
            branch: pr.head_ref.clone(),
            head_sha: Some(pr.head_sha.clone()),
            merge_allowed,
        });
    }
    let plan = if assignments.is_empty() {
        "nothing to review this tick".to_owned()
    } else {
        assignments
            .iter()
            .map(|a| {
                format!(
                    "review #{} ({})",
                    a.number,
                    if a.merge_allowed {
                        "merge allowed"
                    } else {
                        "merge held"
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut tracked_at_start = run.carried.clone();
    for pr in &selected {
        tracked_at_start.retain(|t| t.number != pr.number);
        tracked_at_start.push(TrackedPr {
            number: pr.number,
            branch: pr.head_ref.clone(),
            head_sha_at_iteration_start: Some(pr.head_sha.clone()),
            head_sha_at_iteration_end: Some(pr.head_sha.clone()),
            state_at_end: PrState::Open,
            extra: Default::default(),
        });
    }
    for t in deferred_tracked {
        tracked_at_start.retain(|x| x.number != t.number);
        tracked_at_start.push(t);
    }
    let gate_outcomes = if deferred_now.is_empty() {
        Vec::new()
    } else {
        vec![format!(
            "{} deferred (no new commits).",
            list(&deferred_now)
        )]
    };
    Ok(Ok(Dispatch {
        request: SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill: Skill::Review,
            iteration: run.iteration,
            repository: ctx.cfg.repository.clone(),
            issues: Vec::new(),
            prs: assignments,
            max_new_prs: if single { None } else { Some(remaining) },
            no_chain: ctx.cfg.no_chain,
            dry_run: ctx.cfg.dry_run,
        },
        tracked_at_start,
        backlog: None,
        shown: Shown {
            context,
            plan,
            concurrency: run.concurrency.clone(),
            outcome: String::new(),
        },
        gate_outcomes,
    }))
}
