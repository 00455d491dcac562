//! The mock tracker: a GitHub-REST-shaped subset served by
//! wiremock on loopback — stateful, paginated, authenticated, with faults
//! injectable per route and every request recorded.
//!
//! Start one with [`MockTracker::builder`]; see [`routes`] for what it
//! answers, [`faults`] for what can go wrong, [`change`] for what the
//! harness can do to the world between ticks.

pub mod change;
pub mod faults;
pub mod journal;
pub mod pattern;
pub mod routes;
pub mod server;
pub mod shapes;
pub mod standalone;
pub mod world;

pub use change::{AnswerCode, CodeLookup, WorldChange};
pub use faults::{Fault, FaultId, FaultKind};
pub use journal::RecordedRequest;
pub use server::{BlockingMockTracker, MockTracker, MockTrackerBuilder};
pub use world::{Clock, NewIssue, PullSummary, World, WorldError};
