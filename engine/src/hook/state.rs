//! What the hooks remember between calls, beside the engine's own state:
//!
//! - [`Session`], `.sdd/loop/{skill}.hook.json`: the last loop prompt a
//!   session sent (its `session_id` and `prompt_id`, and the iteration it
//!   began), so a tool call of that prompt made after its iteration ended
//!   is known for one; and a gate question waiting for its answer in the
//!   session's next prompt.
//! - [`Counts`], `hooks.json` in the iteration's exchange directory: the
//!   PRs and reviews the `PreToolUse` hook let through this iteration. It
//!   lives and dies with the iteration, and is read and written under an
//!   advisory lock (`hooks.lock` beside it), since Claude Code may run the
//!   hooks of several tool calls at once: two `gh pr create` racing for
//!   the last PR left cannot both be let through.
//!
//! Both are redacted like every state file before they are written.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::rules::redact::Redactor;
use crate::state::exchange::Exchange;
use crate::state::files::{self, FileError};
use crate::state::paths::StatePaths;

/// A gate question asked through a blocked prompt, waiting for its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pending {
    pub gate: String,
    pub question: String,
    pub options: Vec<String>,
    /// The skill name the loop prompt used (`/sdd:work`).
    pub name: String,
    /// The loop prompt's flags, to run `begin` again with the answer.
    pub flags: Vec<String>,
}

/// The last loop prompt of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// The iteration the prompt began, if it began one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pending>,
    /// The session's turn ended (its Stop hook ran) with `iteration` still
    /// open: `end` failed. Its next loop prompt ends the iteration, from
    /// a new process too; without this the session died mid-turn, and the
    /// iteration is recovered as interrupted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// The session's turn ended on this model-API error (`StopFailure`)
    /// with `iteration` still open: `end` failed. The session's end tries
    /// again with the same cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<String>,
    /// The run this session's loop prompt found ended, and the final
    /// report it was shown: a later fire of the same loop (a `/loop` cron
    /// job keeps firing) is refused without running `begin` again, so it
    /// records nothing more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
}

/// An ended run, as a session was told of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ended {
    /// The run's `started_at` in budget.json.
    pub started_at: String,
    /// Its stop cause's name.
    pub cause: String,
    /// The iteration its stop was recorded in.
    pub iteration: u64,
    /// The final report the session was shown.
    pub report: String,
}

/// A hook state file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("hook state file {path} is unreadable: {detail}")]
    Invalid { path: PathBuf, detail: String },
}

fn load<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, StateError> {
    match files::read_bytes(path)? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| StateError::Invalid {
                path: path.to_path_buf(),
                detail: e.to_string(),
            }),
    }
}

fn save<T: Serialize>(path: &Path, value: &T, redactor: &Redactor) -> Result<(), FileError> {
    let mut json = serde_json::to_value(value).expect("hook state serialises");
    redactor.redact_json(&mut json);
    let mut bytes = serde_json::to_vec_pretty(&json).expect("hook state serialises");
    bytes.push(b'\n');
    files::write_atomic(path, &bytes)
}

impl Session {
    pub fn path(paths: &StatePaths) -> PathBuf {
        paths.dir.join(format!("{}.hook.json", paths.skill))
    }

    pub fn load(paths: &StatePaths) -> Result<Option<Self>, StateError> {
        load(&Self::path(paths))
    }

    pub fn save(&self, paths: &StatePaths, redactor: &Redactor) -> Result<(), FileError> {
        save(&Self::path(paths), self, redactor)
    }

    /// This skill's record, when it says session `session_id` began
    /// `iteration` with its last loop prompt.
    pub fn began(paths: &StatePaths, session_id: &str, iteration: u64) -> Option<Self> {
        Self::load(paths)
            .ok()
            .flatten()
            .filter(|s| s.session_id == session_id && s.iteration == Some(iteration))
    }
}

/// What the `PreToolUse` hook let through in one iteration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    /// PR creations let through (an attempt that then failed counts: the
    /// hook cannot see the outcome).
    pub prs_opened: u64,
    /// Reviews let through, per PR (`"?"`: a PR the call did not name).
    #[serde(default)]
    pub reviews: BTreeMap<String, u64>,
}

impl Counts {
    fn path(exchange: &Exchange) -> PathBuf {
        exchange.dir.join("hooks.json")
    }

    /// Reads the counts under the lock, lets `decide` change them, and
    /// writes them back if it says so (`Ok((true, _))`).
    pub fn update<T>(
        exchange: &Exchange,
        redactor: &Redactor,
        decide: impl FnOnce(&mut Counts) -> (bool, T),
    ) -> Result<T, StateError> {
        files::ensure_private_dir(&exchange.dir)?;
        let lock_path = exchange.dir.join("hooks.lock");
        let guard = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|source| FileError::Io {
                action: "open",
                path: lock_path.clone(),
                source,
            })?;
        guard.lock().map_err(|source| FileError::Io {
            action: "lock",
            path: lock_path.clone(),
            source,
        })?;
        let path = Self::path(exchange);
        let mut counts: Counts = load(&path)?.unwrap_or_default();
        let (changed, out) = decide(&mut counts);
        if changed {
            save(&path, &counts, redactor)?;
        }
        Ok(out)
    }
}
