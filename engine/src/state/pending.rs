//! `.sdd/loop/{skill}.gates.json`: the gates posted on the tracker that
//! wait for a person ([`PendingGates`]; docs/src/gates-away.md and
//! docs/src/on-disk-contract.md).
//!
//! One entry per posted gate, written when the gate is posted and removed
//! when it is answered (by a reply or by its deadline), so a gate is
//! posted once however many ticks wait for it. The question is stored
//! redacted, as it was posted. Written atomically; a file that does not
//! parse is refused by name, never replaced.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::state::files::{self, FileError};

/// The file's content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingGates {
    pub gates: Vec<PendingGate>,
}

/// One gate posted on the tracker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingGate {
    /// The gate's id, which an answer names (`g-` and 8 hex digits).
    pub id: String,
    /// The gate's name (`budget-escalation`, …).
    pub gate: String,
    /// The question, redacted, as posted.
    pub question: String,
    /// The issue or PR the question concerns; `None` for a run-wide gate.
    pub subject: Option<u64>,
    /// The issue or PR the post is on (the subject, or the dashboard).
    pub posted_on: u64,
    /// The post's comment id: never read as a reply.
    pub comment_id: u64,
    /// The post's address.
    pub url: String,
    /// When the tracker says the post was made: replies must be newer.
    pub posted_at: jiff::Timestamp,
    /// Past it, the conservative option is taken.
    pub deadline: jiff::Timestamp,
    /// The SHA-1 of the answer code sent only in the person's
    /// notification (hex), when notifications are configured: a reply
    /// under the loop's own token counts only with that code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_sha1: Option<String>,
}

/// Why the file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PendingError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("pending gates file {path} is not valid: {why}")]
    Invalid { path: String, why: String },
}

impl PendingError {
    pub fn help(&self) -> String {
        match self {
            PendingError::File(f) => f.help(),
            PendingError::Invalid { path, .. } => format!(
                "the file was left as it was; its gates are posted on the tracker — remove {path} to forget them (the next unanswered gate is posted again)"
            ),
        }
    }
}

impl PendingGates {
    /// Reads the file; a missing file is no gate.
    pub fn load(path: &Path) -> Result<Self, PendingError> {
        let Some(bytes) = files::read_bytes(path)? else {
            return Ok(Self::default());
        };
        serde_json::from_slice(&bytes).map_err(|e| PendingError::Invalid {
            path: path.display().to_string(),
            why: e.to_string(),
        })
    }

    /// Replaces the file atomically, or removes it when no gate waits.
    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        if self.gates.is_empty() {
            return files::remove_if_present(path).map(drop);
        }
        let mut json = serde_json::to_vec_pretty(self).expect("pending gates serialise");
        json.push(b'\n');
        files::write_atomic(path, &json)
    }

    /// The waiting gate that `gate` about `subject` is.
    pub fn find(&self, gate: &str, subject: Option<u64>) -> Option<&PendingGate> {
        self.gates
            .iter()
            .find(|p| p.gate == gate && p.subject == subject)
    }

    pub fn remove(&mut self, id: &str) {
        self.gates.retain(|p| p.id != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(id: &str, gate: &str, subject: Option<u64>) -> PendingGate {
        PendingGate {
            id: id.into(),
            gate: gate.into(),
            question: "q".into(),
            subject,
            posted_on: 7,
            comment_id: 1,
            url: "u".into(),
            posted_at: "2026-05-09T14:00:00Z".parse().unwrap(),
            deadline: "2026-05-10T14:00:00Z".parse().unwrap(),
            code_sha1: None,
        }
    }

    #[test]
    fn a_gate_is_found_by_name_and_subject_and_the_file_goes_when_none_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("work.gates.json");
        let mut p = PendingGates {
            gates: vec![
                gate("g-1", "ambiguous-criteria", Some(20)),
                gate("g-2", "budget-escalation", None),
            ],
        };
        p.save(&path).unwrap();
        let back = PendingGates::load(&path).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.find("ambiguous-criteria", Some(20)).unwrap().id, "g-1");
        assert!(back.find("ambiguous-criteria", Some(21)).is_none());
        p.remove("g-1");
        p.remove("g-2");
        p.save(&path).unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn a_damaged_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("work.gates.json");
        std::fs::write(&path, "{\"gates\": 3}").unwrap();
        let err = PendingGates::load(&path).unwrap_err();
        assert!(err.to_string().contains("work.gates.json"), "{err}");
        assert!(err.help().contains("remove"), "{}", err.help());
    }
}
