//! `sdd-harness`: the scenario harness (DESIGN §8–§9). A YAML case
//! describes a world, the ticks the real `sdd-loop` engine runs in it and
//! what must hold afterwards; the harness builds the world in a sandbox,
//! runs the engine as a subprocess per tick, and grades and snapshots the
//! result.
//!
//! Modules, one concept each: the format ([`case`], [`check`],
//! [`validate`], [`duration`], [`schema`]), the world ([`sandbox`],
//! [`procs`], [`spawn`], [`bins`]), the run ([`runner`], [`record`]), the
//! verdict ([`grade`], [`redact`], [`snapshot`], [`report`]), what a
//! reviewer reads ([`timeline`], [`benchmark`], [`viewer`], [`reference`]),
//! and the command line ([`cli`], [`suite`], [`parallel`], [`scaffold`]).

pub mod benchmark;
pub mod bins;
pub mod case;
pub mod check;
pub mod cli;
pub mod duration;
pub mod error;
pub mod grade;
pub mod parallel;
pub mod procs;
pub mod record;
pub mod redact;
pub mod reference;
pub mod report;
pub mod runner;
pub mod sandbox;
pub mod scaffold;
pub mod schema;
mod schema_parts;
pub mod snapshot;
pub mod spawn;
pub mod suite;
pub mod timeline;
pub mod validate;
pub mod viewer;
