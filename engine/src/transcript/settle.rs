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
//! last writes), and never longer than [`Settle::most`]. Run by the
//! `Stop` hook, it knows the response that ended the turn
//! (`last_assistant_message`, passed as `end --last-message`): then it
//! also waits for the file to hold it ([`settle_until`]) — under load a
//! quiet file still lacked it (measured in CI: the last response of a
//! real `/loop` tick, 12,700 tokens, left out). What is still missing
//! then is not lost: it answers this tick's prompt, and the next `end`
//! counts it.
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
    settle_until(path, limits, None, sleep)
}

/// The words of a session's last message that its transcript entry holds
/// as they are (JSON escapes nothing in them): the start of its first
/// line, up to the first character that JSON might escape or a writer
/// might spell otherwise; `None` when that leaves too little to tell.
pub fn awaited_words(message: &str) -> Option<String> {
    let line = message.lines().map(str::trim).find(|l| !l.is_empty())?;
    let words: String = line
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || " .,:;!?-_()#'".contains(*c))
        .take(48)
        .collect();
    let words = words.trim_end().to_owned();
    (words.len() >= 8).then_some(words)
}

/// Whether the last megabyte of the file at `path` holds `words`.
fn holds(path: &Path, words: &str) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(1 << 20)));
    let mut tail = Vec::new();
    if file.read_to_end(&mut tail).is_err() {
        return false;
    }
    String::from_utf8_lossy(&tail).contains(words)
}

/// [`settle`], and — when the session's last message is known (a `Stop`
/// hook's `last_assistant_message`, as [`awaited_words`]) — until the
/// file holds it too: under load Claude Code's writes come late, and a
/// quiet file could still lack the response that ended the turn.
pub fn settle_until(
    path: &Path,
    limits: Settle,
    awaited: Option<&str>,
    sleep: &mut dyn FnMut(Duration),
) -> Result<Settled, TranscriptError> {
    let mut waited = Duration::ZERO;
    let mut unchanged = Duration::ZERO;
    let mut last_len = None;
    let mut found = awaited.is_none();
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
            if let (false, Some(words), Some(_)) = (found, awaited, len) {
                found = holds(path, words);
            }
        }
        if unchanged >= limits.quiet && found {
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
