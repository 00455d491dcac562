//! Steps 3–5 shared by both skills: an ended run stays ended, `--resume`
//! reconciliation, the entry stop conditions (stop file, interrupt, the
//! budgets at 100%), the repeated-failure gate, the 80% budget gate — and
//! the halt that records a stop before anything is dispatched.

use std::collections::{BTreeMap, BTreeSet};

use super::ctx::{Ctx, Ending};
use super::load::{self, Loaded};
use super::record::{self, Record};
use super::resume;
use super::{Concluded, Failure};
use crate::exit;
use crate::rules::gates::{Question, Tripped};
use crate::rules::stop::{self, Fired, StopCause};
use crate::state::budget::Dimension;
use crate::state::history::{BudgetSnapshot, HistoryLine, Outcome};
use crate::state::journal::Shown;
use crate::state::paths::Skill;

/// A stop before dispatch: what the halted line and block show.
#[derive(Debug)]
pub(crate) struct Halt {
    /// The status block's context line; `None` for the skill's default.
    pub context: Option<String>,
    /// Work: the backlog snapshot taken at entry.
    pub backlog: Option<Vec<u64>>,
    /// Why nothing is planned (`halted at entry`, `stopped at a gate`).
    pub plan: &'static str,
    /// Not a stop but a skip: other clones hold the claims on every
    /// candidate (the note naming who holds what).
    pub skipped: Option<String>,
}

impl Halt {
    pub fn at_entry(plan: &'static str) -> Self {
        Self {
            context: None,
            backlog: None,
            plan,
            skipped: None,
        }
    }

    pub fn with(context: String, backlog: Option<Vec<u64>>, plan: &'static str) -> Self {
        Self {
            context: Some(context),
            backlog,
            plan,
            skipped: None,
        }
    }

    /// Nothing claimable: other clones hold every candidate (`note` says
    /// who holds what).
    pub fn claimed_nothing(context: String, backlog: Option<Vec<u64>>, note: String) -> Self {
        Self {
            context: Some(context),
            backlog,
            plan: "other clones hold the claims",
            skipped: Some(note),
        }
    }
}

/// The checks on entry, before the skill's own planning; `Some` halts.
pub(crate) fn check(ctx: &mut Ctx<'_, '_>, run: &mut Loaded) -> Result<Option<Halt>, Failure> {
    // An ended run stays ended until --resume or --fresh.
    if let Some(stopped) = run.budget.stopped.clone() {
        if ctx.cfg.resume {
            ctx.note(format!(
                "Resuming the run stopped by {} in iteration {}",
                stopped.cause, stopped.iteration
            ));
            run.budget.stopped = None;
        } else {
            let message = match &stopped.gate {
                Some(gate) if stopped.cause == StopCause::PriorGateStop.name() => format!(
                    "Loop already stopped at gate {gate} in iteration {}",
                    stopped.iteration
                ),
                _ => format!(
                    "Loop already stopped ({}) in iteration {} — pass --resume to reopen it, or --fresh to start a new run",
                    stopped.cause, stopped.iteration
                ),
            };
            ctx.note(message.clone());
            let cause = StopCause::from_name(&stopped.cause).unwrap_or(StopCause::PriorGateStop);
            run.fired.push(Fired::new(cause, message));
            return Ok(Some(Halt::at_entry("the loop has ended")));
        }
    }

    if ctx.cfg.resume {
        let last = run.run_lines.last().cloned();
        match resume::reconcile(ctx, last.as_ref())? {
            Ok(reattached) => run.carried = reattached,
            Err(stop) => {
                run.fired.push(stop);
                return Ok(Some(Halt::at_entry("stopped at a gate")));
            }
        }
    }

    if ctx.paths.stop_request().exists() {
        run.pending.stop_file = true;
        let shown = ctx.rel(&ctx.paths.stop_request());
        run.fired.push(Fired::new(
            StopCause::UserInterrupt,
            format!("Stop requested ({shown} present) — stopping before dispatch"),
        ));
    }
    run.fired.extend(interrupt(ctx));
    let minutes = run.entry_seconds / 60;
    run.fired.extend(stop::budget_on_entry(
        &run.budget,
        minutes,
        ctx.cfg.single_pr(),
    ));
    run.fired.extend(super::windows::on_entry(ctx)?);
    if !run.fired.is_empty() {
        for f in run.fired.clone() {
            ctx.note(f.message);
        }
        return Ok(Some(Halt::at_entry("halted at entry")));
    }
    Ok(None)
}

/// SIGINT or SIGTERM received: the stop before dispatch (#8).
fn interrupt(ctx: &Ctx<'_, '_>) -> Option<Fired> {
    let sig = ctx.interrupts.pending()?;
    Some(Fired::new(
        StopCause::UserInterrupt,
        format!("Interrupted (signal {sig}) — stopping before dispatch"),
    ))
}

