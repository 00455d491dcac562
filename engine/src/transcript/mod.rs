//! What a Claude Code session spent, read from its transcript (for
//! the in-session driver: `begin`, work, `end --transcript`).
//!
//! An agent working inside a Claude Code session cannot see its own token
//! counts; Claude Code writes them to the session transcript,
//! `<config dir>/projects/<slug>/<session id>.jsonl` ([`locate`]). A tick
//! of `/loop` is one prompt and the responses that answer it: the one
//! that runs `begin`, those that do the work, the one that runs `end`, and
//! a closing message written after `end` has run. Counting the responses
//! written between `begin` and `end` loses the first and the last of every
//! tick (measured with Claude Code 2.1.328: one response of four counted).
//! So the rule is by prompt, not by time:
//!
//! - **Each API response counts exactly once, in the tick whose prompt it
//!   answers**. A prompt is a `user` entry that starts a turn — not a
//!   tool result, not a message Claude Code makes up itself — and a
//!   response answers the last prompt before it in file order (the `scan`
//!   module has the details). The tick's prompt is the last prompt in the
//!   transcript when `end` reads it ([`count_spend`]).
//! - **A response written after its tick's `end` is counted by the next
//!   `end` of the loop** — in the same transcript, or in the earlier one
//!   after a new session began — never lost and never twice: the loop's
//!   [`Ledger`] (`.sdd/loop/{skill}.transcript.json`) holds, for its last
//!   ticks, the transcript each read, the prompt it took and the responses
//!   it counted.
//! - **Never charged to chat**: a response answering a prompt that was no
//!   tick's own (before the loop, between ticks) is not counted.
//! - A response is one (`message.id`, `requestId`) pair, `requestId` being
//!   absent when the model server sends no `request-id` header. A streamed
//!   response is one entry per content block, the last one's usage final;
//!   a resumed or forked session copies earlier entries into a new file
//!   and they still count once.
//! - Subagents (the Agent tool) write their own transcripts under `<session
//!   id>/subagents/` (older builds: `agent-*.jsonl` beside the session);
//!   their responses answer the prompt their session had when they were
//!   written.
//! - Run from inside Claude Code, `end` first waits (at most two seconds)
//!   for Claude Code to write what it has queued ([`settle`]).
//!
//! With a hook that runs `end` after the closing message, that message
//! counts in its own tick instead of the next: the loop's total is the
//! same either way.
//!
//! Nothing in a transcript is fatal: a line that is not JSON, a JSON value
//! that is not a transcript entry, an assistant entry without id, model,
//! usage or timestamp, Claude Code's `<synthetic>` messages — each is
//! skipped and counted in [`Skipped`]. A file that cannot be read is a
//! [`TranscriptError`] naming it. The library reads no environment.

mod count;
mod error;
mod ledger;
mod limit;
mod locate;
mod scan;
mod settle;
mod usage;

pub use count::{Counted, FileRead, Spend, count_spend};
pub use error::TranscriptError;
pub use ledger::{LEDGER_VERSION, Ledger, LedgerError, LedgerTick, MAX_TICKS, TickId};
pub use limit::limit_hit;
pub use locate::{
    ClaudeDirs, MAX_SLUG_LEN, TranscriptChoice, locate, newest_transcript, project_slug,
};
pub use scan::{ResponseKey, SYNTHETIC_MODEL, Skipped};
pub use settle::{Settle, Settled, awaited_words, settle, settle_until};
pub(crate) use usage::RawUsage;
pub use usage::TokenTotals;

#[cfg(test)]
mod tests;
