//! The command line of `sdd-loop`: parsing, the environment variables the
//! engine honours, and dispatch to the library. The binary's `main` only
//! captures the process environment into [`Env`], calls [`main_with`] and
//! exits with the code it returns; everything here is testable in-process.

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
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
use crate::holder;
use crate::liveness::OsProbe;
use crate::lock::Identity;
use crate::paths::{Skill, StatePaths};
use crate::protocol::ModelUsage;
use crate::runner::{Interrupts, NoInterrupts, ProcessRunner};
use crate::schema::{self, SchemaKind};
use crate::status;
use crate::tick::{self, EndFlags, EndInput, ResultInput, TranscriptSource, WorkReport, World};
use crate::tracker::{self, HttpTracker, Tracker, TrackerConfig, TrackerError};
use crate::transcript::{ClaudeDirs, TranscriptChoice};

const ABOUT: &str =
    "The loop engine: one tick of an autonomous coding loop under the ADR-0028 safety contract.";

const LONG_ABOUT: &str = "\
The loop engine: one tick of an autonomous coding loop under the ADR-0028
safety contract — an exclusive lockfile, four budgets, twelve stop
conditions, gates that ask the user, telemetry, and crash resume.

One invocation is one tick; a shell loop is a valid /loop:

  while sdd-loop work --loop --skill-cmd ./run-skill; do sleep 60; done

Inside an agent session (`/loop /sdd:work --loop` in Claude Code) the agent
does the work itself between the two halves of the tick:

  sdd-loop work begin --loop --json     # lock, stops, gates → the request
  …the agent does the work in the request…
  sdd-loop work end --transcript auto   # account, record, report, unlock

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
  SDD_LOOP_CRASH_AT        abort at a named crash point (see `sdd-loop crash-points`)
  CLAUDE_CONFIG_DIR, HOME  where `end --transcript auto` looks for Claude Code transcripts";

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
    /// Run one tick of `/sdd:work`: implement unblocked backlog issues
    /// (or, with `begin`/`end`, bracket work an agent session does itself).
    #[command(
        args_conflicts_with_subcommands = true,
        after_help = format!("Examples:\n  sdd-loop work --loop --skill-cmd ./work-skill --max-prs 1\n  sdd-loop work --loop --resume --answer backlog-drift=continue\n  sdd-loop work begin --loop --json\n  sdd-loop work end --opened 12 --transcript auto\n\n{ENV_HELP}\n\n{}", exit::HELP_TABLE)
    )]
    Work(WorkCmd),
    /// Run one tick of `/sdd:review`: review open PRs, or watch one with --pr
    /// (or, with `begin`/`end`, bracket work an agent session does itself).
    #[command(
        args_conflicts_with_subcommands = true,
        after_help = format!("Examples:\n  sdd-loop review --loop --pr 142 --skill-cmd ./review-skill\n  sdd-loop review --loop --answers user.yaml\n  sdd-loop review begin --loop --pr 142 --json\n\n{ENV_HELP}\n\n{}", exit::HELP_TABLE)
    )]
    Review(ReviewCmd),
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
    #[command(flatten)]
    pub common: CommonArgs,
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
    /// CLAUDE.md to read rates, redaction patterns and agent logins from
    /// [default: CLAUDE.md in the project]
    #[arg(long, value_name = "PATH")]
    pub claude_md: Option<PathBuf>,
}

/// Flags every tick command takes: where the project and the tracker are,
/// and how to answer.
#[derive(Debug, Args)]
pub struct CommonArgs {
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
    /// The project directory (holds .sdd/ and CLAUDE.md).
    #[arg(short = 'C', long = "project", value_name = "DIR", default_value = ".")]
    pub project: PathBuf,
}

/// `sdd-loop work`: a wrapper tick, or one half of an in-session tick.
#[derive(Debug, Args)]
pub struct WorkCmd {
    #[command(subcommand)]
    pub phase: Option<Phase<BeginArgs>>,
    #[command(flatten)]
    pub tick: TickArgs,
}

