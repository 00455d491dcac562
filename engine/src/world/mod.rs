//! The world a tick works in, each behind a seam: the issue tracker
//! ([`tracker`]), git ([`git`]), the backlog it selects from
//! ([`backlog`]), claims on the shared remote that keep loops in other
//! clones off the same issue ([`claim`]), other programs it asks
//! something of ([`program`]), and the person's notification URLs
//! ([`notify`]).

pub mod backlog;
pub mod claim;
pub mod git;
pub mod notify;
pub mod program;
pub mod tracker;
