//! Gemini CLI run headless: `gemini --output-format stream-json
//! --approval-mode yolo -p ""`, the prompt on stdin (`-p` is appended to
//! it), read line by line (`real-agents.md`, "Gemini CLI 0.61.0").
//!
//! Its stream says what happened but not what each API response cost:
//! `init` (`session_id`, `model`), `message` (user and assistant text,
//! the latter in `delta` pieces), `tool_use` / `tool_result`, and a final
//! `result` with `status` (`success` | `error`, with `error.message`) and
//! `stats` summed over the run — `models.<id>` with `input_tokens`
//! (cached tokens included), `output_tokens` (thoughts excluded),
//! `cached` and `total_tokens`. So per-response usage comes from the
//! session file the CLI appends as each response completes,
//! `<gemini dir>/tmp/<project>/chats/session-<time>-<id8>.jsonl`: every
//! `type: gemini` record has an `id`, the `model` and `tokens` =
//! `{input, output, cached, thoughts, tool, total}` (a record is
//! rewritten with the same `id` once its tool calls ran). [`GeminiStream`]
//! reads it from [`StreamReader::poll`], which the adapter calls on a
//! timer as well as after every line, and journals each record's growth
//! at once — so a SIGKILL of the engine mid-agent loses no spend.
//!
//! Pricing, as Google bills: `tokens_in` is the prompt (`input`, cached
//! included) plus tool-use prompt tokens; `cache_read_tokens` the cached
//! part; `tokens_out` the candidates plus the thoughts (thinking is
//! billed at the output rate). At the end the `result`'s `stats` are
//! compared per model and the larger count kept (never under-count).
//! Gemini reports no cost of its own.
//!
//! The run failed when it exited non-zero, the result's status is not
//! `success`, or no result came; the root cause quotes the result's
//! error (an API error quotes its status: 429 `RESOURCE_EXHAUSTED`, 500,
//! 401 …), else the last stderr line.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::stream::{
    LineRead, StreamReader, Verdict, event_or_noise, failure, first_line, how_it_ended, noise_note,
};
use crate::skill::runner::RunOutcome;
use crate::state::protocol::{ModelUsage, SkillEvent};

/// The command line after the program: streamed JSON, every tool call
/// approved (`--approval-mode yolo`: the agent works unattended), the
/// model when given, the user's extra arguments, then `-p ""` — headless,
/// the prompt being stdin.
pub fn argv(model: Option<&str>, extra: &[String]) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["--output-format", "stream-json", "--approval-mode", "yolo"]
        .map(OsString::from)
        .into();
    if let Some(m) = model {
        args.extend(["-m".into(), m.into()]);
    }
    args.extend(extra.iter().map(OsString::from));
    args.extend(["-p".into(), "".into()]);
    args
}

/// Token counts of one response, as Google bills them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    /// Prompt tokens, cached included, plus tool-use prompt tokens.
    input: u64,
    cached: u64,
    /// Candidates plus thoughts.
    output: u64,
}

impl Counts {
    fn max(self, o: Self) -> Self {
        Self {
            input: self.input.max(o.input),
            cached: self.cached.max(o.cached),
            output: self.output.max(o.output),
        }
    }

    fn minus(self, o: Self) -> Self {
        Self {
            input: self.input - o.input,
            cached: self.cached - o.cached,
            output: self.output - o.output,
        }
    }

    fn add(&mut self, o: Self) {
        self.input = self.input.saturating_add(o.input);
        self.cached = self.cached.saturating_add(o.cached);
        self.output = self.output.saturating_add(o.output);
    }

    fn usage(self, model: &str) -> ModelUsage {
        ModelUsage {
            model: model.to_owned(),
            tokens_in: self.input,
            tokens_out: self.output,
            cache_read_tokens: self.cached.min(self.input),
            cache_write_tokens: 0,
            cache_write_1h_tokens: 0,
        }
    }
}

