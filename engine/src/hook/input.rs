//! The JSON object Claude Code writes on a hook's standard input, as
//! measured with Claude Code 2.1.328 (`reference/real-agents.md`, "Claude
//! Code hooks"): every event carries `session_id`, `transcript_path`,
//! `cwd`, `prompt_id`, `permission_mode` and `hook_event_name`;
//! `UserPromptSubmit` adds `prompt` (and, in releases that send it,
//! `source`: who sent the prompt), `PreToolUse` adds `tool_name`,
//! `tool_input` and `tool_use_id`, and `Stop` adds `stop_hook_active`,
//! `last_assistant_message`, `background_tasks` and `session_crons`;
//! `StopFailure` adds `error` (the API error's kind), `error_details` and
//! `last_assistant_message`, and `SessionEnd` adds `reason` (Claude Code's
//! own schema in that release).
//!
//! Unknown fields are accepted, unlike the engine's own files: Claude
//! Code adds fields from one release to the next, and a hook that refused
//! its input would fail every prompt of every session. What the hooks
//! decide on is required and typed; the rest is optional.

use std::path::PathBuf;

use serde::Deserialize;

/// Which hook is running: the subcommand of `sdd-loop hook`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookEvent {
    /// `UserPromptSubmit`: a prompt, before the model sees it.
    UserPromptSubmit,
    /// `PreToolUse`: a tool call, before it runs.
    PreToolUse,
    /// `Stop`: the session's turn ends.
    Stop,
    /// `StopFailure`: the session's turn ended on a model-API error.
    StopFailure,
    /// `SessionEnd`: the session ends.
    SessionEnd,
}

impl HookEvent {
    /// The name in Claude Code's `hook_event_name` and `hooks.json`.
    pub fn claude_name(self) -> &'static str {
        match self {
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::StopFailure => "StopFailure",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    /// The subcommand: `user-prompt-submit`, `pre-tool-use`, `stop`,
    /// `stop-failure`, `session-end`.
    pub fn command(self) -> &'static str {
        match self {
            HookEvent::UserPromptSubmit => "user-prompt-submit",
            HookEvent::PreToolUse => "pre-tool-use",
            HookEvent::Stop => "stop",
            HookEvent::StopFailure => "stop-failure",
            HookEvent::SessionEnd => "session-end",
        }
    }
}

/// The fields every event carries.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Common {
    pub session_id: String,
    /// The session's transcript, exactly (what `end --transcript` reads).
    #[serde(default)]
    pub transcript_path: Option<PathBuf>,
    pub cwd: PathBuf,
    /// The prompt in progress: the same for every tool call of one turn.
    #[serde(default)]
    pub prompt_id: Option<String>,
    #[serde(default)]
    pub permission_mode: Option<String>,
    pub hook_event_name: String,
}

/// `UserPromptSubmit`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PromptInput {
    #[serde(flatten)]
    pub common: Common,
    pub prompt: String,
    /// Who sent the prompt: `user`, `sdk`, `loop_wakeup`,
    /// `schedule_wakeup`, `system` or `poll_event` (Claude Code's hook
    /// schema: "payloads may omit it while the field rolls out").
    #[serde(default)]
    pub source: Option<String>,
}

/// The senders whose prompt may begin, resume, answer or end a loop: the
/// user at the composer, `claude -p` and the Agent SDK, and `/loop`'s own
/// fires (a self-paced wakeup, a cron job) re-sending what the user typed.
/// `system` (another session's or a channel's message, a task
/// notification, an auto-continuation) and `poll_event` are not the
/// user's word, and a value this list does not know is treated like them:
/// a new sender is let in only once it is known to speak for the user.
pub const LOOP_SOURCES: [&str; 4] = ["user", "sdk", "loop_wakeup", "schedule_wakeup"];

/// `PreToolUse`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolInput {
    #[serde(flatten)]
    pub common: Common,
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: serde_json::Value,
    #[serde(default)]
    pub tool_use_id: Option<String>,
}

/// `Stop`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct StopInput {
    #[serde(flatten)]
    pub common: Common,
    /// A Stop hook already blocked this turn: never block again.
    #[serde(default)]
    pub stop_hook_active: bool,
    #[serde(default)]
    pub last_assistant_message: Option<String>,
}

