//! What a request to the mock model asks: its [`Route`] (and so its
//! [`Api`]), whether it streams and offers tools, the credential it
//! carries, and the [`Conversation`] its body holds — the system prompt,
//! the user messages' text and the last tool result, read the same way
//! from a Messages API body and a Responses API body.
//!
//! Messages API: `system` (a string or text blocks), `messages[]` with
//! `role` and `content` (a string or blocks; `tool_result` blocks hold a
//! string or text blocks). Responses API: `instructions`, and `input[]`
//! items — `message`s with `role` `system`/`developer`/`user` and
//! `input_text` parts, and `function_call_output` /
//! `custom_tool_call_output` items whose `output` is the tool result.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The two model APIs served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// The Anthropic Messages API (Claude Code).
    Anthropic,
    /// The OpenAI Responses API (Codex).
    Openai,
}

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST /v1/messages` (Claude Code adds `?beta=true`).
    Messages,
    /// `POST /v1/messages/count_tokens`.
    CountTokens,
    /// `POST /v1/responses`.
    Responses,
    /// `GET /__log`: the request log as JSON lines.
    Log,
    /// `GET /__totals`: the log's token totals.
    Totals,
    Unknown,
}

impl Route {
    pub fn of(method: &str, path: &str) -> Self {
        let path = path.trim_end_matches('/');
        match (method, path) {
            ("POST", "/v1/messages") => Route::Messages,
            ("POST", "/v1/messages/count_tokens") => Route::CountTokens,
            ("POST", "/v1/responses") => Route::Responses,
            ("GET", "/__log") => Route::Log,
            ("GET", "/__totals") => Route::Totals,
            _ => Route::Unknown,
        }
    }

    /// The API a route belongs to; for an unknown route, guessed from the
    /// path so the error has the shape the caller reads.
    pub fn api(self, path: &str) -> Option<Api> {
        match self {
            Route::Messages | Route::CountTokens => Some(Api::Anthropic),
            Route::Responses => Some(Api::Openai),
            Route::Log | Route::Totals => None,
            Route::Unknown if path.contains("/messages") => Some(Api::Anthropic),
            Route::Unknown if path.starts_with("/v1/") => Some(Api::Openai),
            Route::Unknown => None,
        }
    }
}

/// The request offers at least one tool (else it is answered without a turn).
pub fn offers_tools(body: &Value) -> bool {
    body.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| !tools.is_empty())
}

/// The request asks for server-sent events.
pub fn streams(body: &Value) -> bool {
    body.get("stream").and_then(Value::as_bool) == Some(true)
}

/// Header names whose values are credentials: never logged.
pub const CREDENTIAL_HEADERS: [&str; 4] = [
    "x-api-key",
    "authorization",
    "proxy-authorization",
    "cookie",
];

/// The API key a request presents: `x-api-key`, else `Authorization:
/// Bearer …`; with the header's name.
pub fn credential(headers: &[(String, String)]) -> Option<(String, String)> {
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    };
    if let Some(key) = find("x-api-key") {
        return Some(("x-api-key".to_owned(), key));
    }
    let auth = find("authorization")?;
    let token = match auth.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim().to_owned(),
        _ => auth,
    };
    Some(("authorization".to_owned(), token))
}

/// The texts of a request's conversation that expectations look at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conversation {
    /// The system prompt, its parts joined by newlines.
    pub system: String,
    /// Each user message's text (tool results excluded).
    pub user: Vec<String>,
    /// The text of the last tool result in the request, if any.
    pub last_tool_result: Option<String>,
}

impl Conversation {
    pub fn of(api: Api, body: &Value) -> Self {
        match api {
            Api::Anthropic => anthropic(body),
            Api::Openai => openai(body),
        }
    }
}

fn texts(value: &Value, kinds: &[&str]) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| {
                p.get("type")
                    .and_then(Value::as_str)
                    .is_none_or(|t| kinds.contains(&t))
            })
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn anthropic(body: &Value) -> Conversation {
    let mut conversation = Conversation {
        system: body
            .get("system")
            .map(|s| texts(s, &["text"]))
            .unwrap_or_default(),
        ..Conversation::default()
    };
    let messages = body.get("messages").and_then(Value::as_array);
    for message in messages.into_iter().flatten() {
        if message.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        let content = message.get("content").unwrap_or(&Value::Null);
        let text = texts(content, &["text"]);
        if !text.is_empty() {
            conversation.user.push(text);
        }
        for block in content.as_array().into_iter().flatten() {
            if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                let result = block.get("content").unwrap_or(&Value::Null);
                conversation.last_tool_result = Some(texts(result, &["text"]));
            }
        }
    }
    conversation
}

fn openai(body: &Value) -> Conversation {
    let mut conversation = Conversation::default();
    let mut system = Vec::new();
    if let Some(instructions) = body.get("instructions").and_then(Value::as_str) {
        system.push(instructions.to_owned());
    }
    let items = match body.get("input") {
        Some(Value::String(prompt)) => {
            conversation.user.push(prompt.clone());
            None
        }
        Some(Value::Array(items)) => Some(items),
        _ => None,
    };
    let parts = ["input_text", "text", "output_text"];
    for item in items.into_iter().flatten() {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" => {
                let text = texts(item.get("content").unwrap_or(&Value::Null), &parts);
                match item.get("role").and_then(Value::as_str) {
                    Some("system" | "developer") => system.push(text),
                    Some("user") => conversation.user.push(text),
                    _ => {}
                }
            }
            "function_call_output" | "custom_tool_call_output" => {
                let output = item.get("output").unwrap_or(&Value::Null);
                conversation.last_tool_result = Some(texts(output, &parts));
            }
            _ => {}
        }
    }
    conversation.system = system.join("\n");
    conversation
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_api_bodies_are_read() {
        let body = json!({
            "system": [{"type": "text", "text": "You are Claude Code"}, {"type": "text", "text": "Be brief"}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "begin\n"}]},
                {"role": "user", "content": "again"},
            ],
        });
        let c = Conversation::of(Api::Anthropic, &body);
        assert_eq!(c.system, "You are Claude Code\nBe brief");
        assert_eq!(c.user, ["hello", "again"]);
        assert_eq!(c.last_tool_result.as_deref(), Some("begin\n"));
    }

    #[test]
    fn responses_api_bodies_are_read() {
        let body = json!({
            "instructions": "You are Codex",
            "input": [
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox"}]},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
                {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "Output:\nbegin\n"},
            ],
        });
        let c = Conversation::of(Api::Openai, &body);
        assert_eq!(c.system, "You are Codex\nsandbox");
        assert_eq!(c.user, ["hello"]);
        assert_eq!(c.last_tool_result.as_deref(), Some("Output:\nbegin\n"));
    }

    #[test]
    fn the_credential_is_the_api_key_or_the_bearer_token() {
        let h = |n: &str, v: &str| vec![(n.to_owned(), v.to_owned())];
        assert_eq!(
            credential(&h("X-Api-Key", "k1")),
            Some(("x-api-key".to_owned(), "k1".to_owned()))
        );
        assert_eq!(
            credential(&h("authorization", "Bearer k2")),
            Some(("authorization".to_owned(), "k2".to_owned()))
        );
        assert_eq!(credential(&h("accept", "*/*")), None);
    }
}
