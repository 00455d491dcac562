//! What a Claude Code session spent during a tick, read from its transcript
//! (DESIGN §11, the in-session driver: `begin`, work, `end --transcript`).
//!
//! An agent working inside a Claude Code session cannot see its own token
//! counts; Claude Code writes them to the session transcript,
//! `<config dir>/projects/<slug>/<session id>.jsonl`, where the config dir
//! is `$CLAUDE_CONFIG_DIR` or `~/.claude` ([`ClaudeDirs`], filled in by the
//! CLI) and `<slug>` is the project's absolute path with every character
//! outside ASCII `[A-Za-z0-9]` replaced by `-` ([`project_slug`]). `auto`
//! picks the newest `*.jsonl` there ([`locate`]). [`read_spend`] sums the
//! assistant entries' `message.usage` over a window into a [`Spend`].
//!
//! One API response is one (`message.id`, `requestId`) pair, but the files
//! hold it several times: a streamed response is one entry per content
//! block, each with a usage snapshot (the last is the final one), and a
//! resumed session replays earlier turns into a NEW file, under whatever
//! timestamp. So the chosen file and every sibling `*.jsonl` are read; a
//! response counts once, when the EARLIEST timestamp at which its key
//! appears in any file lies inside the window (inclusive), with the usage of
//! its last entry in the file where it first appeared — a replayed copy
//! never counts again. Every response of the folder that first appears in
//! the window counts, whichever file holds it: a `/clear` mid-tick (a new
//! session file) loses nothing, and a second session running in the same
//! project at the same time is counted too — an over-estimate, never a
//! miss. [`Spend::files`] says which file each counted response came from.
//!
//! Subagents (the Agent tool) write their own transcripts under
//! `<session id>/subagents/` (nested for agents that spawn agents); those of
//! every session with an entry inside the window are read as well. Older
//! builds wrote `agent-*.jsonl` next to the sessions, which the sibling rule
//! covers.
//!
//! Nothing in a transcript is fatal: a line that is not JSON, a JSON value
//! that is not a transcript entry, an assistant entry without id, model,
//! usage or timestamp, Claude Code's `<synthetic>` messages — each is
//! skipped and counted in [`Skipped`]. A file that cannot be read is a
//! [`TranscriptError`] naming it. The library reads no environment.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::protocol::ModelUsage;

/// Claude Code shortens a slug past this many characters and appends a
/// hash of the path.
pub const MAX_SLUG_LEN: usize = 200;

/// The model Claude Code writes for messages it made up itself (errors,
/// "No response requested."); they cost nothing and are skipped.
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

/// Where Claude Code keeps its data, as the CLI found it in the
/// environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeDirs {
    /// `$CLAUDE_CONFIG_DIR`, when set and not empty.
    pub config_dir: Option<PathBuf>,
    /// The user's home directory (`$HOME`).
    pub home: PathBuf,
}

/// Which transcript to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TranscriptChoice {
    /// The newest `*.jsonl` of the project's folder.
    Auto,
    /// This file.
    Path(PathBuf),
}

/// The instants a tick began and ended; both ends count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: Timestamp,
    pub to: Timestamp,
}

impl Window {
    pub fn contains(&self, at: Timestamp) -> bool {
        self.from <= at && at <= self.to
    }
}

/// Tokens one model spent, as Anthropic reports them: `input` EXCLUDES the
/// cache reads and writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenTotals {
    pub input: u64,
    pub output: u64,
    /// Cache writes, all lifetimes (`cache_creation_input_tokens`).
    pub cache_creation: u64,
    /// The part of `cache_creation` written with the 1-hour lifetime.
    pub cache_creation_1h: u64,
    pub cache_read: u64,
}

