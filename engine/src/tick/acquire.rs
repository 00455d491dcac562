//! Step 1 of the tick: take `{skill}.lock` in the mode `--lock` chose
//! ([`crate::state::lock`] does the exclusive read–check–reap–create), or record
//! why not: a `skipped_lock` line carrying the holder's iteration, no
//! counter advanced (ADR-0028 #9), or a halt (`--resume` against a live
//! holder, a force-unlock answered `stop`, an interrupt while waiting).

use std::time::Duration;

use super::ctx::Ctx;
use super::record::{self, Record};
use super::{Concluded, Failure};
use crate::config::LockChoice;
use crate::exit;
use crate::os::clock;
use crate::rules::gates::Question;
use crate::rules::stop::{Fired, StopCause};
use crate::state::budget::Budget;
use crate::state::history::{self, BudgetSnapshot, HistoryLine, Outcome};
use crate::state::journal::{Journal, Shown};
use crate::state::lock::{self, Denied, ForceDecision, HeldLock, Holder, LockMode};
use crate::state::reconcile;

/// The lock, and the `Concurrency:` line that says how it was had.
#[derive(Debug)]
pub(crate) struct Acquired {
    pub held: HeldLock,
    pub concurrency: String,
}

/// History lines the first guess reads: a run of skipped ticks' lines
/// longer than this leaves the guess to budget.json alone.
const GUESS_LINES: usize = 4;

/// The iteration the lock says until the state is loaded
/// ([`reconcile::next_iteration`]): budget.json alone lags history after a
/// crash between the two, and a tick killed before its load left a lock
/// naming the iteration before its own. What cannot be read here is left
/// to the load, which refuses it with the reason.
fn first_guess(ctx: &Ctx<'_, '_>, budget: Option<&Budget>) -> u64 {
    if ctx.cfg.fresh {
        return 1;
    }
    // The last few lines are enough for a guess (the load reads what it
    // needs under the lock), and cost a fraction of the load's 64.
    let lines: Vec<HistoryLine> = history::read_tail(&ctx.paths.history(), GUESS_LINES)
        .map(|t| t.lines.into_iter().map(|l| l.line).collect())
        .unwrap_or_default();
    let last = lines.iter().rev().find(|l| l.authoritative());
    let recon = reconcile::reconcile(budget.cloned(), last, ctx.cfg.resume);
    let journal = Journal::load(&ctx.paths.inflight()).ok().flatten();
    reconcile::next_iteration(&recon, journal.as_ref(), &lines)
}

/// Takes the lock; `Err(Concluded)` is a tick that ended without it.
pub(crate) fn acquire(ctx: &mut Ctx<'_, '_>) -> Result<Result<Acquired, Concluded>, Failure> {
    let peek_budget = Budget::load(ctx.paths.budget())?;
    let guess = first_guess(ctx, peek_budget.as_ref());
    let started_at = clock::format(ctx.started);

    // `--lock=wait` waits at most for what is left of the wall-clock budget,
    // counted as the entry check will count it: elapsed time plus the gap
    // since the last tick (none on --resume).
    let deadline = {
        let left = peek_budget
            .as_ref()
            .map_or(ctx.cfg.ceilings.resolve().max_minutes * 60, |b| {
                let gap = b
                    .last_tick_ended_at
                    .as_deref()
                    .filter(|_| !ctx.cfg.resume)
                    .and_then(|end| clock::parse(end).ok())
                    .map_or(0, |end| {
                        (ctx.started.as_second() - end.as_second()).max(0) as u64
                    });
                (b.max_minutes * 60).saturating_sub(b.elapsed_seconds() + gap)
            });
        ctx.started_mono + Duration::from_secs(left)
    };
    let mut force_failure: Option<Failure> = None;
    let acquired = {
        let probe = ctx.probe;
        let me = ctx.me;
        let paths = ctx.paths.clone();
        let interrupts = ctx.interrupts;
        let clock = ctx.clock;
        let interrupted = move || interrupts.pending().is_some();
        match ctx.cfg.lock {
            LockChoice::Skip => {
                lock::acquire(&paths, probe, me, guess, &started_at, LockMode::Skip)?
            }
            LockChoice::Wait => {
                let platform = ctx.platform.clone();
                let poll = ctx.cfg.lock_poll;
                let minutes = deadline
                    .saturating_sub(ctx.started_mono)
                    .as_secs()
                    .div_ceil(60);
                let mut waiting = |holder: &Holder| {
                    ctx.note(format!(
                        "Waiting for the lock ({}) for up to {minutes} minute(s), the wall-clock budget left — Ctrl-C stops the wait",
                        holder.held_by(&platform)
                    ));
                };
                lock::acquire(
                    &paths,
                    probe,
                    me,
                    guess,
                    &started_at,
                    LockMode::Wait {
                        poll,
                        deadline,
                        clock,
                        interrupted: &interrupted,
                        waiting: &mut waiting,
                    },
                )?
            }
            LockChoice::Force => {
                let mut decide = |_: &Holder| match ctx.ask(Question::force_unlock()) {
                    Ok(a) => match a.option {
                        "yes" => ForceDecision::Yes,
                        "stop" => ForceDecision::Stop,
                        _ => ForceDecision::No,
                    },
                    Err(f) => {
                        force_failure = Some(f);
                        ForceDecision::No
                    }
                };
                lock::acquire(
                    &paths,
                    probe,
                    me,
                    guess,
                    &started_at,
                    LockMode::Force(&mut decide),
                )?
            }
        }
    };
    if let Some(f) = force_failure {
        return Err(f);
    }
    let (held, how) = match acquired {
        Ok(pair) => pair,
        Err(denied) => return not_acquired(ctx, denied, peek_budget, guess).map(Err),
    };
    let concurrency = match how.note() {
        Some(note) => {
            ctx.note(note.clone());
            format!("lock acquired — {note}")
        }
        None => "lock acquired".to_owned(),
    };
    ctx.cfg.crash.hit("after-lock");
    Ok(Ok(Acquired { held, concurrency }))
}

