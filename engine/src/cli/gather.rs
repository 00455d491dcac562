//! A tick's configuration gathered from its flags and environment
//! variables: [`gather`] turns them into one [`TickConfig`] (and the
//! tracker's connection settings), or refuses with every [`Problem`] it
//! found, all in one answer, so a first run is not fixed one error per
//! attempt. It is a pure function of what it is given: the two questions
//! only the outside world answers — the git remote's repository and the
//! tracker token — are asked through [`Lookups`], and only when the flags
//! and variables leave them open. Printing is the caller's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::args::{CommonArgs, TickArgs};
use crate::config::{self, TickConfig};
use crate::os::clock::Clock;
use crate::os::crash::CrashPoints;
use crate::state::budget::CeilingFlags;
use crate::state::paths::Skill;
use crate::world::tracker::TrackerConfig;
use crate::world::tracker::token::{self, NoToken, Token};

/// Which command of a tick the configuration is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Wrapper,
    Begin,
    End,
}

/// What the command line says about the tick.
#[derive(Debug, Clone, Copy)]
pub(super) struct Request<'a> {
    pub skill: Skill,
    pub pr: Option<u64>,
    /// `None` for `end`, which takes no tick flags.
    pub args: Option<&'a TickArgs>,
    pub common: &'a CommonArgs,
    pub mode: Mode,
    /// The directory relative paths are taken from.
    pub cwd: &'a Path,
    /// `--agent` (or `SDD_LOOP_AGENT`) chose an agent to do the work.
    pub agent: Option<crate::agent::AgentKind>,
}

/// The answers only the outside world has.
pub(super) trait Lookups {
    /// `owner/name` of the repository `remote` points at, if any.
    fn remote_repository(&self, remote: &str) -> Option<String>;
    /// `gh`'s token for the tracker's host.
    fn gh_token(&self, tracker_url: &str) -> Result<Token, NoToken>;
    /// The names of the clone's remotes (none outside a clone).
    fn remotes(&self) -> Vec<String>;
    /// The machine's name.
    fn hostname(&self) -> Option<String>;
    /// The URL `remote` fetches from, if the clone has it.
    fn remote_url(&self, remote: &str) -> Option<String>;
}

/// What the binary asks: git, and `gh`.
pub(super) struct WorldLookups<'a> {
    pub vars: &'a BTreeMap<String, String>,
    pub git: &'a crate::world::git::GitCli,
}

impl Lookups for WorldLookups<'_> {
    fn remote_repository(&self, remote: &str) -> Option<String> {
        use crate::world::git::Git;
        self.git
            .remote_url(remote)
            .and_then(|u| crate::world::tracker::repo_from_remote(&u))
    }

    fn gh_token(&self, tracker_url: &str) -> Result<Token, NoToken> {
        token::find(self.vars, tracker_url)
    }

    fn remotes(&self) -> Vec<String> {
        self.git.remotes()
    }

    fn remote_url(&self, remote: &str) -> Option<String> {
        use crate::world::git::Git;
        self.git.remote_url(remote)
    }

    fn hostname(&self) -> Option<String> {
        ["/proc/sys/kernel/hostname", "/etc/hostname"]
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .map(|h| h.trim().to_owned())
            .find(|h| !h.is_empty())
    }
}

/// One thing wrong with the flags or variables, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Problem {
    /// A setting a first run may lack (the skill command, the repository),
    /// rather than a value given wrong.
    pub missing: bool,
    pub message: String,
    pub help: String,
}

impl Problem {
    fn invalid(message: impl Into<String>, help: impl Into<String>) -> Self {
        Self {
            missing: false,
            message: message.into(),
            help: help.into(),
        }
    }

    fn missing(message: impl Into<String>, help: impl Into<String>) -> Self {
        Self {
            missing: true,
            ..Self::invalid(message, help)
        }
    }
}

