//! The resolved configuration of one tick: flags, environment and defaults
//! gathered once by the binary ([`crate::cli`]) and passed down, so the
//! library never reads the process environment itself.

use std::path::PathBuf;
use std::time::Duration;

use crate::os::crash::CrashPoints;
use crate::rules::gates::AnswerFlag;
use crate::rules::windows::WindowCeilings;
use crate::state::budget::CeilingFlags;
use crate::state::paths::Skill;

/// `--lock` (ADR-0028 concurrency model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LockChoice {
    /// Skip the tick when a live tick holds the lock (default).
    #[default]
    Skip,
    /// Wait for the holder to finish, bounded by the wall-clock budget left.
    Wait,
    /// Override the lock after confirming at the force-unlock gate (discouraged).
    Force,
}

/// Defaults that are not the contract's budgets.
pub const DEFAULT_MAX_AGENTS: u64 = 4;
pub const DEFAULT_STALL_SECS: u64 = 1200;
pub const DEFAULT_DRAIN_SECS: u64 = 60;
pub const DEFAULT_LOCK_POLL_MS: u64 = 5000;
/// How long a posted gate waits for a person (a day).
pub const DEFAULT_GATE_DEADLINE_SECS: u64 = 24 * 60 * 60;

/// `--gate-deadline`: a whole number with a unit, `s`, `m`, `h` or `d`.
pub fn parse_deadline(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 90m, 24h or 2d"))?;
    let unit_secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("`{text}` needs a unit: s, m, h or d (e.g. 24h)")),
    };
    match n.checked_mul(unit_secs) {
        Some(secs) if secs > 0 => Ok(Duration::from_secs(secs)),
        _ => Err(format!("`{text}` is not a positive duration")),
    }
}

pub const DEFAULT_TRACKER_URL: &str = "https://api.github.com";
/// Longest one tracker request may take, from connecting to the last byte
/// of the response (`--tracker-timeout`). A page of 100 issues from the
/// GitHub API takes about a second; ten leaves room for a slow network
/// without letting one silent connection hold the tick.
pub const DEFAULT_TRACKER_TIMEOUT_SECS: u64 = 10;
/// Longest one tracker call may take across all its attempts and the waits
/// between them, `Retry-After` included (`--tracker-retry-budget`). Thirty
/// seconds fits three backed-off retries of a brief outage (0.5 + 1 + 2 s
/// of waiting) or a short `Retry-After`, and a tracker that accepts
/// connections but never answers ends the call in 30 s, not minutes: the
/// next tick tries again, which is cheaper than a tick that hangs.
pub const DEFAULT_TRACKER_RETRY_BUDGET_SECS: u64 = 30;

/// Longest one git command about claims may take (`SDD_LOOP_CLAIM_TIMEOUT`):
/// a fetch or push of a few refs answers in well under a second on a
/// reachable remote; twenty seconds lets a slow link through and still
/// ends a silent one long before a lease would matter.
pub const DEFAULT_CLAIM_TIMEOUT_SECS: u64 = 20;

/// Claims on the shared remote (issue 32): where they live and how long a
/// lease lasts. `TickConfig::claims` is `None` when claims are off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimSettings {
    /// The remote's name (or URL) in the clone.
    pub remote: String,
    /// The machine's name written into the leases.
    pub host: String,
    /// A lease's length from its last renewal.
    pub lease: Duration,
    /// How far two machines' clocks may disagree.
    pub skew: Duration,
    /// The longest one git command may take.
    pub limit: Duration,
}

impl ClaimSettings {
    /// The defaults (15 min leases, 5 min skew) on `remote`.
    pub fn new(remote: impl Into<String>, host: impl Into<String>) -> Self {
        Self {
            remote: remote.into(),
            host: host.into(),
            lease: Duration::from_secs(15 * 60),
            skew: Duration::from_secs(5 * 60),
            limit: Duration::from_secs(DEFAULT_CLAIM_TIMEOUT_SECS),
        }
    }
}

