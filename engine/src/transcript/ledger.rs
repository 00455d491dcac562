//! The loop's ledger of transcript spend, `.sdd/loop/{skill}.transcript.json`:
//! for each of the last [`MAX_TICKS`] ticks that ended with `--transcript`,
//! which transcript it read, the prompt it took as its own, and the
//! responses it counted ([`Ledger`]).
//!
//! It is what lets a response count exactly once: `end` counts a response
//! only when it answers the tick's prompt or a prompt the ledger holds, and
//! only when no tick in the ledger counted it already. Older ticks are
//! dropped, oldest first, with their prompts and keys together. That can
//! never make a response count twice: a response is looked at only while
//! the prompt it answers is held, and the tick that counted it is the
//! prompt's own tick or a later one, so it is held at least as long. It
//! could lose a response that answers the prompt of a tick dropped [`MAX_TICKS`]
//! ticks ago — which does not happen, because a session answers one prompt
//! at a time: what answers a tick's prompt is written before that
//! session's next prompt, so at the latest by the next `end`. Deleting the
//! file is safe in the same way: it forgets the earlier ticks' prompts, so
//! their leftovers are not counted, and nothing is counted twice.
//!
//! Written whole and atomically, like the loop's other state files, under
//! the loop's lock (only `end` writes it).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ResponseKey;
use crate::state::files::{self, FileError};

/// How many ticks the ledger keeps.
pub const MAX_TICKS: usize = 32;

/// The format's version; another is refused.
pub const LEDGER_VERSION: u32 = 1;

/// The ledger file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    pub version: u32,
    /// Oldest first.
    #[serde(default)]
    pub ticks: Vec<LedgerTick>,
}

impl Default for Ledger {
    fn default() -> Self {
        Self {
            version: LEDGER_VERSION,
            ticks: Vec::new(),
        }
    }
}

/// The tick an `end` accounts: its iteration and the start `begin`
/// recorded in the journal (together unique within a loop's life).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TickId {
    pub iteration: u64,
    pub began_at: String,
}

/// One tick's line in the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerTick {
    pub iteration: u64,
    pub began_at: String,
    /// The transcript its `end` read.
    pub transcript: PathBuf,
    /// The prompt it took as its own; none when the transcript held none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The responses its `end` counted, sorted.
    #[serde(default)]
    pub counted: Vec<ResponseKey>,
}

impl LedgerTick {
    pub fn is(&self, tick: &TickId) -> bool {
        self.iteration == tick.iteration && self.began_at == tick.began_at
    }
}

/// Why the ledger could not be used.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("transcript ledger {} is unreadable: {detail}", path.display())]
    Invalid { path: PathBuf, detail: String },
}

impl LedgerError {
    /// The one-line fix shown under the error.
    pub fn help(&self) -> String {
        match self {
            LedgerError::File(e) => e.help(),
            LedgerError::Invalid { path, .. } => format!(
                "delete {}: the responses that earlier ticks left for the next end are then not counted, and nothing is counted twice",
                path.display()
            ),
        }
    }
}

impl Ledger {
    /// The ledger at `path`; empty when there is none yet.
    pub fn load(path: &Path) -> Result<Self, LedgerError> {
        let Some(bytes) = files::read_bytes(path)? else {
            return Ok(Self::default());
        };
        let invalid = |detail: String| LedgerError::Invalid {
            path: path.to_path_buf(),
            detail,
        };
        let ledger: Ledger = serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
        if ledger.version != LEDGER_VERSION {
            return Err(invalid(format!(
                "version {} (this engine writes version {LEDGER_VERSION})",
                ledger.version
            )));
        }
        Ok(ledger)
    }

    /// Writes the ledger to `path`: temp file, `fsync`, rename.
    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        let mut json = serde_json::to_vec_pretty(self).expect("ledgers serialise");
        json.push(b'\n');
        files::write_atomic(path, &json)
    }

    /// The ticks other than `tick`: a second `end` of the same tick (the
    /// first failed after writing the ledger) replaces its own line.
    pub fn earlier<'a>(&'a self, tick: &'a TickId) -> impl Iterator<Item = &'a LedgerTick> + 'a {
        self.ticks.iter().filter(move |t| !t.is(tick))
    }

    /// This ledger with `line` as the newest tick (replacing a line of the
    /// same tick), keeping the last [`MAX_TICKS`].
    pub fn with(&self, line: LedgerTick) -> Ledger {
        let tick = TickId {
            iteration: line.iteration,
            began_at: line.began_at.clone(),
        };
        let mut ticks: Vec<LedgerTick> = self.earlier(&tick).cloned().collect();
        ticks.push(line);
        let excess = ticks.len().saturating_sub(MAX_TICKS);
        ticks.drain(..excess);
        Ledger {
            version: LEDGER_VERSION,
            ticks,
        }
    }
}
