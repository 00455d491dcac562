//! The interrupted-iteration journal `.sdd/loop/{skill}.inflight.json`
//! (`docs/src/architecture.md`, "The data through a tick"): the hand-over
//! between the two halves of a tick.
//!
//! `begin` writes it after every gate is answered and before the work
//! starts; `end` reads it — in the same process (the wrapper tick) or in a
//! later one (an in-session tick) — and removes it once the tick's history
//! line and budget are on disk. Everything `end` needs to account and
//! report the iteration is here, so the halves share nothing in memory.
//!
//! A journal found by a later tick that holds the lock (so its holder is
//! gone) marks an iteration that was killed mid-flight: recovery turns it
//! into an `errored` history line with root cause `interrupted`, carrying
//! the spend and PRs the work had reported (its result if it got that far,
//! else its progress events), so nothing is lost before counters resume.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state::files::{self, Durability, FileError};
use crate::state::history::{ActiveWorktree, TrackedPr};
use crate::state::protocol::SkillRequest;

/// The lines of the status block a tick's phases decide; `begin` hands
/// them to `end` in the journal.
#[derive(
    Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Shown {
    /// `Backlog: …` (work) or `Tracked PR: …` (review).
    pub context: String,
    /// `Iteration plan: …`.
    pub plan: String,
    /// `Concurrency: …`.
    pub concurrency: String,
    /// `Outcome: …`, decided when the tick ends.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub outcome: String,
}

/// Who does the work between `begin` and `end`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Driver {
    /// The engine runs the skill command itself (`sdd-loop work --loop`).
    #[default]
    Wrapper,
    /// The calling agent session does the work (`begin` … `end`).
    Session,
}

/// What a tick records before it dispatches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Journal {
    pub iteration: u64,
    pub pid: u32,
    #[serde(default)]
    pub process_start: Option<u64>,
    /// The tick's start (RFC 3339).
    pub started_at: String,
    /// The run the iteration belongs to (`budget.json` `started_at`).
    pub run_started_at: String,
    /// Elapsed seconds of the run when the tick started.
    pub seconds_at_start: u64,
    /// The selected work, as handed to the skill.
    pub request: SkillRequest,
    /// PRs tracked at the start of the tick.
    pub tracked_prs: Vec<TrackedPr>,
    /// Work-skill backlog snapshot at entry.
    #[serde(default)]
    pub backlog_snapshot: Option<Vec<u64>>,
    /// Gates answered at entry, already redacted.
    #[serde(default)]
    pub gates: Vec<crate::state::history::GateRecord>,
    #[serde(default)]
    pub driver: Driver,
    /// Worktrees the run had left on disk at the start of the tick.
    #[serde(default)]
    pub worktrees: Vec<ActiveWorktree>,
    /// The status block's lines `begin` decided.
    #[serde(default)]
    pub shown: Shown,
    /// What the gates decided, for the `Outcome:` line.
    #[serde(default)]
    pub gate_outcomes: Vec<String>,
    /// `review --pr N`: single-PR mode.
    #[serde(default)]
    pub single_pr: Option<u64>,
    /// The budget file the tick uses (`--budget-file`, resolved).
    #[serde(default)]
    pub budget_file: Option<PathBuf>,
    /// The CLAUDE.md the tick prices and redacts with.
    #[serde(default)]
    pub claude_md: Option<PathBuf>,
    /// The wrapped skill's process group, once it runs: a tick that
    /// reaps this journal's dead holder stops the group first, so no
    /// orphaned skill runs beside the next one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill_process: Option<SkillProcess>,
    /// The claims on the shared remote the tick holds for its work
    /// (issue 32): renewed while the work runs, released by `end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims: Option<Claims>,
    /// The usage-window ceilings the iteration opened with, in percent
    /// (`--max-5h-percent`, `--max-week-percent`): a session's `end` is
    /// not given the loop prompt's flags, and checks its figures against
    /// these (docs/src/usage-windows.md).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub window_ceilings: BTreeMap<crate::state::windows::Window, f64>,
}

/// A tick's claims on the shared remote, as the journal keeps them: what
/// the guard (from a shell) or the hooks (in a session) need to renew
/// them, and what `end` releases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// The remote the claims are on, as the clone names it.
    pub remote: String,
    /// The clone's directory (git runs there).
    pub clone: PathBuf,
    /// The machine's name, as the leases say it.
    pub host: String,
    /// The clone's identity, as the leases say it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone_id: Option<String>,
    /// How long a lease lasts from its last renewal, in seconds.
    pub lease_secs: u64,
    /// The clock margin another clone waits past an expiry, in seconds.
    pub skew_secs: u64,
    /// The longest one git command may take, in seconds.
    pub limit_secs: u64,
    /// The claims held, in plan order.
    pub held: Vec<HeldClaim>,
    /// Numbers whose claim was lost while the work ran (taken by another
    /// clone, or not renewed before it lapsed): their work must stop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost: Vec<LostClaim>,
    /// Who held the candidates this tick passed over (`#N by HOLDER until
    /// T`), for the history line `end` writes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_by_others: Vec<String>,
}

/// One claim held: the issue or PR, the commit its ref points at (the
/// expected value of the next renewal or release) and its expiry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldClaim {
    pub number: u64,
    pub commit: String,
    /// RFC 3339, by this clone's clock.
    pub expires_at: String,
}

/// A claim lost while the work ran, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LostClaim {
    pub number: u64,
    pub reason: String,
    /// RFC 3339, by this clone's clock.
    pub at: String,
}

