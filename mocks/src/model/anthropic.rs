//! The Anthropic Messages API's shapes (real-agents.md, "Claude Code
//! 2.1.328 against a scripted Anthropic API"): a [`Reply`] as one
//! `message` object or as its server-sent events, and errors.
//!
//! The stream is the real API's: `message_start` (the message with empty
//! `content`, its input and cache counts, `output_tokens` at most 1), a
//! `ping`, per block `content_block_start` / `content_block_delta`
//! (`text_delta` or `input_json_delta`, each in two pieces) /
//! `content_block_stop`, then `message_delta` (`stop_reason` `tool_use` or
//! `end_turn`, the cumulative usage) and `message_stop`. Text comes first,
//! then the tool calls; a [`Call::Bash`] is a `Bash` `tool_use` with
//! `{command, description}`.

use serde_json::{Value, json};

use super::script::{Call, Usage};
use super::turns::{ErrorKind, Reply};

/// A server-sent event: its name and data.
pub type Event = (&'static str, Value);

pub fn message_id(reply: &Reply) -> String {
    format!("msg_01{}", reply.serial)
}

fn tool_use_id(reply: &Reply, index: usize) -> String {
    format!("toolu_01{}{index:02}", reply.serial)
}

fn tool(call: &Call) -> (String, Value) {
    match call {
        Call::Bash {
            command,
            description,
        } => (
            "Bash".to_owned(),
            json!({
                "command": command,
                "description": description.as_deref().unwrap_or(command),
            }),
        ),
        Call::Tool { name, input } => (name.clone(), input.clone()),
    }
}

fn stop_reason(reply: &Reply) -> &'static str {
    if reply.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn usage(usage: Usage, output: u64) -> Value {
    json!({
        "input_tokens": usage.input,
        "cache_creation_input_tokens": usage.cache_creation,
        "cache_read_input_tokens": usage.cache_read,
        "output_tokens": output,
    })
}

fn blocks(reply: &Reply) -> Vec<Value> {
    let text = reply
        .text
        .iter()
        .map(|text| json!({"type": "text", "text": text}));
    let calls = reply.calls.iter().enumerate().map(|(i, call)| {
        let (name, input) = tool(call);
        json!({"type": "tool_use", "id": tool_use_id(reply, i), "name": name, "input": input})
    });
    text.chain(calls).collect()
}

/// The whole message (a request without `"stream": true`).
pub fn message(reply: &Reply) -> Value {
    json!({
        "id": message_id(reply),
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": blocks(reply),
        "stop_reason": stop_reason(reply),
        "stop_sequence": null,
        "usage": usage(reply.usage, reply.usage.output),
    })
}

/// `text` in two pieces (one when it is a single character or empty).
fn halves(text: &str) -> Vec<String> {
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map(|(i, _)| i);
    match mid {
        Some(i) if i > 0 => vec![text[..i].to_owned(), text[i..].to_owned()],
        _ => vec![text.to_owned()],
    }
}

/// The message as the stream sends it.
pub fn events(reply: &Reply) -> Vec<Event> {
    let mut start = message(reply);
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"] = usage(reply.usage, reply.usage.output.min(1));
    let mut events = vec![
        (
            "message_start",
            json!({"type": "message_start", "message": start}),
        ),
        ("ping", json!({"type": "ping"})),
    ];
    for (index, block) in blocks(reply).into_iter().enumerate() {
        let (empty, pieces, delta_kind, field) = match block["type"].as_str() {
            Some("tool_use") => {
                let mut empty = block.clone();
                empty["input"] = json!({});
                let input = block["input"].to_string();
                (empty, halves(&input), "input_json_delta", "partial_json")
            }
            _ => {
                let text = block["text"].as_str().unwrap_or_default();
                (
                    json!({"type": "text", "text": ""}),
                    halves(text),
                    "text_delta",
                    "text",
                )
            }
        };
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": empty}),
        ));
        for piece in pieces {
            events.push((
                "content_block_delta",
                json!({
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": delta_kind, field: piece},
                }),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
            "usage": usage(reply.usage, reply.usage.output),
        }),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events
}

/// The usage a client has been told once these events arrived:
/// `message_delta`'s if sent, else `message_start`'s (its output count
/// at most 1) — what a cut stream leaves it with.
pub fn usage_seen(events: &[Event]) -> Option<Usage> {
    let usage = events.iter().rev().find_map(|(name, data)| match *name {
        "message_delta" => Some(&data["usage"]),
        "message_start" => Some(&data["message"]["usage"]),
        _ => None,
    })?;
    let count = |field: &str| usage[field].as_u64().unwrap_or(0);
    Some(Usage {
        input: count("input_tokens"),
        output: count("output_tokens"),
        cache_read: count("cache_read_input_tokens"),
        cache_creation: count("cache_creation_input_tokens"),
        reasoning: 0,
    })
}

/// An error's status and body.
pub fn error(kind: ErrorKind, message: &str, request_id: &str) -> (u16, Value) {
    let (status, kind) = match kind {
        ErrorKind::InvalidRequest => (400, "invalid_request_error"),
        ErrorKind::Authentication => (401, "authentication_error"),
        ErrorKind::NotFound => (404, "not_found_error"),
        ErrorKind::RateLimited => (429, "rate_limit_error"),
        ErrorKind::Server => (500, "api_error"),
        ErrorKind::Overloaded => (529, "overloaded_error"),
        ErrorKind::Timeout => (504, "timeout_error"),
    };
    let body = json!({
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": request_id,
    });
    (status, body)
}

/// `count_tokens`' answer.
pub fn count_tokens(input_tokens: u64) -> Value {
    json!({"input_tokens": input_tokens})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_rebuild_the_blocks() {
        let reply = Reply {
            serial: "x1".to_owned(),
            model: "claude-sonnet-4-5".to_owned(),
            text: Some("Running it — é".to_owned()),
            calls: vec![Call::Bash {
                command: "echo begin".to_owned(),
                description: None,
            }],
            usage: Usage::default(),
        };
        let events = events(&reply);
        let mut text = String::new();
        let mut json = String::new();
        for (_, data) in &events {
            match data["delta"]["type"].as_str() {
                Some("text_delta") => text.push_str(data["delta"]["text"].as_str().unwrap()),
                Some("input_json_delta") => {
                    json.push_str(data["delta"]["partial_json"].as_str().unwrap());
                }
                _ => {}
            }
        }
        assert_eq!(text, "Running it — é");
        let input: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            input,
            json!({"command": "echo begin", "description": "echo begin"})
        );
        assert_eq!(events.last().unwrap().0, "message_stop");
    }
}
