//! Codex run headless: `codex exec --json -`, the prompt on stdin, and its
//! JSON Lines stream read line by line (`agent-formats.md`).
//!
//! [`CodexStream`] reads `thread.started`, `turn.completed{usage}`,
//! `turn.failed{error}`, top-level `error` and the `item.*` events (agent
//! messages and commands are echoed). Codex's usage differs from
//! Anthropic's on two points that decide the bill:
//! - `turn.completed` usage is CUMULATIVE for the thread
//!   (`agent-formats.md`): each reading is journaled as its growth over
//!   the one before, and the last one is the tick's usage. `real-agents.md`
//!   measured one turn (what `codex exec` runs), its usage summed over the
//!   turn's responses, which reads the same. A reading smaller than the
//!   one before in any count cannot be a running total: from then on the
//!   readings are each turn's own, the tick's usage is their sum, and what
//!   that adds to what was journaled is journaled — so a CLI that prints
//!   each turn's own usage is never under-counted once a turn counts less;
//!   one whose turns only grow reads as running totals, as documented;
//! - `cached_input_tokens` is a SUBSET of `input_tokens` (so is
//!   `cache_write_input_tokens` where newer builds report it, and
//!   `reasoning_output_tokens` of `output_tokens`): `tokens_in` is
//!   `input_tokens` as given, with the cached part priced at the cache
//!   rate.
//!
//! The stream names no model: the tick's model is `--agent-model`, else
//! `model` in Codex's `config.toml` ([`config_model`]), recorded on every
//! usage event; without either it is [`UNKNOWN_MODEL`], priced at the
//! table's highest rates. Codex reports no cost of its own.
//!
//! The run failed when it exited non-zero, a `turn.failed` or `error`
//! event arrived (they come with exit 0 too), or no `turn.completed`
//! arrived at all; the root cause quotes the event's message.

use std::ffi::OsString;
use std::path::Path;

use serde_json::Value;

use super::stream::{
    LineRead, StreamReader, Verdict, event_failure, event_or_noise, first_line, noise_note,
};
use crate::skill::runner::RunOutcome;
use crate::state::protocol::{ModelUsage, SkillEvent};

/// The model recorded when neither `--agent-model` nor Codex's
/// configuration names one.
pub const UNKNOWN_MODEL: &str = "codex-model-not-configured";

/// The command line after the program: `exec --json`, the model when
/// given, the user's extra arguments, then `-` (the prompt on stdin).
pub fn argv(model: Option<&str>, extra: &[String]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["exec".into(), "--json".into()];
    if let Some(m) = model {
        args.extend(["-m".into(), m.into()]);
    }
    args.extend(extra.iter().map(OsString::from));
    args.push("-".into());
    args
}

/// `model = "…"` at the top level of a Codex `config.toml` (before any
/// `[table]`), if the file exists and says so. Only this one key is read,
/// so a small line reader does; a value that is not a plain string is
/// ignored.
pub fn config_model(config_toml: &Path) -> Option<String> {
    let text = std::fs::read_to_string(config_toml).ok()?;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            return None;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "model" {
            continue;
        }
        let value = value.trim_start();
        for quote in ['"', '\''] {
            let Some((inner, after)) = value.strip_prefix(quote).and_then(|v| v.split_once(quote))
            else {
                continue;
            };
            // A comment may follow the value with or without spaces
            // before its `#`; a `#` inside the quotes is the name's.
            let after = after.trim_start();
            if !inner.is_empty() && (after.is_empty() || after.starts_with('#')) {
                return Some(inner.to_owned());
            }
        }
        return None;
    }
    None
}

/// The counts of one `turn.completed`, or a sum of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    input: u64,
    cached: u64,
    cache_write: u64,
    output: u64,
}

impl Counts {
    fn of(usage: &Value) -> Self {
        let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        Self {
            input: n("input_tokens"),
            cached: n("cached_input_tokens"),
            cache_write: n("cache_write_input_tokens"),
            output: n("output_tokens"),
        }
    }

    /// Counts near `u64::MAX` saturate rather than overflow.
    fn plus(self, o: Self) -> Self {
        Self {
            input: self.input.saturating_add(o.input),
            cached: self.cached.saturating_add(o.cached),
            cache_write: self.cache_write.saturating_add(o.cache_write),
            output: self.output.saturating_add(o.output),
        }
    }

