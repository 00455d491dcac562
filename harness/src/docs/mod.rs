//! `sdd-evals docs`: a plugin's `skills/work/SKILL.md` and
//! `skills/review/SKILL.md` read as documents and compared with the engine
//! — ADR-0028 confirmations 1 and 2 for any plugin checkout, and issue 8's
//! doc check (every command, flag and exit status a SKILL.md names exists).
//!
//! The layers, one concept each: [`markdown`] (blocks with lines),
//! [`reader`] (what a document states about the command line),
//! [`question`] (finding a gate's question), [`engine`] (what the engine
//! offers, from its library), [`compare`] (the differences) and
//! [`plugin`] (a checkout's files).

pub mod compare;
pub mod engine;
pub mod markdown;
pub mod plugin;
pub mod question;
pub mod reader;

pub use compare::{Difference, Report};
pub use plugin::{DocsError, check};
