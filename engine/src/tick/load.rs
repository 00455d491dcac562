//! Step 2 of the tick, under the lock: load the run's state and decide
//! what must be repaired — without writing anything yet.
//!
//! History's tail (a torn last line is queued for repair), `budget.json`
//! (validated) reconciled against the last line written under the lock
//! (history wins), the ceilings of this command line applied, and an
//! interrupted iteration's journal turned into its recovered line. All of
//! it is queued in [`Pending`] and written by [`commit`] only once every
//! gate has been answered, so a tick that cannot get an answer changes
//! nothing.

use std::path::Path;
use std::time::{Duration, Instant};

use super::Failure;
use super::account;
use super::acquire::Acquired;
use super::ctx::Ctx;
use super::record::Record;
use crate::os::clock;
use crate::os::liveness::{GroupSignal, SignalZero};
use crate::rules::rates;
use crate::rules::stop::{Fired, StopCause};
use crate::state::budget::{Budget, RunStop};
use crate::state::exchange::{Exchange, fold_events};
use crate::state::files;
use crate::state::history::{
    self, ActiveWorktree, BudgetSnapshot, FailureRecord, HistoryLine, Outcome, PrState, TornTail,
    TrackedPr,
};
use crate::state::journal::Journal;
use crate::state::lock::HeldLock;
use crate::state::reconcile;

/// Queued by loading, applied at the commit point.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    torn: Option<TornTail>,
    /// A recovered interrupted iteration: its line, its exchange dir, and
    /// the note that reports it.
    recovered: Option<(HistoryLine, Exchange, String)>,
    /// A journal whose iteration was already recorded.
    stale_journal: bool,
    /// Consume the stop-request file.
    pub stop_file: bool,
    /// Issues to comment on (`escalate`).
    pub escalate: Vec<u64>,
    /// The run starts with this tick and prices with the built-in table.
    built_in_notice: bool,
}

/// The run as a tick holding the lock finds it.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub held: HeldLock,
    pub concurrency: String,
    pub iteration: u64,
    pub budget: Budget,
    /// The run's lines, newest last (the recovered one included).
    pub run_lines: Vec<HistoryLine>,
    pub pending: Pending,
    /// Open PRs the run tracks, carried into this tick's line.
    pub carried: Vec<TrackedPr>,
    /// Worktrees the run left on disk, carried likewise (never cleaned).
    pub carried_worktrees: Vec<ActiveWorktree>,
    /// Elapsed seconds of the run at this tick's entry.
    pub entry_seconds: u64,
    /// Stop conditions fired so far this tick.
    pub fired: Vec<Fired>,
}

fn foreign_note(ctx: &Ctx<'_, '_>, history_path: &Path, foreign: &history::Foreign) -> String {
    history::foreign_note(
        Path::new(&ctx.rel(history_path)),
        &history::Foreign {
            lines: foreign.lines,
            sidecar: std::path::PathBuf::from(ctx.rel(&foreign.sidecar)),
        },
    )
}

