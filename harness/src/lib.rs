//! `sdd-harness`: the scenario harness (DESIGN §8–§9). A YAML case
//! describes a world, the ticks the real `sdd-loop` engine runs in it and
//! what must hold afterwards; the harness builds the world in a sandbox,
//! runs the engine as a subprocess per tick, and grades and snapshots the
//! result.
//!
//! Modules, one concept each: the format ([`case`], [`check`],
//! [`validate`], [`duration`], [`schema`], [`requirements`]), the world
//! ([`sandbox`], [`procs`], [`spawn`], [`bins`]), the run ([`runner`], with
//! the in-session driver [`session`] and the agent drivers [`agents`];
//! [`record`]), the verdict ([`grade`], [`status_layout`], [`redact`],
//! [`snapshot`], [`report`]), what a reviewer reads ([`timeline`],
//! [`benchmark`], [`viewer`], [`reference`]), the documents ([`docs`]), and
//! the command line ([`cli`], [`suite`], [`parallel`], [`scaffold`],
//! [`coverage`]).

pub mod agents;
pub mod benchmark;
pub mod bins;
pub mod case;
pub mod check;
pub mod cli;
pub mod coverage;
pub mod docs;
pub mod duration;
pub mod error;
pub mod grade;
pub mod parallel;
pub mod procs;
pub mod record;
pub mod redact;
pub mod reference;
pub mod report;
pub mod requirements;
pub mod runner;
pub mod sandbox;
pub mod scaffold;
pub mod schema;
mod schema_parts;
pub mod session;
pub mod snapshot;
pub mod spawn;
pub mod status_layout;
pub mod suite;
pub mod timeline;
pub mod validate;
pub mod viewer;