fn n(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

/// The session file being read.
#[derive(Debug, Default)]
struct SessionFile {
    path: Option<PathBuf>,
    offset: u64,
    /// A line not yet ended.
    partial: Vec<u8>,
}

/// Reads one Gemini CLI stream and its session file.
#[derive(Debug)]
pub struct GeminiStream {
    /// The Gemini CLI's directory (`~/.gemini`), where sessions are kept.
    dirs: Vec<PathBuf>,
    model: Option<String>,
    session: Option<String>,
    file: SessionFile,
    /// Each response (record id) as read so far.
    responses: BTreeMap<String, (String, Counts)>,
    result: Option<Value>,
    text: String,
    last_message: Option<String>,
    noise: u64,
}

impl GeminiStream {
    /// `dirs`: where the CLI keeps its sessions (`$GEMINI_CLI_HOME`,
    /// `$HOME/.gemini`); `model`: `--agent-model`, until `init` says.
    pub fn new(dirs: Vec<PathBuf>, model: Option<String>) -> Self {
        Self {
            dirs,
            model,
            session: None,
            file: SessionFile::default(),
            responses: BTreeMap::new(),
            result: None,
            text: String::new(),
            last_message: None,
            noise: 0,
        }
    }

    fn find_file(&self, session: &str) -> Option<PathBuf> {
        let short: String = session.chars().take(8).collect();
        let suffix = format!("-{short}.jsonl");
        for dir in &self.dirs {
            let Ok(projects) = std::fs::read_dir(dir.join("tmp")) else {
                continue;
            };
            for project in projects.flatten() {
                let Ok(chats) = std::fs::read_dir(project.path().join("chats")) else {
                    continue;
                };
                for f in chats.flatten() {
                    let name = f.file_name().to_string_lossy().into_owned();
                    if name.starts_with("session-") && name.ends_with(&suffix) {
                        return Some(f.path());
                    }
                }
            }
        }
        None
    }

    fn record(&mut self, record: &Value, events: &mut Vec<SkillEvent>) {
        if let Some(messages) = record.pointer("/$set/messages").and_then(Value::as_array) {
            for m in messages.clone() {
                self.record(&m, events);
            }
            return;
        }
        if record.get("type").and_then(Value::as_str) != Some("gemini") {
            return;
        }
        let (Some(id), Some(tokens)) = (
            record.get("id").and_then(Value::as_str),
            record.get("tokens"),
        ) else {
            return;
        };
        let reading = Counts {
            input: n(tokens, "input").saturating_add(n(tokens, "tool")),
            cached: n(tokens, "cached"),
            output: n(tokens, "output").saturating_add(n(tokens, "thoughts")),
        };
        let model = record
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| self.model.clone())
            .unwrap_or_else(|| "unknown".to_owned());
        let entry = self
            .responses
            .entry(id.to_owned())
            .or_insert_with(|| (model, Counts::default()));
        let larger = entry.1.max(reading);
        let growth = larger.minus(entry.1);
        entry.1 = larger;
        if growth != Counts::default() {
            let u = growth.usage(&entry.0);
            events.push(SkillEvent::Usage {
                model: u.model,
                tokens_in: u.tokens_in,
                tokens_out: u.tokens_out,
                cache_read_tokens: u.cache_read_tokens,
                cache_write_tokens: 0,
                cache_write_1h_tokens: 0,
            });
        }
    }

    /// The session file's complete new lines.
    fn read_new(&mut self) -> Vec<Value> {
        let Some(path) = &self.file.path else {
            return Vec::new();
        };
        let Ok(mut f) = std::fs::File::open(path) else {
            return Vec::new();
        };
        let mut bytes = Vec::new();
        if f.seek(SeekFrom::Start(self.file.offset)).is_err() || f.read_to_end(&mut bytes).is_err()
        {
            return Vec::new();
        }
        self.file.offset += bytes.len() as u64;
        self.file.partial.extend_from_slice(&bytes);
        let Some(end) = self.file.partial.iter().rposition(|b| *b == b'\n') else {
            return Vec::new();
        };
        let complete: Vec<u8> = self.file.partial.drain(..=end).collect();
        String::from_utf8_lossy(&complete)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Per model: the session's responses summed.
    fn streamed(&self) -> BTreeMap<String, Counts> {
        let mut out: BTreeMap<String, Counts> = BTreeMap::new();
        for (model, c) in self.responses.values() {
            out.entry(model.clone()).or_default().add(*c);
        }
        out
    }

    /// Per model: the result's stats.
    fn reported(result: &Value) -> BTreeMap<String, Counts> {
        result
            .pointer("/stats/models")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(model, s)| {
                let input = n(s, "input_tokens");
                let output = n(s, "output_tokens");
                // The stats leave thoughts (and tool prompts) out of both
                // counts but not out of the total.
                let rest = n(s, "total_tokens").saturating_sub(input.saturating_add(output));
                (
                    model.clone(),
                    Counts {
                        input,
                        cached: n(s, "cached"),
                        output: output.saturating_add(rest),
                    },
                )
            })
            .collect()
    }
}

