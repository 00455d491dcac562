//! The command line of `sdd-loop`: parsing, the environment variables the
//! engine honours, and dispatch to the library. The binary's `main` only
//! captures the process environment into [`Env`], calls [`main_with`] and
//! exits with the code it returns; everything here is testable in-process.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::budget::CeilingFlags;
use crate::clock::{self, Clock, FixedClock, SystemClock};
use crate::config::{self, LockChoice, TickConfig};
use crate::crash::CrashPoints;
use crate::exit;
use crate::gates::{AnswerFlag, LinePrompt, NoPrompt, Prompt};
use crate::git::{Git, GitCli};
use crate::liveness::OsProbe;
use crate::lock::Identity;
use crate::paths::Skill;
use crate::runner::{Interrupts, NoInterrupts, ProcessRunner};
use crate::schema::{self, SchemaKind};
use crate::status;
use crate::tick::{self, World};
use crate::tracker::{self, HttpTracker, Tracker, TrackerConfig, TrackerError};

const ABOUT: &str =
    "The loop engine: one tick of an autonomous coding loop under the ADR-0028 safety contract.";

const LONG_ABOUT: &str = "\
The loop engine: one tick of an autonomous coding loop under the ADR-0028
safety contract — an exclusive lockfile, four budgets, twelve stop
conditions, gates that ask the user, telemetry, and crash resume.

One invocation is one tick; a shell loop is a valid /loop:

  while sdd-loop work --loop --skill-cmd ./run-skill; do sleep 60; done

Loop state lives under .sdd/loop/ in the project: {skill}.lock,
{skill}.budget.json and {skill}.history.jsonl (treat-as-secret: 0700/0600).
`sdd-loop status work` shows it without touching it.";

const ENV_HELP: &str = "\
Environment:
  SDD_LOOP_SKILL_CMD       the wrapped skill's command (same as --skill-cmd)
  SDD_LOOP_REPO            tracker repository OWNER/NAME (same as --repo)
  SDD_LOOP_TRACKER_URL     tracker API base URL (same as --tracker-url)
  SDD_LOOP_TRACKER_TOKEN   bearer token for the tracker (else GITHUB_TOKEN); never printed
  SDD_LOOP_NOW             RFC 3339 instant the engine's clock reads for the whole tick (tests)
  SDD_LOOP_POLL_MS         --lock=wait poll interval in milliseconds [default: 5000]
  SDD_LOOP_CRASH_AT        abort at a named crash point (see `sdd-loop crash-points`)";

/// Command-line interface.
#[derive(Debug, Parser)]
#[command(
    name = "sdd-loop",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = format!("{ENV_HELP}\n\n{}", exit::HELP_TABLE),
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one tick of `/sdd:work`: implement unblocked backlog issues.
    #[command(after_help = format!("Examples:\n  sdd-loop work --loop --skill-cmd ./work-skill --max-prs 1\n  sdd-loop work --loop --resume --answer backlog-drift=continue\n\n{ENV_HELP}\n\n{}", exit::HELP_TABLE))]
    Work(TickArgs),
    /// Run one tick of `/sdd:review`: review open PRs, or watch one with --pr.
    #[command(after_help = format!("Examples:\n  sdd-loop review --loop --pr 142 --skill-cmd ./review-skill\n  sdd-loop review --loop --answers user.yaml\n\n{ENV_HELP}\n\n{}", exit::HELP_TABLE))]
    Review(ReviewArgs),
    /// Show a loop's state — lock holder, budgets, last tick, stop cause —
    /// without changing anything (safe while a tick runs).
    Status(StatusArgs),
    /// Print the JSON Schema of a loop state file or of the skill protocol.
    #[command(after_help = "Example:\n  sdd-loop schema budget > budget.schema.json")]
    Schema {
        /// Which document.
        #[arg(value_enum)]
        kind: SchemaKind,
    },
    /// List the named crash points for SDD_LOOP_CRASH_AT.
    CrashPoints,
}