/// Why no tick runs: every problem found, and whether the tracker would
/// have been asked anonymously as well.
#[derive(Debug)]
pub(super) struct Refusal {
    pub problems: Vec<Problem>,
    /// A loop tick that found no tracker token either.
    pub anonymous: bool,
}

impl Refusal {
    /// The lines printed after the problems themselves.
    pub fn trailer(&self) -> Vec<String> {
        let missing = self.problems.iter().filter(|p| p.missing).count();
        let mut lines = Vec::new();
        if missing > 0 && self.anonymous {
            lines.push("note: no tracker token either (SDD_LOOP_TRACKER_TOKEN, else GITHUB_TOKEN, else `gh auth token`): the tracker is asked anonymously, which a private repository refuses".to_owned());
        }
        if missing > 1 {
            lines.push(format!(
                "{missing} settings are missing; nothing was changed"
            ));
        }
        lines
    }
}

/// A tick's configuration, ready to run.
pub(super) struct Gathered {
    pub cfg: TickConfig,
    pub clock: Arc<dyn Clock>,
    /// How to reach the tracker, when a repository is known; its `now`
    /// is the caller's to set from `clock`.
    pub tracker: Option<TrackerConfig>,
    /// Said on stderr before the tick: a loop tick without a token.
    pub note: Option<String>,
}

/// The configuration `request` and `vars` describe, or every problem
/// with them.
pub(super) fn gather(
    request: &Request<'_>,
    vars: &BTreeMap<String, String>,
    lookups: &dyn Lookups,
) -> Result<Gathered, Refusal> {
    let var = |k: &str| vars.get(k).filter(|v| !v.is_empty()).cloned();
    let mut problems = Vec::new();
    let skill_cmd = keep(&mut problems, skill_command(request, &var));
    keep(&mut problems, begin_is_looped(request));
    let clock = keep(&mut problems, clock(vars));
    let crash = keep(&mut problems, crash_points(&var));
    let lock_poll = keep(&mut problems, lock_poll(&var));
    keep(&mut problems, max_dollars(request.args));
    problems.extend(window_ceilings(request, vars));
    let repository = repository(request.common, &var, lookups);
    let tracker_url = request
        .common
        .tracker_url
        .clone()
        .or_else(|| var("SDD_LOOP_TRACKER_URL"))
        .unwrap_or_else(|| config::DEFAULT_TRACKER_URL.to_owned());
    let loop_tick = request.mode != Mode::End && request.args.is_some_and(|a| a.loop_mode);
    if loop_tick && repository.is_none() {
        problems.push(Problem::missing(
            "no tracker repository configured: a loop tick reads its backlog from the tracker",
            "pass --repo OWNER/NAME (or set SDD_LOOP_REPO), or run inside a clone whose origin is on the tracker",
        ));
    }
    let timeout = keep(
        &mut problems,
        seconds(
            request.common.tracker_timeout,
            ("tracker-timeout", "SDD_LOOP_TRACKER_TIMEOUT"),
            config::DEFAULT_TRACKER_TIMEOUT_SECS,
            &var,
        ),
    );
    let retry_budget = keep(
        &mut problems,
        seconds(
            request.common.tracker_retry_budget,
            ("tracker-retry-budget", "SDD_LOOP_TRACKER_RETRY_BUDGET"),
            config::DEFAULT_TRACKER_RETRY_BUDGET_SECS,
            &var,
        ),
    );
    let claims = keep(
        &mut problems,
        claims(request, loop_tick, repository.as_deref(), &var, lookups),
    );
    let notify = match notify::gather(
        request.args.map_or(&[][..], |a| &a.notify[..]),
        vars,
        &claude_md(request),
    ) {
        Ok(n) => Some(n),
        Err(more) => {
            problems.extend(
                more.into_iter()
                    .map(|p| Problem::invalid(p.message, p.help)),
            );
            None
        }
    };
    let (
        Some(skill_cmd),
        Some(claims),
        Some(notify),
        Some(clock),
        Some(crash),
        Some(lock_poll),
        Some(timeout),
        Some(retry_budget),
        true,
    ) = (
        skill_cmd,
        claims,
        notify,
        clock,
        crash,
        lock_poll,
        timeout,
        retry_budget,
        problems.is_empty(),
    )
    else {
        let anonymous = loop_tick
            && problems.iter().any(|p| p.missing)
            && tracker_token(vars, &tracker_url, repository.is_some(), lookups).is_err();
        return Err(Refusal {
            problems,
            anonymous,
        });
    };
    let found = tracker_token(vars, &tracker_url, repository.is_some(), lookups);
    let note = match &found {
        Err(why) if loop_tick => Some(format!(
            "note: no tracker token: {why}; the tracker is asked anonymously, which a private repository refuses"
        )),
        _ => None,
    };
    let token = found.as_ref().ok().map(|t| t.value.clone());
    let tracker = repository.as_ref().map(|repo| {
        let mut config = TrackerConfig::new(&tracker_url, repo, token.clone());
        config.token_source = found.as_ref().ok().map(|t| t.source.clone());
        config.timeout = Duration::from_secs(timeout);
        config.retry_budget = Duration::from_secs(retry_budget);
        config
    });
    let mut cfg = TickConfig::new(request.skill, root(request), skill_cmd);
    cfg.pr = request.pr;
    cfg.lock_poll = lock_poll;
    cfg.json = request.common.json;
    cfg.repository = repository;
    cfg.tracker_url = Some(tracker_url);
    cfg.remote = request.common.remote.clone();
    cfg.crash = crash;
    cfg.environment = vars.clone();
    cfg.tracker_token = token;
    cfg.claims = claims;
    cfg.notify = notify.urls;
    cfg.notify_vars = notify.vars;
    cfg.agent = request.agent.map(|k| k.program().to_owned());
    if let Some(args) = request.args {
        apply_tick_flags(&mut cfg, args, request.cwd);
        cfg.unattended = args.unattended
            || matches!(
                vars.get("SDD_LOOP_UNATTENDED").map(|v| v.trim()),
                Some("1" | "true" | "yes")
            );
    }
    Ok(Gathered {
        cfg,
        clock,
        tracker,
        note,
    })
}