/// A running skill's process group and its leader's start time (so a
/// reused group id is not taken for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillProcess {
    pub pgid: u32,
    #[serde(default)]
    pub start: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("interrupted-iteration journal {path} is unreadable: {detail}")]
    Invalid { path: String, detail: String },
}

impl Journal {
    /// Records the running skill's process group in the journal at `path`
    /// (right after the skill starts). Not waited for on disk: the group
    /// matters to a tick that finds its engine killed, and a power failure
    /// leaves no group to stop.
    pub fn record_skill_process(path: &Path, process: SkillProcess) -> Result<(), JournalError> {
        if let Some(mut journal) = Self::load(path)? {
            journal.skill_process = Some(process);
            journal.save_with(path, Durability::OldOrNew)?;
        }
        Ok(())
    }

    /// Records the claims' new state in the journal at `path` (after a
    /// renewal or a loss).
    pub fn record_claims(path: &Path, claims: &Claims) -> Result<(), JournalError> {
        if let Some(mut journal) = Self::load(path)? {
            journal.claims = Some(claims.clone());
            journal.save(path)?;
        }
        Ok(())
    }

    /// Whether `line` records this journal's iteration: written under the
    /// lock for the same run, iteration and start, and counting the
    /// iteration as used. A line halted at entry carries the iteration it
    /// would have run without counting it, so a later tick that runs that
    /// iteration number is not mistaken for it.
    pub fn recorded_by(&self, line: &crate::state::history::HistoryLine) -> bool {
        let snapshot = line.budget_snapshot.as_ref();
        line.iteration == Some(self.iteration)
            && line.authoritative()
            && line.started_at.as_deref() == Some(self.started_at.as_str())
            && snapshot.and_then(|s| s.iterations_used) == Some(self.iteration)
            && snapshot
                .and_then(|s| s.run_started_at.as_deref())
                .is_none_or(|r| r == self.run_started_at)
    }

    /// Whether a tick still has this iteration to recover: it belongs to
    /// the run started at `run_started_at`, and no line of `lines` (the
    /// history's last ones) records it.
    pub fn unrecorded_in(
        &self,
        lines: &[crate::state::history::HistoryLine],
        run_started_at: &str,
    ) -> bool {
        self.run_started_at == run_started_at && !lines.iter().any(|l| self.recorded_by(l))
    }

    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        self.save_with(path, Durability::Durable)
    }

    fn save_with(&self, path: &Path, durability: Durability) -> Result<(), FileError> {
        let mut json = serde_json::to_vec_pretty(self).expect("journals serialise");
        json.push(b'\n');
        files::write_atomic_with(path, &json, durability)
    }

    pub fn load(path: &Path) -> Result<Option<Self>, JournalError> {
        match files::read_bytes(path)? {
            None => Ok(None),
            Some(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| JournalError::Invalid {
                        path: path.display().to_string(),
                        detail: e.to_string(),
                    })
            }
        }
    }

    pub fn remove(path: &Path) -> Result<bool, FileError> {
        files::remove_if_present(path)
    }

    /// Removes the journal of an iteration history and budget.json both
    /// record. Not waited for on disk: a journal back after a power
    /// failure is the state of crash point `after-budget`, which the next
    /// tick reads as recorded.
    pub fn remove_recorded(path: &Path) -> Result<bool, FileError> {
        files::remove_if_present_with(path, Durability::OldOrNew)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::paths::Skill;
    use crate::state::protocol::PROTOCOL_VERSION;

    #[test]
    fn round_trip_and_removal() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("work.inflight.json");
        assert!(Journal::load(&path).unwrap().is_none());
        let j = Journal {
            iteration: 2,
            pid: 42,
            process_start: Some(9),
            started_at: "2026-05-09T14:50:00Z".into(),
            run_started_at: "2026-05-09T14:00:00Z".into(),
            seconds_at_start: 60,
            request: SkillRequest {
                protocol: PROTOCOL_VERSION,
                skill: Skill::Work,
                iteration: 2,
                repository: None,
                issues: vec![],
                prs: vec![],
                max_new_prs: None,
                no_chain: true,
                dry_run: false,
            },
            tracked_prs: vec![],
            backlog_snapshot: Some(vec![1]),
            gates: vec![],
            driver: Driver::Session,
            worktrees: vec![],
            shown: Shown::default(),
            gate_outcomes: vec![],
            single_pr: None,
            budget_file: None,
            claude_md: None,
            skill_process: Some(SkillProcess {
                pgid: 77,
                start: Some(5),
            }),
            claims: Some(Claims {
                remote: "origin".into(),
                clone: "/work/clone".into(),
                host: "m1".into(),
                clone_id: None,
                lease_secs: 900,
                skew_secs: 300,
                limit_secs: 20,
                held: vec![HeldClaim {
                    number: 3,
                    commit: "abc".into(),
                    expires_at: "2026-05-09T15:05:00Z".into(),
                }],
                lost: vec![],
                held_by_others: vec![],
            }),
            window_ceilings: BTreeMap::new(),
        };
        j.save(&path).unwrap();
        assert_eq!(Journal::load(&path).unwrap().unwrap(), j);
        assert!(Journal::remove(&path).unwrap());
        std::fs::write(&path, "{").unwrap();
        assert!(matches!(
            Journal::load(&path).unwrap_err(),
            JournalError::Invalid { .. }
        ));
    }
}