/// `sdd-loop review`: a wrapper tick, or one half of an in-session tick.
#[derive(Debug, Args)]
pub struct ReviewCmd {
    #[command(subcommand)]
    pub phase: Option<Phase<ReviewBeginArgs>>,
    /// Watch this one PR (single-PR mode: the PR budget does not apply).
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    #[command(flatten)]
    pub tick: TickArgs,
}

/// The halves of an in-session tick, and the progress-event helper.
#[derive(Debug, Subcommand)]
pub enum Phase<B: clap::Args> {
    /// Everything up to the work: lock (held for the calling session),
    /// state, resume, entry stops, gates, journal — and the request.
    #[command(after_help = BEGIN_HELP)]
    Begin(Box<B>),
    /// Everything after the work: account what the session reports,
    /// exit stops, history line, budget, status block or final report,
    /// unlock.
    #[command(after_help = END_HELP)]
    End(Box<EndArgs>),
    /// Append one progress event (JSON) to the open iteration's events
    /// file: spend and PRs recorded as they happen survive a crash.
    #[command(after_help = EVENT_HELP)]
    Event(EventArgs),
}

const BEGIN_HELP: &str = "\
What begin decides (exit status, and `outcome` in the --json line):
  0  work  do exactly the work in the request (`request` in --json; also
           written to `request_file`), then run `end`
  5  skip  nothing to do this tick: another tick holds the lock, or nothing
           was selected; the tick is recorded — end your turn
  3  stop  the loop has ended (final report printed): stop /loop
  4  ask   a gate needs the user: ask `question` (options in `options`), then
           run begin again with --answer GATE=ANSWER; nothing was changed

The lock is held for the session, not for begin: --holder-pid, or the
nearest ancestor process that is not a shell or launcher. If the session
dies before `end`, the next tick reaps the lock and recovers the iteration
from its journal and events.

Example:
  sdd-loop work begin --loop --json --answer budget-escalation=continue";

const END_HELP: &str = "\
The result is assembled from --result (the skill-result schema, every field
optional), else the events appended during the work, plus the flags below;
PRs named by --opened/--updated are looked up on the tracker. Nothing is
written until all of it is known: on an error the iteration stays open and
end can be run again.

end refuses (exit 66), changing nothing, when no iteration is open: none was
begun, it was already ended, or another tick recovered it as interrupted —
and, without --iteration, when the open iteration was begun by another
session.

Examples:
  sdd-loop work end --iteration 3 --opened 12 --transcript auto
  sdd-loop work end --opened 12 --summary 'Opened #12 for #3'
  sdd-loop review end --updated 142 --comments 4 --merges 1
  sdd-loop work end --result result.json --json";