/// `result`'s value, or `None` with its problem kept.
fn keep<T>(problems: &mut Vec<Problem>, result: Result<T, Problem>) -> Option<T> {
    result.map_err(|p| problems.push(p)).ok()
}

/// `--repo`, else `SDD_LOOP_REPO`, else — asked only then — the
/// repository the git remote points at.
fn repository(
    common: &CommonArgs,
    var: &dyn Fn(&str) -> Option<String>,
    lookups: &dyn Lookups,
) -> Option<String> {
    common
        .repo
        .clone()
        .or_else(|| var("SDD_LOOP_REPO"))
        .or_else(|| lookups.remote_repository(&common.remote))
}

/// The variables' token, else — asked only when there is a tracker to
/// ask — `gh`'s token for the tracker's host.
fn tracker_token(
    vars: &BTreeMap<String, String>,
    tracker_url: &str,
    has_repository: bool,
    lookups: &dyn Lookups,
) -> Result<Token, NoToken> {
    match token::from_vars(vars) {
        Some(found) => Ok(found),
        None if has_repository => lookups.gh_token(tracker_url),
        None => Err(NoToken::GhAbsent),
    }
}

/// The project root, `--project` taken from the current directory.
fn root(request: &Request<'_>) -> PathBuf {
    request
        .cwd
        .join(&request.common.project)
        .components()
        .collect()
}

