//! Claude Code run headless: `claude -p --output-format stream-json
//! --verbose`, the prompt on stdin (large `-p` arguments are reported to
//! stall), and its JSON Lines stream read line by line
//! (`agent-formats.md`).
//!
//! [`ClaudeStream`] reads what matters and nothing else:
//! - `assistant` events carry `message.id`, `message.model` and
//!   `message.usage`; a streamed step repeats its usage on every content
//!   block, sometimes with a partial count first, so each `message.id` is
//!   counted once — as the growth of its largest reading — and that
//!   growth is journaled at once as a usage event, so a SIGKILL of the
//!   engine mid-agent loses no spend;
//! - the final `result` event is authoritative for the tick's usage: its
//!   `modelUsage` per model id (priced by `canonicalModel` when present,
//!   an alias key without one by the full id the steps name; helper
//!   models appear only here), whose `inputTokens` EXCLUDE cache
//!   tokens — converted to our `tokens_in`-includes-cache convention; a
//!   model whose streamed steps add up to more than the result says keeps
//!   the larger count (never under-count), and without a result the
//!   streamed steps are the usage;
//! - the run failed when it exited non-zero, or its result is an error
//!   subtype, `is_error`, has permission denials or zero turns, or there
//!   is no result at all (all reported in the wild with exit 0 or
//!   `success`). The root cause quotes the agent's own `errors[]` or
//!   `result` text, else its last stderr line;
//! - a non-zero exit (or a stall) after a successful result fails the run
//!   too, but the result is authoritative for the work done: the verdict
//!   says so ([`Verdict::result_succeeded`]), so the tick records the
//!   error without failing any target it dispatched.
//!
//! - a subscriber's session reports its usage windows: each
//!   `rate_limit_event` carries `rate_limit_info.unifiedWindows`
//!   (`five_hour`, `seven_day`: `utilization` 0–1, `resetsAt` in Unix
//!   seconds), sent only when a value changes, so the last one of the
//!   run wins; a 429 is a `rejected` event and an assistant message with
//!   `"error":"rate_limit"` and `api_error_params.rate_limit_info`
//!   (`rateLimitType`, `resetsAt`): the limit hit
//!   (docs/src/usage-windows.md).
//!
//! Lines that are not JSON (a CLI's warnings) are echoed and skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;

use serde_json::Value;

use super::stream::{
    LineRead, StreamReader, Verdict, event_or_noise, failure, first_line, how_it_ended, noise_note,
};
use crate::os::clock;
use crate::skill::runner::RunOutcome;
use crate::state::protocol::{ModelUsage, SkillEvent};
use crate::state::windows::{Figure, Limited, Window, WindowsReport};
use crate::transcript::{RawUsage, TokenTotals};

/// Tool names Claude Code dispatches a subagent with.
const SUBAGENT_TOOLS: &[&str] = &["Task", "Agent"];

/// The command line after the program: headless, streaming, the model
/// and spend limit when given, then the user's extra arguments. The
/// prompt goes on stdin.
pub fn argv(model: Option<&str>, dollars_left: Option<f64>, extra: &[String]) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["-p", "--output-format", "stream-json", "--verbose"]
        .map(OsString::from)
        .into();
    if let Some(m) = model {
        args.extend(["--model".into(), m.into()]);
    }
    if let Some(left) = dollars_left {
        args.extend(["--max-budget-usd".into(), budget_arg(left).into()]);
    }
    args.extend(extra.iter().map(OsString::from));
    args
}

/// Dollars left, rounded down to the cent so the agent stops before the
/// run's ceiling, and at least a cent (a limit of 0 would be refused or
/// stop the agent before its first step; the entry stop has already
/// ended a run with nothing left).
pub fn budget_arg(left: f64) -> String {
    let cents = (left * 100.0).floor().max(1.0);
    format!("{:.2}", cents / 100.0)
}