/// Flags of a tick (`work` and `review`).
#[derive(Debug, Args)]
pub struct TickArgs {
    /// Enforce the loop contract. Without it the skill runs once and nothing
    /// under .sdd/loop/ is created.
    #[arg(long = "loop")]
    pub loop_mode: bool,
    /// Iteration budget for the run [default: 5]
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u64>,
    /// Distinct-PR budget for the run [default: 20]
    #[arg(long, value_name = "N")]
    pub max_prs: Option<u64>,
    /// Wall-clock budget for the run, in minutes [default: 60]
    #[arg(long, value_name = "N")]
    pub max_minutes: Option<u64>,
    /// Cost budget in USD; 0 disables the cost stop (spend is still
    /// tracked) [default: 25]
    #[arg(long, value_name = "USD")]
    pub max_dollars: Option<f64>,
    /// What to do when another tick holds the lock.
    #[arg(long, value_enum, default_value_t = LockChoice::Skip)]
    pub lock: LockChoice,
    /// Recover after a crash or pause: restore counters from the last history
    /// line, re-check tracked PRs and worktrees, reopen a stopped run.
    #[arg(long)]
    pub resume: bool,
    /// Start a new run (fresh budgets) even though one is recorded.
    #[arg(long, conflicts_with = "resume")]
    pub fresh: bool,
    /// Budget file [default: .sdd/loop/{skill}.budget.json]
    #[arg(long, value_name = "PATH")]
    pub budget_file: Option<PathBuf>,
    /// Tell the skill not to chain into review.
    #[arg(long)]
    pub no_chain: bool,
    /// Tell the skill to plan and report without changing anything.
    #[arg(long)]
    pub dry_run: bool,
    /// The wrapped skill's command line, run with `sh -c` in the project
    /// [env: SDD_LOOP_SKILL_CMD]
    #[arg(long, value_name = "CMD")]
    pub skill_cmd: Option<String>,
    /// Answer a gate for this tick, e.g. `backlog-drift=continue` or
    /// `budget-escalation=raise max_iterations=10` (repeatable).
    #[arg(long, value_name = "GATE=ANSWER")]
    pub answer: Vec<AnswerFlag>,
    /// A scripted user: YAML list of `{gate, answer, match?, iteration?}`.
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Print one machine-readable summary line on stdout (the report goes
    /// to stderr).
    #[arg(long)]
    pub json: bool,
    /// Tracker repository OWNER/NAME [env: SDD_LOOP_REPO; default: from the
    /// remote's URL]
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// Tracker API base URL [env: SDD_LOOP_TRACKER_URL; default:
    /// https://api.github.com]
    #[arg(long, value_name = "URL")]
    pub tracker_url: Option<String>,
    /// git remote whose branch heads resume compares against.
    #[arg(long, value_name = "NAME", default_value = "origin")]
    pub remote: String,
    /// Most issues (work) or PRs (review) dispatched in one tick.
    #[arg(long, value_name = "N", default_value_t = config::DEFAULT_MAX_AGENTS)]
    pub max_agents: u64,
    /// Kill the skill after this many seconds without output or progress
    /// events.
    #[arg(long, value_name = "SECS", default_value_t = config::DEFAULT_STALL_SECS)]
    pub stall_timeout: u64,
    /// After an interrupt, give the skill this many seconds to finish its
    /// iteration before it is killed.
    #[arg(long, value_name = "SECS", default_value_t = config::DEFAULT_DRAIN_SECS)]
    pub drain_timeout: u64,
    /// The project directory (holds .sdd/ and CLAUDE.md).
    #[arg(short = 'C', long = "project", value_name = "DIR", default_value = ".")]
    pub project: PathBuf,
    /// CLAUDE.md to read rates, redaction patterns and agent logins from
    /// [default: CLAUDE.md in the project]
    #[arg(long, value_name = "PATH")]
    pub claude_md: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Watch this one PR (single-PR mode: the PR budget does not apply).
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    #[command(flatten)]
    pub tick: TickArgs,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Which loop.
    pub skill: Skill,
    /// One JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// The project directory.
    #[arg(short = 'C', long = "project", value_name = "DIR", default_value = ".")]
    pub project: PathBuf,
    /// Budget file [default: .sdd/loop/{skill}.budget.json]
    #[arg(long, value_name = "PATH")]
    pub budget_file: Option<PathBuf>,
}

impl clap::ValueEnum for Skill {
    fn value_variants<'a>() -> &'a [Self] {
        &[Skill::Work, Skill::Review]
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()))
    }
}