/// The wrapped skill's command line: `--skill-cmd`, else
/// `SDD_LOOP_SKILL_CMD`; none when an agent or the calling session does
/// the work.
fn skill_command(
    request: &Request<'_>,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<String, Problem> {
    let skill_cmd = request.args.and_then(|a| a.skill_cmd.clone());
    let skill = request.skill;
    match request.mode {
        Mode::Wrapper if request.agent.is_some() => Ok(String::new()),
        Mode::Wrapper => skill_cmd.or_else(|| var("SDD_LOOP_SKILL_CMD")).ok_or_else(|| {
            Problem::missing(
                "no skill command: the engine wraps a skill and needs to know how to run it",
                format!(
                    "pass --skill-cmd 'CMD' or set SDD_LOOP_SKILL_CMD, or drive an agent with --agent claude|codex|gemini|opencode — or, inside an agent session, bracket the work with `sdd-loop {skill} begin --loop` and `sdd-loop {skill} end`"
                ),
            )
        }),
        Mode::Begin | Mode::End if skill_cmd.is_some() => Err(Problem::invalid(
            "--skill-cmd does not apply to begin: the calling session does the work",
            "drop --skill-cmd, or run a wrapper tick (`sdd-loop work --loop --skill-cmd CMD`)",
        )),
        Mode::Begin | Mode::End => Ok(String::new()),
    }
}

/// Claims on the shared remote, for a loop tick: on the remote
/// [`claim_remote`] picks; off in a checkout with no remote at all, which
/// has no other clone to share a backlog with.
fn claims(
    request: &Request<'_>,
    loop_tick: bool,
    repository: Option<&str>,
    var: &dyn Fn(&str) -> Option<String>,
    lookups: &dyn Lookups,
) -> Result<Option<config::ClaimSettings>, Problem> {
    if !loop_tick {
        return Ok(None);
    }
    let Some(remote) = claim_remote(&request.common.remote, repository, var, lookups)? else {
        return Ok(None);
    };
    let limit = seconds(
        None,
        ("claim-timeout", "SDD_LOOP_CLAIM_TIMEOUT"),
        config::DEFAULT_CLAIM_TIMEOUT_SECS,
        var,
    )?;
    let host = var("SDD_LOOP_HOST")
        .or_else(|| lookups.hostname())
        .unwrap_or_else(|| "localhost".to_owned());
    let mut settings = config::ClaimSettings::new(remote, host);
    settings.limit = Duration::from_secs(limit);
    Ok(Some(settings))
}

/// The remote claims live on (`docs/src/claims.md`, "Which remote"), for
/// a tick, `status` and `doctor` alike; `None` when claims are off.
///
/// - `SDD_LOOP_CLAIM_REMOTE` names it (a name or a URL, used as given),
///   or is `off`.
/// - Else `--remote` (`origin`), when it is the tracker's repository —
///   or when its URL does not say (a local path, `file://`): claims live
///   where the tracker's repository is, or clones of one backlog would
///   claim on different remotes and never see each other's claims.
/// - A `--remote` on the network that is another repository (a fork, a
///   mirror): the clone's remote that is the tracker's repository, if it
///   has one; else a refusal naming both and the setting.
/// - No remote at all: off. Remotes, but not `--remote`: a refusal.
pub(super) fn claim_remote(
    default: &str,
    repository: Option<&str>,
    var: &dyn Fn(&str) -> Option<String>,
    lookups: &dyn Lookups,
) -> Result<Option<String>, Problem> {
    match var("SDD_LOOP_CLAIM_REMOTE") {
        Some(off) if off == "off" => return Ok(None),
        Some(named) => return Ok(Some(named)),
        None => {}
    }
    let remotes = lookups.remotes();
    if remotes.is_empty() {
        return Ok(None);
    }
    if !remotes.iter().any(|r| r == default) {
        return Err(Problem::invalid(
            format!(
                "this clone has no remote named `{default}` to claim issues on (its remotes: {})",
                remotes.join(", ")
            ),
            "set SDD_LOOP_CLAIM_REMOTE=NAME to claim on the remote every clone shares, or SDD_LOOP_CLAIM_REMOTE=off when no other clone works this backlog",
        ));
    }
    let Some(repository) = repository else {
        return Ok(Some(default.to_owned()));
    };
    let same = |r: &str| r.eq_ignore_ascii_case(repository);
    let network = |remote: &str| {
        lookups
            .remote_url(remote)
            .and_then(|u| crate::world::tracker::network_repository(&u))
    };
    let Some(theirs) = network(default) else {
        return Ok(Some(default.to_owned()));
    };
    if same(&theirs) {
        return Ok(Some(default.to_owned()));
    }
    if let Some(found) = remotes
        .iter()
        .find(|r| *r != default && network(r).is_some_and(|n| same(&n)))
    {
        return Ok(Some(found.clone()));
    }
    Err(Problem::invalid(
        format!(
            "the claims remote `{default}` is {theirs}, not the tracker's repository {repository}: its claims would not be seen by loops in clones of {repository}"
        ),
        format!(
            "add the tracker's repository as a remote (`git remote add upstream URL-OF-{repository}`; ticks then claim there), or set SDD_LOOP_CLAIM_REMOTE=NAME to the remote every clone of {repository} shares, or SDD_LOOP_CLAIM_REMOTE=off when no other clone works this backlog"
        ),
    ))
}

