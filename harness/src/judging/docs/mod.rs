//! `sdd-evals docs` and the `skill_docs` check: a plugin's
//! `skills/work/SKILL.md` and `skills/review/SKILL.md` read as documents
//! and compared with the engine — ADR-0028 confirmations 1 and 2 for any
//! plugin checkout, and issue 8's doc check (every command, flag and exit
//! status a SKILL.md names exists).
//!
//! The layers, one concept each: [`markdown`] (blocks with lines),
//! [`reader`] (what a document states about the command line),
//! [`engine`] (what the engine offers, from its library), [`question`]
//! (finding a gate's question), [`contract`] (what a document must
//! state), [`defaults`] (a documented default against the engine's),
//! [`compare`] (the differences) and [`plugin`] (a checkout's files).

pub mod compare;
pub mod contract;
pub mod defaults;
pub mod engine;
pub mod markdown;
pub mod plugin;
pub mod question;
pub mod reader;

pub use compare::{Difference, Report};
pub use plugin::{DocsError, check};
