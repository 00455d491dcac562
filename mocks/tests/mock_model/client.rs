//! A small HTTP client for the mock model's tests: requests shaped like
//! Claude Code's and Codex's, and answers read as JSON or server-sent
//! events.

use std::time::Duration;

use serde_json::{Value, json};

pub const KEY: &str = "sk-mock-0123456789abcdef";

#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub text: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }

    /// The server-sent events: `(event, data)`.
    pub fn events(&self) -> Vec<(String, Value)> {
        self.text
            .split("\n\n")
            .filter(|chunk| !chunk.trim().is_empty())
            .map(|chunk| {
                let mut name = String::new();
                let mut data = Value::Null;
                for line in chunk.lines() {
                    if let Some(n) = line.strip_prefix("event: ") {
                        name = n.to_owned();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data = serde_json::from_str(d).unwrap();
                    }
                }
                (name, data)
            })
            .collect()
    }

    pub fn event_names(&self) -> Vec<String> {
        self.events().into_iter().map(|(n, _)| n).collect()
    }
}

pub fn post(base: &str, path: &str, headers: &[(&str, &str)], body: &Value) -> Answer {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .new_agent();
    let mut request = agent.post(format!("{base}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut response = request.send_json(body).unwrap();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
        .collect();
    Answer {
        status: response.status().as_u16(),
        headers,
        text: response.body_mut().read_to_string().unwrap(),
    }
}

pub fn get(base: &str, path: &str) -> String {
    ureq::get(format!("{base}{path}"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap()
}

/// A Claude Code-shaped request: tools offered, a prompt, maybe a tool result.
pub fn claude_request(stream: bool, tool_result: Option<&str>) -> Value {
    let mut messages =
        vec![json!({"role": "user", "content": [{"type": "text", "text": "hello"}]})];
    if let Some(result) = tool_result {
        messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": result}]}));
    }
    json!({
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "You are Claude Code"}],
        "messages": messages,
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        "stream": stream,
        "max_tokens": 32000,
    })
}

/// A Codex-shaped request.
pub fn codex_request(stream: bool, tool_output: Option<&str>) -> Value {
    let mut input = vec![
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}),
    ];
    if let Some(output) = tool_output {
        input.push(json!({"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"}));
        input.push(json!({"type": "function_call_output", "call_id": "c1", "output": output}));
    }
    json!({
        "model": "gpt-5-codex",
        "instructions": "You are Codex",
        "input": input,
        "tools": [{"type": "function", "name": "exec_command"}],
        "stream": stream,
    })
}

pub fn messages(base: &str, body: &Value) -> Answer {
    post(base, "/v1/messages?beta=true", &[("x-api-key", KEY)], body)
}

pub fn responses(base: &str, body: &Value) -> Answer {
    post(
        base,
        "/v1/responses",
        &[("authorization", &format!("Bearer {KEY}"))],
        body,
    )
}