/// Fails closed when the loop's files are behind what its witness says
/// the engine recorded ([`crate::state::witness`]): deleted, truncated or
/// rolled back, the loop would otherwise start again with its budgets
/// full. `--fresh` starts a new run on purpose; `--resume` continues the
/// recorded one from history when history is whole.
fn went_backwards(
    ctx: &Ctx<'_, '_>,
    w: &crate::state::witness::Witness,
    budget: Option<&Budget>,
    last: Option<&HistoryLine>,
) -> Result<(), Failure> {
    if ctx.cfg.fresh || w.iteration == 0 {
        return Ok(());
    }
    if let Some(b) = budget
        && w.run_started_at
            .as_deref()
            .is_some_and(|r| r != b.started_at)
    {
        // Another run than the witnessed one: started on purpose.
        return Ok(());
    }
    let in_history = last.and_then(|l| l.iteration).unwrap_or(0);
    let in_budget = budget.map_or(0, |b| b.iterations_used);
    let budget_path = ctx.rel(ctx.paths.budget());
    let history_path = ctx.rel(&ctx.paths.history());
    let mut missing = Vec::new();
    if budget.is_none() {
        missing.push(format!("{budget_path} is missing"));
    } else if in_budget < w.iteration {
        missing.push(format!("{budget_path} says {in_budget} iteration(s) used"));
    }
    let history_behind = in_history < w.iteration;
    if history_behind {
        missing.push(match last {
            None if !ctx.paths.history().exists() => format!("{history_path} is missing"),
            None => format!("{history_path} holds no iteration"),
            Some(_) => format!("{history_path} ends at iteration {in_history}"),
        });
    }
    let behind = budget.is_none() || in_budget.max(in_history) < w.iteration;
    if !behind || (budget.is_none() && ctx.cfg.resume && !history_behind) {
        return Ok(());
    }
    let witness = crate::state::witness::path(&ctx.paths);
    let resume = if history_behind {
        String::new()
    } else {
        " or continue the recorded run from history with --resume,".to_owned()
    };
    Err(Failure::new(
        crate::exit::DATA,
        format!(
            "the {skill} loop's state went backwards: {} — but the engine recorded iteration {} of this run (witness {}). Nothing was started: a loop is never restarted silently",
            missing.join(" and "),
            w.iteration,
            ctx.rel(&witness),
            skill = ctx.paths.skill,
        ),
        format!(
            "restore the files from a backup,{resume} or start a new loop on purpose with --fresh (from a shell or cron `sdd-loop {skill} --loop --fresh`; in Claude Code the loop prompt `/sdd:{skill} --loop --fresh`); earlier history is kept",
            skill = ctx.paths.skill,
        ),
    ))
}

/// Removes what writers killed mid-write left (their temporary files),
/// under the lock, in the loop's state and the clone's own: nothing else
/// ever would.
fn sweep_temporaries(ctx: &mut Ctx<'_, '_>) {
    let probe = ctx.probe;
    let alive = |pid: u32| {
        !matches!(
            probe.signal_zero(pid),
            crate::os::liveness::SignalZero::NoSuchProcess
        )
    };
    let dirs = [
        ctx.paths.dir.clone(),
        crate::state::witness::dir(&ctx.cfg.root),
    ];
    for dir in dirs {
        for path in crate::state::files::sweep_temporaries(&dir, alive) {
            let shown = ctx.rel(&path);
            ctx.note(format!(
                "Removed {shown}, a temporary file a killed process left"
            ));
        }
    }
}

/// Loads state for a tick that holds the lock.
pub(crate) fn load(ctx: &mut Ctx<'_, '_>, acquired: Acquired) -> Result<Loaded, Failure> {
    let Acquired {
        mut held,
        concurrency,
    } = acquired;
    let mut pending = Pending::default();
    sweep_temporaries(ctx);
    let (witness, tail) = read_history(ctx)?;
    pending.torn = tail.torn.clone();
    let authoritative: Vec<HistoryLine> = tail
        .lines
        .iter()
        .map(|l| l.line.clone())
        .filter(HistoryLine::authoritative)
        .collect();
    let budget_on_disk = Budget::load(ctx.paths.budget())?;
    let last = authoritative.last();
    if let Some(w) = &witness {
        went_backwards(ctx, w, budget_on_disk.as_ref(), last)?;
    }
    let recon = reconcile::reconcile(budget_on_disk, last, ctx.cfg.resume);
    if let Some(note) = recon.note(&ctx.rel(ctx.paths.budget())) {
        ctx.note(note);
    }
    let fresh_run = ctx.cfg.fresh || recon.budget.is_none();
    let mut budget = match (&recon.budget, ctx.cfg.fresh) {
        (Some(b), false) => b.clone(),
        _ => new_run(ctx, recon.budget.is_some(), &authoritative),
    };
    // A stop recorded by a tick that did not hold the lock (force-unlock
    // answered stop, a wait interrupted or out of time) could not write
    // budget.json; history carries it, and the run is as ended as after any
    // other stop (SPEC-0020 "Prior-Gate-Stop Honor").
    if budget.stopped.is_none() && !fresh_run {
        budget.stopped = lockless_stop(&tail, &budget);
    }
    // Once per run: shown when the run's first tick commits.
    pending.built_in_notice = fresh_run
        && ctx.inputs.rates.source == rates::RateSource::BuiltIn
        && budget.max_dollars > 0.0;
    if !fresh_run {
        for change in budget.apply_flags(&ctx.cfg.ceilings, ctx.cfg.resume) {
            ctx.note(change.to_string());
        }
    }
    let mut run_lines: Vec<HistoryLine> = if fresh_run {
        Vec::new()
    } else {
        authoritative
            .iter()
            .filter(|l| {
                l.budget_snapshot
                    .as_ref()
                    .and_then(|s| s.run_started_at.as_deref())
                    .is_none_or(|r| r == budget.started_at)
            })
            .cloned()
            .collect()
    };
    recover_interrupted(ctx, &tail, &mut budget, &mut run_lines, &mut pending)?;
    reprice(ctx, &mut budget);
    let iteration = budget.iterations_used.saturating_add(1);
    ctx.answerer.set_iteration(iteration);
    held.set_iteration(iteration)?;
    let entry_seconds = count_gap(ctx, &mut budget, &run_lines);
    // Open PRs the run tracks carry from line to line, so whatever the
    // last line is, resume finds every PR still in flight.
    let latest = run_lines.last();
    let carried = latest
        .and_then(|l| l.tracked_prs.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.state_at_end == PrState::Open)
        .collect();
    let carried_worktrees = latest
        .and_then(|l| l.active_worktrees.clone())
        .unwrap_or_default();
    Ok(Loaded {
        held,
        concurrency,
        iteration,
        budget,
        run_lines,
        pending,
        carried,
        carried_worktrees,
        entry_seconds,
        fired: Vec::new(),
    })
}

