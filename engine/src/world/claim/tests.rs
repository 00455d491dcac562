use std::sync::{Arc, Barrier};

use super::*;
use crate::world::git::test_git as git;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn holder(clone: &str) -> Holder {
    Holder {
        host: "m1".into(),
        clone: clone.into(),
        pid: 42,
        session: None,
        clone_id: None,
    }
}

// ---------------------------------------------------------------- timing

#[test]
fn a_lease_is_takeable_only_past_its_expiry_by_the_skew_margin() {
    let timing = Timing::default();
    let lease = timing.lease(Skill::Work, 3, &holder("/a"), ts("2026-11-26T10:00:00Z"));
    assert_eq!(lease.expires_at, ts("2026-11-26T10:15:00Z"));
    assert!(!timing.takeable(&lease, ts("2026-11-26T10:15:00Z")));
    assert!(!timing.takeable(&lease, ts("2026-11-26T10:19:59Z")));
    assert!(timing.takeable(&lease, ts("2026-11-26T10:20:00Z")));
    assert!(!timing.must_stop(&lease, ts("2026-11-26T10:14:59Z")));
    assert!(timing.must_stop(&lease, ts("2026-11-26T10:15:00Z")));
    assert_eq!(timing.renew_at(&lease), ts("2026-11-26T10:05:00Z"));
}

/// Two machines whose clocks disagree by `skew_secs` (the taker's clock
/// minus the holder's): the true moment the holder stops (its clock at
/// the expiry) and the true moment the taker takes over (its clock at the
/// expiry plus the margin). Holder's clock = true time.
fn stop_and_take(timing: &Timing, skew_secs: i64) -> (Timestamp, Timestamp) {
    let lease = timing.lease(Skill::Work, 1, &holder("/a"), ts("2026-11-26T10:00:00Z"));
    let mut t = lease.taken_at;
    let mut stop = None;
    let mut take = None;
    while stop.is_none() || take.is_none() {
        let taker_clock = t + SignedDuration::from_secs(skew_secs);
        if stop.is_none() && timing.must_stop(&lease, t) {
            stop = Some(t);
        }
        if take.is_none() && timing.takeable(&lease, taker_clock) {
            take = Some(t);
        }
        t += SignedDuration::from_secs(1);
    }
    (stop.unwrap(), take.unwrap())
}

#[test]
fn no_two_holders_while_the_skew_is_within_the_margin() {
    let timing = Timing::default();
    for skew in (-300..=300).step_by(7).chain([-300, 300]) {
        let (stop, take) = stop_and_take(&timing, skew);
        assert!(
            stop <= take,
            "skew {skew} s: the holder stops at {stop}, the taker takes at {take}"
        );
    }
}

#[test]
fn with_no_margin_a_fast_clock_takes_a_claim_still_held() {
    let timing = Timing {
        skew: Duration::ZERO,
        ..Timing::default()
    };
    let (stop, take) = stop_and_take(&timing, 120);
    assert!(
        take < stop,
        "a taker 2 min ahead takes before the holder stops"
    );
}

// ------------------------------------------------------------- porcelain

#[test]
fn porcelain_lines_say_which_refs_were_refused() {
    let printed = "To /tmp/origin.git\n\
        *\tabc:refs/sdd-loop/claims/work/1\t[new reference]\n\
        !\tdef:refs/sdd-loop/claims/work/2\t[rejected] (stale info)\n\
        -\t:refs/sdd-loop/claims/work/3\t[deleted]\n\
        !\t123:refs/sdd-loop/claims/work/4\t[remote rejected] (reference already exists)\n\
        Done\n";
    let r = porcelain(printed);
    assert_eq!(
        r["refs/sdd-loop/claims/work/1"],
        (true, "[new reference]".into())
    );
    assert_eq!(
        r["refs/sdd-loop/claims/work/2"],
        (false, "[rejected] (stale info)".into())
    );
    assert!(r["refs/sdd-loop/claims/work/3"].0);
    assert!(!r["refs/sdd-loop/claims/work/4"].0);
    assert_eq!(r.len(), 4);
}

// ------------------------------------------------------------- real git

struct Origin {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Origin {
    /// A bare origin with one commit on main, and `clones` clones of it.
    fn new() -> Origin {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        git(&root, &["init", "--quiet", "--bare", "origin.git"]);
        git(&root, &["init", "--quiet", "seed"]);
        let seed = root.join("seed");
        std::fs::write(seed.join("README.md"), "x\n").unwrap();
        git(&seed, &["add", "README.md"]);
        git(&seed, &["commit", "--quiet", "-m", "first"]);
        git(
            &seed,
            &["push", "--quiet", "../origin.git", "HEAD:refs/heads/main"],
        );
        Origin { _dir: dir, root }
    }

