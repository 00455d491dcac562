//! The case format, v1: one YAML file is one scenario — the world the
//! engine starts in, the ticks it runs (what the fake skill, the world and
//! the scripted user do on each), and what must hold afterwards.
//!
//! Every struct is `deny_unknown_fields` and every enum externally tagged,
//! so serde-saphyr keeps exact locations. Values that name
//! something outside the file — a fixture, a gate, a stop cause, a crash
//! point — are kept as `Spanned<String>` and checked once, when the case
//! loads ([`super::load`], [`super::validate`]), so every error points at
//! `file:line:column`.
//! A [`Case`] only exists once it has passed those checks. The format is
//! documented for authors in `docs/src/case-format.md` (a first case:
//! `evals/README.md`); `sdd-evals schema` prints it as JSON Schema.

use std::collections::HashMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use sdd_loop::state::history::Outcome;
use sdd_loop::state::paths::Skill;
use sdd_mocks::agent::script::{Kind as AgentKind, Stream};
use sdd_mocks::model::script::Turn;
use sdd_mocks::qmd::QmdState;
use sdd_mocks::skill::Tick;
use sdd_mocks::tracker::{Fault, WorldChange};
use serde::Deserialize;
use serde::de::Deserializer;
use serde_json::{Map, Value};
use serde_saphyr::Spanned;

use super::check::{Check, GateSpec};
use super::schema_parts;

mod pid;
pub use pid::PidSpec;

/// Ends every `help:` line about the format.
pub const FORMAT_HELP: &str = "the case format is described in docs/src/case-format.md";

/// The clock at tick 1 when a case does not say.
pub const DEFAULT_START: &str = "2026-05-09T14:00:00Z";

/// How long a whole case may run when it does not say.
pub const DEFAULT_TIMEOUT: &str = "60s";

