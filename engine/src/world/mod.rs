//! The world a tick works in, each behind a seam: the issue tracker
//! ([`tracker`]), git ([`git`]), the backlog it selects from
//! ([`backlog`]), claims on the shared remote that keep loops in other
//! clones off the same issue ([`claim`]), and other programs it asks
//! something of ([`program`]).

pub mod backlog;
pub mod claim;
pub mod git;
pub mod program;
pub mod tracker;