/// `StopFailure` (Claude Code's hook schema, 2.1.328): the turn ended on
/// a model-API error instead of a stop.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct StopFailureInput {
    #[serde(flatten)]
    pub common: Common,
    /// `rate_limit`, `overloaded`, `server_error`, `invalid_request`,
    /// `authentication_failed`, `billing_error`, `max_output_tokens`,
    /// `unknown`, … (required by the schema; read leniently).
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub error_details: Option<String>,
    #[serde(default)]
    pub last_assistant_message: Option<String>,
}

/// `SessionEnd`: the session ends (`reason`: `clear`, `resume`, `logout`,
/// `prompt_input_exit` or `other`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SessionEndInput {
    #[serde(flatten)]
    pub common: Common,
    #[serde(default)]
    pub reason: Option<String>,
}

/// A hook's input that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("the hook input on standard input is not a {event} object: {detail}")]
    Invalid { event: &'static str, detail: String },
    #[error(
        "`sdd-loop hook {command}` was given a {found} event (hook_event_name), not {expected}"
    )]
    WrongEvent {
        command: &'static str,
        expected: &'static str,
        found: String,
    },
}

impl InputError {
    pub fn help(&self) -> &'static str {
        match self {
            InputError::Invalid { .. } => {
                "the hooks are run by Claude Code, which writes this object; to try one by hand, pipe a JSON object shaped as in docs/src/claude-code.md, \"The hooks\""
            }
            InputError::WrongEvent { .. } => {
                "wire each event to its own subcommand in hooks/hooks.json"
            }
        }
    }
}

