//! The tick commands: `work|review [--loop]` (the wrapper tick),
//! `begin`, `end` and `event` — flags and environment gathered into one
//! [`TickConfig`], the seams built, and the library called.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::args::{CommonArgs, EndArgs, EventArgs, HolderArgs, TickArgs};
use super::env::{Env, env_redactor, usage};
use super::gather::{Mode, Refusal, Request, WorldLookups, gather};
use crate::agent::prompt::Template;
use crate::agent::{AgentKind, AgentRunner, AgentSettings};
use crate::config::TickConfig;
use crate::exit;
use crate::os::clock::Clock;
use crate::os::liveness::OsProbe;
use crate::rules::gates::{LinePrompt, NoPrompt, Prompt};
use crate::skill::runner::{Interrupts, NoInterrupts, ProcessRunner, SkillRunner};
use crate::state::holder;
use crate::state::lock::Identity;
use crate::state::paths::{Skill, StatePaths};
use crate::state::protocol::ModelUsage;
use crate::tick::{self, EndFlags, EndInput, ResultInput, TranscriptSource, WorkReport, World};
use crate::transcript::{ClaudeDirs, Settle, TranscriptChoice};
use crate::world::git::GitCli;
use crate::world::tracker::{self, HttpTracker, Tracker, TrackerError};

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
    fn post_comment(&self, _: u64, _: &str) -> Result<tracker::Posted, TrackerError> {
        Err(TrackerError::NotConfigured)
    }
    fn replies(&self, _: u64, _: jiff::Timestamp) -> Result<Vec<tracker::Reply>, TrackerError> {
        Err(TrackerError::NotConfigured)
    }
    fn permission(&self, _: &str) -> Result<String, TrackerError> {
        Err(TrackerError::NotConfigured)
    }
    fn find_issue(&self, _: &str, _: &str) -> Result<Option<u64>, TrackerError> {
        Err(TrackerError::NotConfigured)
    }
    fn open_issue(&self, _: &str, _: &str, _: &[&str]) -> Result<tracker::Posted, TrackerError> {
        Err(TrackerError::NotConfigured)
    }
    fn edit_issue_body(&self, _: u64, _: &str) -> Result<(), TrackerError> {
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
                "add --agent claude, codex, gemini or opencode (or set SDD_LOOP_AGENT)",
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

/// The tick's [`Setup`]: the agent chosen, the configuration gathered
/// ([`gather`]), every problem printed at once, and the world built.
fn setup(
    skill: Skill,
    pr: Option<u64>,
    args: Option<&TickArgs>,
    common: &CommonArgs,
    mode: Mode,
    env: &mut Env<'_>,
) -> Result<Setup, u8> {
    let agent = agent_settings(args, mode, env)?;
    let cwd = env.cwd.clone();
    let request = Request {
        skill,
        pr,
        args,
        common,
        mode,
        cwd: &cwd,
        agent: agent.as_ref().map(|a| a.kind),
    };
    let git = GitCli {
        dir: cwd.join(&common.project).components().collect(),
    };
    let lookups = WorldLookups {
        vars: &env.vars,
        git: &git,
    };
    let gathered = match gather(&request, &env.vars, &lookups) {
        Ok(g) => g,
        Err(refusal) => return Err(refuse(&refusal, env)),
    };
    if let Some(note) = &gathered.note {
        let _ = writeln!(env.stderr, "{note}");
    }
    let mut cfg = gathered.cfg;
    // The skill runs under this binary's guard (signalled if we die).
    cfg.guard = std::env::current_exe().ok();
    let tracker: Box<dyn Tracker> = match gathered.tracker {
        Some(mut config) => {
            config.now = Some(gathered.clock.now());
            // Retries wait on the tick's clock: real time, or none under
            // the harness's simulated clock.
            let clock = Arc::clone(&gathered.clock);
            Box::new(HttpTracker::new(config).with_sleep(move |d| clock.sleep(d)))
        }
        None => Box::new(NoTracker),
    };
    Ok(Setup {
        cfg,
        clock: gathered.clock,
        git,
        tracker,
        agent,
    })
}

/// Prints every problem, then what follows them; the usage exit code.
fn refuse(refusal: &Refusal, env: &mut Env<'_>) -> u8 {
    let redactor = env_redactor(&env.vars);
    for problem in &refusal.problems {
        // A value given wrong is quoted, so redacted; a missing setting's
        // lines quote nothing.
        let (message, help) = if problem.missing {
            (problem.message.clone(), problem.help.clone())
        } else {
            (
                redactor.redact(&problem.message).into_owned(),
                redactor.redact(&problem.help).into_owned(),
            )
        };
        let _ = writeln!(env.stderr, "error: {message}");
        let _ = writeln!(env.stderr, "help: {help}");
    }
    for line in refusal.trailer() {
        let _ = writeln!(env.stderr, "{line}");
    }
    exit::USAGE
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
            turn_ended_by: args.turn_ended_by.clone(),
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
            last_message: args.last_message.clone().filter(|m| !m.is_empty()),
        }),
    })
}

pub(super) fn event_command(skill: Skill, args: EventArgs, env: &mut Env<'_>) -> u8 {
    let root: PathBuf = env.cwd.join(&args.project).components().collect();
    let paths = StatePaths::new(&root, skill, None);
    let redactor = env_redactor(&env.vars);
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
