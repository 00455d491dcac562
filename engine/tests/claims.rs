//! Claims on the shared remote (issue 32), on real git: each sandbox is a
//! clone of one bare repository, the tracker and the skill are faked. Two
//! ticks plan disjoint issues; a claim another clone holds sends the tick
//! to the next issue; an expired lease is taken over, an unexpired one is
//! not; an unreachable remote is exit 69 with nothing worked; `end`
//! releases the claims of work that failed and leaves those of work that
//! succeeded standing; a tick of the same clone takes its claims back.

#[path = "git/mod.rs"]
mod git;
#[expect(dead_code, reason = "the tick tests use the rest of the fakes")]
mod support;

use std::time::Duration;

use git::git;
use sdd_loop::config::{ClaimSettings, TickConfig};
use sdd_loop::exit;
use sdd_loop::state::history::{Outcome, PrState};
use sdd_loop::state::paths::Skill;
use sdd_loop::tick::{EndFlags, EndInput};
use sdd_loop::world::claim::{self, Change, Holder, Remote, Timing};
use support::*;

/// One bare origin; clones made on demand.
struct Origin {
    dir: tempfile::TempDir,
}

impl Origin {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        git(
            dir.path(),
            &["init", "-q", "--bare", "-b", "main", "origin.git"],
        );
        Self { dir }
    }

    fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("origin.git")
    }

    /// A sandbox whose root is a clone of this origin, with issues 1–4.
    fn clone_sandbox(&self) -> Sandbox {
        let s = Sandbox::new().with_issues((1..=4).map(|n| issue(n, CLEAR)).collect());
        git(s.root(), &["init", "-q", "-b", "main"]);
        git(
            s.root(),
            &["remote", "add", "origin", self.path().to_str().unwrap()],
        );
        s
    }

    /// The claim refs on the origin: number → commit.
    fn claims(&self, skill: Skill) -> Vec<u64> {
        let out = git(
            &self.path(),
            &["for-each-ref", "--format=%(refname)", claim::NAMESPACE],
        );
        let prefix = format!("{}/{skill}/", claim::NAMESPACE);
        let mut numbers: Vec<u64> = out
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix)?.parse().ok())
            .collect();
        numbers.sort_unstable();
        numbers
    }

    /// The lease the origin holds for `number`.
    fn lease(&self, skill: Skill, number: u64) -> claim::Lease {
        let message = git(
            &self.path(),
            &["log", "-1", "--format=%B", &claim::ref_name(skill, number)],
        );
        serde_json::from_str(message.trim()).unwrap()
    }

    /// Another clone, on machine `m2`, takes `number` at `at` (its clock).
    fn taken_elsewhere(&self, number: u64, at: &str) {
        let other = self.dir.path().join("elsewhere");
        if !other.exists() {
            std::fs::create_dir(&other).unwrap();
            git(&other, &["init", "-q", "-b", "main"]);
        }
        let remote = Remote {
            dir: other.clone(),
            remote: self.path().display().to_string(),
            vars: std::env::vars().collect(),
            limit: Duration::from_secs(20),
        };
        let holder = Holder {
            host: "m2".into(),
            clone: "/home/ci/repo".into(),
            pid: 9,
            session: None,
            clone_id: None,
        };
        let lease = Timing::default().lease(Skill::Work, number, &holder, at.parse().unwrap());
        let done = remote
            .push(&[Change::Take {
                lease,
                expected: None,
            }])
            .unwrap();
        assert!(matches!(done[0], claim::Outcome::Done { .. }), "{done:?}");
    }
}

fn claiming(s: &Sandbox, max_agents: u64) -> TickConfig {
    let mut cfg = s.cfg(Skill::Work);
    cfg.max_agents = max_agents;
    cfg.environment = std::env::vars().collect();
    cfg.claims = Some(ClaimSettings::new("origin", "m1"));
    cfg
}

fn planned(r: &Ran) -> Vec<u64> {
    r.summary["request"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["number"].as_u64().unwrap())
        .collect()
}

fn claims_line(s: &Sandbox) -> serde_json::Value {
    s.last(Skill::Work).extra["claims"].clone()
}

