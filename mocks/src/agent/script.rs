//! The fake agents' script (`FAKE_AGENT_SCRIPT`): per invocation, the
//! world actions the agent performs (the fake skill's [`Action`]s) and how
//! its stream ends — in YAML, typed and `deny_unknown_fields`.
//!
//! ```yaml
//! ticks:
//!   - actions:                    # in order; see the fake skill's actions
//!       - open_pr: { branch: feature/1-login, title: Add login, body: "Closes #1" }
//!       - usage: { model: claude-sonnet-4-5-20250929, tokens_in: 12000, tokens_out: 900,
//!                  cache_read_tokens: 9000, cache_write_tokens: 2000 }
//!       - progress: Opened the PR    # a text block / agent message
//!     stream:                       # how the stream reports it; all optional
//!       end: success                # how the stream ends (below)
//!       message: Opened #3 for #1.  # the final message
//!       helpers:                    # Claude: models seen only in modelUsage
//!         - { model: claude-haiku-4-5, tokens_in: 400, tokens_out: 30 }
//!       cost_factor: 1.0            # Claude: its total_cost_usd = list price × this
//!       windows:                    # Claude: a subscriber's usage windows (a rate_limit_event)
//!         five_hour: { utilization: 0.55, resets_at: 2026-05-09T19:00:00Z }
//!       rate_limited:               # Claude: a 429 on a window, then an error result
//!         { window: five_hour, resets_at: 2026-05-09T19:31:00Z, message: "You've hit your 5-hour limit · resets 7:31pm (UTC)" }
//!     exit: 0                       # default: 1 after a Claude error, else 0
//! default: { actions: [] }          # when no entry is left
//! ```
//!
//! `end`: `success`; Claude's error subtypes `error_during_execution`,
//! `error_max_turns`, `error_max_budget_usd`,
//! `error_max_structured_output_retries`; Codex's `turn_failed` and
//! `error`; or `no_result` — the stream stops with neither a `result` nor
//! a `turn.completed`. `errors` are Claude's `errors[]` (and Codex's failure
//! message), `is_error`, `permission_denials` (tool names) and `num_turns`
//! override what Claude's result says.
//!
//! Agents speak no protocol: the fake skill's protocol-only actions
//! (`failure`, `chain`, `review_round`, `report_pr`) are refused. Entries
//! run in order, one per invocation, counted in `FAKE_AGENT_COUNTER`
//! (default `{script}.count`); past the end, `default` runs.

use std::path::Path;

use sdd_loop::state::protocol::ModelUsage;
use serde::{Deserialize, Serialize};

use crate::skill::script::Action;
use crate::yaml::{self, YamlError};

pub const FORMAT_HELP: &str = "the fake agents' script format is described in fixtures/README.md";

/// Which agent a script entry is played by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Claude,
    Codex,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Claude => "fake-claude",
            Kind::Codex => "fake-codex",
        }
    }
}

/// How the stream ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    #[default]
    Success,
    ErrorDuringExecution,
    ErrorMaxTurns,
    ErrorMaxBudgetUsd,
    ErrorMaxStructuredOutputRetries,
    TurnFailed,
    Error,
    NoResult,
}

impl End {
    /// Claude's result `subtype`, for the ends Claude has.
    pub fn claude_subtype(self) -> Option<&'static str> {
        Some(match self {
            End::Success => "success",
            End::ErrorDuringExecution => "error_during_execution",
            End::ErrorMaxTurns => "error_max_turns",
            End::ErrorMaxBudgetUsd => "error_max_budget_usd",
            End::ErrorMaxStructuredOutputRetries => "error_max_structured_output_retries",
            End::TurnFailed | End::Error | End::NoResult => return None,
        })
    }

    fn fits(self, kind: Kind) -> bool {
        match kind {
            Kind::Claude => self.claude_subtype().is_some() || self == End::NoResult,
            Kind::Codex => matches!(
                self,
                End::Success | End::TurnFailed | End::Error | End::NoResult
            ),
        }
    }
}

fn one() -> f64 {
    1.0
}

/// How the stream reports the work, beyond the actions: its end, final
/// message, errors, Claude's result fields, helper models and cost. The
/// same shape is a case's `agent:` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stream {
    #[serde(default)]
    pub end: End,
    /// The final message (Claude's `result`, Codex's last agent message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Claude's `errors[]`; Codex's failure message (the first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Claude: overrides the result's `is_error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Claude: tool names the result lists as denied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission_denials: Vec<String>,
    /// Claude: overrides the result's `num_turns` [default: the steps].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_turns: Option<u64>,
    /// Claude: models seen only in the result's `modelUsage`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub helpers: Vec<ModelUsage>,
    /// Claude: its own cost estimate is the built-in list price × this.
    #[serde(default = "one")]
    pub cost_factor: f64,
    /// Claude: the usage windows a subscriber's session reports, as one
    /// `rate_limit_event` before the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<Windows>,
    /// Claude: the API answered 429 — a `rejected` event, the assistant's
    /// `rate_limit` error and an error result quoting `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limited: Option<RateLimited>,
}

/// One window's figure: `utilization` 0–1, `resets_at` RFC 3339.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowFigure {
    pub utilization: f64,
    pub resets_at: String,
}

/// The windows a `rate_limit_event` carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Windows {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub five_hour: Option<WindowFigure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seven_day: Option<WindowFigure>,
}

