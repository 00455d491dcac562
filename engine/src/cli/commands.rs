//! The tick commands: `work|review [--loop]` (the wrapper tick),
//! `begin`, `end` and `event` — flags and environment gathered into one
//! [`TickConfig`], the seams built, and the library called.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::args::{CommonArgs, EndArgs, EventArgs, HolderArgs, TickArgs};
use super::{Env, clock_from, usage};
use crate::agent::prompt::Template;
use crate::agent::{AgentKind, AgentRunner, AgentSettings};
use crate::config::{self, TickConfig};
use crate::exit;
use crate::os::clock::Clock;
use crate::os::crash::CrashPoints;
use crate::os::liveness::OsProbe;
use crate::rules::gates::{LinePrompt, NoPrompt, Prompt};
use crate::skill::runner::{Interrupts, NoInterrupts, ProcessRunner, SkillRunner};
use crate::state::budget::CeilingFlags;
use crate::state::holder;
use crate::state::lock::Identity;
use crate::state::paths::{Skill, StatePaths};
use crate::state::protocol::ModelUsage;
use crate::tick::{self, EndFlags, EndInput, ResultInput, TranscriptSource, WorkReport, World};
use crate::transcript::{ClaudeDirs, Settle, TranscriptChoice};
use crate::world::git::{Git, GitCli};
use crate::world::tracker::{self, HttpTracker, Tracker, TrackerConfig, TrackerError};

/// A tracker that is not configured: every call says so.
#[derive(Debug)]
struct NoTracker;

impl Tracker for NoTracker {
    fn open_issues(&self) -> Result<Vec<crate::world::backlog::Issue>, TrackerError> {
        Err(TrackerError::NotConfigured)
    }
    fn open_pulls(&self) -> Result<Vec<tracker::Pull>, TrackerError> {
        Err(TrackerError::NotConfigured)
    }
    fn pull(&self, _: u64) -> Result<tracker::Pull, TrackerError> {
        Err(TrackerError::NotConfigured)
    }
    fn review_comments(&self, _: u64) -> Result<Vec<tracker::ReviewComment>, TrackerError> {
        Err(TrackerError::NotConfigured)
    }
    fn comment(&self, _: u64, _: &str) -> Result<(), TrackerError> {
        Err(TrackerError::NotConfigured)
    }
    fn issue_comments(&self, _: u64) -> Result<Vec<tracker::ReviewComment>, TrackerError> {
        Err(TrackerError::NotConfigured)
    }
    fn login(&self) -> Result<String, TrackerError> {
        Err(TrackerError::NotConfigured)
    }
}

/// A tick's configuration and the world it runs in, from flags and env.
struct Setup {
    cfg: TickConfig,
    clock: Arc<dyn Clock>,
    git: GitCli,
    tracker: Box<dyn Tracker>,
    /// `--agent`: a real agent does the work instead of a skill command.
    agent: Option<AgentSettings>,
}