#[test]
fn two_clones_at_once_plan_disjoint_issues() {
    let origin = Origin::new();
    let mut a = origin.clone_sandbox();
    let mut b = origin.clone_sandbox();
    a.procs.0 = vec![100];
    let first = a.begin(&claiming(&a, 2), 100);
    assert_eq!(first.code, exit::TICK_DONE, "{}{}", first.out, first.err);
    assert_eq!(planned(&first), [1, 2]);
    let second = b.begin(&claiming(&b, 2), 200);
    assert_eq!(second.code, exit::TICK_DONE, "{}{}", second.out, second.err);
    assert_eq!(planned(&second), [3, 4], "{}", second.out);
    assert!(
        second
            .out
            .contains("Claimed #3, #4; passed over issues other clones hold: #1 by m1:"),
        "{}",
        second.out
    );
    assert_eq!(origin.claims(Skill::Work), [1, 2, 3, 4]);
}

#[test]
fn a_claim_held_elsewhere_sends_the_tick_to_the_next_issue_and_finished_work_stands() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    origin.taken_elsewhere(1, "2026-05-09T13:59:00Z");
    let r = s.tick(&claiming(&s, 1));
    assert_eq!(r.code, exit::TICK_DONE, "{}{}", r.out, r.err);
    assert_eq!(s.runner.requests[0].issues[0].number, 2);
    assert!(
        r.out.contains(
            "passed over issues other clones hold: #1 by m2:/home/ci/repo (pid 9) until 2026-05-09T14:14:00Z"
        ),
        "{}",
        r.out
    );
    assert_eq!(
        origin.claims(Skill::Work),
        [1, 2],
        "#2 left standing: its work succeeded"
    );
    let line = claims_line(&s);
    assert_eq!(line["remote"], "origin");
    assert_eq!(line["taken"], serde_json::json!([2]));
    assert_eq!(line["released"], serde_json::json!([]));
    assert_eq!(line["standing"], serde_json::json!([2]));
}

/// The window a release at `end` left open: clone B read the backlog
/// before clone A's PR for #1 existed, and claims after A's tick ended.
#[test]
fn a_clone_whose_backlog_predates_a_finished_tick_does_not_work_its_issue_again() {
    let origin = Origin::new();
    let mut a = origin.clone_sandbox();
    let mut b = origin.clone_sandbox();
    let first = a.tick(&claiming(&a, 1));
    assert_eq!(first.code, exit::TICK_DONE, "{}{}", first.out, first.err);
    assert_eq!(a.runner.requests[0].issues[0].number, 1);
    // B's tracker still lists #1 as ready.
    let second = b.tick(&claiming(&b, 1));
    assert_eq!(second.code, exit::TICK_DONE, "{}{}", second.out, second.err);
    assert_eq!(b.runner.requests[0].issues[0].number, 2, "{}", second.out);
    assert!(
        second
            .out
            .contains("passed over issues other clones hold: #1 by m1:"),
        "{}",
        second.out
    );
}

/// A clone alone on its backlog spends one push a tick: its takes are
/// pushed as creations without reading the claims first.
#[test]
fn a_tick_alone_on_its_backlog_claims_in_one_push_and_reads_nothing() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    let r = s.tick(&claiming(&s, 2));
    assert_eq!(r.code, exit::TICK_DONE, "{}{}", r.out, r.err);
    assert_eq!(origin.claims(Skill::Work), [1, 2]);
    assert_eq!(
        git(s.root(), &["for-each-ref", "refs/sdd-loop/seen"]),
        "",
        "no fetch of the claims"
    );
}

#[test]
fn a_clone_takes_back_its_own_standing_claim() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    *s.tracker.issues.borrow_mut() = vec![issue(1, CLEAR)];
    let first = s.tick(&claiming(&s, 1));
    assert_eq!(first.code, exit::TICK_DONE, "{}{}", first.out, first.err);
    let stood = origin.lease(Skill::Work, 1);
    // The work succeeded but #1 is still ready (no PR came of it).
    s.procs.0 = vec![];
    let second = s.tick(&claiming(&s, 1));
    assert_eq!(second.code, exit::TICK_DONE, "{}{}", second.out, second.err);
    assert_eq!(s.runner.requests.len(), 2, "{}", second.out);
    assert_eq!(s.runner.requests[1].issues[0].number, 1);
    assert_eq!(origin.lease(Skill::Work, 1).holder, stood.holder);
    assert_eq!(claims_line(&s)["taken"], serde_json::json!([1]));
    assert_eq!(
        git(s.root(), &["for-each-ref", "refs/sdd-loop/seen"]),
        "",
        "taken back against the commit the clone remembered, with no read"
    );
}