/// One scenario.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique across the suite, `[a-z0-9-]+`; names the snapshots.
    #[schemars(with = "String", regex(pattern = r"^[a-z0-9-]+$"))]
    pub id: Spanned<String>,
    /// One line: what happens.
    pub name: String,
    /// The confirmation or rule the case proves, e.g. "ADR-0028 confirmation 4".
    pub proves: String,
    /// What the case proves, by name: SPEC-0020 requirement titles
    /// (verbatim) and ADR-0028 confirmations (`confirmation 4`); `sdd-evals
    /// coverage` maps them.
    #[serde(default)]
    #[schemars(schema_with = "schema_parts::covers")]
    pub covers: Vec<Spanned<String>>,
    /// The `/loop` prompt the case stands for (documentation only).
    #[serde(default)]
    pub prompt: Option<String>,
    /// The wrapped skill: `work` or `review`.
    pub skill: Skill,
    /// Who does each tick's work: `wrapper` (the engine runs the fake skill,
    /// `sdd-loop <skill> --loop`), `session` (the harness plays the agent
    /// of a session: `begin`, the fake skill's actions, `end`), or `claude`
    /// / `codex` (the engine drives `fake-claude` / `fake-codex` with
    /// `--agent`, which perform the tick's actions and print a real
    /// agent's stream) [default: wrapper].
    #[serde(default)]
    pub driver: Driver,
    /// `driver: real-session` only: arguments for `claude` after the
    /// harness's own (`-p PROMPT --output-format stream-json --verbose
    /// --allowedTools Bash`), e.g. `[--model, claude-sonnet-4-5-20250929]`.
    #[serde(default)]
    pub claude_args: Vec<String>,
    /// `driver: real-session` only: load this repository as a Claude Code
    /// plugin (`--plugin-dir` at the workspace root), so its hooks run
    /// `sdd-loop hook EVENT` — the sandbox's `sdd-loop` — on every prompt,
    /// tool call and stop [default: false].
    #[serde(default)]
    pub plugin: bool,
    /// How the real Claude Code signs in: `api-key` (`ANTHROPIC_API_KEY`)
    /// or `oauth` — a subscriber's session (`CLAUDE_CODE_OAUTH_TOKEN`,
    /// `ANTHROPIC_API_KEY` unset), the only one in which Claude Code reads
    /// the usage windows the model's turns give (`windows:`) [default:
    /// api-key].
    #[serde(default)]
    pub auth: Auth,
    /// `driver: real-loop` only: install `sdd-loop statusline` as the
    /// session's statusLine (in Claude Code's user settings), the command
    /// that records the usage windows in a session [default: false].
    #[serde(default)]
    pub statusline: bool,
    /// Run the engine with `--loop` [default: true]. `false` runs
    /// `sdd-loop <skill>` as a user would without loop mode: the skill runs
    /// once and nothing under `.sdd/loop/` may appear.
    #[serde(default = "yes", rename = "loop")]
    pub loop_mode: bool,
    /// The world before tick 1.
    #[serde(default)]
    pub world: World,
    /// Simulated machines, by name (`[a-z0-9-]+`): each runs its ticks in
    /// its own clone of the one origin, with its own HOME and its own
    /// clock, all sharing the mock tracker. With machines, every tick
    /// names the machine it runs on (`machine:`) or the machines it runs
    /// on at once (`machines:`) [default: none, one project].
    #[serde(default)]
    #[schemars(with = "std::collections::BTreeMap<String, MachineSpec>")]
    pub machines: HashMap<Spanned<String>, MachineSpec>,
    /// Engine arguments after `<skill> --loop`, on every tick.
    #[serde(default)]
    pub args: Vec<String>,
    /// `driver: real-loop` only: after the last tick, how long the session
    /// is watched — no prompt may be submitted and no model request made
    /// in that time, e.g. `2m` for a wakeup armed 60 s ahead [default: not
    /// watched].
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub quiet: Option<Spanned<String>>,
    /// The whole case's time limit, e.g. `60s` or `2m` [default: 60s].
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub timeout: Option<Spanned<String>>,
    /// The ticks, in order: one engine invocation each.
    #[schemars(with = "Vec<TickSpec>", length(min = 1))]
    pub ticks: Spanned<Vec<TickSpec>>,
    /// What must hold for the run as a whole.
    #[serde(default)]
    pub expect: Expect,
    /// SPEC-0017 assertions: each `text` bound to a check (`type`).
    #[serde(default)]
    pub assertions: Vec<Assertion>,
    /// The case file as given (relative to the current directory when it
    /// was given so): what messages show.
    #[serde(skip)]
    #[schemars(skip)]
    pub path: PathBuf,
    /// The case file, resolved: what is read (its `snapshots/` sit beside it).
    #[serde(skip)]
    #[schemars(skip)]
    pub file: PathBuf,
}

/// How a real Claude Code signs in to the case's model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Auth {
    /// `ANTHROPIC_API_KEY`: no usage windows.
    #[default]
    ApiKey,
    /// `CLAUDE_CODE_OAUTH_TOKEN` and no `ANTHROPIC_API_KEY`: a
    /// subscriber's session, whose answers carry the usage windows.
    Oauth,
}

