//! Steps 4–5 for `/sdd:review`: the watched PR's terminal state (#2) or
//! the open PRs to review, deferral of PRs with no new commits since the
//! iteration that last recorded them (SPEC-0020 "Concurrency Invariants
//! for /sdd:review": SHA equality is the sole rule), the repeated-failure
//! and 80% budget gates, and the post-feedback-merge gate per PR. The
//! PRs reviewed are those claimed on the shared remote ([`super::claims`]).

use std::collections::BTreeSet;

use super::Failure;
use super::claims::{self, Planned};
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
    let (pulls, context) = match to_review(ctx, run)? {
        Ok(found) => found,
        Err(halt) => return Ok(Err(halt)),
    };
    if entry::after_backlog(ctx, run) {
        return Ok(Err(Halt::with(context, None, "halted at entry")));
    }
    let Unchanged {
        deferred,
        deferred_tracked,
        mut candidates,
    } = set_aside_unchanged(ctx, run, pulls);
    let at_gate = |context| Ok(Err(Halt::with(context, None, "stopped at a gate")));
    match entry::repeated_failures(ctx, run)? {
        Ok(skip) => candidates.retain(|p| !skip.contains(&pr_ref(p.number))),
        Err(stop) => {
            run.fired.push(stop);
            return at_gate(context);
        }
    }
    let numbers: Vec<u64> = candidates.iter().map(|p| p.number).collect();
    match claims::plan(ctx, &numbers, ctx.cfg.max_agents as usize)? {
        Planned::Unclaimed => {}
        Planned::Won(won) => candidates.retain(|p| won.contains(&p.number)),
        Planned::Nothing(note) => return Ok(Err(Halt::claimed_nothing(context, None, note))),
    }
    let selection = select(ctx, run, candidates);
    let kept: Vec<u64> = selection.prs.iter().map(|p| p.number).collect();
    claims::keep_only(ctx, &kept);
    if let Some(stop) = entry::budget_gate(ctx, run, selection.new_prs)? {
        run.fired.push(stop);
        return at_gate(context);
    }
    let Some(assignments) = assign(ctx, run, &selection.prs)? else {
        return at_gate(context);
    };
    let plan = plan_line(&assignments);
    let tracked_at_start = tracked_at_start(run, &selection.prs, deferred_tracked);
    let gate_outcomes = if deferred.is_empty() {
        Vec::new()
    } else {
        vec![format!("{} deferred (no new commits).", list(&deferred))]
    };
    let single = ctx.cfg.single_pr();
    Ok(Ok(Dispatch {
        request: SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill: Skill::Review,
            iteration: run.iteration,
            repository: ctx.cfg.repository.clone(),
            issues: Vec::new(),
            prs: assignments,
            max_new_prs: if single {
                None
            } else {
                Some(selection.remaining)
            },
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

/// The PRs to review and the status block's context line: the watched
/// PR unless it reached a terminal state (#2), else the open PRs not held
/// or deferred — or the halt when there are none (#1).
fn to_review(
    ctx: &mut Ctx<'_, '_>,
    run: &mut Loaded,
) -> Result<Result<(Vec<Pull>, String), Halt>, Failure> {
    let at_entry = |context| Ok(Err(Halt::with(context, None, "halted at entry")));
    if let Some(n) = ctx.cfg.pr {
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
            return at_entry(context);
        }
        return Ok(Ok((vec![pr], context)));
    }
    let deferred: BTreeSet<String> = run.budget.deferred.iter().cloned().collect();
    let open: Vec<Pull> = ctx
        .tracker
        .open_pulls()?
        .into_iter()
        .filter(|p| !p.has_label(DO_NOT_MERGE) && !deferred.contains(&pr_ref(p.number)))
        .collect();
    let context = format!("Tracked PRs: {} open for review", open.len());
    if open.is_empty() {
        let message = crate::rules::stop::backlog_empty_message(
            run.budget.iterations_used,
            run.budget.prs_touched.len(),
        );
        ctx.note(message.clone());
        run.fired.push(Fired::new(StopCause::BacklogEmpty, message));
        return at_entry(context);
    }
    Ok(Ok((open, context)))
}

/// The PRs with no new commits since the iteration that last recorded
/// them, set aside, and the rest.
struct Unchanged {
    deferred: Vec<u64>,
    /// Their tracked records, carried as they were.
    deferred_tracked: Vec<TrackedPr>,
    candidates: Vec<Pull>,
}

fn set_aside_unchanged(ctx: &mut Ctx<'_, '_>, run: &Loaded, pulls: Vec<Pull>) -> Unchanged {
    let mut unchanged = Unchanged {
        deferred: Vec::new(),
        deferred_tracked: Vec::new(),
        candidates: Vec::new(),
    };
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
                unchanged.deferred.push(pr.number);
                let mut t = t;
                t.head_sha_at_iteration_start = t.head_sha_at_iteration_end.clone();
                unchanged.deferred_tracked.push(t);
            }
            _ => unchanged.candidates.push(pr),
        }
    }
    unchanged
}

/// The PRs this tick reviews.
struct Selection {
    prs: Vec<Pull>,
    /// New PRs the budget still allows.
    remaining: u64,
    /// How many of `prs` the budget has not seen.
    new_prs: u64,
}

/// Up to max-agents PRs; new PRs only within the PR budget.
fn select(ctx: &Ctx<'_, '_>, run: &Loaded, candidates: Vec<Pull>) -> Selection {
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
    Selection {
        prs: selected,
        remaining,
        new_prs,
    }
}

/// Each selected PR's assignment, asking the post-feedback-merge gate
/// where a human's feedback was addressed; `None` when it says stop.
fn assign(
    ctx: &mut Ctx<'_, '_>,
    run: &mut Loaded,
    selected: &[Pull],
) -> Result<Option<Vec<PrAssignment>>, Failure> {
    let mut assignments = Vec::new();
    for pr in selected {
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
                    return Ok(None);
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
    Ok(Some(assignments))
}

/// The status block's plan line.
fn plan_line(assignments: &[PrAssignment]) -> String {
    if assignments.is_empty() {
        return "nothing to review this tick".to_owned();
    }
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
}

/// The PRs tracked from the start of the iteration: those carried over,
/// updated by the selected and the deferred.
fn tracked_at_start(
    run: &Loaded,
    selected: &[Pull],
    deferred_tracked: Vec<TrackedPr>,
) -> Vec<TrackedPr> {
    let mut tracked = run.carried.clone();
    for pr in selected {
        tracked.retain(|t| t.number != pr.number);
        tracked.push(TrackedPr {
            number: pr.number,
            branch: pr.head_ref.clone(),
            head_sha_at_iteration_start: Some(pr.head_sha.clone()),
            head_sha_at_iteration_end: Some(pr.head_sha.clone()),
            state_at_end: PrState::Open,
            extra: Default::default(),
        });
    }
    for t in deferred_tracked {
        tracked.retain(|x| x.number != t.number);
        tracked.push(t);
    }
    tracked
}
