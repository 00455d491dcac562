//! The Gemini API's shapes (real-agents.md, "Gemini CLI 0.61.0 against a
//! scripted Gemini API"): a [`Reply`] as one `GenerateContentResponse`
//! (`POST /v1beta/models/{model}:generateContent`) or as its server-sent
//! events (`:streamGenerateContent?alt=sse`: `data:` lines only, no
//! `event:` names), `countTokens`, and errors.
//!
//! A response is `candidates[0].content` (`role: model`, `parts`: a text
//! part, then one `functionCall` part per call) with `finishReason: STOP`,
//! plus `usageMetadata`: `promptTokenCount` (= `input`, cached included),
//! `cachedContentTokenCount` (= `cache_read`, a part of the prompt, as
//! Google counts), `candidatesTokenCount` (= `output`),
//! `thoughtsTokenCount` (= `reasoning`, apart from the candidates and
//! billed as output) and `totalTokenCount`; `modelVersion` and a unique
//! `responseId`. The stream sends the text in two chunks, then the calls,
//! then a last chunk with `finishReason` and `usageMetadata` — a cut
//! stream never carries the usage. A [`Call::Bash`] is the Gemini CLI's
//! `run_shell_command` with `{command, description}`. Errors are
//! `{"error": {code, message, status}}` (`RESOURCE_EXHAUSTED` for a 429).

use serde_json::{Value, json};

use super::script::{Call, Usage};
use super::turns::{ErrorKind, Reply};

/// A server-sent event: no name (Gemini sends `data:` lines only).
pub type Event = (&'static str, Value);

pub fn response_id(reply: &Reply) -> String {
    format!("gr_{}", reply.serial)
}

fn tool(call: &Call) -> Value {
    match call {
        Call::Bash {
            command,
            description,
        } => json!({"functionCall": {
            "name": "run_shell_command",
            "args": {
                "command": command,
                "description": description.as_deref().unwrap_or(command),
            },
        }}),
        Call::Tool { name, input } => json!({"functionCall": {"name": name, "args": input}}),
    }
}

/// `usageMetadata` for `usage`.
pub fn usage_metadata(usage: Usage) -> Value {
    json!({
        "promptTokenCount": usage.input,
        "cachedContentTokenCount": usage.cache_read,
        "candidatesTokenCount": usage.output,
        "thoughtsTokenCount": usage.reasoning,
        "totalTokenCount": usage
            .input
            .saturating_add(usage.output)
            .saturating_add(usage.reasoning),
    })
}

fn chunk(reply: &Reply, parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = json!({
        "content": {"role": "model", "parts": parts},
        "index": 0,
    });
    let mut chunk = json!({
        "candidates": [],
        "modelVersion": reply.model,
        "responseId": response_id(reply),
    });
    if last {
        candidate["finishReason"] = json!("STOP");
        chunk["usageMetadata"] = usage_metadata(reply.usage);
    }
    chunk["candidates"] = json!([candidate]);
    chunk
}

fn parts(reply: &Reply) -> Vec<Value> {
    let text = reply.text.iter().map(|t| json!({"text": t}));
    text.chain(reply.calls.iter().map(tool)).collect()
}

/// The whole response (`generateContent`).
pub fn response(reply: &Reply) -> Value {
    chunk(reply, parts(reply), true)
}

/// The response as `streamGenerateContent?alt=sse` sends it.
pub fn events(reply: &Reply) -> Vec<Event> {
    let mut events: Vec<Event> = Vec::new();
    if let Some(text) = &reply.text {
        let mid = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        for piece in [&text[..mid], &text[mid..]] {
            if !piece.is_empty() {
                events.push(("", chunk(reply, vec![json!({"text": piece})], false)));
            }
        }
    }
    if !reply.calls.is_empty() {
        events.push((
            "",
            chunk(reply, reply.calls.iter().map(tool).collect(), false),
        ));
    }
    events.push(("", chunk(reply, Vec::new(), true)));
    events
}

/// An error's status and body.
pub fn error(kind: ErrorKind, message: &str) -> (u16, Value) {
    let (code, status) = match kind {
        ErrorKind::InvalidRequest => (400, "INVALID_ARGUMENT"),
        ErrorKind::Authentication => (401, "UNAUTHENTICATED"),
        ErrorKind::NotFound => (404, "NOT_FOUND"),
        ErrorKind::RateLimited => (429, "RESOURCE_EXHAUSTED"),
        ErrorKind::Server => (500, "INTERNAL"),
        ErrorKind::Overloaded => (503, "UNAVAILABLE"),
        ErrorKind::Timeout => (504, "DEADLINE_EXCEEDED"),
    };
    let body = json!({"error": {"code": code, "message": message, "status": status}});
    (code, body)
}

/// `countTokens`' answer.
pub fn count_tokens(total_tokens: u64) -> Value {
    json!({"totalTokens": total_tokens})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_a_run_shell_command_call_and_the_usage_comes_last() {
        let reply = Reply {
            serial: "x1".to_owned(),
            model: "gemini-2.5-flash".to_owned(),
            text: Some("Running it — é".to_owned()),
            calls: vec![Call::Bash {
                command: "echo begin".to_owned(),
                description: None,
            }],
            usage: Usage {
                input: 1000,
                output: 50,
                cache_read: 400,
                cache_creation: 0,
                reasoning: 30,
            },
        };
        let events = events(&reply);
        assert_eq!(events.len(), 4);
        let text: String = events
            .iter()
            .filter_map(|(_, e)| e["candidates"][0]["content"]["parts"][0]["text"].as_str())
            .collect();
        assert_eq!(text, "Running it — é");
        assert_eq!(
            events[2].1["candidates"][0]["content"]["parts"][0]["functionCall"],
            json!({"name": "run_shell_command", "args": {"command": "echo begin", "description": "echo begin"}})
        );
        assert!(
            events[..3]
                .iter()
                .all(|(_, e)| e.get("usageMetadata").is_none())
        );
        let last = &events[3].1;
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
        assert_eq!(last["usageMetadata"]["cachedContentTokenCount"], 400);
        assert_eq!(last["usageMetadata"]["thoughtsTokenCount"], 30);
        assert_eq!(last["usageMetadata"]["totalTokenCount"], 1080);
        assert_eq!(
            response(&reply)["candidates"][0]["content"]["parts"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }
}
