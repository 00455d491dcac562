//! The command line's shape: every subcommand and flag of `sdd-loop`,
//! their defaults and help texts (clap derive), kept apart from what the
//! commands do so `--help` reads as one document.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{self, LockChoice};
use crate::exit;
use crate::rules::gates::AnswerFlag;
use crate::state::paths::Skill;
use crate::state::schema::SchemaKind;

pub(crate) const ABOUT: &str =
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
  SDD_LOOP_AGENT           drive a real agent: claude, codex, gemini or opencode
                           (same as --agent)
  CODEX_HOME               where --agent codex reads config.toml for the model [default: ~/.codex]
  SDD_LOOP_REPO            tracker repository OWNER/NAME (same as --repo)
  SDD_LOOP_TRACKER_URL     tracker API base URL (same as --tracker-url)
  SDD_LOOP_TRACKER_TOKEN   bearer token for the tracker, else GITHUB_TOKEN, else the token of a
                           logged-in gh (`gh auth token --hostname HOST`, asked once, 5 s at most);
                           never printed; a tick with none says which source was missing
  SDD_LOOP_UNATTENDED      1: nobody is at this loop (same as --unattended): gates are posted on
                           the tracker and the tick waits for a reply
  SDD_LOOP_TRACKER_TIMEOUT, SDD_LOOP_TRACKER_RETRY_BUDGET
                           tracker time limits in seconds (same as the flags)
  SDD_LOOP_NOTIFY          notification URLs (spaces or commas between them), added to --notify
                           and to the variables CLAUDE.md's `Loop Notify` names: ntfy topics,
                           Slack or Discord webhooks; told when a gate is posted or asked (once
                           per gate), a run stops or a usage window makes the loop wait, 5 s per
                           tick at most, a failure only noted; removed from the work's
                           environment, redacted everywhere
  SDD_LOOP_NOW             RFC 3339 instant the engine's clock reads for the whole tick (tests)
  SDD_LOOP_NOW_FILE        a file holding an RFC 3339 instant, read on every reading of the clock
                           (tests): replacing it by rename moves the clock during a tick
  SDD_LOOP_CLOCK           real [default] or simulated (tests): simulated, the tracker's retry
                           waits and --lock=wait's deadline take at most 1 ms each — a wait
                           moves the clock's monotonic reading by its length; timestamps stay
                           SDD_LOOP_NOW's (or SDD_LOOP_NOW_FILE's)
  SDD_LOOP_POLL_MS         --lock=wait poll interval in milliseconds [default: 5000]
  SDD_LOOP_CLAIM_REMOTE    the remote loop ticks claim their issues and PRs on, so loops in
                           other clones never work the same one [default: --remote, i.e.
                           origin, when it is the tracker's repository; else the clone's
                           remote that is (a fork's upstream), else exit 64; none in a
                           checkout with no remote]; `off` turns claims off; unreachable or
                           refusing: exit 69
  SDD_LOOP_CLAIM_TIMEOUT   the longest one git fetch or push of claims may take, in seconds
                           [default: 20]; a renewal's push never past the lease's stop time
  SDD_LOOP_HOST            the machine's name written into claims [default: the system's host name]
  SDD_LOOP_CRASH_AT        abort at a named crash point (see `sdd-loop crash-points`)
  SDD_LOOP_PAUSE_AT, SDD_LOOP_PAUSE_DIR
                           wait at a named pause point until released: write `paused PID` into the
                           FIFO DIR/ready, read one byte from the FIFO DIR/release (tests)
  CLAUDE_CONFIG_DIR, HOME  where `end --transcript auto` looks for Claude Code transcripts
  CLAUDE_CODE_SESSION_ID   set by Claude Code: `end --transcript auto` reads that session's file
  CLAUDECODE               set by Claude Code: `end --transcript` first waits (at most 2 s)
                           for its writes";

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
        after_help = format!("Examples:\n  sdd-loop work --loop --skill-cmd ./work-skill --max-prs 1\n  sdd-loop work --loop --agent claude --agent-arg=--permission-mode --agent-arg=acceptEdits --agent-arg=--allowedTools --agent-arg=Bash\n  sdd-loop work --loop --agent codex --agent-model gpt-5-codex --agent-arg=--sandbox=danger-full-access   # inside a container or VM\n  sdd-loop work --loop --resume --answer backlog-drift=continue\n  sdd-loop work begin --loop --json\n  sdd-loop work end --opened 12 --transcript auto\n\n{ENV_HELP}\n\n{}", exit::HELP_TABLE)
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
    /// Check that everything a loop needs is usable here — this engine,
    /// Claude Code, the sdd-loop plugin and the engine its hooks run, the
    /// tracker credentials, each loop's state — and say what to do about
    /// each part that is not. Changes nothing.
    #[command(after_help = DOCTOR_HELP)]
    Doctor(DoctorArgs),
    /// List the named crash points for SDD_LOOP_CRASH_AT.
    CrashPoints,
    /// Claude Code's statusLine command: records the session's usage
    /// windows (its stdin's `rate_limits`) for the window budgets, then
    /// runs your own status command — CMD, else SDD_LOOP_STATUSLINE_CMD —
    /// with the same stdin and prints its output unchanged
    /// (docs/src/usage-windows.md).
    #[command(
        after_help = "Install (settings.json):\n  \"statusLine\": {\"type\": \"command\", \"command\": \"sdd-loop statusline -- ~/.claude/my-status.sh\"}"
    )]
    Statusline {
        /// Your own status command, run with `sh -c`.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "CMD"
        )]
        command: Vec<String>,
    },
    /// Run one hook of the Claude Code plugin (hooks/hooks.json): reads the
    /// hook's JSON on stdin, prints only what Claude Code accepts.
    #[command(after_help = HOOK_HELP)]
    Hook(HookArgs),
    /// Runs a wrapped skill for the engine, which the kernel signals when
    /// the engine dies (internal; see the `guard` module).
    #[command(name = "__guard", hide = true)]
    Guard {
        /// The engine's pid, to notice it died before the guard was ready.
        #[arg(long, value_name = "PID")]
        parent: Option<u32>,
        /// Run CMD as a program and its arguments instead of `sh -c CMD`.
        #[arg(long)]
        exec: bool,
        /// The skill command, run with `sh -c` (with `--exec`: the program
        /// and its arguments).
        #[arg(last = true, required = true, num_args = 1.., value_name = "CMD")]
        command: Vec<std::ffi::OsString>,
    },
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
    /// Ceiling on the share of Claude Code's 5-hour usage window the loop
    /// may leave used, in percent; reached, the loop waits for the window
    /// to reset (docs/src/usage-windows.md) [default: none]
    #[arg(long = "max-5h-percent", value_name = "PERCENT")]
    pub max_5h_percent: Option<f64>,
    /// Ceiling on the share of Claude Code's weekly usage window the loop
    /// may leave used, in percent; reached, the loop stops
    /// (`usage_window`) [default: none]
    #[arg(long = "max-week-percent", value_name = "PERCENT")]
    pub max_week_percent: Option<f64>,
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
    /// Drive a real agent headless as the work, instead of a skill command:
    /// Claude Code (`claude -p --output-format stream-json --verbose`),
    /// Codex (`codex exec --json`), the Gemini CLI (`gemini --output-format
    /// stream-json --approval-mode yolo`) or OpenCode (`opencode run
    /// --format json --auto`); see docs/src/agents.md, "Driving a real agent"
    /// [env: SDD_LOOP_AGENT]
    #[arg(long, value_enum, value_name = "AGENT", conflicts_with = "skill_cmd")]
    pub agent: Option<crate::agent::AgentKind>,
    /// The agent's program [default: `claude`, `codex`, `gemini` or
    /// `opencode` from PATH]
    #[arg(long, value_name = "PATH")]
    pub agent_cmd: Option<PathBuf>,
    /// An extra argument for the agent, after the engine's own (repeatable),
    /// e.g. `--agent-arg=--permission-mode --agent-arg=acceptEdits`
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub agent_arg: Vec<String>,
    /// The agent's model (`--model` for Claude Code and OpenCode, which
    /// takes PROVIDER/MODEL; `-m` for Codex and Gemini); Codex is priced by
    /// it, else by `model` in its config.toml, OpenCode by it, else by
    /// `model` in its opencode.json
    #[arg(long, value_name = "MODEL")]
    pub agent_model: Option<String>,
    /// Replace the built-in prompt with this template; placeholders:
    /// {{skill}}, {{iteration}}, {{repository}}, {{issues}}, {{prs}},
    /// {{max_new_prs}}, {{chain}}, {{dry_run}}, {{request_file}},
    /// {{request_json}}
    #[arg(long, value_name = "FILE")]
    pub agent_prompt: Option<PathBuf>,
    /// Answer a gate for this tick, e.g. `backlog-drift=continue` or
    /// `budget-escalation=raise max_iterations=10` (repeatable).
    #[arg(long, value_name = "GATE=ANSWER")]
    pub answer: Vec<AnswerFlag>,
    /// A scripted user: YAML list of `{gate, answer, match?, iteration?}`.
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Nobody is at this loop: a gate that --answer, --answers and a
    /// terminal do not answer is posted on the tracker (on the issue or PR
    /// it concerns, else on the loop's dashboard issue) and the tick waits
    /// for a person's reply, exiting 0 (docs/src/gates-away.md)
    /// [env: SDD_LOOP_UNATTENDED=1]
    #[arg(long)]
    pub unattended: bool,
    /// How long a posted gate waits for its answer: past it, the gate's
    /// conservative option is taken and said where it was asked (`90m`,
    /// `24h`, `2d`) [default: 24h]
    #[arg(long, value_name = "DURATION", value_parser = crate::config::parse_deadline)]
    pub gate_deadline: Option<std::time::Duration>,
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
    /// Tell this URL when a gate is posted or asked (once per gate), the
    /// run stops or a usage window makes the loop wait (repeatable): an ntfy topic, a Slack or
    /// Discord webhook, or any URL prefixed `ntfy+`, `slack+` or
    /// `discord+`; each gets a POST bounded to 5 s per tick, and a failure
    /// never fails the tick. Prefer SDD_LOOP_NOTIFY: a command line is
    /// visible to other processes (docs/src/notifications.md) [env:
    /// SDD_LOOP_NOTIFY, URLs separated by spaces or commas]
    #[arg(long, value_name = "URL")]
    pub notify: Vec<String>,
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
    /// git remote of the shared origin: loop ticks claim their issues and
    /// PRs on it (unless SDD_LOOP_CLAIM_REMOTE names another), resume
    /// compares branch heads against it, and --repo defaults from its URL.
    #[arg(long, value_name = "NAME", default_value = "origin")]
    pub remote: String,
    /// Longest one tracker request may take, connection to last byte
    /// [env: SDD_LOOP_TRACKER_TIMEOUT] [default: 10]
    #[arg(long, value_name = "SECS")]
    pub tracker_timeout: Option<u64>,
    /// Longest one tracker call may take across its retries and their
    /// waits (Retry-After included); a tracker that hangs ends the tick
    /// within it, changing nothing [env: SDD_LOOP_TRACKER_RETRY_BUDGET]
    /// [default: 30]
    #[arg(long, value_name = "SECS")]
    pub tracker_retry_budget: Option<u64>,
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
pub enum Phase<B: clap::Args + PhaseExamples> {
    /// Everything up to the work: lock (held for the calling session),
    /// state, resume, entry stops, gates, journal — and the request.
    #[command(after_help = format!("{BEGIN_HELP}\n\n{}", B::BEGIN))]
    Begin(Box<B>),
    /// Everything after the work: account what the session reports,
    /// exit stops, history line, budget, status block or final report,
    /// unlock.
    #[command(after_help = format!("{END_HELP}\n\n{}", B::END))]
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
from its journal and events.";

const END_HELP: &str = "\
The result is assembled from --result (the skill-result schema, every field
optional), else the events appended during the work, plus the flags below;
PRs named by --opened/--updated are looked up on the tracker. Nothing is
written until all of it is known: on an error the iteration stays open and
end can be run again.