/// `--agent` (else `SDD_LOOP_AGENT`) and its flags, or the usage error.
fn agent_settings(
    args: Option<&TickArgs>,
    mode: Mode,
    env: &mut Env<'_>,
) -> Result<Option<AgentSettings>, u8> {
    let var = |k: &str| env.vars.get(k).filter(|v| !v.is_empty()).cloned();
    let from_env = match var("SDD_LOOP_AGENT") {
        None => None,
        Some(v) => match <AgentKind as clap::ValueEnum>::from_str(&v, true) {
            Ok(kind) => Some(kind),
            Err(_) => {
                return Err(usage(
                    env,
                    &format!("SDD_LOOP_AGENT={v:?} is not an agent this engine drives"),
                    "set it to claude, codex, gemini or opencode, or unset it",
                ));
            }
        },
    };
    let Some(args) = args else {
        return Ok(None);
    };
    let given_skill = args.skill_cmd.is_some();
    // A flag beats the environment: `--skill-cmd` wins over SDD_LOOP_AGENT.
    let kind = args.agent.or(from_env.filter(|_| !given_skill));
    let extras = args.agent_cmd.is_some()
        || !args.agent_arg.is_empty()
        || args.agent_model.is_some()
        || args.agent_prompt.is_some();
    let Some(kind) = kind else {
        if extras {
            return Err(usage(
                env,
                "--agent-cmd, --agent-arg, --agent-model and --agent-prompt need --agent",
                "add --agent claude or --agent codex (or set SDD_LOOP_AGENT)",
            ));
        }
        return Ok(None);
    };
    if mode != Mode::Wrapper {
        return Err(usage(
            env,
            "--agent does not apply to begin: the calling session does the work",
            "drop --agent, or run a wrapper tick (`sdd-loop work --loop --agent claude`)",
        ));
    }
    if !args.loop_mode {
        return Err(usage(
            env,
            "--agent needs --loop: an agent is driven only as the work of a loop tick",
            "run `sdd-loop work --loop --agent …`, or run the agent yourself",
        ));
    }
    if var("SDD_LOOP_SKILL_CMD").is_some() && args.agent.is_none() && from_env.is_some() {
        return Err(usage(
            env,
            "both SDD_LOOP_SKILL_CMD and SDD_LOOP_AGENT are set: the work is a skill command or an agent, not both",
            "unset one, or choose on the command line with --skill-cmd or --agent",
        ));
    }
    let prompt = match &args.agent_prompt {
        None => None,
        Some(path) => match Template::load(&env.cwd.join(path)) {
            Ok(t) => Some(t),
            Err(e) => {
                let _ = writeln!(env.stderr, "error: {e}");
                let _ = writeln!(env.stderr, "help: {}", e.help());
                return Err(exit::DATA);
            }
        },
    };
    let codex_home = var("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".codex")));
    Ok(Some(AgentSettings {
        kind,
        command: args.agent_cmd.as_ref().map(|p| {
            // A bare name is looked up on PATH; a path is the project's.
            if p.components().count() > 1 {
                env.cwd.join(p)
            } else {
                p.clone()
            }
        }),
        args: args.agent_arg.clone(),
        model: args.agent_model.clone(),
        prompt,
        codex_config: codex_home.map(|h| h.join("config.toml")),
        gemini_dirs: crate::agent::gemini::dirs(
            var("GEMINI_CLI_HOME").as_deref().map(std::path::Path::new),
            var("HOME").as_deref().map(std::path::Path::new),
        ),
        opencode_configs: [
            var("OPENCODE_CONFIG").map(PathBuf::from),
            var("XDG_CONFIG_HOME").map(|x| PathBuf::from(x).join("opencode/opencode.json")),
            var("HOME").map(|h| PathBuf::from(h).join(".config/opencode/opencode.json")),
        ]
        .into_iter()
        .flatten()
        .collect(),
    }))
}

/// Which command of a tick a [`Setup`] is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Wrapper,
    Begin,
    End,
}

