//! The loop's state: every file under `.sdd/loop/` and the rules that keep
//! it whole. Where it lives ([`paths`]) and how it is written without
//! tearing ([`files`]); the lock and its holder ([`lock`], [`holder`]);
//! the budget checkpoint, the history log and their reconciliation
//! ([`budget`], [`history`], [`reconcile`]); the interrupted-iteration
//! journal ([`journal`]); how far a loop got, kept out of the model's
//! reach ([`witness`]) and the claims a clone left standing on the shared
//! remote ([`standing`]); the account's usage windows and the wait
//! for their reset ([`windows`]); the gates posted on the tracker that wait
//! for a person ([`pending`]) and the gate last asked here and told to
//! the person ([`asked`]); the files a tick shares with its wrapped skill
//! ([`protocol`], [`exchange`]); and the JSON Schemas of them all
//! ([`schema`]).

pub mod asked;
pub mod budget;
pub mod exchange;
pub mod files;
pub mod history;
pub mod holder;
pub mod journal;
pub mod lock;
pub mod paths;
pub mod pending;
pub mod protocol;
pub mod reconcile;
pub mod schema;
pub mod standing;
pub mod windows;
pub mod witness;