/// History's witness and tail: lines the engine did not write set aside
/// first, then enough of the end to hold the run's last two lines
/// written under the lock (drift and repeated failure look at two),
/// however many skipped ticks were appended after them.
fn read_history(
    ctx: &mut Ctx<'_, '_>,
) -> Result<(Option<crate::state::witness::Witness>, history::Tail), Failure> {
    let history_path = ctx.paths.history();
    // Lines the engine did not write never count: moved aside before
    // anything is read (a repair, like a torn line's).
    let (witness, foreign) =
        history::set_aside_foreign(&ctx.paths, &clock::format_compact(ctx.now()))?;
    if let Some(foreign) = &foreign {
        let note = foreign_note(ctx, &history_path, foreign);
        ctx.note(note);
    }
    let tail = history::read_tail_held(&history_path, 2)?;
    Ok((witness, tail))
}

/// A new run's budget: the ceilings of this command line, started a
/// second after the latest run in history if need be. `replacing`: a
/// run is recorded, and `--fresh` starts another.
fn new_run(ctx: &mut Ctx<'_, '_>, replacing: bool, authoritative: &[HistoryLine]) -> Budget {
    if ctx.cfg.fresh && replacing {
        ctx.note("Starting a fresh run (--fresh): budgets reset; earlier history is kept");
    }
    let start = new_run_start(ctx.started, authoritative);
    if start != ctx.started {
        ctx.note(format!(
            "The new run's start is recorded as {}, a second after the latest run in history began: runs are told apart by their start",
            clock::format(start)
        ));
    }
    let mut started = Budget::start(
        &clock::format(start),
        ctx.cfg.ceilings.resolve(),
        ctx.inputs.rates.source.label(),
    );
    started.ceiling_flags = Some(ctx.cfg.ceilings);
    started
}

/// An interrupted iteration: its spend recovered before anything else,
/// unless history already holds it or it belongs to another run.
fn recover_interrupted(
    ctx: &mut Ctx<'_, '_>,
    tail: &history::Tail,
    budget: &mut Budget,
    run_lines: &mut Vec<HistoryLine>,
    pending: &mut Pending,
) -> Result<(), Failure> {
    let Some(journal) = Journal::load(&ctx.paths.inflight())? else {
        return Ok(());
    };
    let lines: Vec<HistoryLine> = tail.lines.iter().map(|l| l.line.clone()).collect();
    // A recorded iteration's skill had exited before its line was
    // written: the group its journal names is gone — or, after a reboot,
    // somebody else's — and is left alone. Any other journal's skill (one
    // of another run too) is stopped.
    if !lines.iter().any(|l| journal.recorded_by(l))
        && let Some(note) = stop_orphan(ctx, &journal)
    {
        ctx.note(note);
    }
    if !journal.unrecorded_in(&lines, &budget.started_at) {
        pending.stale_journal = true;
    } else {
        let (line, exchange, note) = recover(ctx, &journal, budget)?;
        // The recovered iteration is the run's latest: resume and the
        // gates look at it like any recorded line.
        run_lines.push(line.clone());
        pending.recovered = Some((line, exchange, note));
    }
    Ok(())
}

