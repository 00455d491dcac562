//! The keeper of a tick's claims while its work runs (issue 32): the
//! claims the journal holds ([`crate::state::journal::Claims`]) are
//! renewed when their lease reaches [`Timing::renew_at`], by the tick's
//! clock — from a shell by the skill's guard, in a session by the hooks
//! as they run.
//!
//! A renewal is a compare-and-swap against the commit the journal holds:
//! refused, the claim was taken by another clone (its lease had lapsed),
//! so it is lost. A remote that cannot be reached leaves the claim held
//! until the holder's own clock reaches its stop time, a margin before the
//! expiry ([`Timing::stop_at`]); then it is lost too. The lease is judged
//! by the clock *after* the push, and the push is never waited for past
//! the stop time (its limit is the time left, when that is shorter than
//! `SDD_LOOP_CLAIM_TIMEOUT`): a remote that hangs cannot keep the work
//! going past the lease. Every loss is written to the journal (so `end`
//! records it and the hooks refuse the PR for it) and told to the skill
//! on its events stream (`claim_lost`). When no claim is left the work
//! must stop ([`Tended::stop`]): the guard stops the skill's group.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
            clone_id: claims.clone_id.clone(),
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
        let tended = renew_due(&mut claims, skill, journal.pid, &self.vars, clock);
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

