//! How a recorded tick ended, as every phase that ends one returns it.

use crate::rules::stop::Fired;
use crate::state::budget::Budget;
use crate::state::history::Outcome;

/// A tick that is recorded: how it ended.
#[derive(Debug)]
pub struct Concluded {
    pub code: u8,
    pub iteration: u64,
    /// The history line's outcome.
    pub outcome: Outcome,
    pub fired: Vec<Fired>,
    pub budget: Option<Budget>,
    /// Skipped because other clones hold the claims on every candidate.
    pub skipped_for_claims: bool,
}
