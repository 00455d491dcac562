//! One tick of `sdd-loop work|review --loop`: the whole ADR-0028 contract,
//! in the order of DESIGN §3.
//!
//! 1. Acquire `{skill}.lock` ([`crate::lock`]); on contention record a
//!    `skipped_lock` line and stop there.
//! 2. Load state: history tail (a torn line is queued for repair), the
//!    interrupted-iteration journal (queued for recovery), `budget.json`
//!    (validated), reconciled against history (history wins).
//! 3. `--resume` only: re-attach or drift-gate tracked PRs, report
//!    worktrees.
//! 4. Entry stop conditions.
//! 5. Gates, in the fixed order of [`crate::gates::GateName`]. Until every
//!    gate is answered nothing is written: a tick that cannot get an answer
//!    exits 4 having changed nothing.
//! 6. Commit what loading queued, write the journal, run the wrapped skill.
//! 7. Account: counters, deduplicated PRs, dollars from per-model usage;
//!    exit stop conditions.
//! 8. Append the history line, rewrite `budget.json`, print the status
//!    block (and the final report on a stop), release the lock.
//!
//! Every side effect goes through a seam in [`World`], so the decision
//! logic is tested in-process; crash points ([`crate::crash`]) sit between
//! the steps.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use jiff::Timestamp;
use serde_json::json;

use crate::backlog::{self, Backlog};
use crate::budget::{Budget, BudgetError, Dimension, round_dollars};
use crate::claude_md::ClaudeMd;
use crate::clock::{self, Clock};
use crate::config::{LockChoice, TickConfig};
use crate::exchange::{Exchange, fold_events};
use crate::exit;
use crate::files::{self, FileError};
use crate::gates::{Answer, Answerer, GateError, Prompt, Question, Script, Tripped};
use crate::git::{Git, WorktreeState, same_commit};
use crate::history::{
    self, ActiveWorktree, Autofix, BudgetSnapshot, Chain, FailureRecord, GateRecord, HistoryError,
    HistoryLine, Outcome, PrState, TickRecord, TornTail, TrackedPr,
};
use crate::journal::{Journal, JournalError};
use crate::liveness::ProcessProbe;
use crate::lock::{self, Denied, ForceDecision, HeldLock, Holder, Identity, LockMode};
use crate::paths::{Skill, StatePaths};
use crate::protocol::{
    Criteria, IssueAssignment, PROTOCOL_VERSION, PrAssignment, PrReport, SkillRequest, SkillResult,
};
use crate::rates::{self, RateTable};
use crate::reconcile;
use crate::redact::Redactor;
use crate::report::{self, FinalView, StatusView};
use crate::runner::{InterruptKind, Interrupts, RunOutcome, RunSpec, SkillRunner};
use crate::stop::{self, Fired, StopCause};
use crate::tracker::{self, Pull, Tracker, TrackerError};

/// The label that takes a PR out of the review loop (condition #2).
pub const DO_NOT_MERGE: &str = "do-not-merge";

/// The seams a tick acts through.
pub struct World<'a> {
    pub clock: &'a dyn Clock,
    pub probe: &'a dyn ProcessProbe,
    pub me: Identity,
    pub tracker: &'a dyn Tracker,
    pub git: &'a dyn Git,
    pub runner: &'a mut dyn SkillRunner,
    pub prompt: &'a mut dyn Prompt,
    pub interrupts: &'a dyn Interrupts,
    /// stdout: the loop's report (notes, status block, final report), or
    /// with `--json` only the summary line.
    pub out: &'a mut dyn Write,
    /// stderr: diagnostics (`error:` / `help:`), the skill's own output,
    /// and with `--json` the report.
    pub err: &'a mut dyn Write,
    /// The OS name for the ambiguous-liveness warning.
    pub platform: &'a str,
}

impl std::fmt::Debug for World<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("me", &self.me)
            .finish_non_exhaustive()
    }
}

/// A reason to end the tick with an error exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: u8,
    pub message: String,
    pub help: String,
}

impl Failure {
    fn new(code: u8, message: impl Into<String>, help: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            help: help.into(),
        }
    }
}

impl From<FileError> for Failure {
    fn from(e: FileError) -> Self {
        let code = match e {
            FileError::Symlink { .. } | FileError::WrongKind { .. } => exit::DATA,
            FileError::Io { .. } => exit::CANT_WRITE,
        };
        Failure::new(code, e.to_string(), e.help())
    }
}

impl From<lock::LockError> for Failure {
    fn from(e: lock::LockError) -> Self {
        match e {
            lock::LockError::File(f) => f.into(),
            other => Failure::new(
                exit::CANT_WRITE,
                other.to_string(),
                "the lock guard needs a local filesystem that supports flock",
            ),
        }
    }
}

impl From<BudgetError> for Failure {
    fn from(e: BudgetError) -> Self {
        match e {
            BudgetError::File(f) => f.into(),
            other => Failure::new(
                exit::DATA,
                other.to_string(),
                "the file was left exactly as it was",
            ),
        }
    }
}

impl From<HistoryError> for Failure {
    fn from(e: HistoryError) -> Self {
        let help = e.help();
        match e {
            HistoryError::File(f) => f.into(),
            other => Failure::new(exit::DATA, other.to_string(), help),
        }
    }
}

impl From<JournalError> for Failure {
    fn from(e: JournalError) -> Self {
        match e {
            JournalError::File(f) => f.into(),
            other => Failure::new(
                exit::DATA,
                other.to_string(),
                "move the journal aside to continue; the interrupted iteration's spend will then not be recovered",
            ),
        }
    }
}

impl From<TrackerError> for Failure {
    fn from(e: TrackerError) -> Self {
        let code = if e == TrackerError::NotConfigured {
            exit::USAGE
        } else {
            exit::UNAVAILABLE
        };
        Failure::new(code, e.to_string(), e.help())
    }
}

impl From<crate::git::GitError> for Failure {
    fn from(e: crate::git::GitError) -> Self {
        Failure::new(
            exit::UNAVAILABLE,
            e.to_string(),
            "check that the project is a git clone and the remote is reachable (--remote)",
        )
    }
}

/// A tick's answer: its exit code and the `--json` summary.
#[derive(Debug, Clone, PartialEq)]
pub struct TickResult {
    pub code: u8,
    pub summary: serde_json::Value,
}

/// What the inputs outside `.sdd/loop` say.
struct Inputs {
    rates: RateTable,
    redactor: Redactor,
    agents: BTreeSet<String>,
}

fn load_inputs(cfg: &TickConfig) -> Result<Inputs, Failure> {
    let md = ClaudeMd::load(&cfg.claude_md).map_err(|e| {
        Failure::new(
            exit::DATA,
            format!("cannot read {}: {e}", cfg.claude_md.display()),
            "pass --claude-md PATH, or make the file readable",
        )
    })?;
    let rates = RateTable::from_claude_md(&md)
        .map_err(|e| Failure::new(exit::DATA, e.to_string(), e.help()))?;
    let redactor = Redactor::from_claude_md(&md)
        .map_err(|e| Failure::new(exit::DATA, e.to_string(), e.help()))?;
    let agents = md.agent_logins().into_iter().collect();
    Ok(Inputs {
        rates,
        redactor,
        agents,
    })
}

/// Runs one tick. Never panics on bad state: every failure becomes an exit
/// code with an `error:` and a `help:` line on stderr.
pub fn run(cfg: &TickConfig, world: &mut World<'_>) -> TickResult {
    let prepared = match &cfg.answers_file {
        None => Ok(Script::default()),
        Some(path) => Script::load(path).map_err(|e| {
            Failure::new(
                exit::DATA,
                e.to_string(),
                "each entry is `- gate: NAME` and `answer: OPTION`, optionally with `match: TEXT` and `iteration: N`",
            )
        }),
    }
    .and_then(|script| Ok((script, load_inputs(cfg)?)));
    let (code, summary, failure) = match prepared {
        Err(f) => (f.code, failure_summary(cfg, &f), Some(f)),
        Ok((script, inputs)) => {
            let mut tick = Tick::new(cfg, world, inputs, script);
            match tick.run() {
                Ok(code) => (code, tick.summary(code), None),
                Err(f) => (f.code, failure_summary(cfg, &f), Some(f)),
            }
        }
    };
    if let Some(f) = failure {
        let _ = writeln!(world.err, "error: {}", f.message);
        if !f.help.is_empty() {
            let _ = writeln!(world.err, "help: {}", f.help);
        }
    }
    if cfg.json {
        let _ = writeln!(world.out, "{summary}");
    }
    let _ = world.out.flush();
    TickResult { code, summary }
}

fn failure_summary(cfg: &TickConfig, f: &Failure) -> serde_json::Value {
    json!({"skill": cfg.skill.as_str(), "exit_code": f.code, "error": f.message, "help": f.help})
}