fn setup(
    skill: Skill,
    pr: Option<u64>,
    args: Option<&TickArgs>,
    common: &CommonArgs,
    mode: Mode,
    env: &mut Env<'_>,
) -> Result<Setup, u8> {
    let root: PathBuf = env.cwd.join(&common.project).components().collect();
    let agent = agent_settings(args, mode, env)?;
    let vars = env.vars.clone();
    let var = |k: &str| vars.get(k).filter(|v| !v.is_empty()).cloned();
    let skill_cmd = args.and_then(|a| a.skill_cmd.clone());
    // Settings a first run may lack are gathered, not reported one per
    // attempt: each missing one is an error line, all in one answer.
    let mut missing: Vec<(String, String)> = Vec::new();
    let skill_cmd = match mode {
        Mode::Wrapper if agent.is_some() => String::new(),
        Mode::Wrapper => match skill_cmd.or_else(|| var("SDD_LOOP_SKILL_CMD")) {
            Some(c) => c,
            None => {
                missing.push((
                    "no skill command: the engine wraps a skill and needs to know how to run it".to_owned(),
                    format!(
                        "pass --skill-cmd 'CMD' or set SDD_LOOP_SKILL_CMD, or drive an agent with --agent claude|codex|gemini|opencode — or, inside an agent session, bracket the work with `sdd-loop {skill} begin --loop` and `sdd-loop {skill} end`"
                    ),
                ));
                String::new()
            }
        },
        Mode::Begin | Mode::End => {
            if skill_cmd.is_some() {
                return Err(usage(
                    env,
                    "--skill-cmd does not apply to begin: the calling session does the work",
                    "drop --skill-cmd, or run a wrapper tick (`sdd-loop work --loop --skill-cmd CMD`)",
                ));
            }
            String::new()
        }
    };
    if mode == Mode::Begin && !args.is_some_and(|a| a.loop_mode) {
        return Err(usage(
            env,
            "begin needs --loop: the in-session halves exist only in loop mode",
            &format!(
                "run `sdd-loop {skill} begin --loop …`; without --loop the skill runs once, as it always has, with no engine"
            ),
        ));
    }
    let clock = clock_from(env).map_err(|(msg, help)| usage(env, &msg, help))?;
    let crash = match var("SDD_LOOP_CRASH_AT") {
        None => CrashPoints::none(),
        Some(name) => CrashPoints::arm(&name)
            .map_err(|msg| usage(env, &msg, "run `sdd-loop crash-points` for the list"))?,
    };
    let lock_poll = match var("SDD_LOOP_POLL_MS").map(|v| v.parse::<u64>()) {
        None => Duration::from_millis(config::DEFAULT_LOCK_POLL_MS),
        Some(Ok(ms)) => Duration::from_millis(ms.max(1)),
        Some(Err(_)) => {
            return Err(usage(
                env,
                "SDD_LOOP_POLL_MS must be a whole number of milliseconds",
                "e.g. SDD_LOOP_POLL_MS=200",
            ));
        }
    };
    if let Some(d) = args.and_then(|a| a.max_dollars)
        && !(d.is_finite() && d >= 0.0)
    {
        return Err(usage(
            env,
            &format!("--max-dollars {d} is not a non-negative amount"),
            "e.g. --max-dollars 25, or 0 to disable the cost stop",
        ));
    }
    let git = GitCli { dir: root.clone() };
    let repository = common
        .repo
        .clone()
        .or_else(|| var("SDD_LOOP_REPO"))
        .or_else(|| {
            git.remote_url(&common.remote)
                .and_then(|u| tracker::repo_from_remote(&u))
        });
    let tracker_url = common
        .tracker_url
        .clone()
        .or_else(|| var("SDD_LOOP_TRACKER_URL"))
        .unwrap_or_else(|| config::DEFAULT_TRACKER_URL.to_owned());
    let loop_tick = mode != Mode::End && args.is_some_and(|a| a.loop_mode);
    // The variables, else `gh`'s token for the tracker's host — asked once,
    // and only when there is a tracker to ask.
    let found = if repository.is_some() {
        tracker::token::find(&vars, &tracker_url)
    } else {
        tracker::token::from_vars(&vars).ok_or(tracker::token::NoToken::GhAbsent)
    };
    let token = found.as_ref().ok().map(|t| t.value.clone());
    if loop_tick && repository.is_none() {
        missing.push((
            "no tracker repository configured: a loop tick reads its backlog from the tracker".to_owned(),
            "pass --repo OWNER/NAME (or set SDD_LOOP_REPO), or run inside a clone whose origin is on the tracker".to_owned(),
        ));
    }
    if !missing.is_empty() {
        for (message, help) in &missing {
            let _ = writeln!(env.stderr, "error: {message}");
            let _ = writeln!(env.stderr, "help: {help}");
        }
        if loop_tick && token.is_none() {
            let _ = writeln!(
                env.stderr,
                "note: no tracker token either (SDD_LOOP_TRACKER_TOKEN, else GITHUB_TOKEN, else `gh auth token`): the tracker is asked anonymously, which a private repository refuses"
            );
        }
        if missing.len() > 1 {
            let _ = writeln!(
                env.stderr,
                "{} settings are missing; nothing was changed",
                missing.len()
            );
        }
        return Err(exit::USAGE);
    }
    let seconds = |flag: Option<u64>, name: &str, env_name: &str, default: u64| match flag
        .map(Ok)
        .or_else(|| var(env_name).map(|v| v.trim().parse::<u64>()))
    {
        None => Ok(default),
        Some(Ok(n)) if n > 0 => Ok(n),
        _ => Err(format!(
            "--{name} (or {env_name}) must be a whole number of seconds above 0"
        )),
    };
    let limits = seconds(
        common.tracker_timeout,
        "tracker-timeout",
        "SDD_LOOP_TRACKER_TIMEOUT",
        config::DEFAULT_TRACKER_TIMEOUT_SECS,
    )
    .and_then(|timeout| {
        seconds(
            common.tracker_retry_budget,
            "tracker-retry-budget",
            "SDD_LOOP_TRACKER_RETRY_BUDGET",
            config::DEFAULT_TRACKER_RETRY_BUDGET_SECS,
        )
        .map(|budget| (timeout, budget))
    });
    let (timeout, retry_budget) = match limits {
        Ok(l) => l,
        Err(msg) => {
            return Err(usage(
                env,
                &msg,
                "e.g. --tracker-timeout 10 --tracker-retry-budget 30",
            ));
        }
    };
    if loop_tick && let Err(why) = &found {
        let _ = writeln!(
            env.stderr,
            "note: no tracker token: {why}; the tracker is asked anonymously, which a private repository refuses"
        );
    }
    let tracker: Box<dyn Tracker> = match &repository {
        Some(repo) => {
            let mut config = TrackerConfig::new(&tracker_url, repo, token.clone());
            config.now = Some(clock.now());
            config.token_source = found.as_ref().ok().map(|t| t.source.clone());
            config.timeout = Duration::from_secs(timeout);
            config.retry_budget = Duration::from_secs(retry_budget);
            let clock = Arc::clone(&clock);
            Box::new(HttpTracker::new(config).with_sleep(move |d| clock.sleep(d)))
        }
        None => Box::new(NoTracker),
    };
    let mut cfg = TickConfig::new(skill, root.clone(), skill_cmd);
    cfg.pr = pr;
    cfg.lock_poll = lock_poll;
    cfg.json = common.json;
    cfg.repository = repository;
    cfg.remote = common.remote.clone();
    cfg.crash = crash;
    cfg.environment = vars.clone();
    cfg.tracker_token = token.clone();
    // The skill runs under this binary's guard (signalled if we die).
    cfg.guard = std::env::current_exe().ok();
    if let Some(args) = args {
        cfg.claude_md = args
            .claude_md
            .as_ref()
            .map(|p| env.cwd.join(p))
            .unwrap_or_else(|| root.join("CLAUDE.md"));
        cfg.loop_mode = args.loop_mode;
        cfg.ceilings = CeilingFlags {
            max_iterations: args.max_iterations,
            max_prs: args.max_prs,
            max_minutes: args.max_minutes,
            max_dollars: args.max_dollars,
        };
        cfg.lock = args.lock;
        cfg.resume = args.resume;
        cfg.fresh = args.fresh;
        cfg.budget_file = args.budget_file.as_ref().map(|p| env.cwd.join(p));
        cfg.no_chain = args.no_chain;
        cfg.dry_run = args.dry_run;
        cfg.answers = args.answer.clone();
        cfg.answers_file = args.answers.as_ref().map(|p| env.cwd.join(p));
        cfg.max_agents = args.max_agents.max(1);
        cfg.stall_timeout = Duration::from_secs(args.stall_timeout.max(1));
        cfg.drain_timeout = Duration::from_secs(args.drain_timeout);
    }
    Ok(Setup {
        cfg,
        clock,
        git,
        tracker,
        agent,
    })
}

