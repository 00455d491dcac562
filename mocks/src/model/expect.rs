//! A turn's assertions on the request it answers: [`Expect`], checked
//! against the request's [`Conversation`] before the turn is served.
//!
//! Every assertion is substring containment: `last_tool_result_contains`
//! (the last tool result anywhere in the request), `system_contains` (the
//! system prompt / instructions), `user_contains` (any user message's
//! text). A failed assertion is never passed silently: the request is
//! answered with a 400 naming the turn, the script and what was found,
//! the log records every [`CheckResult`], and the turn stays unserved.

use serde::{Deserialize, Serialize};

use super::request::Conversation;

/// What the request a turn answers must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub last_tool_result_contains: Option<String>,
    #[serde(default)]
    pub system_contains: Option<String>,
    #[serde(default)]
    pub user_contains: Option<String>,
}

/// One assertion's outcome, as logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckResult {
    /// The assertion's name in the script (`user_contains`, …).
    pub check: String,
    pub expected: String,
    pub passed: bool,
    /// When it failed: what the request held instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<String>,
}

/// How much of a tool result a failure quotes.
const QUOTE_CHARS: usize = 300;

fn quote(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(QUOTE_CHARS).collect();
    if chars.next().is_some() {
        format!("{head:?}…")
    } else {
        format!("{head:?}")
    }
}

impl Expect {
    pub fn is_empty(&self) -> bool {
        *self == Expect::default()
    }

    /// Every assertion of the turn, in a fixed order.
    pub fn check(&self, conversation: &Conversation) -> Vec<CheckResult> {
        let mut results = Vec::new();
        if let Some(expected) = &self.last_tool_result_contains {
            let found = conversation.last_tool_result.as_deref();
            let passed = found.is_some_and(|r| r.contains(expected.as_str()));
            results.push(CheckResult {
                check: "last_tool_result_contains".to_owned(),
                expected: expected.clone(),
                passed,
                found: (!passed).then(|| match found {
                    Some(result) => format!("the last tool result is {}", quote(result)),
                    None => "the request holds no tool result".to_owned(),
                }),
            });
        }
        if let Some(expected) = &self.system_contains {
            let passed = conversation.system.contains(expected.as_str());
            results.push(CheckResult {
                check: "system_contains".to_owned(),
                expected: expected.clone(),
                passed,
                found: (!passed).then(|| {
                    format!(
                        "the system prompt ({} characters) does not contain it",
                        conversation.system.chars().count()
                    )
                }),
            });
        }
        if let Some(expected) = &self.user_contains {
            let passed = conversation
                .user
                .iter()
                .any(|m| m.contains(expected.as_str()));
            results.push(CheckResult {
                check: "user_contains".to_owned(),
                expected: expected.clone(),
                passed,
                found: (!passed).then(|| match conversation.user.last() {
                    Some(last) => format!(
                        "none of the {} user messages does; the last is {}",
                        conversation.user.len(),
                        quote(last)
                    ),
                    None => "the request holds no user message".to_owned(),
                }),
            });
        }
        results
    }
}

/// The failed assertions as one sentence for the CLI to show.
pub fn failure_message(results: &[CheckResult]) -> Option<String> {
    let failed: Vec<String> = results
        .iter()
        .filter(|r| !r.passed)
        .map(|r| {
            format!(
                "`{}: {:?}` failed: {}",
                r.check,
                r.expected,
                r.found.as_deref().unwrap_or("")
            )
        })
        .collect();
    (!failed.is_empty()).then(|| failed.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation() -> Conversation {
        Conversation {
            system: "You are Claude Code".to_owned(),
            user: vec!["hello".to_owned()],
            last_tool_result: Some("begin\n".to_owned()),
        }
    }

    #[test]
    fn passing_assertions_pass() {
        let expect = Expect {
            last_tool_result_contains: Some("begin".to_owned()),
            system_contains: Some("Claude Code".to_owned()),
            user_contains: Some("hell".to_owned()),
        };
        let results = expect.check(&conversation());
        assert_eq!(results.len(), 3);
        assert!(results.iter().all(|r| r.passed), "{results:?}");
        assert_eq!(failure_message(&results), None);
    }

    #[test]
    fn a_failed_assertion_says_what_was_found() {
        let expect = Expect {
            last_tool_result_contains: Some("end".to_owned()),
            ..Expect::default()
        };
        let results = expect.check(&conversation());
        let message = failure_message(&results).unwrap();
        assert_eq!(
            message,
            "`last_tool_result_contains: \"end\"` failed: the last tool result is \"begin\\n\""
        );
    }
}
