//! `sdd-loop`: the reference loop engine for ADR-0028 — one invocation is
//! one tick of an autonomous coding loop, and the safety contract holds on
//! every tick whatever the wrapped skill does.
//!
//! Modules, one concept each: the on-disk contract ([`lock`], [`budget`],
//! [`history`], [`reconcile`], [`journal`]), its inputs ([`rates`],
//! [`redact`], [`claude_md`]), the contract's closed sets ([`stop`],
//! [`gates`]), the world ([`backlog`], [`tracker`], [`git`]), the wrapped
//! skill ([`protocol`], [`exchange`], [`runner`], [`guard`]), real agents
//! as the work ([`agent`]), the spend of an in-session agent
//! ([`transcript`]), the contract enforced inside a Claude Code session
//! by its hooks ([`hook`]), the seams ([`clock`],
//! [`liveness`], [`holder`], [`files`]), and the command line ([`cli`]).

pub mod agent;
pub mod backlog;
pub mod budget;
pub mod claude_md;
pub mod cli;
pub mod clock;
pub mod config;
pub mod crash;
pub mod doctor;
pub mod exchange;
pub mod exit;
pub mod files;
pub mod gates;
pub mod git;
pub mod guard;
pub mod history;
pub mod holder;
pub mod hook;
pub mod journal;
pub mod liveness;
pub mod lock;
pub mod paths;
pub mod program;
pub mod protocol;
pub mod rates;
pub mod reconcile;
pub mod redact;
pub mod report;
pub mod runner;
pub mod schema;
pub mod status;
pub mod stop;
pub mod tick;
pub mod tracker;
pub mod transcript;
pub mod witness;
pub mod yaml;