impl StreamReader for GeminiStream {
    fn line(&mut self, line: &str) -> LineRead {
        let mut read = LineRead::default();
        let Some(event) = event_or_noise(line, &mut self.noise, &mut read) else {
            return read;
        };
        match event.get("type").and_then(Value::as_str) {
            Some("init") => {
                self.session = event
                    .get("session_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if let Some(m) = event.get("model").and_then(Value::as_str) {
                    self.model = Some(m.to_owned());
                }
                read.echo.push(format!(
                    "gemini: session {} on {}",
                    self.session.as_deref().unwrap_or("?"),
                    self.model.as_deref().unwrap_or("?")
                ));
            }
            Some("message") if event.get("role").and_then(Value::as_str) == Some("assistant") => {
                if let Some(t) = event.get("content").and_then(Value::as_str) {
                    self.text.push_str(t);
                }
            }
            Some("tool_use") => {
                self.flush_text(&mut read);
                let name = event
                    .get("tool_name")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                match event.pointer("/parameters/command").and_then(Value::as_str) {
                    Some(c) => read.echo.push(format!("$ {c}")),
                    None => read.echo.push(format!("→ {name}")),
                }
            }
            Some("result") => {
                self.flush_text(&mut read);
                read.echo.push(format!(
                    "gemini: result {}",
                    event.get("status").and_then(Value::as_str).unwrap_or("?")
                ));
                self.result = Some(event);
            }
            _ => {}
        }
        read.events = self.poll();
        read
    }

    fn poll(&mut self) -> Vec<SkillEvent> {
        let mut events = Vec::new();
        if self.file.path.is_none() {
            let Some(session) = self.session.clone() else {
                return events;
            };
            self.file.path = self.find_file(&session);
        }
        for record in self.read_new() {
            self.record(&record, &mut events);
        }
        events
    }