/// `bytes` as JSON a strict parser takes, changing only what would make it
/// refuse the whole input while Claude Code could still send it: bytes
/// that are not UTF-8 become U+FFFD, and so do `\uD83D`-style escapes of
/// a lone surrogate (JavaScript's `JSON.stringify` writes them for a
/// string cut inside an emoji). A hook that refused such input would pass
/// a tool call it could not read: fail open.
pub fn tolerant(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    let b = text.as_bytes();
    let hex = |at: usize| -> Option<u32> {
        let digits = std::str::from_utf8(b.get(at..at + 4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    };
    let escape_at = |at: usize| -> Option<u32> {
        (b.get(at) == Some(&b'\\') && b.get(at + 1) == Some(&b'u'))
            .then(|| hex(at + 2))
            .flatten()
    };
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match escape_at(i) {
            Some(0xD800..=0xDBFF) => {
                if escape_at(i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) {
                    out.extend_from_slice(&b[i..i + 12]);
                    i += 12;
                } else {
                    out.extend_from_slice(b"\\uFFFD");
                    i += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.extend_from_slice(b"\\uFFFD");
                i += 6;
            }
            _ => {
                // Any other escape, `\\` included, goes as it is.
                out.extend_from_slice(&b[i..(i + 2).min(b.len())]);
                i += 2;
            }
        }
    }
    out
}

fn parse<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    event: HookEvent,
    name: impl Fn(&T) -> &str,
) -> Result<T, InputError> {
    let value: T = serde_json::from_slice(bytes).map_err(|e| InputError::Invalid {
        event: event.claude_name(),
        detail: e.to_string(),
    })?;
    let found = name(&value);
    if found != event.claude_name() {
        return Err(InputError::WrongEvent {
            command: event.command(),
            expected: event.claude_name(),
            found: found.to_owned(),
        });
    }
    Ok(value)
}

impl PromptInput {
    pub fn parse(bytes: &[u8]) -> Result<Self, InputError> {
        parse(bytes, HookEvent::UserPromptSubmit, |v: &Self| {
            &v.common.hook_event_name
        })
    }

    /// Whether this prompt may act on a loop ([`LOOP_SOURCES`]): a payload
    /// without `source` may (Claude Code before the field, and 2.1.328's
    /// own `/loop` fires, send none).
    pub fn speaks_for_the_user(&self) -> bool {
        self.source
            .as_deref()
            .is_none_or(|s| LOOP_SOURCES.contains(&s))
    }
}

impl ToolInput {
    pub fn parse(bytes: &[u8]) -> Result<Self, InputError> {
        parse(bytes, HookEvent::PreToolUse, |v: &Self| {
            &v.common.hook_event_name
        })
    }

    /// The `Bash` tool's command line, if this is one.
    pub fn bash_command(&self) -> Option<&str> {
        (self.tool_name == "Bash")
            .then(|| self.tool_input.get("command").and_then(|c| c.as_str()))
            .flatten()
    }
}

impl StopInput {
    pub fn parse(bytes: &[u8]) -> Result<Self, InputError> {
        parse(bytes, HookEvent::Stop, |v: &Self| &v.common.hook_event_name)
    }
}

impl StopFailureInput {
    pub fn parse(bytes: &[u8]) -> Result<Self, InputError> {
        parse(bytes, HookEvent::StopFailure, |v: &Self| {
            &v.common.hook_event_name
        })
    }
}

impl SessionEndInput {
    pub fn parse(bytes: &[u8]) -> Result<Self, InputError> {
        parse(bytes, HookEvent::SessionEnd, |v: &Self| {
            &v.common.hook_event_name
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn what_would_refuse_the_whole_input_is_replaced_and_nothing_else() {
        let lone =
            br#"{"c":"gh pr create \ud83d x","d":"\ud83d\ude00","e":"\\ud83d","f":"\udc00"}"#;
        let fixed = super::tolerant(lone);
        let v: serde_json::Value = serde_json::from_slice(&fixed).unwrap();
        assert_eq!(v["c"], "gh pr create \u{fffd} x");
        assert_eq!(v["d"], "\u{1f600}", "a pair stays");
        assert_eq!(v["e"], "\\ud83d", "an escaped backslash is no escape");
        assert_eq!(v["f"], "\u{fffd}");
        let bad = b"{\"c\":\"gh pr create \xff\"}";
        let v: serde_json::Value = serde_json::from_slice(&super::tolerant(bad)).unwrap();
        assert_eq!(v["c"], "gh pr create \u{fffd}");
        let plain = br#"{"a":"b\n\"c\""}"#;
        assert_eq!(super::tolerant(plain), plain.to_vec());
    }

    use super::*;

    const COMMON: &str = r#""session_id":"4b8e6284-aaaa","transcript_path":"/c/projects/-p/4b8e6284-aaaa.jsonl","cwd":"/p","prompt_id":"p-1","permission_mode":"default""#;

    #[test]
    fn every_measured_field_is_read_and_new_fields_are_accepted() {
        let prompt = PromptInput::parse(
            format!(r#"{{{COMMON},"hook_event_name":"UserPromptSubmit","prompt":"/sdd:work --loop","effort":"high"}}"#)
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(prompt.prompt, "/sdd:work --loop");
        assert_eq!(prompt.common.prompt_id.as_deref(), Some("p-1"));
        let tool = ToolInput::parse(
            format!(r#"{{{COMMON},"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"gh pr list","description":"x"}},"tool_use_id":"toolu_1"}}"#)
                .as_bytes(),
        )
        .unwrap();
        assert_eq!(tool.bash_command(), Some("gh pr list"));
        let stop = StopInput::parse(
            format!(r#"{{{COMMON},"hook_event_name":"Stop","stop_hook_active":true,"last_assistant_message":"Done.","background_tasks":[],"session_crons":[]}}"#)
                .as_bytes(),
        )
        .unwrap();
        assert!(stop.stop_hook_active);
        assert_eq!(
            stop.common.transcript_path.unwrap(),
            PathBuf::from("/c/projects/-p/4b8e6284-aaaa.jsonl")
        );
    }

    #[test]
    fn only_the_user_s_own_senders_and_a_missing_source_speak_for_the_user() {
        let with = |source: Option<&str>| {
            let source = source
                .map(|s| format!(r#","source":"{s}""#))
                .unwrap_or_default();
            PromptInput::parse(
                format!(r#"{{{COMMON},"hook_event_name":"UserPromptSubmit","prompt":"/sdd:work --loop"{source}}}"#)
                    .as_bytes(),
            )
            .unwrap()
            .speaks_for_the_user()
        };
        for source in [
            None,
            Some("user"),
            Some("sdk"),
            Some("loop_wakeup"),
            Some("schedule_wakeup"),
        ] {
            assert!(with(source), "{source:?}");
        }
        for source in ["system", "poll_event", "peer_message", "", "USER"] {
            assert!(!with(Some(source)), "{source}");
        }
    }

    #[test]
    fn another_event_or_a_missing_field_is_an_error_that_says_which() {
        let e = StopInput::parse(
            format!(r#"{{{COMMON},"hook_event_name":"PreToolUse","tool_name":"Bash"}}"#).as_bytes(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("PreToolUse"), "{e}");
        let e = PromptInput::parse(
            format!(r#"{{{COMMON},"hook_event_name":"UserPromptSubmit"}}"#).as_bytes(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("prompt"), "{e}");
    }
}
