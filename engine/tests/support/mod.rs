//! Fakes at the engine's seams (tracker, git, skill runner, process table)
//! and a sandbox that runs ticks in-process against them, shared by the
//! tick and in-session tests.

#[path = "../tree/mod.rs"]
mod tree;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use jiff::SignedDuration;
use sdd_loop::config::TickConfig;
use sdd_loop::os::clock::ManualClock;
use sdd_loop::os::liveness::{ProcessProbe, SignalZero};
use sdd_loop::rules::gates::{NoPrompt, Prompt};
use sdd_loop::skill::runner::{InterruptKind, NoInterrupts, RunOutcome, RunSpec, SkillRunner};
use sdd_loop::state::exchange::Exchange;
use sdd_loop::state::history::{self, HistoryLine, PrState};
use sdd_loop::state::lock::Identity;
use sdd_loop::state::paths::{Skill, StatePaths};
use sdd_loop::state::protocol::{ModelUsage, PrReport, SkillRequest, SkillResult};
use sdd_loop::tick::{self, World};
use sdd_loop::world::backlog::Issue;
use sdd_loop::world::git::{Git, GitError, WorktreeState};
use sdd_loop::world::tracker::{Posted, Pull, Reply, ReviewComment, Tracker, TrackerError};

// ------------------------------------------------------------------ fakes

#[derive(Debug, Default)]
pub struct FakeTracker {
    pub issues: RefCell<Vec<Issue>>,
    pub pulls: RefCell<Vec<Pull>>,
    pub comments: RefCell<BTreeMap<u64, Vec<ReviewComment>>>,
    pub posted: RefCell<Vec<(u64, String)>>,
    /// Conversation comments by issue or PR.
    pub issue_comments: RefCell<BTreeMap<u64, Vec<ReviewComment>>>,
    pub down: RefCell<bool>,
    /// PRs that appear once the PRs have been listed once: opened by the
    /// skill after its tick read the backlog.
    pub opened_after_first_listing: RefCell<Vec<Pull>>,
    /// Issues the loop opened (its dashboard): title and body; each is
    /// numbered 900 and up.
    pub opened_issues: RefCell<Vec<(String, String)>>,
    /// Issue bodies the loop rewrote, in order.
    pub edited_bodies: RefCell<Vec<(u64, String)>>,
}

impl FakeTracker {
    fn check(&self) -> Result<(), TrackerError> {
        if *self.down.borrow() {
            return Err(TrackerError::Unreachable {
                url: "http://127.0.0.1:9".into(),
                detail: "connection refused".into(),
            });
        }
        Ok(())
    }
}

impl Tracker for FakeTracker {
    fn open_issues(&self) -> Result<Vec<Issue>, TrackerError> {
        self.check()?;
        Ok(self.issues.borrow().clone())
    }
    fn open_pulls(&self) -> Result<Vec<Pull>, TrackerError> {
        self.check()?;
        let listed = self
            .pulls
            .borrow()
            .iter()
            .filter(|p| p.state == PrState::Open)
            .cloned()
            .collect();
        let later = std::mem::take(&mut *self.opened_after_first_listing.borrow_mut());
        self.pulls.borrow_mut().extend(later);
        Ok(listed)
    }
    fn pull(&self, number: u64) -> Result<Pull, TrackerError> {
        self.check()?;
        self.pulls
            .borrow()
            .iter()
            .find(|p| p.number == number)
            .cloned()
            .ok_or(TrackerError::Status {
                method: "GET",
                url: format!("/pulls/{number}"),
                status: 404,
                message: "Not Found".into(),
            })
    }
    fn review_comments(&self, number: u64) -> Result<Vec<ReviewComment>, TrackerError> {
        self.check()?;
        Ok(self
            .comments
            .borrow()
            .get(&number)
            .cloned()
            .unwrap_or_default())
    }
    fn comment(&self, number: u64, body: &str) -> Result<(), TrackerError> {
        self.check()?;
        self.posted.borrow_mut().push((number, body.to_owned()));
        Ok(())
    }
    fn issue_comments(&self, number: u64) -> Result<Vec<ReviewComment>, TrackerError> {
        self.check()?;
        Ok(self
            .issue_comments
            .borrow()
            .get(&number)
            .cloned()
            .unwrap_or_default())
    }
    fn login(&self) -> Result<String, TrackerError> {
        self.check()?;
        Ok("sdd-worker".into())
    }
    fn post_comment(&self, number: u64, body: &str) -> Result<Posted, TrackerError> {
        self.check()?;
        self.posted.borrow_mut().push((number, body.to_owned()));
        let id = self.posted.borrow().len() as u64;
        Ok(Posted {
            number,
            id,
            url: format!("https://example.test/issues/{number}#issuecomment-{id}"),
            created_at: jiff::Timestamp::UNIX_EPOCH,
        })
    }
    fn replies(&self, _: u64, _: jiff::Timestamp) -> Result<Vec<Reply>, TrackerError> {
        self.check()?;
        Ok(Vec::new())
    }
    fn permission(&self, _: &str) -> Result<String, TrackerError> {
        self.check()?;
        Ok("read".into())
    }
    fn find_issue(&self, _: &str, _: &str) -> Result<Option<u64>, TrackerError> {
        self.check()?;
        Ok((!self.opened_issues.borrow().is_empty()).then_some(900))
    }
    fn open_issue(&self, title: &str, body: &str, _: &[&str]) -> Result<Posted, TrackerError> {
        self.check()?;
        let mut opened = self.opened_issues.borrow_mut();
        opened.push((title.to_owned(), body.to_owned()));
        let number = 899 + opened.len() as u64;
        Ok(Posted {
            number,
            id: number,
            url: format!("https://example.test/issues/{number}"),
            created_at: jiff::Timestamp::UNIX_EPOCH,
        })
    }
    fn edit_issue_body(&self, number: u64, body: &str) -> Result<(), TrackerError> {
        self.check()?;
        self.edited_bodies
            .borrow_mut()
            .push((number, body.to_owned()));
        Ok(())
    }
}

