//! The telemetry log `.sdd/loop/{skill}.history.jsonl` (ADR-0028,
//! "Telemetry and observability"): append-only, one JSON line per tick,
//! the source of truth for `--resume`. History is the write-ahead log and
//! `budget.json` a checkpoint: history wins.
//!
//! # Architecture
//!
//! - [`schema`] — what a line is: [`TickRecord`], the complete line the
//!   engine writes, and [`HistoryLine`], the tolerant one it reads, with
//!   their parts, and [`parse_line`].
//! - [`log`] — the file: appends that survive a crash mid-write, the tail
//!   read from the end, a torn last line set aside, a damaged one refused.
//!
//! The log stores lines and knows nothing of their fields beyond
//! [`parse_line`]; the schema does no I/O.

mod log;
mod schema;

pub use log::{
    Appended, Foreign, HistoryError, Located, Tail, TornTail, append, append_witnessed,
    foreign_note, read_all, read_tail, read_tail_held, repair_torn, set_aside_foreign, torn_note,
};
pub use schema::{
    ActiveWorktree, AnsweredBy, Autofix, BudgetSnapshot, Chain, FailureRecord, GateRecord,
    HistoryLine, NotificationFailure, NotificationsLine, Outcome, PrState, TickRecord, TrackedPr,
    parse_line,
};

#[cfg(test)]
mod tests;
