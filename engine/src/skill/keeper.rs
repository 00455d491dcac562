//! The keeper of a tick's claims while its work runs (issue 32): the
//! claims the journal holds ([`crate::state::journal::Claims`]) are
//! renewed when their lease reaches [`Timing::renew_at`], by the tick's
//! clock — from a shell by the skill's guard, in a session by the hooks
//! as they run.
//!
//! A renewal is a compare-and-swap against the commit the journal holds:
//! refused, the claim was taken by another clone (its lease had lapsed),
//! so it is lost. A remote that cannot be reached leaves the claim held
//! until the holder's own clock reaches its expiry ([`Timing::must_stop`]);
//! then it is lost too. Every loss is written to the journal (so `end`
//! records it and the hooks refuse the PR for it) and told to the skill
//! on its events stream (`claim_lost`). When no claim is left the work
//! must stop ([`Tended::stop`]): the guard stops the skill's group.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;

use crate::os::clock::{self, Clock};
use crate::state::journal::{Claims, Journal, LostClaim};
use crate::state::paths::Skill;
use crate::state::protocol::SkillEvent;
use crate::world::claim::{Change, Holder, Outcome, Remote, Timing};

/// The remote, lease timing and holder the journal's claims were taken
/// with, for the process `pid` (`vars`: the environment git runs with).
pub fn remote_of(
    claims: &Claims,
    pid: u32,
    vars: BTreeMap<String, String>,
) -> (Remote, Timing, Holder) {
    (
        Remote {
            dir: claims.clone.clone(),
            remote: claims.remote.clone(),
            vars,
            limit: Duration::from_secs(claims.limit_secs),
        },
        Timing {
            lease: Duration::from_secs(claims.lease_secs),
            skew: Duration::from_secs(claims.skew_secs),
        },
        Holder {
            host: claims.host.clone(),
            clone: crate::world::claim::clone_name(&claims.clone),
            pid,
            session: None,
        },
    )
}

/// Where the keeper reads and tells.
#[derive(Debug, Clone)]
pub struct Keeper {
    /// The open iteration's journal.
    pub journal: PathBuf,
    /// The skill's events stream, where a loss is told.
    pub events: Option<PathBuf>,
    /// The environment git runs with.
    pub vars: BTreeMap<String, String>,
}

/// What one look at the claims found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tended {
    /// Claims renewed now.
    pub renewed: Vec<u64>,
    /// Claims lost now.
    pub lost: Vec<u64>,
    /// Every claim the tick holds is lost: its work must stop.
    pub stop: bool,
    /// Issues or PRs whose claim is lost (now or before).
    pub lost_so_far: Vec<u64>,
}

impl Keeper {
    /// Renews the claims that are due at `now`, records what was lost.
    pub fn tend(&self, clock: &dyn Clock) -> Tended {
        let Ok(Some(journal)) = Journal::load(&self.journal) else {
            return Tended::default();
        };
        let Some(mut claims) = journal.claims.clone() else {
            return Tended::default();
        };
        let skill = journal.request.skill;
        let now = clock.now();
        let tended = renew_due(&mut claims, skill, journal.pid, &self.vars, now);
        if !tended.renewed.is_empty() || !tended.lost.is_empty() {
            let _ = Journal::record_claims(&self.journal, &claims);
        }
        for lost in claims
            .lost
            .iter()
            .filter(|l| tended.lost.contains(&l.number))
        {
            self.tell(lost);
        }
        Tended {
            stop: claims.held.is_empty() && !claims.lost.is_empty(),
            lost_so_far: claims.lost.iter().map(|l| l.number).collect(),
            ..tended
        }
    }