#[derive(Debug, Default)]
pub struct FakeGit {
    pub heads: RefCell<BTreeMap<String, String>>,
    pub worktrees: RefCell<BTreeMap<PathBuf, (String, String)>>,
    /// Commits this clone does not hold (another clone pushed them).
    pub foreign: RefCell<Vec<String>>,
    /// How many times every head was listed (each a round trip to the
    /// remote for the real git).
    pub listings: std::cell::Cell<usize>,
}

impl Git for FakeGit {
    fn remote_heads(
        &self,
        _: &str,
        branches: &[String],
    ) -> Result<BTreeMap<String, String>, GitError> {
        Ok(self
            .heads
            .borrow()
            .iter()
            .filter(|(b, _)| branches.contains(b))
            .map(|(b, s)| (b.clone(), s.clone()))
            .collect())
    }
    fn worktree(&self, path: &Path) -> WorktreeState {
        match self.worktrees.borrow().get(path) {
            Some((branch, head)) => WorktreeState::At {
                branch: branch.clone(),
                head: head.clone(),
            },
            None => WorktreeState::Missing,
        }
    }
    fn remote_url(&self, _: &str) -> Option<String> {
        None
    }
    fn has_commit(&self, sha: &str) -> bool {
        !self.foreign.borrow().iter().any(|f| f == sha)
    }
    fn heads(&self, _: &str) -> Result<BTreeMap<String, String>, GitError> {
        self.listings.set(self.listings.get() + 1);
        Ok(self.heads.borrow().clone())
    }
}

/// What the fake skill does on one tick.
#[derive(Debug, Clone)]
pub struct Step {
    pub result: Option<SkillResult>,
    pub exit: i32,
    pub stderr: Vec<String>,
    pub interrupted: Option<InterruptKind>,
    /// The runner's root cause, as an agent's adapter gives one.
    pub cause: Option<String>,
    /// As an agent whose own result said success before its process failed.
    pub result_succeeded: bool,
}

impl Step {
    pub fn ok(result: SkillResult) -> Self {
        Self {
            result: Some(result),
            exit: 0,
            stderr: vec![],
            interrupted: None,
            cause: None,
            result_succeeded: false,
        }
    }
    pub fn qmd_down() -> Self {
        Self {
            result: Some(result()),
            exit: 78,
            stderr: vec!["qmd-unreachable: connection refused".into()],
            ..Self::ok(result())
        }
    }
}

#[derive(Debug, Default)]
pub struct FakeRunner {
    pub steps: Vec<Step>,
    pub requests: Vec<SkillRequest>,
}

