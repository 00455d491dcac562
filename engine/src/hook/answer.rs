//! What a hook prints: only the JSON Claude Code accepts for its event,
//! in the shapes verified with Claude Code 2.1.328
//! (`reference/real-agents.md`, "Claude Code hooks"), or nothing at all —
//! a hook that prints nothing and exits 0 leaves the event as it was.

use serde_json::json;

/// A hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Nothing printed: the prompt, tool call or stop goes on untouched.
    Pass,
    /// `UserPromptSubmit`: text the model receives with the prompt (and
    /// in every later request of the session).
    Context(String),
    /// `UserPromptSubmit`: the prompt is blocked, the reason shown; no
    /// request reaches the model.
    BlockPrompt(String),
    /// `PreToolUse`: the call does not run; the model receives the reason
    /// as the tool's error.
    Deny(String),
    /// `Stop`: the session goes on with the reason as the model's next
    /// input (at most once per turn: never when `stop_hook_active`).
    BlockStop(String),
    /// `Stop`: the session stops; the message is shown to the user.
    Tell(String),
}

impl Answer {
    /// The JSON line to print, if any.
    pub fn json(&self) -> Option<serde_json::Value> {
        match self {
            Answer::Pass => None,
            Answer::Context(text) => Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "UserPromptSubmit",
                    "additionalContext": text,
                }
            })),
            Answer::BlockPrompt(reason) | Answer::BlockStop(reason) => {
                Some(json!({"decision": "block", "reason": reason}))
            }
            Answer::Deny(reason) => Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            })),
            Answer::Tell(message) => Some(json!({"systemMessage": message})),
        }
    }

    /// The decision's name in the log.
    pub fn decision(&self) -> &'static str {
        match self {
            Answer::Pass => "pass",
            Answer::Context(_) => "context",
            Answer::BlockPrompt(_) | Answer::BlockStop(_) => "block",
            Answer::Deny(_) => "deny",
            Answer::Tell(_) => "tell",
        }
    }

    /// The reason or text the answer carries.
    pub fn text(&self) -> Option<&str> {
        match self {
            Answer::Pass => None,
            Answer::Context(t)
            | Answer::BlockPrompt(t)
            | Answer::BlockStop(t)
            | Answer::Deny(t)
            | Answer::Tell(t) => Some(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_answer_has_the_measured_shape() {
        assert_eq!(Answer::Pass.json(), None);
        assert_eq!(
            Answer::Deny("R".into()).json().unwrap(),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "R"}})
        );
        assert_eq!(
            Answer::BlockPrompt("R".into()).json().unwrap(),
            json!({"decision": "block", "reason": "R"})
        );
        assert_eq!(
            Answer::Context("C".into()).json().unwrap(),
            json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "C"}})
        );
    }
}
