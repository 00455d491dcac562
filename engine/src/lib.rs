//! `sdd-loop`: the reference loop engine for ADR-0028 — one invocation is
//! one tick of an autonomous coding loop, and the safety contract holds on
//! every tick whatever the wrapped skill does.
//!
//! Modules, one concept each: the on-disk contract ([`lock`], [`budget`],
//! [`history`], [`reconcile`]), its inputs ([`rates`], [`redact`],
//! [`claude_md`]), the seams ([`clock`], [`liveness`], [`files`]), the
//! skill protocol ([`protocol`]), and the command line ([`cli`]).

pub mod budget;
pub mod claude_md;
pub mod cli;
pub mod clock;
pub mod exit;
pub mod files;
pub mod history;
pub mod liveness;
pub mod lock;
pub mod paths;
pub mod protocol;
pub mod rates;
pub mod reconcile;
pub mod redact;
pub mod schema;