/// One streamed step (`message.id`) as read so far.
#[derive(Debug, Clone)]
struct Step {
    model: String,
    /// The largest reading of each count.
    seen: TokenTotals,
}

/// Reads one Claude Code stream.
#[derive(Debug, Default)]
pub struct ClaudeStream {
    init_model: Option<String>,
    steps: BTreeMap<String, Step>,
    subagents: BTreeSet<String>,
    result: Option<Value>,
    noise: u64,
    windows: WindowsReport,
}

fn max_totals(a: &TokenTotals, b: &TokenTotals) -> TokenTotals {
    TokenTotals {
        input: a.input.max(b.input),
        output: a.output.max(b.output),
        cache_creation: a.cache_creation.max(b.cache_creation),
        cache_creation_1h: a.cache_creation_1h.max(b.cache_creation_1h),
        cache_read: a.cache_read.max(b.cache_read),
    }
}

fn minus(a: &TokenTotals, b: &TokenTotals) -> TokenTotals {
    TokenTotals {
        input: a.input - b.input,
        output: a.output - b.output,
        cache_creation: a.cache_creation - b.cache_creation,
        cache_creation_1h: a.cache_creation_1h - b.cache_creation_1h,
        cache_read: a.cache_read - b.cache_read,
    }
}

fn usage_event(u: ModelUsage) -> SkillEvent {
    SkillEvent::Usage {
        model: u.model,
        tokens_in: u.tokens_in,
        tokens_out: u.tokens_out,
        cache_read_tokens: u.cache_read_tokens,
        cache_write_tokens: u.cache_write_tokens,
        cache_write_1h_tokens: u.cache_write_1h_tokens,
    }
}

fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Whether `key` is one of Claude Code's model aliases (`sonnet`,
/// `opus[1m]`: one word) standing for `model`, a full Claude id of that
/// family (`claude-sonnet-4-5-20250929`, `claude-3-7-sonnet-20250219`).
fn stands_for(key: &str, model: &str) -> bool {
    let plain = |m: &str| {
        m.split_once('[')
            .map_or(m, |(id, _)| id)
            .trim()
            .to_ascii_lowercase()
    };
    let (alias, model) = (plain(key), plain(model));
    !alias.is_empty()
        && alias != "claude"
        && alias.chars().all(|c| c.is_ascii_alphabetic())
        && model.starts_with("claude-")
        && model.split('-').any(|part| part == alias)
}