const EVENT_HELP: &str = "\
Event shapes (sdd-loop schema skill-event), e.g.
  {\"event\":\"pr\",\"number\":12,\"branch\":\"feature/3-x\",\"state\":\"open\",\"opened\":true}
  {\"event\":\"usage\",\"model\":\"claude-sonnet-4-5\",\"tokens_in\":1200,\"tokens_out\":300}
  {\"event\":\"comment_pushed\",\"pr\":142,\"count\":3}";

/// `begin` for `/sdd:work`.
#[derive(Debug, Args)]
pub struct BeginArgs {
    #[command(flatten)]
    pub holder: HolderArgs,
    #[command(flatten)]
    pub tick: TickArgs,
}

/// `begin` for `/sdd:review`.
#[derive(Debug, Args)]
pub struct ReviewBeginArgs {
    /// Watch this one PR (single-PR mode: the PR budget does not apply).
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    #[command(flatten)]
    pub holder: HolderArgs,
    #[command(flatten)]
    pub tick: TickArgs,
}

#[derive(Debug, Args)]
pub struct HolderArgs {
    /// The session process that holds the lock from `begin` to `end`
    /// [default: the nearest ancestor that is not a shell or launcher]
    #[arg(long, value_name = "PID")]
    pub holder_pid: Option<u32>,
}

/// `end`: what the session did.
#[derive(Debug, Args)]
pub struct EndArgs {
    /// The iteration to end (begin's `iteration`); refused if another is open.
    #[arg(long, value_name = "N")]
    pub iteration: Option<u64>,
    /// The work's result as JSON (the skill-result schema, every field
    /// optional), from a file or `-` for standard input.
    #[arg(long, value_name = "FILE|-")]
    pub result: Option<String>,
    /// A PR the work opened (repeatable).
    #[arg(long, value_name = "N")]
    pub opened: Vec<u64>,
    /// A PR the work pushed to, reviewed or merged (repeatable).
    #[arg(long, value_name = "N")]
    pub updated: Vec<u64>,
    /// Review comments and replies pushed this tick.
    #[arg(long, value_name = "N")]
    pub comments: Option<u64>,
    /// Merge attempts this tick.
    #[arg(long, value_name = "N")]
    pub merges: Option<u64>,
    /// Worker, reviewer or responder agents dispatched this tick.
    #[arg(long, value_name = "N")]
    pub agents: Option<u64>,
    /// A target that failed, with its root cause: `'#N=tests fail in X'`
    /// (repeatable; the same cause twice in a row asks repeated-failure).
    #[arg(long, value_name = "#N=CAUSE")]
    pub failed: Vec<String>,
    /// Tokens one model used: `MODEL:IN:OUT` (repeatable; replaces usage
    /// from --result or events).
    #[arg(long, value_name = "MODEL:IN:OUT")]
    pub usage: Vec<String>,
    /// One line for the status block's Outcome.
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
    /// The work failed: the root cause (the iteration is recorded errored).
    #[arg(long, value_name = "CAUSE")]
    pub error: Option<String>,
    /// qmd was unreachable (ADR-0024): the error seen (counts toward stop
    /// condition #11).
    #[arg(long, value_name = "ERROR")]
    pub qmd_unreachable: Option<String>,
    /// The session's spend from its Claude Code transcript: a .jsonl file,
    /// or `auto` for the newest transcript of this project (under
    /// $CLAUDE_CONFIG_DIR, else ~/.claude: projects/<project path with every
    /// character but A-Z, a-z, 0-9 turned into ->/). Counts each API
    /// response once, between begin and end; replaces other usage.
    #[arg(long, value_name = "PATH|auto")]
    pub transcript: Option<String>,
    #[command(flatten)]
    pub holder: HolderArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `event`: one progress event.
#[derive(Debug, Args)]
pub struct EventArgs {
    /// The event, as one JSON object.
    #[arg(value_name = "JSON")]
    pub event: String,
    /// The project directory (holds .sdd/).
    #[arg(short = 'C', long = "project", value_name = "DIR", default_value = ".")]
    pub project: PathBuf,
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
    /// Standard input, when it is not a terminal (`end --result -`).
    pub stdin: Option<Box<dyn Read + 'a>>,
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
        Command::Work(cmd) => match cmd.phase {
            None => tick_command(Skill::Work, None, cmd.tick, env),
            Some(Phase::Begin(b)) => begin_command(Skill::Work, None, b.holder, b.tick, env),
            Some(Phase::End(e)) => end_command(Skill::Work, *e, env),
            Some(Phase::Event(e)) => event_command(Skill::Work, e, env),
        },
        Command::Review(cmd) => match cmd.phase {
            None => tick_command(Skill::Review, cmd.pr, cmd.tick, env),
            Some(Phase::Begin(b)) => begin_command(Skill::Review, b.pr, b.holder, b.tick, env),
            Some(Phase::End(e)) => end_command(Skill::Review, *e, env),
            Some(Phase::Event(e)) => event_command(Skill::Review, e, env),
        },
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

/// A tick's configuration and the world it runs in, from flags and env.
struct Setup {
    cfg: TickConfig,
    clock: Box<dyn Clock>,
    git: GitCli,
    tracker: Box<dyn Tracker>,
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
    let vars = env.vars.clone();
    let var = |k: &str| vars.get(k).filter(|v| !v.is_empty()).cloned();
    let skill_cmd = args.and_then(|a| a.skill_cmd.clone());
    let skill_cmd = match mode {
        Mode::Wrapper => match skill_cmd.or_else(|| var("SDD_LOOP_SKILL_CMD")) {
            Some(c) => c,
            None => {
                return Err(usage(
                    env,
                    "no skill command: the engine wraps a skill and needs to know how to run it",
                    &format!(
                        "pass --skill-cmd 'CMD' or set SDD_LOOP_SKILL_CMD — or, inside an agent session, bracket the work with `sdd-loop {skill} begin --loop` and `sdd-loop {skill} end`"
                    ),
                ));
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
    let clock = clock_from(env).map_err(|msg| {
        usage(
            env,
            &msg,
            "SDD_LOOP_NOW takes an RFC 3339 instant such as 2026-05-09T14:50:00Z",
        )
    })?;
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
    let token = var("SDD_LOOP_TRACKER_TOKEN").or_else(|| var("GITHUB_TOKEN"));
    let tracker: Box<dyn Tracker> = match &repository {
        Some(repo) => Box::new(HttpTracker::new(TrackerConfig::new(
            &tracker_url,
            repo,
            token,
        ))),
        None => Box::new(NoTracker),
    };
    let mut cfg = TickConfig::new(skill, root.clone(), skill_cmd);
    cfg.pr = pr;
    cfg.lock_poll = lock_poll;
    cfg.json = common.json;
    cfg.repository = repository;
    cfg.remote = common.remote.clone();
    cfg.crash = crash;
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
        clock: setup.clock.as_ref(),
        probe: &OsProbe,
        me,
        tracker: setup.tracker.as_ref(),
        git: &setup.git,
        runner: &mut runner,
        prompt,
        interrupts,
        out: &mut *env.stdout,
        err: &mut *env.stderr,
        platform: std::env::consts::OS,
    };
    f(&setup.cfg, &mut world).code
}

fn tick_command(skill: Skill, pr: Option<u64>, args: TickArgs, env: &mut Env<'_>) -> u8 {
    let setup = match setup(skill, pr, Some(&args), &args.common, Mode::Wrapper, env) {
        Ok(s) => s,
        Err(code) => return code,
    };
    with_world(&setup, Identity::current(&OsProbe), env, tick::run)
}

fn begin_command(
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

fn end_command(skill: Skill, args: EndArgs, env: &mut Env<'_>) -> u8 {
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
            },
        }),
    })
}

fn event_command(skill: Skill, args: EventArgs, env: &mut Env<'_>) -> u8 {
    let root: PathBuf = env.cwd.join(&args.project).components().collect();
    let paths = StatePaths::new(&root, skill, None);
    match tick::append_event(&paths, &args.event) {
        Ok(iteration) => {
            let _ = writeln!(env.stdout, "event recorded for iteration {iteration}");
            exit::TICK_DONE
        }
        Err(f) => {
            let _ = writeln!(env.stderr, "error: {}", f.message);
            let _ = writeln!(env.stderr, "help: {}", f.help);
            f.code
        }
    }
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
                stdin: None,
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
    fn the_in_session_halves_have_their_own_help_and_checks() {
        let (code, out, _) = call(&["work", "begin", "--help"], &[]);
        assert_eq!(code, 0);
        for needle in ["--holder-pid", "--max-prs", "--answer", "5  skip", "4  ask"] {
            assert!(out.contains(needle), "begin --help lacks {needle}\n{out}");
        }
        let (code, out, _) = call(&["review", "end", "--help"], &[]);
        assert_eq!(code, 0);
        for needle in [
            "--result",
            "--opened",
            "--comments",
            "--iteration",
            "exit 66",
        ] {
            assert!(out.contains(needle), "end --help lacks {needle}\n{out}");
        }
        let (code, _, err) = call(&["work", "begin", "--holder-pid", "1"], &[]);
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("begin needs --loop"), "{err}");
        let (code, _, err) = call(
            &[
                "work",
                "begin",
                "--loop",
                "--skill-cmd",
                "x",
                "--holder-pid",
                "1",
            ],
            &[],
        );
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("--skill-cmd does not apply to begin"), "{err}");
        let (code, _, err) = call(&["work", "end", "--failed", "oops"], &[]);
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("#N=root cause"), "{err}");
        let (code, _, err) = call(&["work", "end", "--usage", "m:1"], &[]);
        assert_eq!(code, exit::USAGE, "{err}");
    }

    #[test]
    fn crash_points_are_listed() {
        let (code, out, _) = call(&["crash-points"], &[]);
        assert_eq!(code, 0);
        assert!(out.contains("after-history"));
    }
}