    /// What `self` adds to `o`, count by count (none where it is less).
    fn over(self, o: Self) -> Self {
        Self {
            input: self.input.saturating_sub(o.input),
            cached: self.cached.saturating_sub(o.cached),
            cache_write: self.cache_write.saturating_sub(o.cache_write),
            output: self.output.saturating_sub(o.output),
        }
    }

    /// Whether any count is less than `o`'s: `self` cannot be a running
    /// total that `o` was an earlier reading of.
    fn below(self, o: Self) -> bool {
        self.input < o.input
            || self.cached < o.cached
            || self.cache_write < o.cache_write
            || self.output < o.output
    }

    fn usage(self, model: &str) -> ModelUsage {
        ModelUsage {
            model: model.to_owned(),
            tokens_in: self.input,
            tokens_out: self.output,
            cache_read_tokens: self.cached,
            cache_write_tokens: self.cache_write,
            cache_write_1h_tokens: 0,
        }
    }
}

/// Reads one Codex stream.
#[derive(Debug)]
pub struct CodexStream {
    model: String,
    thread: Option<String>,
    /// The last reading.
    last: Counts,
    /// Every reading, summed.
    sum: Counts,
    /// A reading was smaller than the one before: they are the turns'
    /// own, not running totals.
    per_turn: bool,
    /// What was journaled so far (the tick's usage).
    total: Counts,
    turns: u64,
    failures: Vec<String>,
    /// `error` events since the last `turn.completed`: Codex prints its
    /// retries of a dropped stream ("Reconnecting... 1/5") as `error`
    /// events too, and a turn that completes after them succeeded.
    errors: Vec<String>,
    /// Errors a completed turn went past.
    retried: Vec<String>,
    last_message: Option<String>,
    noise: u64,
}

impl CodexStream {
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            thread: None,
            last: Counts::default(),
            sum: Counts::default(),
            per_turn: false,
            total: Counts::default(),
            turns: 0,
            failures: Vec::new(),
            errors: Vec::new(),
            retried: Vec::new(),
            last_message: None,
            noise: 0,
        }
    }
}

fn message(v: &Value) -> String {
    v.get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| v.to_string())
}

