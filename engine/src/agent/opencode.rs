//! OpenCode run headless: `opencode run --format json --auto --title T`,
//! the prompt on stdin, and its JSON Lines read line by line
//! (`real-agents.md`, "OpenCode 1.18.33").
//!
//! [`OpencodeStream`] reads the events every line names by `type`, each
//! carrying the session's `sessionID` (`ses_…`):
//! - `step_finish` closes one API step: `part.tokens` = `{total, input,
//!   output, reasoning, cache: {read, write}}` — `input` EXCLUDES the cache
//!   parts (Anthropic's convention), so `tokens_in` is `input + cache.read
//!   + cache.write` — and `part.cost`, OpenCode's own dollars for the step.
//!   Each step is journaled at once as a usage event, so a SIGKILL of the
//!   engine mid-agent loses no spend. `reasoning` is billed as output,
//!   each token once ([`output_tokens`]): OpenCode 1.18 takes it out of
//!   `output` (its `total` counts both), older builds left it inside;
//! - `text` parts are the model's words (the last one is the summary),
//!   `tool_use` parts its tool calls (echoed);
//! - `error` (`error.name`, `error.data.message`, `statusCode`) is a
//!   failure: an API error (401, 429, 5xx), a missing provider or model.
//!
//! The steps name no model: the tick's model is `--agent-model
//! PROVIDER/MODEL` (priced by its last segment, `claude-sonnet-4-5`),
//! else `model` in OpenCode's config ([`config_model`]); without either
//! it is [`UNKNOWN_MODEL`], priced at the table's highest rates. The sum
//! of the steps' `cost` is recorded beside our estimate, as Claude Code's
//! `total_cost_usd` is: shown, never used by the cost stop.
//!
//! The run failed when it exited non-zero, an `error` event arrived, or
//! no step finished at all.

use std::ffi::OsString;
use std::path::Path;

use serde_json::Value;

use super::stream::{
    LineRead, StreamReader, Verdict, event_failure, event_or_noise, first_line, noise_note,
};
use crate::skill::runner::RunOutcome;
use crate::state::protocol::{ModelUsage, SkillEvent};

/// The model recorded when neither `--agent-model` nor OpenCode's
/// configuration names one.
pub const UNKNOWN_MODEL: &str = "opencode-model-not-configured";

/// The session title given with `--title`: without one OpenCode asks its
/// small model for a title, a request no step reports (spend nobody
/// would count).
pub const TITLE: &str = "sdd-loop iteration";

/// The command line after the program: `run --format json`, `--auto`
/// (permissions not explicitly denied are granted: the agent works
/// unattended), the title, the model when given, then the user's extra
/// arguments. The prompt goes on stdin.
pub fn argv(model: Option<&str>, extra: &[String]) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["run", "--format", "json", "--auto", "--title", TITLE]
        .map(OsString::from)
        .into();
    if let Some(m) = model {
        args.extend(["--model".into(), m.into()]);
    }
    args.extend(extra.iter().map(OsString::from));
    args
}

/// The model id a `PROVIDER/MODEL` name is priced by: its last segment.
pub fn priced_model(name: &str) -> String {
    name.rsplit('/').next().unwrap_or(name).to_owned()
}

/// `model` in an OpenCode config file (JSON), if the file exists and says.
pub fn config_model(config: &Path) -> Option<String> {
    let text = std::fs::read_to_string(config).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
}

/// Reads one OpenCode stream.
#[derive(Debug)]
pub struct OpencodeStream {
    model: String,
    session: Option<String>,
    steps: u64,
    total: ModelUsage,
    cost: Option<f64>,
    failures: Vec<String>,
    last_text: Option<String>,
    noise: u64,
}

impl OpencodeStream {
    /// `model` as OpenCode names it (`anthropic/claude-sonnet-4-5`).
    pub fn new(model: &str) -> Self {
        let model = priced_model(model);
        Self {
            total: ModelUsage {
                model: model.clone(),
                ..ModelUsage::default()
            },
            model,
            session: None,
            steps: 0,
            cost: None,
            failures: Vec::new(),
            last_text: None,
            noise: 0,
        }
    }
}

