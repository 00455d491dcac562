//! The guard leaves nothing behind: an agent may start its
//! tools detached — in a session and process group of their own, as the
//! Gemini CLI runs every shell command — where the guard's signal to its
//! group never reaches them. Once its child has exited, the guard (a
//! child subreaper on Linux) kills whatever is left below it.

#![cfg(target_os = "linux")]

use std::process::Command;

#[path = "git/mod.rs"]
mod git;
use git::git;

#[test]
fn a_detached_grandchild_does_not_outlive_the_guard() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("detached.pid");
    // The child starts a detached grandchild that would run forever, waits
    // until it has written its pid (a file, no sleep), and exits.
    let script = format!(
        "setsid sh -c 'echo $$ > {p}.tmp && mv {p}.tmp {p} && exec tail -f /dev/null' & until [ -s {p} ]; do :; done; exit 0",
        p = pidfile.display()
    );
    let status = Command::new(env!("CARGO_BIN_EXE_sdd-loop"))
        .args(["__guard", "--exec", "--", "sh", "-c", &script])
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let pid = pid.trim();
    assert!(
        !std::path::Path::new("/proc").join(pid).exists(),
        "the detached process {pid} outlived its guard"
    );
}

/// Issue 32: a tick's claim taken over by another clone while its skill
/// runs is noticed at the guard's next renewal (on the tick's clock,
/// `SDD_LOOP_NOW`): the skill is told on its events stream and, with no
/// claim left, its group is stopped — the skill here would run forever.
#[test]
fn the_guard_stops_a_skill_whose_every_claim_was_taken_over() {
    use sdd_loop::state::journal::Journal;
    use sdd_loop::state::paths::Skill;
    use sdd_loop::world::claim::{Change, Holder, Outcome, Remote, Timing};

    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "--bare", "origin.git"]);
    let clone = dir.path().join("clone");
    std::fs::create_dir(&clone).unwrap();
    git(&clone, &["init", "-q"]);
    git(&clone, &["remote", "add", "origin", "../origin.git"]);
    let remote = Remote {
        dir: clone.clone(),
        remote: "origin".into(),
        vars: std::env::vars().collect(),
        limit: std::time::Duration::from_secs(20),
    };
    let holder = |host: &str| Holder {
        host: host.into(),
        clone: clone.display().to_string(),
        pid: 7,
        session: None,
        clone_id: None,
    };
    let timing = Timing::default();
    let take = |lease, expected| match &remote.push(&[Change::Take { lease, expected }]).unwrap()[0]
    {
        Outcome::Done { commit: Some(c) } => c.clone(),
        other => panic!("{other:?}"),
    };
    let at = |s: &str| s.parse().unwrap();
    let ours = take(
        timing.lease(Skill::Work, 1, &holder("m1"), at("2026-11-26T10:00:00Z")),
        None,
    );
    // Lapsed (10:15) and past the margin by m2's clock: m2 takes it over.
    take(
        timing.lease(Skill::Work, 1, &holder("m2"), at("2026-11-26T10:21:00Z")),
        Some(ours.clone()),
    );
    let journal_path = dir.path().join("work.inflight.json");
    let events = dir.path().join("events.jsonl");
    journal_holding_1(&journal_path, &clone, "origin", ours, 20);
    let status = Command::new(env!("CARGO_BIN_EXE_sdd-loop"))
        .args(["__guard", "--exec", "--", "tail", "-f", "/dev/null"])
        .env("SDD_LOOP_JOURNAL", &journal_path)
        .env("SDD_LOOP_EVENTS", &events)
        .env("SDD_LOOP_NOW", "2026-11-26T10:10:00Z")
        .status()
        .unwrap();
    assert!(!status.success(), "the skill was stopped: {status}");
    let told = std::fs::read_to_string(&events).unwrap();
    assert!(
        told.contains(r#""event":"claim_lost","number":1"#),
        "{told}"
    );
    let journal = Journal::load(&journal_path).unwrap().unwrap();
    let claims = journal.claims.unwrap();
    assert!(claims.held.is_empty());
    assert_eq!(claims.lost[0].number, 1);
    assert_eq!(claims.lost[0].at, "2026-11-26T10:10:00Z");
}