impl ClaudeStream {
    fn assistant(&mut self, event: &Value, read: &mut LineRead) {
        let Some(message) = event.get("message") else {
            return;
        };
        for block in message
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(t) = block.get("text").and_then(Value::as_str) {
                        read.echo.extend(t.lines().map(str::to_owned));
                    }
                }
                Some("tool_use") => {
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("?");
                    read.echo.push(format!("→ {name}"));
                    if SUBAGENT_TOOLS.contains(&name)
                        && let Some(id) = block.get("id").and_then(Value::as_str)
                    {
                        self.subagents.insert(id.to_owned());
                    }
                }
                _ => {}
            }
        }
        let (Some(id), Some(usage)) = (
            message.get("id").and_then(Value::as_str),
            message.get("usage"),
        ) else {
            return;
        };
        let model = message
            .get("model")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .map(str::to_owned)
            .or_else(|| self.init_model.clone())
            .unwrap_or_else(|| "unknown".to_owned());
        // Claude Code's `<synthetic>` messages carry no tokens; were one to
        // carry some, they are counted (as an unknown model), never dropped.
        let Ok(raw) = serde_json::from_value::<RawUsage>(usage.clone()) else {
            return;
        };
        let reading = raw.totals();
        let step = self.steps.entry(id.to_owned()).or_insert_with(|| Step {
            model: model.clone(),
            seen: TokenTotals::default(),
        });
        let larger = max_totals(&step.seen, &reading);
        let growth = minus(&larger, &step.seen);
        step.seen = larger;
        if growth != TokenTotals::default() {
            read.events.push(usage_event(growth.to_usage(&step.model)));
        }
    }

    /// The streamed steps, summed per model.
    fn streamed(&self) -> BTreeMap<String, TokenTotals> {
        let mut out: BTreeMap<String, TokenTotals> = BTreeMap::new();
        for step in self.steps.values() {
            out.entry(step.model.clone()).or_default().add(&step.seen);
        }
        out
    }

    /// The result's `modelUsage` entries.
    fn model_usage(result: &Value) -> impl Iterator<Item = (&String, &Value)> {
        result
            .get("modelUsage")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
    }

    /// The model each `modelUsage` key is priced as: its `canonicalModel`;
    /// else, for a key that is one of Claude Code's aliases (`sonnet`,
    /// `opus[1m]`) and names no streamed step, the one model the streamed
    /// steps name that it stands for (the API answers with the full id);
    /// else the key. An alias left alone is priced at its family's row,
    /// which cannot know the model's own cache rates.
    fn priced_as(
        result: &Value,
        streamed: &BTreeMap<String, TokenTotals>,
    ) -> BTreeMap<String, String> {
        let keys: BTreeSet<&str> = Self::model_usage(result).map(|(k, _)| k.as_str()).collect();
        Self::model_usage(result)
            .map(|(key, u)| {
                let canonical = u
                    .get("canonicalModel")
                    .and_then(Value::as_str)
                    .filter(|m| !m.is_empty());
                let stood_for = || {
                    let mut models = streamed
                        .keys()
                        .filter(|m| !keys.contains(m.as_str()) && stands_for(key, m));
                    match (models.next(), models.next()) {
                        (Some(only), None) if !streamed.contains_key(key) => Some(only),
                        _ => None,
                    }
                };
                let model = canonical.or_else(|| stood_for().map(String::as_str));
                (key.clone(), model.unwrap_or(key).to_owned())
            })
            .collect()
    }

    /// The result's `modelUsage`, per priced model.
    fn reported(
        result: &Value,
        priced_as: &BTreeMap<String, String>,
    ) -> BTreeMap<String, TokenTotals> {
        let mut out: BTreeMap<String, TokenTotals> = BTreeMap::new();
        for (key, u) in Self::model_usage(result) {
            let model = priced_as.get(key).unwrap_or(key);
            out.entry(model.clone()).or_default().add(&TokenTotals {
                input: count(u, "inputTokens"),
                output: count(u, "outputTokens"),
                cache_creation: count(u, "cacheCreationInputTokens"),
                cache_creation_1h: 0,
                cache_read: count(u, "cacheReadInputTokens"),
            });
        }
        out
    }
}

/// Unix seconds as RFC 3339.
fn unix(v: &Value) -> Option<String> {
    let secs = v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))?;
    jiff::Timestamp::from_second(secs).ok().map(clock::format)
}

impl ClaudeStream {
    /// A `rate_limit_info`: the windows' figures, and a limit when it
    /// says `rejected`.
    fn rate_limit(&mut self, info: &Value) {
        let windows = info.get("unifiedWindows");
        for (w, key) in [
            (Window::FiveHour, "five_hour"),
            (Window::SevenDay, "seven_day"),
        ] {
            let Some(win) = windows.and_then(|ws| ws.get(key)) else {
                continue;
            };
            let used = win.get("utilization").and_then(Value::as_f64);
            let reset = win.get("resetsAt").and_then(unix);
            if let (Some(used), Some(reset)) = (used, reset) {
                *self.windows.figure_mut(w) = Some(Figure {
                    used_percent: (used * 1000.0).round() / 10.0,
                    resets_at: reset,
                });
            }
        }
        if info.get("status").and_then(Value::as_str) == Some("rejected") {
            let window = info
                .get("rateLimitType")
                .and_then(Value::as_str)
                .map_or(Window::FiveHour, Window::from_limit_type);
            self.windows.limited = Some(Limited {
                window,
                resets_at: info.get("resetsAt").and_then(unix),
            });
        }
    }
}