/// The tick did not get the lock: record a `skipped_lock` line (or, on
/// `--resume` against a live holder, the `lock_contention` stop).
fn not_acquired(
    ctx: &mut Ctx<'_, '_>,
    denied: Denied,
    budget: Option<Budget>,
    guess: u64,
) -> Result<Concluded, Failure> {
    let holder = denied.holder().clone();
    let iteration = match &holder {
        Holder::Alive(r) | Holder::Ambiguous { record: r, .. } => r.iteration,
        Holder::Unreadable { .. } => guess,
    };
    // The block is this tick's, the one after the holder's: "Loop
    // Iteration N" above "Previous iteration N-1 still active" (telemetry
    // reference, "Status Block"). The history line keeps the holder's.
    let header = match &holder {
        Holder::Unreadable { .. } => guess,
        _ => iteration.saturating_add(1),
    };
    let held_by = match (&holder, holder.pid()) {
        (Holder::Unreadable { .. }, _) | (_, None) => "an unreadable lockfile".to_owned(),
        (_, Some(pid)) => format!("pid {pid} (iteration {iteration})"),
    };
    let Refusal { cause, says, how } = refusal(ctx, &denied);
    // The skip note is the `Outcome:` line of the block (telemetry
    // reference, "Status Block"); a halt without the lock states its cause.
    // A force-unlock answered `stop` has had its gate: the block says the
    // halt instead of repeating the answer as a note.
    let outcome_line = if let Denied::ForceStopped(_) = denied {
        format!("halted — {says}; no counter advanced")
    } else {
        ctx.note(says.clone());
        says.clone()
    };
    if let Denied::Held(_) = denied
        && cause.is_none()
        && holder.pid() == Some(ctx.me.pid)
    {
        let skill = ctx.cfg.skill;
        ctx.note(format!(
            "Iteration {iteration} is still open in this session (pid {}): finish its work and run `sdd-loop {skill} end` before the next `begin`",
            ctx.me.pid
        ));
    }
    let outcome = if cause.is_some() {
        Outcome::Halted
    } else {
        Outcome::SkippedLock
    };
    let fired: Vec<Fired> = cause.map(|c| Fired::new(c, says)).into_iter().collect();
    let concurrency = format!("lock held by {held_by} — {how}");
    let shown = Shown {
        context: ctx.not_examined("another tick holds the lock"),
        plan: "none — another tick holds the lock".into(),
        concurrency,
        outcome: outcome_line,
    };
    let snapshot = budget
        .as_ref()
        .map(BudgetSnapshot::from)
        .unwrap_or_default();
    let gates = ctx.gates.clone();
    let started = ctx.started;
    let mut line = Record::new(ctx, iteration, outcome, snapshot);
    line.gates = &gates;
    line.fired = &fired;
    line.lock_held = false;
    record::append(ctx, line)?;
    ctx.show(
        &shown,
        &super::ctx::Ending {
            iteration: header,
            started,
            budget: budget.as_ref(),
            fired: &fired,
        },
    )?;
    let code = if fired.is_empty() {
        exit::TICK_DONE
    } else {
        exit::LOOP_ENDED
    };
    Ok(Concluded {
        code,
        iteration,
        outcome,
        fired,
        budget,
        skipped_for_claims: false,
    })
}

/// Why a tick went without the lock, as its line and block say it.
struct Refusal {
    /// The stop it fires; none for a skip.
    cause: Option<StopCause>,
    /// The cause on the `Outcome:` line, and the stop's message.
    says: String,
    /// The end of the `Concurrency:` line, after "lock held by …".
    how: &'static str,
}

/// One row per way the lock is refused.
fn refusal(ctx: &Ctx<'_, '_>, denied: &Denied) -> Refusal {
    let row = |cause, says: String, how| Refusal { cause, says, how };
    let skip = || denied.holder().skip_note(&ctx.platform);
    match denied {
        Denied::ForceStopped(_) => row(
            Some(StopCause::PriorGateStop),
            "Force-unlock gate answered stop".into(),
            "force-unlock declined with stop",
        ),
        Denied::Held(Holder::Alive(r)) if ctx.cfg.resume => row(
            Some(StopCause::LockContention),
            format!(
                "Resume aborted: lockfile recorded pid {} is still alive. Either wait for the previous run to exit, or pass --lock=force to override.",
                r.pid
            ),
            "resume aborted",
        ),
        Denied::WaitInterrupted(h) => row(
            Some(StopCause::UserInterrupt),
            format!(
                "Interrupted while waiting for the lock ({}) — stopping",
                h.skip_note(&ctx.platform)
            ),
            "waited, interrupted",
        ),
        // SPEC-0020 #9: a wait that outlasts the wall-clock budget fires
        // the wall-clock budget stop.
        Denied::WaitExpired(h) => row(
            Some(StopCause::WallClockBudget),
            format!(
                "Wall-clock budget reached while waiting for the lock: {}",
                h.skip_note(&ctx.platform)
            ),
            "waited until the wall-clock budget ran out",
        ),
        Denied::ForceDeclined(_) => row(None, skip(), "force-unlock declined"),
        Denied::Held(_) => row(None, skip(), "not acquired, no counter advanced"),
    }
}
