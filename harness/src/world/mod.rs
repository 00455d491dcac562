//! The world a case runs in, built fresh for every case: [`sandbox`] (a
//! temporary directory with its own HOME, project, git remote, mock
//! tracker and mock qmd, copied from a shared git world when it can be),
//! the simulated machines around it ([`machines`]), the hand edits a case makes to the project's files between ticks
//! ([`edit`]), the binaries it runs ([`bins`]) and the pinned real CLIs ([`clis`]),
//! the scripted model a real CLI talks to and its confinement
//! ([`model`]), how a process is spawned, steered and
//! timed out ([`spawn`]) or run on a pseudo-terminal ([`pty`]), and reaped with everything it started
//! ([`procs`]), the redaction rules for what varies between worlds and
//! the secrets planted in them ([`redact`]), what the notification
//! receiver recorded, read as the person would ([`notify`]), and the
//! errors of building and running one ([`error`]).
//!
//! Uses only loading (the case's `world:`). Hands on: a
//! [`sandbox::Sandbox`] and a [`procs::Reaper`] to the driver.

pub mod bins;
pub mod clis;
pub mod edit;
pub mod error;
pub mod machines;
pub mod model;
pub mod notify;
pub mod procs;
pub mod pty;
pub mod redact;
pub mod sandbox;
pub mod spawn;
