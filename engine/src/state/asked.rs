//! `.sdd/loop/{skill}.asked.json`: the gate a tick asked where the loop
//! runs and told the person of ([`Asked`]; docs/src/notifications.md and
//! docs/src/on-disk-contract.md), so that a session whose `/loop` fires
//! again and asks the same gate tells nobody again.
//!
//! A gate is the same gate when its name and the issue or PR it concerns
//! are — not its text, whose figures move while it waits (the minutes of
//! a budget gate) — as a posted gate is found in `{skill}.gates.json`.
//! Written when the gate is told, removed once a tick gets past its gates
//! (the gate answered, or no longer asked). Only a loop with notification
//! URLs reads or writes it. A bookkeeping file: one that does not parse
//! is taken as nothing told, so the worst a damaged file costs is one
//! notification more.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::state::files::{self, FileError};

/// The gate last told to the person, and not yet got past.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Asked {
    /// The gate's name (`budget-escalation`, …).
    pub gate: String,
    /// The issue or PR the question concerns; `None` for a run-wide gate.
    pub subject: Option<u64>,
    /// The question as told, redacted.
    pub question: String,
    /// When it was told (RFC 3339).
    pub at: String,
}

impl Asked {
    /// What the file says; nothing when it is missing or unreadable.
    pub fn load(path: &Path) -> Option<Self> {
        files::read_bytes(path)
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice(&b).ok())
    }

    /// Whether `gate` about `subject` is the gate this record told.
    pub fn is(&self, gate: &str, subject: Option<u64>) -> bool {
        self.gate == gate && self.subject == subject
    }

    /// Replaces the file atomically.
    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        let mut json = serde_json::to_vec_pretty(self).expect("an asked gate serialises");
        json.push(b'\n');
        files::write_atomic(path, &json)
    }

    /// Removes the file; `true` when there was one.
    pub fn forget(path: &Path) -> Result<bool, FileError> {
        files::remove_if_present(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(gate: &str, subject: Option<u64>) -> Asked {
        Asked {
            gate: gate.into(),
            subject,
            question: "Approaching iterations (4/5). Continue, raise ceiling, or stop?".into(),
            at: "2026-05-09T14:00:00Z".into(),
        }
    }

    #[test]
    fn the_same_gate_is_its_name_and_subject_not_its_text() {
        let a = asked("budget-escalation", None);
        assert!(a.is("budget-escalation", None));
        assert!(!a.is("budget-escalation", Some(3)));
        assert!(!a.is("backlog-drift", None));
        let b = asked("ambiguous-criteria", Some(20));
        assert!(b.is("ambiguous-criteria", Some(20)));
        assert!(!b.is("ambiguous-criteria", Some(21)));
    }

    #[test]
    fn it_round_trips_and_a_damaged_file_is_nothing_told() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("work.asked.json");
        assert_eq!(Asked::load(&path), None, "no file: nothing told");
        let a = asked("budget-escalation", None);
        a.save(&path).unwrap();
        assert_eq!(Asked::load(&path), Some(a));
        assert!(Asked::forget(&path).unwrap());
        assert!(!path.exists());
        assert!(!Asked::forget(&path).unwrap(), "already gone");
        std::fs::write(&path, "{\"gate\": 3").unwrap();
        assert_eq!(Asked::load(&path), None, "a hint, never an error");
    }
}