/// Renews the claims of `claims` whose renewal is due by `clock` (one
/// push), moving the lost ones to `claims.lost`: those refused by the
/// remote, and those not renewed by their stop time — judged by the clock
/// when the push has returned, and by a push that the time left cut short.
pub fn renew_due(
    claims: &mut Claims,
    skill: Skill,
    pid: u32,
    vars: &BTreeMap<String, String>,
    clock: &dyn Clock,
) -> Tended {
    let (mut remote, timing, holder) = remote_of(claims, pid, vars.clone());
    let mut tended = Tended::default();
    let now = clock.now();
    let expiry = |at: &str| clock::parse(at).unwrap_or(now);
    let mut gone: Vec<(usize, String)> = Vec::new();
    let mut due: Vec<usize> = Vec::new();
    for (i, held) in claims.held.iter().enumerate() {
        let expires_at = expiry(&held.expires_at);
        let lease = crate::world::claim::Lease {
            expires_at,
            ..timing.lease(skill, held.number, &holder, now)
        };
        if now >= timing.stop_at(expires_at) {
            gone.push((i, "not renewed before its lease ended".to_owned()));
        } else if now >= timing.renew_at(&lease) {
            due.push(i);
        }
    }
    if !due.is_empty() {
        // The push may take only the time left before the first due
        // claim's stop time.
        let left = due
            .iter()
            .map(|i| timing.stop_at(expiry(&claims.held[*i].expires_at)))
            .min()
            .map_or(Duration::ZERO, |stop| {
                Duration::try_from(now.duration_until(stop)).unwrap_or(Duration::ZERO)
            });
        let cut_short = left < remote.limit;
        remote.limit = remote.limit.min(left);
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
        let pushed = remote.push(&changes);
        let after = clock.now();
        match pushed {
            Ok(outcomes) => {
                for ((i, lease), outcome) in due.iter().zip(&leases).zip(outcomes) {
                    match outcome {
                        // The remote swapped our commit for the new lease: no
                        // other clone took it before, and none may before the
                        // new expiry (written from the clock before the push).
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
                let timed_out = matches!(e, crate::world::claim::ClaimError::TimedOut { .. });
                for i in &due {
                    let stop = timing.stop_at(expiry(&claims.held[*i].expires_at));
                    if after >= stop || (timed_out && cut_short) {
                        gone.push((*i, format!("not renewed before its lease ended ({e})")));
                    }
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
            at: clock::format(clock.now()),
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
    use jiff::Timestamp;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn at(s: &str) -> crate::os::clock::ManualClock {
        crate::os::clock::ManualClock::at_str(s)
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
            clone_id: None,
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
            &at("2026-11-26T10:04:00Z"),
        );
        assert_eq!(early, Tended::default(), "not due before 10:05");
        let before = claims.held[0].commit.clone();
        let due = renew_due(
            &mut claims,
            Skill::Work,
            7,
            &vars(),
            &at("2026-11-26T10:05:00Z"),
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
        let (remote, timing, holder) = remote_of(&theirs, 9, vars());
        let taken = remote
            .push(&[Change::Take {
                lease: timing.lease(Skill::Work, 1, &holder, ts("2026-11-26T10:21:00Z")),
                expected: Some(claims.held[0].commit.clone()),
            }])
            .unwrap();
        assert!(matches!(taken[0], Outcome::Done { .. }), "{taken:?}");
        let ours = renew_due(
            &mut claims,
            Skill::Work,
            7,
            &vars(),
            &at("2026-11-26T10:10:00Z"),
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
    fn an_unreachable_remote_keeps_the_claim_until_its_stop_time_by_our_clock() {
        let (_tmp, mut claims) = held();
        claims.remote = "/nonexistent/origin.git".into();
        let before = renew_due(
            &mut claims,
            Skill::Work,
            7,
            &vars(),
            &at("2026-11-26T10:14:49Z"),
        );
        assert_eq!(
            before,
            Tended::default(),
            "held until 10 s before the expiry"
        );
        let stop = renew_due(
            &mut claims,
            Skill::Work,
            7,
            &vars(),
            &at("2026-11-26T10:14:50Z"),
        );
        assert_eq!(stop.lost, [1]);
        assert!(
            claims.lost[0]
                .reason
                .starts_with("not renewed before its lease ended")
        );
    }

    /// A `git-remote-hang` on `PATH`: a remote `hang::…` that accepts the
    /// connection and never answers.
    fn hanging_remote(dir: &Path) -> BTreeMap<String, String> {
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let helper = bin.join("git-remote-hang");
        std::fs::write(&helper, "#!/bin/sh\nexec sleep 3600\n").unwrap();
        std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut v = vars();
        let path = v.get("PATH").cloned().unwrap_or_default();
        v.insert("PATH".into(), format!("{}:{path}", bin.display()));
        v
    }

    /// Regression: a renewal's push that blocked for the whole
    /// `SDD_LOOP_CLAIM_TIMEOUT` (here 400 s) kept the work going past the
    /// lease by the holder's own clock, and the claim was recorded
    /// `standing`, never lost. The push now has only the time left before
    /// the stop time, and the claim is lost when it runs out.
    #[test]
    fn a_remote_that_hangs_cannot_keep_the_work_past_its_lease() {
        let (tmp, mut claims) = held();
        claims.remote = "hang::nowhere".into();
        claims.limit_secs = 400;
        let vars = hanging_remote(tmp.path());
        let started = std::time::Instant::now();
        // 10:14:47: three seconds before the stop time (10:14:50).
        let tended = renew_due(
            &mut claims,
            Skill::Work,
            7,
            &vars,
            &at("2026-11-26T10:14:47Z"),
        );
        let took = started.elapsed();
        assert_eq!(tended.lost, [1], "{:?}", claims.lost);
        assert!(claims.held.is_empty());
        assert!(
            took < Duration::from_secs(60),
            "the push was waited for {took:?}, past the time left on the lease"
        );
        assert!(
            claims.lost[0]
                .reason
                .contains("got no answer from `hang::nowhere` within 3 s"),
            "{:?}",
            claims.lost
        );
    }

    /// The time left is what bounds the push only when it is the shorter:
    /// a remote that fails at once with time to spare keeps the claim for
    /// the next look.
    #[test]
    fn a_quick_failure_with_time_left_keeps_the_claim() {
        let (_tmp, mut claims) = held();
        claims.remote = "/nonexistent/origin.git".into();
        let tended = renew_due(
            &mut claims,
            Skill::Work,
            7,
            &vars(),
            &at("2026-11-26T10:14:47Z"),
        );
        assert_eq!(tended, Tended::default());
        assert_eq!(claims.held.len(), 1);
    }
}
