//! The mock model's script: the ordered turns one conversation gets, in
//! YAML, typed and `deny_unknown_fields`, errors at
//! `file:line:column`.
//!
//! ```yaml
//! model: claude-sonnet-4-5-20250929   # optional; default: the request's `model`
//! untooled:                           # requests without `tools` (title generation)
//!   text: Fix the login form          #   answered with this, using no turn
//!   usage: { input: 40, output: 6 }
//! turns:
//!   - text: I will look first.        # a text block / `message` item, optional
//!     calls:                          # tool calls, in order, optional
//!       - bash: { command: echo begin, description: Start the tick }
//!       - tool: { name: Read, input: { file_path: README.md } }
//!     usage: { input: 1200, output: 80, cache_read: 900, cache_creation: 300 }
//!     expect: { user_contains: hello }
//!     faults:                         # served before the turn, in order
//!       - { fault: overloaded, times: 2 }
//!       - { fault: rate_limited, retry_after: 1 }
//!       - { fault: cut, after_events: 3 }
//!   - text: Done.
//!     expect: { last_tool_result_contains: begin }
//!     windows:                        # the account's usage windows from here on
//!       five_hour: { utilization: 0.30, resets_at: "2026-05-09T19:00:00Z" }
//!   - limit: five_hour                # this request is answered 429 on the window
//! ```
//!
//! A [`Call::Bash`] is Claude Code's `Bash` `tool_use` (`{command,
//! description}`) on the Messages API and Codex's `exec_command`
//! `function_call` (`{"cmd": …}`) on the Responses API; a [`Call::Tool`]
//! is sent as written. Every turn needs text or a call, except a turn
//! with a `limit`, which is answered 429 and has neither
//! ([`super::windows`]). [`Usage`] fields
//! default to 0, except `input` (100) and `output` (10).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_saphyr::Spanned;

use super::expect::Expect;
use super::faults::FaultSpec;
use super::windows::{Window, Windows};
use crate::yaml::{self, YamlError};

/// Where the script format is documented; ends every `help:` line.
pub const FORMAT_HELP: &str =
    "the mock model's script format is described in fixtures/model/README.md";

/// One server's conversation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The model every answer names, unless a turn names its own
    /// [default: the request's `model`].
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub untooled: Untooled,
    pub turns: Vec<Spanned<Turn>>,
    /// The file the script came from (for errors the CLI shows).
    #[serde(skip)]
    pub source: PathBuf,
}

/// The answer to a request that offers no tools.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Untooled {
    #[serde(default = "untooled_text")]
    pub text: String,
    #[serde(default = "untooled_usage")]
    pub usage: Usage,
}

impl Default for Untooled {
    fn default() -> Self {
        Self {
            text: untooled_text(),
            usage: untooled_usage(),
        }
    }
}

fn untooled_text() -> String {
    "Scripted session".to_owned()
}

fn untooled_usage() -> Usage {
    Usage {
        input: 50,
        output: 5,
        ..Usage::ZERO
    }
}

/// One model response.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub calls: Vec<Call>,
    #[serde(default)]
    pub usage: Usage,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub expect: Expect,
    #[serde(default)]
    pub faults: Vec<Spanned<FaultSpec>>,
    /// The account's usage windows from this answer on (Messages API
    /// headers, [`super::windows`]).
    #[serde(default)]
    pub windows: Option<Windows>,
    /// This request is answered 429: the window's limit is hit (a
    /// subscriber's `rejected`), and the turn is used.
    #[serde(default)]
    pub limit: Option<Window>,
}

/// A tool call the model makes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Call {
    /// Run a shell command: Claude Code's `Bash`, Codex's `exec_command`.
    Bash {
        command: String,
        /// Claude Code's `description` [default: the command].
        #[serde(default)]
        description: Option<String>,
    },
    /// Any tool by name; `input` is its input object (on the Responses
    /// API, `arguments` is this object as a JSON string).
    Tool { name: String, input: Value },
}

/// Token counts of one response, by kind. On the Messages API: `input`,
/// `output`, `cache_read` and `cache_creation` as `input_tokens`,
/// `output_tokens`, `cache_read_input_tokens` and
/// `cache_creation_input_tokens`. On the Responses API: `input`,
/// `output`, `cache_read` as `input_tokens_details.cached_tokens` (a part
/// of `input`, as OpenAI counts), `cache_creation` as
/// `input_tokens_details.cache_write_tokens`, and `reasoning` as
/// `output_tokens_details.reasoning_tokens` (a part of `output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    #[serde(default = "default_input")]
    pub input: u64,
    #[serde(default = "default_output")]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_creation: u64,
    #[serde(default)]
    pub reasoning: u64,
}

fn default_input() -> u64 {
    100
}

fn default_output() -> u64 {
    10
}

/// What a turn without `usage` reports.
impl Default for Usage {
    fn default() -> Self {
        Self {
            input: default_input(),
            output: default_output(),
            ..Self::ZERO
        }
    }
}

impl Usage {
    pub const ZERO: Usage = Usage {
        input: 0,
        output: 0,
        cache_read: 0,
        cache_creation: 0,
        reasoning: 0,
    };

    /// What the Messages API carries of this (it has no reasoning count).
    pub fn for_anthropic(self) -> Self {
        Self {
            reasoning: 0,
            ..self
        }
    }
}

impl Script {
    /// Reads and checks a script.
    pub fn load(path: &Path) -> Result<Self, YamlError> {
        let mut script: Self = yaml::load(path, FORMAT_HELP)?;
        script.check(path)?;
        script.source = path.to_path_buf();
        Ok(script)
    }

    /// Parses and checks script text; `path` names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, YamlError> {
        let mut script: Self = yaml::parse(path, text, FORMAT_HELP)?;
        script.check(path)?;
        script.source = path.to_path_buf();
        Ok(script)
    }

    fn check(&mut self, path: &Path) -> Result<(), YamlError> {
        for turn in &mut self.turns {
            let at = |message: String, help: &str| {
                YamlError::at(
                    path,
                    turn.referenced,
                    message,
                    format!("{help} ({FORMAT_HELP})"),
                )
            };
            if let Some(w) = &turn.value.windows {
                w.check().map_err(|(message, help)| at(message, &help))?;
            }
            if let Some(window) = turn.value.limit {
                if turn.value.text.is_some() || !turn.value.calls.is_empty() {
                    return Err(at(
                        format!(
                            "this turn has `limit: {}` and `text` or `calls`: a limited turn is answered 429, never with a message",
                            window.name()
                        ),
                        "move the text and calls to the next turn",
                    ));
                }
            } else if turn.value.text.is_none() && turn.value.calls.is_empty() {
                return Err(YamlError::at(
                    path,
                    turn.referenced,
                    "this turn has neither `text` nor `calls`",
                    format!(
                        "give the turn a `text`, a `calls` list, or both, or make it a `limit` ({FORMAT_HELP})"
                    ),
                ));
            }
            for fault in &turn.value.faults {
                fault.value.check().map_err(|(message, help)| {
                    YamlError::at(
                        path,
                        fault.referenced,
                        message,
                        format!("{help} ({FORMAT_HELP})"),
                    )
                })?;
            }
        }
        Ok(())
    }
}