end refuses (exit 66), changing nothing, when no iteration is open: none was
begun, it was already ended, or another tick recovered it as interrupted —
and, without --iteration, when the open iteration was begun by another
session.";

/// The examples `begin --help` and `end --help` show, for each loop.
pub trait PhaseExamples {
    const BEGIN: &'static str;
    const END: &'static str;
}

impl PhaseExamples for BeginArgs {
    const BEGIN: &'static str = "\
Example:
  sdd-loop work begin --loop --json --answer budget-escalation=continue";
    const END: &'static str = "\
Examples:
  sdd-loop work end --iteration 3 --opened 12 --transcript auto
  sdd-loop work end --opened 12 --summary 'Opened #12 for #3'
  sdd-loop work end --result result.json --json";
}

impl PhaseExamples for ReviewBeginArgs {
    const BEGIN: &'static str = "\
Examples:
  sdd-loop review begin --loop --pr 142 --json
  sdd-loop review begin --loop --json --answer budget-escalation=continue";
    const END: &'static str = "\
Examples:
  sdd-loop review end --iteration 3 --updated 142 --transcript auto
  sdd-loop review end --updated 142 --comments 4 --merges 1
  sdd-loop review end --result result.json --json";
}

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

const HOOK_HELP: &str = "\
The hooks of the sdd-loop plugin, run by Claude Code (hooks/hooks.json):
  user-prompt-submit  a loop prompt (/sdd:work --loop …, /sdd:review --loop …,
                      /sdd-loop:work|review --loop …, or /loop re-sending one)
                      runs begin; work becomes context for the model, while
                      skip, stop and ask block the prompt (the model is not
                      called); any other prompt passes untouched, and so does
                      every prompt whose source is not user, sdk, loop_wakeup
                      or schedule_wakeup (or absent): system, poll_event
  pre-tool-use        refuses what the open iteration's contract forbids: a PR
                      beyond max_new_prs or for an issue not in the request, a
                      merge not allowed (or held), a second review round, any
                      PR or merge when this session holds the loop but no
                      iteration is open; and a loop skill run with --loop
                      through the Skill tool outside this session's open
                      iteration of that loop
  stop                ends the iteration this session holds (PRs from the
                      tracker, spend from the transcript); blocks once on a
                      transient failure
  stop-failure        the turn ended on a model-API error: ends the iteration
                      errored with the error's kind (turn_ended_by), failing
                      none of its targets
  session-end         the session ended: ends an iteration it still holds