/// Who does the work between the two halves of a tick.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Driver {
    /// `sdd-loop <skill> --loop` runs the fake skill itself.
    #[default]
    Wrapper,
    /// The harness plays an agent session: `sdd-loop <skill> begin --loop
    /// --json` with a stand-in session process as the lock holder, the
    /// tick's fake-skill actions done by the harness, a transcript of the
    /// spend, then `sdd-loop <skill> end --transcript auto`.
    Session,
    /// `sdd-loop <skill> --loop --agent claude`: the engine runs
    /// `fake-claude` (installed as `claude`), which performs the tick's
    /// actions and prints Claude Code's stream, as the tick's `agent:` says.
    Claude,
    /// `sdd-loop <skill> --loop --agent codex`: the same with `fake-codex`.
    Codex,
    /// `sdd-loop <skill> --loop --agent claude --agent-cmd <the pinned
    /// Claude Code>`: the real CLI against the case's scripted model.
    #[serde(rename = "real-claude")]
    RealClaude,
    /// `sdd-loop <skill> --loop --agent codex --agent-cmd <the pinned
    /// Codex>`: the real CLI against the case's scripted model.
    #[serde(rename = "real-codex")]
    RealCodex,
    /// `sdd-loop <skill> --loop --agent gemini --agent-cmd <the pinned
    /// Gemini CLI>`: the real CLI against the case's scripted model (the
    /// Gemini API).
    #[serde(rename = "real-gemini")]
    RealGemini,
    /// `sdd-loop <skill> --loop --agent opencode --agent-cmd <the pinned
    /// OpenCode>`: the real CLI against the case's scripted model (the
    /// Anthropic Messages API, OpenCode's `anthropic` provider).
    #[serde(rename = "real-opencode")]
    RealOpencode,
    /// A real Claude Code session per tick (`claude -p PROMPT
    /// --output-format stream-json --verbose --allowedTools Bash`, later
    /// ticks `--continue`), whose scripted model runs `sdd-loop <skill>
    /// begin`, the work and `end` as Bash calls.
    #[serde(rename = "real-session")]
    RealSession,
    /// The real interactive Claude Code on a pseudo-terminal with the
    /// plugin loaded: the case's `prompt` (`/loop …`) is typed once, and
    /// each tick is the next prompt the session submits — `/loop`'s own
    /// wakeup or cron fire, or what the tick's `prompt:` types.
    #[serde(rename = "real-loop")]
    RealLoop,
    /// The harness plays Claude Code's side of the plugin's hooks, with no
    /// CLI: each tick sends `UserPromptSubmit` (the tick's `prompt:` and
    /// `source:`), does the tick's fake-skill actions when the hook began
    /// a tick, writes their spend as a transcript, and sends `Stop`.
    Hooks,
}

impl Driver {
    /// The fake agent a driver runs, if it runs one.
    pub fn agent(self) -> Option<AgentKind> {
        match self {
            Driver::Claude => Some(AgentKind::Claude),
            Driver::Codex => Some(AgentKind::Codex),
            _ => None,
        }
    }

    /// The real CLI a driver runs, if it runs one: the name it is pinned
    /// under (`crate::world::clis`).
    pub fn real_cli(self) -> Option<&'static str> {
        match self {
            Driver::RealClaude | Driver::RealSession | Driver::RealLoop => Some("claude"),
            Driver::RealCodex => Some("codex"),
            Driver::RealGemini => Some("gemini"),
            Driver::RealOpencode => Some("opencode"),
            _ => None,
        }
    }

    /// Whether the engine drives an agent (`--agent`), fake or real.
    pub fn engine_drives_agent(self) -> bool {
        matches!(
            self,
            Driver::Claude
                | Driver::Codex
                | Driver::RealClaude
                | Driver::RealCodex
                | Driver::RealGemini
                | Driver::RealOpencode
        )
    }

    /// Whether the tick's work is an agent session's (`begin`/`end`),
    /// played or real.
    pub fn in_session(self) -> bool {
        matches!(
            self,
            Driver::Session | Driver::RealSession | Driver::RealLoop
        )
    }

    /// Whether a real Claude Code session does the ticks' work, run per
    /// prompt (`real-session`) or interactive (`real-loop`).
    pub fn claude_session(self) -> bool {
        matches!(self, Driver::RealSession | Driver::RealLoop)
    }

    /// Whether each tick is a prompt a session is sent (a real one, or
    /// the hooks' inputs played): engine flags are in that prompt, a gate
    /// is answered by a later one.
    pub fn prompted(self) -> bool {
        self.claude_session() || self == Driver::Hooks
    }
}

