//! The check kinds an assertion's `type` names, as a case writes them:
//! [`Check`], the comparisons a JSON pointer is held to ([`Comparison`])
//! and a gate expectation ([`GateSpec`]). How each is judged against a
//! run lives in the judging stage (`judging::check`).
//!
//! [`Check`] is externally tagged (`type: { stop_cause: cost_budget }`), so
//! an unknown kind is reported at its key with the valid kinds listed.
//! Expectations (`expect:` in a case) become the same checks
//! ([`super::expectations`]), so there is one judge for both.

use schemars::JsonSchema;
use sdd_loop::state::history::Outcome;
use sdd_loop::state::paths::Skill;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

/// A tick number (1-based) as written in a case.
pub type TickRef = Option<Spanned<usize>>;

/// One check.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The last history line's stop cause (a stop-cause name, or `none`).
    StopCause(
        #[schemars(schema_with = "crate::loading::schema_parts::stop_cause")] Spanned<String>,
    ),
    /// The last history line's iteration.
    FinalIteration(u64),
    /// A tick's exit status (default: the last tick).
    Exit(ExitCheck),
    /// The outcome of the last history line a tick appended (default: the last tick).
    Outcome(OutcomeCheck),
    /// A gate was recorded (in any tick, or in tick N).
    Gate(GateCheck),
    /// Exactly these gates were recorded, in this order.
    GatesInOrder(GatesInOrder),
    /// A gate was never recorded.
    NoGate(#[schemars(schema_with = "crate::loading::schema_parts::gate_name")] Spanned<String>),
    /// Some tick's stdout (or tick N's; `stream: stderr` for its stderr)
    /// contains the text.
    Printed(TextCheck),
    /// No tick's stdout (or tick N's; `stream: stderr` for its stderr)
    /// contains the text.
    NotPrinted(TextCheck),
    /// How many lines the history file holds at the end of the run.
    HistoryLines(Count),
    /// A value in a history line (default: the last), by JSON pointer.
    HistoryField(HistoryField),
    /// A value in budget.json, by JSON pointer.
    BudgetField(BudgetField),
    /// A value in the lockfile `.sdd/loop/{skill}.lock` left at the end of
    /// the run (a killed tick leaves it), by JSON pointer.
    LockField(BudgetField),
    /// A path exists in the project after the run.
    FilePresent(String),
    /// A path does not exist in the project after the run.
    FileAbsent(String),
    /// A file of this repository (relative to the workspace root) contains
    /// the text; whitespace and line breaks are not significant.
    RepoFileContains(RepoFileContains),
    /// How many requests the mock tracker answered on a route.
    TrackerRequests(TrackerRequests),
    /// What the notification receiver (`world.notify`) was sent: how many
    /// POSTs, texts one of them holds (headers or body), texts none holds.
    Notifications(Notifications),
    /// How many pull requests the tracker holds at the end of the run (of
    /// every machine: the tracker is shared), or how many of them close
    /// issue N (`Closes #N` in the body).
    PullRequests(PullRequests),
    /// Real-CLI cases: the request the scripted model answered with turn
    /// N (of the case, counted from 1 across ticks) held these texts.
    ModelRequest(ModelRequest),
    /// Real-CLI cases: how many requests the scripted model answered (in
    /// the run, or in tick N; of one outcome, or all).
    ModelRequests(ModelRequests),
    /// Real-CLI cases: the usage the scripted model returned, summed
    /// (`mock-model totals`: `/responses`, `/input`, `/output`,
    /// `/cache_read`, `/cache_creation`, `/reasoning`, `/by_model/M/…`;
    /// and `/tokens_in`, `/tokens_out` as the engine counts them, cache
    /// reads and writes in `tokens_in`), in the run or in tick N.
    ModelTotals(ModelTotals),
    /// A plugin's `skills/{skill}/SKILL.md` agrees with the engine: loop
    /// flags and defaults, gate questions and options, and every command,
    /// flag and exit status it names (`sdd-evals docs`).
    SkillDocs(SkillDocs),
    /// Every status block a tick (or tick N) printed follows the canonical
    /// layout of loop-telemetry.md "Status Block", a skipped tick's with
    /// the skip note on its `Outcome:` line. Every case is graded on it;
    /// state it to mark a `known_failure`.
    StatusLayout(StatusLayout),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusLayout {
    #[serde(default)]
    #[schemars(with = "Option<usize>")]
    pub tick: TickRef,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillDocs {
    /// Whose document: `work` or `review`.
    pub skill: Skill,
    /// The plugin checkout, relative to the workspace root [default: this
    /// repository].
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub plugin_root: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExitCheck {
    pub code: i32,
    #[serde(default)]
    #[schemars(with = "Option<usize>")]
    pub tick: TickRef,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeCheck {
    pub is: Outcome,
    #[serde(default)]
    #[schemars(with = "Option<usize>")]
    pub tick: TickRef,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateCheck {
    #[schemars(schema_with = "crate::loading::schema_parts::gate_name")]
    pub name: Spanned<String>,
    /// The exact question.
    #[serde(default)]
    pub question: Option<String>,
    /// The exact recorded answer.
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default)]
    #[schemars(with = "Option<usize>")]
    pub tick: TickRef,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatesInOrder {
    pub gates: Vec<GateSpec>,
    #[serde(default)]
    #[schemars(with = "Option<usize>")]
    pub tick: TickRef,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextCheck {
    pub text: String,
    #[serde(default)]
    #[schemars(with = "Option<usize>")]
    pub tick: TickRef,
    /// Which of the tick's outputs: `stdout` (the report: status blocks,
    /// final report) or `stderr` (the engine's `error:`, `help:` and
    /// `warning:` lines, and the wrapped skill's own output) [default:
    /// stdout].
    #[serde(default)]
    pub stream: Stream,
}

/// One of a tick's two outputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    #[default]
    Stdout,
    Stderr,
}

impl Stream {
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// A number compared.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Count {
    pub is: Comparison,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryField {
    /// 1-based line number [default: the last line].
    #[serde(default)]
    #[schemars(with = "Option<usize>")]
    pub line: Option<Spanned<usize>>,
    /// A JSON pointer, e.g. `/budget_snapshot/dollars_estimate`.
    #[schemars(with = "String")]
    pub pointer: Spanned<String>,
    pub is: Comparison,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetField {
    #[schemars(with = "String")]
    pub pointer: Spanned<String>,
    pub is: Comparison,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepoFileContains {
    #[schemars(with = "String")]
    pub path: Spanned<String>,
    pub text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrackerRequests {
    /// `GET`, `POST`, … [default: any].
    #[serde(default)]
    pub method: Option<String>,
    /// `*` one segment, `**` any number, e.g. `**/pulls/*/merge`.
    pub path: String,
    /// Compared with the number of matching requests.
    pub is: Comparison,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Notifications {
    /// Compared with the number of requests received [default: not compared].
    #[serde(default)]
    pub is: Option<Comparison>,
    /// Each text is in some request (a header's value or the body).
    #[serde(default)]
    pub contains: Vec<String>,
    /// No request holds any of these texts.
    #[serde(default)]
    pub not_contains: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PullRequests {
    /// Only the pull requests that close this issue [default: every one].
    #[serde(default)]
    pub closes: Option<u64>,
    /// Compared with the number of pull requests.
    pub is: Comparison,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelRequest {
    /// The turn, counted from 1 across the case's ticks.
    pub turn: usize,
    /// The last tool result in the request (a `tool_result`, or a
    /// `function_call_output`) contains this text.
    #[serde(default)]
    pub last_tool_result_contains: Option<String>,
    /// Some user message (tool results excluded) contains this text.
    #[serde(default)]
    pub user_contains: Option<String>,
    /// The system prompt (Codex: its instructions) contains this text.
    #[serde(default)]
    pub system_contains: Option<String>,
}

/// The outcomes a scripted model's log records for a request.
pub const MODEL_OUTCOMES: [&str; 9] = [
    "turn",
    "untooled",
    "count_tokens",
    "fault",
    "expect_failed",
    "out_of_turns",
    "unauthorized",
    "bad_request",
    "not_found",
];

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelRequests {
    /// Only requests of this outcome: `turn`, `untooled`, `count_tokens`,
    /// `fault`, `expect_failed`, `out_of_turns`, `unauthorized`,
    /// `bad_request`, `not_found` [default: every request].
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub outcome: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "Option<usize>")]
    pub tick: TickRef,
    /// Compared with the number of matching requests.
    pub is: Comparison,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelTotals {
    #[serde(default)]
    #[schemars(with = "Option<usize>")]
    pub tick: TickRef,
    /// A JSON pointer into the totals, e.g. `/input`.
    #[schemars(with = "String")]
    pub pointer: Spanned<String>,
    pub is: Comparison,
}

/// How a value is compared.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Comparison {
    /// Equal (numbers compare by value: 1 equals 1.0).
    Equals(Value),
    NotEquals(Value),
    /// A number ≥ this.
    AtLeast(f64),
    /// A number ≤ this.
    AtMost(f64),
    /// A number ≥ the value at another pointer of the same document.
    AtLeastField(#[schemars(with = "String")] Spanned<String>),
    /// A number ≤ the value at another pointer of the same document.
    AtMostField(#[schemars(with = "String")] Spanned<String>),
    /// An array holding an equal element, or a string holding the text.
    Contains(Value),
    /// The value exists (`true`) or not (`false`).
    Present(bool),
}

/// A gate by name, optionally with its exact question and answer.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateSpec {
    #[schemars(schema_with = "crate::loading::schema_parts::gate_name")]
    pub name: Spanned<String>,
    #[serde(default)]
    pub question: Option<String>,
    #[serde(default)]
    pub answer: Option<String>,
}