Every decision is logged to .sdd/loop/{skill}.hooks.jsonl. The exit status is
always 0: the answer is the JSON printed (or nothing).

Claude Code runs these through the plugin's launcher, hooks/sdd-loop-hook,
which finds this binary, checks `sdd-loop hook --protocol` (the plugin speaks
hook protocol 2) and fails closed when it cannot: a loop prompt is blocked
with what to install. `sdd-loop doctor` checks the whole setup.

Example:
  echo '{\"session_id\":\"s\",\"transcript_path\":\"/tmp/t.jsonl\",\"cwd\":\".\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"hello\"}' | sdd-loop hook user-prompt-submit";

const DOCTOR_HELP: &str = "\
Each line is one part: ok, note (usable, something to know) or FIX (not
usable), and under it what to do. The tracker is asked once (its open pull
requests, and who the token is); nothing is written.

Examples:
  sdd-loop doctor
  sdd-loop doctor -C ../app --json

Exit status: 0 when every part is usable, 1 when something needs a fix.";

/// `doctor`: which project, and how to print.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The project directory.
    #[arg(short = 'C', long = "project", value_name = "DIR", default_value = ".")]
    pub project: PathBuf,
    /// One JSON object (`usable`, `checks`: part, verdict, detail, fix)
    /// instead of text.
    #[arg(long)]
    pub json: bool,
    /// Post a test message to each notification URL (--notify is a tick's
    /// flag: doctor reads SDD_LOOP_NOTIFY and CLAUDE.md's `Loop Notify`);
    /// without it the URLs are only checked for form.
    #[arg(long)]
    pub notify_test: bool,
}

