//! What one engine process brings to a tick: the configuration, the seams
//! it acts through, where it prints, the project's inputs (rates,
//! redaction, agent logins), and what it has said and asked so far.
//!
//! [`Ctx`] holds no tick state: the run's counters live in `budget.json`
//! and history, and what `begin` decided reaches `end` through the journal
//! ([`super::handover`]), so the two halves behave the same whether they
//! run in one process (the wrapper tick) or in two (an in-session tick).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use jiff::Timestamp;

use super::Failure;
use crate::config::TickConfig;
use crate::exit;
use crate::os::clock::{self, Clock};
use crate::os::liveness::ProcessProbe;
use crate::rules::claude_md::ClaudeMd;
use crate::rules::gates::Answerer;
use crate::rules::rates::RateTable;
use crate::rules::redact::Redactor;
use crate::rules::stop::Fired;
use crate::skill::runner::Interrupts;
use crate::state::budget::Budget;
use crate::state::exchange::Exchange;
use crate::state::history::{self, GateRecord, NotificationFailure, NotificationsLine};
use crate::state::journal::Shown;
use crate::state::lock::{self, HeldLock, Identity};
use crate::state::paths::{Skill, StatePaths};
use crate::state::protocol::SkillEvent;
use crate::tick::report::{self, FinalView, StatusView, TickCost};
use crate::world::git::Git;
use crate::world::notify::{self, Notice, Outbox, Target};
use crate::world::tracker::Tracker;

/// What the inputs outside `.sdd/loop` say.
#[derive(Debug)]
pub(crate) struct Inputs {
    pub rates: RateTable,
    pub redactor: Redactor,
    pub agents: BTreeSet<String>,
}

impl Inputs {
    /// The redactor for what a tick writes or prints before CLAUDE.md is
    /// read: credential shapes, the tracker token and secret-named
    /// environment values.
    pub fn base_redactor(cfg: &TickConfig) -> Redactor {
        Self::redactor_builder(cfg).build()
    }

    fn redactor_builder(cfg: &TickConfig) -> crate::rules::redact::RedactorBuilder {
        let mut builder = Redactor::builder().env(&cfg.environment);
        if let Some(token) = &cfg.tracker_token {
            builder = builder.secret("tracker-token", token);
        }
        crate::world::notify::with_secrets(builder, &cfg.notify)
    }

    /// Reads CLAUDE.md: rates, redaction patterns and agent logins.
    pub fn load(cfg: &TickConfig) -> Result<Self, Failure> {
        let claude_md = &cfg.claude_md;
        let md = ClaudeMd::load(claude_md).map_err(|e| {
            Failure::new(
                exit::DATA,
                format!("cannot read {}: {e}", claude_md.display()),
                "pass --claude-md PATH, or make the file readable",
            )
        })?;
        let rates = RateTable::from_claude_md(&md)
            .map_err(|e| Failure::new(exit::DATA, e.to_string(), e.help()))?;
        let redactor = Self::redactor_builder(cfg)
            .claude_md(&md)
            .map_err(|e| Failure::new(exit::DATA, e.to_string(), e.help()))?
            .build();
        let agents = md.agent_logins().into_iter().collect();
        Ok(Self {
            rates,
            redactor,
            agents,
        })
    }
}

/// The seams a tick acts through, borrowed from [`super::World`].
pub(crate) struct Seams<'w> {
    pub clock: &'w dyn Clock,
    pub probe: &'w dyn ProcessProbe,
    pub me: Identity,
    pub tracker: &'w dyn Tracker,
    pub git: &'w dyn Git,
    pub interrupts: &'w dyn Interrupts,
    pub platform: &'w str,
}

/// One process's view of a tick.
pub(crate) struct Ctx<'c, 'w> {
    pub cfg: &'c TickConfig,
    pub clock: &'w dyn Clock,
    pub probe: &'w dyn ProcessProbe,
    /// Who holds the lock for this tick: this process (wrapper) or the
    /// calling session (`begin`).
    pub me: Identity,
    pub tracker: &'w dyn Tracker,
    pub git: &'w dyn Git,
    pub interrupts: &'w dyn Interrupts,
    /// The report sink: stdout, or stderr under `--json`.
    pub report: &'w mut dyn Write,
    /// Diagnostics and the skill's output: stderr.
    pub diag: &'w mut dyn Write,
    pub platform: String,
    pub answerer: Answerer<'w>,
    pub inputs: Inputs,
    pub paths: StatePaths,
    /// When this process started the tick (its clock reading).
    pub started: Timestamp,
    /// The same moment on the clock's monotonic reading, which deadlines
    /// are measured on.
    pub started_mono: Duration,
    /// Every one-line note printed, in order (for `--json`).
    pub notes: Vec<String>,
    /// Gates answered by this process, redacted.
    pub gates: Vec<GateRecord>,
    /// This tick's spend by both estimates, for the next status block,
    /// when the work's agent reported its own.
    pub tick_cost: Option<TickCost>,
    /// The claims on the shared remote this tick holds and has not yet
    /// handed to the journal (released if the tick stops before the work).
    pub claims: Option<crate::state::journal::Claims>,
    /// What this tick did with claims, for its history line.
    pub claim_log: super::claim_log::ClaimLog,
    /// The usage windows before and after the work, for its history line
    /// (`usage_windows`; docs/src/usage-windows.md).
    pub window_log: Option<crate::state::windows::WindowsLine>,
    /// The status block's `Usage windows:` line for this tick.
    pub window_status: Option<String>,
    /// Posted gates whose answer came before this tick, not yet asked
    /// again (docs/src/gates-away.md).
    pub answered_away: Vec<String>,
    /// Notifications queued for this tick's delivery ([`Ctx::deliver`]).
    pub notices: Vec<Notice>,
    /// This tick delivered its notifications (once a tick at most).
    pub delivered: bool,
}

