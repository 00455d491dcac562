//! The seam between the two halves of a tick: `begin` ends by
//! writing the journal and the exchange directory and leaving the lock held
//! for whoever does the work; `end` starts by adopting that lock from disk
//! and reading the journal back. Nothing else passes between them, so the
//! wrapper tick (both halves in one process) and the in-session tick (two
//! processes, the agent's work in between) crash and recover alike.
//!
//! `end` refuses — changing nothing — when there is no open iteration to
//! end: none was begun, it was already ended, or another tick found its
//! holder dead and recovered it as interrupted.

use super::account::{self, WorkReport};
use super::ctx::Ctx;
use super::load::{self, Loaded};
use super::{Concluded, Failure};
use crate::exit;
use crate::os::clock;
use crate::state::exchange::Exchange;
use crate::state::history::{self, HistoryLine, Outcome, TrackedPr};
use crate::state::journal::Shown;
use crate::state::journal::{Driver, Journal};
use crate::state::lock::{HeldLock, LockRecord};
use crate::state::protocol::{PROTOCOL_VERSION, SkillRequest, SkillResult};

/// What planning hands to the work.
#[derive(Debug)]
pub(crate) struct Dispatch {
    pub request: SkillRequest,
    pub tracked_at_start: Vec<TrackedPr>,
    /// Work: the backlog snapshot taken at entry.
    pub backlog: Option<Vec<u64>>,
    pub shown: Shown,
    pub gate_outcomes: Vec<String>,
}

/// An iteration `begin` opened: its journal and exchange are on disk and
/// the lock is held for its holder.
#[derive(Debug)]
pub struct Opened {
    pub journal: Journal,
    pub exchange: Exchange,
}

/// `begin`'s answer once every gate is answered.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one a tick, moved once: the journal's size costs nothing worth a box"
)]
pub enum Begun {
    /// Work to do: the request is in the exchange directory.
    Work(Opened),
    /// The tick is already recorded (skipped, halted, or nothing selected).
    Concluded(Concluded),
}

/// Commits what loading queued and opens the iteration — or, with nothing
/// selected, records it at once.
pub(crate) fn open(
    ctx: &mut Ctx<'_, '_>,
    mut run: Loaded,
    d: Dispatch,
    driver: Driver,
) -> Result<Begun, Failure> {
    ctx.cfg.crash.hit("after-gates");
    load::commit(ctx, &mut run.pending, &run.budget, run.iteration)?;
    let journal = Journal {
        iteration: run.iteration,
        pid: ctx.me.pid,
        process_start: ctx.me.process_start,
        started_at: clock::format(ctx.started),
        run_started_at: run.budget.started_at.clone(),
        seconds_at_start: run.budget.elapsed_seconds(),
        request: d.request,
        tracked_prs: d.tracked_at_start,
        backlog_snapshot: d.backlog,
        gates: ctx.gates.clone(),
        driver,
        worktrees: run.carried_worktrees,
        shown: d.shown,
        gate_outcomes: d.gate_outcomes,
        single_pr: ctx.cfg.pr.filter(|_| ctx.cfg.single_pr()),
        budget_file: Some(ctx.paths.budget().to_path_buf()),
        claude_md: Some(ctx.cfg.claude_md.clone()),
        skill_process: None,
        claims: ctx.claims.take().filter(|c| !c.held.is_empty()),
        window_ceilings: ctx.cfg.windows.set().collect(),
    };
    if journal.request.issues.is_empty() && journal.request.prs.is_empty() {
        let nothing = SkillResult {
            protocol: PROTOCOL_VERSION,
            ..Default::default()
        };
        return account::finish(
            ctx,
            account::Finishing {
                journal: &journal,
                held: run.held,
                budget: run.budget,
                result: nothing,
                error: None,
                work: &WorkReport::default(),
                empty: true,
                blame: account::Blame::Targets,
            },
        )
        .map(Begun::Concluded);
    }
    // The journal and the request are on disk until the tick ends (longer
    // after a crash): redacted like history.
    let journal = ctx.redacted(journal);
    journal.save(&ctx.paths.inflight())?;
    ctx.cfg.crash.hit("after-journal");
    let exchange = Exchange::for_iteration(&ctx.paths, journal.iteration);
    exchange.prepare(&journal.request)?;
    // The lock stays for the work and `end`: a dead holder is reaped by
    // the next tick, which recovers the iteration from this journal.
    run.held.keep();
    Ok(Begun::Work(Opened { journal, exchange }))
}