/// `hook`: which event, and for tests the session.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The hook event.
    #[arg(value_enum, required_unless_present = "protocol")]
    pub event: Option<crate::hook::HookEvent>,
    /// Print the hook protocol this engine speaks and exit: one line,
    /// `hook-protocol N sdd-loop VERSION` (N a comma-separated list). The
    /// plugin's launcher (hooks/sdd-loop-hook) runs it before every hook.
    #[arg(long, conflicts_with_all = ["holder_pid", "project"])]
    pub protocol: bool,
    /// The session process that holds the loop's lock [default: the
    /// nearest ancestor that is not a shell or launcher: Claude Code]
    #[arg(long, value_name = "PID")]
    pub holder_pid: Option<u32>,
    /// The project directory [default: $CLAUDE_PROJECT_DIR, else the hook
    /// input's cwd]
    #[arg(short = 'C', long = "project", value_name = "DIR")]
    pub project: Option<PathBuf>,
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
    /// Something outside the work ended its turn first: a model-API error
    /// as Claude Code's StopFailure names it (rate_limit, overloaded,
    /// server_error, …) or session_end. The iteration is recorded errored
    /// with this cause (`turn_ended_by`; --error adds the detail) and fails
    /// none of its targets, so it never asks repeated-failure.
    #[arg(long, value_name = "CAUSE", value_parser = turn_cause)]
    pub turn_ended_by: Option<String>,
    /// qmd was unreachable (ADR-0024): the error seen (counts toward stop
    /// condition #11).
    #[arg(long, value_name = "ERROR")]
    pub qmd_unreachable: Option<String>,
    /// The session's spend from its Claude Code transcript: a .jsonl file,
    /// or `auto` for this session's own ($CLAUDE_CODE_SESSION_ID), else the
    /// newest transcript of this project (under $CLAUDE_CONFIG_DIR, else
    /// ~/.claude: projects/<project path with every character but A-Z, a-z,
    /// 0-9 turned into ->/). Counts each API response once, in the tick
    /// whose prompt it answers (one written after an end, by the next end);
    /// replaces other usage.
    #[arg(long, value_name = "PATH|auto")]
    pub transcript: Option<String>,
    /// With --transcript: the tick's own prompt, by the `promptId` Claude
    /// Code writes on it (a hook's `prompt_id`). Without it the tick's
    /// prompt is the transcript's last; the plugin's hooks pass it, so an
    /// iteration ended at the session's next loop prompt counts its own
    /// responses, not the new prompt's.
    #[arg(long, value_name = "ID", requires = "transcript")]
    pub prompt_id: Option<String>,
    /// With --transcript, inside Claude Code: the session's last message
    /// (a Stop hook's `last_assistant_message`); `end` waits until the
    /// transcript holds it (at most 2 s) before counting, as Claude Code
    /// may write its last response late.
    #[arg(long, value_name = "TEXT", requires = "transcript")]
    pub last_message: Option<String>,
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

/// `--turn-ended-by`'s value: one lowercase word (`rate_limit`).
fn turn_cause(value: &str) -> Result<String, String> {
    if !value.is_empty()
        && value.len() <= 64
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        Ok(value.to_owned())
    } else {
        Err("one lowercase word of a-z, 0-9 and _, e.g. rate_limit or session_end".into())
    }
}
