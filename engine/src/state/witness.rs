//! How far a loop got, kept where the loop's own files are not: the
//! witness `{skill}.json` in `sdd-loop/` under the project's git
//! directory (`.git/sdd-loop/`, or a worktree's own git directory;
//! `.sdd/loop-witness/` in a project that is not a git repository).
//!
//! The loop's state under `.sdd/loop/` is the engine's, but it is plain
//! files a model or a person can delete, truncate or append to. The
//! witness lets the engine notice:
//!
//! - **State that vanished or went backwards.** `iteration` is the last
//!   iteration the engine recorded in history, of the run that began at
//!   `run_started_at`. A tick that finds neither `budget.json` nor history
//!   that far fails closed and says what is missing and how to go on
//!   (`--resume`, `--fresh`): a loop is never restarted silently.
//! - **History lines the engine did not write** (a model following the
//!   upstream skill's prose appends its own telemetry line). Every line
//!   the engine appends is announced here first (`pending`: a digest of
//!   its exact bytes), then appended, then `checked_len` moves past it,
//!   all under the history's own lock. Bytes after `checked_len` whose
//!   line is not announced were written by someone else: they are moved
//!   to a sidecar and never counted ([`crate::state::history::set_aside_foreign`]).
//!
//! The limits, stated plainly: the digest is FNV-1a, an identity, not a
//! signature — whoever can write this file can make any line look like
//! the engine's (the `PreToolUse` hook refuses a model's writes here as
//! under `.sdd/loop/`, and reading it teaches nothing that forges a
//! line). A line edited in place before `checked_len` is not seen by the
//! foreign-line check; if it lowers the counters, the backwards check
//! still sees the iteration fall. A project with no witness yet (older
//! engines) adopts what its history holds on the first tick.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state::files::{self, Durability, FileError};
use crate::state::paths::StatePaths;

/// The directory of the witnesses of a project rooted at `root`.
pub fn dir(root: &Path) -> PathBuf {
    let dot_git = root.join(".git");
    if dot_git.is_dir() {
        return dot_git.join("sdd-loop");
    }
    // A linked worktree or a submodule: `.git` is a file naming the
    // git directory.
    if let Ok(text) = std::fs::read_to_string(&dot_git)
        && let Some(target) = text.lines().find_map(|l| l.strip_prefix("gitdir:"))
    {
        let target = Path::new(target.trim());
        let git_dir = if target.is_absolute() {
            target.to_path_buf()
        } else {
            root.join(target)
        };
        if git_dir.is_dir() {
            return git_dir.join("sdd-loop");
        }
    }
    root.join(".sdd").join("loop-witness")
}

/// The witness file of one skill's loop.
pub fn path(paths: &StatePaths) -> PathBuf {
    dir(paths.root()).join(format!("{}.json", paths.skill))
}

/// FNV-1a (64-bit) of `bytes`, as 16 hex digits.
pub fn digest(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The contents of a witness file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Witness {
    pub version: u32,
    /// The run of the last iteration recorded (`budget.started_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_started_at: Option<String>,
    /// The last iteration the engine recorded in history (0: none yet).
    #[serde(default)]
    pub iteration: u64,
    /// History's length up to which every line is the engine's.
    #[serde(default)]
    pub checked_len: u64,
    /// Digests of lines announced and perhaps appended past `checked_len`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
    /// The budget file, when it is not the default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_file: Option<PathBuf>,
}

/// A witness file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WitnessError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error(
        "the loop's witness {} is unreadable ({detail}) — it records how far the loop got, outside .sdd/loop/",
        path.display()
    )]
    Invalid { path: PathBuf, detail: String },
}

impl WitnessError {
    pub fn help(&self) -> String {
        match self {
            WitnessError::File(f) => f.help(),
            WitnessError::Invalid { path, .. } => format!(
                "delete {} to let the engine adopt the loop's files as they are (the next tick starts the witness again)",
                path.display()
            ),
        }
    }
}

impl Witness {
    pub fn load(path: &Path) -> Result<Option<Self>, WitnessError> {
        match files::read_bytes(path)? {
            None => Ok(None),
            Some(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| WitnessError::Invalid {
                        path: path.to_path_buf(),
                        detail: e.to_string(),
                    })
            }
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        self.save_with(path, Durability::Durable)
    }

    /// [`Witness::save`], waiting for the disk only as `durability` asks.
    pub fn save_with(&self, path: &Path, durability: Durability) -> Result<(), FileError> {
        if let Some(parent) = path.parent() {
            files::ensure_private_dir(parent)?;
        }
        let mut bytes = serde_json::to_vec_pretty(self).expect("a witness serialises");
        bytes.push(b'\n');
        files::write_atomic_with(path, &bytes, durability)
    }

    /// A new witness for a history `len` bytes long, adopted as it is.
    pub fn adopt(len: u64, budget_file: Option<PathBuf>) -> Self {
        Self {
            version: 1,
            checked_len: len,
            budget_file,
            ..Self::default()
        }
    }
}

/// The budget file to name in the witness: `None` for the default one.
pub fn budget_file(paths: &StatePaths) -> Option<PathBuf> {
    let default = paths.dir.join(format!("{}.budget.json", paths.skill));
    (paths.budget() != default).then(|| paths.budget().to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_fnv1a() {
        assert_eq!(digest(b""), "cbf29ce484222325");
        assert_eq!(digest(b"a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn the_witness_lives_in_the_git_directory() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(dir(tmp.path()), tmp.path().join(".sdd/loop-witness"));
        std::fs::create_dir(tmp.path().join(".git")).unwrap();
        assert_eq!(dir(tmp.path()), tmp.path().join(".git/sdd-loop"));
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(tmp.path().join(".git/worktrees/wt")).unwrap();
        std::fs::create_dir(&wt).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: ../.git/worktrees/wt\n").unwrap();
        assert_eq!(dir(&wt), wt.join("../.git/worktrees/wt/sdd-loop"));
    }
}