/// A clone alone on its backlog never reads the claims, so nothing swept
/// the refs of its finished work: it deletes its own once they lapse, in
/// a later tick's push.
#[test]
fn a_clone_deletes_its_own_lapsed_standing_claims_in_a_later_push() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    *s.tracker.issues.borrow_mut() = vec![issue(1, CLEAR)];
    let first = s.tick(&claiming(&s, 1));
    assert_eq!(first.code, exit::TICK_DONE, "{}{}", first.out, first.err);
    assert_eq!(origin.claims(Skill::Work), [1], "left standing");
    // #1 is done (its PR is open); #2 is filed. Before #1's lease ends
    // (14:15) it stands; after, the next tick's push deletes it. Each
    // tick the first of a run (a changed backlog would ask the drift
    // gate); what the clone remembers of its claims stays.
    let fresh = |s: &Sandbox| {
        std::fs::remove_dir_all(s.root().join(".sdd")).unwrap();
        std::fs::remove_file(s.root().join(".git/sdd-loop/work.json")).unwrap();
    };
    fresh(&s);
    *s.tracker.issues.borrow_mut() = vec![issue(2, CLEAR)];
    s.clock.set("2026-05-09T14:10:00Z".parse().unwrap());
    s.procs.0 = vec![];
    let second = s.tick(&claiming(&s, 1));
    assert_eq!(second.code, exit::TICK_DONE, "{}{}", second.out, second.err);
    assert_eq!(
        origin.claims(Skill::Work),
        [1, 2],
        "#1's lease runs to 14:15"
    );
    fresh(&s);
    *s.tracker.issues.borrow_mut() = vec![issue(3, CLEAR)];
    s.clock.set("2026-05-09T14:30:00Z".parse().unwrap());
    let third = s.tick(&claiming(&s, 1));
    assert_eq!(third.code, exit::TICK_DONE, "{}{}", third.out, third.err);
    assert_eq!(
        origin.claims(Skill::Work),
        [3],
        "#1 and #2 lapsed and were deleted"
    );
    assert_eq!(
        git(s.root(), &["for-each-ref", "refs/sdd-loop/seen"]),
        "",
        "in the take's own push: no read"
    );
}

#[test]
fn a_read_sweeps_expired_claims_that_are_no_candidate() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    // #9 lapsed at 13:15 (takeable from 13:20); #1 is held, so the tick reads.
    origin.taken_elsewhere(9, "2026-05-09T13:00:00Z");
    origin.taken_elsewhere(1, "2026-05-09T13:59:00Z");
    let r = s.tick(&claiming(&s, 1));
    assert_eq!(r.code, exit::TICK_DONE, "{}{}", r.out, r.err);
    assert_eq!(s.runner.requests[0].issues[0].number, 2);
    assert_eq!(origin.claims(Skill::Work), [1, 2], "#9 swept");
}

#[test]
fn an_unexpired_lease_is_left_alone_and_nothing_claimable_is_a_skip() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    *s.tracker.issues.borrow_mut() = vec![issue(1, CLEAR)];
    // Expired by the holder's clock at 14:15, but within the 5 min skew.
    origin.taken_elsewhere(1, "2026-05-09T13:46:00Z");
    let r = s.tick(&claiming(&s, 2));
    assert_eq!(r.code, exit::TICK_DONE, "{}{}", r.out, r.err);
    assert!(s.runner.requests.is_empty(), "nothing worked");
    assert!(
        r.out.contains(
            "No issue claimable — other clones hold #1 by m2:/home/ci/repo (pid 9) until 2026-05-09T14:01:00Z"
        ),
        "{}",
        r.out
    );
    let line = s.last(Skill::Work);
    assert_eq!(line.outcome, Some(Outcome::SkippedLock));
    assert_eq!(line.lock_held, Some(true), "written under the lock");
    assert!(!s.paths(Skill::Work).lock().exists(), "lock released");
    assert_eq!(s.budget(Skill::Work).iterations_used, 0, "nothing counted");
    // In a session: exit 5, the reason said.
    let b = s.begin(&claiming(&s, 2), 100);
    assert_eq!(b.code, exit::NOTHING_TO_DO, "{}{}", b.out, b.err);
    assert_eq!(
        b.summary["reason"],
        "other clones hold the claims on the work"
    );
}