impl TokenTotals {
    /// Saturating: a transcript or an agent's stream may claim counts
    /// near `u64::MAX`, and two of them must not overflow.
    pub(crate) fn add(&mut self, other: &TokenTotals) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_creation = self.cache_creation.saturating_add(other.cache_creation);
        self.cache_creation_1h = self
            .cache_creation_1h
            .saturating_add(other.cache_creation_1h);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
    }

    /// The engine's usage record: `tokens_in` is all input consumed
    /// (`input + cache_creation + cache_read`), the cache parts reported
    /// separately so they can be priced at their own rates.
    pub fn to_usage(&self, model: &str) -> ModelUsage {
        ModelUsage {
            model: model.to_owned(),
            tokens_in: self
                .input
                .saturating_add(self.cache_creation)
                .saturating_add(self.cache_read),
            tokens_out: self.output,
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_creation,
            cache_write_1h_tokens: self.cache_creation_1h,
        }
    }
}

/// Lines and entries that were not counted, by reason. Every non-blank
/// line read lands in exactly one of these or is the one counted entry of
/// a response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Not JSON (including a line torn by a write in progress).
    pub malformed: u64,
    /// JSON, but not a transcript entry (not an object, or no `type`).
    pub foreign: u64,
    /// Entries of other types: `user`, `summary`, `system`, snapshots….
    pub other_entries: u64,
    /// Assistant entries without message id, model, usage or a valid
    /// timestamp.
    pub incomplete: u64,
    /// Assistant entries of the `<synthetic>` model.
    pub synthetic: u64,
    /// Entries of responses that first appeared outside the window.
    pub outside_window: u64,
    /// Earlier entries of a counted streamed response (same file).
    pub streamed: u64,
    /// Copies of a counted response in other files (resumed sessions).
    pub replayed: u64,
}

/// A file read, and how many counted responses first appeared in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    pub path: PathBuf,
    pub responses: u64,
}

/// What the session spent in the window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spend {
    /// Per model id, as the transcript names it (dated ids are resolved
    /// when priced).
    pub by_model: BTreeMap<String, TokenTotals>,
    /// Distinct API responses counted.
    pub responses: u64,
    pub skipped: Skipped,
    /// Every file read, the chosen one first.
    pub files: Vec<FileRead>,
}

impl Spend {
    /// The engine's usage records, one per model.
    pub fn usage(&self) -> Vec<ModelUsage> {
        self.by_model
            .iter()
            .map(|(model, totals)| totals.to_usage(model))
            .collect()
    }
}

/// Why a transcript could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("cannot read the Claude Code transcript {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot list the Claude Code transcripts in {}: {source}", path.display())]
    List {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the project directory {} is not an absolute path", project.display())]
    RelativeProject { project: PathBuf },
    #[error("no Claude Code transcripts for {}: {} does not exist", project.display(), dir.display())]
    NoProjectFolder { project: PathBuf, dir: PathBuf },
    #[error("several Claude Code project folders may belong to {}: {}", project.display(), candidates.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(", "))]
    AmbiguousProjectFolder {
        project: PathBuf,
        candidates: Vec<PathBuf>,
    },
    #[error("{} holds no Claude Code transcript (*.jsonl)", dir.display())]
    NoTranscripts { dir: PathBuf },
}

impl TranscriptError {
    /// The one-line fix shown under the error.
    pub fn help(&self) -> String {
        let choose = "pass --transcript PATH with the session's .jsonl file";
        match self {
            TranscriptError::Read { .. } | TranscriptError::List { .. } => {
                format!("check the file's permissions, or {choose}")
            }
            TranscriptError::RelativeProject { .. } => {
                "give the project directory as an absolute path".to_owned()
            }
            TranscriptError::NoProjectFolder { .. } | TranscriptError::NoTranscripts { .. } => {
                format!(
                    "run from the directory Claude Code was started in, set CLAUDE_CONFIG_DIR if Claude Code uses another config directory, or {choose}"
                )
            }
            TranscriptError::AmbiguousProjectFolder { .. } => choose.to_owned(),
        }
    }
}

