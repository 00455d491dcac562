//! `sdd-loop`: the reference loop engine for ADR-0028 — one invocation is
//! one tick of an autonomous coding loop, and the safety contract holds on
//! every tick whatever the wrapped skill does.
//!
//! The rooms, each importing only the ones listed before it
//! (`engine/tests/imports.rs` reads this list and holds the code to it,
//! with no import circle anywhere in the crate):
//!
//! - [`exit`] — exit statuses, a leaf every room may use.
//! - [`yaml`] — the one YAML reader, a leaf every room may use.
//! - [`os`] — the seams to the operating system: clock, liveness, crash
//!   points.
//! - [`state`] — every file under `.sdd/loop/`: lock and holder, budget,
//!   history, reconciliation, journal, witness, the skill's exchange, the
//!   schemas.
//! - [`rules`] — the contract's decisions: stop conditions, gates, cost
//!   rates, redaction, `CLAUDE.md`.
//! - [`config`] — a tick's settings, gathered by the command line and
//!   passed down; it names the rules' flags and ceilings.
//! - [`world`] — the tracker, git, the backlog, other programs.
//! - [`skill`] — the wrapped skill and its guard.
//! - [`transcript`] — what an in-session agent spent, from its transcript.
//! - [`agent`] — real agent CLIs as the work.
//! - [`tick`] — one tick: begin, the work, end, and what it prints.
//! - [`hook`] — the contract enforced inside a Claude Code session by its
//!   hooks.
//! - [`cli`] — the command line, `doctor` and `status`.

pub mod agent;
pub mod cli;
pub mod config;
pub mod exit;
pub mod hook;
pub mod os;
pub mod rules;
pub mod skill;
pub mod state;
pub mod tick;
pub mod transcript;
pub mod world;
pub mod yaml;