/// A tick that found nothing claimable held the lock and wrote
/// `budget.json`: its line is one of the run's (`lock_held: true`), so the
/// next tick neither "repairs" the budget from the line before it nor asks
/// a backlog-drift question the skipped tick already had answered.
#[test]
fn a_tick_skipped_on_claims_is_a_line_of_the_run() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    *s.tracker.issues.borrow_mut() = vec![issue(1, CLEAR)];
    // Held elsewhere until 14:01, takeable from 14:06 (the 5 min margin).
    origin.taken_elsewhere(1, "2026-05-09T13:46:00Z");
    let first = s.tick(&claiming(&s, 2));
    assert_eq!(first.code, exit::TICK_DONE, "{}{}", first.out, first.err);
    let line = s.last(Skill::Work);
    assert_eq!(line.outcome, Some(Outcome::SkippedLock));
    assert_eq!(line.lock_held, Some(true), "written under the lock");
    assert_eq!(s.budget(Skill::Work).iterations_used, 0, "nothing counted");

    // Issue 2 appears, also held elsewhere: drift, answered once.
    s.tracker.issues.borrow_mut().push(issue(2, CLEAR));
    origin.taken_elsewhere(2, "2026-05-09T13:46:00Z");
    s.clock.advance(jiff::SignedDuration::from_mins(2));
    let mut cfg = claiming(&s, 2);
    answer(&mut cfg, "backlog-drift=continue");
    let second = s.tick(&cfg);
    assert_eq!(second.code, exit::TICK_DONE, "{}{}", second.out, second.err);
    let line = s.last(Skill::Work);
    assert_eq!(line.outcome, Some(Outcome::SkippedLock), "{}", second.out);
    assert_eq!(gates(&line).len(), 1, "{:?}", gates(&line));

    // Both lapse; the next tick works them, asking nothing again and
    // repairing nothing: budget.json is what the skipped tick wrote.
    s.clock.advance(jiff::SignedDuration::from_mins(10));
    let third = s.tick(&claiming(&s, 2));
    assert_eq!(third.code, exit::TICK_DONE, "{}{}", third.out, third.err);
    assert!(!third.out.contains("Reconciled"), "{}", third.out);
    let line = s.last(Skill::Work);
    assert_eq!(line.outcome, Some(Outcome::Ok), "{}", third.out);
    assert!(gates(&line).is_empty(), "{:?}", gates(&line));
    assert_eq!(line.issues_dispatched_this_iter, Some(vec![1, 2]));
    // The run's time is counted once: 14:00 to the third tick's end.
    let budget = s.budget(Skill::Work);
    let ended: jiff::Timestamp = budget.last_tick_ended_at.unwrap().parse().unwrap();
    let start: jiff::Timestamp = "2026-05-09T14:00:00Z".parse().unwrap();
    assert_eq!(
        budget.seconds_elapsed,
        Some((ended.as_second() - start.as_second()) as u64)
    );
}

#[test]
fn an_expired_lease_is_taken_over() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    *s.tracker.issues.borrow_mut() = vec![issue(1, CLEAR)];
    // Expired at 13:55, plus the 5 min margin: takeable from 14:00.
    origin.taken_elsewhere(1, "2026-05-09T13:40:00Z");
    let b = s.begin(&claiming(&s, 2), 100);
    assert_eq!(b.code, exit::TICK_DONE, "{}{}", b.out, b.err);
    assert_eq!(planned(&b), [1]);
    let lease = origin.lease(Skill::Work, 1);
    assert_eq!(lease.holder.host, "m1");
    assert_eq!(lease.holder.pid, 100);
    assert_eq!(lease.expires_at.to_string(), "2026-05-09T14:15:00Z");
}

#[test]
fn an_unreachable_remote_is_exit_69_with_nothing_worked_or_written() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    let mut cfg = claiming(&s, 2);
    cfg.claims = Some(ClaimSettings::new(
        s.root().join("no-such-remote.git").display().to_string(),
        "m1",
    ));
    let r = s.tick(&cfg);
    assert_eq!(r.code, exit::UNAVAILABLE, "{}{}", r.out, r.err);
    assert!(
        r.err
            .contains("error: cannot claim work on the shared remote"),
        "{}",
        r.err
    );
    assert!(r.err.contains("SDD_LOOP_CLAIM_REMOTE=off"), "{}", r.err);
    assert!(s.runner.requests.is_empty(), "nothing worked");
    assert!(
        s.tracker.posted.borrow().is_empty(),
        "nothing on the tracker"
    );
    assert!(!s.paths(Skill::Work).lock().exists(), "lock released");
    assert!(!s.paths(Skill::Work).inflight().exists());
}

#[test]
fn a_remote_that_refuses_claim_refs_is_exit_69() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    let hook = origin.path().join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'refs are read-only here' >&2\nexit 1\n",
    )
    .unwrap();
    let mut perms = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&hook, perms).unwrap();
    let r = s.tick(&claiming(&s, 2));
    assert_eq!(r.code, exit::UNAVAILABLE, "{}{}", r.out, r.err);
    assert!(
        r.err
            .contains("refused the claim refs/sdd-loop/claims/work/1"),
        "{}",
        r.err
    );
    assert!(s.runner.requests.is_empty(), "nothing worked");
    assert!(
        s.tracker.posted.borrow().is_empty(),
        "nothing on the tracker"
    );
}