/// The backlog (review: the PRs) is read: the pause point `after-backlog`
/// (tests), which a signal ends too, then an interrupt that came since the
/// entry checks — while the tracker was read, or during the pause — stops
/// the tick there as at entry: nothing claimed, nothing dispatched, the
/// halt recorded. Whether it did.
pub(crate) fn after_backlog(ctx: &mut Ctx<'_, '_>, run: &mut Loaded) -> bool {
    let interrupts = ctx.interrupts;
    ctx.cfg
        .crash
        .pause("after-backlog", &|| interrupts.pending().is_some());
    let Some(fired) = interrupt(ctx) else {
        return false;
    };
    ctx.note(fired.message.clone());
    run.fired.push(fired);
    true
}

/// Repeated-failure gates for the last two dispatched iterations of the
/// run; returns the targets to skip, or a stop.
pub(crate) fn repeated_failures(
    ctx: &mut Ctx<'_, '_>,
    run: &mut Loaded,
) -> Result<Result<BTreeSet<String>, Fired>, Failure> {
    let dispatched: Vec<&HistoryLine> = run
        .run_lines
        .iter()
        .filter(|l| {
            matches!(
                l.outcome,
                Some(Outcome::Ok | Outcome::Errored | Outcome::Halted)
            )
        })
        .collect();
    let mut skip = BTreeSet::new();
    let [.., before, last] = dispatched.as_slice() else {
        return Ok(Ok(skip));
    };
    let deferred: BTreeSet<&String> = run.budget.deferred.iter().collect();
    let mut repeated: BTreeMap<String, String> = BTreeMap::new();
    for f in last.failures_this_iter.iter().flatten() {
        let twice = before
            .failures_this_iter
            .iter()
            .flatten()
            .any(|g| g.target == f.target && g.root_cause == f.root_cause);
        if twice && !deferred.contains(&f.target) {
            repeated
                .entry(f.target.clone())
                .or_insert(f.root_cause.clone());
        }
    }
    for (target, cause) in repeated {
        let answer = ctx.ask(Question::repeated_failure(&target, &cause))?;
        match answer.option {
            "skip" => {
                run.budget.deferred.push(target.clone());
                ctx.note(format!(
                    "Deferred {target} for the rest of the run (repeated failure: {cause})"
                ));
                skip.insert(target);
            }
            "retry" => {}
            _ => {
                return Ok(Err(Fired::new(
                    StopCause::RepeatedFailure,
                    format!(
                        "{target} failed twice with: {cause} — stopped at the repeated-failure gate"
                    ),
                )));
            }
        }
    }
    Ok(Ok(skip))
}

/// The 80% gate: one combined question, or nothing.
pub(crate) fn budget_gate(
    ctx: &mut Ctx<'_, '_>,
    run: &mut Loaded,
    projected_new_prs: u64,
) -> Result<Option<Fired>, Failure> {
    let b = &run.budget;
    let single = ctx.cfg.single_pr();
    // Each budget past 80% this tick, and whether the tick brings it to 100%.
    let mut tripped: Vec<Tripped> = Vec::new();
    let mut full: Option<String> = None;
    let mut check = |t: Tripped, projected: f64| {
        if projected >= 0.8 * t.max {
            if projected >= t.max && full.is_none() {
                full = Some(
                    Tripped {
                        dim: t.dim,
                        used: projected,
                        max: t.max,
                    }
                    .phrase(),
                );
            }
            tripped.push(t);
        }
    };
    let next_iteration = b.iterations_used.saturating_add(1) as f64;
    check(
        Tripped {
            dim: Dimension::Iterations,
            used: next_iteration,
            max: b.max_iterations as f64,
        },
        next_iteration,
    );
    if !single {
        let prs = (b.prs_touched.len() as u64 + projected_new_prs) as f64;
        check(
            Tripped {
                dim: Dimension::Prs,
                used: prs,
                max: b.max_prs as f64,
            },
            prs,
        );
    }
    check(
        Tripped {
            dim: Dimension::Minutes,
            used: b.minutes_elapsed as f64,
            max: b.max_minutes as f64,
        },
        b.minutes_elapsed as f64,
    );
    if b.max_dollars > 0.0 {
        // Projected spend of this iteration: the run's average so far.
        let average = if b.iterations_used > 0 {
            b.dollars_estimate / b.iterations_used as f64
        } else {
            0.0
        };
        // Shown as it would be after this tick, like iterations and PRs:
        // the figure that crossed 80% (SPEC-0020's `dollars ($21.00/$25.00)`).
        let projected = b.dollars_estimate + average;
        check(
            Tripped {
                dim: Dimension::Dollars,
                used: projected,
                max: b.max_dollars,
            },
            projected,
        );
    }
    if tripped.is_empty() {
        return Ok(None);
    }
    // SPEC-0020 "100% stop wins over 80% gate": a budget this tick brings
    // to its ceiling stops the loop by itself; the gate is not asked.
    if let Some(phrase) = full {
        ctx.note(format!(
            "Budget gate not asked: this tick brings {phrase} to its ceiling — the 100% stop takes precedence"
        ));
        return Ok(None);
    }
    let answer = ctx.ask(Question::budget_escalation(&tripped))?;
    match answer.option {
        "continue" => Ok(None),
        "raise" => {
            let b = &mut run.budget;
            let mut raised = Vec::new();
            let mut ignored = Vec::new();
            for (dim, value) in &answer.raises {
                if single && *dim == Dimension::Prs {
                    ignored.push(format!(
                        "{}={value} (PRs are not budgeted in single-PR mode)",
                        dim.field()
                    ));
                } else if *value > b.ceiling(*dim) {
                    b.set_ceiling(*dim, *value);
                    raised.push(format!("{}={value}", dim.field()));
                } else {
                    ignored.push(format!(
                        "{}={value} (not above the current {})",
                        dim.field(),
                        b.ceiling(*dim)
                    ));
                }
            }
            if !raised.is_empty() {
                ctx.note(format!("Raised ceiling(s): {}", raised.join(", ")));
            }
            if !ignored.is_empty() {
                ctx.note(format!("Ignored: {}", ignored.join(", ")));
            }
            Ok(None)
        }
        _ => Ok(Some(Fired::new(
            StopCause::PriorGateStop,
            "Gate budget-escalation answered stop",
        ))),
    }
}