/// What the process gives the engine, gathered once by the binary.
pub struct Env<'a> {
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
    /// The environment variables (a snapshot; the library reads no others).
    pub vars: BTreeMap<String, String>,
    /// The current directory.
    pub cwd: PathBuf,
    /// Standard input, when it is a terminal a person can answer on.
    pub terminal: Option<Box<dyn BufRead + 'a>>,
    /// Signal flags installed by the binary.
    pub interrupts: Option<&'a dyn Interrupts>,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

/// Parses `args` (including the program name) and runs the command.
pub fn main_with(args: impl IntoIterator<Item = std::ffi::OsString>, env: &mut Env<'_>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            let code = match err.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    exit::TICK_DONE
                }
                _ => exit::USAGE,
            };
            let rendered = err.render().to_string();
            let sink: &mut dyn Write = if code == exit::TICK_DONE {
                env.stdout
            } else {
                env.stderr
            };
            let _ = sink.write_all(rendered.as_bytes());
            return code;
        }
    };
    run(cli, env)
}

fn usage(env: &mut Env<'_>, message: &str, help: &str) -> u8 {
    let _ = writeln!(env.stderr, "error: {message}");
    let _ = writeln!(env.stderr, "help: {help}");
    exit::USAGE
}

/// Runs a parsed command.
pub fn run(cli: Cli, env: &mut Env<'_>) -> u8 {
    match cli.command {
        Command::Schema { kind } => write_or(env, &schema::render(kind)),
        Command::CrashPoints => write_or(env, &CrashPoints::listing()),
        Command::Status(args) => {
            let root = env.cwd.join(&args.project);
            let clock = match clock_from(env) {
                Ok(c) => c,
                Err(msg) => {
                    return usage(
                        env,
                        &msg,
                        "SDD_LOOP_NOW takes an RFC 3339 instant such as 2026-05-09T14:50:00Z",
                    );
                }
            };
            status::run(
                &root,
                args.skill,
                args.budget_file.as_deref(),
                args.json,
                clock.as_ref(),
                &OsProbe,
                env.stdout,
                env.stderr,
            )
        }
        Command::Work(args) => tick_command(Skill::Work, None, args, env),
        Command::Review(args) => tick_command(Skill::Review, args.pr, args.tick, env),
    }
}

fn write_or(env: &mut Env<'_>, text: &str) -> u8 {
    match env.stdout.write_all(text.as_bytes()) {
        Ok(()) => exit::TICK_DONE,
        Err(_) => exit::CANT_WRITE,
    }
}

fn clock_from(env: &Env<'_>) -> Result<Box<dyn Clock>, String> {
    match env
        .vars
        .get("SDD_LOOP_NOW")
        .filter(|v| !v.trim().is_empty())
    {
        None => Ok(Box::new(SystemClock)),
        Some(v) => clock::parse(v)
            .map(|ts| Box::new(FixedClock(ts)) as Box<dyn Clock>)
            .map_err(|e| format!("SDD_LOOP_NOW={v:?} is not an RFC 3339 instant: {e}")),
    }
}

/// A tracker that is not configured: every call says so.
#[derive(Debug)]
struct NoTracker;

