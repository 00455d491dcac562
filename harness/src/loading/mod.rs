//! Loading: a case file becomes a [`case::Case`] that is known to make
//! sense, or an error at `file:line:column` with a `help:`.
//!
//! [`load`] reads and parses a file into the format's types ([`case`], the
//! check kinds in [`check`]) and holds it to the rules its types cannot
//! say ([`validate`], its errors worded by [`diagnostics`]): names from the
//! engine ([`names`], [`reference`](mod@reference)),
//! fixtures ([`fixtures`]), durations ([`duration`]) and the requirements
//! a case may cover ([`requirements`]). [`suite`] finds and loads every
//! case under a directory. [`expectations`] turns a case's `expect:` into
//! the checks they stand for. [`schema`] (with [`schema_parts`]) prints
//! the format as JSON Schema, and [`coverage`] maps requirements to cases.
//!
//! Hands on: a [`case::Case`] (and the [`fixtures::Fixtures`] it names) to
//! the world and the driver; its checks to judging.

pub mod case;
pub mod check;
pub mod coverage;
pub mod diagnostics;
pub mod duration;
pub mod expectations;
pub mod fixtures;
pub mod load;
pub mod names;
pub mod reference;
pub mod requirements;
pub mod schema;
pub mod schema_parts;
pub mod suite;
pub mod validate;