/// The folder name Claude Code gives `project`: every character outside
/// ASCII `[A-Za-z0-9]` becomes `-`, one per UTF-16 code unit as in the
/// JavaScript that makes it (`/home/me/my_app.v2` → `-home-me-my-app-v2`).
/// Not shortened: see [`MAX_SLUG_LEN`].
pub fn project_slug(project: &Path) -> String {
    project
        .to_string_lossy()
        .chars()
        .flat_map(|c| {
            let (kept, width) = if c.is_ascii_alphanumeric() {
                (c, 1)
            } else {
                ('-', c.len_utf16())
            };
            std::iter::repeat_n(kept, width)
        })
        .collect()
}

impl ClaudeDirs {
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub fn config_dir(&self) -> PathBuf {
        self.config_dir
            .clone()
            .unwrap_or_else(|| self.home.join(".claude"))
    }

    /// The folder holding `project`'s transcripts. A slug longer than
    /// [`MAX_SLUG_LEN`] is cut there and given a hash suffix whose
    /// algorithm has changed between Claude Code builds, so it is found by
    /// its prefix instead of recomputed.
    pub fn project_dir(&self, project: &Path) -> Result<PathBuf, TranscriptError> {
        if !project.is_absolute() {
            return Err(TranscriptError::RelativeProject {
                project: project.to_path_buf(),
            });
        }
        let projects = self.config_dir().join("projects");
        let slug = project_slug(project);
        let missing = |dir: PathBuf| TranscriptError::NoProjectFolder {
            project: project.to_path_buf(),
            dir,
        };
        if slug.len() <= MAX_SLUG_LEN {
            let dir = projects.join(&slug);
            return if dir.is_dir() {
                Ok(dir)
            } else {
                Err(missing(dir))
            };
        }
        let prefix = format!("{}-", &slug[..MAX_SLUG_LEN]);
        let entries = match std::fs::read_dir(&projects) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(missing(projects.join(format!("{prefix}*"))));
            }
            Err(source) => {
                return Err(TranscriptError::List {
                    path: projects,
                    source,
                });
            }
        };
        let mut candidates: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| {
                e.file_name().to_str().is_some_and(|name| {
                    name.strip_prefix(&prefix).is_some_and(|hash| {
                        !hash.is_empty() && hash.bytes().all(|b| b.is_ascii_alphanumeric())
                    })
                })
            })
            .map(|e| e.path())
            .collect();
        candidates.sort();
        match candidates.len() {
            0 => Err(missing(projects.join(format!("{prefix}*")))),
            1 => Ok(candidates.remove(0)),
            _ => Err(TranscriptError::AmbiguousProjectFolder {
                project: project.to_path_buf(),
                candidates,
            }),
        }
    }
}

/// The transcript `choice` names for `project`.
pub fn locate(
    choice: &TranscriptChoice,
    dirs: &ClaudeDirs,
    project: &Path,
) -> Result<PathBuf, TranscriptError> {
    match choice {
        TranscriptChoice::Path(path) => Ok(path.clone()),
        TranscriptChoice::Auto => newest_transcript(&dirs.project_dir(project)?),
    }
}