    fn tell(&self, lost: &LostClaim) {
        let Some(events) = &self.events else {
            return;
        };
        let event = SkillEvent::ClaimLost {
            number: lost.number,
            reason: lost.reason.clone(),
        };
        let Ok(line) = serde_json::to_string(&event) else {
            return;
        };
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(events)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// Renews the claims of `claims` whose renewal is due at `now` (one
/// push), moving the lost ones to `claims.lost`.
pub fn renew_due(
    claims: &mut Claims,
    skill: Skill,
    pid: u32,
    vars: &BTreeMap<String, String>,
    now: Timestamp,
) -> Tended {
    let (remote, timing, holder) = remote_of(claims, pid, vars.clone());
    let mut tended = Tended::default();
    let expiry = |at: &str| clock::parse(at).unwrap_or(now);
    let due: Vec<usize> = (0..claims.held.len())
        .filter(|i| {
            let lease = timing.lease(skill, claims.held[*i].number, &holder, now);
            let held = crate::world::claim::Lease {
                expires_at: expiry(&claims.held[*i].expires_at),
                ..lease
            };
            now >= timing.renew_at(&held)
        })
        .collect();
    if due.is_empty() {
        return tended;
    }
    let leases: Vec<_> = due
        .iter()
        .map(|i| timing.lease(skill, claims.held[*i].number, &holder, now))
        .collect();
    let changes: Vec<Change> = due
        .iter()
        .zip(&leases)
        .map(|(i, lease)| Change::Renew {
            lease: lease.clone(),
            expected: claims.held[*i].commit.clone(),
        })
        .collect();
    let mut gone: Vec<(usize, String)> = Vec::new();
    match remote.push(&changes) {
        Ok(outcomes) => {
            for ((i, lease), outcome) in due.iter().zip(&leases).zip(outcomes) {
                match outcome {
                    Outcome::Done { commit } => {
                        let held = &mut claims.held[*i];
                        held.commit = commit.unwrap_or_default();
                        held.expires_at = clock::format(lease.expires_at);
                        tended.renewed.push(held.number);
                    }
                    Outcome::Refused { reason } => {
                        gone.push((*i, format!("taken by another clone ({reason})")));
                    }
                }
            }
        }
        Err(e) => {
            for i in &due {
                if now >= expiry(&claims.held[*i].expires_at) {
                    gone.push((*i, format!("not renewed before its lease ended ({e})")));
                }
            }
        }
    }
    gone.sort_by_key(|g| std::cmp::Reverse(g.0));
    for (i, reason) in gone {
        let held = claims.held.remove(i);
        tended.lost.push(held.number);
        claims.lost.push(LostClaim {
            number: held.number,
            reason,
            at: clock::format(now),
        });
    }
    tended.lost.sort_unstable();
    tended
}

/// The journal path and events stream the guard keeps claims for, from
/// the variables the engine starts it with.
pub fn from_vars(vars: &BTreeMap<String, String>) -> Option<Keeper> {
    let journal = vars.get(ENV_JOURNAL).filter(|v| !v.is_empty())?;
    Some(Keeper {
        journal: PathBuf::from(journal),
        events: vars
            .get(crate::state::protocol::ENV_EVENTS)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        vars: vars.clone(),
    })
}

/// The variable the engine names the journal in for the guard.
pub const ENV_JOURNAL: &str = "SDD_LOOP_JOURNAL";

/// Whether `path`'s journal holds claims at all (the guard keeps none
/// otherwise).
pub fn holds_claims(path: &Path) -> bool {
    matches!(Journal::load(path), Ok(Some(Journal { claims: Some(c), .. })) if !c.held.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::journal::HeldClaim;
    use crate::world::git::test_git as git;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    /// A clone of a bare origin holding claim #1 taken at 10:00 (expires
    /// 10:15, renewal due from 10:05).
    fn held() -> (tempfile::TempDir, Claims) {
        let tmp = tempfile::tempdir().unwrap();
        git(tmp.path(), &["init", "-q", "--bare", "origin.git"]);
        let clone = tmp.path().join("clone");
        std::fs::create_dir(&clone).unwrap();
        git(&clone, &["init", "-q"]);
        git(&clone, &["remote", "add", "origin", "../origin.git"]);
        let mut claims = Claims {
            remote: "origin".into(),
            clone,
            host: "m1".into(),
            lease_secs: 900,
            skew_secs: 300,
            limit_secs: 20,
            held: vec![],
            lost: vec![],
            held_by_others: vec![],
        };
        let (remote, timing, holder) = remote_of(&claims, 7, std::env::vars().collect());
        let lease = timing.lease(Skill::Work, 1, &holder, ts("2026-11-26T10:00:00Z"));
        let done = remote
            .push(&[Change::Take {
                lease,
                expected: None,
            }])
            .unwrap();
        let Outcome::Done {
            commit: Some(commit),
        } = &done[0]
        else {
            panic!("{done:?}")
        };
        claims.held.push(HeldClaim {
            number: 1,
            commit: commit.clone(),
            expires_at: "2026-11-26T10:15:00Z".into(),
        });
        (tmp, claims)
    }

    fn vars() -> BTreeMap<String, String> {
        std::env::vars().collect()
    }

    #[test]
    fn a_claim_is_renewed_only_once_due_and_then_holds_longer() {
        let (_tmp, mut claims) = held();
        let early = renew_due(
            &mut claims,
            Skill::Work,
            7,
            &vars(),
            ts("2026-11-26T10:04:00Z"),
        );
        assert_eq!(early, Tended::default(), "not due before 10:05");
        let before = claims.held[0].commit.clone();
        let due = renew_due(
            &mut claims,
            Skill::Work,
            7,
            &vars(),
            ts("2026-11-26T10:05:00Z"),
        );
        assert_eq!(due.renewed, [1]);
        assert_ne!(claims.held[0].commit, before, "a new lease commit");
        assert_eq!(claims.held[0].expires_at, "2026-11-26T10:20:00Z");
    }

    /// The lease lapsed and another clone took the claim over: the
    /// renewal's compare-and-swap is refused, so the claim is lost.
    #[test]
    fn a_claim_taken_over_elsewhere_is_lost_at_the_next_renewal() {
        let (_tmp, mut claims) = held();
        let mut theirs = claims.clone();
        theirs.host = "m2".into();
        let taken = renew_due(
            &mut theirs,
            Skill::Work,
            9,
            &vars(),
            ts("2026-11-26T10:21:00Z"),
        );
        assert_eq!(taken.renewed, [1]);
        let ours = renew_due(
            &mut claims,
            Skill::Work,
            7,
            &vars(),
            ts("2026-11-26T10:10:00Z"),
        );
        assert_eq!(ours.lost, [1]);
        assert!(claims.held.is_empty());
        assert!(
            claims.lost[0].reason.starts_with("taken by another clone"),
            "{:?}",
            claims.lost
        );
    }

    #[test]
    fn an_unreachable_remote_keeps_the_claim_until_its_lease_ends_by_our_clock() {
        let (_tmp, mut claims) = held();
        claims.remote = "/nonexistent/origin.git".into();
        let before = renew_due(
            &mut claims,
            Skill::Work,
            7,
            &vars(),
            ts("2026-11-26T10:14:59Z"),
        );
        assert_eq!(before, Tended::default(), "held until the expiry");
        let at = renew_due(
            &mut claims,
            Skill::Work,
            7,
            &vars(),
            ts("2026-11-26T10:15:00Z"),
        );
        assert_eq!(at.lost, [1]);
        assert!(
            claims.lost[0]
                .reason
                .starts_with("not renewed before its lease ended")
        );
    }
}