fn count(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// A step's output tokens, its reasoning counted once. OpenCode 1.18
/// reports `output` without the reasoning (it subtracts the provider's
/// reasoning count and bills `reasoning` on top at the output rate), so
/// its `total` is `input + cache + output + reasoning`; older builds
/// passed the provider's output through with the reasoning inside it
/// (OpenAI's convention), and their `total` is `input + cache + output`.
/// A `total` of that second shape is the only sign of the older reading;
/// without it the reasoning is added, as 1.18 means it.
pub fn output_tokens(tokens: &Value) -> u64 {
    let output = count(tokens, "/output");
    let reasoning = count(tokens, "/reasoning");
    let without_reasoning = count(tokens, "/input")
        .saturating_add(count(tokens, "/cache/read"))
        .saturating_add(count(tokens, "/cache/write"))
        .saturating_add(output);
    let inside = reasoning <= output
        && tokens.get("total").and_then(Value::as_u64) == Some(without_reasoning);
    if inside {
        output
    } else {
        output.saturating_add(reasoning)
    }
}

impl StreamReader for OpencodeStream {
    fn line(&mut self, line: &str) -> LineRead {
        let mut read = LineRead::default();
        let Some(event) = event_or_noise(line, &mut self.noise, &mut read) else {
            return read;
        };
        if self.session.is_none()
            && let Some(id) = event.get("sessionID").and_then(Value::as_str)
        {
            self.session = Some(id.to_owned());
            read.echo
                .push(format!("opencode: session {id} on {}", self.model));
        }
        let part = event.get("part").cloned().unwrap_or_default();
        match event.get("type").and_then(Value::as_str) {
            Some("step_finish") => {
                self.steps += 1;
                let tokens = part.get("tokens").cloned().unwrap_or_default();
                let read_cache = count(&tokens, "/cache/read");
                let write_cache = count(&tokens, "/cache/write");
                let u = ModelUsage {
                    model: self.model.clone(),
                    tokens_in: count(&tokens, "/input")
                        .saturating_add(read_cache)
                        .saturating_add(write_cache),
                    tokens_out: output_tokens(&tokens),
                    cache_read_tokens: read_cache,
                    cache_write_tokens: write_cache,
                    cache_write_1h_tokens: 0,
                };
                if let Some(c) = part.get("cost").and_then(Value::as_f64) {
                    self.cost = Some(self.cost.unwrap_or(0.0) + c);
                }
                let t = &mut self.total;
                t.tokens_in = t.tokens_in.saturating_add(u.tokens_in);
                t.tokens_out = t.tokens_out.saturating_add(u.tokens_out);
                t.cache_read_tokens = t.cache_read_tokens.saturating_add(u.cache_read_tokens);
                t.cache_write_tokens = t.cache_write_tokens.saturating_add(u.cache_write_tokens);
                if u.tokens_in > 0 || u.tokens_out > 0 {
                    read.events.push(SkillEvent::Usage {
                        model: u.model,
                        tokens_in: u.tokens_in,
                        tokens_out: u.tokens_out,
                        cache_read_tokens: u.cache_read_tokens,
                        cache_write_tokens: u.cache_write_tokens,
                        cache_write_1h_tokens: 0,
                    });
                }
            }
            Some("text") => {
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    read.echo.extend(t.lines().map(str::to_owned));
                    self.last_text = Some(t.to_owned());
                }
            }
            Some("tool_use") => {
                let tool = part.get("tool").and_then(Value::as_str).unwrap_or("?");
                match part.pointer("/state/input/command").and_then(Value::as_str) {
                    Some(c) => read.echo.push(format!("$ {c}")),
                    None => read.echo.push(format!("→ {tool}")),
                }
            }
            Some("error") => {
                let e = event.get("error").cloned().unwrap_or_default();
                let name = e.get("name").and_then(Value::as_str).unwrap_or("error");
                let message = e
                    .pointer("/data/message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| e.to_string());
                let status = e
                    .pointer("/data/statusCode")
                    .and_then(Value::as_u64)
                    .map(|s| format!(" (HTTP {s})"))
                    .unwrap_or_default();
                read.echo
                    .push(format!("opencode: error: {name}{status}: {message}"));
                self.failures.push(format!("{name}{status}: {message}"));
            }
            _ => {}
        }
        read
    }

    fn finish(&mut self, run: &RunOutcome) -> Verdict {
        let mut verdict = Verdict {
            agent_cost: self.cost,
            ..Verdict::default()
        };
        if self.total.tokens_in > 0 || self.total.tokens_out > 0 {
            verdict.usage = vec![self.total.clone()];
        }
        verdict.notes.extend(noise_note(self.noise));
        if self.model == UNKNOWN_MODEL {
            verdict.notes.push(
                "OpenCode's model is not known: pass --agent-model PROVIDER/MODEL or set `model` in OpenCode's config, so its tokens are priced at its own rates".to_owned(),
            );
        }
        verdict.summary = self.last_text.as_deref().and_then(first_line);
        verdict.failure = event_failure(
            "opencode",
            self.failures
                .iter()
                .map(|f| format!("error: {f}"))
                .collect(),
            (self.steps == 0).then_some("the stream ended without a step_finish"),
            run,
        );
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::stream::exited_ok;

    // As OpenCode 1.18.33 printed them against the scripted Anthropic API.
    const STEP_1: &str = r#"{"type":"step_finish","timestamp":1,"sessionID":"ses_1","part":{"type":"step-finish","reason":"tool-calls","tokens":{"total":1650,"input":1000,"output":50,"reasoning":0,"cache":{"write":200,"read":400}},"cost":0.00462}}"#;
    const STEP_2: &str = r#"{"type":"step_finish","timestamp":2,"sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","tokens":{"total":1225,"input":1200,"output":20,"reasoning":5,"cache":{"write":0,"read":0}},"cost":0.003975}}"#;

    #[test]
    fn each_step_is_journaled_with_the_cache_parts_in_the_input() {
        let mut s = OpencodeStream::new("anthropic/claude-sonnet-4-5");
        let mut events = Vec::new();
        for l in [
            r#"{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}"#,
            r#"{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"Running it."}}"#,
            r#"{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","state":{"status":"completed","input":{"command":"gh pr create"}}}}"#,
            STEP_1,
            "not json",
            r#"{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"Opened #3.\nDone."}}"#,
            STEP_2,
        ] {
            events.extend(s.line(l).events);
        }
        assert_eq!(
            events,
            vec![
                SkillEvent::Usage {
                    model: "claude-sonnet-4-5".into(),
                    tokens_in: 1600,
                    tokens_out: 50,
                    cache_read_tokens: 400,
                    cache_write_tokens: 200,
                    cache_write_1h_tokens: 0
                },
                SkillEvent::Usage {
                    model: "claude-sonnet-4-5".into(),
                    tokens_in: 1200,
                    tokens_out: 25,
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                    cache_write_1h_tokens: 0
                },
            ]
        );
        let v = s.finish(&exited_ok());
        assert_eq!(v.failure, None);
        assert_eq!(v.summary.as_deref(), Some("Opened #3."));
        assert!((v.agent_cost.unwrap() - 0.008595).abs() < 1e-12);
        assert_eq!(v.usage[0].tokens_in, 2800);
        assert_eq!(v.usage[0].tokens_out, 75);
        assert!(v.notes.iter().any(|n| n.contains("not JSON")));
    }

    /// Regression: a step of an OpenCode build that left the reasoning
    /// inside `output` (OpenAI's convention; its `total` has no room for
    /// more) had the reasoning added once more: 120 of its 300 output
    /// tokens counted twice.
    #[test]
    fn reasoning_inside_the_output_is_counted_once() {
        let older = r#"{"type":"step_finish","sessionID":"ses_3","part":{"type":"step-finish","tokens":{"total":2300,"input":1500,"output":300,"reasoning":120,"cache":{"write":0,"read":500}},"cost":0.0055}}"#;
        let current = r#"{"type":"step_finish","sessionID":"ses_3","part":{"type":"step-finish","tokens":{"total":2300,"input":1500,"output":180,"reasoning":120,"cache":{"write":0,"read":500}},"cost":0.0055}}"#;
        let no_total = r#"{"type":"step_finish","sessionID":"ses_3","part":{"type":"step-finish","tokens":{"input":1500,"output":180,"reasoning":120,"cache":{"write":0,"read":500}}}}"#;
        for (line, want) in [(older, 300), (current, 300), (no_total, 300)] {
            let mut s = OpencodeStream::new("openai/gpt-5");
            let events = s.line(line).events;
            let [
                SkillEvent::Usage {
                    tokens_out,
                    tokens_in,
                    cache_read_tokens,
                    ..
                },
            ] = &events[..]
            else {
                panic!("{events:?}");
            };
            assert_eq!(*tokens_out, want, "{line}");
            assert_eq!((*tokens_in, *cache_read_tokens), (2000, 500), "{line}");
            assert_eq!(s.finish(&exited_ok()).usage[0].tokens_out, want);
        }
    }

    #[test]
    fn an_api_error_fails_the_run_with_its_message() {
        let mut s = OpencodeStream::new(UNKNOWN_MODEL);
        s.line(r#"{"type":"error","sessionID":"ses_2","error":{"name":"APIError","data":{"message":"rate limited","statusCode":429,"isRetryable":true}}}"#);
        let v = s.finish(&RunOutcome {
            exit_code: Some(1),
            ..RunOutcome::default()
        });
        assert_eq!(
            v.failure.as_deref(),
            Some("opencode: error: APIError (HTTP 429): rate limited; exited 1")
        );
        assert!(v.notes.iter().any(|n| n.contains("--agent-model")));
        let mut s = OpencodeStream::new("anthropic/claude-sonnet-4-5");
        let v = s.finish(&RunOutcome {
            exit_code: Some(0),
            stderr_tail: vec!["Error: provider not found".into()],
            ..RunOutcome::default()
        });
        assert_eq!(
            v.failure.as_deref(),
            Some("opencode: the stream ended without a step_finish: Error: provider not found")
        );
    }

    #[test]
    fn the_command_line_is_unattended_json_with_a_title() {
        assert_eq!(
            argv(Some("anthropic/claude-sonnet-4-5"), &["--pure".into()]),
            [
                "run",
                "--format",
                "json",
                "--auto",
                "--title",
                TITLE,
                "--model",
                "anthropic/claude-sonnet-4-5",
                "--pure"
            ]
            .map(OsString::from)
        );
        assert_eq!(priced_model("openrouter/anthropic/claude-x"), "claude-x");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencode.json");
        assert_eq!(config_model(&path), None);
        std::fs::write(&path, r#"{"model":"anthropic/claude-haiku-4-5"}"#).unwrap();
        assert_eq!(
            config_model(&path).as_deref(),
            Some("anthropic/claude-haiku-4-5")
        );
    }
}
