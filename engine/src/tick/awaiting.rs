//! What a tick that waits for a person carries out of the tick
//! (docs/src/gates-away.md): the posted gate, its id and address — a leaf
//! that the tick's failure and its report both name.

use crate::rules::gates::GateName;

/// A tick that waits for a person's answer to a posted gate.
#[derive(Debug, Clone, PartialEq)]
pub struct AwaitingPerson {
    pub id: String,
    pub gate: GateName,
    /// The post's address.
    pub url: String,
    pub note: String,
}