impl StreamReader for CodexStream {
    fn line(&mut self, line: &str) -> LineRead {
        let mut read = LineRead::default();
        let Some(event) = event_or_noise(line, &mut self.noise, &mut read) else {
            return read;
        };
        match event.get("type").and_then(Value::as_str) {
            Some("thread.started") => {
                self.thread = event
                    .get("thread_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                read.echo.push(format!(
                    "codex: thread {} on {}",
                    self.thread.as_deref().unwrap_or("?"),
                    self.model
                ));
            }
            Some("turn.completed") => {
                self.turns += 1;
                self.retried.append(&mut self.errors);
                let reading = event.get("usage").map(Counts::of).unwrap_or_default();
                self.per_turn |= reading.below(self.last);
                self.last = reading;
                self.sum = self.sum.plus(reading);
                let usage = if self.per_turn { self.sum } else { reading };
                let growth = usage.over(self.total);
                self.total = self.total.plus(growth);
                if growth != Counts::default() {
                    let u = growth.usage(&self.model);
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
            Some("turn.failed") => {
                let m = event.get("error").map(message).unwrap_or_default();
                read.echo.push(format!("codex: turn failed: {m}"));
                self.failures.push(format!("turn.failed: {m}"));
            }
            Some("error") => {
                let m = message(&event);
                read.echo.push(format!("codex: error: {m}"));
                self.errors.push(format!("error: {m}"));
            }
            Some("item.completed") => {
                let item = event.get("item").cloned().unwrap_or_default();
                match item.get("type").and_then(Value::as_str) {
                    Some("agent_message") => {
                        if let Some(t) = item.get("text").and_then(Value::as_str) {
                            read.echo.extend(t.lines().map(str::to_owned));
                            self.last_message = Some(t.to_owned());
                        }
                    }
                    Some("command_execution") => {
                        if let Some(c) = item.get("command").and_then(Value::as_str) {
                            read.echo.push(format!("$ {c}"));
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        read
    }

    fn finish(&mut self, run: &RunOutcome) -> Verdict {
        let mut verdict = Verdict::default();
        if self.total != Counts::default() {
            verdict.usage = vec![self.total.usage(&self.model)];
        }
        verdict.notes.extend(noise_note(self.noise));
        if self.model == UNKNOWN_MODEL {
            verdict.notes.push(
                "Codex's model is not known: pass --agent-model MODEL or set `model` in Codex's config.toml, so its tokens are priced at its own rates".to_owned(),
            );
        }
        if !self.retried.is_empty() {
            verdict.notes.push(format!(
                "codex: {} error event(s) before a turn completed, taken as retries: {}",
                self.retried.len(),
                self.retried.join("; ")
            ));
        }
        verdict.summary = self.last_message.as_deref().and_then(first_line);
        let failures: Vec<String> = self.failures.iter().chain(&self.errors).cloned().collect();
        verdict.failure = event_failure(
            "codex",
            failures,
            (self.turns == 0).then_some("the stream ended without turn.completed"),
            run,
        );
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::stream::exited_ok;

    fn usage(tokens_in: u64, tokens_out: u64, cache_read_tokens: u64) -> SkillEvent {
        SkillEvent::Usage {
            model: "gpt-5-codex".into(),
            tokens_in,
            tokens_out,
            cache_read_tokens,
            cache_write_tokens: 0,
            cache_write_1h_tokens: 0,
        }
    }

    #[test]
    fn cumulative_turn_usage_is_journaled_as_growth_and_cached_is_a_subset() {
        let mut s = CodexStream::new("gpt-5-codex");
        let mut events = Vec::new();
        for l in [
            r#"{"type":"thread.started","thread_id":"th_1"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.completed","item":{"id":"i0","type":"command_execution","command":"git push","status":"completed"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":600,"output_tokens":100}}"#,
            "Reading prompt from stdin...",
            r#"{"type":"turn.completed","usage":{"input_tokens":2500,"cached_input_tokens":1800,"output_tokens":300,"reasoning_output_tokens":120}}"#,
            r#"{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"Opened #3."}}"#,
        ] {
            events.extend(s.line(l).events);
        }
        assert_eq!(events, vec![usage(1000, 100, 600), usage(1500, 200, 1200)]);
        let v = s.finish(&exited_ok());
        assert_eq!(v.failure, None);
        assert_eq!(v.agent_cost, None, "Codex reports no cost");
        assert_eq!(v.summary.as_deref(), Some("Opened #3."));
        assert_eq!(
            v.usage,
            vec![ModelUsage {
                model: "gpt-5-codex".into(),
                tokens_in: 2500,
                tokens_out: 300,
                cache_read_tokens: 1800,
                ..ModelUsage::default()
            }]
        );
    }

    /// Regression: usage was read as the thread's running total only, so a
    /// CLI printing each turn's own usage lost the first turn whenever a
    /// later one counted less. A smaller reading is no running total: from
    /// it on, the readings are summed, and what the sum adds to what was
    /// journaled is journaled.
    #[test]
    fn a_later_turn_smaller_than_the_one_before_is_a_turn_of_its_own() {
        let mut s = CodexStream::new("gpt-5-codex");
        let mut events = Vec::new();
        for l in [
            r#"{"type":"turn.started"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":50}}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":4000,"cached_input_tokens":1000,"output_tokens":250}}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":3000,"cached_input_tokens":2500,"output_tokens":40}}"#,
        ] {
            events.extend(s.line(l).events);
        }
        // Read as running totals until the third: 1,000, then 3,000 more;
        // then the three turns' sum, 8,000 in, 340 out: 4,000 more.
        assert_eq!(
            events,
            vec![
                usage(1000, 50, 200),
                usage(3000, 200, 800),
                usage(4000, 90, 2700)
            ]
        );
        assert_eq!(
            s.finish(&exited_ok()).usage,
            vec![ModelUsage {
                model: "gpt-5-codex".into(),
                tokens_in: 8000,
                tokens_out: 340,
                cache_read_tokens: 3700,
                ..ModelUsage::default()
            }]
        );
    }

    #[test]
    fn an_error_a_turn_completes_after_is_a_retry() {
        let mut s = CodexStream::new("gpt-5-codex");
        for l in [
            r#"{"type":"turn.started"}"#,
            r#"{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":0,"output_tokens":100}}"#,
        ] {
            s.line(l);
        }
        let v = s.finish(&exited_ok());
        assert_eq!(v.failure, None);
        assert!(
            v.notes
                .iter()
                .any(|n| n.contains("taken as retries: error: Reconnecting... 1/5")),
            "{:?}",
            v.notes
        );
        // One after the last completed turn still fails the run.
        let mut s = CodexStream::new("gpt-5-codex");
        for l in [
            r#"{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":1}}"#,
            r#"{"type":"error","message":"unexpected status 500"}"#,
        ] {
            s.line(l);
        }
        assert_eq!(
            s.finish(&exited_ok()).failure.as_deref(),
            Some("codex: error: unexpected status 500")
        );
    }

    #[test]
    fn failed_turns_and_errors_fail_even_with_exit_0() {
        let mut s = CodexStream::new("gpt-5-codex");
        s.line(
            r#"{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}"#,
        );
        assert_eq!(
            s.finish(&exited_ok()).failure.as_deref(),
            Some("codex: turn.failed: stream disconnected before completion")
        );
        let mut s = CodexStream::new("gpt-5-codex");
        s.line(r#"{"type":"error","message":"unexpected status 401 Unauthorized"}"#);
        assert_eq!(
            s.finish(&exited_ok()).failure.as_deref(),
            Some("codex: error: unexpected status 401 Unauthorized")
        );
        let mut s = CodexStream::new(UNKNOWN_MODEL);
        let v = s.finish(&RunOutcome {
            exit_code: Some(1),
            stderr_tail: vec!["Error: not logged in".into()],
            ..RunOutcome::default()
        });
        assert_eq!(
            v.failure.as_deref(),
            Some("codex: the stream ended without turn.completed; exited 1: Error: not logged in")
        );
        assert!(v.notes.iter().any(|n| n.contains("--agent-model")));
    }

    #[test]
    fn the_model_comes_from_the_top_level_of_config_toml() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        assert_eq!(config_model(&path), None);
        std::fs::write(
            &path,
            "# Codex\napproval_policy = \"never\"\nmodel = \"gpt-5.1-codex\"  # the default\n[profiles.fast]\nmodel = \"o4-mini\"\n",
        )
        .unwrap();
        assert_eq!(config_model(&path).as_deref(), Some("gpt-5.1-codex"));
        std::fs::write(&path, "[profiles.fast]\nmodel = \"o4-mini\"\n").unwrap();
        assert_eq!(
            config_model(&path),
            None,
            "a table's model is not the default"
        );
        std::fs::write(&path, "model = 'o3'\n").unwrap();
        assert_eq!(config_model(&path).as_deref(), Some("o3"));
        std::fs::write(&path, "model = \"gpt-5\" junk\n").unwrap();
        assert_eq!(config_model(&path), None, "not a plain string");
    }

    /// Regression: a comment after the value was recognised only after a
    /// space (`"x" # c`): `"x"\t# c` and `"x"# c`, both valid TOML, lost
    /// the model (the tick was priced as an unknown model), and a ` #`
    /// inside the quotes lost it too.
    #[test]
    fn a_comment_after_the_model_needs_no_space() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        for (text, want) in [
            ("model = \"gpt-5\"\t# tab", "gpt-5"),
            ("model = \"gpt-5\"# none", "gpt-5"),
            ("model=\"gpt-5\"  #", "gpt-5"),
            ("model = 'local #2'", "local #2"),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(config_model(&path).as_deref(), Some(want), "{text:?}");
        }
    }

    #[test]
    fn the_command_line_reads_the_prompt_from_stdin() {
        assert_eq!(
            argv(Some("gpt-5-codex"), &["--sandbox=workspace-write".into()]),
            [
                "exec",
                "--json",
                "-m",
                "gpt-5-codex",
                "--sandbox=workspace-write",
                "-"
            ]
            .map(OsString::from)
        );
    }
}
