//! The loop-safety scorecard (issue 35): plugin-neutral failure classes of
//! Claude Code loop plugins, each run against every plugin with the real
//! Claude Code offline, and the matrix of what held. It shares the case
//! harness's world (the sandbox's directory, the mock tracker, the
//! processes and how they are spawned) and nothing else.
//!
//! # Architecture
//!
//! - [`format`] — the two file kinds, typed, errors at `file:line:column`:
//!   a [`format::ScoreCase`] (`evals/scorecard/*.yaml`) and a
//!   [`format::Adapter`] (`evals/scorecard/adapters/*.yaml`).
//! - [`cell`] — one case against one plugin: its directory, the sessions
//!   and their scripted models; a run becomes a [`cell::CellRun`].
//! - [`verdict`] — a cell's [`verdict::Verdict`]: the case's rules over
//!   what the run measured, never over a plugin's own words.
//! - [`matrix`] — case × plugin as text, Markdown, `scorecard.json` and
//!   `scorecard.html`.
//!
//! Each file uses only the ones listed before it; `sdd-evals scorecard`
//! (in the command line) runs them in that order.

pub mod cell;
pub mod format;
pub mod matrix;
pub mod verdict;
