//! Driving the ticks: [`runner`] runs one case — builds its world, applies
//! each tick's events, hands the tick to its driver, and captures what the
//! run left into a [`record::RunRecord`]. One file per driver, each
//! adding to a [`tick::Tick`] what is its own, chosen once per case
//! ([`driver`]): [`wrapper`] (the engine runs
//! the fake skill, `sdd-loop <skill> --loop`), [`agent`] (the engine drives
//! a fake Claude Code or Codex with `--agent`) and [`session`] (the
//! in-session protocol, `begin`/`end`, as a session would call it),
//! [`hooks`] (Claude Code's side of the plugin's hooks, played with no
//! CLI), and with the pinned real CLIs against a scripted model: [`real`] (the
//! engine drives real Claude Code or Codex), [`real_session`] (a real
//! Claude Code session runs `begin`/`end` itself) and [`real_loop`] (the
//! real interactive Claude Code runs `/loop`, the plugin's hooks the ticks;
//! with machines, its sessions' fires go in [`rounds`]). What
//! every driver shares — the prepared files, the engine's environment and
//! command line, running under the case's deadline, the finished
//! [`record::TickRecord`] — is the [`tick::Tick`]; whether a tick's end
//! stops the case is [`verdict`]'s, pure. [`at_once`] runs one tick on
//! several machines at once. [`parallel`] runs
//! a suite's cases on N jobs; [`options`] is what the caller gives a run;
//! [`phases`] is where a case's wall time went.
//!
//! Uses loading and the world. Hands on: a [`runner::CaseRun`] (the record
//! and the world's redaction rules) to judging and reporting.

pub mod agent;
pub mod at_once;
pub mod driver;
pub mod hooks;
pub mod options;
pub mod parallel;
pub mod phases;
pub mod real;
pub mod real_loop;
pub mod real_session;
pub mod record;
pub mod rounds;
pub mod runner;
pub mod session;
pub mod tick;
pub mod verdict;
pub mod wrapper;

pub use options::Options;
