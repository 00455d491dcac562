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
    /// The Gemini API (the Gemini CLI).
    Gemini,
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
    /// `POST /v1beta/models/{model}:generateContent`.
    GenerateContent,
    /// `POST /v1beta/models/{model}:streamGenerateContent` (`?alt=sse`).
    StreamGenerateContent,
    /// `POST /v1beta/models/{model}:countTokens`.
    GeminiCountTokens,
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
            ("POST", _) => match gemini_action(path) {
                Some((_, "generateContent")) => Route::GenerateContent,
                Some((_, "streamGenerateContent")) => Route::StreamGenerateContent,
                Some((_, "countTokens")) => Route::GeminiCountTokens,
                _ => Route::Unknown,
            },
            _ => Route::Unknown,
        }
    }

    /// Whether the route itself asks for a stream (Gemini's do; the
    /// others say so in the body).
    pub fn streams(self) -> bool {
        self == Route::StreamGenerateContent
    }

    /// The API a route belongs to; for an unknown route, guessed from the
    /// path so the error has the shape the caller reads.
    pub fn api(self, path: &str) -> Option<Api> {
        match self {
            Route::Messages | Route::CountTokens => Some(Api::Anthropic),
            Route::Responses => Some(Api::Openai),
            Route::GenerateContent | Route::StreamGenerateContent | Route::GeminiCountTokens => {
                Some(Api::Gemini)
            }
            Route::Log | Route::Totals => None,
            Route::Unknown if gemini_action(path).is_some() => Some(Api::Gemini),
            Route::Unknown if path.contains("/messages") => Some(Api::Anthropic),
            Route::Unknown if path.starts_with("/v1/") => Some(Api::Openai),
            Route::Unknown => None,
        }
    }
}

/// `/v1beta/models/{model}:{action}` (or `/v1/…`) as `(model, action)`.
pub fn gemini_action(path: &str) -> Option<(&str, &str)> {
    let rest = path
        .strip_prefix("/v1beta/models/")
        .or_else(|| path.strip_prefix("/v1/models/"))?;
    let (model, action) = rest.rsplit_once(':')?;
    (!model.is_empty() && !model.contains('/')).then_some((model, action))
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
pub const CREDENTIAL_HEADERS: [&str; 5] = [
    "x-api-key",
    "x-goog-api-key",
    "authorization",
    "proxy-authorization",
    "cookie",
];

/// The API key a request presents: `x-api-key` (Anthropic),
/// `x-goog-api-key` (Gemini), else `Authorization: Bearer …`; with the
/// header's name.
pub fn credential(headers: &[(String, String)]) -> Option<(String, String)> {
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_owned())
    };
    for name in ["x-api-key", "x-goog-api-key"] {
        if let Some(key) = find(name) {
            return Some((name.to_owned(), key));
        }
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
            Api::Gemini => gemini(body),
        }
    }
}

/// A Gemini body: `systemInstruction.parts[].text`, and `contents[]` with
/// `role` `user` (text parts, and `functionResponse` parts whose
/// `response` — its `output`, else the whole object — is the tool result)
/// or `model`.
fn gemini(body: &Value) -> Conversation {
    let part_texts = |parts: Option<&Value>| {
        parts
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut conversation = Conversation {
        system: part_texts(body.pointer("/systemInstruction/parts")),
        ..Conversation::default()
    };
    for content in body
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if content.get("role").and_then(Value::as_str) == Some("model") {
            continue;
        }
        let text = part_texts(content.get("parts"));
        if !text.is_empty() {
            conversation.user.push(text);
        }
        for part in content
            .get("parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(response) = part.pointer("/functionResponse/response") {
                conversation.last_tool_result = Some(match response.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    _ => response.to_string(),
                });
            }
        }
    }
    conversation
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
    fn gemini_bodies_and_routes_are_read() {
        let body = json!({
            "systemInstruction": {"parts": [{"text": "You are a non-interactive CLI agent"}]},
            "contents": [
                {"role": "user", "parts": [{"text": "<session_context>"}, {"text": "hello"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {"output": "Output: begin"}}}]},
            ],
        });
        let c = Conversation::of(Api::Gemini, &body);
        assert_eq!(c.system, "You are a non-interactive CLI agent");
        assert_eq!(c.user, ["<session_context>\nhello"]);
        assert_eq!(c.last_tool_result.as_deref(), Some("Output: begin"));
        let stream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";
        assert_eq!(Route::of("POST", stream), Route::StreamGenerateContent);
        assert!(Route::of("POST", stream).streams());
        assert_eq!(
            Route::of("POST", "/v1beta/models/gemini-2.5-pro:generateContent"),
            Route::GenerateContent
        );
        assert_eq!(
            Route::of("POST", "/v1beta/models/m:countTokens"),
            Route::GeminiCountTokens
        );
        assert_eq!(
            gemini_action(stream),
            Some(("gemini-2.5-flash", "streamGenerateContent"))
        );
        let unknown = "/v1beta/models/m:embedContent";
        assert_eq!(Route::of("POST", unknown), Route::Unknown);
        assert_eq!(Route::Unknown.api(unknown), Some(Api::Gemini));
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
        assert_eq!(
            credential(&h("x-goog-api-key", "k3")),
            Some(("x-goog-api-key".to_owned(), "k3".to_owned()))
        );
        assert_eq!(credential(&h("accept", "*/*")), None);
    }
}