/// Runs `f` with the world a [`Setup`] describes, `me` holding the lock.
fn with_world(
    setup: &Setup,
    me: Identity,
    env: &mut Env<'_>,
    f: impl FnOnce(&TickConfig, &mut World<'_>) -> tick::TickResult,
) -> u8 {
    let no_interrupts = NoInterrupts;
    let interrupts: &dyn Interrupts = env.interrupts.unwrap_or(&no_interrupts);
    let process = ProcessRunner {
        interrupts,
        tick: Duration::from_millis(50),
    };
    let mut skill_runner;
    let mut agent_runner;
    let runner: &mut dyn SkillRunner = match &setup.agent {
        None => {
            skill_runner = process;
            &mut skill_runner
        }
        Some(settings) => {
            agent_runner = AgentRunner {
                settings: settings.clone(),
                process,
                tracker: setup.tracker.as_ref(),
                git: &setup.git,
                remote: setup.cfg.remote.clone(),
            };
            &mut agent_runner
        }
    };
    let mut no_prompt = NoPrompt;
    let mut line_prompt;
    let prompt: &mut dyn Prompt = match env.terminal.take() {
        Some(input) => {
            line_prompt = LinePrompt {
                input,
                output: std::io::stderr(),
            };
            &mut line_prompt
        }
        None => &mut no_prompt,
    };
    let mut world = World {
        clock: setup.clock.as_ref(),
        probe: &OsProbe,
        me,
        tracker: setup.tracker.as_ref(),
        git: &setup.git,
        runner,
        prompt,
        interrupts,
        out: &mut *env.stdout,
        err: &mut *env.stderr,
        platform: std::env::consts::OS,
    };
    f(&setup.cfg, &mut world).code
}

pub(super) fn tick_command(skill: Skill, pr: Option<u64>, args: TickArgs, env: &mut Env<'_>) -> u8 {
    let setup = match setup(skill, pr, Some(&args), &args.common, Mode::Wrapper, env) {
        Ok(s) => s,
        Err(code) => return code,
    };
    with_world(&setup, Identity::current(&OsProbe), env, tick::run)
}

pub(super) fn begin_command(
    skill: Skill,
    pr: Option<u64>,
    holder: HolderArgs,
    args: TickArgs,
    env: &mut Env<'_>,
) -> u8 {
    let me = match holder.holder_pid {
        Some(pid) => holder::explicit(&OsProbe, pid),
        None => holder::session(&OsProbe, std::process::id()),
    };
    let me = match me {
        Ok(me) => me,
        Err(msg) => {
            return usage(
                env,
                &msg,
                "the lock must name the long-lived session process; pass --holder-pid PID",
            );
        }
    };
    let setup = match setup(skill, pr, Some(&args), &args.common, Mode::Begin, env) {
        Ok(s) => s,
        Err(code) => return code,
    };
    with_world(&setup, me, env, tick::begin)
}

pub(super) fn end_command(skill: Skill, args: EndArgs, env: &mut Env<'_>) -> u8 {
    let input = match end_input(&args, env) {
        Ok(i) => i,
        Err(code) => return code,
    };
    let setup = match setup(skill, None, None, &args.common, Mode::End, env) {
        Ok(s) => s,
        Err(code) => return code,
    };
    with_world(&setup, Identity::current(&OsProbe), env, |cfg, world| {
        tick::end(cfg, world, &input)
    })
}

/// `end`'s flags as the library takes them.
fn end_input(args: &EndArgs, env: &mut Env<'_>) -> Result<EndInput, u8> {
    let result = match args.result.as_deref() {
        None => None,
        Some("-") => {
            let mut bytes = Vec::new();
            let read = match env.stdin.as_mut() {
                Some(stdin) => stdin.read_to_end(&mut bytes).map(|_| ()),
                None => Err(std::io::Error::other("standard input is not available")),
            };
            if let Err(e) = read {
                return Err(usage(
                    env,
                    &format!("--result -: cannot read standard input: {e}"),
                    "pipe the result JSON in, or pass --result FILE",
                ));
            }
            Some(ResultInput {
                source: "standard input".into(),
                bytes,
            })
        }
        Some(path) => {
            let full = env.cwd.join(path);
            match std::fs::read(&full) {
                Ok(bytes) => Some(ResultInput {
                    source: full.display().to_string(),
                    bytes,
                }),
                Err(e) => {
                    return Err(usage(
                        env,
                        &format!("--result {path}: {e}"),
                        "pass the path of the result JSON the work wrote, or - for standard input",
                    ));
                }
            }
        }
    };
    let mut failures = Vec::new();
    for f in &args.failed {
        match f.split_once('=') {
            Some((target, cause)) if !target.trim().is_empty() && !cause.trim().is_empty() => {
                let target = target.trim();
                let target = if target.starts_with('#') {
                    target.to_owned()
                } else {
                    format!("#{target}")
                };
                failures.push((target, cause.trim().to_owned()));
            }
            _ => {
                return Err(usage(
                    env,
                    &format!("--failed {f:?} is not `#N=root cause`"),
                    "e.g. --failed '#44=tests failing in module X'",
                ));
            }
        }
    }
    let mut usage_flags = Vec::new();
    for u in &args.usage {
        let parts: Vec<&str> = u.rsplitn(3, ':').collect();
        let parsed = match parts.as_slice() {
            [out, inp, model] if !model.is_empty() => {
                match (inp.parse::<u64>(), out.parse::<u64>()) {
                    (Ok(i), Ok(o)) => Some(ModelUsage {
                        model: (*model).to_owned(),
                        tokens_in: i,
                        tokens_out: o,
                        ..ModelUsage::default()
                    }),
                    _ => None,
                }
            }
            _ => None,
        };
        match parsed {
            Some(m) => usage_flags.push(m),
            None => {
                return Err(usage(
                    env,
                    &format!("--usage {u:?} is not `MODEL:IN:OUT`"),
                    "e.g. --usage claude-sonnet-4-5:120000:8000 (input and output tokens)",
                ));
            }
        }
    }
    let caller = match args.holder.holder_pid {
        Some(pid) => Some(pid),
        None => holder::session(&OsProbe, std::process::id())
            .ok()
            .map(|i| i.pid),
    };
    Ok(EndInput {
        iteration: args.iteration,
        caller,
        result,
        flags: EndFlags {
            opened: args.opened.clone(),
            updated: args.updated.clone(),
            comments: args.comments,
            merges: args.merges,
            agents: args.agents,
            failures,
            usage: usage_flags,
            summary: args.summary.clone(),
        },
        work: WorkReport {
            failure: args.error.clone(),
            qmd: args.qmd_unreachable.clone(),
            interrupted: None,
        },
        transcript: args.transcript.as_deref().map(|t| TranscriptSource {
            choice: if t == "auto" {
                TranscriptChoice::Auto
            } else {
                TranscriptChoice::Path(env.cwd.join(t))
            },
            dirs: ClaudeDirs {
                config_dir: env
                    .vars
                    .get("CLAUDE_CONFIG_DIR")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from),
                home: env.vars.get("HOME").map(PathBuf::from).unwrap_or_default(),
                session_id: env
                    .vars
                    .get("CLAUDE_CODE_SESSION_ID")
                    .filter(|v| !v.is_empty())
                    .cloned(),
            },
            // Claude Code sets CLAUDECODE=1 for the commands and hooks it
            // runs: then it may still hold entries it has not written.
            settle: env
                .vars
                .get("CLAUDECODE")
                .is_some_and(|v| !v.is_empty())
                .then_some(Settle::CLAUDE_CODE),
            prompt_id: args.prompt_id.clone().filter(|p| !p.is_empty()),
        }),
    })
}

pub(super) fn event_command(skill: Skill, args: EventArgs, env: &mut Env<'_>) -> u8 {
    let root: PathBuf = env.cwd.join(&args.project).components().collect();
    let paths = StatePaths::new(&root, skill, None);
    let redactor = super::env_redactor(&env.vars);
    match tick::append_event(&paths, &args.event, &redactor) {
        Ok(iteration) => {
            let _ = writeln!(env.stdout, "event recorded for iteration {iteration}");
            exit::TICK_DONE
        }
        // A refused event is quoted by the JSON error (an unknown variant,
        // a value of the wrong type): redacted like the event itself.
        Err(f) => {
            let _ = writeln!(env.stderr, "error: {}", redactor.redact(&f.message));
            let _ = writeln!(env.stderr, "help: {}", redactor.redact(&f.help));
            f.code
        }
    }
}