    fn clone(&self, name: &str) -> Remote {
        git(&self.root, &["clone", "--quiet", "origin.git", name]);
        Remote {
            dir: self.root.join(name),
            remote: "origin".into(),
            vars: std::env::vars().collect(),
            limit: Duration::from_secs(20),
        }
    }
}

fn take(remote: &Remote, number: u64, expected: Option<String>, now: &str) -> Outcome {
    let lease = Timing::default().lease(
        Skill::Work,
        number,
        &holder(&remote.dir.display().to_string()),
        ts(now),
    );
    remote
        .push(&[Change::Take { lease, expected }])
        .unwrap()
        .remove(0)
}

#[test]
fn a_claim_is_read_back_from_another_clone_with_its_lease() {
    let origin = Origin::new();
    let (a, b) = (origin.clone("a"), origin.clone("b"));
    assert!(matches!(
        take(&a, 7, None, "2026-11-26T10:00:00Z"),
        Outcome::Done { .. }
    ));
    let seen = b.read(Skill::Work).unwrap();
    let lease = seen[&7].lease.as_ref().expect("a lease");
    assert_eq!(lease.number, 7);
    assert_eq!(lease.holder.clone, a.dir.display().to_string());
    assert_eq!(lease.expires_at, ts("2026-11-26T10:15:00Z"));
    assert!(b.read(Skill::Review).unwrap().is_empty());
    // The claims stay out of the branches a clone fetches by default.
    git(&b.dir, &["fetch", "--quiet", "origin"]);
    assert!(!git(&b.dir, &["for-each-ref"]).contains("claims"));
}

#[test]
fn a_second_take_of_a_held_claim_is_refused() {
    let origin = Origin::new();
    let (a, b) = (origin.clone("a"), origin.clone("b"));
    assert!(matches!(
        take(&a, 1, None, "2026-11-26T10:00:00Z"),
        Outcome::Done { .. }
    ));
    assert!(matches!(
        take(&b, 1, None, "2026-11-26T10:00:01Z"),
        Outcome::Refused { .. }
    ));
    // Several refs in one push: each answered on its own.
    let lease =
        |n| Timing::default().lease(Skill::Work, n, &holder("/b"), ts("2026-11-26T10:00:02Z"));
    let outcomes = b
        .push(&[
            Change::Take {
                lease: lease(1),
                expected: None,
            },
            Change::Take {
                lease: lease(2),
                expected: None,
            },
        ])
        .unwrap();
    assert!(matches!(outcomes[0], Outcome::Refused { .. }));
    assert!(matches!(outcomes[1], Outcome::Done { .. }));
}

#[test]
fn two_clones_racing_for_one_claim_from_a_barrier_never_both_win() {
    let origin = Origin::new();
    let (a, b) = (origin.clone("a"), origin.clone("b"));
    for number in 1..=20 {
        let barrier = Arc::new(Barrier::new(2));
        let racers: Vec<_> = [a.clone(), b.clone()]
            .into_iter()
            .map(|remote| {
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    take(&remote, number, None, "2026-11-26T10:00:00Z")
                })
            })
            .collect();
        let outcomes: Vec<Outcome> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        let won = outcomes
            .iter()
            .filter(|o| matches!(o, Outcome::Done { .. }))
            .count();
        assert_eq!(won, 1, "claim {number}: {outcomes:?}");
    }
}

#[test]
fn renewing_or_releasing_from_a_stale_read_is_refused() {
    let origin = Origin::new();
    let (a, b) = (origin.clone("a"), origin.clone("b"));
    let Outcome::Done {
        commit: Some(first),
    } = take(&a, 4, None, "2026-11-26T10:00:00Z")
    else {
        panic!("taken")
    };
    let timing = Timing::default();
    let renewed = timing.lease(Skill::Work, 4, &holder("/a"), ts("2026-11-26T10:05:00Z"));
    let outcome = a
        .push(&[Change::Renew {
            lease: renewed,
            expected: first.clone(),
        }])
        .unwrap()
        .remove(0);
    let Outcome::Done {
        commit: Some(second),
    } = outcome
    else {
        panic!("renewed: {outcome:?}")
    };
    // b read the claim before the renewal: its takeover is refused.
    let stale = b.push(&[Change::Take {
        lease: timing.lease(Skill::Work, 4, &holder("/b"), ts("2026-11-26T10:30:00Z")),
        expected: Some(first.clone()),
    }]);
    assert!(matches!(stale.unwrap()[0], Outcome::Refused { .. }));
    let release = |expected: &str| {
        a.push(&[Change::Release {
            skill: Skill::Work,
            number: 4,
            expected: expected.to_owned(),
        }])
        .unwrap()
        .remove(0)
    };
    assert!(matches!(release(&first), Outcome::Refused { .. }));
    assert!(matches!(release(&second), Outcome::Done { .. }));
    assert!(b.read(Skill::Work).unwrap().is_empty(), "released");
}

#[test]
fn an_expired_claim_is_taken_over_against_the_commit_that_was_read() {
    let origin = Origin::new();
    let (a, b) = (origin.clone("a"), origin.clone("b"));
    take(&a, 9, None, "2026-11-26T10:00:00Z");
    let seen = b.read(Skill::Work).unwrap().remove(&9).unwrap();
    let timing = Timing::default();
    let lease = seen.lease.as_ref().unwrap();
    assert!(!timing.takeable(lease, ts("2026-11-26T10:19:00Z")));
    assert!(timing.takeable(lease, ts("2026-11-26T10:20:00Z")));
    assert!(matches!(
        take(&b, 9, Some(seen.commit.clone()), "2026-11-26T10:20:00Z"),
        Outcome::Done { .. }
    ));
    let now_held = a.read(Skill::Work).unwrap().remove(&9).unwrap();
    assert_eq!(
        now_held.lease.unwrap().holder.clone,
        b.dir.display().to_string()
    );
}

#[test]
fn an_unreachable_remote_is_an_error_not_a_claim() {
    let origin = Origin::new();
    let mut a = origin.clone("a");
    git(
        &a.dir,
        &["remote", "set-url", "origin", "/nonexistent/origin.git"],
    );
    assert!(matches!(
        a.read(Skill::Work),
        Err(ClaimError::Unreachable { .. })
    ));
    let lease = Timing::default().lease(Skill::Work, 1, &holder("/a"), ts("2026-11-26T10:00:00Z"));
    assert!(matches!(
        a.push(&[Change::Take {
            lease,
            expected: None
        }]),
        Err(ClaimError::Unreachable { .. })
    ));
    a.remote = "no-such-remote".into();
    assert!(a.read(Skill::Work).is_err());
}
