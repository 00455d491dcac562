//! The mock model's request log: one [`LogEntry`] per request, kept in
//! memory (`GET /__log`) and appended as a JSON line to the `--log` file
//! as it happens, so a case reads it even after a CLI was killed.
//!
//! Credentials never reach it: the `x-api-key`, `Authorization`,
//! `Proxy-Authorization` and `Cookie` headers are left out (`credential`
//! names the header the key came in), and every other header value and
//! body string equal to the key — the one `--api-key` sets and the one
//! the request presented — becomes `[REDACTED]`; so does the key inside
//! a longer string once it has at least 8 characters (a shorter key,
//! like `test`, would mangle ordinary words). [`Totals`] sums the usage
//! the log says was returned.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::expect::CheckResult;
use super::faults::ServedFault;
use super::request::Api;
use super::script::Usage;
use super::turns::Outcome;

pub const REDACTED: &str = "[REDACTED]";
/// A key this long is also redacted inside longer strings.
const MIN_SUBSTRING_KEY: usize = 8;

/// One request and what it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogEntry {
    /// 1-based, in arrival order.
    pub seq: u64,
    pub at: jiff::Timestamp,
    /// `anthropic`, `openai`, or null (an unknown route).
    pub api: Option<Api>,
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub outcome: Outcome,
    /// The 1-based turn the request was matched to.
    pub turn: Option<usize>,
    pub fault: Option<ServedFault>,
    /// The turn's assertions, passed or not.
    pub checks: Vec<CheckResult>,
    pub status: u16,
    /// Answered as server-sent events.
    pub stream: bool,
    /// The model the answer named.
    pub model: Option<String>,
    /// The usage returned: a served turn, an untooled answer, or what the
    /// events of a cut Messages API stream carried.
    pub usage: Option<Usage>,
    /// `msg_…` / `resp_…` of a reply (also of a cut one).
    pub response_id: Option<String>,
    /// The `request-id` header answered.
    pub request_id: String,
    /// The error message answered, if any.
    pub error: Option<String>,
    /// The header that carried the API key (never its value).
    pub credential: Option<String>,
    /// The request's other headers, redacted.
    pub headers: BTreeMap<String, String>,
    /// The request body (JSON, or the text when it is not JSON), redacted.
    pub body: Value,
}

/// Replaces the API keys in what is logged.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    keys: Vec<String>,
}

impl Redactor {
    pub fn new<'a>(keys: impl IntoIterator<Item = Option<&'a str>>) -> Self {
        let mut keys: Vec<String> = keys
            .into_iter()
            .flatten()
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect();
        keys.sort_by_key(|k| std::cmp::Reverse(k.len()));
        keys.dedup();
        Self { keys }
    }

    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for key in &self.keys {
            if out == *key {
                return REDACTED.to_owned();
            }
            if key.chars().count() >= MIN_SUBSTRING_KEY {
                out = out.replace(key.as_str(), REDACTED);
            }
        }
        out
    }

    pub fn json(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.json(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.json(v)),
            _ => {}
        }
    }
}

/// The entries so far, and the file they are appended to.
#[derive(Debug, Default)]
pub struct Log {
    entries: Vec<LogEntry>,
    file: Option<(PathBuf, File)>,
    write_error: Option<String>,
}

impl Log {
    /// Appends to `path` (created if missing) as well as keeping entries.
    pub fn to_file(path: &Path) -> std::io::Result<Self> {
        let file = File::options().create(true).append(true).open(path)?;
        Ok(Self {
            file: Some((path.to_path_buf(), file)),
            ..Self::default()
        })
    }

    pub fn next_seq(&self) -> u64 {
        self.entries.len() as u64 + 1
    }

    pub fn push(&mut self, entry: LogEntry) {
        if let Some((path, file)) = &mut self.file {
            let mut line = serde_json::to_string(&entry).unwrap_or_default();
            line.push('\n');
            if let Err(e) = file.write_all(line.as_bytes())
                && self.write_error.is_none()
            {
                self.write_error =
                    Some(format!("cannot append to the log {}: {e}", path.display()));
            }
        }
        self.entries.push(entry);
    }

    pub fn entries(&self) -> &[LogEntry] {
        &self.entries
    }

    /// The first failure to write the log file, if any.
    pub fn write_error(&self) -> Option<&str> {
        self.write_error.as_deref()
    }

    /// The entries as JSON lines (`GET /__log`).
    pub fn jsonl(&self) -> String {
        self.entries
            .iter()
            .filter_map(|e| serde_json::to_string(e).ok())
            .map(|line| line + "\n")
            .collect()
    }
}

/// A log file that cannot be read back.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: {message}")]
pub struct LogReadError {
    pub path: PathBuf,
    /// 1-based; 0 when the file cannot be opened.
    pub line: usize,
    pub message: String,
}

/// Reads a `--log` file.
pub fn read(path: &Path) -> Result<Vec<LogEntry>, LogReadError> {
    let error = |line, message: String| LogReadError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let file = File::open(path).map_err(|e| error(0, format!("cannot open the log: {e}")))?;
    let mut entries = Vec::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| error(index + 1, format!("cannot read the log: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let entry = serde_json::from_str(&line).map_err(|e| {
            error(
                index + 1,
                format!("not a mock-model log entry: {e} (is this a `mock-model --log` file?)"),
            )
        })?;
        entries.push(entry);
    }
    Ok(entries)
}

/// Token counts summed over responses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub responses: u64,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_creation: u64,
    pub reasoning: u64,
}

impl Tally {
    fn add(&mut self, usage: &Usage) {
        self.responses += 1;
        self.input += usage.input;
        self.output += usage.output;
        self.cache_read += usage.cache_read;
        self.cache_creation += usage.cache_creation;
        self.reasoning += usage.reasoning;
    }
}

/// The usage returned over a log, in all and per model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    #[serde(flatten)]
    pub all: Tally,
    pub by_model: BTreeMap<String, Tally>,
}

impl Totals {
    /// Sums every entry that returned usage: served turns, untooled
    /// answers and cut Messages API streams (errors return none).
    pub fn of<'a>(entries: impl IntoIterator<Item = &'a LogEntry>) -> Self {
        let mut totals = Totals::default();
        for entry in entries {
            let Some(usage) = &entry.usage else { continue };
            totals.all.add(usage);
            let model = entry.model.clone().unwrap_or_default();
            totals.by_model.entry(model).or_default().add(usage);
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_keys_are_redacted_only_where_they_are_the_whole_value() {
        let r = Redactor::new([Some("test")]);
        assert_eq!(r.text("test"), REDACTED);
        assert_eq!(r.text("run the tests"), "run the tests");
        let r = Redactor::new([Some("sk-live-0123456789"), None]);
        assert_eq!(
            r.text("key=sk-live-0123456789;"),
            format!("key={REDACTED};")
        );
        let mut body =
            serde_json::json!({"a": ["sk-live-0123456789", {"b": "x sk-live-0123456789"}]});
        r.json(&mut body);
        assert!(!body.to_string().contains("sk-live"), "{body}");
    }
}