    fn finish(&mut self, run: &RunOutcome) -> Verdict {
        let mut verdict = Verdict::default();
        let streamed = self.streamed();
        let mut totals = streamed.clone();
        if let Some(result) = &self.result {
            for (model, r) in Self::reported(result) {
                let t = totals.entry(model.clone()).or_default();
                if !streamed.contains_key(&model) {
                    *t = t.max(r);
                    continue;
                }
                // The two split tool-use prompt tokens apart (the session
                // file into input, the stats' remainder into output): a
                // field-by-field maximum would count them twice. The one
                // counting more in all is kept whole.
                let total = |c: &Counts| c.input.saturating_add(c.output);
                if total(&r) > total(t) {
                    verdict.notes.push(format!(
                        "{model}: the result's stats count more tokens than the session file; the larger count is kept"
                    ));
                    *t = Counts {
                        cached: t.cached.max(r.cached),
                        ..r
                    };
                }
            }
        }
        verdict.usage = totals
            .iter()
            .filter(|(_, c)| **c != Counts::default())
            .map(|(m, c)| c.usage(m))
            .collect();
        verdict.notes.extend(noise_note(self.noise));
        if self.session.is_some() && self.file.path.is_none() {
            verdict.notes.push(format!(
                "the session file was not found under {}: spend is counted from the result only",
                self.dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            ));
        }
        verdict.summary = self.last_message.as_deref().and_then(first_line);
        let mut why = Vec::new();
        let mut quote = None;
        match &self.result {
            None => {
                why.push("the stream ended without a result event".to_owned());
                why.push(format!(
                    "usage counted from {} response(s) of the session file",
                    self.responses.len()
                ));
            }
            Some(r) => {
                let status = r.get("status").and_then(Value::as_str).unwrap_or("(none)");
                if status != "success" {
                    why.push(format!("result {status}"));
                    quote = r
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
            }
        }
        why.extend(how_it_ended(run));
        let quote = quote.as_deref().or_else(|| run.last_stderr());
        verdict.failure = failure("gemini", &why, ", ", quote);
        verdict
    }
}

impl GeminiStream {
    fn flush_text(&mut self, read: &mut LineRead) {
        if !self.text.trim().is_empty() {
            read.echo.extend(self.text.lines().map(str::to_owned));
            self.last_message = Some(std::mem::take(&mut self.text));
        }
        self.text.clear();
    }
}

/// Where the Gemini CLI keeps its sessions for an environment:
/// `$GEMINI_CLI_HOME` (and its `.gemini`), else `$HOME/.gemini`.
pub fn dirs(gemini_cli_home: Option<&Path>, home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(h) = gemini_cli_home {
        out.push(h.join(".gemini"));
        out.push(h.to_path_buf());
    }
    if let Some(h) = home {
        out.push(h.join(".gemini"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::stream::exited_ok;
    use std::io::Write;

    const INIT: &str = r#"{"type":"init","timestamp":"t","session_id":"9ebfd330-f31e-4eee-af07-b7878ba693cd","model":"gemini-2.5-flash"}"#;
    // As Gemini CLI 0.61.0 wrote them: a response recorded, then rewritten
    // with its tool call, then the closing response.
    const R1: &str = r#"{"id":"a","timestamp":"t","type":"gemini","content":"Running it.","tokens":{"input":1000,"output":50,"cached":400,"thoughts":30,"tool":0,"total":1080},"model":"gemini-2.5-flash"}"#;
    const R1_AGAIN: &str = r#"{"id":"a","timestamp":"t","type":"gemini","content":"Running it.","tokens":{"input":1000,"output":50,"cached":400,"thoughts":30,"tool":0,"total":1080},"model":"gemini-2.5-flash","toolCalls":[]}"#;
    const R2: &str = r#"{"id":"b","timestamp":"t","type":"gemini","content":"Done.","tokens":{"input":1200,"output":20,"cached":0,"thoughts":0,"tool":0,"total":1220},"model":"gemini-2.5-flash"}"#;
    const RESULT: &str = r#"{"type":"result","timestamp":"t","status":"success","stats":{"total_tokens":2300,"input_tokens":2200,"output_tokens":70,"cached":400,"input":1800,"duration_ms":215,"tool_calls":1,"models":{"gemini-2.5-flash":{"total_tokens":2300,"input_tokens":2200,"output_tokens":70,"cached":400,"input":1800}}}}"#;

    fn session_file(home: &Path) -> std::fs::File {
        let chats = home.join(".gemini/tmp/proj/chats");
        std::fs::create_dir_all(&chats).unwrap();
        std::fs::File::create(chats.join("session-2026-11-25T21-11-9ebfd330.jsonl")).unwrap()
    }

    #[test]
    fn each_response_of_the_session_file_is_journaled_once_as_it_is_written() {
        let home = tempfile::tempdir().unwrap();
        let mut f = session_file(home.path());
        let mut s = GeminiStream::new(dirs(None, Some(home.path())), None);
        assert!(s.line(INIT).events.is_empty());
        writeln!(
            f,
            r#"{{"sessionId":"9ebfd330-f31e-4eee-af07-b7878ba693cd"}}"#
        )
        .unwrap();
        write!(f, "{R1}\n{}", &R1_AGAIN[..20]).unwrap();
        let first = s.poll();
        assert_eq!(
            first,
            vec![SkillEvent::Usage {
                model: "gemini-2.5-flash".into(),
                tokens_in: 1000,
                tokens_out: 80,
                cache_read_tokens: 400,
                cache_write_tokens: 0,
                cache_write_1h_tokens: 0
            }]
        );
        writeln!(f, "{}", &R1_AGAIN[20..]).unwrap();
        writeln!(f, "{R2}").unwrap();
        let rest: Vec<_> = s
            .line(r#"{"type":"message","role":"assistant","content":"Done.","delta":true}"#)
            .events;
        assert_eq!(rest.len(), 1, "the rewritten record counts nothing more");
        s.line(RESULT);
        let v = s.finish(&exited_ok());
        assert_eq!(v.failure, None);
        assert_eq!(v.summary.as_deref(), Some("Done."));
        assert_eq!(
            v.usage,
            vec![ModelUsage {
                model: "gemini-2.5-flash".into(),
                tokens_in: 2200,
                tokens_out: 100,
                cache_read_tokens: 400,
                ..ModelUsage::default()
            }]
        );
        assert!(v.notes.is_empty(), "{:?}", v.notes);
    }

    #[test]
    fn a_byte_order_mark_does_not_cost_the_init_line() {
        let mut s = GeminiStream::new(Vec::new(), None);
        s.line(&format!("\u{feff}{INIT}"));
        let v = s.finish(&exited_ok());
        assert!(
            v.notes
                .iter()
                .any(|n| n.contains("session file was not found")),
            "the session id was read: {:?}",
            v.notes
        );
        assert!(
            !v.notes.iter().any(|n| n.contains("not JSON")),
            "{:?}",
            v.notes
        );
    }

    #[test]
    fn tool_use_prompt_tokens_are_counted_once() {
        let home = tempfile::tempdir().unwrap();
        let mut f = session_file(home.path());
        let mut s = GeminiStream::new(dirs(None, Some(home.path())), None);
        s.line(INIT);
        writeln!(
            f,
            r#"{{"id":"a","timestamp":"t","type":"gemini","content":"Ran it.","tokens":{{"input":1000,"output":50,"cached":0,"thoughts":0,"tool":500,"total":1550}},"model":"gemini-2.5-flash"}}"#
        )
        .unwrap();
        s.poll();
        // The stats' remainder (total − input − output) is the tool's 500.
        s.line(r#"{"type":"result","timestamp":"t","status":"success","stats":{"models":{"gemini-2.5-flash":{"total_tokens":1550,"input_tokens":1000,"output_tokens":50,"cached":0}}}}"#);
        let v = s.finish(&exited_ok());
        assert_eq!(
            (v.usage[0].tokens_in, v.usage[0].tokens_out),
            (1500, 50),
            "{:?}",
            v.notes
        );
    }

    #[test]
    fn without_the_session_file_the_result_is_the_usage() {
        let mut s = GeminiStream::new(Vec::new(), Some("gemini-2.5-pro".into()));
        s.line(INIT);
        s.line(RESULT);
        let v = s.finish(&exited_ok());
        assert_eq!(v.usage[0].tokens_in, 2200);
        assert_eq!(v.usage[0].tokens_out, 100, "thoughts from the total");
        assert!(v.notes.iter().any(|n| n.contains("session file")));
    }

    #[test]
    fn an_error_result_or_no_result_fails_with_the_api_error() {
        let mut s = GeminiStream::new(Vec::new(), None);
        s.line(INIT);
        s.line(r#"{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":429,\"message\":\"quota\",\"status\":\"RESOURCE_EXHAUSTED\"}}]"},"stats":{"models":{}}}"#);
        let v = s.finish(&RunOutcome {
            exit_code: Some(1),
            ..RunOutcome::default()
        });
        let f = v.failure.unwrap();
        assert!(
            f.starts_with("gemini: result error, exited 1: [API Error:"),
            "{f}"
        );
        assert!(f.contains("RESOURCE_EXHAUSTED"), "{f}");
        let mut s = GeminiStream::new(Vec::new(), None);
        let v = s.finish(&RunOutcome {
            exit_code: Some(41),
            stderr_tail: vec!["Invalid auth method selected.".into()],
            ..RunOutcome::default()
        });
        assert_eq!(
            v.failure.as_deref(),
            Some(
                "gemini: the stream ended without a result event, usage counted from 0 response(s) of the session file, exited 41: Invalid auth method selected."
            )
        );
    }

    #[test]
    fn the_command_line_is_headless_streaming_and_unattended() {
        assert_eq!(
            argv(Some("gemini-2.5-pro"), &["--sandbox=false".into()]),
            [
                "--output-format",
                "stream-json",
                "--approval-mode",
                "yolo",
                "-m",
                "gemini-2.5-pro",
                "--sandbox=false",
                "-p",
                ""
            ]
            .map(OsString::from)
        );
    }
}