impl StreamReader for ClaudeStream {
    fn line(&mut self, line: &str) -> LineRead {
        let mut read = LineRead::default();
        let Some(event) = event_or_noise(line, &mut self.noise, &mut read) else {
            return read;
        };
        match event.get("type").and_then(Value::as_str) {
            Some("system") if event.get("subtype").and_then(Value::as_str) == Some("init") => {
                self.init_model = event
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                read.echo.push(format!(
                    "claude: session {} on {}",
                    event
                        .get("session_id")
                        .and_then(Value::as_str)
                        .unwrap_or("?"),
                    self.init_model.as_deref().unwrap_or("?")
                ));
            }
            Some("rate_limit_event") => {
                if let Some(info) = event.get("rate_limit_info") {
                    self.rate_limit(info);
                }
            }
            Some("assistant") => {
                if event.get("error").and_then(Value::as_str) == Some("rate_limit")
                    && let Some(info) = event
                        .pointer("/api_error_params/rate_limit_info")
                        .or_else(|| event.pointer("/message/api_error_params/rate_limit_info"))
                {
                    let mut info = info.clone();
                    info["status"] = Value::from("rejected");
                    self.rate_limit(&info);
                }
                self.assistant(&event, &mut read);
            }
            Some("result") => {
                read.echo.push(format!(
                    "claude: result {} after {} turn(s), total_cost_usd {}",
                    event.get("subtype").and_then(Value::as_str).unwrap_or("?"),
                    count(&event, "num_turns"),
                    event
                        .get("total_cost_usd")
                        .and_then(Value::as_f64)
                        .map_or("?".to_owned(), |c| format!("{c}"))
                ));
                self.result = Some(event);
            }
            _ => {}
        }
        read
    }

    fn finish(&mut self, run: &RunOutcome) -> Verdict {
        let streamed = self.streamed();
        let mut verdict = Verdict {
            agents: self.subagents.len() as u64,
            windows: (!self.windows.is_empty()).then(|| self.windows.clone()),
            ..Verdict::default()
        };
        verdict.notes.extend(noise_note(self.noise));
        let totals = match &self.result {
            None => streamed.clone(),
            Some(result) => {
                let priced_as = Self::priced_as(result, &streamed);
                let mut reported = Self::reported(result, &priced_as);
                for (streamed_as, s) in &streamed {
                    // A dated id the result prices under its canonical name
                    // is one model: counted twice before this lookup.
                    let model = priced_as.get(streamed_as).unwrap_or(streamed_as);
                    let r = reported.entry(model.clone()).or_default();
                    // The result does not split cache writes by lifetime;
                    // the streamed steps do.
                    r.cache_creation_1h = s.cache_creation_1h.min(r.cache_creation);
                    if max_totals(r, s) != *r {
                        verdict.notes.push(format!(
                            "{model}: the streamed steps count more tokens than the result's modelUsage; the larger count is kept"
                        ));
                        *r = max_totals(r, s);
                    }
                }
                reported
            }
        };
        verdict.usage = totals
            .iter()
            .filter(|(_, t)| **t != TokenTotals::default())
            .map(|(m, t)| t.to_usage(m))
            .collect();
        let Some(result) = &self.result else {
            let mut why = vec!["the stream ended without a result event".to_owned()];
            why.extend(how_it_ended(run));
            why.push(format!(
                "usage counted from {} streamed step(s); spend after the last one is missing",
                self.steps.len()
            ));
            verdict.failure = failure("claude", &why, "; ", run.last_stderr());
            return verdict;
        };
        verdict.agent_cost = result.get("total_cost_usd").and_then(Value::as_f64);
        let text = result.get("result").and_then(Value::as_str);
        verdict.summary = text.and_then(first_line);
        let subtype = result
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or("(no subtype)");
        let mut why = Vec::new();
        if subtype != "success" {
            why.push(format!("result {subtype}"));
        }
        if result.get("is_error").and_then(Value::as_bool) == Some(true) && subtype == "success" {
            why.push("is_error".to_owned());
        }
        let denied: Vec<&str> = result
            .get("permission_denials")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|d| d.get("tool_name").and_then(Value::as_str).unwrap_or("?"))
            .collect();
        if !denied.is_empty() {
            why.push(format!("permission denied: {}", denied.join(", ")));
        }
        if result.get("num_turns").and_then(Value::as_u64) == Some(0) {
            why.push("0 turns".to_owned());
        }
        let result_failed = !why.is_empty();
        if let Some(how) = how_it_ended(run) {
            if result_failed {
                why.push(how);
            } else {
                why.push(format!("{how} after a successful result"));
                verdict.result_succeeded = true;
            }
        }
        if why.is_empty() {
            return verdict;
        }
        let errors: Vec<&str> = result
            .get("errors")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        // A successful result's text is its summary, not why the process
        // then failed: the last stderr line may say.
        let quote = if !errors.is_empty() {
            Some(errors.join("; "))
        } else if let Some(t) = text.filter(|t| result_failed && !t.trim().is_empty()) {
            Some(t.trim().to_owned())
        } else {
            run.last_stderr().map(str::to_owned)
        };
        verdict.failure = failure("claude", &why, ", ", quote.as_deref());
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::stream::exited_ok;

