//! The wrapped skill: running it ([`runner`]) under the guard that stops
//! it and everything it started when the engine goes ([`guard`]), which
//! also keeps the tick's claims on the shared remote while it runs
//! ([`keeper`]).

pub mod guard;
pub mod keeper;
pub mod runner;
