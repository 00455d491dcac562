//! Step 8 of the tick: the history line (the write-ahead log, appended and
//! fsynced first) and the budget checkpoint after it (history
//! wins; budget.json may lag it by one tick after a crash:
//! `docs/src/architecture.md`, "History wins").

use jiff::Timestamp;

use super::Failure;
use super::ctx::Ctx;
use crate::os::clock;
use crate::rules::stop::{self, Fired, StopCause};
use crate::state::budget::{Budget, RunStop};
use crate::state::history::{
    self, ActiveWorktree, BudgetSnapshot, Chain, FailureRecord, GateRecord, HistoryLine, Outcome,
    TickRecord, TrackedPr,
};
use crate::state::paths::Skill;
use crate::world::notify::{Notice, RunStopped};

/// Per-iteration deltas recorded on the line.
#[derive(Debug, Default, Clone)]
pub(crate) struct Delta {
    pub prs: Vec<String>,
    pub agents: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub dollars: f64,
    /// The agent's own estimate of this tick's spend, when it gave one.
    pub agent_cost: Option<f64>,
    pub comments: u64,
    pub merges: u64,
}

/// One history line's worth of a tick, before its skill and end time.
/// [`Record::new`] holds the defaults; each caller sets what its tick did
/// besides.
#[derive(Debug)]
pub(crate) struct Record<'a> {
    pub iteration: u64,
    pub started_at: String,
    pub outcome: Outcome,
    pub gates: &'a [GateRecord],
    pub fired: &'a [Fired],
    pub snapshot: BudgetSnapshot,
    pub delta: Delta,
    pub tracked: Vec<TrackedPr>,
    pub worktrees: Vec<ActiveWorktree>,
    pub failures: Vec<FailureRecord>,
    /// Work: the workable set seen at entry.
    pub backlog: Option<Vec<u64>>,
    /// Work: the issues handed to the skill.
    pub dispatched: Vec<u64>,
    pub chain: Chain,
    pub error: Option<String>,
    /// What ended the turn before the work did.
    pub turn_ended_by: Option<String>,
    /// Written under the lock (false for skipped ticks).
    pub lock_held: bool,
}

impl<'a> Record<'a> {
    /// The line of a tick begun when this one began, under the lock, that
    /// asked no gate, fired no stop, spent nothing, carried no PR or
    /// worktree, saw no backlog, failed nothing and ran no chain.
    pub(crate) fn new(
        ctx: &Ctx<'_, '_>,
        iteration: u64,
        outcome: Outcome,
        snapshot: BudgetSnapshot,
    ) -> Self {
        Record {
            iteration,
            started_at: clock::format(ctx.started),
            outcome,
            gates: &[],
            fired: &[],
            snapshot,
            delta: Delta::default(),
            tracked: Vec::new(),
            worktrees: Vec::new(),
            failures: Vec::new(),
            backlog: None,
            dispatched: Vec::new(),
            chain: no_chain(ctx),
            error: None,
            turn_ended_by: None,
            lock_held: true,
        }
    }

    /// The line of the iteration `journal` opened: its gates, the backlog
    /// it saw and the issues it dispatched, as `new` says otherwise.
    pub(crate) fn of_journal(
        ctx: &Ctx<'_, '_>,
        journal: &'a crate::state::journal::Journal,
        outcome: Outcome,
        snapshot: BudgetSnapshot,
    ) -> Self {
        let mut line = Self::new(ctx, journal.iteration, outcome, snapshot);
        line.gates = &journal.gates;
        line.backlog = journal.backlog_snapshot.clone();
        line.dispatched = journal.request.issues.iter().map(|i| i.number).collect();
        line
    }

    /// The line as written, for `skill`, ended at `ended_at`. The issues
    /// dispatched are recorded only beside a backlog snapshot.
    pub(crate) fn line(self, skill: Skill, ended_at: String) -> TickRecord {
        TickRecord {
            iteration: self.iteration,
            skill: skill.as_str().to_owned(),
            started_at: self.started_at,
            ended_at,
            outcome: self.outcome,
            prs_touched_this_iter: self.delta.prs,
            agents_dispatched_this_iter: self.delta.agents,
            tokens_in_this_iter: self.delta.tokens_in,
            tokens_out_this_iter: self.delta.tokens_out,
            dollars_this_iter: self.delta.dollars,
            agent_cost_usd_this_iter: self.delta.agent_cost,
            comments_pushed_this_iter: self.delta.comments,
            merges_attempted_this_iter: self.delta.merges,
            budget_snapshot: self.snapshot,
            tracked_prs: self.tracked,
            active_worktrees: self.worktrees,
            gates: self.gates.to_vec(),
            stop_conditions_fired: self
                .fired
                .iter()
                .map(|f| f.cause.name().to_owned())
                .collect(),
            failures_this_iter: self.failures,
            issues_dispatched_this_iter: self.backlog.as_ref().map(|_| self.dispatched),
            backlog_snapshot: self.backlog,
            chain: self.chain,
            lock_held: self.lock_held,
            error: self.error,
            turn_ended_by: self.turn_ended_by,
        }
    }
}