/// A 429 on a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimited {
    /// `five_hour` or `seven_day` (Claude Code's `rateLimitType`).
    pub window: String,
    /// RFC 3339.
    pub resets_at: String,
    /// The text Claude Code shows ("You've hit your 5-hour limit · resets 7:31pm (UTC)").
    pub message: String,
}

impl Default for Stream {
    fn default() -> Self {
        Self {
            end: End::Success,
            message: None,
            errors: Vec::new(),
            is_error: None,
            permission_denials: Vec::new(),
            num_turns: None,
            helpers: Vec::new(),
            cost_factor: 1.0,
            windows: None,
            rate_limited: None,
        }
    }
}

impl Stream {
    /// Why `kind` cannot print this stream, if it cannot.
    pub fn check(&self, kind: Kind) -> Result<(), String> {
        if !self.end.fits(kind) {
            return Err(format!(
                "end `{}` is not how {} ends a stream",
                serde_json::to_value(self.end)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                kind.name()
            ));
        }
        if kind == Kind::Codex
            && (!self.helpers.is_empty()
                || !self.permission_denials.is_empty()
                || self.is_error.is_some()
                || self.num_turns.is_some()
                || self.cost_factor != 1.0
                || self.windows.is_some()
                || self.rate_limited.is_some())
        {
            return Err(
                "helpers, permission_denials, is_error, num_turns, cost_factor, windows and rate_limited are Claude's; Codex's stream has none of them".to_owned(),
            );
        }
        if !(self.cost_factor.is_finite() && self.cost_factor >= 0.0) {
            return Err(format!("cost_factor {} is not a factor", self.cost_factor));
        }
        Ok(())
    }
}

/// What one invocation does.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentTick {
    #[serde(default)]
    pub actions: Vec<Action>,
    #[serde(default)]
    pub stream: Stream,
    /// [default: 1 after a Claude error result, else 0]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
}

impl AgentTick {
    /// Why `kind` cannot play this entry, if it cannot.
    pub fn check(&self, kind: Kind) -> Result<(), String> {
        for action in &self.actions {
            let name = match action {
                Action::Failure(_) => "failure",
                Action::Chain(_) => "chain",
                Action::ReviewRound { .. } => "review_round",
                Action::ReportPr(_) => "report_pr",
                _ => continue,
            };
            return Err(format!(
                "action `{name}` is a protocol report, and an agent speaks no protocol: the engine learns what it did from its stream and the world (open_pr, push, comment, merge, usage …)"
            ));
        }
        self.stream.check(kind)?;
        if let Some(code) = self.exit
            && (!(0..=255).contains(&code) || crate::skill::exit::is_reserved(code))
        {
            return Err(format!(
                "exit {code} cannot be scripted: use 0–255 except 90–99, the fake agents' own failures"
            ));
        }
        Ok(())
    }

    /// The exit status: as scripted, else 1 after a Claude error result.
    pub fn exit_code(&self) -> i32 {
        self.exit.unwrap_or(match self.stream.end {
            End::ErrorDuringExecution
            | End::ErrorMaxTurns
            | End::ErrorMaxBudgetUsd
            | End::ErrorMaxStructuredOutputRetries => 1,
            _ => 0,
        })
    }
}

/// A fake agent's script.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentScript {
    #[serde(default)]
    pub ticks: Vec<AgentTick>,
    #[serde(default)]
    pub default: Option<AgentTick>,
}

impl AgentScript {
    pub fn load(path: &Path) -> Result<Self, YamlError> {
        yaml::load(path, FORMAT_HELP)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Self, YamlError> {
        yaml::parse(path, text, FORMAT_HELP)
    }

    /// The entry for the `n`-th invocation (from 1).
    pub fn nth(&self, n: u64) -> Option<&AgentTick> {
        usize::try_from(n.saturating_sub(1))
            .ok()
            .and_then(|i| self.ticks.get(i))
            .or(self.default.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_and_protocol_actions_are_refused() {
        let s = AgentScript::parse(
            Path::new("a.yaml"),
            "ticks:\n  - actions:\n      - usage: { model: m, tokens_in: 10, tokens_out: 1 }\n    stream: { end: error_max_turns, errors: [too many turns] }\n  - actions: [{ report_pr: { number: 1, branch: b, state: open } }]\ndefault: { stream: { end: turn_failed } }\n",
        )
        .unwrap();
        let first = s.nth(1).unwrap();
        assert_eq!(first.stream.end, End::ErrorMaxTurns);
        assert_eq!(first.exit_code(), 1);
        assert_eq!(first.check(Kind::Claude), Ok(()));
        assert!(
            first
                .check(Kind::Codex)
                .unwrap_err()
                .contains("not how fake-codex ends")
        );
        assert!(
            s.nth(2)
                .unwrap()
                .check(Kind::Claude)
                .unwrap_err()
                .contains("`report_pr` is a protocol report")
        );
        let last = s.nth(3).unwrap();
        assert_eq!((last.stream.end, last.exit_code()), (End::TurnFailed, 0));
        assert_eq!(last.check(Kind::Codex), Ok(()));
        let err =
            AgentScript::parse(Path::new("a.yaml"), "ticks:\n  - ends: success\n").unwrap_err();
        assert_eq!(err.line, 2, "{}", err.render());
    }
}
