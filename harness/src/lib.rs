//! `sdd-harness`: the scenario harness (`docs/src/architecture.md`). A YAML case
//! describes a world, the ticks the real `sdd-loop` engine runs in it and
//! what must hold afterwards; the harness builds the world in a sandbox,
//! runs the engine as a subprocess per tick, and grades and snapshots the
//! result.
//!
//! The folders are the stages a case passes through, in order; each uses
//! only the stages before it (`tests/imports.rs` holds them to that):
//!
//! 1. [`loading`] — the case format, its schema and validation, the
//!    requirements a case covers: a file becomes a [`loading::case::Case`].
//! 2. [`world`] — the sandbox a case runs in: binaries, git world, mock
//!    tracker, processes and how they are spawned and reaped.
//! 3. [`driving`] — the ticks: the runner and one file per driver
//!    (wrapper, agent, in-session); a run becomes a
//!    [`driving::record::RunRecord`].
//! 4. [`judging`] — checks, grades, snapshots, the status-block layout and
//!    the SKILL.md documents: a record becomes grades and snapshots.
//! 5. [`reporting`] — what a reviewer reads: the report, the HTML viewer,
//!    the benchmark and its history.
//! 6. [`scorecard`] — the loop-safety scorecard, a feature of its own: its
//!    cases and adapters, a cell's run and verdict, the matrix.
//!
//! [`cli`] sits on top and only calls down.

pub mod cli;
pub mod driving;
pub mod judging;
pub mod loading;
pub mod reporting;
pub mod scorecard;
pub mod world;