/// The sandbox before tick 1. Everything is optional.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct World {
    /// A fixture backlog, `fixtures/backlogs/<name>.yaml` [default: an empty `acme/app`].
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub backlog: Option<Spanned<String>>,
    /// `fixtures/claude-md/<name>.md`, copied to the project's CLAUDE.md.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub claude_md: Option<Spanned<String>>,
    /// mock-qmd's state at tick 1: `up`, `down` or `{ slow: MS }`.
    #[serde(default)]
    #[schemars(schema_with = "schema_parts::qmd_state")]
    pub qmd: QmdState,
    /// A pre-existing `.sdd/loop/{skill}.lock`.
    #[serde(default)]
    pub lock: Option<LockSpec>,
    /// A pre-existing budget.json (this map, written as JSON).
    #[serde(default)]
    pub budget: Option<Map<String, Value>>,
    /// Pre-existing history lines, oldest first.
    #[serde(default)]
    pub history: Vec<Map<String, Value>>,
    /// Files in the project: `path relative to the project: content`.
    #[serde(default)]
    #[schemars(with = "std::collections::BTreeMap<String, String>")]
    pub files: HashMap<Spanned<String>, String>,
    /// The clock at tick 1, RFC 3339 [default: 2026-05-09T14:00:00Z].
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub start: Option<Spanned<String>>,
    /// A notification receiver on 127.0.0.1, given to every tick as
    /// `SDD_LOOP_NOTIFY` (an ntfy-style topic URL): `{}` answers 204,
    /// `{fail: 500}` that status, `{hang: true}` never.
    #[serde(default)]
    pub notify: Option<NotifySpec>,
}

/// How the notification receiver answers.
#[derive(Debug, Default, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotifySpec {
    /// Answer every POST with this HTTP status (e.g. 500).
    #[serde(default)]
    pub fail: Option<u16>,
    /// Never answer: the engine's own time limit must end each POST.
    #[serde(default)]
    pub hang: bool,
}

impl NotifySpec {
    /// The receiver's answer.
    pub fn answer(self) -> sdd_mocks::notify::Answer {
        match (self.hang, self.fail) {
            (true, _) => sdd_mocks::notify::Answer::Hang,
            (false, Some(status)) => sdd_mocks::notify::Answer::Status(status),
            (false, None) => sdd_mocks::notify::Answer::Accept,
        }
    }
}

/// One simulated machine.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    /// How far its clock is ahead of the case's (`-2m`: behind) [default: 0s].
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub skew: Option<Spanned<String>>,
}

/// A lock left by an earlier tick.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    /// Whose lock: `live`, `dead`, or a process id.
    pub pid: PidSpec,
    /// The iteration the holder was running [default: 1].
    #[serde(default = "one")]
    pub iteration: u64,
    /// RFC 3339 [default: the case's start].
    #[serde(default)]
    pub started_at: Option<String>,
}

fn one() -> u64 {
    1
}

fn yes() -> bool {
    true
}

