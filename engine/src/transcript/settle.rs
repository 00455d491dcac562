//! Waiting for Claude Code to write what `end` must read ([`settle`]).
//!
//! Claude Code queues transcript entries and writes the queue every 100 ms
//! (measured with 2.1.328), so when a response's command runs `end`, that
//! response — and, with a fast model, the ones before it, even the tool
//! results between them — may not be in the file yet. No entry on disk
//! tells which call is the one running `end`: the last tool call without a
//! result may be an earlier one whose result is still queued. So, run from
//! inside Claude Code, `end` first waits until the file has not grown for
//! [`Settle::quiet`] (three write intervals: the queue was empty at the
//! last writes), and never longer than [`Settle::most`]. What is still
//! missing then is not lost: it answers this tick's prompt, and the next
//! `end` counts it.
//!
//! A new session's file is created by its first queued write, so a
//! session whose only response was text can reach its `Stop` hook (and
//! the `end` it runs) before the file exists: a missing file is waited
//! for like a growing one, and is an error only once [`Settle::most`]
//! has passed.

use std::io;
use std::path::Path;
use std::time::Duration;

use super::TranscriptError;

/// How long [`settle`] waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settle {
    /// Between two looks at the file.
    pub poll: Duration,
    /// No growth for this long: everything queued has been written.
    pub quiet: Duration,
    /// The longest wait.
    pub most: Duration,
}

impl Settle {
    /// Three of Claude Code's write intervals of quiet, at most two seconds.
    pub const CLAUDE_CODE: Settle = Settle {
        poll: Duration::from_millis(20),
        quiet: Duration::from_millis(300),
        most: Duration::from_secs(2),
    };
}

/// Why [`settle`] stopped waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// The file stopped growing.
    Quiet,
    /// [`Settle::most`] passed first.
    GaveUp,
}

/// Waits, by `sleep`, until the transcript at `path` has stopped growing
/// (see the module doc).
pub fn settle(
    path: &Path,
    limits: Settle,
    sleep: &mut dyn FnMut(Duration),
) -> Result<Settled, TranscriptError> {
    let mut waited = Duration::ZERO;
    let mut unchanged = Duration::ZERO;
    let mut last_len = None;
    loop {
        let len = match std::fs::metadata(path) {
            Ok(meta) => Some(meta.len()),
            // Not written yet (see the module doc).
            Err(e) if e.kind() == io::ErrorKind::NotFound && waited < limits.most => None,
            Err(source) => {
                return Err(TranscriptError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        if len.is_some() && last_len == len {
            unchanged += limits.poll;
        } else {
            unchanged = Duration::ZERO;
        }
        if unchanged >= limits.quiet {
            return Ok(Settled::Quiet);
        }
        if waited >= limits.most {
            return Ok(Settled::GaveUp);
        }
        last_len = len;
        sleep(limits.poll);
        waited += limits.poll;
    }
}