/// What one tick did to show in its report.
#[derive(Debug, Default)]
struct Shown {
    context: String,
    plan: String,
    concurrency: String,
    outcome: String,
}

/// Per-iteration deltas recorded on the line.
#[derive(Debug, Default, Clone)]
struct Delta {
    prs: Vec<String>,
    agents: u64,
    tokens_in: u64,
    tokens_out: u64,
    dollars: f64,
    comments: u64,
    merges: u64,
}

/// Queued by loading, applied at the commit point.
#[derive(Debug, Default)]
struct Pending {
    torn: Option<TornTail>,
    /// A recovered interrupted iteration: its line, and its exchange dir.
    recovered: Option<(HistoryLine, Exchange, String)>,
    /// A journal whose iteration was already recorded.
    stale_journal: bool,
    /// Consume the stop-request file.
    stop_file: bool,
    /// Issues to comment on (`escalate`).
    escalate: Vec<u64>,
    /// The run starts with this tick and prices with the built-in table.
    built_in_notice: bool,
}

struct Tick<'c, 'w> {
    cfg: &'c TickConfig,
    clock: &'w dyn Clock,
    probe: &'w dyn ProcessProbe,
    me: Identity,
    tracker: &'w dyn Tracker,
    git: &'w dyn Git,
    runner: &'w mut dyn SkillRunner,
    interrupts: &'w dyn Interrupts,
    /// The report sink: stdout, or stderr under `--json`.
    report: &'w mut dyn Write,
    /// Diagnostics and the skill's output: stderr.
    diag: &'w mut dyn Write,
    platform: String,
    answerer: Answerer<'w>,
    inputs: Inputs,
    paths: StatePaths,
    started: Timestamp,
    started_mono: Instant,
    iteration: u64,
    gates: Vec<GateRecord>,
    notes: Vec<String>,
    held: Option<HeldLock>,
    budget: Option<Budget>,
    fired: Vec<Fired>,
    outcome: Outcome,
    /// Open PRs tracked by the run, carried into this tick's line.
    carried: Vec<TrackedPr>,
    /// Worktrees the run left on disk, carried likewise (never cleaned).
    carried_worktrees: Vec<ActiveWorktree>,
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

fn pr_ref(n: u64) -> String {
    format!("#{n}")
}

fn list(numbers: &[u64]) -> String {
    numbers
        .iter()
        .map(|n| pr_ref(*n))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl<'c, 'w> Tick<'c, 'w> {
    fn new(cfg: &'c TickConfig, world: &'w mut World<'_>, inputs: Inputs, script: Script) -> Self {
        let started = world.clock.now();
        let (report, diag): (&'w mut dyn Write, &'w mut dyn Write) = if cfg.json {
            (&mut *world.err, &mut *world.out)
        } else {
            (&mut *world.out, &mut *world.err)
        };
        Self {
            cfg,
            clock: world.clock,
            probe: world.probe,
            me: world.me,
            tracker: world.tracker,
            git: world.git,
            runner: &mut *world.runner,
            interrupts: world.interrupts,
            report,
            diag,
            platform: world.platform.to_owned(),
            answerer: Answerer::new(cfg.answers.clone(), script, &mut *world.prompt, 0),
            inputs,
            paths: StatePaths::new(&cfg.root, cfg.skill, cfg.budget_file.as_deref()),
            started,
            started_mono: Instant::now(),
            iteration: 0,
            gates: Vec::new(),
            notes: Vec::new(),
            held: None,
            budget: None,
            fired: Vec::new(),
            outcome: Outcome::Ok,
            carried: Vec::new(),
            carried_worktrees: Vec::new(),
        }
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn note(&mut self, line: impl Into<String>) {
        let line = line.into();
        let _ = writeln!(self.report, "{line}");
        self.notes.push(line);
    }

    fn summary(&self, code: u8) -> serde_json::Value {
        json!({
            "skill": self.cfg.skill.as_str(),
            "iteration": self.iteration,
            "outcome": self.outcome.as_str(),
            "exit_code": code,
            "stop_cause": self.fired.first().map(|f| f.cause.name()),
            "stop_conditions_fired": self.fired.iter().map(|f| f.cause.name()).collect::<Vec<_>>(),
            "gates": self.gates.iter().map(|g| json!({"name": g.name, "question": g.question, "answer": g.answer})).collect::<Vec<_>>(),
            "notes": self.notes,
            "budget": self.budget.as_ref().map(|b| serde_json::to_value(b).unwrap_or_default()),
        })
    }

    /// Asks one gate and records it (redacted) in this tick's `gates[]`.
    fn ask(&mut self, question: Question) -> Result<Answer, Failure> {
        match self.answerer.answer(&question) {
            Ok(answer) => {
                self.gates.push(GateRecord {
                    name: question.gate.name().to_owned(),
                    question: self.inputs.redactor.apply(&question.text),
                    answer: self.inputs.redactor.apply(&answer.recorded()),
                    at: clock::format(self.now()),
                    extra: Default::default(),
                });
                Ok(answer)
            }
            Err(e) => {
                let code = match &e {
                    GateError::Unanswered { .. } => exit::NEEDS_ANSWER,
                    GateError::BadAnswer { source_name, .. } if source_name == "--answer" => {
                        exit::USAGE
                    }
                    GateError::BadAnswer { .. } => exit::DATA,
                };
                let help = e.help();
                let mut message = e.to_string();
                if code == exit::NEEDS_ANSWER {
                    message.push_str(" — nothing was changed");
                }
                Err(Failure::new(code, message, help))
            }
        }
    }

    /// The minutes a report shows: elapsed seconds at the budget's latest.
    fn minutes(&self) -> u64 {
        self.budget.as_ref().map_or(0, |b| b.minutes_elapsed)
    }

    fn run(&mut self) -> Result<u8, Failure> {
        if !self.cfg.loop_mode {
            return self.run_once();
        }
        files::ensure_private_dir(&self.paths.dir)?;
        for path in [
            self.paths.budget().to_path_buf(),
            self.paths.history(),
            self.paths.inflight(),
        ] {
            files::check_regular_or_missing(&path)?;
        }
        let result = self.run_locked();
        if result.is_err() {
            // A failure after the lock was taken releases it; the state on
            // disk is whatever the last completed step left, which the next
            // tick reconciles.
            self.release();
        }
        result
    }

    /// Without `--loop`: run the skill once, no loop state.
    fn run_once(&mut self) -> Result<u8, Failure> {
        let tmp = std::env::temp_dir().join(format!(
            "sdd-loop-once-{}-{}",
            std::process::id(),
            self.started.as_millisecond()
        ));
        let exchange = Exchange { dir: tmp.clone() };
        let request = SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill: self.cfg.skill,
            iteration: 1,
            repository: self.cfg.repository.clone(),
            issues: Vec::new(),
            prs: self
                .cfg
                .pr
                .map(|n| PrAssignment {
                    number: n,
                    branch: String::new(),
                    head_sha: None,
                    merge_allowed: true,
                })
                .into_iter()
                .collect(),
            max_new_prs: None,
            no_chain: self.cfg.no_chain,
            dry_run: self.cfg.dry_run,
        };
        exchange.prepare(&request)?;
        let spec = self.run_spec();
        let outcome = self.runner.run(&spec, &exchange, &mut *self.diag);
        let _ = exchange.remove();
        match outcome.failure() {
            None => Ok(exit::TICK_DONE),
            Some(why) => Err(Failure::new(
                outcome
                    .exit_code
                    .and_then(|c| u8::try_from(c).ok())
                    .filter(|c| *c != 0)
                    .unwrap_or(exit::INTERNAL),
                why,
                "without --loop the skill runs once and its exit status is passed on",
            )),
        }
    }

    fn run_spec(&self) -> RunSpec {
        RunSpec {
            command: self.cfg.skill_cmd.clone(),
            cwd: self.cfg.root.clone(),
            env: Vec::new(),
            stall_timeout: self.cfg.stall_timeout,
            drain_timeout: self.cfg.drain_timeout,
            stop_file: self.paths.stop_request(),
            crash: self.cfg.crash.clone(),
        }
    }

    // ---------------------------------------------------------------- 1. lock

    fn run_locked(&mut self) -> Result<u8, Failure> {
        let peek_budget = Budget::load(self.paths.budget())?;
        let guess = peek_budget.as_ref().map_or(1, |b| b.iterations_used + 1);
        let started_at = clock::format(self.started);

        let deadline = {
            let left = peek_budget
                .as_ref()
                .map(|b| b.max_minutes.saturating_sub(b.minutes_elapsed))
                .unwrap_or(self.cfg.ceilings.resolve().max_minutes);
            self.started_mono + std::time::Duration::from_secs(left * 60)
        };
        let mut force_failure: Option<Failure> = None;
        let acquired = {
            let probe = self.probe;
            let me = self.me;
            let paths = self.paths.clone();
            let interrupts = self.interrupts;
            let interrupted = move || interrupts.pending().is_some();
            match self.cfg.lock {
                LockChoice::Skip => {
                    lock::acquire(&paths, probe, me, guess, &started_at, LockMode::Skip)?
                }
                LockChoice::Wait => lock::acquire(
                    &paths,
                    probe,
                    me,
                    guess,
                    &started_at,
                    LockMode::Wait {
                        poll: self.cfg.lock_poll,
                        deadline,
                        interrupted: &interrupted,
                    },
                )?,
                LockChoice::Force => {
                    let mut decide = |_: &Holder| match self.ask(Question::force_unlock()) {
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
            Err(denied) => return self.not_acquired(denied, peek_budget, guess),
        };
        self.held = Some(held);
        let concurrency = match how.note() {
            Some(note) => {
                self.note(note.clone());
                format!("lock acquired — {note}")
            }
            None => "lock acquired".to_owned(),
        };
        self.cfg.crash.hit("after-lock");
        self.locked(concurrency)
    }

    /// The tick did not get the lock: record a `skipped_lock` line (or, on
    /// `--resume` against a live holder, the `lock_contention` stop).
    fn not_acquired(
        &mut self,
        denied: Denied,
        budget: Option<Budget>,
        guess: u64,
    ) -> Result<u8, Failure> {
        let holder = denied.holder().clone();
        self.iteration = match &holder {
            Holder::Alive(r) | Holder::Ambiguous { record: r, .. } => r.iteration,
            Holder::Unreadable { .. } => guess,
        };
        self.budget = budget;
        let (outcome, concurrency) = match (&denied, &holder) {
            (Denied::ForceStopped(_), _) => {
                self.fired.push(Fired::new(
                    StopCause::PriorGateStop,
                    "Force-unlock gate answered stop",
                ));
                (
                    Outcome::Halted,
                    "force-unlock declined with stop".to_owned(),
                )
            }
            (Denied::Held(Holder::Alive(r)), _) if self.cfg.resume => {
                let line = format!(
                    "Resume aborted: lockfile recorded pid {} is still alive. Either wait for the previous run to exit, or pass --lock=force to override.",
                    r.pid
                );
                self.note(line.clone());
                self.fired
                    .push(Fired::new(StopCause::LockContention, line.clone()));
                (Outcome::Halted, line)
            }
            (Denied::WaitInterrupted(h), _) => {
                let line = format!(
                    "Interrupted while waiting for the lock ({}) — stopping",
                    h.skip_note(&self.platform)
                );
                self.note(line.clone());
                self.fired
                    .push(Fired::new(StopCause::UserInterrupt, line.clone()));
                (Outcome::Halted, line)
            }
            (Denied::WaitExpired(h), _) => {
                let line = format!(
                    "{} (waited until the wall-clock budget ran out)",
                    h.skip_note(&self.platform)
                );
                self.note(line.clone());
                (Outcome::SkippedLock, line)
            }
            _ => {
                let line = holder.skip_note(&self.platform);
                self.note(line.clone());
                (Outcome::SkippedLock, line)
            }
        };
        self.outcome = outcome;
        let shown = Shown {
            context: format!(
                "Lock: held by pid {}",
                holder.pid().map_or("?".into(), |p| p.to_string())
            ),
            plan: "none — another tick holds the lock".into(),
            concurrency,
            outcome: if outcome == Outcome::SkippedLock {
                "skipped — no counter advanced".into()
            } else {
                "halted without the lock — no counter advanced".into()
            },
        };
        let snapshot = self
            .budget
            .as_ref()
            .map(BudgetSnapshot::from)
            .unwrap_or_default();
        self.record(Record {
            snapshot,
            delta: Delta::default(),
            tracked: Vec::new(),
            worktrees: Vec::new(),
            failures: Vec::new(),
            backlog: None,
            dispatched: Vec::new(),
            chain: if self.cfg.skill == Skill::Work {
                Chain::NotInvoked
            } else {
                Chain::NotApplicable
            },
            error: None,
            lock_held: false,
        })?;
        self.show(&shown)?;
        Ok(if self.fired.is_empty() {
            exit::TICK_DONE
        } else {
            exit::LOOP_ENDED
        })
    }

    // ----------------------------------------------------- 2. load and decide

    fn locked(&mut self, concurrency: String) -> Result<u8, Failure> {
        let mut pending = Pending::default();
        let history_path = self.paths.history();
        // Enough of the end of history to hold the run's last two lines
        // written under the lock (drift and repeated failure look at two),
        // however many skipped ticks were appended after them.
        let mut want = 64;
        let tail = loop {
            let tail = history::read_tail(&history_path, want)?;
            let held = tail.lines.iter().filter(|l| l.line.authoritative()).count();
            if held >= 2 || tail.lines.len() < want {
                break tail;
            }
            want *= 4;
        };
        pending.torn = tail.torn.clone();
        let authoritative: Vec<HistoryLine> = tail
            .lines
            .iter()
            .map(|l| l.line.clone())
            .filter(HistoryLine::authoritative)
            .collect();
        let budget_on_disk = Budget::load(self.paths.budget())?;
        let last = authoritative.last();
        let recon = reconcile::reconcile(budget_on_disk, last, self.cfg.resume);
        if let Some(note) = recon.note(&rel(&self.cfg.root, self.paths.budget())) {
            self.note(note);
        }
        let fresh_run = self.cfg.fresh || recon.budget.is_none();
        let mut budget = match (&recon.budget, self.cfg.fresh) {
            (Some(b), false) => b.clone(),
            _ => {
                if self.cfg.fresh && recon.budget.is_some() {
                    self.note(
                        "Starting a fresh run (--fresh): budgets reset; earlier history is kept",
                    );
                }
                let mut started = Budget::start(
                    &clock::format(self.started),
                    self.cfg.ceilings.resolve(),
                    self.inputs.rates.source.label(),
                );
                started.ceiling_flags = Some(self.cfg.ceilings);
                started
            }
        };
        // Once per run: shown when the run's first tick commits.
        pending.built_in_notice = fresh_run
            && self.inputs.rates.source == rates::RateSource::BuiltIn
            && budget.max_dollars > 0.0;
        if !fresh_run {
            for change in budget.apply_flags(&self.cfg.ceilings, self.cfg.resume) {
                self.note(change.to_string());
            }
        }
        // The run's lines only, newest last (drift, repeated failure).
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

        // An interrupted iteration: recover its spend before anything else.
        if let Some(journal) = Journal::load(&self.paths.inflight())? {
            let already = tail.lines.iter().any(|l| {
                l.line.iteration == Some(journal.iteration)
                    && l.line.authoritative()
                    && l.line
                        .budget_snapshot
                        .as_ref()
                        .and_then(|s| s.run_started_at.as_deref())
                        .is_none_or(|r| r == journal.run_started_at)
            });
            if already || journal.run_started_at != budget.started_at {
                pending.stale_journal = true;
            } else {
                let (line, exchange, note) = self.recover(&journal, &mut budget);
                // The recovered iteration is the run's latest: resume and the
                // gates look at it like any recorded line.
                run_lines.push(line.clone());
                pending.recovered = Some((line, exchange, note));
            }
        }

        // Rates may have changed since the last tick: dollars are
        // recomputed from the per-model totals — when those account for
        // every token. A checkpoint written without them (the contract's
        // own shape) keeps its dollars, and new spend is added on top.
        if budget.per_model_totals_complete() {
            budget.dollars_estimate = self.inputs.rates.cost(&budget.tokens_by_model).dollars;
        }
        budget.rate_table_source = self.inputs.rates.source.label().to_owned();

        self.iteration = budget.iterations_used + 1;
        self.answerer.set_iteration(self.iteration);
        if let Some(held) = self.held.as_mut() {
            held.set_iteration(self.iteration)?;
        }
        // The time since the last tick (its end as the checkpoint recorded
        // it, else as its history line did) counts toward the wall clock.
        let last_end = budget
            .last_tick_ended_at
            .clone()
            .or_else(|| run_lines.iter().rev().find_map(|l| l.ended_at.clone()));
        let gap = match (last_end, self.cfg.resume) {
            (Some(end), false) => clock::parse(&end)
                .ok()
                .map(|end| (self.started.as_second() - end.as_second()).max(0) as u64)
                .unwrap_or(0),
            _ => 0,
        };
        let entry_seconds = budget.elapsed_seconds() + gap;
        budget.set_elapsed_seconds(entry_seconds);
        self.budget = Some(budget);

        // An ended run stays ended until --resume or --fresh.
        if let Some(stopped) = self.budget.as_ref().and_then(|b| b.stopped.clone()) {
            if self.cfg.resume {
                self.note(format!(
                    "Resuming the run stopped by {} in iteration {}",
                    stopped.cause, stopped.iteration
                ));
                if let Some(b) = self.budget.as_mut() {
                    b.stopped = None;
                }
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
                self.note(message.clone());
                let cause =
                    StopCause::from_name(&stopped.cause).unwrap_or(StopCause::PriorGateStop);
                self.fired.push(Fired::new(cause, message));
                return self.halt_at_entry(pending, concurrency, None, "the loop has ended");
            }
        }

        // Open PRs the run tracks carry from line to line, so whatever the
        // last line is, resume finds every PR still in flight.
        let latest = run_lines.last().cloned();
        self.carried = latest
            .as_ref()
            .and_then(|l| l.tracked_prs.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p.state_at_end == PrState::Open)
            .collect();
        self.carried_worktrees = latest
            .as_ref()
            .and_then(|l| l.active_worktrees.clone())
            .unwrap_or_default();

        // 3. --resume: tracked PRs and worktrees, once.
        if self.cfg.resume {
            let mut reattached: Vec<TrackedPr> = Vec::new();
            if let Some(stop) = self.resume_reconcile(latest.as_ref(), &mut reattached)? {
                self.fired.push(stop);
                return self.halt_at_entry(pending, concurrency, None, "stopped at a gate");
            }
            self.carried = reattached;
        }

        // 4. Entry stop conditions that need only the state.
        if self.paths.stop_request().exists() {
            pending.stop_file = true;
            self.fired.push(Fired::new(
                StopCause::UserInterrupt,
                format!(
                    "Stop requested ({} present) — stopping before dispatch",
                    rel(&self.cfg.root, &self.paths.stop_request())
                ),
            ));
        }
        if let Some(sig) = self.interrupts.pending() {
            self.fired.push(Fired::new(
                StopCause::UserInterrupt,
                format!("Interrupted (signal {sig}) — stopping before dispatch"),
            ));
        }
        let minutes = entry_seconds / 60;
        let single = self.cfg.single_pr();
        self.fired.extend(stop::budget_on_entry(
            self.budget.as_ref().expect("set above"),
            minutes,
            single,
        ));
        if !self.fired.is_empty() {
            for f in self.fired.clone() {
                self.note(f.message);
            }
            return self.halt_at_entry(pending, concurrency, None, "halted at entry");
        }

        match self.cfg.skill {
            Skill::Work => self.work(pending, concurrency, &run_lines),
            Skill::Review => self.review(pending, concurrency, &run_lines),
        }
    }

    /// Turns a dead tick's journal into its history line and counters.
    fn recover(
        &mut self,
        journal: &Journal,
        budget: &mut Budget,
    ) -> (HistoryLine, Exchange, String) {
        let exchange = Exchange {
            dir: self
                .paths
                .exchange_dir()
                .join(journal.iteration.to_string()),
        };
        let (result, source) = match exchange.read_result() {
            Ok(r) => (r, "its result file"),
            Err(_) => {
                let (events, _) = exchange.read_events();
                (fold_events(&events), "its progress events")
            }
        };
        let delta = self.account(
            budget,
            &result,
            journal.request.prs.first().map(|p| p.number),
        );
        budget.iterations_used = budget.iterations_used.max(journal.iteration);
        let tracked = merge_tracked(&journal.tracked_prs, &result.prs);
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
            .collect();
        failures.dedup();
        let ended = clock::format(self.now());
        budget.last_tick_ended_at = Some(ended.clone());
        let record = TickRecord {
            iteration: journal.iteration,
            skill: self.cfg.skill.as_str().to_owned(),
            started_at: journal.started_at.clone(),
            ended_at: ended,
            outcome: Outcome::Errored,
            prs_touched_this_iter: delta.prs.clone(),
            agents_dispatched_this_iter: delta.agents,
            tokens_in_this_iter: delta.tokens_in,
            tokens_out_this_iter: delta.tokens_out,
            dollars_this_iter: delta.dollars,
            comments_pushed_this_iter: delta.comments,
            merges_attempted_this_iter: delta.merges,
            budget_snapshot: BudgetSnapshot::from(&*budget),
            tracked_prs: tracked,
            active_worktrees: worktrees,
            gates: journal.gates.clone(),
            stop_conditions_fired: Vec::new(),
            failures_this_iter: failures,
            backlog_snapshot: journal.backlog_snapshot.clone(),
            issues_dispatched_this_iter: journal
                .backlog_snapshot
                .as_ref()
                .map(|_| journal.request.issues.iter().map(|i| i.number).collect()),
            chain: if self.cfg.skill == Skill::Work {
                Chain::NotInvoked
            } else {
                Chain::NotApplicable
            },
            lock_held: true,
            error: Some("interrupted".into()),
        };
        let note = format!(
            "Recovered interrupted iteration {} (pid {}) from {source}: {} tokens in, {} tokens out, PRs [{}] — recorded as errored (interrupted)",
            journal.iteration,
            journal.pid,
            delta.tokens_in,
            delta.tokens_out,
            delta.prs.join(", ")
        );
        (record.into(), exchange, note)
    }

    /// Adds a result to the counters; returns this iteration's deltas.
    /// `single_pr`: in single-PR mode only that PR counts as touched.
    fn account(
        &mut self,
        budget: &mut Budget,
        result: &SkillResult,
        single_pr: Option<u64>,
    ) -> Delta {
        let before = budget.dollars_estimate;
        let priced_before = self.inputs.rates.cost(&budget.tokens_by_model).dollars;
        let mut delta = Delta::default();
        for u in &result.usage {
            budget.add_usage(&u.model, u.tokens_in, u.tokens_out);
            delta.tokens_in += u.tokens_in;
            delta.tokens_out += u.tokens_out;
        }
        let cost = self.inputs.rates.cost(&budget.tokens_by_model);
        let this_tick: BTreeSet<&str> = result.usage.iter().map(|u| u.model.as_str()).collect();
        for model in cost
            .unknown_models
            .iter()
            .filter(|m| this_tick.contains(m.as_str()))
        {
            self.note(rates::unknown_model_warning(model));
        }
        // Add this tick's spend to what was recorded, so dollars carried by
        // a checkpoint without per-model totals are never lost.
        budget.dollars_estimate = round_dollars(before + (cost.dollars - priced_before));
        delta.dollars = round_dollars(budget.dollars_estimate - before).max(0.0);
        for pr in &result.prs {
            let r = pr_ref(pr.number);
            if !delta.prs.contains(&r) {
                delta.prs.push(r.clone());
            }
            match (self.cfg.single_pr(), single_pr) {
                (true, Some(n)) => {
                    budget.prs_touched.insert(pr_ref(n));
                }
                _ => {
                    budget.prs_touched.insert(r);
                }
            }
        }
        budget.agents_dispatched += result.agents_dispatched;
        budget.comments_pushed += result.comments_pushed;
        budget.merges_attempted += result.merges_attempted;
        delta.agents = result.agents_dispatched;
        delta.comments = result.comments_pushed;
        delta.merges = result.merges_attempted;
        delta
    }

    /// `--resume`: tracked PRs by SHA equality, worktrees reported.
    fn resume_reconcile(
        &mut self,
        last: Option<&HistoryLine>,
        reattached: &mut Vec<TrackedPr>,
    ) -> Result<Option<Fired>, Failure> {
        let Some(last) = last else { return Ok(None) };
        let tracked = last.tracked_prs.clone().unwrap_or_default();
        let open: Vec<&TrackedPr> = tracked
            .iter()
            .filter(|p| p.state_at_end == PrState::Open)
            .collect();
        for pr in tracked.iter().filter(|p| p.state_at_end != PrState::Open) {
            self.note(format!(
                "PR #{} was already {} at prior iteration end — not re-attaching",
                pr.number,
                pr.state_at_end.as_str()
            ));
        }
        if !open.is_empty() {
            let branches: Vec<String> = open.iter().map(|p| p.branch.clone()).collect();
            let heads = self.git.remote_heads(&self.cfg.remote, &branches)?;
            for pr in open {
                let current = heads.get(&pr.branch).cloned();
                let recorded = pr.head_sha_at_iteration_end.clone().unwrap_or_default();
                let same = current
                    .as_deref()
                    .is_some_and(|c| same_commit(&recorded, c));
                let mut attach = pr.clone();
                attach.head_sha_at_iteration_start = current.clone();
                attach.head_sha_at_iteration_end = current.clone();
                if same {
                    reattached.push(attach);
                    continue;
                }
                let answer = self.ask(Question::resume_divergence(pr.number))?;
                match answer.option {
                    "re-attach" => reattached.push(attach),
                    "skip" => self.note(format!(
                        "PR #{} diverged (recorded {}, remote {}) — skipped, not re-attached",
                        pr.number,
                        short(&recorded),
                        current.as_deref().map_or("absent".to_owned(), short)
                    )),
                    _ => {
                        return Ok(Some(Fired::new(
                            StopCause::PriorGateStop,
                            "Gate resume-divergence answered stop",
                        )));
                    }
                }
            }
        }
        for wt in last.active_worktrees.clone().unwrap_or_default() {
            let state = self.git.worktree(Path::new(&wt.path));
            let verdict = match state {
                WorktreeState::Missing => Some("missing"),
                WorktreeState::At { branch, head }
                    if branch != wt.branch || !same_commit(&wt.head_sha, &head) =>
                {
                    Some("diverged")
                }
                WorktreeState::At { .. } => None,
            };
            if let Some(v) = verdict {
                self.note(format!(
                    "Worktree {} {v} — leaving in place per worktree-preservation rule",
                    wt.path
                ));
            }
        }
        Ok(None)
    }

    /// Repeated-failure gates for the last two dispatched iterations of the
    /// run; returns the targets to skip, or a stop.
    fn repeated_failures(
        &mut self,
        run_lines: &[HistoryLine],
    ) -> Result<Result<BTreeSet<String>, Fired>, Failure> {
        let dispatched: Vec<&HistoryLine> = run_lines
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
        let deferred: BTreeSet<String> = self
            .budget
            .as_ref()
            .map(|b| b.deferred.iter().cloned().collect())
            .unwrap_or_default();
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
            let answer = self.ask(Question::repeated_failure(&target, &cause))?;
            match answer.option {
                "skip" => {
                    if let Some(b) = self.budget.as_mut() {
                        b.deferred.push(target.clone());
                    }
                    self.note(format!(
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
    fn budget_gate(&mut self, projected_new_prs: u64) -> Result<Option<Fired>, Failure> {
        let b = self.budget.as_ref().expect("budget loaded");
        let single = self.cfg.single_pr();
        let mut tripped = Vec::new();
        let next_iteration = b.iterations_used + 1;
        if next_iteration as f64 >= 0.8 * b.max_iterations as f64 {
            tripped.push(Tripped {
                dim: Dimension::Iterations,
                used: next_iteration as f64,
                max: b.max_iterations as f64,
            });
        }
        let prs = b.prs_touched.len() as u64 + projected_new_prs;
        if !single && prs as f64 >= 0.8 * b.max_prs as f64 {
            tripped.push(Tripped {
                dim: Dimension::Prs,
                used: prs as f64,
                max: b.max_prs as f64,
            });
        }
        if b.minutes_elapsed as f64 >= 0.8 * b.max_minutes as f64 {
            tripped.push(Tripped {
                dim: Dimension::Minutes,
                used: b.minutes_elapsed as f64,
                max: b.max_minutes as f64,
            });
        }
        // Projected spend of this iteration: the run's average so far.
        let projected = if b.iterations_used > 0 {
            b.dollars_estimate / b.iterations_used as f64
        } else {
            0.0
        };
        if b.max_dollars > 0.0 && b.dollars_estimate + projected >= 0.8 * b.max_dollars {
            tripped.push(Tripped {
                dim: Dimension::Dollars,
                used: b.dollars_estimate,
                max: b.max_dollars,
            });
        }
        if tripped.is_empty() {
            return Ok(None);
        }
        let answer = self.ask(Question::budget_escalation(&tripped))?;
        match answer.option {
            "continue" => Ok(None),
            "raise" => {
                let b = self.budget.as_mut().expect("budget loaded");
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
                    self.note(format!("Raised ceiling(s): {}", raised.join(", ")));
                }
                if !ignored.is_empty() {
                    self.note(format!("Ignored: {}", ignored.join(", ")));
                }
                Ok(None)
            }
            _ => Ok(Some(Fired::new(
                StopCause::PriorGateStop,
                "Gate budget-escalation answered stop",
            ))),
        }
    }

    // ------------------------------------------------------------------ work

    fn work(
        &mut self,
        mut pending: Pending,
        concurrency: String,
        run_lines: &[HistoryLine],
    ) -> Result<u8, Failure> {
        let deferred: BTreeSet<u64> = self
            .budget
            .as_ref()
            .map(|b| {
                b.deferred
                    .iter()
                    .filter_map(|t| t.trim_start_matches('#').parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        let issues = self.tracker.open_issues()?;
        let pulls = self.tracker.open_pulls()?;
        let linked: BTreeSet<u64> = pulls.iter().flat_map(Pull::closes).collect();
        let backlog = Backlog::discover(issues, &linked, &deferred);
        let snapshot = backlog.snapshot();
        let context = format!("Backlog: {}", backlog.summary());

        if let Some(message) = backlog.cycle_message() {
            self.note(message.clone());
            self.fired
                .push(Fired::new(StopCause::DependencyCycle, message));
        }
        if backlog.workable.is_empty() {
            let b = self.budget.as_ref().expect("budget loaded");
            let message = format!(
                "Backlog empty — {} iterations used, {} PRs touched",
                b.iterations_used,
                b.prs_touched.len()
            );
            self.note(message.clone());
            self.fired
                .push(Fired::new(StopCause::BacklogEmpty, message));
        }
        if !self.fired.is_empty() {
            return self.halt_at_entry_with(
                pending,
                concurrency,
                Some(snapshot),
                context,
                "halted at entry",
            );
        }

        // 5. Gates, in order.
        let mut candidates = backlog.workable.clone();
        let previous = run_lines.iter().rev().find_map(|l| {
            l.backlog_snapshot
                .clone()
                .map(|s| (s, l.issues_dispatched_this_iter.clone().unwrap_or_default()))
        });
        if let Some((prev_list, dispatched)) = previous {
            let prev: BTreeSet<u64> = prev_list.iter().copied().collect();
            if backlog::drifted(&prev_list, &dispatched, &snapshot) {
                let answer = self.ask(Question::backlog_drift())?;
                match answer.option {
                    "re-propose" => {}
                    "continue" => candidates.retain(|n| prev.contains(n)),
                    _ => {
                        self.fired.push(Fired::new(
                            StopCause::PriorGateStop,
                            "Gate backlog-drift answered stop",
                        ));
                        return self.halt_at_entry_with(
                            pending,
                            concurrency,
                            Some(snapshot),
                            context,
                            "stopped at a gate",
                        );
                    }
                }
            }
        }
        match self.repeated_failures(run_lines)? {
            Ok(skip) => candidates.retain(|n| !skip.contains(&pr_ref(*n))),
            Err(stop) => {
                self.fired.push(stop);
                return self.halt_at_entry_with(
                    pending,
                    concurrency,
                    Some(snapshot),
                    context,
                    "stopped at a gate",
                );
            }
        }
        let b = self.budget.as_ref().expect("budget loaded");
        let remaining_prs = b.max_prs.saturating_sub(b.prs_touched.len() as u64);
        let take = self.cfg.max_agents.min(remaining_prs) as usize;
        let selected: Vec<u64> = candidates.iter().copied().take(take).collect();
        let mut assignments = Vec::new();
        let mut skipped = Vec::new();
        let mut escalated = Vec::new();
        for n in &selected {
            let issue = &backlog.issues[n];
            let criteria = if backlog::criteria_ambiguous(&issue.body) {
                let answer = self.ask(Question::ambiguous_criteria(*n))?;
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
                        self.fired.push(Fired::new(
                            StopCause::PriorGateStop,
                            "Gate ambiguous-criteria answered stop",
                        ));
                        return self.halt_at_entry_with(
                            pending,
                            concurrency,
                            Some(snapshot),
                            context,
                            "stopped at a gate",
                        );
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
        if let Some(stop) = self.budget_gate(assignments.len() as u64)? {
            self.fired.push(stop);
            return self.halt_at_entry_with(
                pending,
                concurrency,
                Some(snapshot),
                context,
                "stopped at a gate",
            );
        }
        pending.escalate = escalated.clone();

        let numbers: Vec<u64> = assignments.iter().map(|a| a.number).collect();
        let plan = if numbers.is_empty() {
            "nothing to dispatch this tick".to_owned()
        } else {
            format!(
                "implement {} ({} of {} max-agents)",
                list(&numbers),
                numbers.len(),
                self.cfg.max_agents
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
        let request = SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill: Skill::Work,
            iteration: self.iteration,
            repository: self.cfg.repository.clone(),
            issues: assignments,
            prs: Vec::new(),
            max_new_prs: Some(remaining_prs),
            no_chain: self.cfg.no_chain,
            dry_run: self.cfg.dry_run,
        };
        self.dispatch(Dispatch {
            pending,
            request,
            tracked_at_start: self.carried.clone(),
            backlog: Some(snapshot),
            shown: Shown {
                context,
                plan,
                concurrency,
                outcome: String::new(),
            },
            gate_outcomes,
            empty: numbers.is_empty(),
        })
    }

    // ---------------------------------------------------------------- review

    fn review(
        &mut self,
        pending: Pending,
        concurrency: String,
        run_lines: &[HistoryLine],
    ) -> Result<u8, Failure> {
        let deferred: BTreeSet<String> = self
            .budget
            .as_ref()
            .map(|b| b.deferred.iter().cloned().collect())
            .unwrap_or_default();
        let (pulls, context) = match self.cfg.pr {
            Some(n) => {
                let pr = self.tracker.pull(n)?;
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
                    self.note(message.clone());
                    self.fired.push(Fired::new(StopCause::TerminalPr, message));
                    return self.halt_at_entry_with(
                        pending,
                        concurrency,
                        None,
                        context,
                        "halted at entry",
                    );
                }
                (vec![pr], context)
            }
            None => {
                let open: Vec<Pull> = self
                    .tracker
                    .open_pulls()?
                    .into_iter()
                    .filter(|p| !p.has_label(DO_NOT_MERGE) && !deferred.contains(&pr_ref(p.number)))
                    .collect();
                let context = format!("Tracked PRs: {} open for review", open.len());
                if open.is_empty() {
                    let b = self.budget.as_ref().expect("budget loaded");
                    let message = format!(
                        "Backlog empty — {} iterations used, {} PRs touched",
                        b.iterations_used,
                        b.prs_touched.len()
                    );
                    self.note(message.clone());
                    self.fired
                        .push(Fired::new(StopCause::BacklogEmpty, message));
                    return self.halt_at_entry_with(
                        pending,
                        concurrency,
                        None,
                        context,
                        "halted at entry",
                    );
                }
                (open, context)
            }
        };

        // No new commits since the iteration that last recorded the PR.
        let mut deferred_now: Vec<(u64, u64)> = Vec::new();
        let mut candidates: Vec<Pull> = Vec::new();
        for pr in pulls {
            let seen = run_lines.iter().rev().find_map(|l| {
                l.tracked_prs
                    .iter()
                    .flatten()
                    .find(|t| t.number == pr.number)
                    .map(|t| {
                        (
                            l.iteration.unwrap_or(0),
                            t.head_sha_at_iteration_end.clone(),
                        )
                    })
            });
            match seen {
                Some((k, Some(end))) if same_commit(&end, &pr.head_sha) => {
                    self.note(format!(
                        "PR #{}: no new commits since iteration {k} (head_sha_at_iteration_end matches remote HEAD)",
                        pr.number
                    ));
                    deferred_now.push((pr.number, k));
                }
                _ => candidates.push(pr),
            }
        }
        let deferred_tracked: Vec<TrackedPr> = deferred_now
            .iter()
            .filter_map(|(n, _)| {
                run_lines.iter().rev().find_map(|l| {
                    l.tracked_prs
                        .iter()
                        .flatten()
                        .find(|t| t.number == *n)
                        .cloned()
                })
            })
            .map(|mut t| {
                t.head_sha_at_iteration_start = t.head_sha_at_iteration_end.clone();
                t
            })
            .collect();

        match self.repeated_failures(run_lines)? {
            Ok(skip) => candidates.retain(|p| !skip.contains(&pr_ref(p.number))),
            Err(stop) => {
                self.fired.push(stop);
                return self.halt_at_entry_with(
                    pending,
                    concurrency,
                    None,
                    context,
                    "stopped at a gate",
                );
            }
        }
        // Select: up to max-agents; new PRs only within the PR budget.
        let b = self.budget.as_ref().expect("budget loaded");
        let remaining = b.max_prs.saturating_sub(b.prs_touched.len() as u64);
        let mut room = remaining;
        let mut selected = Vec::new();
        let mut new_prs = 0;
        for pr in candidates {
            if selected.len() as u64 >= self.cfg.max_agents {
                break;
            }
            let known = b.prs_touched.contains(&pr_ref(pr.number));
            if !self.cfg.single_pr() && !known {
                if room == 0 {
                    continue;
                }
                room -= 1;
                new_prs += 1;
            }
            selected.push(pr);
        }
        if let Some(stop) = self.budget_gate(new_prs)? {
            self.fired.push(stop);
            return self.halt_at_entry_with(
                pending,
                concurrency,
                None,
                context,
                "stopped at a gate",
            );
        }
        let mut assignments = Vec::new();
        for pr in &selected {
            let comments = self.tracker.review_comments(pr.number)?;
            let merge_allowed = if tracker::addressed_human_feedback(&comments, &self.inputs.agents)
            {
                let answer = self.ask(Question::post_feedback_merge(pr.number))?;
                match answer.option {
                    "merge" => true,
                    "hold" => false,
                    _ => {
                        self.fired.push(Fired::new(
                            StopCause::PriorGateStop,
                            "Gate post-feedback-merge answered stop",
                        ));
                        return self.halt_at_entry_with(
                            pending,
                            concurrency,
                            None,
                            context,
                            "stopped at a gate",
                        );
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
        let mut tracked_at_start = self.carried.clone();
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
                list(&deferred_now.iter().map(|(n, _)| *n).collect::<Vec<_>>())
            )]
        };
        let request = SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill: Skill::Review,
            iteration: self.iteration,
            repository: self.cfg.repository.clone(),
            issues: Vec::new(),
            prs: assignments.clone(),
            max_new_prs: if self.cfg.single_pr() {
                None
            } else {
                Some(remaining)
            },
            no_chain: self.cfg.no_chain,
            dry_run: self.cfg.dry_run,
        };
        self.dispatch(Dispatch {
            pending,
            request,
            tracked_at_start,
            backlog: None,
            shown: Shown {
                context,
                plan,
                concurrency,
                outcome: String::new(),
            },
            gate_outcomes,
            empty: assignments.is_empty(),
        })
    }

    // ------------------------------------------------------- 6. commit, run

    /// Applies what loading queued: from here on the tick changes state.
    fn commit(&mut self, pending: &mut Pending) -> Result<(), Failure> {
        if std::mem::take(&mut pending.built_in_notice) {
            self.note(rates::BUILT_IN_NOTICE);
        }
        let history_path = self.paths.history();
        if let Some(torn) = pending.torn.take() {
            let sidecar =
                history::repair_torn(&history_path, &torn, &clock::format_compact(self.now()))?;
            let note = history::torn_note(
                Path::new(&rel(&self.cfg.root, &history_path)),
                &torn,
                Path::new(&rel(&self.cfg.root, &sidecar)),
            );
            self.note(note);
        }
        if let Some((line, exchange, note)) = pending.recovered.take() {
            let tail = history::read_tail(&history_path, 1)?;
            history::append(&history_path, &line, tail.needs_separator)?;
            self.note(note);
            let _ = exchange.remove();
        }
        if pending.stop_file {
            files::remove_if_present(&self.paths.stop_request())?;
        }
        if let Some(b) = &self.budget {
            b.save(self.paths.budget())?;
        }
        if pending.recovered.is_none()
            && (pending.stale_journal
                || Journal::load(&self.paths.inflight())
                    .ok()
                    .flatten()
                    .is_some())
        {
            Journal::remove(&self.paths.inflight())?;
        }
        for n in std::mem::take(&mut pending.escalate) {
            if self.cfg.dry_run {
                continue;
            }
            let body = format!(
                "Clarification requested (/sdd:{} --loop, iteration {}): this issue's acceptance criteria are missing or unfinished — no `### Acceptance Criteria` section, or it holds TBD/TODO. Please add concrete criteria; the loop leaves the issue alone until then.",
                self.cfg.skill, self.iteration
            );
            if let Err(e) = self.tracker.comment(n, &body) {
                self.note(format!(
                    "warning: could not post the escalation comment on #{n}: {e}"
                ));
            }
        }
        self.cfg.crash.hit("after-commit");
        Ok(())
    }

    fn halt_at_entry(
        &mut self,
        pending: Pending,
        concurrency: String,
        backlog: Option<Vec<u64>>,
        plan: &str,
    ) -> Result<u8, Failure> {
        let context = match self.cfg.skill {
            Skill::Work => "Backlog: not examined".to_owned(),
            Skill::Review => match self.cfg.pr {
                Some(n) => format!("Tracked PR: #{n}"),
                None => "Tracked PRs: not examined".to_owned(),
            },
        };
        self.halt_at_entry_with(pending, concurrency, backlog, context, plan)
    }

    /// A stop before dispatch: commit, record a `halted` line, report.
    fn halt_at_entry_with(
        &mut self,
        mut pending: Pending,
        concurrency: String,
        backlog: Option<Vec<u64>>,
        context: String,
        plan: &str,
    ) -> Result<u8, Failure> {
        self.cfg.crash.hit("after-gates");
        self.commit(&mut pending)?;
        self.outcome = Outcome::Halted;
        self.finish_budget();
        let snapshot = BudgetSnapshot::from(self.budget.as_ref().expect("budget loaded"));
        let shown = Shown {
            context,
            plan: format!("none — {plan}"),
            concurrency,
            outcome: format!(
                "halted — {}",
                self.fired.first().map_or("", |f| f.message.as_str())
            ),
        };
        self.record(Record {
            snapshot,
            delta: Delta::default(),
            tracked: self.carried.clone(),
            worktrees: self.carried_worktrees.clone(),
            failures: Vec::new(),
            backlog,
            dispatched: Vec::new(),
            chain: if self.cfg.skill == Skill::Work {
                Chain::NotInvoked
            } else {
                Chain::NotApplicable
            },
            error: None,
            lock_held: true,
        })?;
        self.save_budget()?;
        self.show(&shown)?;
        self.release();
        Ok(exit::LOOP_ENDED)
    }

    /// Closes the budget for this tick: elapsed time and, on a stop, the
    /// run's recorded end.
    fn finish_budget(&mut self) {
        let end = self.now();
        let iteration = self.iteration;
        let tick_secs = (end.as_second() - self.started.as_second()).max(0) as u64;
        let fired = self.fired.first().cloned();
        let gate = self
            .gates
            .iter()
            .rev()
            .find(|g| g.answer.starts_with("stop"))
            .map(|g| g.name.clone());
        if let Some(b) = self.budget.as_mut() {
            let secs = b.elapsed_seconds() + tick_secs;
            b.set_elapsed_seconds(secs);
            b.last_tick_ended_at = Some(clock::format(end));
            if let Some(f) = fired
                && f.cause != StopCause::LockContention
            {
                b.stopped = Some(crate::budget::RunStop {
                    cause: f.cause.name().to_owned(),
                    iteration,
                    gate: if f.cause == StopCause::PriorGateStop {
                        gate
                    } else {
                        None
                    },
                });
            }
        }
    }

    fn save_budget(&mut self) -> Result<(), Failure> {
        if let Some(b) = &self.budget {
            b.save(self.paths.budget())?;
        }
        self.cfg.crash.hit("after-budget");
        Ok(())
    }

    fn dispatch(&mut self, d: Dispatch) -> Result<u8, Failure> {
        let Dispatch {
            mut pending,
            request,
            tracked_at_start,
            backlog,
            mut shown,
            gate_outcomes,
            empty,
        } = d;
        self.cfg.crash.hit("after-gates");
        self.commit(&mut pending)?;

        let previous_worktrees = self.carried_worktrees.clone();
        let single = self.cfg.pr;
        let mut budget = self.budget.take().expect("budget loaded");
        let (result, run, error) = if empty {
            (
                SkillResult {
                    protocol: PROTOCOL_VERSION,
                    ..Default::default()
                },
                None,
                None,
            )
        } else {
            let journal = Journal {
                iteration: self.iteration,
                pid: self.me.pid,
                process_start: self.me.process_start,
                started_at: clock::format(self.started),
                run_started_at: budget.started_at.clone(),
                seconds_at_start: budget.elapsed_seconds(),
                request: request.clone(),
                tracked_prs: tracked_at_start.clone(),
                backlog_snapshot: backlog.clone(),
                gates: self.gates.clone(),
            };
            journal.save(&self.paths.inflight())?;
            self.cfg.crash.hit("after-journal");
            let exchange = Exchange::for_iteration(&self.paths, self.iteration);
            exchange.prepare(&request)?;
            let spec = self.run_spec();
            let outcome = self.runner.run(&spec, &exchange, &mut *self.diag);
            self.cfg.crash.hit("after-skill");
            let (result, error) = match exchange.read_result() {
                Ok(r) => (r, outcome.failure()),
                Err(why) => {
                    let (events, _) = exchange.read_events();
                    let folded = fold_events(&events);
                    let error = match outcome.failure() {
                        Some(f) => format!("{f} ({why})"),
                        None => format!("invalid skill result: {why}"),
                    };
                    (folded, Some(error))
                }
            };
            (result, Some(outcome), error)
        };
        let mut error = error;
        let delta = self.account(&mut budget, &result, single);
        budget.iterations_used += 1;
        if let Some(n) = self.cfg.pr.filter(|_| self.cfg.single_pr()) {
            // Single-PR mode: the watched PR is the only one ever touched.
            budget.prs_touched.insert(pr_ref(n));
        }

        // Contract checks on what the skill reported.
        let mut violations = Vec::new();
        for r in &result.review_rounds {
            if r.rounds > 1 {
                violations.push(format!(
                    "contract violation: {} review rounds on PR #{} in one tick (ADR-0010 allows one)",
                    r.rounds, r.pr
                ));
            }
        }
        let chain = match (self.cfg.skill, &result.chain) {
            (Skill::Review, _) => Chain::NotApplicable,
            (Skill::Work, None) => Chain::NotInvoked,
            (Skill::Work, Some(c)) if !c.invoked => Chain::NotInvoked,
            (Skill::Work, Some(c)) => {
                if self.cfg.no_chain {
                    violations.push(
                        "contract violation: the skill chained into review under --no-chain".into(),
                    );
                }
                match &c.review_outcome {
                    None => {
                        violations.push(
                            "contract violation: chain.invoked without chain.review_outcome".into(),
                        );
                        Chain::NotInvoked
                    }
                    Some(outcome) => Chain::Invoked {
                        review_outcome: outcome.clone(),
                        autofix: match &c.autofix_pr {
                            Some(a) if a.invoked => match &a.status {
                                Some(s) => Autofix::Invoked { status: s.clone() },
                                None => {
                                    violations.push("contract violation: autofix_pr.invoked without autofix_pr.status".into());
                                    Autofix::NotInvoked
                                }
                            },
                            _ => Autofix::NotInvoked,
                        },
                    },
                }
            }
        };
        if error.is_none() && !violations.is_empty() {
            error = Some(violations.join("; "));
        }

        // qmd counter (#11).
        let qmd = run.as_ref().is_some_and(RunOutcome::qmd_signal);
        if qmd {
            budget.qmd_failures_consecutive += 1;
        } else if error.is_none() {
            budget.qmd_failures_consecutive = 0;
        }

        let tracked = merge_tracked(&tracked_at_start, &result.prs);
        let mut worktrees = previous_worktrees;
        for w in &result.worktrees {
            worktrees.retain(|x| x.path != w.path);
            worktrees.push(ActiveWorktree {
                path: w.path.clone(),
                branch: w.branch.clone(),
                head_sha: w.head_sha.clone(),
                extra: Default::default(),
            });
        }
        let mut failures: Vec<FailureRecord> = result
            .failures
            .iter()
            .map(|f| FailureRecord {
                target: f.target.clone(),
                root_cause: f.root_cause.clone(),
            })
            .collect();
        if let Some(why) = &error {
            let cause = if qmd {
                "qmd unreachable".to_owned()
            } else {
                why.clone()
            };
            let targets: Vec<String> = request
                .issues
                .iter()
                .map(|i| pr_ref(i.number))
                .chain(request.prs.iter().map(|p| pr_ref(p.number)))
                .collect();
            for t in targets {
                if !failures.iter().any(|f| f.target == t) {
                    failures.push(FailureRecord {
                        target: t,
                        root_cause: cause.clone(),
                    });
                }
            }
        }

        // 7. Exit stop conditions.
        let interrupted = run.as_ref().and_then(|r| r.interrupted);
        if let Some(kind) = interrupted {
            let message = match kind {
                InterruptKind::Signal(sig) => {
                    format!("Interrupted (signal {sig}) — the iteration drained and was recorded")
                }
                InterruptKind::StopFile => format!(
                    "Stop requested ({} present) — the iteration drained and was recorded",
                    rel(&self.cfg.root, &self.paths.stop_request())
                ),
            };
            if kind == InterruptKind::StopFile {
                files::remove_if_present(&self.paths.stop_request())?;
            }
            self.fired
                .push(Fired::new(StopCause::UserInterrupt, message));
        } else if self.paths.stop_request().exists() {
            files::remove_if_present(&self.paths.stop_request())?;
            self.fired.push(Fired::new(
                StopCause::UserInterrupt,
                "Stop requested during the iteration — stopping after it",
            ));
        }
        self.fired
            .extend(stop::budget_on_exit(&budget, self.cfg.single_pr()));
        if budget.qmd_failures_consecutive >= 2 {
            let captured = run
                .as_ref()
                .and_then(|r| {
                    r.qmd_line
                        .clone()
                        .or_else(|| r.last_stderr().map(str::to_owned))
                })
                .unwrap_or_default();
            self.fired.push(Fired::new(
                StopCause::QmdUnreachable,
                stop::qmd_message(&captured),
            ));
        }
        for f in self.fired.clone() {
            self.note(f.message);
        }

        self.outcome = if !self.fired.is_empty() {
            Outcome::Halted
        } else if error.is_some() {
            Outcome::Errored
        } else {
            Outcome::Ok
        };
        self.budget = Some(budget);
        self.finish_budget();

        // Outcome line.
        let mut parts = Vec::new();
        let opened: Vec<u64> = result
            .prs
            .iter()
            .filter(|p| p.opened)
            .map(|p| p.number)
            .collect();
        let touched: Vec<u64> = result
            .prs
            .iter()
            .filter(|p| !p.opened)
            .map(|p| p.number)
            .collect();
        if !opened.is_empty() {
            parts.push(format!(
                "{} opened ({}).",
                plural(opened.len(), "PR", "PRs"),
                list(&opened)
            ));
        }
        if !touched.is_empty() {
            parts.push(format!(
                "{} updated ({}).",
                plural(touched.len(), "PR", "PRs"),
                list(&touched)
            ));
        }
        if result.comments_pushed > 0 || result.merges_attempted > 0 {
            parts.push(format!(
                "{} pushed, {} attempted.",
                plural(result.comments_pushed as usize, "comment", "comments"),
                plural(result.merges_attempted as usize, "merge", "merges")
            ));
        }
        parts.extend(gate_outcomes);
        if !result.failures.is_empty() {
            parts.push(format!(
                "Failed: {}.",
                result
                    .failures
                    .iter()
                    .map(|f| format!("{} ({})", f.target, f.root_cause))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if let Some(s) = &result.summary {
            parts.push(s.clone());
        }
        if let Some(e) = &error {
            parts.push(format!("Errored — {}.", e.trim_end_matches('.')));
        }
        if parts.is_empty() {
            parts.push(if empty {
                "nothing dispatched.".into()
            } else {
                "no changes reported.".into()
            });
        }
        shown.outcome = parts.join(" ");

        let snapshot = BudgetSnapshot::from(self.budget.as_ref().expect("budget set"));
        self.record(Record {
            snapshot,
            delta,
            tracked,
            worktrees,
            failures,
            backlog,
            dispatched: request.issues.iter().map(|i| i.number).collect(),
            chain,
            error,
            lock_held: true,
        })?;
        self.save_budget()?;
        if !empty {
            Journal::remove(&self.paths.inflight())?;
            let _ = Exchange::for_iteration(&self.paths, self.iteration).remove();
        }
        self.cfg.crash.hit("after-journal-removed");
        self.show(&shown)?;
        self.release();
        Ok(if self.fired.is_empty() {
            exit::TICK_DONE
        } else {
            exit::LOOP_ENDED
        })
    }

    // ---------------------------------------------------------- 8. record

    fn record(&mut self, r: Record) -> Result<(), Failure> {
        let line: HistoryLine = TickRecord {
            iteration: self.iteration,
            skill: self.cfg.skill.as_str().to_owned(),
            started_at: clock::format(self.started),
            ended_at: clock::format(self.now()),
            outcome: self.outcome,
            prs_touched_this_iter: r.delta.prs,
            agents_dispatched_this_iter: r.delta.agents,
            tokens_in_this_iter: r.delta.tokens_in,
            tokens_out_this_iter: r.delta.tokens_out,
            dollars_this_iter: r.delta.dollars,
            comments_pushed_this_iter: r.delta.comments,
            merges_attempted_this_iter: r.delta.merges,
            budget_snapshot: r.snapshot,
            tracked_prs: r.tracked,
            active_worktrees: r.worktrees,
            gates: self.gates.clone(),
            stop_conditions_fired: self
                .fired
                .iter()
                .map(|f| f.cause.name().to_owned())
                .collect(),
            failures_this_iter: r.failures,
            issues_dispatched_this_iter: r.backlog.as_ref().map(|_| r.dispatched.clone()),
            backlog_snapshot: r.backlog,
            chain: r.chain,
            lock_held: r.lock_held,
            error: r.error,
        }
        .into();
        let path = self.paths.history();
        let tail = history::read_tail(&path, 1)?;
        if tail.torn.is_some() && !r.lock_held {
            // Never append after a torn line without the lock: the holder
            // repairs it first.
            return Ok(());
        }
        let created = history::append(&path, &line, tail.needs_separator)?;
        if created {
            self.note(format!(
                "Created {}: it may hold sensitive content (gate questions and answers can quote issue text, branch names and free-text answers). Treat it like .env — keep it gitignored (.sdd/ is) and never upload it without explicit opt-in.",
                rel(&self.cfg.root, &path)
            ));
        }
        if r.lock_held {
            self.cfg.crash.hit("after-history");
        }
        Ok(())
    }

    fn show(&mut self, shown: &Shown) -> Result<(), Failure> {
        let ended = !self.fired.is_empty();
        let started = clock::format(self.started);
        let block = report::status_block(&StatusView {
            skill: self.cfg.skill,
            iteration: self.iteration,
            started_at: &started,
            context: shown.context.clone(),
            plan: shown.plan.clone(),
            review_counters: (self.cfg.skill == Skill::Review).then(|| {
                self.budget
                    .as_ref()
                    .map_or((0, 0), |b| (b.comments_pushed, b.merges_attempted))
            }),
            budget: self.budget.as_ref(),
            max_iterations: self.budget.as_ref().map_or_else(
                || self.cfg.ceilings.resolve().max_iterations,
                |b| b.max_iterations,
            ),
            minutes: self.minutes(),
            single_pr: self.cfg.single_pr(),
            stops: &self.fired,
            concurrency: shown.concurrency.clone(),
            outcome: shown.outcome.clone(),
            ended,
        });
        let _ = write!(self.report, "\n{block}");
        if let Some(first) = self.fired.first().cloned() {
            let gates = self.run_gates()?;
            let text = report::final_report(&FinalView {
                skill: self.cfg.skill,
                cause: &first,
                budget: self.budget.as_ref(),
                minutes: self.minutes(),
                single_pr: self.cfg.pr.filter(|_| self.cfg.single_pr()),
                gates,
                budget_path: rel(&self.cfg.root, self.paths.budget()),
                history_path: rel(&self.cfg.root, &self.paths.history()),
            });
            let _ = write!(self.report, "\n{text}");
        }
        let _ = self.report.flush();
        self.cfg.crash.hit("before-release");
        Ok(())
    }

    /// Every gate fired in this run, from history (this tick's included).
    fn run_gates(&self) -> Result<Vec<(u64, GateRecord)>, Failure> {
        let all = history::read_all(&self.paths.history())?;
        let run = self.budget.as_ref().map(|b| b.started_at.clone());
        Ok(all
            .lines
            .iter()
            .filter(|l| {
                let line_run = l
                    .line
                    .budget_snapshot
                    .as_ref()
                    .and_then(|s| s.run_started_at.clone());
                match (&run, line_run) {
                    (Some(r), Some(lr)) => *r == lr,
                    _ => true,
                }
            })
            .flat_map(|l| {
                let it = l.line.iteration.unwrap_or(0);
                l.line
                    .gates
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |g| (it, g))
            })
            .collect())
    }

    fn release(&mut self) {
        if let Some(held) = self.held.take()
            && let Ok(lock::Release::TakenOver { by_pid }) = held.release()
        {
            let _ = writeln!(
                self.diag,
                "warning: the lock was force-unlocked by pid {} while this tick ran; left it in place",
                by_pid.map_or("?".into(), |p| p.to_string())
            );
        }
    }
}

/// What a dispatching tick hands to [`Tick::dispatch`].
struct Dispatch {
    pending: Pending,
    request: SkillRequest,
    tracked_at_start: Vec<TrackedPr>,
    backlog: Option<Vec<u64>>,
    shown: Shown,
    gate_outcomes: Vec<String>,
    empty: bool,
}

/// What a history line records beyond the tick's own fields.
struct Record {
    snapshot: BudgetSnapshot,
    delta: Delta,
    tracked: Vec<TrackedPr>,
    worktrees: Vec<ActiveWorktree>,
    failures: Vec<FailureRecord>,
    backlog: Option<Vec<u64>>,
    /// Issues handed to the skill (work).
    dispatched: Vec<u64>,
    chain: Chain,
    error: Option<String>,
    lock_held: bool,
}

/// PRs tracked at the start of a tick, updated by what the skill reported.
fn merge_tracked(start: &[TrackedPr], reports: &[PrReport]) -> Vec<TrackedPr> {
    let mut out: Vec<TrackedPr> = start.to_vec();
    for r in reports {
        match out.iter_mut().find(|t| t.number == r.number) {
            Some(t) => {
                if let Some(end) = &r.head_sha_at_end {
                    t.head_sha_at_iteration_end = Some(end.clone());
                }
                if t.head_sha_at_iteration_start.is_none() {
                    t.head_sha_at_iteration_start = r.head_sha_at_start.clone();
                }
                t.state_at_end = r.state;
            }
            None => out.push(TrackedPr {
                number: r.number,
                branch: r.branch.clone(),
                head_sha_at_iteration_start: r
                    .head_sha_at_start
                    .clone()
                    .or_else(|| r.head_sha_at_end.clone()),
                head_sha_at_iteration_end: r.head_sha_at_end.clone(),
                state_at_end: r.state,
                extra: Default::default(),
            }),
        }
    }
    out
}

fn short(sha: &str) -> String {
    sha.chars().take(7).collect()
}