impl SkillRunner for FakeRunner {
    fn run(&mut self, _: &RunSpec, exchange: &Exchange, echo: &mut dyn Write) -> RunOutcome {
        let request: SkillRequest =
            serde_json::from_slice(&std::fs::read(exchange.request_path()).unwrap()).unwrap();
        self.requests.push(request);
        let step = if self.steps.is_empty() {
            Step::ok(result())
        } else {
            self.steps.remove(0)
        };
        if let Some(r) = &step.result {
            std::fs::write(exchange.result_path(), serde_json::to_vec(r).unwrap()).unwrap();
        }
        for l in &step.stderr {
            let _ = writeln!(echo, "{l}");
        }
        RunOutcome {
            exit_code: Some(step.exit),
            qmd_line: step
                .stderr
                .iter()
                .find(|l| l.contains("qmd-unreachable"))
                .cloned(),
            stderr_tail: step.stderr.clone(),
            interrupted: step.interrupted,
            cause: step.cause,
            result_succeeded: step.result_succeeded,
            ..Default::default()
        }
    }
}

/// Every PID dead except those listed as alive.
#[derive(Debug, Default)]
pub struct Procs(pub Vec<u32>);

impl ProcessProbe for Procs {
    fn signal_zero(&self, pid: u32) -> SignalZero {
        if self.0.contains(&pid) {
            SignalZero::Delivered
        } else {
            SignalZero::NoSuchProcess
        }
    }
    fn start_time(&self, _: u32) -> Option<u64> {
        None
    }
    // Process groups are real: an orphaned skill is a real process.
    fn group_alive(&self, pgid: u32) -> bool {
        sdd_loop::os::liveness::OsProbe.group_alive(pgid)
    }
    fn signal_group(&self, pgid: u32, signal: sdd_loop::os::liveness::GroupSignal) {
        sdd_loop::os::liveness::OsProbe.signal_group(pgid, signal);
    }
}

pub fn result() -> SkillResult {
    SkillResult {
        protocol: 1,
        ..Default::default()
    }
}

pub fn opened(number: u64, model_tokens: u64) -> SkillResult {
    SkillResult {
        protocol: 1,
        prs: vec![PrReport {
            number,
            branch: format!("feature/{number}"),
            head_sha_at_start: None,
            head_sha_at_end: Some(format!("sha{number}")),
            state: PrState::Open,
            opened: true,
        }],
        usage: vec![ModelUsage {
            model: "claude-sonnet-4-7".into(),
            tokens_in: model_tokens,
            tokens_out: model_tokens / 10,
            ..ModelUsage::default()
        }],
        agents_dispatched: 1,
        ..Default::default()
    }
}

pub fn issue(number: u64, body: &str) -> Issue {
    Issue {
        number,
        title: format!("Story {number}"),
        body: body.into(),
        labels: vec![],
    }
}

pub const CLEAR: &str = "### Acceptance Criteria\n- it works\n";

pub fn pull(number: u64, state: PrState, labels: &[&str], sha: &str) -> Pull {
    Pull {
        number,
        title: format!("PR {number}"),
        body: String::new(),
        state,
        labels: labels.iter().map(|l| (*l).to_owned()).collect(),
        head_ref: format!("feature/{number}"),
        head_sha: sha.into(),
        author: "sdd-worker".into(),
        merged_by: None,
    }
}

// ---------------------------------------------------------------- sandbox

pub struct Sandbox {
    /// Put the PRs a scripted result reports on the tracker before the tick
    /// (default); off to test a skill that reports a PR nobody opened.
    pub publish_prs: bool,
    pub dir: tempfile::TempDir,
    pub tracker: FakeTracker,
    pub git: FakeGit,
    pub runner: FakeRunner,
    pub clock: ManualClock,
    pub procs: Procs,
}

pub struct Ran {
    pub code: u8,
    pub out: String,
    pub err: String,
    pub summary: serde_json::Value,
}

impl Sandbox {
    pub fn new() -> Self {
        Self {
            publish_prs: true,
            dir: tempfile::tempdir().unwrap(),
            tracker: FakeTracker::default(),
            git: FakeGit::default(),
            runner: FakeRunner::default(),
            clock: ManualClock::at_str("2026-05-09T14:00:00Z"),
            procs: Procs::default(),
        }
    }

