//! What a tick did with claims on the shared remote, for its history
//! line (`claims`; `docs/src/claims.md`, "What a tick does"): filled by
//! [`super::claims`] as the tick claims, loses, releases and leaves
//! standing, read by the history line's writer. A leaf: it knows nothing
//! of the tick's context, so the context may hold it.

use serde_json::json;

/// What a tick did with claims, for its history line (`claims`).
#[derive(Debug, Default)]
pub(crate) struct ClaimLog {
    pub remote: Option<String>,
    pub taken: Vec<u64>,
    pub others: Vec<String>,
    pub lost: Vec<u64>,
    pub released: Vec<u64>,
    /// Left on the remote until their lease runs out (work that succeeded).
    pub standing: Vec<u64>,
    /// Why claims of a failed tick stand (it reached the tracker).
    pub standing_why: Option<String>,
}

impl ClaimLog {
    /// The history line's `claims` value; `None` when nothing was claimed.
    pub fn value(&self) -> Option<serde_json::Value> {
        let remote = self.remote.as_ref()?;
        let mut v = json!({
            "remote": remote,
            "taken": self.taken,
            "released": self.released,
        });
        if !self.others.is_empty() {
            v["held_by_others"] = json!(self.others);
        }
        if !self.lost.is_empty() {
            v["lost"] = json!(self.lost);
        }
        if !self.standing.is_empty() {
            v["standing"] = json!(self.standing);
            if let Some(why) = &self.standing_why {
                v["standing_because"] = json!(why);
            }
        }
        Some(v)
    }
}