/// A tick that opened a PR and then failed leaves that issue's claim
/// standing: released, it would let a clone that read the backlog before
/// the PR existed work the issue a second time (two PRs for #1).
#[test]
fn a_failed_tick_keeps_the_claim_of_an_issue_its_pr_closes() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    s.procs.0 = vec![100];
    let cfg = claiming(&s, 2);
    let b = s.begin(&cfg, 100);
    assert_eq!(planned(&b), [1, 2]);
    let mut opened = pull(12, PrState::Open, &[], "a12");
    opened.body = "Closes #1".into();
    s.tracker.pulls.borrow_mut().push(opened);
    let e = s.end(
        &cfg,
        &EndInput {
            caller: Some(100),
            flags: EndFlags {
                opened: vec![12],
                ..EndFlags::default()
            },
            work: sdd_loop::tick::WorkReport {
                failure: Some("the tests did not pass after the PR was opened".into()),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    assert_eq!(e.code, exit::TICK_DONE, "{}{}", e.out, e.err);
    assert_eq!(s.last(Skill::Work).outcome, Some(Outcome::Errored));
    assert_eq!(
        origin.claims(Skill::Work),
        [1],
        "#1's PR is open: its claim stands"
    );
    let line = claims_line(&s);
    assert_eq!(line["released"], serde_json::json!([2]));
    assert_eq!(line["standing"], serde_json::json!([1]));
}

#[test]
fn end_releases_the_claims_of_work_that_failed_and_leaves_the_others_standing() {
    for (error, left, released, standing) in [
        (
            Some("the tests did not pass"),
            vec![],
            serde_json::json!([1, 2]),
            serde_json::Value::Null,
        ),
        (
            None,
            vec![1, 2],
            serde_json::json!([]),
            serde_json::json!([1, 2]),
        ),
    ] {
        let origin = Origin::new();
        let mut s = origin.clone_sandbox();
        s.procs.0 = vec![100];
        let cfg = claiming(&s, 2);
        let b = s.begin(&cfg, 100);
        assert_eq!(planned(&b), [1, 2]);
        assert_eq!(origin.claims(Skill::Work), [1, 2]);
        let e = s.end(
            &cfg,
            &EndInput {
                caller: Some(100),
                flags: EndFlags::default(),
                work: sdd_loop::tick::WorkReport {
                    failure: error.map(str::to_owned),
                    ..Default::default()
                },
                ..Default::default()
            },
        );
        assert_eq!(e.code, exit::TICK_DONE, "{}{}", e.out, e.err);
        let outcome = s.last(Skill::Work).outcome;
        let want = if error.is_some() {
            Outcome::Errored
        } else {
            Outcome::Ok
        };
        assert_eq!(outcome, Some(want), "{}", e.out);
        assert_eq!(origin.claims(Skill::Work), left, "{error:?}");
        let line = claims_line(&s);
        assert_eq!(line["taken"], serde_json::json!([1, 2]));
        assert_eq!(line["released"], released);
        assert_eq!(line["standing"], standing);
    }
}

#[test]
fn a_tick_that_stops_at_a_gate_releases_what_it_claimed() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    *s.tracker.issues.borrow_mut() = vec![issue(1, "no criteria"), issue(2, CLEAR)];
    let r = s.tick(&claiming(&s, 2));
    assert_eq!(r.code, exit::NEEDS_ANSWER, "{}{}", r.out, r.err);
    assert!(
        origin.claims(Skill::Work).is_empty(),
        "nothing left claimed"
    );
}

#[test]
fn resume_takes_back_the_clones_own_claims() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    s.procs.0 = vec![100];
    let b = s.begin(&claiming(&s, 2), 100);
    assert_eq!(planned(&b), [1, 2]);
    let before = origin.lease(Skill::Work, 1);
    // The session dies without `end`; the clone's next tick resumes.
    s.procs.0 = vec![];
    let mut cfg = claiming(&s, 2);
    cfg.resume = true;
    let r = s.begin(&cfg, 300);
    assert_eq!(r.code, exit::TICK_DONE, "{}{}", r.out, r.err);
    assert_eq!(planned(&r), [1, 2], "{}", r.out);
    let after = origin.lease(Skill::Work, 1);
    assert_eq!(after.holder.pid, 300);
    assert!(after.expires_at > before.expires_at, "renewed");
}