/// Rates may have changed since the last tick: dollars are recomputed
/// from the per-model totals — when those account for every token. A
/// checkpoint written without them (the contract's own shape) keeps its
/// dollars, and new spend is added on top.
fn reprice(ctx: &Ctx<'_, '_>, budget: &mut Budget) {
    let cost = ctx.inputs.rates.cost(&budget.tokens_by_model);
    if budget.per_model_totals_complete() {
        budget.dollars_estimate = cost.dollars;
    }
    budget.rate_table_source = cost.rate_table_source();
}

/// The time since the last tick (its end as the checkpoint recorded it,
/// else as its history line did) counts toward the wall clock; returns
/// the seconds elapsed at entry.
fn count_gap(ctx: &Ctx<'_, '_>, budget: &mut Budget, run_lines: &[HistoryLine]) -> u64 {
    let last_end = budget
        .last_tick_ended_at
        .clone()
        .or_else(|| run_lines.iter().rev().find_map(|l| l.ended_at.clone()));
    let gap = match (last_end, ctx.cfg.resume) {
        (Some(end), false) => clock::parse(&end)
            .ok()
            .map(|end| (ctx.started.as_second() - end.as_second()).max(0) as u64)
            .unwrap_or(0),
        _ => 0,
    };
    let entry_seconds = budget.elapsed_seconds() + gap;
    budget.set_elapsed_seconds(entry_seconds);
    entry_seconds
}

/// The wall clock of a killed tick, which saved no budget: from what its
/// journal recorded at its start (the time before it included) to now —
/// the tick and the time since it was killed count as time between ticks
/// do. On `--resume` only to its start: the time since the crash is not
/// counted.
fn count_killed_time(ctx: &Ctx<'_, '_>, journal: &Journal, budget: &mut Budget) {
    let ran = match (ctx.cfg.resume, clock::parse(&journal.started_at)) {
        (false, Ok(start)) => (ctx.now().as_second() - start.as_second()).max(0) as u64,
        _ => 0,
    };
    let at_start = budget.elapsed_seconds().max(journal.seconds_at_start);
    budget.set_elapsed_seconds(at_start.saturating_add(ran));
}

/// A killed tick's skill can outlive it (no parent-death signal on this
/// platform, or a skill that ignores it): stop its recorded process group
/// before the iteration is recovered, so two skills never run at once and
/// whatever it appended after the crash is counted. SIGTERM, then up to
/// `--drain-timeout` to finish, then SIGKILL.
fn stop_orphan(ctx: &Ctx<'_, '_>, journal: &Journal) -> Option<String> {
    let process = journal.skill_process?;
    let probe = ctx.probe;
    // A live leader with another start time means the group id was reused.
    let leader = probe.signal_zero(process.pgid);
    let reused = matches!(leader, SignalZero::Delivered | SignalZero::PermissionDenied)
        && process.start.is_some()
        && probe.start_time(process.pgid).is_some()
        && probe.start_time(process.pgid) != process.start;
    if reused || !probe.group_alive(process.pgid) {
        return None;
    }
    // Its tick alive means this one took the lock from it (`--lock
    // force`), not that it was killed. Asked before the signal: that tick
    // ends as soon as its skill does.
    let why = if matches!(
        crate::os::liveness::check(probe, journal.pid, journal.process_start),
        crate::os::liveness::Liveness::Alive
    ) {
        format!(
            "still running under its tick (pid {}), whose lock this tick took",
            journal.pid
        )
    } else {
        "still running after its tick was killed".to_owned()
    };
    probe.signal_group(process.pgid, GroupSignal::Term);
    let waited = Instant::now();
    while probe.group_alive(process.pgid) && waited.elapsed() < ctx.cfg.drain_timeout {
        std::thread::sleep(Duration::from_millis(20));
    }
    let how = if probe.group_alive(process.pgid) {
        probe.signal_group(process.pgid, GroupSignal::Kill);
        let killed = Instant::now();
        while probe.group_alive(process.pgid) && killed.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        format!(
            "SIGTERM, then SIGKILL after the {}s drain timeout",
            ctx.cfg.drain_timeout.as_secs()
        )
    } else {
        "SIGTERM; it finished".to_owned()
    };
    Some(format!(
        "Stopped the skill of interrupted iteration {} (process group {}), {why}: {how}",
        journal.iteration, process.pgid
    ))
}