    fn feed(lines: &[&str]) -> (ClaudeStream, Vec<SkillEvent>) {
        let mut s = ClaudeStream::default();
        let mut events = Vec::new();
        for l in lines {
            events.extend(s.line(l).events);
        }
        (s, events)
    }

    const INIT: &str = r#"{"type":"system","subtype":"init","model":"claude-sonnet-4-5-20250929","session_id":"s1","cwd":"/w","tools":["Bash"]}"#;
    // One step streamed as two blocks, the first with a partial count.
    const STEP_A1: &str = r#"{"type":"assistant","message":{"id":"msg_a","model":"claude-sonnet-4-5-20250929","content":[{"type":"thinking","thinking":"…"}],"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":1000,"cache_creation":{"ephemeral_5m_input_tokens":150,"ephemeral_1h_input_tokens":50},"output_tokens":1}}}"#;
    const STEP_A2: &str = r#"{"type":"assistant","message":{"id":"msg_a","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"tu_1","name":"Task","input":{}}],"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":1000,"cache_creation":{"ephemeral_5m_input_tokens":150,"ephemeral_1h_input_tokens":50},"output_tokens":40}}}"#;
    const STEP_B: &str = r#"{"type":"assistant","message":{"id":"msg_b","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":5,"cache_read_input_tokens":1200,"output_tokens":60}}}"#;
    const USER: &str = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"ok"}]}}"#;

    #[test]
    fn each_message_id_is_journaled_once_as_its_growth() {
        let (_, events) = feed(&[INIT, "Warning: not json", STEP_A1, STEP_A2, USER, STEP_B]);
        let usage: Vec<(u64, u64, u64, u64, u64)> = events
            .iter()
            .map(|e| match e {
                SkillEvent::Usage {
                    tokens_in,
                    tokens_out,
                    cache_read_tokens,
                    cache_write_tokens,
                    cache_write_1h_tokens,
                    ..
                } => (
                    *tokens_in,
                    *tokens_out,
                    *cache_read_tokens,
                    *cache_write_tokens,
                    *cache_write_1h_tokens,
                ),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            usage,
            vec![
                (1210, 1, 1000, 200, 50),
                (0, 39, 0, 0, 0),
                (1205, 60, 1200, 0, 0)
            ]
        );
    }

    #[test]
    fn the_result_is_authoritative_with_canonical_models_and_helpers() {
        let result = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Opened #3.\nDetails follow.","total_cost_usd":0.0123,"permission_denials":[],"modelUsage":{"claude-sonnet-4-5[1m]":{"inputTokens":15,"outputTokens":100,"cacheReadInputTokens":2200,"cacheCreationInputTokens":200,"costUSD":0.01,"canonicalModel":"claude-sonnet-4-5-20250929"},"claude-haiku-4-5":{"inputTokens":300,"outputTokens":20,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.0003}}}"#;
        let (mut s, _) = feed(&[INIT, STEP_A1, STEP_A2, STEP_B, result]);
        let v = s.finish(&exited_ok());
        assert_eq!(v.failure, None);
        assert_eq!(v.agent_cost, Some(0.0123));
        assert_eq!(v.agents, 1, "one Task tool use");
        assert_eq!(v.summary.as_deref(), Some("Opened #3."));
        assert_eq!(
            v.usage,
            vec![
                ModelUsage {
                    model: "claude-haiku-4-5".into(),
                    tokens_in: 300,
                    tokens_out: 20,
                    ..ModelUsage::default()
                },
                ModelUsage {
                    model: "claude-sonnet-4-5-20250929".into(),
                    tokens_in: 15 + 2200 + 200,
                    tokens_out: 100,
                    cache_read_tokens: 2200,
                    cache_write_tokens: 200,
                    cache_write_1h_tokens: 50,
                },
            ]
        );
    }

    /// Regression: with a dated model id (`--agent-model
    /// claude-sonnet-4-5-20250929`) the steps name the dated id and the
    /// result keys `modelUsage` by it with the undated `canonicalModel`; the
    /// tick was counted twice, once under each name.
    #[test]
    fn a_dated_model_priced_under_its_canonical_name_counts_once() {
        let result = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Done.","total_cost_usd":0.01,"permission_denials":[],"modelUsage":{"claude-sonnet-4-5-20250929":{"inputTokens":15,"outputTokens":100,"cacheReadInputTokens":2200,"cacheCreationInputTokens":200,"costUSD":0.01,"canonicalModel":"claude-sonnet-4-5"}}}"#;
        let (mut s, _) = feed(&[INIT, STEP_A1, STEP_A2, STEP_B, result]);
        let v = s.finish(&exited_ok());
        assert_eq!(v.failure, None);
        let models: Vec<_> = v.usage.iter().map(|u| u.model.as_str()).collect();
        assert_eq!(models, ["claude-sonnet-4-5"]);
        assert_eq!(v.usage[0].tokens_in, 15 + 2200 + 200);
        assert_eq!(v.usage[0].tokens_out, 100);
    }

    /// Regression: a result keying `modelUsage` by Claude Code's alias
    /// (`--model sonnet`) with no `canonicalModel`, while the steps name
    /// the full id, counted the tick twice — once under each name — and
    /// priced the alias's share at the family row, its cache reads at the
    /// input rate.
    #[test]
    fn an_alias_in_model_usage_is_priced_as_the_model_its_steps_name() {
        let result = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Done.","total_cost_usd":0.01,"permission_denials":[],"modelUsage":{"sonnet[1m]":{"inputTokens":15,"outputTokens":100,"cacheReadInputTokens":2200,"cacheCreationInputTokens":200},"haiku":{"inputTokens":300,"outputTokens":20}}}"#;
        let (mut s, _) = feed(&[INIT, STEP_A1, STEP_A2, STEP_B, result]);
        let v = s.finish(&exited_ok());
        assert_eq!(v.failure, None);
        assert_eq!(
            v.usage,
            vec![
                ModelUsage {
                    model: "claude-sonnet-4-5-20250929".into(),
                    tokens_in: 15 + 2200 + 200,
                    tokens_out: 100,
                    cache_read_tokens: 2200,
                    cache_write_tokens: 200,
                    cache_write_1h_tokens: 50,
                },
                // No step names a Haiku: the alias stays, priced at its family.
                ModelUsage {
                    model: "haiku".into(),
                    tokens_in: 300,
                    tokens_out: 20,
                    ..ModelUsage::default()
                },
            ]
        );
        assert!(v.notes.is_empty(), "{:?}", v.notes);
        let rates = crate::rules::rates::RateTable::built_in();
        assert_eq!(
            rates.rate(&v.usage[0].model),
            rates.rate("claude-sonnet-4-5"),
            "priced exactly as its full id"
        );
        assert!(stands_for("opus", "claude-opus-4-1-20250805"));
        assert!(stands_for("sonnet", "claude-3-7-sonnet-20250219"));
        assert!(!stands_for("sonnet", "claude-opus-4-1"));
        assert!(!stands_for("claude", "claude-opus-4-1"));
        assert!(!stands_for("claude-sonnet-4", "claude-sonnet-4-5"));
    }

    #[test]
    fn without_a_result_the_streamed_steps_are_the_usage_and_it_failed() {
        let (mut s, _) = feed(&[INIT, STEP_A1, STEP_A2]);
        let v = s.finish(&RunOutcome {
            signal: Some(9),
            stalled: true,
            ..RunOutcome::default()
        });
        assert_eq!(v.usage[0].tokens_out, 40);
        let f = v.failure.unwrap();
        assert!(
            f.starts_with("claude: the stream ended without a result event; stalled"),
            "{f}"
        );
        assert!(f.contains("usage counted from 1 streamed step(s)"), "{f}");
    }

    #[test]
    fn error_results_fail_with_the_agents_own_words() {
        let cases = [
            (
                r#"{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":30,"errors":["Reached maximum number of turns (30)"],"modelUsage":{}}"#,
                0,
                "claude: result error_max_turns: Reached maximum number of turns (30)",
            ),
            (
                r#"{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"API Error: 529 overloaded","modelUsage":{}}"#,
                0,
                "claude: is_error: API Error: 529 overloaded",
            ),
            (
                r#"{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"I could not edit files.","permission_denials":[{"tool_name":"Edit","tool_use_id":"t"},{"tool_name":"Bash","tool_use_id":"u"}],"modelUsage":{}}"#,
                0,
                "claude: permission denied: Edit, Bash: I could not edit files.",
            ),
            (
                r#"{"type":"result","subtype":"success","is_error":false,"num_turns":0,"result":"","modelUsage":{}}"#,
                0,
                "claude: 0 turns",
            ),
        ];
        for (result, exit, want) in cases {
            let (mut s, _) = feed(&[result]);
            let v = s.finish(&RunOutcome {
                exit_code: Some(exit),
                ..RunOutcome::default()
            });
            assert_eq!(v.failure.as_deref(), Some(want));
            assert!(!v.result_succeeded, "{want}");
        }
    }

    /// Regression: Claude Code exiting 1 after a `success` result failed
    /// the tick as if the work had, quoting the result's summary as the
    /// cause; every issue it was given was then recorded failed, the one
    /// whose PR it had opened too.
    #[test]
    fn a_non_zero_exit_after_a_successful_result_leaves_the_work_standing() {
        let result = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"Opened #3 for #1.","total_cost_usd":0.01,"modelUsage":{}}"#;
        let (mut s, _) = feed(&[INIT, STEP_B, result]);
        let v = s.finish(&RunOutcome {
            exit_code: Some(1),
            stderr_tail: vec!["Error: EPIPE: broken pipe, write".into()],
            ..RunOutcome::default()
        });
        assert_eq!(
            v.failure.as_deref(),
            Some("claude: exited 1 after a successful result: Error: EPIPE: broken pipe, write")
        );
        assert!(v.result_succeeded);
        assert_eq!(v.summary.as_deref(), Some("Opened #3 for #1."));
        assert_eq!(v.usage[0].tokens_out, 60, "the streamed step still counts");
        // An error result and a bad exit: the work failed, by its own word.
        let (mut s, _) = feed(&[
            r#"{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":30,"errors":["Reached maximum number of turns (30)"],"modelUsage":{}}"#,
        ]);
        let v = s.finish(&RunOutcome {
            exit_code: Some(1),
            ..RunOutcome::default()
        });
        assert!(!v.result_succeeded);
    }

    /// Regression: two steps of one model, or two `modelUsage` keys of one
    /// canonical model, near `u64::MAX` overflowed the sum (a panic in a
    /// debug build, a wrapped — tiny — count in a release one).
    #[test]
    fn counts_near_u64_max_saturate_instead_of_overflowing() {
        let step = |id: &str| {
            format!(
                r#"{{"type":"assistant","message":{{"id":"{id}","model":"m","usage":{{"cache_read_input_tokens":{}}}}}}}"#,
                u64::MAX - 1
            )
        };
        let (mut s, _) = feed(&[&step("msg_a"), &step("msg_b")]);
        let v = s.finish(&exited_ok());
        assert_eq!(v.usage[0].cache_read_tokens, u64::MAX);
        assert_eq!(v.usage[0].tokens_in, u64::MAX);

        let result = format!(
            r#"{{"type":"result","subtype":"success","is_error":false,"num_turns":1,"modelUsage":{{"m[1m]":{{"cacheCreationInputTokens":{max},"canonicalModel":"m"}},"m":{{"cacheCreationInputTokens":{max}}}}}}}"#,
            max = u64::MAX
        );
        let (mut s, _) = feed(&[&result]);
        let v = s.finish(&exited_ok());
        assert_eq!(v.failure, None);
        assert_eq!(v.usage[0].cache_write_tokens, u64::MAX);
    }

    #[test]
    fn the_command_line_is_headless_streaming_with_the_spend_limit() {
        let args = argv(
            Some("opus"),
            Some(24.996),
            &["--permission-mode".into(), "acceptEdits".into()],
        );
        assert_eq!(
            args,
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--model",
                "opus",
                "--max-budget-usd",
                "24.99",
                "--permission-mode",
                "acceptEdits"
            ]
            .map(OsString::from)
        );
        assert_eq!(budget_arg(0.004), "0.01");
    }

    const WINDOWS_30: &str = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1778353200,"rateLimitType":"five_hour","unifiedWindows":{"five_hour":{"utilization":0.3,"resetsAt":1778353200,"status":"allowed"},"seven_day":{"utilization":0.1,"resetsAt":1778576400,"status":"allowed"}}}}"#;
    const WINDOWS_55: &str = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","unifiedWindows":{"five_hour":{"utilization":0.55,"resetsAt":1778353200}}}}"#;
    const REJECTED: &str = r#"{"type":"assistant","error":"rate_limit","api_error_params":{"rate_limit_info":{"status":"rejected","resetsAt":1778355060,"rateLimitType":"five_hour"}},"message":{"id":"msg_x","model":"<synthetic>","content":[{"type":"text","text":"You've hit your 5-hour limit · resets 7:31pm (UTC)"}]}}"#;

    #[test]
    fn the_last_rate_limit_event_of_each_window_wins() {
        let (mut s, _) = feed(&[INIT, WINDOWS_30, STEP_B, WINDOWS_55]);
        let w = s.finish(&exited_ok()).windows.unwrap();
        assert_eq!(w.five_hour.unwrap().used_percent, 55.0);
        let week = w.seven_day.unwrap();
        assert_eq!(
            (week.used_percent, week.resets_at.as_str()),
            (10.0, "2026-05-12T09:00:00Z")
        );
        assert_eq!(w.limited, None);
    }

    #[test]
    fn a_429_names_the_window_and_its_reset() {
        let (mut s, _) = feed(&[INIT, WINDOWS_30, REJECTED]);
        let w = s.finish(&exited_ok()).windows.unwrap();
        let l = w.limited.unwrap();
        assert_eq!(l.window, Window::FiveHour);
        assert_eq!(l.resets_at.as_deref(), Some("2026-05-09T19:31:00Z"));
    }

    #[test]
    fn an_api_key_stream_reports_no_windows() {
        let (mut s, _) = feed(&[INIT, STEP_B]);
        assert_eq!(s.finish(&exited_ok()).windows, None);
    }
}