/// The open iteration's journal and its lock, or why there is none.
///
/// `iteration`: the caller named the iteration it means (`--iteration`).
/// `caller`: the session the caller runs in, when known; without an
/// explicit iteration, only the session that began the iteration may end
/// it — so a session whose iteration another tick recovered cannot end
/// the next one by mistake.
pub(crate) fn adopt(
    ctx: &Ctx<'_, '_>,
    journal: Option<Journal>,
    iteration: Option<u64>,
    caller: Option<u32>,
) -> Result<(Journal, HeldLock), Failure> {
    let skill = ctx.cfg.skill;
    let Some(journal) = journal else {
        return Err(not_open(ctx, iteration, None)?);
    };
    match iteration {
        Some(n) if n != journal.iteration => {
            return Err(not_open(ctx, Some(n), Some(&journal))?);
        }
        Some(_) => {}
        None => {
            if let Some(pid) = caller
                && pid != journal.pid
            {
                return Err(refuse(
                    format!(
                        "the open iteration {} was begun by session pid {}, not by this one (pid {pid})",
                        journal.iteration, journal.pid
                    ),
                    format!(
                        "nothing was changed; to end it anyway, name it: `sdd-loop {skill} end --iteration {}`",
                        journal.iteration
                    ),
                ));
            }
        }
    }
    let record = LockRecord {
        pid: journal.pid,
        iteration: journal.iteration,
        started_at: journal.started_at.clone(),
        skill: skill.to_string(),
        process_start: journal.process_start,
        extra: Default::default(),
    };
    match HeldLock::adopt(&ctx.paths, record)? {
        Ok(held) => Ok((journal, held)),
        Err(found) => {
            let (now, recovers) = match found {
                None => (
                    "no tick holds the lock".to_owned(),
                    format!("the next `sdd-loop {skill} begin`"),
                ),
                // Taken over (`--lock force`): the tick that took the lock
                // recovers the iteration from its journal, now or already.
                Some(Ok(r)) => (
                    format!(
                        "the lock is now held by pid {} (iteration {})",
                        r.pid, r.iteration
                    ),
                    format!(
                        "the tick that took the lock (pid {}), or the next if it stops first,",
                        r.pid
                    ),
                ),
                Some(Err(detail)) => (
                    format!("the lockfile is unreadable ({detail})"),
                    format!("the next `sdd-loop {skill} begin`"),
                ),
            };
            Err(refuse(
                format!(
                    "iteration {} (begun by pid {}) no longer holds the lock: {now}",
                    journal.iteration, journal.pid
                ),
                format!(
                    "nothing was changed by this tick; {recovers} records iteration {} as interrupted, with the spend and PRs its events report",
                    journal.iteration
                ),
            ))
        }
    }
}

/// An `end` interrupted after it appended the history line leaves the
/// journal and the lock behind while its session lives on; run again, it
/// must not count the iteration twice. `None` (the lock released) when the
/// iteration is already recorded; [`complete_recorded`] finishes it.
pub(crate) fn unless_recorded(
    ctx: &mut Ctx<'_, '_>,
    journal: &Journal,
    held: HeldLock,
) -> Result<Option<HeldLock>, Failure> {
    let tail = history::read_tail(&ctx.paths.history(), 64)?;
    let recorded = tail.lines.iter().any(|l| journal.recorded_by(&l.line));
    if !recorded {
        return Ok(Some(held));
    }
    // Finishing needs the lock only until the checkpoint is caught up.
    complete(ctx, journal, &tail)?;
    ctx.release(Some(held));
    Ok(None)
}