/// Writes at `path` the journal of a tick of `clone` holding claim #1
/// (taken at 10:00, commit `commit`, expiring 10:15) on `remote`.
fn journal_holding_1(
    path: &std::path::Path,
    clone: &std::path::Path,
    remote: &str,
    commit: String,
    limit_secs: u64,
) {
    use sdd_loop::state::journal::{Claims, HeldClaim, Journal};
    use sdd_loop::state::paths::Skill;
    use sdd_loop::state::protocol::{PROTOCOL_VERSION, SkillRequest};
    let clone = clone.to_path_buf();
    let ours = commit;
    Journal {
        iteration: 1,
        pid: 7,
        process_start: None,
        started_at: "2026-11-26T10:00:00Z".into(),
        run_started_at: "2026-11-26T10:00:00Z".into(),
        seconds_at_start: 0,
        request: SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill: Skill::Work,
            iteration: 1,
            repository: None,
            issues: vec![],
            prs: vec![],
            max_new_prs: None,
            no_chain: false,
            dry_run: false,
        },
        tracked_prs: vec![],
        backlog_snapshot: None,
        gates: vec![],
        driver: Default::default(),
        worktrees: vec![],
        shown: Default::default(),
        gate_outcomes: vec![],
        single_pr: None,
        budget_file: None,
        claude_md: None,
        skill_process: None,
        claims: Some(Claims {
            remote: remote.into(),
            clone: clone.clone(),
            host: "m1".into(),
            clone_id: None,
            lease_secs: 900,
            skew_secs: 300,
            limit_secs,
            held: vec![HeldClaim {
                number: 1,
                commit: ours,
                expires_at: "2026-11-26T10:15:00Z".into(),
            }],
            lost: vec![],
            held_by_others: vec![],
        }),
        window_ceilings: Default::default(),
    }
    .save(path)
    .unwrap();
}

/// A renewal's push to a remote that never answers is not waited for past
/// the lease: the push has only the time left before the stop time (10 s
/// before the expiry, 10:14:50 here; the tick's clock reads 10:14:45),
/// though `SDD_LOOP_CLAIM_TIMEOUT` allows 400 s — then the claim is lost
/// and the skill stopped, whatever the remote does.
#[test]
fn the_guard_stops_the_skill_before_the_lease_ends_when_the_remote_hangs() {
    use sdd_loop::state::journal::Journal;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let clone = dir.path().join("clone");
    std::fs::create_dir(&clone).unwrap();
    git(&clone, &["init", "-q"]);
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let helper = bin.join("git-remote-hang");
    std::fs::write(&helper, "#!/bin/sh\nexec sleep 3600\n").unwrap();
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let journal_path = dir.path().join("work.inflight.json");
    journal_holding_1(&journal_path, &clone, "hang::nowhere", "0".repeat(40), 400);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = std::time::Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_sdd-loop"))
        .args(["__guard", "--exec", "--", "tail", "-f", "/dev/null"])
        .env("PATH", path)
        .env("SDD_LOOP_JOURNAL", &journal_path)
        .env("SDD_LOOP_NOW", "2026-11-26T10:14:45Z")
        .status()
        .unwrap();
    let took = started.elapsed();
    assert!(!status.success(), "the skill was stopped: {status}");
    assert!(
        took < std::time::Duration::from_secs(60),
        "the guard waited {took:?} on the remote, past the lease"
    );
    let claims = Journal::load(&journal_path)
        .unwrap()
        .unwrap()
        .claims
        .unwrap();
    assert!(claims.held.is_empty());
    assert!(
        claims.lost[0]
            .reason
            .contains("got no answer from `hang::nowhere` within 5 s"),
        "{:?}",
        claims.lost
    );
}