/// `begin` exists only in loop mode.
fn begin_is_looped(request: &Request<'_>) -> Result<(), Problem> {
    if request.mode == Mode::Begin && !request.args.is_some_and(|a| a.loop_mode) {
        let skill = request.skill;
        return Err(Problem::invalid(
            "begin needs --loop: the in-session halves exist only in loop mode",
            format!(
                "run `sdd-loop {skill} begin --loop …`; without --loop the skill runs once, as it always has, with no engine"
            ),
        ));
    }
    Ok(())
}

/// The clock `SDD_LOOP_NOW` and `SDD_LOOP_CLOCK` ask for.
fn clock(vars: &BTreeMap<String, String>) -> Result<Arc<dyn Clock>, Problem> {
    super::env::clock_from_vars(vars).map_err(|(msg, help)| Problem::invalid(msg, help))
}

/// The crash point `SDD_LOOP_CRASH_AT` arms, if any.
fn crash_points(var: &dyn Fn(&str) -> Option<String>) -> Result<CrashPoints, Problem> {
    let list = "run `sdd-loop crash-points` for the list";
    let points = match var("SDD_LOOP_CRASH_AT") {
        None => CrashPoints::none(),
        Some(name) => CrashPoints::arm(&name).map_err(|msg| Problem::invalid(msg, list))?,
    };
    match (var("SDD_LOOP_PAUSE_AT"), var("SDD_LOOP_PAUSE_DIR")) {
        (None, _) => Ok(points),
        (Some(name), Some(dir)) => points
            .pause_at(&name, PathBuf::from(dir))
            .map_err(|msg| Problem::invalid(msg, list)),
        (Some(_), None) => Err(Problem::invalid(
            "SDD_LOOP_PAUSE_AT is set without SDD_LOOP_PAUSE_DIR",
            "set SDD_LOOP_PAUSE_DIR to the directory holding the FIFOs `ready` and `release`",
        )),
    }
}

/// How often a held lock is polled: `SDD_LOOP_POLL_MS`, at least 1 ms.
fn lock_poll(var: &dyn Fn(&str) -> Option<String>) -> Result<Duration, Problem> {
    match var("SDD_LOOP_POLL_MS").map(|v| v.parse::<u64>()) {
        None => Ok(Duration::from_millis(config::DEFAULT_LOCK_POLL_MS)),
        Some(Ok(ms)) => Ok(Duration::from_millis(ms.max(1))),
        Some(Err(_)) => Err(Problem::invalid(
            "SDD_LOOP_POLL_MS must be a whole number of milliseconds",
            "e.g. SDD_LOOP_POLL_MS=200",
        )),
    }
}