impl<'c, 'w> Ctx<'c, 'w> {
    pub fn new(
        cfg: &'c TickConfig,
        seams: Seams<'w>,
        report: &'w mut dyn Write,
        diag: &'w mut dyn Write,
        answerer: Answerer<'w>,
        inputs: Inputs,
    ) -> Self {
        Self {
            cfg,
            clock: seams.clock,
            probe: seams.probe,
            me: seams.me,
            tracker: seams.tracker,
            git: seams.git,
            interrupts: seams.interrupts,
            report,
            diag,
            platform: seams.platform.to_owned(),
            answerer,
            inputs,
            paths: StatePaths::new(&cfg.root, cfg.skill, cfg.budget_file.as_deref()),
            started: seams.clock.now(),
            started_mono: seams.clock.monotonic(),
            notes: Vec::new(),
            gates: Vec::new(),
            tick_cost: None,
            claims: None,
            claim_log: Default::default(),
            window_log: None,
            window_status: None,
            answered_away: Vec::new(),
            notices: Vec::new(),
            delivered: false,
        }
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Prints a one-line note on the report (redacted) and keeps it for
    /// `--json`.
    pub fn note(&mut self, line: impl Into<String>) {
        let line = self.inputs.redactor.apply(&line.into());
        let _ = writeln!(self.report, "{line}");
        self.notes.push(line);
    }

    /// Queues `notice` for this tick's delivery, when the person gave
    /// notification URLs (docs/src/notifications.md).
    pub fn notify(&mut self, notice: Notice) {
        if self.cfg.loop_mode && !self.cfg.notify.is_empty() {
            self.notices.push(notice);
        }
    }

    /// Delivers this tick's notifications, once: the ones kept from
    /// earlier ticks are retried once, the queued ones sent, all within
    /// [`notify::TICK_LIMIT`]; what failed is kept for the next tick and
    /// said in a note. Never fails the tick. Returns what the history
    /// line records (`notifications`), when anything was sent.
    pub fn deliver(&mut self) -> Option<NotificationsLine> {
        if self.delivered || !self.cfg.loop_mode || self.cfg.notify.is_empty() {
            return None;
        }
        self.delivered = true;
        let targets: Vec<Target> = self
            .cfg
            .notify
            .iter()
            .filter_map(|u| Target::parse(u).ok())
            .collect();
        let path = notify::pending_path(&self.paths.dir, self.cfg.skill.as_str());
        if !self.notices.is_empty() {
            let _ = crate::state::files::ensure_state_dir(&self.paths.dir);
        }
        let notices = std::mem::take(&mut self.notices);
        let delivery = Outbox {
            targets: &targets,
            path: path.clone(),
            redactor: &self.inputs.redactor,
            limit: notify::TICK_LIMIT,
        }
        .deliver(&notices, &clock::format(self.now()));
        let kept = self.rel(&path);
        for (event, f) in &delivery.failures {
            self.note(format!(
                "warning: the {event} notification to {} failed: {}; kept in {kept} for the next tick (the tick goes on)",
                f.shown, f.detail
            ));
        }
        for event in &delivery.given_up {
            self.note(format!(
                "warning: gave up the {event} notification after {} ticks without delivery",
                notify::MAX_TICKS
            ));
        }
        if let Some(e) = &delivery.file_error {
            self.note(format!("warning: {e}"));
        }
        (delivery.sent > 0).then(|| NotificationsLine {
            sent: delivery.sent as u64,
            delivered: delivery.delivered as u64,
            failed: delivery
                .failures
                .iter()
                .map(|(event, f)| NotificationFailure {
                    event: event.clone(),
                    target: f.shown.clone(),
                    detail: f.detail.clone(),
                })
                .collect(),
            kept: delivery.kept as u64,
        })
    }

    /// The progress events of `exchange`, saying how many lines of the
    /// file were no event (not counted, so said rather than dropped).
    pub fn read_events(&mut self, exchange: &Exchange) -> Vec<SkillEvent> {
        let (events, skipped) = exchange.read_events();
        if skipped > 0 {
            self.note(format!(
                "{skipped} line(s) of {} are not progress events and were not counted (the format is `sdd-loop schema skill-event`)",
                self.rel(&exchange.events_path())
            ));
        }
        events
    }

    /// `value` with every string redacted: what is written to disk.
    pub fn redacted<T: serde::Serialize + serde::de::DeserializeOwned>(&self, value: T) -> T {
        let Ok(mut json) = serde_json::to_value(&value) else {
            return value;
        };
        self.inputs.redactor.redact_json(&mut json);
        serde_json::from_value(json).unwrap_or(value)
    }

    /// A path under the project, as the user sees it.
    pub fn rel(&self, p: &Path) -> String {
        rel(&self.cfg.root, p)
    }

    /// The status block's context line of a tick that looks at no work
    /// (another tick holds the lock; it waits for a window's reset or a
    /// person's answer): the backlog or PRs left unread, and why.
    pub fn not_examined(&self, why: &str) -> String {
        match (self.cfg.skill, self.cfg.pr.filter(|_| self.cfg.single_pr())) {
            (Skill::Work, _) => format!("Backlog: not examined — {why}"),
            (Skill::Review, Some(n)) => format!("Tracked PR: #{n} (not examined — {why})"),
            (Skill::Review, None) => format!("Tracked PRs: not examined — {why}"),
        }
    }

    /// The status block of a tick that waits (for a window's reset, or a
    /// person's answer): the iteration it would have been, the budget as
    /// recorded (read, never written).
    pub fn show_waiting(
        &mut self,
        why: &str,
        plan: String,
        concurrency: &str,
        outcome: String,
    ) -> Result<(), Failure> {
        let budget = Budget::load(self.paths.budget()).ok().flatten();
        let shown = Shown {
            context: self.not_examined(why),
            plan,
            concurrency: concurrency.to_owned(),
            outcome,
        };
        let started = self.started;
        self.show(
            &shown,
            &Ending {
                iteration: budget
                    .as_ref()
                    .map_or(1, |b| b.iterations_used.saturating_add(1)),
                started,
                budget: budget.as_ref(),
                fired: &[],
            },
        )
    }

    /// Prints the status block, and the final report when the loop ended.
    pub fn show(&mut self, view: &Shown, end: &Ending<'_>) -> Result<(), Failure> {
        let started = clock::format(end.started);
        let minutes = end.budget.map_or(0, |b| b.minutes_elapsed);
        let single_pr = self.cfg.single_pr();
        let block = report::status_block(&StatusView {
            skill: self.cfg.skill,
            iteration: end.iteration,
            started_at: &started,
            context: view.context.clone(),
            plan: view.plan.clone(),
            review_counters: (self.cfg.skill == Skill::Review).then(|| {
                end.budget
                    .map_or((0, 0), |b| (b.comments_pushed, b.merges_attempted))
            }),
            budget: end.budget,
            max_iterations: end.budget.map_or_else(
                || self.cfg.ceilings.resolve().max_iterations,
                |b| b.max_iterations,
            ),
            minutes,
            single_pr,
            stops: end.fired,
            concurrency: view.concurrency.clone(),
            outcome: view.outcome.clone(),
            ended: !end.fired.is_empty(),
            cost: self.tick_cost.take(),
            windows: self.window_status.take(),
        });
        let block = self.inputs.redactor.apply(&block);
        let _ = write!(self.report, "\n{block}");
        if let Some(first) = end.fired.first() {
            let gates = self.run_gates(end.budget)?;
            let text = report::final_report(&FinalView {
                skill: self.cfg.skill,
                cause: first,
                budget: end.budget,
                minutes,
                single_pr: self.cfg.pr.filter(|_| single_pr),
                gates,
                budget_path: self.rel(self.paths.budget()),
                history_path: self.rel(&self.paths.history()),
            });
            let text = self.inputs.redactor.apply(&text);
            let _ = write!(self.report, "\n{text}");
        }
        let _ = self.report.flush();
        self.cfg.crash.hit("before-release");
        Ok(())
    }

    /// Every gate fired in this run, from history (this tick's included).
    fn run_gates(&self, budget: Option<&Budget>) -> Result<Vec<(u64, GateRecord)>, Failure> {
        let all = history::read_all(&self.paths.history())?;
        let run = budget.map(|b| b.started_at.clone());
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

    /// Releases a held lock, warning if another tick took it over.
    pub fn release(&mut self, held: Option<HeldLock>) {
        if let Some(held) = held
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

/// How a tick ends, for the status block and final report.
#[derive(Debug)]
pub(crate) struct Ending<'a> {
    pub iteration: u64,
    pub started: Timestamp,
    pub budget: Option<&'a Budget>,
    pub fired: &'a [Fired],
}

pub(crate) fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

pub(crate) fn pr_ref(n: u64) -> String {
    format!("#{n}")
}

pub(crate) fn list(numbers: &[u64]) -> String {
    numbers
        .iter()
        .map(|n| pr_ref(*n))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(crate) fn short(sha: &str) -> String {
    sha.chars().take(7).collect()
}
