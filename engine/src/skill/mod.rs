//! The wrapped skill: running it ([`runner`]) under the guard that stops
//! it and everything it started when the engine goes ([`guard`]).

pub mod guard;
pub mod runner;
