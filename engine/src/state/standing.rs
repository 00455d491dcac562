//! The claims this clone left standing on the shared remote (issue 32):
//! `{skill}.claims.json` beside the witness (`.git/sdd-loop/`), so that
//! a clone alone on its backlog — which never reads the remote's claims —
//! still deletes its own once their lease has run out, in the push of a
//! later tick, and takes one back with the commit it knows rather than by
//! reading first.
//!
//! A tick whose work succeeded leaves its claims on the remote until
//! their lease ends (`crate::tick::claims`); each is recorded here with
//! the commit its ref points at. What this file says is a hint, never
//! the truth: every change it leads to is a compare-and-swap against that
//! commit, so a stale or lost file costs a refused push (the claim is
//! then forgotten here) or a ref left for another clone's read to sweep.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state::files;
use crate::state::journal::HeldClaim;
use crate::state::paths::Skill;
use crate::state::witness;

/// The file of `skill`'s standing claims in the project at `root`.
pub fn path(root: &Path, skill: Skill) -> PathBuf {
    witness::dir(root).join(format!("{skill}.claims.json"))
}

/// The claims left standing, by number.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Standing {
    pub claims: Vec<HeldClaim>,
}

impl Standing {
    /// What the file at `path` says; nothing when it is missing or not
    /// this file's shape (a hint: see the module doc).
    pub fn load(path: &Path) -> Self {
        files::read_bytes(path)
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Writes it (removes the file when nothing stands); a failure leaves
    /// the remote's refs for another clone's read to sweep.
    pub fn save(&self, path: &Path) {
        if self.claims.is_empty() {
            let _ = std::fs::remove_file(path);
            return;
        }
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let mut json = serde_json::to_vec_pretty(self).expect("standing claims serialise");
        json.push(b'\n');
        let _ = files::write_atomic(path, &json);
    }

    /// The commit `number`'s claim was left at, if it stands.
    pub fn commit_of(&self, number: u64) -> Option<&str> {
        self.claims
            .iter()
            .find(|c| c.number == number)
            .map(|c| c.commit.as_str())
    }

    /// Records `held` as standing (replacing what stood for the same
    /// numbers).
    pub fn add(&mut self, held: &[HeldClaim]) {
        self.forget(&held.iter().map(|h| h.number).collect::<Vec<_>>());
        self.claims.extend(held.iter().cloned());
        self.claims.sort_by_key(|c| c.number);
    }

    /// Forgets `numbers` (taken back, released, swept or refused).
    pub fn forget(&mut self, numbers: &[u64]) {
        self.claims.retain(|c| !numbers.contains(&c.number));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(number: u64, commit: &str) -> HeldClaim {
        HeldClaim {
            number,
            commit: commit.into(),
            expires_at: "2026-05-09T14:15:00Z".into(),
        }
    }

    #[test]
    fn claims_are_added_replaced_forgotten_and_the_file_goes_when_none_stand() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sdd-loop/work.claims.json");
        let mut s = Standing::load(&file);
        assert_eq!(s, Standing::default(), "no file: nothing stands");
        s.add(&[held(2, "b"), held(1, "a")]);
        s.add(&[held(2, "b2")]);
        s.save(&file);
        let back = Standing::load(&file);
        assert_eq!(back.claims, vec![held(1, "a"), held(2, "b2")]);
        assert_eq!(back.commit_of(2), Some("b2"));
        let mut back = back;
        back.forget(&[1, 2]);
        back.save(&file);
        assert!(!file.exists());
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "not json").unwrap();
        assert_eq!(
            Standing::load(&file),
            Standing::default(),
            "a hint, never an error"
        );
    }
}