/// The stop recorded by a lock-less line after the run's last line written
/// under the lock, if any.
fn lockless_stop(tail: &history::Tail, budget: &Budget) -> Option<RunStop> {
    let last_held = tail.lines.iter().rposition(|l| l.line.authoritative());
    let after = last_held.map_or(0, |i| i.saturating_add(1));
    tail.lines[after..].iter().rev().find_map(|l| {
        let line = &l.line;
        let same_run = line
            .budget_snapshot
            .as_ref()
            .and_then(|s| s.run_started_at.as_deref())
            == Some(budget.started_at.as_str());
        let cause = line
            .stop_conditions_fired
            .as_ref()?
            .iter()
            .filter_map(|c| StopCause::from_name(c))
            .find(|c| *c != StopCause::LockContention)?;
        same_run.then(|| RunStop {
            cause: cause.name().to_owned(),
            iteration: line.iteration.unwrap_or(0),
            gate: (cause == StopCause::PriorGateStop)
                .then(|| {
                    line.gates
                        .iter()
                        .flatten()
                        .rfind(|g| g.answer.starts_with("stop"))
                        .map(|g| g.name.clone())
                })
                .flatten(),
        })
    })
}

/// When a new run starts at `now`: now, unless a run in `lines` began at
/// or after it (a clock that stands still, as in the scenario harness, or a
/// `--fresh` within the second its run began) — then a second after the
/// latest such start. A run's lines and its open iteration are known by the
/// run's start, and the two runs' first iterations would otherwise match
/// the same history line, the new one taken for already recorded.
fn new_run_start(now: jiff::Timestamp, lines: &[HistoryLine]) -> jiff::Timestamp {
    let now_s = clock::parse(&clock::format(now)).unwrap_or(now);
    lines
        .iter()
        .filter_map(|l| l.budget_snapshot.as_ref()?.run_started_at.as_deref())
        .filter_map(|t| clock::parse(t).ok())
        .filter(|t| *t >= now_s)
        .max()
        .and_then(|latest| latest.checked_add(jiff::SignedDuration::from_secs(1)).ok())
        .unwrap_or(now)
}

fn recover(
    ctx: &mut Ctx<'_, '_>,
    journal: &Journal,
    budget: &mut Budget,
) -> Result<(HistoryLine, Exchange, String), Failure> {
    let exchange = Exchange::for_iteration(&ctx.paths, journal.iteration);
    let (mut result, mut source) = match exchange.read_result() {
        Ok(r) => (r, "its result file".to_owned()),
        Err(_) => {
            let events = ctx.read_events(&exchange);
            (fold_events(&events), "its progress events".to_owned())
        }
    };
    if result.prs.is_empty() {
        // An agent speaks no protocol: what it did is found by comparing
        // the world with the snapshot its tick kept.
        match crate::agent::recover(
            &exchange,
            ctx.tracker,
            ctx.git,
            &ctx.cfg.remote,
            &journal.request,
        ) {
            None => {}
            Some(Ok(found)) => {
                result.prs = found.prs;
                result.comments_pushed += found.comments;
                result.merges_attempted += found.merges;
                source.push_str(" and the world compared with the agent's snapshot");
            }
            Some(Err(e)) => source.push_str(&format!(
                " (the PRs the agent opened could not be looked up: {e})"
            )),
        }
    }
    if let Some(found) = super::found::opened_unreported(ctx, journal, &mut result)? {
        source.push_str(&found);
    }
    let account::Verified {
        result, unknown, ..
    } = account::verify_prs(ctx, result)?;
    let single = journal
        .single_pr
        .or_else(|| ctx.cfg.pr.filter(|_| ctx.cfg.single_pr()));
    let delta = account::add(ctx, budget, &result, single);
    budget.iterations_used = budget.iterations_used.max(journal.iteration);
    let tracked = account::merge_tracked(&journal.tracked_prs, &result.prs);
    let worktrees = result
        .worktrees
        .iter()
        .map(|w| ActiveWorktree {
            path: w.path.clone(),
            branch: w.branch.clone(),
            head_sha: w.head_sha.clone(),
            extra: Default::default(),
        })
        .collect();
    let mut failures: Vec<FailureRecord> = result
        .failures
        .iter()
        .map(|f| FailureRecord {
            target: f.target.clone(),
            root_cause: f.root_cause.clone(),
        })
        .chain(unknown.iter().map(|n| FailureRecord {
            target: format!("#{n}"),
            root_cause: format!("reported PR #{n} does not exist on the tracker"),
        }))
        .collect();
    failures.dedup();
    count_killed_time(ctx, journal, budget);
    let ended = clock::format(ctx.now());
    budget.last_tick_ended_at = Some(ended.clone());
    let note = format!(
        "Recovered interrupted iteration {} (pid {}) from {source}: {} in, {} out, PRs [{}] — recorded as errored (interrupted)",
        journal.iteration,
        journal.pid,
        tokens(delta.tokens_in),
        tokens(delta.tokens_out),
        delta.prs.join(", ")
    );
    let mut line = Record::of_journal(
        ctx,
        journal,
        Outcome::Errored,
        BudgetSnapshot::from(&*budget),
    );
    line.started_at = journal.started_at.clone();
    line.delta = delta;
    line.tracked = tracked;
    line.worktrees = worktrees;
    line.failures = failures;
    line.error = Some("interrupted".into());
    let record = line.line(ctx.cfg.skill, ended);
    Ok((record.into(), exchange, note))
}

