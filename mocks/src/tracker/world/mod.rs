//! The tracker's mutable state: issues, pull requests, their comments,
//! review threads, reviews and labels, seeded from a [`Backlog`] and
//! changed by API calls and by the harness between ticks.
//!
//! [`World`] renders each object in GitHub REST v3's JSON shape (field
//! names as GitHub's) and applies every mutation, so a merge, a comment, a
//! reply, a label change or a new pull request changes every later answer.
//! Issues and pull requests share one number space; a pull request is also
//! an issue (labels and conversation comments live on the issue side). With
//! an origin repository attached, a pull request's `head.sha` is read live
//! from `refs/heads/{branch}` there, so a skill's pushes show up; otherwise
//! (or when the branch is gone) the fixture's `head_sha` is served, and
//! failing that a stable made-up SHA — never `null`.
//!
//! # Architecture
//!
//! - `types` — the public types: [`Clock`], [`WorldError`],
//!   [`NewIssue`], [`PullSummary`];
//! - `objects` — what the world holds (issues, pull requests, comments,
//!   reviews);
//! - `state` — [`World`], seeded from a backlog, and the lookups and
//!   counters the rest share;
//! - `render` — each object in GitHub's JSON shape;
//! - `queries` — what the API's reads answer;
//! - `mutations` — what its writes and the harness's changes do.

mod mutations;
mod objects;
mod queries;
mod render;
mod state;
mod types;

pub use state::World;
pub use types::{Clock, NewIssue, PullSummary, WorldError};

#[cfg(test)]
mod tests;
