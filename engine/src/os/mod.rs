//! What the engine asks of the operating system, each a seam the tests
//! replace: the clock ([`clock`]), whether a process lives
//! ([`liveness`]), and named crash points ([`crash`]).

pub mod clock;
pub mod crash;
pub mod liveness;