/// `--max-dollars` is a non-negative amount.
fn max_dollars(args: Option<&TickArgs>) -> Result<(), Problem> {
    match args.and_then(|a| a.max_dollars) {
        Some(d) if !(d.is_finite() && d >= 0.0) => Err(Problem::invalid(
            format!("--max-dollars {d} is not a non-negative amount"),
            "e.g. --max-dollars 25, or 0 to disable the cost stop",
        )),
        _ => Ok(()),
    }
}

/// The window budgets: a share of the window, and only where the work
/// can report the window's figures — unknown is not zero
/// (docs/src/usage-windows.md, "Where the figures come from").
fn window_ceilings(request: &Request<'_>, vars: &BTreeMap<String, String>) -> Vec<Problem> {
    let Some(args) = request.args else {
        return Vec::new();
    };
    let given: Vec<(&str, f64)> = [
        ("--max-5h-percent", args.max_5h_percent),
        ("--max-week-percent", args.max_week_percent),
    ]
    .into_iter()
    .filter_map(|(flag, v)| v.map(|v| (flag, v)))
    .collect();
    let mut problems: Vec<Problem> = given
        .iter()
        .filter(|(_, v)| !crate::rules::windows::valid_ceiling(*v))
        .map(|(flag, v)| {
            Problem::invalid(
                format!("{flag} {v} is not a share of the window above 0 and at most 100"),
                format!("e.g. {flag} 80"),
            )
        })
        .collect();
    let Some((flag, _)) = given.first() else {
        return problems;
    };
    let set = |k: &str| vars.get(k).is_some_and(|v| !v.is_empty());
    match request.agent {
        Some(crate::agent::AgentKind::Claude) if set("ANTHROPIC_API_KEY") => {
            problems.push(Problem::invalid(
                format!(
                    "{flag} needs Claude Code's usage windows, but ANTHROPIC_API_KEY is set: an API-key session has no 5-hour or weekly window, and Claude Code reports none"
                ),
                "run the loop in a subscriber's session (log in with `claude /login`, or set CLAUDE_CODE_OAUTH_TOKEN) with ANTHROPIC_API_KEY unset, or drop the window budget (--max-dollars budgets an API key's spend)",
            ));
        }
        Some(kind) if kind != crate::agent::AgentKind::Claude => {
            problems.push(Problem::invalid(
                format!(
                    "{flag} needs Claude Code's usage windows, but --agent {kind} reports none"
                ),
                "drop the window budget, or drive Claude Code (--agent claude) in a subscriber's session",
            ));
        }
        _ => {}
    }
    problems
}