/// One engine invocation.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TickSpec {
    /// What the fake skill does if the engine runs it this tick: a
    /// fake-skill script entry (`actions`, `summary`, `result`, `exit`;
    /// fixtures/README.md). Default: nothing, and an empty result.
    #[serde(default)]
    #[schemars(schema_with = "schema_parts::skill_entry")]
    pub skill: Option<Tick>,
    /// Real-CLI drivers only: the scripted model's turns this tick's CLI
    /// gets, in mock-model's turn format (fixtures/model/README.md); the
    /// harness runs one mock model per case with every tick's turns in
    /// order. A tick that runs no CLI has none.
    #[serde(default)]
    #[schemars(schema_with = "schema_parts::model_turns")]
    pub model: Vec<Spanned<Turn>>,
    /// `driver: real-session` only: what this tick's session is sent
    /// instead of the case's loop prompt — a user's next prompt, such as
    /// `proceed` answering the gate the last prompt asked. `driver:
    /// real-loop`: what the user types for this tick, instead of waiting
    /// for `/loop` to fire. `driver: hooks`: the `UserPromptSubmit`
    /// input's `prompt`.
    #[serde(default)]
    pub prompt: Option<String>,
    /// `driver: real-loop` only: a dialog of Claude Code's own the user
    /// closes before this tick — once the session's screen shows this
    /// text (e.g. `What do you want to do?`, the options Claude Code opens
    /// after a 429), Escape is pressed [default: none].
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub dismiss: Option<Spanned<String>>,
    /// `driver: hooks` only: the `UserPromptSubmit` input's `source` — who
    /// sent the prompt (`user`, `sdk`, `loop_wakeup`, `schedule_wakeup`,
    /// `system`, `poll_event`, or any other string) [default: no field,
    /// as older Claude Code releases send it].
    #[serde(default)]
    pub source: Option<String>,
    /// `driver: real-session` only: `new` starts a new Claude Code session
    /// for this tick; by default a tick continues the last one (`claude
    /// -p … --continue`), and the first tick and a tick after a kill start
    /// one.
    #[serde(default)]
    pub session: Option<SessionMode>,
    /// `driver: claude|codex` only: how the fake agent's stream reports the
    /// tick's actions — its end (`success`, an error subtype, `no_result`
    /// …), final message, errors, helper models, cost factor
    /// (fixtures/README.md, "Fake agents"). Default: a successful run.
    #[serde(default)]
    #[schemars(schema_with = "schema_parts::agent_stream")]
    pub agent: Option<Spanned<Stream>>,
    /// With `machines:` declared: the machine this tick runs on.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub machine: Option<Spanned<String>>,
    /// With `machines:` declared: the machines this tick runs on at once,
    /// one engine each, released together once every one has read the
    /// backlog (a review tick: its PRs; the pause point `after-backlog`),
    /// so they claim at the same moment.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub machines: Vec<Spanned<String>>,
    /// World events applied before the tick, in order.
    #[serde(default)]
    pub before: Vec<Event>,
    /// World events applied the moment the fake skill reaches its
    /// `barrier` action, while the tick runs: `advance`, `skew`,
    /// `partition`, `heal`. The tick then goes on and ends however it ends
    /// (the skill blocks at the barrier until something stops it).
    #[serde(default)]
    pub at_barrier: Vec<Event>,
    /// Extra engine arguments for this tick only.
    #[serde(default)]
    pub args: Vec<String>,
    /// The scripted user for this tick (passed as `--answers FILE`).
    #[serde(default)]
    pub answers: Vec<AnswerSpec>,
    /// Kill the engine mid-tick.
    #[serde(default)]
    #[schemars(with = "Option<Kill>")]
    pub kill: Option<Spanned<Kill>>,
    /// Kill the world's live lock holder (`world.lock.pid: live`) the moment
    /// the engine prints this text — e.g. the `--lock wait` note, to release
    /// the lock while the tick waits for it.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub release_lock_when: Option<Spanned<String>>,
    /// What must hold for this tick.
    #[serde(default)]
    pub expect: TickExpect,
}

impl TickSpec {
    /// The machines this tick runs on (none without `machines:`).
    pub fn on_machines(&self) -> Vec<&str> {
        self.machine
            .iter()
            .chain(&self.machines)
            .map(|m| m.value.as_str())
            .collect()
    }
}

/// Which Claude Code session a `driver: real-session` tick runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionMode {
    /// The last tick's session, continued (`--continue`): one transcript.
    Continue,
    /// A new session, as after the user restarted Claude Code.
    New,
}

