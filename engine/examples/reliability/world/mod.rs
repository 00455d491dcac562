//! The world a family runs real `sdd-loop` ticks in:
//! - [`tracker`]: a GitHub-shaped loopback tracker whose answers can be
//!   switched to a fault;
//! - [`project`]: a project directory whose wrapped skill is this program
//!   re-executed with `--skill` (`skill.rs`), and the counters' invariants;
//! - [`ledger`]: what the skills actually did, as they recorded it;
//! - [`procs`]: ticks as process groups, cleaned up even when a family
//!   fails half-way, and the engine's peak memory.
//!
//! A family compares what the engine counted with what the skills did —
//! never with what they were asked to do.

pub mod ledger;
pub mod procs;
pub mod project;
pub mod tracker;

pub use procs::{Ran, become_subreaper, engine_binary, reap_all_exited, run, spawn, this_program};
pub use project::Project;
pub use tracker::{Fault, Tracker};