/// The chain fields' shape for a line that ran no chain.
pub(crate) fn no_chain(ctx: &Ctx<'_, '_>) -> Chain {
    match ctx.cfg.skill {
        Skill::Work => Chain::NotInvoked,
        Skill::Review => Chain::NotApplicable,
    }
}

/// Appends the tick's history line.
pub(crate) fn append(ctx: &mut Ctx<'_, '_>, r: Record<'_>) -> Result<(), Failure> {
    let lock_held = r.lock_held;
    let mut line: HistoryLine = r.line(ctx.cfg.skill, clock::format(ctx.now())).into();
    if let Some(claims) = ctx.claim_log.value() {
        line.extra.insert("claims".into(), claims);
    }
    line.usage_windows = ctx.window_log.take();
    if lock_held {
        line.notifications = ctx.deliver();
    }
    // Everything on the line is redacted: root causes and summaries quote
    // what skills and trackers said.
    let line = ctx.redacted(line);
    let path = ctx.paths.history();
    // Ticks without the lock append here too, and under the history's own
    // lock a torn tail is a dead writer's remnant: whoever appends first
    // moves it aside, so no tick's line is ever dropped for it.
    let (done, foreign) =
        history::append_witnessed(&ctx.paths, &line, &clock::format_compact(ctx.now()))?;
    if let Some(foreign) = &foreign {
        let note = history::foreign_note(
            std::path::Path::new(&ctx.rel(&path)),
            &history::Foreign {
                lines: foreign.lines,
                sidecar: std::path::PathBuf::from(ctx.rel(&foreign.sidecar)),
            },
        );
        ctx.note(note);
    }
    if let Some((torn, sidecar)) = &done.repaired {
        let note = history::torn_note(
            std::path::Path::new(&ctx.rel(&path)),
            torn,
            std::path::Path::new(&ctx.rel(sidecar)),
        );
        ctx.note(note);
    }
    if done.created {
        let shown = ctx.rel(&path);
        ctx.note(format!(
            "Created {shown}: it may hold sensitive content (gate questions and answers can quote issue text, branch names and free-text answers). Treat it like .env — keep it gitignored (.sdd/ is) and never upload it without explicit opt-in."
        ));
    }
    if lock_held {
        ctx.cfg.crash.hit("after-history");
    }
    Ok(())
}

/// Closes the budget for this tick: elapsed time and, on a stop, the
/// run's recorded end — once: a tick of a run already ended re-reports
/// its stop and leaves `stopped` (cause and iteration of the run's end)
/// as it was.
pub(crate) fn finish_budget(
    ctx: &mut Ctx<'_, '_>,
    budget: &mut Budget,
    iteration: u64,
    started: Timestamp,
    fired: &[Fired],
    gates: &[GateRecord],
) {
    let end = ctx.now();
    let tick_secs = (end.as_second() - started.as_second()).max(0) as u64;
    let secs = budget.elapsed_seconds() + tick_secs;
    budget.set_elapsed_seconds(secs);
    budget.last_tick_ended_at = Some(clock::format(end));
    if budget.stopped.is_none()
        && let Some(f) = fired.first()
        && f.cause != StopCause::LockContention
    {
        let gate = gates
            .iter()
            .rev()
            .find(|g| g.answer.starts_with("stop"))
            .map(|g| g.name.clone());
        budget.stopped = Some(RunStop {
            cause: f.cause.name().to_owned(),
            iteration,
            gate: if f.cause == StopCause::PriorGateStop {
                gate
            } else {
                None
            },
        });
        ctx.notify(run_stopped(ctx.cfg.skill, f, budget));
    }
}

/// The notification of a run's end: its stop condition and the final
/// report's figures.
fn run_stopped(skill: Skill, fired: &Fired, b: &Budget) -> Notice {
    let mut figures = vec![
        format!("Iterations: {}/{}", b.iterations_used, b.max_iterations),
        format!("PRs touched: {}/{}", b.prs_touched.len(), b.max_prs),
        format!("Minutes: {}/{}", b.minutes_elapsed, b.max_minutes),
    ];
    figures.push(if b.max_dollars > 0.0 {
        format!(
            "Dollars: {}/{}",
            stop::dollars(b.dollars_estimate),
            stop::dollars(b.max_dollars)
        )
    } else {
        format!(
            "Dollars: {} (no cost ceiling)",
            stop::dollars(b.dollars_estimate)
        )
    });
    Notice::RunStopped(RunStopped {
        skill: skill.as_str().to_owned(),
        cause: fired.cause.name().to_owned(),
        message: fired.message.clone(),
        figures,
    })
}

/// Rewrites budget.json (the checkpoint after the history line).
pub(crate) fn save_budget(ctx: &Ctx<'_, '_>, budget: &Budget) -> Result<(), Failure> {
    budget.save(ctx.paths.budget())?;
    ctx.cfg.crash.hit("after-budget");
    Ok(())
}