/// A stop before dispatch: commit, record a `halted` line, report.
pub(crate) fn halt(
    ctx: &mut Ctx<'_, '_>,
    mut run: Loaded,
    halt: Halt,
) -> Result<Concluded, Failure> {
    super::claims::release_unused(ctx);
    ctx.cfg.crash.hit("after-gates");
    load::commit(ctx, &mut run.pending, &run.budget, run.iteration)?;
    if let Some(note) = halt.skipped.clone() {
        return skip(ctx, run, halt, note);
    }
    let context = halt.context.unwrap_or_else(|| match ctx.cfg.skill {
        Skill::Work => "Backlog: not examined".to_owned(),
        Skill::Review => match ctx.cfg.pr {
            Some(n) => format!("Tracked PR: #{n}"),
            None => "Tracked PRs: not examined".to_owned(),
        },
    });
    let started = ctx.started;
    let gates = ctx.gates.clone();
    record::finish_budget(
        ctx,
        &mut run.budget,
        run.iteration,
        started,
        &run.fired,
        &gates,
    );
    let shown = Shown {
        context,
        plan: format!("none — {}", halt.plan),
        concurrency: run.concurrency.clone(),
        outcome: format!(
            "halted — {}",
            run.fired.first().map_or("", |f| f.message.as_str())
        ),
    };
    let mut line = Record::new(
        ctx,
        run.iteration,
        Outcome::Halted,
        BudgetSnapshot::from(&run.budget),
    );
    line.gates = &gates;
    line.fired = &run.fired;
    line.tracked = run.carried.clone();
    line.worktrees = run.carried_worktrees.clone();
    line.backlog = halt.backlog;
    record::append(ctx, line)?;
    record::save_budget(ctx, &run.budget)?;
    ctx.show(
        &shown,
        &Ending {
            iteration: run.iteration,
            started,
            budget: Some(&run.budget),
            fired: &run.fired,
        },
    )?;
    ctx.release(Some(run.held));
    Ok(Concluded {
        code: exit::LOOP_ENDED,
        iteration: run.iteration,
        outcome: Outcome::Halted,
        fired: run.fired,
        budget: Some(run.budget),
        skipped_for_claims: false,
    })
}

/// A tick that found nothing it could claim: like a lock skip, a
/// `skipped_lock` line, no counter advanced, nothing spent, the lock
/// released. Unlike a lock skip it held the lock and wrote `budget.json`
/// (its time, whatever loading recovered, the gates it asked): its line
/// is written under the lock (`lock_held: true`) with that budget, so the
/// next tick reconciles against it and compares the backlog with what it
/// saw, instead of repairing the budget and asking the same drift again.
fn skip(
    ctx: &mut Ctx<'_, '_>,
    mut run: Loaded,
    halt: Halt,
    note: String,
) -> Result<Concluded, Failure> {
    ctx.note(note.clone());
    let started = ctx.started;
    let gates = ctx.gates.clone();
    record::finish_budget(ctx, &mut run.budget, run.iteration, started, &[], &gates);
    let shown = Shown {
        context: halt.context.unwrap_or_default(),
        plan: format!("none — {}", halt.plan),
        concurrency: run.concurrency.clone(),
        outcome: format!("skipped — {note}; no counter advanced"),
    };
    let mut line = Record::new(
        ctx,
        run.iteration,
        Outcome::SkippedLock,
        BudgetSnapshot::from(&run.budget),
    );
    line.gates = &gates;
    line.tracked = run.carried.clone();
    line.worktrees = run.carried_worktrees.clone();
    line.backlog = halt.backlog;
    record::append(ctx, line)?;
    record::save_budget(ctx, &run.budget)?;
    ctx.show(
        &shown,
        &Ending {
            iteration: run.iteration,
            started,
            budget: Some(&run.budget),
            fired: &[],
        },
    )?;
    ctx.release(Some(run.held));
    Ok(Concluded {
        code: exit::TICK_DONE,
        iteration: run.iteration,
        outcome: Outcome::SkippedLock,
        fired: Vec::new(),
        budget: Some(run.budget),
        skipped_for_claims: true,
    })
}