/// The `*.jsonl` files directly in `dir`, sorted by path.
fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>, TranscriptError> {
    let list_err = |source| TranscriptError::List {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(list_err)? {
        let entry = entry.map_err(list_err)?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "jsonl")
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The most recently modified `*.jsonl` in `dir` (the later name on a tie).
pub fn newest_transcript(dir: &Path) -> Result<PathBuf, TranscriptError> {
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for path in jsonl_files(dir)? {
        let modified = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .map_err(|source| TranscriptError::Read {
                path: path.clone(),
                source,
            })?;
        if newest.as_ref().is_none_or(|(at, _)| modified >= *at) {
            newest = Some((modified, path));
        }
    }
    newest
        .map(|(_, path)| path)
        .ok_or_else(|| TranscriptError::NoTranscripts {
            dir: dir.to_path_buf(),
        })
}

/// Every `*.jsonl` under `dir`, recursively, without following links.
fn jsonl_tree(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), TranscriptError> {
    let list_err = |source| TranscriptError::List {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(list_err)? {
        let entry = entry.map_err(list_err)?;
        entries.push((entry.path(), entry.file_type().map_err(list_err)?));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, kind) in entries {
        if kind.is_dir() {
            jsonl_tree(&path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    Ok(())
}

/// The subagent transcripts of the session whose transcript is `session`.
fn subagent_files(session: &Path) -> Result<Vec<PathBuf>, TranscriptError> {
    let mut out = Vec::new();
    if let Some(stem) = session.file_stem() {
        let dir = session.with_file_name(stem).join("subagents");
        if dir.is_dir() {
            jsonl_tree(&dir, &mut out)?;
        }
    }
    Ok(out)
}

/// One transcript line, with only the fields read; the rest (content
/// blocks, tool results) is skipped without being built.
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "type")]
    kind: Option<serde_json::Value>,
    timestamp: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct AssistantEntry {
    #[serde(rename = "requestId")]
    request_id: Option<String>,
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    id: String,
    model: String,
    usage: RawUsage,
}

/// `message.usage` of an assistant entry or streamed event.
#[derive(Deserialize)]
pub(crate) struct RawUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation: Option<CacheCreation>,
}

#[derive(Deserialize)]
struct CacheCreation {
    ephemeral_5m_input_tokens: Option<u64>,
    ephemeral_1h_input_tokens: Option<u64>,
}

impl RawUsage {
    pub(crate) fn totals(&self) -> TokenTotals {
        let (split_5m, split_1h) = self.cache_creation.as_ref().map_or((0, 0), |c| {
            (
                c.ephemeral_5m_input_tokens.unwrap_or(0),
                c.ephemeral_1h_input_tokens.unwrap_or(0),
            )
        });
        // The split and the total should agree; when they do not, the larger
        // reading is kept so no write goes uncounted.
        let cache_creation = self
            .cache_creation_input_tokens
            .unwrap_or(0)
            .max(split_5m.saturating_add(split_1h));
        TokenTotals {
            input: self.input_tokens.unwrap_or(0),
            output: self.output_tokens.unwrap_or(0),
            cache_creation,
            cache_creation_1h: split_1h.min(cache_creation),
            cache_read: self.cache_read_input_tokens.unwrap_or(0),
        }
    }
}

/// One API response.
type Key = (String, Option<String>);

/// A response as one file holds it.
struct Seen {
    earliest: Timestamp,
    entries: u64,
    model: String,
    last: TokenTotals,
}

/// What one file holds.
#[derive(Default)]
struct FileScan {
    responses: HashMap<Key, Seen>,
    skipped: Skipped,
    /// Whether any entry's timestamp lies inside the window.
    active: bool,
}

fn scan_file(path: &Path, window: &Window) -> Result<FileScan, TranscriptError> {
    let read_err = |source| TranscriptError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = BufReader::new(File::open(path).map_err(read_err)?);
    let mut out = FileScan::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(read_err)? == 0 {
            break;
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let head: Head = match serde_json::from_slice(text) {
            Ok(head) => head,
            Err(_) if serde_json::from_slice::<IgnoredAny>(text).is_ok() => {
                out.skipped.foreign += 1;
                continue;
            }
            Err(_) => {
                out.skipped.malformed += 1;
                continue;
            }
        };
        let at = head
            .timestamp
            .as_ref()
            .and_then(serde_json::Value::as_str)
            .and_then(|t| t.parse::<Timestamp>().ok());
        out.active |= at.is_some_and(|at| window.contains(at));
        match head.kind.as_ref().and_then(serde_json::Value::as_str) {
            Some("assistant") => {}
            Some(_) => {
                out.skipped.other_entries += 1;
                continue;
            }
            None => {
                out.skipped.foreign += 1;
                continue;
            }
        }
        let (Ok(entry), Some(at)) = (serde_json::from_slice::<AssistantEntry>(text), at) else {
            out.skipped.incomplete += 1;
            continue;
        };
        if entry.message.model == SYNTHETIC_MODEL {
            out.skipped.synthetic += 1;
            continue;
        }
        let totals = entry.message.usage.totals();
        let key = (entry.message.id, entry.request_id);
        match out.responses.get_mut(&key) {
            Some(seen) => {
                seen.earliest = seen.earliest.min(at);
                seen.entries += 1;
                seen.model = entry.message.model;
                seen.last = totals;
            }
            None => {
                out.responses.insert(
                    key,
                    Seen {
                        earliest: at,
                        entries: 1,
                        model: entry.message.model,
                        last: totals,
                    },
                );
            }
        }
    }
    Ok(out)
}

/// Scans a session's transcript and, when it was active in the window, its
/// subagents' transcripts.
fn scan_session(
    path: PathBuf,
    window: &Window,
    scans: &mut Vec<(PathBuf, FileScan)>,
) -> Result<(), TranscriptError> {
    let scan = scan_file(&path, window)?;
    let active = scan.active;
    scans.push((path.clone(), scan));
    if active {
        for sub in subagent_files(&path)? {
            let scan = scan_file(&sub, window)?;
            scans.push((sub, scan));
        }
    }
    Ok(())
}

/// Where a response first appeared, and how often it appears elsewhere.
struct Home {
    file: usize,
    seen: Seen,
    elsewhere: u64,
}

/// Sums what was spent in `window`, reading `transcript`, its sibling
/// `*.jsonl` files, and the subagent transcripts of the sessions active in
/// the window.
pub fn read_spend(transcript: &Path, window: Window) -> Result<Spend, TranscriptError> {
    let mut scans = Vec::new();
    scan_session(transcript.to_path_buf(), &window, &mut scans)?;
    let dir = match transcript.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    for sibling in jsonl_files(dir)? {
        if sibling.file_name() != transcript.file_name() {
            scan_session(sibling, &window, &mut scans)?;
        }
    }

    let mut spend = Spend::default();
    let mut homes: HashMap<Key, Home> = HashMap::new();
    for (index, (path, scan)) in scans.into_iter().enumerate() {
        let skipped = &mut spend.skipped;
        skipped.malformed += scan.skipped.malformed;
        skipped.foreign += scan.skipped.foreign;
        skipped.other_entries += scan.skipped.other_entries;
        skipped.incomplete += scan.skipped.incomplete;
        skipped.synthetic += scan.skipped.synthetic;
        spend.files.push(FileRead { path, responses: 0 });
        for (key, seen) in scan.responses {
            match homes.get_mut(&key) {
                None => {
                    homes.insert(
                        key,
                        Home {
                            file: index,
                            seen,
                            elsewhere: 0,
                        },
                    );
                }
                // Strictly earlier: on a tie the file read first keeps it.
                Some(home) if seen.earliest < home.seen.earliest => {
                    home.elsewhere += home.seen.entries;
                    home.file = index;
                    home.seen = seen;
                }
                Some(home) => home.elsewhere += seen.entries,
            }
        }
    }
    for home in homes.into_values() {
        if !window.contains(home.seen.earliest) {
            spend.skipped.outside_window += home.seen.entries + home.elsewhere;
            continue;
        }
        spend.responses += 1;
        spend.files[home.file].responses += 1;
        spend.skipped.streamed += home.seen.entries - 1;
        spend.skipped.replayed += home.elsewhere;
        spend
            .by_model
            .entry(home.seen.model)
            .or_default()
            .add(&home.seen.last);
    }
    Ok(spend)
}

#[cfg(test)]
mod tests;