/// One tick's configuration.
#[derive(Debug, Clone)]
pub struct TickConfig {
    pub skill: Skill,
    /// The project root (holds `.sdd/` and `CLAUDE.md`).
    pub root: PathBuf,
    /// `--loop`: enforce the contract. Without it the skill runs once and
    /// nothing under `.sdd/loop/` is created.
    pub loop_mode: bool,
    /// `review --pr N`: single-PR watch mode.
    pub pr: Option<u64>,
    pub ceilings: CeilingFlags,
    /// `--max-5h-percent`, `--max-week-percent`: the usage-window budgets
    /// (docs/src/usage-windows.md); unset, nothing about windows changes.
    pub windows: WindowCeilings,
    /// The agent doing the work (`--agent`: `claude`, `codex`, …), when
    /// one does: who read the usage windows.
    pub agent: Option<String>,
    pub lock: LockChoice,
    pub lock_poll: Duration,
    pub resume: bool,
    /// `--fresh`: start a new run even though one is recorded.
    pub fresh: bool,
    pub budget_file: Option<PathBuf>,
    pub no_chain: bool,
    pub dry_run: bool,
    /// The wrapped skill's command line (`sh -c`).
    pub skill_cmd: String,
    pub answers: Vec<AnswerFlag>,
    pub answers_file: Option<PathBuf>,
    /// Nobody is at this loop: an unanswered gate is posted on the tracker
    /// and the tick waits (`--unattended`; docs/src/gates-away.md).
    pub unattended: bool,
    /// How long a posted gate waits before its conservative option is
    /// taken (`--gate-deadline`).
    pub gate_deadline: Duration,
    pub json: bool,
    /// `owner/name` on the tracker, when known.
    pub repository: Option<String>,
    /// The tracker's API base URL, as resolved (`--tracker-url`,
    /// `SDD_LOOP_TRACKER_URL`, else GitHub's).
    pub tracker_url: Option<String>,
    /// git remote for `ls-remote`.
    pub remote: String,
    /// Most issues (work) or PRs (review) dispatched in one tick.
    pub max_agents: u64,
    pub stall_timeout: Duration,
    pub drain_timeout: Duration,
    pub claude_md: PathBuf,
    pub crash: CrashPoints,
    /// The environment the engine runs in and passes on to the skill: the
    /// value of every variable named like a secret (`*TOKEN`, `*KEY`,
    /// `*SECRET`, `*PASSWORD`) is redacted from everything written or
    /// printed.
    pub environment: std::collections::BTreeMap<String, String>,
    /// The tracker token, redacted likewise.
    pub tracker_token: Option<String>,
    /// The `sdd-loop` binary, to run the skill under its guard
    /// ([`crate::skill::guard`]); `None` runs `sh -c` directly.
    pub guard: Option<PathBuf>,
    /// Claims on the shared remote; `None`: off (no remote to share, or
    /// `SDD_LOOP_CLAIM_REMOTE=off`).
    pub claims: Option<ClaimSettings>,
    /// The person's notification URLs, as configured and checked by the
    /// command line (`--notify`, `SDD_LOOP_NOTIFY`, the variables
    /// CLAUDE.md's `Loop Notify` names; docs/src/notifications.md).
    /// Secrets: redacted everywhere, never passed to the work.
    pub notify: Vec<String>,
    /// The environment variables that hold them, removed from the work's
    /// environment.
    pub notify_vars: Vec<String>,
}

impl TickConfig {
    /// A configuration with the contract's defaults, for tests and callers
    /// that set only what they need.
    pub fn new(skill: Skill, root: impl Into<PathBuf>, skill_cmd: impl Into<String>) -> Self {
        let root = root.into();
        Self {
            skill,
            claude_md: root.join("CLAUDE.md"),
            root,
            loop_mode: true,
            pr: None,
            ceilings: CeilingFlags::default(),
            windows: WindowCeilings::default(),
            agent: None,
            lock: LockChoice::Skip,
            lock_poll: Duration::from_millis(DEFAULT_LOCK_POLL_MS),
            resume: false,
            fresh: false,
            budget_file: None,
            no_chain: false,
            dry_run: false,
            skill_cmd: skill_cmd.into(),
            answers: Vec::new(),
            answers_file: None,
            unattended: false,
            gate_deadline: Duration::from_secs(DEFAULT_GATE_DEADLINE_SECS),
            json: false,
            repository: None,
            tracker_url: None,
            remote: "origin".into(),
            max_agents: DEFAULT_MAX_AGENTS,
            stall_timeout: Duration::from_secs(DEFAULT_STALL_SECS),
            drain_timeout: Duration::from_secs(DEFAULT_DRAIN_SECS),
            crash: CrashPoints::none(),
            environment: Default::default(),
            tracker_token: None,
            guard: None,
            claims: None,
            notify: Vec::new(),
            notify_vars: Vec::new(),
        }
    }

    pub fn single_pr(&self) -> bool {
        self.skill == Skill::Review && self.pr.is_some()
    }
}
