//! The OpenAI Responses API's shapes (real-agents.md, "Codex 0.169.0
//! against a scripted Responses API"): a [`Reply`] as one `response`
//! object or as its server-sent events, and errors.
//!
//! The stream: `response.created` and `response.in_progress` (the response
//! with no output), per output item `response.output_item.added`, for a
//! message its `response.output_text.delta`s, and
//! `response.output_item.done` with the whole item — a `message` with
//! `content: [{type: output_text, text}]`, or a `function_call` with
//! `call_id`, `name` and `arguments` as a JSON string — then
//! `response.completed` with `usage` (`input_tokens`,
//! `input_tokens_details.cached_tokens` / `cache_write_tokens`,
//! `output_tokens`, `output_tokens_details.reasoning_tokens`,
//! `total_tokens`). Every event carries its `sequence_number`. A
//! [`Call::Bash`] is an `exec_command` call with `{"cmd": …}`.

use serde_json::{Value, json};

use super::script::{Call, Usage};
use super::turns::{ErrorKind, Reply};

/// A server-sent event: its name and data.
pub type Event = (&'static str, Value);

pub fn response_id(reply: &Reply) -> String {
    format!("resp_{}", reply.serial)
}

fn tool(call: &Call) -> (String, Value) {
    match call {
        Call::Bash { command, .. } => ("exec_command".to_owned(), json!({ "cmd": command })),
        Call::Tool { name, input } => (name.clone(), input.clone()),
    }
}

fn usage(usage: Usage) -> Value {
    json!({
        "input_tokens": usage.input,
        "input_tokens_details": {
            "cached_tokens": usage.cache_read,
            "cache_write_tokens": usage.cache_creation,
        },
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.input.saturating_add(usage.output),
    })
}

fn items(reply: &Reply) -> Vec<Value> {
    let message = reply.text.iter().map(|text| {
        json!({
            "type": "message",
            "id": format!("msg_{}", reply.serial),
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        })
    });
    let calls = reply.calls.iter().enumerate().map(|(i, call)| {
        let (name, input) = tool(call);
        json!({
            "type": "function_call",
            "id": format!("fc_{}{i:02}", reply.serial),
            "call_id": format!("call_{}{i:02}", reply.serial),
            "name": name,
            "arguments": input.to_string(),
            "status": "completed",
        })
    });
    message.chain(calls).collect()
}

fn created_at() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// The whole response (a request without `"stream": true`).
pub fn response(reply: &Reply) -> Value {
    json!({
        "id": response_id(reply),
        "object": "response",
        "created_at": created_at(),
        "status": "completed",
        "model": reply.model,
        "output": items(reply),
        "usage": usage(reply.usage),
    })
}

/// The response as the stream sends it.
pub fn events(reply: &Reply) -> Vec<Event> {
    let done = response(reply);
    let mut pending = done.clone();
    pending["status"] = json!("in_progress");
    pending["output"] = json!([]);
    pending["usage"] = Value::Null;
    let mut events: Vec<Event> = vec![
        ("response.created", json!({"response": pending})),
        ("response.in_progress", json!({"response": pending})),
    ];
    for (index, item) in items(reply).into_iter().enumerate() {
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        let text = match item["type"].as_str() {
            Some("message") => {
                added["content"] = json!([]);
                item["content"][0]["text"].as_str().map(str::to_owned)
            }
            _ => {
                added["arguments"] = json!("");
                None
            }
        };
        events.push((
            "response.output_item.added",
            json!({"output_index": index, "item": added}),
        ));
        if let Some(text) = text {
            events.push((
                "response.output_text.delta",
                json!({"item_id": item["id"], "output_index": index, "content_index": 0, "delta": text}),
            ));
        }
        events.push((
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
    }
    events.push(("response.completed", json!({"response": done})));
    for (sequence, (name, data)) in events.iter_mut().enumerate() {
        data["type"] = json!(name);
        data["sequence_number"] = json!(sequence);
    }
    events
}

/// An error's status and body.
pub fn error(kind: ErrorKind, message: &str) -> (u16, Value) {
    let (status, kind, code) = match kind {
        ErrorKind::InvalidRequest => (400, "invalid_request_error", Value::Null),
        ErrorKind::Authentication => (401, "invalid_request_error", json!("invalid_api_key")),
        ErrorKind::NotFound => (404, "invalid_request_error", json!("not_found")),
        ErrorKind::RateLimited => (429, "requests", json!("rate_limit_exceeded")),
        ErrorKind::Server => (500, "server_error", Value::Null),
        ErrorKind::Overloaded => (529, "server_error", json!("overloaded")),
        ErrorKind::Timeout => (504, "server_error", json!("timeout")),
    };
    let body = json!({
        "error": {"message": message, "type": kind, "param": null, "code": code},
    });
    (status, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_an_exec_command_call_with_string_arguments() {
        let reply = Reply {
            serial: "x1".to_owned(),
            model: "gpt-5-codex".to_owned(),
            text: None,
            calls: vec![Call::Bash {
                command: "echo begin".to_owned(),
                description: Some("ignored".to_owned()),
            }],
            usage: Usage::default(),
        };
        let events = events(&reply);
        let names: Vec<_> = events.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.output_item.done",
                "response.completed"
            ]
        );
        let item = &events[3].1["item"];
        assert_eq!(item["name"], "exec_command");
        assert_eq!(item["arguments"], r#"{"cmd":"echo begin"}"#);
        assert_eq!(events[4].1["sequence_number"], 4);
    }
}