impl Tracker for NoTracker {
    fn open_issues(&self) -> Result<Vec<crate::backlog::Issue>, TrackerError> {
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
}

fn tick_command(skill: Skill, pr: Option<u64>, args: TickArgs, env: &mut Env<'_>) -> u8 {
    let root = env.cwd.join(&args.project);
    let var = |k: &str| env.vars.get(k).filter(|v| !v.is_empty()).cloned();
    let Some(skill_cmd) = args.skill_cmd.clone().or_else(|| var("SDD_LOOP_SKILL_CMD")) else {
        return usage(
            env,
            "no skill command: the engine wraps a skill and needs to know how to run it",
            "pass --skill-cmd 'CMD' or set SDD_LOOP_SKILL_CMD",
        );
    };
    let clock = match clock_from(env) {
        Ok(c) => c,
        Err(msg) => {
            return usage(
                env,
                &msg,
                "SDD_LOOP_NOW takes an RFC 3339 instant such as 2026-05-09T14:50:00Z",
            );
        }
    };
    let crash = match var("SDD_LOOP_CRASH_AT") {
        None => CrashPoints::none(),
        Some(name) => match CrashPoints::arm(&name) {
            Ok(c) => c,
            Err(msg) => return usage(env, &msg, "run `sdd-loop crash-points` for the list"),
        },
    };
    let lock_poll = match var("SDD_LOOP_POLL_MS").map(|v| v.parse::<u64>()) {
        None => Duration::from_millis(config::DEFAULT_LOCK_POLL_MS),
        Some(Ok(ms)) => Duration::from_millis(ms.max(1)),
        Some(Err(_)) => {
            return usage(
                env,
                "SDD_LOOP_POLL_MS must be a whole number of milliseconds",
                "e.g. SDD_LOOP_POLL_MS=200",
            );
        }
    };
    if let Some(d) = args.max_dollars
        && !(d.is_finite() && d >= 0.0)
    {
        return usage(
            env,
            &format!("--max-dollars {d} is not a non-negative amount"),
            "e.g. --max-dollars 25, or 0 to disable the cost stop",
        );
    }
    let git = GitCli { dir: root.clone() };
    let repository = args
        .repo
        .clone()
        .or_else(|| var("SDD_LOOP_REPO"))
        .or_else(|| {
            git.remote_url(&args.remote)
                .and_then(|u| tracker::repo_from_remote(&u))
        });
    let tracker_url = args
        .tracker_url
        .clone()
        .or_else(|| var("SDD_LOOP_TRACKER_URL"))
        .unwrap_or_else(|| config::DEFAULT_TRACKER_URL.to_owned());
    let token = var("SDD_LOOP_TRACKER_TOKEN").or_else(|| var("GITHUB_TOKEN"));
    let http;
    let tracker: &dyn Tracker = match &repository {
        Some(repo) => {
            http = HttpTracker::new(TrackerConfig::new(&tracker_url, repo, token));
            &http
        }
        None => &NoTracker,
    };
    let cfg = TickConfig {
        skill,
        claude_md: args
            .claude_md
            .map(|p| env.cwd.join(p))
            .unwrap_or_else(|| root.join("CLAUDE.md")),
        root: root.clone(),
        loop_mode: args.loop_mode,
        pr,
        ceilings: CeilingFlags {
            max_iterations: args.max_iterations,
            max_prs: args.max_prs,
            max_minutes: args.max_minutes,
            max_dollars: args.max_dollars,
        },
        lock: args.lock,
        lock_poll,
        resume: args.resume,
        fresh: args.fresh,
        budget_file: args
            .budget_file
            .map(|p| if p.is_absolute() { p } else { env.cwd.join(p) }),
        no_chain: args.no_chain,
        dry_run: args.dry_run,
        skill_cmd,
        answers: args.answer,
        answers_file: args.answers.map(|p| env.cwd.join(p)),
        json: args.json,
        repository,
        remote: args.remote,
        max_agents: args.max_agents.max(1),
        stall_timeout: Duration::from_secs(args.stall_timeout.max(1)),
        drain_timeout: Duration::from_secs(args.drain_timeout),
        crash,
    };
    let no_interrupts = NoInterrupts;
    let interrupts: &dyn Interrupts = env.interrupts.unwrap_or(&no_interrupts);
    let mut runner = ProcessRunner {
        interrupts,
        tick: Duration::from_millis(50),
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
        clock: clock.as_ref(),
        probe: &OsProbe,
        me: Identity::current(&OsProbe),
        tracker,
        git: &git,
        runner: &mut runner,
        prompt,
        interrupts,
        out: &mut *env.stdout,
        err: &mut *env.stderr,
        platform: std::env::consts::OS,
    };
    tick::run(&cfg, &mut world).code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: &[&str], vars: &[(&str, &str)]) -> (u8, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = {
            let mut env = Env {
                stdout: &mut out,
                stderr: &mut err,
                vars: vars
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
                cwd: std::env::temp_dir(),
                terminal: None,
                interrupts: None,
            };
            main_with(
                std::iter::once("sdd-loop")
                    .chain(args.iter().copied())
                    .map(Into::into),
                &mut env,
            )
        };
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn schema_prints_json() {
        let (code, out, _) = call(&["schema", "lock"], &[]);
        assert_eq!(code, 0);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(v["properties"]["pid"].is_object());
    }

    #[test]
    fn usage_errors_exit_64() {
        let (code, _, err) = call(&["schema", "nope"], &[]);
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("nope"));
        let (code, _, err) = call(
            &[
                "work",
                "--loop",
                "--answer",
                "backlog-drfit=continue",
                "--skill-cmd",
                "true",
            ],
            &[],
        );
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("did you mean `backlog-drift`"), "{err}");
    }

    #[test]
    fn help_lists_every_flag_default_env_and_exit_codes() {
        let (code, out, _) = call(&["work", "--help"], &[]);
        assert_eq!(code, 0);
        for needle in [
            "--loop",
            "--max-iterations",
            "[default: 5]",
            "--max-prs",
            "[default: 20]",
            "--max-minutes",
            "[default: 60]",
            "--max-dollars",
            "[default: 25]",
            "--lock",
            "[default: skip]",
            "--resume",
            "--budget-file",
            "--no-chain",
            "--dry-run",
            "--skill-cmd",
            "--answer",
            "--answers",
            "--json",
            "--repo",
            "--tracker-url",
            "SDD_LOOP_NOW",
            "Exit status:",
        ] {
            assert!(out.contains(needle), "work --help lacks {needle}\n{out}");
        }
        let (_, out, _) = call(&["review", "--help"], &[]);
        assert!(out.contains("--pr"));
    }

    #[test]
    fn missing_skill_command_is_a_usage_error_with_help() {
        let (code, _, err) = call(&["work", "--loop"], &[]);
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("help: pass --skill-cmd"), "{err}");
    }

    #[test]
    fn bad_clock_and_crash_point_are_usage_errors() {
        let (code, _, err) = call(
            &["work", "--loop", "--skill-cmd", "true"],
            &[("SDD_LOOP_NOW", "yesterday")],
        );
        assert_eq!(code, exit::USAGE, "{err}");
        let (code, _, err) = call(
            &["work", "--loop", "--skill-cmd", "true"],
            &[("SDD_LOOP_CRASH_AT", "lunch")],
        );
        assert_eq!(code, exit::USAGE, "{err}");
        assert!(err.contains("after-lock"));
    }

    #[test]
    fn crash_points_are_listed() {
        let (code, out, _) = call(&["crash-points"], &[]);
        assert_eq!(code, 0);
        assert!(out.contains("after-history"));
    }
}
