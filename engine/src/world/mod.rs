//! The world a tick works in, each behind a seam: the issue tracker
//! ([`tracker`]), git ([`git`]), the backlog it selects from
//! ([`backlog`]), and other programs it asks something of ([`program`]).

pub mod backlog;
pub mod git;
pub mod program;
pub mod tracker;