/// A clone is one clone however its path is written (`-C ../app`, a
/// symlink): a tick run through another spelling takes its own claims
/// back at once, instead of waiting out their lease as another's.
#[test]
fn a_clone_is_one_clone_however_its_path_is_written() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    s.procs.0 = vec![100];
    let b = s.begin(&claiming(&s, 2), 100);
    assert_eq!(planned(&b), [1, 2]);
    let lease = origin.lease(Skill::Work, 1);
    assert_eq!(
        lease.holder.clone,
        std::fs::canonicalize(s.root())
            .unwrap()
            .display()
            .to_string()
    );
    s.procs.0 = vec![];
    let link = origin.path().with_file_name("link-to-clone");
    std::os::unix::fs::symlink(s.root(), &link).unwrap();
    let mut cfg = claiming(&s, 2);
    cfg.resume = true;
    cfg.root = link;
    let r = s.begin(&cfg, 300);
    assert_eq!(r.code, exit::TICK_DONE, "{}{}", r.out, r.err);
    assert_eq!(planned(&r), [1, 2], "its own claims, taken back: {}", r.out);
}

#[test]
fn a_review_tick_claims_the_pr_it_reviews() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    s.procs.0 = vec![100];
    s.tracker.pulls.borrow_mut().extend([
        pull(10, sdd_loop::state::history::PrState::Open, &[], "a1"),
        pull(11, sdd_loop::state::history::PrState::Open, &[], "b1"),
    ]);
    let mut cfg = claiming(&s, 1);
    cfg.skill = Skill::Review;
    let first = s.begin(&cfg, 100);
    assert_eq!(first.code, exit::TICK_DONE, "{}{}", first.out, first.err);
    assert_eq!(first.summary["request"]["prs"][0]["number"], 10);
    let mut other = origin.clone_sandbox();
    other
        .tracker
        .pulls
        .borrow_mut()
        .extend(s.tracker.pulls.borrow().clone());
    let mut cfg = claiming(&other, 1);
    cfg.skill = Skill::Review;
    let second = other.begin(&cfg, 200);
    assert_eq!(
        second.summary["request"]["prs"][0]["number"], 11,
        "{}",
        second.out
    );
    assert_eq!(origin.claims(Skill::Review), [10, 11]);
}

#[test]
fn status_lists_the_claims_with_holder_and_expiry_this_clones_marked() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    origin.taken_elsewhere(1, "2026-05-09T13:59:00Z");
    // Lapsed at 13:59 by its holder's clock (the sandbox's reads 14:00),
    // within the skew margin: not swept yet.
    origin.taken_elsewhere(7, "2026-05-09T13:44:00Z");
    s.procs.0 = vec![100];
    let b = s.begin(&claiming(&s, 1), 100);
    assert_eq!(planned(&b), [2]);
    let remote = Remote {
        dir: s.root().to_path_buf(),
        remote: "origin".into(),
        vars: std::env::vars().collect(),
        limit: Duration::from_secs(20),
    };
    let me = Holder {
        host: "m1".into(),
        clone: s.root().display().to_string(),
        pid: 1,
        session: None,
        clone_id: None,
    };
    let status = |s: &Sandbox| {
        let claims = sdd_loop::cli::status::Claims::read(&remote, Skill::Work, &me);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = sdd_loop::cli::status::run(
            s.root(),
            Skill::Work,
            None,
            false,
            &s.clock,
            &s.procs,
            Some(claims),
            &mut out,
            &mut err,
        );
        assert_eq!(code, 0);
        String::from_utf8(out).unwrap()
    };
    let out = status(&s);
    assert!(
        out.contains(
            "Claims on origin:\n  #1 held by m2:/home/ci/repo (pid 9) until 2026-05-09T14:14:00Z\n  #2 held by m1:"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "(pid 100) (this clone: its running tick works it) until 2026-05-09T14:15:00Z\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("  #7 held by m2:/home/ci/repo (pid 9) until 2026-05-09T13:59:00Z (lapsed)\n"),
        "{out}"
    );
    // The tick ends, its work done: the claim stands, and is no live work.
    let e = s.end(
        &claiming(&s, 1),
        &EndInput {
            caller: Some(100),
            ..Default::default()
        },
    );
    assert_eq!(e.code, exit::TICK_DONE, "{}{}", e.out, e.err);
    s.procs.0 = vec![];
    let out = status(&s);
    assert!(
        out.contains(
            "(pid 100) (this clone: left standing by a finished tick) until 2026-05-09T14:15:00Z\n"
        ),
        "{out}"
    );
}