/// The checkpoint caught up with the recorded line, the journal removed.
fn complete(ctx: &mut Ctx<'_, '_>, journal: &Journal, tail: &history::Tail) -> Result<(), Failure> {
    let last = tail
        .lines
        .iter()
        .map(|l| &l.line)
        .rfind(|l| l.authoritative());
    let on_disk = crate::state::budget::Budget::load(ctx.paths.budget())?;
    let recon = crate::state::reconcile::reconcile(on_disk, last, false);
    if let Some(b) = &recon.budget {
        b.save(ctx.paths.budget())?;
    }
    Journal::remove(&ctx.paths.inflight())?;
    let _ = Exchange::for_iteration(&ctx.paths, journal.iteration).remove();
    ctx.note(format!(
        "Iteration {} was already recorded (an earlier end stopped after the history line): budget.json caught up, the lock released — nothing counted twice",
        journal.iteration
    ));
    Ok(())
}

/// The answer of an `end` that found its iteration already recorded.
pub(crate) fn complete_recorded(
    ctx: &mut Ctx<'_, '_>,
    journal: &Journal,
) -> Result<Concluded, Failure> {
    let tail = history::read_tail(&ctx.paths.history(), 64)?;
    let line = tail
        .lines
        .iter()
        .map(|l| &l.line)
        .rfind(|l| journal.recorded_by(l));
    let fired: Vec<crate::rules::stop::Fired> = line
        .and_then(|l| l.stop_conditions_fired.clone())
        .unwrap_or_default()
        .iter()
        .filter_map(|name| crate::rules::stop::StopCause::from_name(name))
        .map(|cause| crate::rules::stop::Fired::new(cause, "recorded by the interrupted end"))
        .collect();
    Ok(Concluded {
        code: if fired.is_empty() {
            exit::TICK_DONE
        } else {
            exit::LOOP_ENDED
        },
        iteration: journal.iteration,
        outcome: line.and_then(|l| l.outcome).unwrap_or(Outcome::Ok),
        fired,
        budget: crate::state::budget::Budget::load(ctx.paths.budget())?,
        skipped_for_claims: false,
    })
}

fn refuse(message: String, help: String) -> Failure {
    Failure::new(exit::NOT_OPEN, message, help)
}

/// Why the iteration the caller means is not open: what history says
/// about it (or about the last one). `open`: another iteration is open.
fn not_open(
    ctx: &Ctx<'_, '_>,
    iteration: Option<u64>,
    open: Option<&Journal>,
) -> Result<Failure, Failure> {
    let skill = ctx.cfg.skill;
    let next = match open {
        None => format!("run `sdd-loop {skill} begin --loop` to start the next tick"),
        Some(j) => format!(
            "nothing was changed; iteration {} is open (begun by pid {}) — end it with `sdd-loop {skill} end --iteration {}`",
            j.iteration, j.pid, j.iteration
        ),
    };
    let tail = history::read_tail(&ctx.paths.history(), 64)?;
    let lines: Vec<&HistoryLine> = tail
        .lines
        .iter()
        .map(|l| &l.line)
        .filter(|l| l.authoritative())
        .collect();
    let line = match iteration {
        Some(n) => lines.iter().rev().find(|l| l.iteration == Some(n)).copied(),
        None => lines.last().copied(),
    };
    let lead = match iteration {
        Some(n) => format!("iteration {n} is not open"),
        None => "no iteration is open".to_owned(),
    };
    let Some(line) = line else {
        let what = match iteration {
            Some(_) => format!("{lead}: it was never begun"),
            None => format!("{lead}: no tick of this loop has begun"),
        };
        return Ok(refuse(what, next));
    };
    let n = line.iteration.unwrap_or(0);
    let ended = line.ended_at.clone().unwrap_or_else(|| "?".into());
    let message = if line.outcome == Some(Outcome::Errored)
        && line.error.as_deref() == Some("interrupted")
    {
        format!(
            "{lead}: iteration {n} was recovered as interrupted by another tick at {ended} (its holder was gone, or its lock was forced) — its reported spend and PRs were counted"
        )
    } else {
        format!(
            "{lead}: iteration {n} already ended at {ended} ({})",
            line.outcome.map_or("?", Outcome::as_str)
        )
    };
    Ok(refuse(message, next))
}