    pub fn with_issues(self, issues: Vec<Issue>) -> Self {
        *self.tracker.issues.borrow_mut() = issues;
        self
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn paths(&self, skill: Skill) -> StatePaths {
        StatePaths::new(self.root(), skill, None)
    }

    pub fn cfg(&self, skill: Skill) -> TickConfig {
        TickConfig::new(skill, self.root(), "fake")
    }

    /// The PRs the next scripted result reports exist on the tracker, as
    /// a real skill's would (the engine counts only PRs the tracker has).
    pub fn publish_reported_prs(&self) {
        let Some(result) = self.runner.steps.first().and_then(|s| s.result.as_ref()) else {
            return;
        };
        let mut pulls = self.tracker.pulls.borrow_mut();
        for pr in &result.prs {
            if !pulls.iter().any(|p| p.number == pr.number) {
                let sha = pr.head_sha_at_end.clone().unwrap_or_default();
                pulls.push(pull(pr.number, pr.state, &[], &sha));
            }
        }
    }

    pub fn tick_with(&mut self, cfg: &TickConfig, prompt: &mut dyn Prompt) -> Ran {
        if self.publish_prs {
            self.publish_reported_prs();
        }
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let result = {
            let mut world = World {
                clock: &self.clock,
                probe: &self.procs,
                me: Identity {
                    pid: 4242,
                    process_start: Some(1),
                },
                tracker: &self.tracker,
                git: &self.git,
                runner: &mut self.runner,
                prompt,
                interrupts: &NoInterrupts,
                out: &mut out,
                err: &mut err,
                platform: "linux",
            };
            tick::run(cfg, &mut world)
        };
        self.clock.advance(SignedDuration::from_secs(30));
        Ran {
            code: result.code,
            out: String::from_utf8(out).unwrap(),
            err: String::from_utf8(err).unwrap(),
            summary: result.summary,
        }
    }

    /// The in-session `begin`, with `holder` as the session process.
    pub fn begin(&mut self, cfg: &TickConfig, holder: u32) -> Ran {
        self.phase(holder, |world| tick::begin(cfg, world))
    }

    /// The in-session `end`.
    pub fn end(&mut self, cfg: &TickConfig, input: &tick::EndInput) -> Ran {
        self.phase(0, |world| tick::end(cfg, world, input))
    }

    fn phase(&mut self, holder: u32, f: impl FnOnce(&mut World<'_>) -> tick::TickResult) -> Ran {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let result = {
            let mut world = World {
                clock: &self.clock,
                probe: &self.procs,
                me: Identity {
                    pid: holder,
                    process_start: Some(u64::from(holder)),
                },
                tracker: &self.tracker,
                git: &self.git,
                runner: &mut self.runner,
                prompt: &mut NoPrompt,
                interrupts: &NoInterrupts,
                out: &mut out,
                err: &mut err,
                platform: "linux",
            };
            f(&mut world)
        };
        self.clock.advance(SignedDuration::from_secs(30));
        Ran {
            code: result.code,
            out: String::from_utf8(out).unwrap(),
            err: String::from_utf8(err).unwrap(),
            summary: result.summary,
        }
    }

    /// Every file under `.sdd/`, with its bytes: a tick that changes
    /// nothing leaves this equal.
    pub fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        tree::files_under(&self.root().join(".sdd"))
    }

    /// A tick with no person to ask: an unexpected gate shows as exit 4.
    pub fn tick(&mut self, cfg: &TickConfig) -> Ran {
        self.tick_with(cfg, &mut NoPrompt)
    }

    pub fn history(&self, skill: Skill) -> Vec<HistoryLine> {
        history::read_all(&self.paths(skill).history())
            .unwrap()
            .lines
            .into_iter()
            .map(|l| l.line)
            .collect()
    }

    pub fn last(&self, skill: Skill) -> HistoryLine {
        self.history(skill).pop().expect("a history line")
    }

    pub fn budget(&self, skill: Skill) -> sdd_loop::state::budget::Budget {
        sdd_loop::state::budget::Budget::load(self.paths(skill).budget())
            .unwrap()
            .unwrap()
    }
}

pub fn answer(cfg: &mut TickConfig, a: &str) {
    cfg.answers.push(a.parse().unwrap());
}

pub fn fired(line: &HistoryLine) -> Vec<String> {
    line.stop_conditions_fired.clone().unwrap_or_default()
}

pub fn gates(line: &HistoryLine) -> Vec<(String, String, String)> {
    line.gates
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|g| (g.name, g.question, g.answer))
        .collect()
}