/// In a session, `end` runs in another process than `begin`: the history
/// line still names who held the candidates the tick passed over.
#[test]
fn a_sessions_history_line_names_the_claims_held_elsewhere() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    origin.taken_elsewhere(1, "2026-05-09T13:59:00Z");
    s.procs.0 = vec![100];
    let cfg = claiming(&s, 1);
    let b = s.begin(&cfg, 100);
    assert_eq!(planned(&b), [2]);
    let e = s.end(
        &cfg,
        &EndInput {
            caller: Some(100),
            ..Default::default()
        },
    );
    assert_eq!(e.code, exit::TICK_DONE, "{}{}", e.out, e.err);
    assert_eq!(
        claims_line(&s)["held_by_others"],
        serde_json::json!(["#1 by m2:/home/ci/repo (pid 9) until 2026-05-09T14:14:00Z"])
    );
}

/// From a shell: the skill opened its PR (after the tick read the
/// backlog), reported nothing and exited 1. The tick asks the tracker
/// before releasing, finds the PR closing #1, and counts it; #1's claim
/// stands.
#[test]
fn a_skill_that_opened_a_pr_then_failed_leaves_its_issues_claim_standing() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    let mut opened = pull(12, PrState::Open, &[], "a12");
    opened.body = "Closes #1".into();
    s.tracker
        .opened_after_first_listing
        .borrow_mut()
        .push(opened);
    s.runner.steps = vec![Step {
        result: None,
        exit: 1,
        stderr: vec!["error: the tests failed after the PR was opened".into()],
        ..Step::ok(result())
    }];
    let r = s.tick(&claiming(&s, 2));
    assert_eq!(r.code, exit::TICK_DONE, "{}{}", r.out, r.err);
    assert_eq!(s.runner.requests[0].issues.len(), 2);
    assert_eq!(s.last(Skill::Work).outcome, Some(Outcome::Errored));
    assert_eq!(origin.claims(Skill::Work), [1], "{}", r.out);
    let line = claims_line(&s);
    assert_eq!(line["released"], serde_json::json!([2]));
    assert_eq!(line["standing"], serde_json::json!([1]));
    assert_eq!(
        line["standing_because"],
        "the tick failed after opening #12, which its skill did not report"
    );
    assert!(
        r.out
            .contains("Found on the tracker: #12 closing an issue of this tick's request"),
        "{}",
        r.out
    );
}

/// Two machines with one host name and one clone path (VMs from one
/// image, CI runners with a fixed workspace) are two clones: the second
/// does not take the first's claims as its own.
#[test]
fn a_clone_at_another_clones_host_and_path_is_another_clone() {
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    let first = s.tick(&claiming(&s, 2));
    assert_eq!(first.code, exit::TICK_DONE, "{}{}", first.out, first.err);
    assert_eq!(origin.claims(Skill::Work), [1, 2], "standing after success");
    // Another machine's clone at the same path, under the same host name:
    // a git directory of its own.
    std::fs::remove_dir_all(s.root().join(".git")).unwrap();
    git(s.root(), &["init", "-q", "-b", "main"]);
    git(
        s.root(),
        &["remote", "add", "origin", origin.path().to_str().unwrap()],
    );
    s.procs.0 = vec![];
    let second = s.tick(&claiming(&s, 2));
    assert_eq!(second.code, exit::TICK_DONE, "{}{}", second.out, second.err);
    assert_eq!(
        s.runner.requests[1]
            .issues
            .iter()
            .map(|i| i.number)
            .collect::<Vec<_>>(),
        [3, 4],
        "{}",
        second.out
    );
}

