//! `sdd-mocks`: the world the scenario harness builds around the engine
//! (`docs/src/architecture.md`, "The mocks"), each part usable on its own.
//!
//! - [`fixture`] — the fixture backlog format (`fixtures/backlogs/*.yaml`);
//! - [`tracker`] — the mock tracker: a stateful GitHub-REST-shaped server
//!   on wiremock, with pagination, auth, faults and a request journal; the
//!   `mock-tracker` binary serves one standalone;
//! - [`git`] — a real bare `origin` and working clone with deterministic
//!   SHAs, and helpers to push, force-push and add worktrees;
//! - [`qmd`] — `mock-qmd`, installed as `qmd` on the sandbox PATH;
//! - [`skill`] — `fake-skill`, the scripted wrapped skill;
//! - [`agent`] — `fake-claude` and `fake-codex`, scripted agent CLIs that
//!   act like the fake skill but speak only their real counterparts'
//!   streams;
//! - [`model`] — `mock-model`, a scripted model API (Anthropic Messages,
//!   OpenAI Responses) for the real Claude Code and Codex run offline;
//! - [`notify`] — the notification receiver: records every POST, and
//!   answers 2xx, another status, or not at all;
//! - [`gh`] — `fake-gh`, the pull-request subset of GitHub's `gh` CLI
//!   against the mock tracker, for real agents' shell commands;
//! - [`yaml`] — typed YAML loading with `file:line:column` errors.
//!
//! Formats, environment variables and exit codes: `fixtures/README.md`.

pub mod agent;
pub mod fixture;
pub mod gh;
pub mod git;
mod hash;
pub mod model;
pub mod notify;
pub mod qmd;
mod serve;
pub mod skill;
pub mod tracker;
/// Typed YAML loading with `file:line:column` errors (shared with the engine).
pub use sdd_loop::yaml;