/// Something that happens to the world between ticks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Event {
    /// Move the clock: `90s`, `50m`, `2h` (every machine's, with machines).
    Advance(#[schemars(with = "String")] Spanned<String>),
    /// Set a machine's skew from now on: its clock reads the case's plus
    /// `by` (`-2m`: behind).
    Skew {
        #[schemars(with = "String")]
        machine: Spanned<String>,
        #[schemars(with = "String")]
        by: Spanned<String>,
    },
    /// Cut a machine off: its clone's `origin` and its tracker URL point at
    /// a loopback port nobody listens on (processes already running keep
    /// the tracker URL they were started with; their git calls are cut).
    Partition(#[schemars(with = "String")] Spanned<String>),
    /// Undo `partition`.
    Heal(#[schemars(with = "String")] Spanned<String>),
    /// mock-qmd's state from now on.
    Qmd(#[schemars(schema_with = "schema_parts::qmd_state")] QmdState),
    /// A change "elsewhere" on the tracker (fixtures/README.md, "World changes").
    Tracker(#[schemars(schema_with = "schema_parts::world_change")] Spanned<WorldChange>),
    /// New commits on a branch, pushed to origin from another clone.
    Push {
        branch: String,
        #[serde(default = "one_u32")]
        commits: u32,
        #[serde(default)]
        message: Option<String>,
    },
    /// Rewrite a branch's last commit and force-push it from another clone.
    ForcePush {
        branch: String,
        #[serde(default)]
        message: Option<String>,
    },
    /// A tracker fault (fixtures/README.md, "Faults").
    Fault(#[schemars(schema_with = "schema_parts::fault")] Fault),
    /// Create (`true`) or remove (`false`) `.sdd/loop/{skill}.stop`.
    StopFile(bool),
    /// End `world.lock`'s live holder (`true`): the tick it stands for is
    /// gone, and the next tick finds its lock stale.
    ReleaseLock(#[schemars(with = "bool")] Spanned<bool>),
    /// Write a file in the project.
    File {
        #[schemars(with = "String")]
        path: Spanned<String>,
        content: String,
    },
    /// Remove a file from the project.
    Remove(#[schemars(with = "String")] Spanned<String>),
    /// Change one field of a JSON (or JSON-lines) file in place, as a user
    /// editing it by hand would: `{ file: budget, pointer: /max_iterations,
    /// set: 2 }`, or `remove: true` to delete the field.
    Edit(Box<Edit>),
    /// Cut a file short, as a torn write leaves it: by default the last
    /// line loses its second half and its newline.
    Truncate(Truncate),
}

/// A state file of the case's skill, by the name an edit gives it: the
/// name, what follows `.sdd/loop/{skill}.` in its path, and whether it
/// holds one JSON document a line.
pub const STATE_FILES: [(&str, &str, bool); 6] = [
    ("budget", "budget.json", false),
    ("history", "history.jsonl", true),
    ("lock", "lock", false),
    ("inflight", "inflight.json", false),
    ("transcript", "transcript.json", false),
    ("hooks", "hooks.jsonl", true),
];

/// The file an edit or a truncation acts on: a state file of the case's
/// skill by name (`budget`, `history`, …, see [`STATE_FILES`]) or a path
/// relative to the project.
pub fn state_file(name: &str) -> Option<(&'static str, bool)> {
    STATE_FILES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, suffix, lines)| (*suffix, *lines))
}

/// A name without `/` or `.` names a state file; anything else is a path.
pub fn names_state_file(file: &str) -> bool {
    !file.contains(['/', '.'])
}

/// One field of a JSON file changed in place.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// `budget`, `history`, `lock`, `inflight`, `transcript` or `hooks` —
    /// `.sdd/loop/{skill}.budget.json` and so on — or a path relative to
    /// the project.
    #[schemars(with = "String")]
    pub file: Spanned<String>,
    /// A JSON-lines file (`history`, `hooks`, `*.jsonl`): the line to
    /// edit, from 1 [default: the last].
    #[serde(default)]
    #[schemars(with = "Option<usize>")]
    pub line: Option<Spanned<usize>>,
    /// The field, as a JSON pointer: `/max_iterations`,
    /// `/budget_snapshot/iterations_used`, `/gates/0/answer`.
    #[schemars(with = "String")]
    pub pointer: Spanned<String>,
    /// Its new value, any YAML value (`null` included); a field the object
    /// lacks is added.
    #[serde(default, deserialize_with = "present")]
    pub set: Option<Value>,
    /// `true`: delete the field (or the array element) instead.
    #[serde(default)]
    #[schemars(with = "Option<bool>")]
    pub remove: Option<Spanned<bool>>,
}

/// A value that is present, `null` included (absent is `None`).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// A file cut short.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Truncate {
    /// As for `edit`: a state file's name or a path relative to the project.
    #[schemars(with = "String")]
    pub file: Spanned<String>,
    /// How many bytes to cut from the end [default: the second half of
    /// the last line, and its newline — a line torn mid-write].
    #[serde(default)]
    #[schemars(with = "Option<u64>")]
    pub drop: Option<Spanned<u64>>,
}

fn one_u32() -> u32 {
    1
}

/// One scripted answer (the engine's `--answers` entry).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerSpec {
    /// The gate it answers.
    #[schemars(schema_with = "schema_parts::gate_name")]
    pub gate: Spanned<String>,
    /// One of the gate's options, e.g. `continue` or `raise max_iterations=10`.
    #[schemars(with = "String")]
    pub answer: Spanned<String>,
    /// Answer only a question containing this text.
    #[serde(default, rename = "match")]
    pub matches: Option<String>,
    /// Answer only in this iteration.
    #[serde(default)]
    pub iteration: Option<u64>,
}

/// How a tick's engine is killed.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Kill {
    /// SIGKILL when the fake skill reaches its `barrier` action (the
    /// harness supplies the FIFO; the action's value is only a label).
    Barrier,
    /// Abort at a named crash point (`SDD_LOOP_CRASH_AT`).
    CrashPoint(#[schemars(schema_with = "schema_parts::crash_point")] Spanned<String>),
    /// SIGINT the engine (as Ctrl-C would) when the fake skill reaches its
    /// `barrier`; the skill then drains and finishes its actions.
    Interrupt,
}

/// Expectations about one tick.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TickExpect {
    /// The engine's exit status [default: 0 or 3, anything else fails the case].
    #[serde(default)]
    pub exit: Option<u8>,
    /// The outcome of the history line this tick appended.
    #[serde(default)]
    pub outcome: Option<Outcome>,
    /// Substrings of this tick's stdout.
    #[serde(default)]
    pub printed: Vec<String>,
    /// Substrings this tick's stdout must not contain.
    #[serde(default)]
    pub not_printed: Vec<String>,
    /// Substrings of this tick's stderr: the engine's `error:`, `help:`
    /// and `warning:` lines (and the wrapped skill's own output).
    #[serde(default)]
    pub stderr: Vec<String>,
    /// Exactly the gates this tick recorded, in order.
    #[serde(default)]
    pub gates: Option<Vec<GateSpec>>,
}

/// Expectations about the whole run.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The stop cause on the last history line, or `none`.
    #[serde(default)]
    #[schemars(schema_with = "schema_parts::stop_cause")]
    pub stop_cause: Option<Spanned<String>>,
    /// The last history line's iteration.
    #[serde(default)]
    pub final_iteration: Option<u64>,
    /// How many lines the history file holds at the end of the run.
    #[serde(default)]
    pub history_lines: Option<u64>,
    /// The last tick's exit status.
    #[serde(default)]
    pub exit: Option<u8>,
    /// Every gate recorded in the run, in order.
    #[serde(default)]
    pub gates: Option<Vec<GateSpec>>,
    /// Substrings of some tick's stdout.
    #[serde(default)]
    pub printed: Vec<String>,
    /// Substrings no tick's stdout contains.
    #[serde(default)]
    pub not_printed: Vec<String>,
    /// Files in the project after the run.
    #[serde(default)]
    pub files: FilesExpect,
}

/// Paths relative to the project.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilesExpect {
    #[serde(default)]
    pub present: Vec<String>,
    #[serde(default)]
    pub absent: Vec<String>,
}

/// A SPEC-0017 assertion: prose bound to a check.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Assertion {
    pub text: String,
    /// With `machines:` declared: judge this machine's project (its
    /// `.sdd/loop/`, its files) and its ticks [default: the machine of the
    /// last tick].
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub machine: Option<Spanned<String>>,
    #[serde(rename = "type")]
    pub check: Check,
    /// Marks an assertion that fails because of a known bug (say which,
    /// and where it is reported): the case passes while it fails, and
    /// fails once it passes, so the marker is removed with the fix.
    #[serde(default)]
    pub known_failure: Option<String>,
}

impl Case {
    pub fn id(&self) -> &str {
        &self.id.value
    }

    /// The declared machines' names, sorted.
    pub fn machine_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.machines.keys().map(|k| k.value.as_str()).collect();
        names.sort_unstable();
        names
    }

    pub fn ticks(&self) -> &[TickSpec] {
        &self.ticks.value
    }
}