/// A count of tokens in the right number.
fn tokens(n: u64) -> String {
    format!("{n} {}", if n == 1 { "token" } else { "tokens" })
}

/// Applies what loading queued: from here on the tick changes state.
pub(crate) fn commit(
    ctx: &mut Ctx<'_, '_>,
    pending: &mut Pending,
    budget: &Budget,
    iteration: u64,
) -> Result<(), Failure> {
    if std::mem::take(&mut pending.built_in_notice) {
        ctx.note(rates::BUILT_IN_NOTICE);
    }
    let history_path = ctx.paths.history();
    let stamp = clock::format_compact(ctx.now());
    if let Some(seen) = pending.torn.take()
        && let Some((torn, sidecar)) = history::repair_torn(&history_path, &seen, &stamp)?
    {
        let note = history::torn_note(
            Path::new(&ctx.rel(&history_path)),
            &torn,
            Path::new(&ctx.rel(&sidecar)),
        );
        ctx.note(note);
    }
    if let Some((line, exchange, note)) = pending.recovered.take() {
        let line = ctx.redacted(line);
        let (done, foreign) = history::append_witnessed(&ctx.paths, &line, &stamp)?;
        if let Some(foreign) = &foreign {
            let note = foreign_note(ctx, &history_path, foreign);
            ctx.note(note);
        }
        if let Some((torn, sidecar)) = &done.repaired {
            ctx.note(history::torn_note(
                Path::new(&ctx.rel(&history_path)),
                torn,
                Path::new(&ctx.rel(sidecar)),
            ));
        }
        ctx.note(note);
        let _ = exchange.remove();
    }
    if pending.stop_file {
        files::remove_if_present(&ctx.paths.stop_request())?;
    }
    budget.save(ctx.paths.budget())?;
    // A recovered or stale journal has served its purpose.
    if pending.stale_journal
        || Journal::load(&ctx.paths.inflight())
            .ok()
            .flatten()
            .is_some()
    {
        Journal::remove(&ctx.paths.inflight())?;
    }
    for n in std::mem::take(&mut pending.escalate) {
        if ctx.cfg.dry_run {
            continue;
        }
        let body = format!(
            "Clarification requested (/sdd:{} --loop, iteration {iteration}): this issue's acceptance criteria are missing or unfinished — no `### Acceptance Criteria` section, or it holds TBD/TODO. Please add concrete criteria; the loop leaves the issue alone until then.",
            ctx.cfg.skill
        );
        if let Err(e) = ctx.tracker.comment(n, &body) {
            ctx.note(format!(
                "warning: could not post the escalation comment on #{n}: {e}"
            ));
        }
    }
    ctx.cfg.crash.hit("after-commit");
    Ok(())
}