/// Every process a tick's git started ends with the tick, whatever the
/// transport: ten ticks against a remote that accepts the connection and
/// never answers (ssh, git://, http) leave none behind.
#[test]
fn ticks_against_a_remote_that_never_answers_leave_no_process_behind() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let origin = Origin::new();
    let mut s = origin.clone_sandbox();
    let mark = format!("{}-{port}", std::process::id());
    for (i, url) in [
        format!("ssh://git@127.0.0.1:{port}/acme/app.git"),
        format!("git://127.0.0.1:{port}/acme/app.git"),
        format!("http://127.0.0.1:{port}/acme/app.git"),
    ]
    .iter()
    .cycle()
    .take(10)
    .enumerate()
    {
        let mut cfg = claiming(&s, 1);
        cfg.environment
            .insert("SDD_TEST_TICK_MARK".into(), mark.clone());
        // Real ssh, not the user's: no config, no agent, no known hosts.
        cfg.environment.insert(
            "GIT_SSH_COMMAND".into(),
            "ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null".into(),
        );
        let mut settings = ClaimSettings::new(url.clone(), "m1");
        settings.limit = Duration::from_secs(1);
        cfg.claims = Some(settings);
        s.procs.0 = vec![];
        let r = s.tick(&cfg);
        assert_eq!(r.code, exit::UNAVAILABLE, "tick {i}: {}{}", r.out, r.err);
        assert!(
            r.err
                .contains(&format!("got no answer from `{url}` within 1 s")),
            "tick {i}: {}",
            r.err
        );
        assert!(
            !r.err.contains("--porcelain"),
            "the command is not printed: {}",
            r.err
        );
    }
    let left = marked_processes(&mark, Duration::from_secs(10));
    assert!(left.is_empty(), "left running: {left:?}");
    drop(listener);
}

/// The processes whose environment holds `SDD_TEST_TICK_MARK=mark`, once
/// none is left or `within` has passed (a SIGKILL is delivered
/// asynchronously, and the killed are reaped by whoever adopts them).
fn marked_processes(mark: &str, within: Duration) -> Vec<String> {
    let needle = format!("SDD_TEST_TICK_MARK={mark}");
    let until = std::time::Instant::now() + within;
    loop {
        let mut left = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(env) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            if env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
                let cmd = std::fs::read_to_string(entry.path().join("cmdline"))
                    .unwrap_or_default()
                    .replace('\0', " ");
                left.push(format!("{pid}: {cmd}"));
            }
        }
        if left.is_empty() || std::time::Instant::now() > until {
            return left;
        }
        std::thread::yield_now();
    }
}

/// `sdd-loop doctor --json -C dir` with `vars`: its claims check's
/// verdict, detail and fix.
fn doctor_claims(dir: &std::path::Path, vars: &[(&str, &str)]) -> std::process::Child {
    let home = dir.join(".home");
    let _ = std::fs::create_dir_all(&home);
    std::process::Command::new(env!("CARGO_BIN_EXE_sdd-loop"))
        .args(["doctor", "--json", "-C"])
        .arg(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .envs(vars.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn claims_verdict(child: std::process::Child) -> (String, String, String) {
    let out = child.wait_with_output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["part"] == "claims")
        .unwrap()
        .clone();
    let text = |k: &str| c[k].as_str().unwrap_or("").to_owned();
    (text("verdict"), text("detail"), text("fix"))
}

/// Two `doctor`s at once probed with the same claim (`work/0`), and one
/// read the other's as a refusal ("ticks exit 69 until …"). Each now
/// probes with a claim of its own; and the claims held are listed.
#[test]
fn two_doctors_at_once_never_refuse_each_others_probe() {
    let origin = Origin::new();
    origin.taken_elsewhere(3, "2026-05-09T13:59:00Z");
    let s = origin.clone_sandbox();
    for round in 0..5 {
        let a = doctor_claims(s.root(), &[("SDD_LOOP_HOST", "m1")]);
        let b = doctor_claims(s.root(), &[("SDD_LOOP_HOST", "m1")]);
        for (verdict, detail, fix) in [claims_verdict(a), claims_verdict(b)] {
            assert_eq!(verdict, "ok", "round {round}: {detail} {fix}");
            assert!(
                detail.contains("work claims held now: #3 by m2:/home/ci/repo (pid 9) until 2026-05-09T14:14:00Z"),
                "{detail}"
            );
        }
    }
    assert_eq!(origin.claims(Skill::Work), [3], "no probe left behind");
}

/// A fork's clone (`origin` is the user's fork, the tracker's repository
/// another, and no remote for it): `doctor` says what a tick would refuse.
#[test]
fn doctor_names_a_claims_remote_that_is_not_the_trackers_repository() {
    let origin = Origin::new();
    let s = origin.clone_sandbox();
    git(
        s.root(),
        &["remote", "set-url", "origin", "git@github.com:me/app.git"],
    );
    let (verdict, detail, fix) =
        claims_verdict(doctor_claims(s.root(), &[("SDD_LOOP_REPO", "acme/app")]));
    assert_eq!(verdict, "fix", "{detail}");
    assert!(
        detail.contains(
            "the claims remote `origin` is me/app, not the tracker's repository acme/app"
        ),
        "{detail}"
    );
    assert!(fix.contains("SDD_LOOP_CLAIM_REMOTE=NAME"), "{fix}");
    assert!(detail.contains("(ticks exit 64)"), "{detail}");
}