/// A whole number of seconds above 0: the flag, else the variable, else
/// `default`.
fn seconds(
    flag: Option<u64>,
    (name, env_name): (&str, &str),
    default: u64,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<u64, Problem> {
    match flag
        .map(Ok)
        .or_else(|| var(env_name).map(|v| v.trim().parse::<u64>()))
    {
        None => Ok(default),
        Some(Ok(n)) if n > 0 => Ok(n),
        _ => Err(Problem::invalid(
            format!("--{name} (or {env_name}) must be a whole number of seconds above 0"),
            "e.g. --tracker-timeout 10 --tracker-retry-budget 30",
        )),
    }
}

/// The CLAUDE.md a tick reads: `--claude-md`, else the project's.
fn claude_md(request: &Request<'_>) -> PathBuf {
    request
        .args
        .and_then(|a| a.claude_md.as_ref())
        .map(|p| request.cwd.join(p))
        .unwrap_or_else(|| root(request).join("CLAUDE.md"))
}

/// The flags only a tick that runs (`work`, `review`, `begin`) takes.
fn apply_tick_flags(cfg: &mut TickConfig, args: &TickArgs, cwd: &Path) {
    cfg.claude_md = args
        .claude_md
        .as_ref()
        .map(|p| cwd.join(p))
        .unwrap_or_else(|| cfg.root.join("CLAUDE.md"));
    cfg.loop_mode = args.loop_mode;
    cfg.ceilings = CeilingFlags {
        max_iterations: args.max_iterations,
        max_prs: args.max_prs,
        max_minutes: args.max_minutes,
        max_dollars: args.max_dollars,
    };
    cfg.windows = crate::rules::windows::WindowCeilings {
        five_hour: args.max_5h_percent,
        seven_day: args.max_week_percent,
    };
    cfg.lock = args.lock;
    cfg.resume = args.resume;
    cfg.fresh = args.fresh;
    cfg.budget_file = args.budget_file.as_ref().map(|p| cwd.join(p));
    cfg.no_chain = args.no_chain;
    cfg.dry_run = args.dry_run;
    cfg.answers = args.answer.clone();
    cfg.answers_file = args.answers.as_ref().map(|p| cwd.join(p));
    if let Some(deadline) = args.gate_deadline {
        cfg.gate_deadline = deadline;
    }
    cfg.max_agents = args.max_agents.max(1);
    cfg.stall_timeout = Duration::from_secs(args.stall_timeout.max(1));
    cfg.drain_timeout = Duration::from_secs(args.drain_timeout);
}

mod notify;
pub(crate) use notify::sources as notify_sources;

#[cfg(test)]
mod tests;

/// The longest one git command of claims may take, for `status` and
/// `doctor` as for a tick: `SDD_LOOP_CLAIM_TIMEOUT` seconds, else the
/// default (a tick refuses a value that is no positive number; these only
/// read, and fall back).
pub(super) fn claim_timeout(vars: &BTreeMap<String, String>) -> std::time::Duration {
    let default = config::DEFAULT_CLAIM_TIMEOUT_SECS;
    let var = |k: &str| vars.get(k).cloned();
    let secs = seconds(
        None,
        ("claim-timeout", "SDD_LOOP_CLAIM_TIMEOUT"),
        default,
        &var,
    );
    std::time::Duration::from_secs(secs.unwrap_or(default))
}

/// The remote claims live on in the clone at `root` ([`claim_remote`]),
/// for `status` and `doctor`: `Err` with the refusal's message and help.
pub(super) fn claim_remote_at(
    vars: &BTreeMap<String, String>,
    root: &Path,
    default: &str,
    repository: Option<&str>,
) -> Result<Option<String>, (String, String)> {
    let git = crate::world::git::GitCli {
        dir: root.to_path_buf(),
    };
    let var = |k: &str| vars.get(k).filter(|v| !v.is_empty()).cloned();
    claim_remote(default, repository, &var, &WorldLookups { vars, git: &git })
        .map_err(|p| (p.message, p.help))
}

/// The tracker's repository for `status` and `doctor`: `SDD_LOOP_REPO`,
/// else the one `origin` in the clone at `root` points at.
pub(super) fn repository_at(vars: &BTreeMap<String, String>, root: &Path) -> Option<String> {
    vars.get("SDD_LOOP_REPO")
        .filter(|v| !v.is_empty())
        .cloned()
        .or_else(|| {
            use crate::world::git::Git;
            crate::world::git::GitCli {
                dir: root.to_path_buf(),
            }
            .remote_url("origin")
            .and_then(|u| crate::world::tracker::repo_from_remote(&u))
        })
}

/// The machine's name in leases: `SDD_LOOP_HOST`, else the system's.
pub(super) fn host(vars: &BTreeMap<String, String>) -> String {
    let git = crate::world::git::GitCli { dir: ".".into() };
    vars.get("SDD_LOOP_HOST")
        .filter(|v| !v.is_empty())
        .cloned()
        .or_else(|| WorldLookups { vars, git: &git }.hostname())
        .unwrap_or_else(|| "localhost".to_owned())
}
