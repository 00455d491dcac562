//! The command line of `sdd-evals`, on top of the stages: it only calls
//! down. The binary's `main` captures the process environment into
//! [`Env`] and exits with what [`main_with`] returns; [`dispatch`] parses
//! the arguments ([`args`]) and calls one command per file: [`run`],
//! [`cases`] (`check`, `list`), [`scaffold`] (`new`), [`docs`] and
//! [`coverage`], [`agents`] (the pinned real CLIs; and `schema`, printed
//! from the loading stage), [`plugin_evals`] (a `claude plugin eval` run
//! of plugin-evals/ in the same reports), [`review`] (changed snapshots,
//! without cargo-insta), [`scorecard`] (the loop-safety scorecard of
//! any Claude Code loop plugin). Exit
//! statuses are named in [`exit`].

pub mod agents;
pub mod args;
pub mod cases;
pub mod coverage;
pub mod dispatch;
pub mod docs;
pub mod env;
pub mod exit;
pub mod plugin_evals;
pub mod review;
pub mod run;
pub mod scaffold;
pub mod scorecard;

pub use dispatch::main_with;
pub use env::{Env, find_workspace, sandbox_parent};
