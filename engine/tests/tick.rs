//! The tick's decision logic, in-process: every stop condition (and its
//! boundary), every gate's exact prompt, batching and 100%-wins, no replay
//! on resume, each resume branch, every exit code. The world is faked at
//! the seams: tracker, git, skill runner, clock, process table, prompt.

#[expect(dead_code, reason = "the in-session tests use the rest of the sandbox")]
mod support;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

use jiff::SignedDuration;
use sdd_loop::config::LockChoice;
use sdd_loop::rules::gates::NoPrompt;
use sdd_loop::skill::runner::{InterruptKind, RunOutcome};
use sdd_loop::state::exchange::Exchange;
use sdd_loop::state::history::{Outcome, PrState};
use sdd_loop::state::paths::Skill;
use sdd_loop::state::protocol::{
    ChainReport, Failure, ModelUsage, PrReport, ReviewRounds, SkillResult,
};
use sdd_loop::world::backlog::Issue;
use sdd_loop::world::tracker::ReviewComment;

use support::*;

// ------------------------------------------------------- stop conditions

#[test]
fn backlog_empty_stops_with_the_contract_line() {
    let mut s = Sandbox::new();
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 3, "{}{}", r.out, r.err);
    assert!(
        r.out
            .contains("Backlog empty — 0 iterations used, 0 PRs touched"),
        "{}",
        r.out
    );
    assert!(r.out.contains("## Loop Ended — /sdd:work --loop"));
    let line = s.last(Skill::Work);
    assert_eq!(line.outcome, Some(Outcome::Halted));
    assert_eq!(fired(&line), ["backlog_empty"]);
    assert!(s.runner.requests.is_empty(), "nothing dispatched");
}

#[test]
fn confirmation_4_pr_budget_stops_at_iteration_2() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    s.runner.steps = vec![Step::ok(opened(10, 1000))];
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_iterations = Some(5);
    cfg.ceilings.max_prs = Some(1);
    // One new PR of one brings the PR budget to 100%: the stop will win,
    // so the 80% gate is not asked (SPEC-0020 "100% stop wins").
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(
        r.out
            .contains("Budget gate not asked: this tick brings PRs (1/1) to its ceiling"),
        "{}",
        r.out
    );
    assert_eq!(
        s.runner.requests[0].issues.len(),
        1,
        "max_new_prs bounds the batch"
    );
    assert_eq!(s.runner.requests[0].max_new_prs, Some(1));
    let line = s.last(Skill::Work);
    assert!(gates(&line).is_empty());

    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 3, "{}{}", r.out, r.err);
    let line = s.last(Skill::Work);
    assert_eq!(line.iteration, Some(2));
    assert_eq!(fired(&line), ["prs_touched_budget"]);
    assert_eq!(
        s.budget(Skill::Work).stopped.unwrap().cause,
        "prs_touched_budget"
    );
}

#[test]
fn iteration_budget_fires_at_the_ceiling_not_before() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_iterations = Some(2);
    assert_eq!(s.tick(&cfg).code, 0);
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "iteration 2 of 2 still runs\n{}", r.out);
    assert!(
        gates(&s.last(Skill::Work)).is_empty(),
        "reaching 100% is not a question"
    );
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 3);
    assert!(r.out.contains("Iteration budget reached: 2/2 iterations"));
    assert_eq!(fired(&s.last(Skill::Work)), ["iteration_budget"]);
    assert_eq!(s.runner.requests.len(), 2);
}

#[test]
fn wall_clock_budget_counts_time_between_ticks() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_minutes = Some(60);
    assert_eq!(s.tick(&cfg).code, 0);
    s.clock.advance(SignedDuration::from_mins(58));
    answer(&mut cfg, "budget-escalation=continue");
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "59 minutes is under 60\n{}", r.out);
    assert_eq!(
        gates(&s.last(Skill::Work))[0].1,
        "Approaching minutes (58/60). Continue, raise ceiling, or stop?"
    );
    s.clock.advance(SignedDuration::from_mins(2));
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 3, "{}", r.out);
    assert_eq!(fired(&s.last(Skill::Work)), ["wall_clock_budget"]);
}

#[test]
fn cost_budget_fires_on_exit_with_spend_recorded() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    s.runner.steps = vec![Step::ok(opened(10, 100_000))];
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_dollars = Some(0.01);
    let r = s.tick(&cfg);
    assert_eq!(r.code, 3, "{}{}", r.out, r.err);
    assert!(
        r.out.contains("Cost budget reached: $0.45 / $0.01"),
        "{}",
        r.out
    );
    let line = s.last(Skill::Work);
    assert_eq!(fired(&line), ["cost_budget"]);
    let snap = line.budget_snapshot.unwrap();
    assert!(snap.dollars_estimate.unwrap() >= 0.01);
    assert_eq!(line.dollars_this_iter, Some(0.45));
}

// Regression: a tick that only re-reported the ended run ("Loop already
// stopped (cost_budget) in iteration 1") rewrote `stopped.iteration` to its
// own iteration, so --resume named a later iteration than the stop's.
#[test]
fn a_re_reported_stop_keeps_the_iteration_it_fired_in() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    s.runner.steps = vec![Step::ok(opened(10, 100_000))];
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_dollars = Some(0.01);
    assert_eq!(s.tick(&cfg).code, 3);
    let stopped = |s: &Sandbox| {
        s.budget(Skill::Work)
            .stopped
            .map(|r| (r.cause, r.iteration))
    };
    assert_eq!(stopped(&s), Some(("cost_budget".to_owned(), 1)));
    for _ in 0..2 {
        let r = s.tick(&cfg);
        assert_eq!(r.code, 3, "{}{}", r.out, r.err);
        assert!(
            r.out
                .contains("Loop already stopped (cost_budget) in iteration 1"),
            "{}",
            r.out
        );
        assert_eq!(stopped(&s), Some(("cost_budget".to_owned(), 1)));
        let snap = s.last(Skill::Work).budget_snapshot.unwrap();
        assert_eq!(snap.stopped.map(|r| r.iteration), Some(1));
    }
    let mut resume = cfg.clone();
    resume.resume = true;
    resume.ceilings.max_dollars = Some(25.0);
    let r = s.tick(&resume);
    assert!(
        r.out
            .contains("Resuming the run stopped by cost_budget in iteration 1"),
        "{}",
        r.out
    );
}

#[test]
fn zero_dollar_ceiling_disables_the_cost_stop_but_tracks_spend() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    s.runner.steps = vec![Step::ok(opened(10, 100_000))];
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_dollars = Some(0.0);
    assert_eq!(s.tick(&cfg).code, 0);
    assert_eq!(s.budget(Skill::Work).dollars_estimate, 0.45);
}

#[test]
fn dependency_cycle_stops_and_names_its_edges() {
    let mut s = Sandbox::new().with_issues(vec![
        issue(50, "Blocked by: #51"),
        issue(51, "Blocked by: #50"),
        issue(52, CLEAR),
    ]);
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 3);
    assert!(
        r.out
            .contains("Dependency cycle detected: #50 ↔ #51 — please resolve manually")
    );
    assert_eq!(fired(&s.last(Skill::Work)), ["dependency_cycle"]);
}

#[test]
fn in_progress_issues_are_never_picked() {
    let mut s = Sandbox::new().with_issues(vec![
        Issue {
            labels: vec!["in-progress".into()],
            ..issue(1, CLEAR)
        },
        issue(2, CLEAR),
    ]);
    assert_eq!(s.tick(&s.cfg(Skill::Work)).code, 0);
    let picked: Vec<u64> = s.runner.requests[0]
        .issues
        .iter()
        .map(|i| i.number)
        .collect();
    assert_eq!(picked, [2]);
}

#[test]
fn stop_file_stops_before_dispatch_and_is_consumed() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let paths = s.paths(Skill::Work);
    sdd_loop::state::files::ensure_private_dir(&paths.dir).unwrap();
    std::fs::write(paths.stop_request(), "").unwrap();
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 3);
    assert_eq!(fired(&s.last(Skill::Work)), ["user_interrupt"]);
    assert!(!paths.stop_request().exists());
    assert!(s.runner.requests.is_empty());
}

#[test]
fn interrupt_during_the_skill_records_the_drained_iteration() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    s.runner.steps = vec![Step {
        interrupted: Some(InterruptKind::Signal(2)),
        ..Step::ok(opened(10, 1000))
    }];
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 3);
    let line = s.last(Skill::Work);
    assert_eq!(fired(&line), ["user_interrupt"]);
    assert_eq!(
        line.prs_touched_this_iter.unwrap(),
        ["#10"],
        "drained work is kept"
    );
    assert_eq!(s.budget(Skill::Work).iterations_used, 1);
}

#[test]
fn qmd_unreachable_twice_stops_with_the_adr_0024_message() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    s.runner.steps = vec![Step::qmd_down(), Step::qmd_down()];
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 0, "one failure is transient");
    assert_eq!(s.budget(Skill::Work).qmd_failures_consecutive, 1);
    assert_eq!(s.last(Skill::Work).outcome, Some(Outcome::Errored));
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 3, "{}", r.out);
    assert!(r.out.contains(
        "qmd unreachable for 2 iterations — fix per ADR-0024 (e.g., restart qmd daemon) and resume. Captured error: qmd-unreachable: connection refused"
    ));
    assert_eq!(fired(&s.last(Skill::Work)), ["qmd_unreachable"]);
}

#[test]
fn one_transient_qmd_failure_then_recovery_resets_the_counter() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    s.runner.steps = vec![Step::qmd_down(), Step::ok(result()), Step::qmd_down()];
    for _ in 0..3 {
        assert_eq!(s.tick(&s.cfg(Skill::Work)).code, 0);
    }
    let counters: Vec<u64> = s
        .history(Skill::Work)
        .iter()
        .map(|l| {
            l.budget_snapshot
                .as_ref()
                .unwrap()
                .qmd_failures_consecutive
                .unwrap()
        })
        .collect();
    assert_eq!(counters, [1, 0, 1]);
}

#[test]
fn repeated_failure_asks_and_stop_ends_the_run() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let failing = SkillResult {
        failures: vec![Failure {
            target: "#1".into(),
            root_cause: "tests failed".into(),
        }],
        ..result()
    };
    s.runner.steps = vec![Step::ok(failing.clone()), Step::ok(failing)];
    assert_eq!(s.tick(&s.cfg(Skill::Work)).code, 0);
    assert_eq!(s.tick(&s.cfg(Skill::Work)).code, 0);
    let mut cfg = s.cfg(Skill::Work);
    answer(&mut cfg, "repeated-failure=stop");
    let r = s.tick(&cfg);
    assert_eq!(r.code, 3);
    let line = s.last(Skill::Work);
    assert_eq!(
        gates(&line),
        [(
            "repeated-failure".into(),
            "Issue/PR #1 failed twice with: tests failed. Skip, retry once more, or stop the loop?"
                .into(),
            "stop".into()
        )]
    );
    assert_eq!(fired(&line), ["repeated_failure"]);
}

/// Regression: an agent that exited 1 after its own result said success
/// had every issue it was given recorded failed with that exit, though
/// its PR was on the tracker — feeding the repeated-failure gate.
#[test]
fn an_exit_after_a_successful_result_errs_the_tick_but_fails_no_target() {
    for (result_succeeded, failed) in [(true, vec![]), (false, vec!["#1", "#2"])] {
        let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
        let mut cfg = s.cfg(Skill::Work);
        cfg.max_agents = 2;
        let cause = "claude: exited 1 after a successful result: Error: EPIPE";
        s.runner.steps = vec![Step {
            exit: 1,
            cause: Some(cause.into()),
            result_succeeded,
            ..Step::ok(opened(12, 1000))
        }];
        let r = s.tick(&cfg);
        assert_eq!(r.code, 0, "{}{}", r.out, r.err);
        assert_eq!(s.runner.requests[0].issues.len(), 2);
        let line = s.last(Skill::Work);
        assert_eq!(line.outcome, Some(Outcome::Errored));
        assert_eq!(line.error.as_deref(), Some(cause));
        assert_eq!(line.prs_touched_this_iter.unwrap(), ["#12"]);
        let targets: Vec<String> = line
            .failures_this_iter
            .unwrap_or_default()
            .into_iter()
            .map(|f| f.target)
            .collect();
        assert_eq!(targets, failed, "result_succeeded: {result_succeeded}");
    }
}

#[test]
fn repeated_failure_skip_defers_the_target_for_the_run() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let failing = SkillResult {
        failures: vec![Failure {
            target: "#1".into(),
            root_cause: "tests failed".into(),
        }],
        ..result()
    };
    let mut cfg = s.cfg(Skill::Work);
    cfg.max_agents = 1;
    cfg.ceilings.max_iterations = Some(10);
    s.runner.steps = vec![Step::ok(failing.clone()), Step::ok(failing)];
    s.tick(&cfg);
    s.tick(&cfg);
    let mut with = cfg.clone();
    answer(&mut with, "repeated-failure=skip");
    assert_eq!(s.tick(&with).code, 0);
    assert_eq!(s.runner.requests[2].issues[0].number, 2);
    assert_eq!(s.budget(Skill::Work).deferred, ["#1"]);
    // Deferred for the rest of the run: not asked again, not picked.
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(s.runner.requests[3].issues[0].number, 2);
}

/// Regression: a skill that exited non-zero, stalled or wrote no valid
/// result had its root cause name that iteration's own result file
/// (`work.exchange/N/result.json`), so no two failures matched and the
/// repeated-failure gate never came.
#[test]
fn the_same_engine_detected_failure_twice_brings_the_repeated_failure_gate() {
    let stalled = RunOutcome {
        stalled: true,
        ..RunOutcome::default()
    };
    let crash = Step {
        result: None,
        exit: 3,
        stderr: vec!["fatal: cannot compile".into()],
        ..Step::ok(result())
    };
    let invalid = Step::ok(SkillResult {
        protocol: 9,
        ..result()
    });
    let stall = Step {
        result: None,
        exit: -1,
        cause: stalled.failure(),
        ..Step::ok(result())
    };
    let cases = [
        (
            crash,
            "skill exited 3: fatal: cannot compile (no result file at SDD_LOOP_RESULT)",
        ),
        (
            invalid,
            "invalid skill result: result file SDD_LOOP_RESULT speaks protocol 9, the engine speaks 1",
        ),
        (
            stall,
            "stalled: no output or progress events within the stall timeout (no result file at SDD_LOOP_RESULT)",
        ),
    ];
    for (step, cause) in cases {
        let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
        let mut cfg = s.cfg(Skill::Work);
        cfg.ceilings.max_iterations = Some(10);
        s.runner.steps = vec![step.clone(), step];
        assert_eq!(s.tick(&cfg).code, 0);
        assert_eq!(s.last(Skill::Work).error.as_deref(), Some(cause));
        assert_eq!(s.tick(&cfg).code, 0);
        answer(&mut cfg, "repeated-failure=stop");
        let r = s.tick(&cfg);
        assert_eq!(r.code, 3, "{cause}\n{}{}", r.out, r.err);
        let line = s.last(Skill::Work);
        assert_eq!(
            gates(&line)[0].1,
            format!(
                "Issue/PR #1 failed twice with: {cause}. Skip, retry once more, or stop the loop?"
            )
        );
        assert_eq!(fired(&line), ["repeated_failure"]);
    }
}

/// Regression: a missing, invalid or stalled result was reported with a
/// path already removed when the tick exited, and no word on the fix.
#[test]
fn a_missing_or_invalid_result_and_a_stall_say_what_to_fix() {
    let stalled = RunOutcome {
        stalled: true,
        ..RunOutcome::default()
    };
    let cases = [
        (
            Step {
                result: None,
                exit: 3,
                ..Step::ok(result())
            },
            "`sdd-loop schema skill-result`",
        ),
        (
            Step::ok(SkillResult {
                protocol: 9,
                ..result()
            }),
            "`sdd-loop schema skill-result`",
        ),
        (
            Step {
                result: None,
                exit: -1,
                cause: stalled.failure(),
                ..Step::ok(result())
            },
            "(--stall-timeout 7)",
        ),
    ];
    for (step, fix) in cases {
        let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
        let mut cfg = s.cfg(Skill::Work);
        cfg.stall_timeout = Duration::from_secs(7);
        s.runner.steps = vec![step];
        let r = s.tick(&cfg);
        assert_eq!(r.code, 0);
        let help: Vec<&str> = r.err.lines().filter(|l| l.starts_with("help: ")).collect();
        assert_eq!(help.len(), 1, "{}", r.err);
        assert!(help[0].contains(fix), "{}", help[0]);
        assert!(!r.out.contains("result.json"), "{}", r.out);
    }
}

#[test]
fn lock_held_by_a_live_pid_skips_without_advancing() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let paths = s.paths(Skill::Work);
    sdd_loop::state::files::ensure_private_dir(&paths.dir).unwrap();
    std::fs::write(
        paths.lock(),
        r#"{"pid":777,"iteration":3,"started_at":"2026-05-09T13:59:00Z","skill":"work"}"#,
    )
    .unwrap();
    s.procs.0.push(777);
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 0);
    assert!(
        r.out
            .contains("Previous iteration 3 still active (pid 777) — skipping this tick")
    );
    assert!(
        r.out.contains("## Loop Iteration 4/"),
        "status block on skipped ticks too, headed with the skipped tick's own iteration"
    );
    let line = s.last(Skill::Work);
    assert_eq!(line.outcome, Some(Outcome::SkippedLock));
    assert_eq!(line.lock_held, Some(false));
    assert!(!paths.budget().exists(), "no counter advanced");
    assert!(s.runner.requests.is_empty());
}

// A tick that ran for hours under a one-minute /loop left more skipped lines
// after its own than the history tail used to read: the run's state (here a
// PR in flight) must still be found behind them.
#[test]
fn many_skipped_lines_do_not_hide_the_run() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    seed_tracked_run(&mut s);
    let paths = s.paths(Skill::Work);
    let skipped = r#"{"iteration":2,"skill":"work","outcome":"skipped_lock","lock_held":false}"#;
    let mut body = std::fs::read_to_string(paths.history()).unwrap();
    for _ in 0..300 {
        body.push_str(skipped);
        body.push('\n');
    }
    std::fs::write(paths.history(), body).unwrap();
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 0, "{}", r.err);
    let line = s.last(Skill::Work);
    assert_eq!(line.iteration, Some(2));
    assert!(line.tracked_prs.unwrap().iter().any(|p| p.number == 10));
}

#[test]
fn dead_pid_lock_is_reaped_and_the_tick_proceeds() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let paths = s.paths(Skill::Work);
    sdd_loop::state::files::ensure_private_dir(&paths.dir).unwrap();
    std::fs::write(
        paths.lock(),
        r#"{"pid":778,"iteration":3,"started_at":"2026-05-09T13:59:00Z","skill":"work"}"#,
    )
    .unwrap();
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 0);
    assert!(r.out.contains("Reaped stale lock for pid 778"));
    assert!(!paths.lock().exists(), "released at the end");
    assert_eq!(s.runner.requests.len(), 1);
}

#[test]
fn resume_aborts_on_a_live_holder() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let paths = s.paths(Skill::Work);
    sdd_loop::state::files::ensure_private_dir(&paths.dir).unwrap();
    std::fs::write(
        paths.lock(),
        r#"{"pid":777,"iteration":3,"started_at":"t","skill":"work"}"#,
    )
    .unwrap();
    s.procs.0.push(777);
    let mut cfg = s.cfg(Skill::Work);
    cfg.resume = true;
    let r = s.tick(&cfg);
    assert_eq!(r.code, 3);
    assert!(r.out.contains("Resume aborted: lockfile recorded pid 777 is still alive. Either wait for the previous run to exit, or pass --lock=force to override."));
    assert_eq!(fired(&s.last(Skill::Work)), ["lock_contention"]);
}

#[test]
fn force_unlock_asks_every_time() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let paths = s.paths(Skill::Work);
    sdd_loop::state::files::ensure_private_dir(&paths.dir).unwrap();
    let plant = || {
        std::fs::write(
            paths.lock(),
            r#"{"pid":777,"iteration":3,"started_at":"t","skill":"work"}"#,
        )
        .unwrap()
    };
    s.procs.0.push(777);
    plant();
    let mut cfg = s.cfg(Skill::Work);
    cfg.lock = LockChoice::Force;
    let r = s.tick(&cfg);
    assert_eq!(r.code, 4, "no answer, nothing changed: {}", r.err);
    assert!(
        r.err
            .contains("help: answer it with --answer force-unlock=<yes|no|stop>")
    );
    assert!(!paths.history().exists());

    answer(&mut cfg, "force-unlock=no");
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0);
    assert_eq!(s.last(Skill::Work).outcome, Some(Outcome::SkippedLock));
    assert_eq!(
        gates(&s.last(Skill::Work))[0].1,
        "Force-unlock previous iteration's lock? This may corrupt in-flight work."
    );

    let mut cfg = s.cfg(Skill::Work);
    cfg.lock = LockChoice::Force;
    answer(&mut cfg, "force-unlock=yes");
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.out
            .contains("Force-unlocked previous iteration (was pid 777) — proceeding")
    );
    plant();
    let r = s.tick(&cfg);
    assert!(
        r.out.contains("Force-unlocked"),
        "asked again: never debounced"
    );
}

// ----------------------------------------------------------------- gates

/// A process killed between writing a state file's temporary and renaming
/// it leaves the temporary behind: the next tick removes it, and leaves a
/// live writer's alone.
#[test]
fn a_killed_writer_s_temporary_is_removed_by_the_next_tick() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let cfg = s.cfg(Skill::Work);
    s.tick(&cfg);
    let dir = s.paths(Skill::Work).dir;
    let dead = dir.join(".work.inflight.json.4242.116967791.6.tmp");
    let live = dir.join(".work.budget.json.100.1.2.tmp");
    std::fs::write(&dead, "{").unwrap();
    std::fs::write(&live, "{").unwrap();
    s.procs.0 = vec![100];
    let r = s.tick(&cfg);
    assert!(!dead.exists(), "{}", r.out);
    assert!(live.exists(), "a live writer's");
    assert!(
        r.out.contains("Removed .sdd/loop/.work.inflight.json.4242.116967791.6.tmp, a temporary file a killed process left"),
        "{}",
        r.out
    );
}

/// Issue 32: an issue another clone (or a sibling worktree) took leaves
/// the workable set for its PR or its `in-progress` label — work under
/// way, not drift (one closed without work still is: the unit tests of
/// `backlog::drifted`).
#[test]
fn an_issue_someone_else_is_working_is_no_drift() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR), issue(3, CLEAR)]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.max_agents = 1;
    s.tick(&cfg);
    // Another clone opened a PR for #2; a teammate labelled #3.
    let mut theirs = pull(90, PrState::Open, &[], "abc");
    theirs.body = "Closes #2".into();
    s.tracker.pulls.borrow_mut().push(theirs);
    s.tracker.issues.borrow_mut()[2].labels = vec!["in-progress".into()];
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(gates(&s.last(Skill::Work)).is_empty());
}

#[test]
fn backlog_drift_asks_when_the_workable_set_changes() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.max_agents = 1;
    s.tick(&cfg);
    s.tracker.issues.borrow_mut().push(issue(3, CLEAR));
    let r = s.tick(&cfg);
    assert_eq!(r.code, 4, "{}", r.err);
    assert!(
        r.err
            .contains("Backlog changed since last iteration. Re-propose the next batch?")
    );
    let mut with = cfg.clone();
    answer(&mut with, "backlog-drift=stop");
    let r = s.tick(&with);
    assert_eq!(r.code, 3);
    let line = s.last(Skill::Work);
    assert_eq!(gates(&line)[0].0, "backlog-drift");
    assert_eq!(fired(&line), ["prior_gate_stop"]);
    // Condition #10: a later tick reports the stop and does nothing.
    let r = s.tick(&cfg);
    assert_eq!(r.code, 3);
    assert!(
        r.out
            .contains("Loop already stopped at gate backlog-drift in iteration 2"),
        "{}",
        r.out
    );
}

#[test]
fn ambiguous_criteria_options_each_do_what_they_say() {
    let mut s = Sandbox::new().with_issues(vec![
        issue(1, "no criteria here"),
        issue(2, "### Acceptance Criteria\n- TBD"),
        issue(3, CLEAR),
    ]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.answers_file = Some(s.root().join("user.yaml"));
    std::fs::write(
        s.root().join("user.yaml"),
        "- gate: ambiguous-criteria\n  match: '#1 '\n  answer: escalate\n- gate: ambiguous-criteria\n  match: '#2 '\n  answer: proceed\n",
    )
    .unwrap();
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}", r.err);
    let line = s.last(Skill::Work);
    let g = gates(&line);
    assert_eq!(g.len(), 2);
    assert_eq!(
        g[0].1,
        "Issue #1 has ambiguous criteria. Skip, escalate, or proceed with my best interpretation?"
    );
    let req = &s.runner.requests[0];
    let picked: Vec<(u64, sdd_loop::state::protocol::Criteria)> =
        req.issues.iter().map(|i| (i.number, i.criteria)).collect();
    assert_eq!(
        picked,
        [
            (2, sdd_loop::state::protocol::Criteria::BestInterpretation),
            (3, sdd_loop::state::protocol::Criteria::Clear)
        ]
    );
    assert_eq!(
        s.tracker.posted.borrow().len(),
        1,
        "escalate comments on #1"
    );
    assert_eq!(s.tracker.posted.borrow()[0].0, 1);
    assert!(
        r.out
            .contains("1 issue (#1) escalated for ambiguous criteria.")
    );
}

#[test]
fn budget_gate_batches_every_tripped_budget_into_one_prompt() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    s.runner.steps = vec![Step::ok(opened(10, 200_000)), Step::ok(result())];
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_iterations = Some(5);
    cfg.ceilings.max_minutes = Some(60);
    cfg.ceilings.max_dollars = Some(1.25);
    answer(&mut cfg, "budget-escalation=continue");
    s.tick(&cfg);
    s.tick(&cfg);
    s.clock.advance(SignedDuration::from_mins(49));
    s.tick(&cfg);
    // Iteration 4: iterations 4/5, minutes 50/60 and dollars 0.90/1.25
    // plus the run's average of 0.30 projected, 1.20/1.25, are all past
    // 80% at once, none at 100%; each is shown as this tick would leave it
    // (SPEC-0020's `dollars ($21.00/$25.00)` is a projection too).
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}", r.err);
    let line = s.last(Skill::Work);
    let g = gates(&line);
    assert_eq!(g.len(), 1, "one combined prompt: {g:?}");
    assert_eq!(
        g[0].1,
        "Approaching iterations (4/5), minutes (50/60), and dollars ($1.20/$1.25). Continue, raise ceiling(s), or stop?"
    );
}

#[test]
fn hundred_percent_wins_over_the_eighty_percent_gate() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_iterations = Some(1);
    cfg.ceilings.max_minutes = Some(10);
    answer(&mut cfg, "budget-escalation=continue");
    s.tick(&cfg);
    s.clock.advance(SignedDuration::from_mins(9));
    // Iterations at 100% and minutes past 80%: the stop fires, no question.
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 3, "{}", r.err);
    let line = s.last(Skill::Work);
    assert!(gates(&line).is_empty());
    assert_eq!(fired(&line), ["iteration_budget"]);
}

#[test]
fn raise_updates_ceilings_in_place() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_minutes = Some(10);
    assert_eq!(s.tick(&cfg).code, 0);
    s.clock.advance(SignedDuration::from_mins(8));
    let mut raise = cfg.clone();
    answer(&mut raise, "budget-escalation=raise max_minutes=30");
    assert_eq!(s.tick(&raise).code, 0);
    assert_eq!(s.budget(Skill::Work).max_minutes, 30);
    assert_eq!(gates(&s.last(Skill::Work))[0].2, "raise max_minutes=30");
    // The same command line later does not shrink the raised ceiling back.
    assert_eq!(s.tick(&cfg).code, 0);
    assert_eq!(s.budget(Skill::Work).max_minutes, 30);
}

#[test]
fn single_pr_review_never_mentions_prs_and_shows_review_counters() {
    let mut s = Sandbox::new();
    s.tracker
        .pulls
        .borrow_mut()
        .push(pull(142, PrState::Open, &[], "aaa111"));
    let mut cfg = s.cfg(Skill::Review);
    cfg.pr = Some(142);
    cfg.ceilings.max_minutes = Some(10);
    cfg.ceilings.max_prs = Some(1);
    s.runner.steps = vec![Step::ok(SkillResult {
        comments_pushed: 2,
        ..result()
    })];
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("Comments pushed: 2 · Merges attempted: 0"));
    s.tracker.pulls.borrow_mut()[0].head_sha = "bbb222".into();
    s.clock.advance(SignedDuration::from_mins(8));
    answer(&mut cfg, "budget-escalation=continue");
    // PRs would be 1/1 if counted: single-PR mode leaves them out, so the
    // minutes past 80% ask the gate and nothing is said of PRs.
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}", r.err);
    let g = gates(&s.last(Skill::Review));
    assert_eq!(
        g[0].1,
        "Approaching minutes (8/10). Continue, raise ceiling, or stop?"
    );
    assert_eq!(
        s.budget(Skill::Review)
            .prs_touched
            .iter()
            .collect::<Vec<_>>(),
        ["#142"]
    );
}

#[test]
fn terminal_pr_states_stop_the_review_loop() {
    for (state, labels, word) in [
        (PrState::Merged, vec![], "merged"),
        (PrState::Closed, vec![], "closed"),
        (PrState::Open, vec!["do-not-merge"], "do-not-merge"),
    ] {
        let mut s = Sandbox::new();
        s.tracker
            .pulls
            .borrow_mut()
            .push(pull(7, state, &labels, "abc"));
        let mut cfg = s.cfg(Skill::Review);
        cfg.pr = Some(7);
        let r = s.tick(&cfg);
        assert_eq!(r.code, 3);
        assert!(
            r.out
                .contains(&format!("PR #7 reached terminal state: {word}")),
            "{}",
            r.out
        );
        assert_eq!(fired(&s.last(Skill::Review)), ["terminal_pr"]);
    }
}

#[test]
fn review_defers_a_pr_without_new_commits() {
    let mut s = Sandbox::new();
    s.tracker
        .pulls
        .borrow_mut()
        .push(pull(5, PrState::Open, &[], "abc123"));
    let mut cfg = s.cfg(Skill::Review);
    cfg.pr = Some(5);
    s.tick(&cfg);
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0);
    assert!(r.out.contains("PR #5: no new commits since iteration 1 (head_sha_at_iteration_end matches remote HEAD)"), "{}", r.out);
    assert_eq!(s.runner.requests.len(), 1, "not reviewed again");
    s.tracker.pulls.borrow_mut()[0].head_sha = "def456".into();
    s.tick(&cfg);
    assert_eq!(s.runner.requests.len(), 2, "new commits: reviewed");
}

/// Open PR #9, on which the responder (a login in CLAUDE.md) answered a
/// human's review comment: the post-feedback-merge gate is asked.
fn addressed_feedback_on_pr_9() -> Sandbox {
    let s = Sandbox::new();
    std::fs::write(
        s.root().join("CLAUDE.md"),
        "### SDD Configuration\n#### Agent Logins\n- sdd-responder\n",
    )
    .unwrap();
    s.tracker
        .pulls
        .borrow_mut()
        .push(pull(9, PrState::Open, &[], "abc"));
    s.tracker.comments.borrow_mut().insert(
        9,
        vec![
            ReviewComment {
                id: 1,
                author: "alice".into(),
                body: "rename".into(),
                in_reply_to: None,
            },
            ReviewComment {
                id: 2,
                author: "sdd-responder".into(),
                body: "done".into(),
                in_reply_to: Some(1),
            },
        ],
    );
    s
}

#[test]
fn post_feedback_merge_gate_decides_merge_allowed() {
    let mut s = addressed_feedback_on_pr_9();
    let mut cfg = s.cfg(Skill::Review);
    cfg.pr = Some(9);
    answer(&mut cfg, "post-feedback-merge=hold");
    assert_eq!(s.tick(&cfg).code, 0);
    assert!(!s.runner.requests[0].prs[0].merge_allowed);
    assert_eq!(
        gates(&s.last(Skill::Review))[0].1,
        "Responder addressed human feedback on PR #9. Merge now or hold for human re-review?"
    );
}

/// Regression: a skill that merged a PR the user had held
/// (`post-feedback-merge=hold`) was recorded `ok` with the merge counted.
#[test]
fn a_merge_of_a_held_pr_is_a_contract_violation() {
    let mut s = addressed_feedback_on_pr_9();
    s.runner.steps = vec![Step::ok(SkillResult {
        prs: vec![PrReport {
            number: 9,
            branch: "x".into(),
            head_sha_at_start: None,
            head_sha_at_end: None,
            state: PrState::Merged,
            opened: false,
        }],
        merges_attempted: 1,
        ..result()
    })];
    let mut cfg = s.cfg(Skill::Review);
    cfg.pr = Some(9);
    answer(&mut cfg, "post-feedback-merge=hold");
    assert_eq!(s.tick(&cfg).code, 0);
    let line = s.last(Skill::Review);
    assert_eq!(line.outcome, Some(Outcome::Errored));
    assert!(
        line.error.as_deref().unwrap().contains(
            "contract violation: PR #9 merged although the post-feedback-merge gate answered hold"
        ),
        "{:?}",
        line.error
    );
}

#[test]
fn more_than_one_review_round_is_a_contract_violation() {
    let mut s = Sandbox::new();
    s.tracker
        .pulls
        .borrow_mut()
        .push(pull(9, PrState::Open, &[], "abc"));
    s.runner.steps = vec![Step::ok(SkillResult {
        review_rounds: vec![ReviewRounds { pr: 9, rounds: 2 }],
        ..result()
    })];
    let mut cfg = s.cfg(Skill::Review);
    cfg.pr = Some(9);
    assert_eq!(s.tick(&cfg).code, 0);
    let line = s.last(Skill::Review);
    assert_eq!(line.outcome, Some(Outcome::Errored));
    assert!(line.error.unwrap().contains("ADR-0010"));
}

#[test]
fn redaction_applies_to_recorded_gates() {
    let mut s = Sandbox::new().with_issues(vec![issue(149, "none")]);
    std::fs::write(
        s.root().join("CLAUDE.md"),
        "### SDD Configuration\n#### Loop Logging\n| Pattern | Replacement |\n|---|---|\n| `#149` | #[ISSUE] |\n",
    )
    .unwrap();
    let mut cfg = s.cfg(Skill::Work);
    answer(&mut cfg, "ambiguous-criteria=skip");
    s.tick(&cfg);
    assert_eq!(
        gates(&s.last(Skill::Work))[0].1,
        "Issue #[ISSUE] has ambiguous criteria. Skip, escalate, or proceed with my best interpretation?"
    );
}

// ---------------------------------------------------------------- resume

fn seed_tracked_run(s: &mut Sandbox) {
    s.runner.steps = vec![Step::ok(SkillResult {
        worktrees: vec![sdd_loop::state::protocol::WorktreeReport {
            path: ".sdd/worktrees/feature-10".into(),
            branch: "feature/10".into(),
            head_sha: "sha10".into(),
        }],
        ..opened(10, 1000)
    })];
    let cfg = s.cfg(Skill::Work);
    assert_eq!(s.tick(&cfg).code, 0);
}

#[test]
fn resume_reattaches_a_pr_whose_head_has_not_moved() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    seed_tracked_run(&mut s);
    s.git
        .heads
        .borrow_mut()
        .insert("feature/10".into(), "sha10".into());
    s.git.worktrees.borrow_mut().insert(
        ".sdd/worktrees/feature-10".into(),
        ("feature/10".into(), "sha10".into()),
    );
    let mut cfg = s.cfg(Skill::Work);
    cfg.resume = true;
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(!r.out.contains("diverged"));
    let line = s.last(Skill::Work);
    assert!(
        line.tracked_prs.unwrap().iter().any(|p| p.number == 10),
        "re-attached"
    );
    assert_eq!(
        line.budget_snapshot.unwrap().iterations_used,
        Some(2),
        "counters resumed"
    );
}

#[test]
fn resume_asks_about_a_diverged_pr_and_reports_worktrees() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    seed_tracked_run(&mut s);
    s.git
        .heads
        .borrow_mut()
        .insert("feature/10".into(), "forced99".into());
    let mut cfg = s.cfg(Skill::Work);
    cfg.resume = true;
    let r = s.tick(&cfg);
    assert_eq!(r.code, 4);
    assert!(r.err.contains(
        "PR #10 has diverged since the prior iteration crashed — re-attach, skip, or stop the loop?"
    ));
    answer(&mut cfg, "resume-divergence=re-attach");
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("Worktree .sdd/worktrees/feature-10 missing — leaving in place per worktree-preservation rule"));
}

#[test]
fn resume_divergence_skip_and_stop() {
    for (choice, code) in [("skip", 0), ("stop", 3)] {
        let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
        seed_tracked_run(&mut s);
        s.git
            .heads
            .borrow_mut()
            .insert("feature/10".into(), "forced99".into());
        let mut cfg = s.cfg(Skill::Work);
        cfg.resume = true;
        answer(&mut cfg, &format!("resume-divergence={choice}"));
        let r = s.tick(&cfg);
        assert_eq!(r.code, code, "{choice}: {}{}", r.out, r.err);
        let line = s.last(Skill::Work);
        assert_eq!(gates(&line)[0].2, choice);
        let tracked = line.tracked_prs.clone().unwrap_or_default();
        if choice == "stop" {
            assert_eq!(fired(&line), ["prior_gate_stop"]);
            // Still in flight: the next --resume inspects it again.
            assert!(
                tracked
                    .iter()
                    .any(|p| p.number == 10
                        && p.head_sha_at_iteration_end.as_deref() == Some("sha10"))
            );
        } else {
            assert!(
                !tracked.iter().any(|p| p.number == 10),
                "skipped: not re-attached"
            );
        }
    }
}

#[test]
fn resume_reports_a_diverged_worktree_and_leaves_it() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    seed_tracked_run(&mut s);
    s.git
        .heads
        .borrow_mut()
        .insert("feature/10".into(), "sha10".into());
    s.git.worktrees.borrow_mut().insert(
        ".sdd/worktrees/feature-10".into(),
        ("feature/10".into(), "moved77".into()),
    );
    let mut cfg = s.cfg(Skill::Work);
    cfg.resume = true;
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains(
        "Worktree .sdd/worktrees/feature-10 diverged — leaving in place per worktree-preservation rule"
    ));
}

// The PR opened two ticks ago stays tracked on a line that touched no PR,
// so a later --resume still inspects it.
#[test]
fn open_tracked_prs_carry_forward_to_every_line() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    seed_tracked_run(&mut s);
    s.tick(&s.cfg(Skill::Work));
    let line = s.last(Skill::Work);
    let tracked = line.tracked_prs.unwrap();
    assert_eq!(tracked.len(), 1);
    assert_eq!(tracked[0].number, 10);
    assert_eq!(line.active_worktrees.unwrap().len(), 1);
}

#[test]
fn resume_notes_merged_prs_and_does_not_reattach() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    s.runner.steps = vec![Step::ok(SkillResult {
        prs: vec![PrReport {
            number: 11,
            branch: "feature/11".into(),
            head_sha_at_start: Some("a".into()),
            head_sha_at_end: Some("b".into()),
            state: PrState::Merged,
            opened: false,
        }],
        ..result()
    })];
    s.tick(&s.cfg(Skill::Work));
    let mut cfg = s.cfg(Skill::Work);
    cfg.resume = true;
    let r = s.tick(&cfg);
    assert!(
        r.out
            .contains("PR #11 was already merged at prior iteration end — not re-attaching")
    );
}

#[test]
fn resume_never_replays_a_recorded_answer() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.max_agents = 1;
    s.tick(&cfg);
    s.tracker.issues.borrow_mut().push(issue(3, CLEAR));
    let mut with = cfg.clone();
    answer(&mut with, "backlog-drift=continue");
    assert_eq!(s.tick(&with).code, 0);
    s.tracker.issues.borrow_mut().push(issue(4, CLEAR));
    let mut resume = cfg.clone();
    resume.resume = true;
    let r = s.tick(&resume);
    assert_eq!(
        r.code, 4,
        "the recorded `continue` is not replayed: {}",
        r.err
    );
}

#[test]
fn resume_reopens_a_stopped_run_and_restores_counters() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.max_agents = 1;
    s.tick(&cfg);
    s.tracker.issues.borrow_mut().push(issue(3, CLEAR));
    let mut stop = cfg.clone();
    answer(&mut stop, "backlog-drift=stop");
    assert_eq!(s.tick(&stop).code, 3);
    let mut resume = cfg.clone();
    resume.resume = true;
    answer(&mut resume, "backlog-drift=continue");
    let r = s.tick(&resume);
    assert!(
        r.out
            .contains("Resuming the run stopped by prior_gate_stop in iteration 2"),
        "{}",
        r.out
    );
    assert_eq!(r.code, 0);
    assert_eq!(s.budget(Skill::Work).iterations_used, 2);
}

/// The journal a work tick (pid 999) leaves for iteration `iteration`,
/// begun at `started_at` a minute into run `run_started_at`, with
/// `request` and the backlog `[1, 2]`.
fn journal_of(
    iteration: u64,
    started_at: &str,
    run_started_at: &str,
    request: sdd_loop::state::protocol::SkillRequest,
) -> sdd_loop::state::journal::Journal {
    sdd_loop::state::journal::Journal {
        iteration,
        pid: 999,
        process_start: None,
        started_at: started_at.to_owned(),
        run_started_at: run_started_at.to_owned(),
        seconds_at_start: 60,
        request,
        tracked_prs: vec![],
        backlog_snapshot: Some(vec![1, 2]),
        gates: vec![],
        driver: Default::default(),
        worktrees: vec![],
        shown: Default::default(),
        gate_outcomes: vec![],
        single_pr: None,
        budget_file: None,
        claude_md: None,
        skill_process: None,
        claims: None,
        window_ceilings: Default::default(),
    }
}

/// What a work tick killed mid-flight as iteration 2 (pid 999) leaves:
/// its journal, with `request` and the backlog `[1, 2]`, and its lock.
fn leave_a_killed_tick(
    paths: &sdd_loop::state::paths::StatePaths,
    request: sdd_loop::state::protocol::SkillRequest,
    run_started_at: &str,
) {
    let journal = journal_of(2, "2026-05-09T14:01:00Z", run_started_at, request);
    journal.save(&paths.inflight()).unwrap();
    std::fs::write(
        paths.lock(),
        r#"{"pid":999,"iteration":2,"started_at":"2026-05-09T14:01:00Z","skill":"work"}"#,
    )
    .unwrap();
}

#[test]
fn a_crashed_iteration_is_recovered_from_its_journal() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    s.tracker
        .pulls
        .borrow_mut()
        .push(pull(21, PrState::Open, &[], "x"));
    s.tick(&s.cfg(Skill::Work));
    let paths = s.paths(Skill::Work);
    // A tick that died mid-flight: its lock, journal and progress events.
    let budget = s.budget(Skill::Work);
    leave_a_killed_tick(&paths, s.runner.requests[0].clone(), &budget.started_at);
    let ex = Exchange::for_iteration(&paths, 2);
    std::fs::create_dir_all(&ex.dir).unwrap();
    std::fs::write(
        ex.events_path(),
        "{\"event\":\"usage\",\"model\":\"claude-opus-4-7\",\"tokens_in\":100000,\"tokens_out\":0}\n{\"event\":\"pr\",\"number\":21,\"branch\":\"feature/21\",\"head_sha\":\"x\",\"state\":\"open\",\"opened\":true}\n",
    )
    .unwrap();
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(r.out.contains("Reaped stale lock for pid 999"));
    assert!(
        r.out
            .contains("Recovered interrupted iteration 2 (pid 999)"),
        "{}",
        r.out
    );
    let lines = s.history(Skill::Work);
    let recovered = &lines[1];
    assert_eq!(recovered.iteration, Some(2));
    assert_eq!(recovered.outcome, Some(Outcome::Errored));
    assert_eq!(recovered.error.as_deref(), Some("interrupted"));
    assert_eq!(recovered.prs_touched_this_iter.as_deref().unwrap(), ["#21"]);
    assert_eq!(lines[2].iteration, Some(3));
    let b = s.budget(Skill::Work);
    assert!(b.prs_touched.contains("#21"), "no PR lost");
    assert_eq!(b.dollars_estimate, 1.5, "no spend lost");
    assert!(!paths.inflight().exists());
}

/// Regression: a tick killed while its skill ran saved no budget, and its
/// recovery set the run's last tick end to the recovery itself — the
/// killed tick's time, the time before it and the time since were lost
/// to the wall clock (`minutes_elapsed` stayed 0 where a plain tick in
/// its place counted 5 minutes). On `--resume` the time since the crash
/// is not counted, the time before the killed tick is.
#[test]
fn a_killed_ticks_time_counts_toward_the_wall_clock() {
    for (resume, minutes) in [(false, 5), (true, 1)] {
        let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
        s.tick(&s.cfg(Skill::Work));
        let paths = s.paths(Skill::Work);
        let budget = s.budget(Skill::Work);
        assert_eq!(budget.minutes_elapsed, 0);
        // Started at 14:01, a minute into the run; recovered at 14:05.
        leave_a_killed_tick(&paths, s.runner.requests[0].clone(), &budget.started_at);
        s.clock.advance(SignedDuration::from_secs(270));
        let mut cfg = s.cfg(Skill::Work);
        cfg.resume = resume;
        answer(&mut cfg, "backlog-drift=continue");
        let r = s.tick(&cfg);
        assert_eq!(r.code, 0, "{}{}", r.out, r.err);
        let lines = s.history(Skill::Work);
        let elapsed = |i: usize| {
            lines[i]
                .budget_snapshot
                .as_ref()
                .and_then(|b| b.minutes_elapsed)
        };
        assert_eq!(lines[1].error.as_deref(), Some("interrupted"));
        assert_eq!(elapsed(1), Some(minutes), "resume: {resume}");
        assert_eq!(elapsed(2), Some(minutes), "resume: {resume}");
        assert_eq!(s.budget(Skill::Work).minutes_elapsed, minutes);
    }
}

/// Regression: a tick killed while its skill ran had written budget.json at
/// its commit with the minute since the last tick added — ahead of
/// history, not behind it — and the next tick said "Reconciled … with
/// history (history wins): minutes_elapsed restored" before recovering it.
#[test]
fn a_killed_tick_s_checkpoint_ahead_of_history_is_not_reported_as_restored() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    s.tick(&s.cfg(Skill::Work));
    let paths = s.paths(Skill::Work);
    let mut budget = s.budget(Skill::Work);
    leave_a_killed_tick(&paths, s.runner.requests[0].clone(), &budget.started_at);
    // Its commit: the minute between the ticks counted, as its journal says.
    budget.set_elapsed_seconds(60);
    budget.save(paths.budget()).unwrap();
    s.clock.advance(SignedDuration::from_secs(270));
    let mut cfg = s.cfg(Skill::Work);
    answer(&mut cfg, "backlog-drift=continue");
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(
        r.out.contains("Recovered interrupted iteration 2"),
        "{}",
        r.out
    );
    assert!(!r.out.contains("Reconciled"), "{}", r.out);
    assert_eq!(s.budget(Skill::Work).minutes_elapsed, 5, "counted once");
}

/// Killed between its skill opening a PR and reporting it: the PR is on
/// the tracker only. It closes an issue of the iteration's request, so the
/// recovery counts it (it once counted nothing: the PR budget never saw
/// it).
#[test]
fn a_pr_opened_but_not_reported_before_the_kill_is_counted() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    s.publish_prs = false;
    let mut cfg = s.cfg(Skill::Work);
    cfg.max_agents = 1;
    s.tick(&cfg);
    let paths = s.paths(Skill::Work);
    let budget = s.budget(Skill::Work);
    let mut request = s.runner.requests[0].clone();
    request.iteration = 2;
    request.issues.retain(|i| i.number == 1);
    leave_a_killed_tick(&paths, request, &budget.started_at);
    let mut theirs = pull(31, PrState::Open, &[], "c31");
    theirs.body = "Closes #2".into();
    let mut ours = pull(30, PrState::Open, &[], "c30");
    ours.body = "Implements it.\n\nCloses #1".into();
    s.tracker.pulls.borrow_mut().extend([theirs, ours]);
    let r = s.tick(&cfg);
    assert_eq!(
        r.code, 3,
        "both issues have their PR: the backlog is empty {}{}",
        r.out, r.err
    );
    let lines = s.history(Skill::Work);
    let recovered = lines.iter().find(|l| l.iteration == Some(2)).unwrap();
    assert_eq!(recovered.error.as_deref(), Some("interrupted"));
    assert_eq!(
        recovered.prs_touched_this_iter.as_deref().unwrap(),
        ["#30"],
        "{}",
        r.out
    );
    assert!(s.budget(Skill::Work).prs_touched.contains("#30"));
    assert!(
        r.out
            .contains("#30 closing an issue of its request had not been reported"),
        "{}",
        r.out
    );
}

// A tick halted at entry records the iteration it would have run without
// counting it; the tick that later ran that iteration number and was
// killed had its journal taken for the halted line's, and its spend lost.
#[test]
fn a_crashed_iteration_is_recovered_even_when_a_halted_line_carries_its_number() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let cfg = s.cfg(Skill::Work);
    s.tick(&cfg);
    let paths = s.paths(Skill::Work);
    std::fs::write(paths.stop_request(), "").unwrap();
    assert_eq!(
        s.tick(&cfg).code,
        3,
        "halted at entry, iteration 2 not used"
    );
    assert_eq!(s.last(Skill::Work).iteration, Some(2));
    let budget = s.budget(Skill::Work);
    assert_eq!(budget.iterations_used, 1);
    // The resumed run's iteration 2 dies mid-flight.
    let journal = sdd_loop::state::journal::Journal {
        backlog_snapshot: Some(vec![2]),
        ..journal_of(
            2,
            "2026-05-09T14:05:00Z",
            &budget.started_at,
            s.runner.requests[0].clone(),
        )
    };
    journal.save(&paths.inflight()).unwrap();
    let ex = Exchange::for_iteration(&paths, 2);
    std::fs::create_dir_all(&ex.dir).unwrap();
    std::fs::write(
        ex.events_path(),
        "{\"event\":\"usage\",\"model\":\"claude-opus-4-7\",\"tokens_in\":100000,\"tokens_out\":0}\n",
    )
    .unwrap();
    let mut resume = cfg.clone();
    resume.resume = true;
    answer(&mut resume, "backlog-drift=continue");
    let r = s.tick(&resume);
    assert!(
        r.out
            .contains("Recovered interrupted iteration 2 (pid 999)"),
        "{}{}",
        r.out,
        r.err
    );
    assert_eq!(s.budget(Skill::Work).dollars_estimate, 1.5, "no spend lost");
}

// A killed engine could not stop its child: the orphaned skill ran on
// beside the next tick's skill, and what it spent after the crash was
// never counted.
#[test]
fn an_orphaned_skill_is_stopped_before_its_iteration_is_recovered() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    s.tick(&s.cfg(Skill::Work));
    let paths = s.paths(Skill::Work);
    let ex = Exchange::for_iteration(&paths, 2);
    std::fs::create_dir_all(&ex.dir).unwrap();
    let events = ex.events_path();
    // The events as written, kept past the recovering tick's removal of
    // the exchange directory: a second name for the same file.
    let tally = s.root().join("tally");
    std::fs::write(&events, "").unwrap();
    std::fs::hard_link(&events, &tally).unwrap();
    let ready = s.root().join("ready.fifo");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &ready,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    // The orphan: its own process group, spending until it is told to
    // stop, and recording that it stopped.
    let script = format!(
        "trap 'echo stopped >> \"$LOG\"; exit 0' TERM; \
         echo ready > '{ready}'; \
         while :; do echo '{{\"event\":\"usage\",\"model\":\"claude-haiku-4-7\",\"tokens_in\":100,\"tokens_out\":10}}' >> '{events}'; sleep 0.01; done",
        ready = ready.display(),
        events = events.display(),
    );
    let log = s.root().join("orphan.log");
    let mut orphan = std::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env("LOG", &log)
        .process_group(0)
        .spawn()
        .unwrap();
    // Opening the FIFO for reading waits for the orphan to write it.
    assert_eq!(std::fs::read_to_string(&ready).unwrap(), "ready\n");
    let pgid = orphan.id();
    let budget = s.budget(Skill::Work);
    let journal = sdd_loop::state::journal::Journal {
        skill_process: Some(sdd_loop::state::journal::SkillProcess { pgid, start: None }),
        ..journal_of(
            2,
            "2026-05-09T14:01:00Z",
            &budget.started_at,
            s.runner.requests[0].clone(),
        )
    };
    journal.save(&paths.inflight()).unwrap();
    std::fs::write(
        paths.lock(),
        r#"{"pid":999,"iteration":2,"started_at":"2026-05-09T14:01:00Z","skill":"work"}"#,
    )
    .unwrap();
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(
        r.out.contains(&format!(
            "Stopped the skill of interrupted iteration 2 (process group {pgid}), still running after its tick was killed: SIGTERM; it finished"
        )),
        "{}",
        r.out
    );
    assert!(
        orphan.wait().unwrap().success(),
        "the orphan was asked to stop, and did"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "stopped\n");
    // Every event the orphan wrote before it stopped is counted, once.
    let written = std::fs::read_to_string(&tally).unwrap_or_default();
    let recovered = &s.history(Skill::Work)[1];
    assert_eq!(recovered.error.as_deref(), Some("interrupted"));
    assert_eq!(
        recovered.tokens_in_this_iter,
        Some(100 * written.lines().count() as u64)
    );
}

// A recorded iteration's skill exited before its line was written: the
// group its journal names (a journal back after a power failure undid its
// removal) may be somebody else's by now, and is never signalled.
#[test]
fn a_recorded_iteration_s_process_group_is_left_alone() {
    use std::os::unix::process::CommandExt;
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    assert_eq!(s.tick(&s.cfg(Skill::Work)).code, 0);
    let paths = s.paths(Skill::Work);
    let line = s.last(Skill::Work);
    let budget = s.budget(Skill::Work);
    // Somebody else's process group, under the id the journal names.
    let mut other = std::process::Command::new("sleep")
        .arg("60")
        .process_group(0)
        .spawn()
        .unwrap();
    let pgid = other.id();
    let journal = sdd_loop::state::journal::Journal {
        skill_process: Some(sdd_loop::state::journal::SkillProcess { pgid, start: None }),
        ..journal_of(
            1,
            line.started_at.as_deref().unwrap(),
            &budget.started_at,
            s.runner.requests[0].clone(),
        )
    };
    assert!(
        journal.recorded_by(&line),
        "the journal is the recorded tick's"
    );
    journal.save(&paths.inflight()).unwrap();
    let r = s.tick(&s.cfg(Skill::Work));
    let alive = other.try_wait().unwrap().is_none();
    let _ = other.kill();
    let _ = other.wait();
    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(!r.out.contains("Stopped the skill"), "{}", r.out);
    assert!(alive, "the group was not signalled");
    assert!(!paths.inflight().exists(), "the stale journal is removed");
    assert_eq!(
        s.last(Skill::Work).iteration,
        Some(2),
        "nothing counted twice"
    );
}

// A skill reporting counts near u64::MAX on two ticks (or two usage rows
// in one) overflowed the counters: a panic in a debug build, a silent wrap
// in a release one. They saturate.
#[test]
fn absurd_counts_from_the_skill_saturate() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let absurd = || SkillResult {
        protocol: 1,
        usage: ["claude-haiku-4-7", "claude-sonnet-4-7"]
            .map(|model| ModelUsage {
                model: model.into(),
                tokens_in: u64::MAX,
                tokens_out: u64::MAX,
                ..ModelUsage::default()
            })
            .to_vec(),
        agents_dispatched: u64::MAX,
        comments_pushed: u64::MAX,
        merges_attempted: u64::MAX,
        ..Default::default()
    };
    s.runner.steps = vec![Step::ok(absurd()), Step::ok(absurd())];
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_dollars = Some(0.0);
    for _ in 0..2 {
        let r = s.tick(&cfg);
        assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    }
    let b = s.budget(Skill::Work);
    // Saturated where the engine can read them back: 2^53 - 1.
    let max = sdd_loop::state::budget::MAX_COUNT;
    assert_eq!(
        (b.tokens_in, b.agents_dispatched, b.comments_pushed),
        (max, max, max)
    );
    assert_eq!(s.last(Skill::Work).tokens_in_this_iter, Some(max));
}

// ---------------------------------------------------------- exit codes

#[test]
fn exit_64_for_an_answer_that_is_not_an_option() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, "vague")]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.answers.push(sdd_loop::rules::gates::AnswerFlag {
        gate: sdd_loop::rules::gates::GateName::AmbiguousCriteria,
        answer: "maybe".into(),
    });
    let r = s.tick(&cfg);
    assert_eq!(r.code, 64, "{}", r.err);
    assert!(
        r.err
            .contains("help: gate ambiguous-criteria accepts: skip, escalate, proceed, stop")
    );
}

#[test]
fn exit_65_for_a_budget_missing_a_field_left_untouched() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let paths = s.paths(Skill::Work);
    sdd_loop::state::files::ensure_private_dir(&paths.dir).unwrap();
    std::fs::write(paths.budget(), "{\"started_at\": \"t\"}").unwrap();
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 65);
    assert!(
        r.err
            .contains("is missing required field max_iterations — refusing to load")
    );
    assert_eq!(
        std::fs::read_to_string(paths.budget()).unwrap(),
        "{\"started_at\": \"t\"}"
    );
    assert!(!paths.lock().exists(), "lock released");
}

#[test]
fn exit_69_when_the_tracker_is_down_and_nothing_changes() {
    let mut s = Sandbox::new();
    *s.tracker.down.borrow_mut() = true;
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 69, "{}", r.err);
    assert!(!s.paths(Skill::Work).history().exists());
    assert!(!s.paths(Skill::Work).lock().exists());
}

#[test]
fn exit_73_when_state_cannot_be_written() {
    let mut s = Sandbox::new();
    std::fs::write(s.root().join(".sdd"), "a file where a directory belongs").unwrap();
    let r = s.tick(&s.cfg(Skill::Work));
    assert_eq!(r.code, 73, "{}", r.err);
}

#[test]
fn exit_4_changes_nothing() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, "vague")]);
    let r = s.tick_with(&s.cfg(Skill::Work), &mut NoPrompt);
    assert_eq!(r.code, 4);
    assert!(r.err.contains("gate ambiguous-criteria needs an answer"));
    assert!(
        r.err
            .contains("--answer ambiguous-criteria=<skip|escalate|proceed|stop>")
    );
    let paths = s.paths(Skill::Work);
    assert!(!paths.history().exists() && !paths.budget().exists() && !paths.lock().exists());
}

#[test]
fn without_loop_the_skill_status_is_passed_on() {
    let mut s = Sandbox::new();
    let mut cfg = s.cfg(Skill::Work);
    cfg.loop_mode = false;
    s.runner.steps = vec![Step {
        exit: 5,
        ..Step::ok(result())
    }];
    let r = s.tick(&cfg);
    assert_eq!(r.code, 5, "{}", r.err);
    assert!(r.err.contains("skill exited 5"));
}

#[test]
fn json_summary_is_one_line_on_stdout() {
    let mut s = Sandbox::new();
    let mut cfg = s.cfg(Skill::Work);
    cfg.json = true;
    let r = s.tick(&cfg);
    assert_eq!(r.code, 3);
    assert_eq!(r.out.lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(v["stop_cause"], "backlog_empty");
    assert_eq!(v, r.summary);
    assert!(r.err.contains("## Loop Ended"), "the report goes to stderr");
}

#[test]
fn without_loop_nothing_under_sdd_loop_is_created() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.loop_mode = false;
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(s.runner.requests.len(), 1);
    assert!(!s.root().join(".sdd").exists());
}

#[test]
fn first_history_write_warns_once_and_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    let r = s.tick(&s.cfg(Skill::Work));
    assert!(r.out.contains("may hold sensitive content"));
    assert!(
        r.out.contains("Cost rates: using the built-in table"),
        "built-in notice once per run"
    );
    let r = s.tick(&s.cfg(Skill::Work));
    assert!(!r.out.contains("may hold sensitive content"));
    assert!(!r.out.contains("Cost rates: using the built-in table"));
    let paths = s.paths(Skill::Work);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&paths.dir), 0o700);
    assert_eq!(mode(&paths.history()), 0o600);
    assert_eq!(mode(paths.budget()), 0o600);
}

// The contract counted an unknown model as $0.00, so a run on model ids
// the table did not list never reached its cost ceiling.
#[test]
fn unknown_model_is_priced_at_the_highest_rates_and_warns() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    s.runner.steps = vec![Step::ok(SkillResult {
        usage: vec![ModelUsage {
            model: "gpt-9".into(),
            tokens_in: 5,
            tokens_out: 5,
            ..ModelUsage::default()
        }],
        ..result()
    })];
    let r = s.tick(&s.cfg(Skill::Work));
    assert!(r.out.contains("Unknown model in cost accounting: gpt-9 — priced at the rate table's highest rates ($15.00 input, $75.00 output per Mtok) so spend is over- rather than under-counted. Add a row to ### Loop Cost Rates in CLAUDE.md to fix."), "{}", r.out);
    // 5 × 15 + 5 × 75 per million.
    assert_eq!(s.budget(Skill::Work).dollars_estimate, 0.00045);
}

#[test]
fn chain_telemetry_follows_the_presence_rules() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    s.runner.steps = vec![Step::ok(SkillResult {
        chain: Some(ChainReport {
            invoked: true,
            review_outcome: Some("approve".into()),
            autofix_pr: None,
        }),
        ..result()
    })];
    s.tick(&s.cfg(Skill::Work));
    let line = s.last(Skill::Work);
    assert_eq!(line.outcome, Some(Outcome::Ok), "{:?}", line.error);
    assert_eq!(line.chain_invoked, Some(true));
    assert_eq!(line.review_outcome.as_deref(), Some("approve"));
    assert_eq!(line.autofix_pr_invoked, Some(false));
    assert_eq!(line.autofix_pr_invocation_status, None);
}

/// Regression: values outside the telemetry's enumerations, and
/// `/autofix-pr` invoked after the review errored, were recorded as an
/// ordinary `ok` tick.
#[test]
fn chain_values_outside_the_contract_are_violations() {
    let autofix = |status: &str| {
        Some(sdd_loop::state::protocol::AutofixReport {
            invoked: true,
            status: Some(status.into()),
        })
    };
    for (outcome, autofix, violation) in [
        (
            "approved",
            None,
            r#"chain.review_outcome "approved" is none of approve, changes-requested, needs-human, errored"#,
        ),
        (
            "approve",
            autofix("opened"),
            r#"chain.autofix_pr.status "opened" is none of accepted, unavailable, errored"#,
        ),
        (
            "errored",
            autofix("accepted"),
            "/autofix-pr invoked after /sdd:review errored",
        ),
    ] {
        let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
        s.runner.steps = vec![Step::ok(SkillResult {
            chain: Some(ChainReport {
                invoked: true,
                review_outcome: Some(outcome.into()),
                autofix_pr: autofix,
            }),
            ..result()
        })];
        s.tick(&s.cfg(Skill::Work));
        let line = s.last(Skill::Work);
        assert_eq!(line.outcome, Some(Outcome::Errored), "{outcome}");
        let error = line.error.unwrap_or_default();
        assert!(error.contains("contract violation"), "{error}");
        assert!(error.contains(violation), "{error}");
        assert_eq!(
            line.review_outcome.as_deref(),
            Some(outcome),
            "recorded as said"
        );
    }
}

// ------------------------------------------------- racing history appends

/// Whether `/proc/locks` shows a process waiting for a lock on the file
/// with inode `ino` (a line with `->`).
fn someone_waits_on(ino: u64) -> bool {
    let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    locks.lines().any(|l| {
        l.contains("->")
            && l.split_whitespace().any(|field| {
                field.matches(':').count() == 2
                    && field.rsplit(':').next() == Some(ino.to_string().as_str())
            })
    })
}

// Racing ticks lost a history line about once in 1,350: a tick read another
// process's append half-copied, took it for a crash remnant and cut it (a
// tick without the lock dropped its own line instead). Here another process
// holds a half-written line at a barrier while a tick with the loop lock
// runs: the tick waits for the line, neither moves nor cuts it, and appends
// its own after it.
#[test]
fn a_line_another_process_is_still_appending_is_waited_for_never_cut() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::fs::MetadataExt;
    use std::process::{Command, Stdio};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR)]);
    s.runner.steps = vec![Step::ok(opened(10, 1000))];
    let paths = s.paths(Skill::Work);
    sdd_loop::state::files::ensure_private_dir(&paths.dir).unwrap();
    let skipped = r#"{"iteration":1,"skill":"work","outcome":"skipped_lock","lock_held":false,"note":"written by another process"}"#;
    std::fs::write(paths.history(), "").unwrap();
    let (half, rest) = skipped.split_at(skipped.len() / 2);
    // The other process: takes the history's lock as the engine's appends
    // do, writes half its line, says so, and waits for a line on stdin.
    let mut writer = Command::new("flock")
        .arg(paths.history())
        .args([
            "sh",
            "-c",
            r#"printf '%s' "$HALF" >> "$FILE"; echo ready; read _; printf '%s\n' "$REST" >> "$FILE""#,
        ])
        .env("FILE", paths.history())
        .env("HALF", half)
        .env("REST", rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("flock(1) from util-linux");
    let mut ready = String::new();
    BufReader::new(writer.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready.trim(), "ready");
    assert_eq!(std::fs::read_to_string(paths.history()).unwrap(), half);

    // The barrier's other side: once the tick waits on the lock (or has
    // finished without waiting, which is the bug), the writer completes.
    let ino = std::fs::metadata(paths.history()).unwrap().ino();
    let tick_done = Arc::new(AtomicBool::new(false));
    let waited = {
        let tick_done = Arc::clone(&tick_done);
        let mut stdin = writer.stdin.take().unwrap();
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            let mut waited = false;
            while !tick_done.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                if someone_waits_on(ino) {
                    waited = true;
                    break;
                }
                std::thread::yield_now();
            }
            stdin.write_all(b"go\n").unwrap();
            waited
        })
    };
    let r = s.tick(&s.cfg(Skill::Work));
    tick_done.store(true, Ordering::SeqCst);
    let waited = waited.join().unwrap();
    assert!(writer.wait().unwrap().success());

    assert_eq!(r.code, 0, "{}{}", r.out, r.err);
    assert!(waited, "the tick never waited for the line in flight");
    assert!(!r.out.contains("torn"), "{}", r.out);
    let lines = s.history(Skill::Work);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0].outcome, Some(Outcome::SkippedLock));
    assert_eq!(lines[1].outcome, Some(Outcome::Ok));
    let text = std::fs::read_to_string(paths.history()).unwrap();
    assert!(text.starts_with(&format!("{skipped}\n")), "{text}");
    let sidecars: Vec<_> = std::fs::read_dir(&paths.dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".torn-"))
        .collect();
    assert!(sidecars.is_empty(), "{sidecars:?}");
}

// The loop's state out of the model's reach: what survives outside
// `.sdd/loop/` (the witness) says how far the loop got, so state that
// vanished makes the next tick fail closed instead of starting again with
// its budgets full; lines the engine did not write are moved aside.
#[test]
fn deleted_state_fails_closed_and_fresh_starts_a_new_loop_on_purpose() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_iterations = Some(2);
    assert_eq!(s.tick(&cfg).code, 0);
    let paths = s.paths(Skill::Work);
    let witness = sdd_loop::state::witness::path(&paths);
    assert!(witness.is_file(), "{}", witness.display());
    std::fs::remove_file(paths.history()).unwrap();
    std::fs::remove_file(paths.budget()).unwrap();
    let r = s.tick(&cfg);
    assert_eq!(r.code, 65, "{}\n{}", r.out, r.err);
    assert!(r.err.contains("state went backwards"), "{}", r.err);
    assert!(r.err.contains("work.budget.json is missing"), "{}", r.err);
    assert!(r.err.contains("work.history.jsonl is missing"), "{}", r.err);
    assert!(r.err.contains("--fresh"), "{}", r.err);
    assert_eq!(s.runner.requests.len(), 1, "nothing was dispatched");
    assert!(!paths.history().exists(), "nothing was restarted");
    assert!(!paths.budget().exists(), "nothing was restarted");

    // Only the budget gone, history whole: --resume continues the run.
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let mut cfg = s.cfg(Skill::Work);
    cfg.ceilings.max_iterations = Some(2);
    assert_eq!(s.tick(&cfg).code, 0);
    let paths = s.paths(Skill::Work);
    std::fs::remove_file(paths.budget()).unwrap();
    let r = s.tick(&cfg);
    assert_eq!(r.code, 65, "{}", r.err);
    assert!(r.err.contains("--resume"), "{}", r.err);
    let mut resume = cfg.clone();
    resume.resume = true;
    let r = s.tick(&resume);
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(s.last(Skill::Work).iteration, Some(2));
    let r = s.tick(&cfg);
    assert_eq!(r.code, 3, "the cap still holds: {}", r.out);

    // --fresh: a new loop, on purpose.
    std::fs::remove_file(paths.budget()).unwrap();
    std::fs::remove_file(paths.history()).unwrap();
    let mut fresh = cfg.clone();
    fresh.fresh = true;
    let r = s.tick(&fresh);
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(s.last(Skill::Work).iteration, Some(1));
    assert_eq!(s.tick(&cfg).code, 0, "the new loop goes on");
}

/// The witness's update after an append is not waited for on disk: a
/// power failure may bring back the witness that announced the line
/// (`pending`) without checking it. The line stays the engine's.
#[test]
fn a_witness_that_announced_the_last_line_without_checking_it_keeps_it() {
    use sdd_loop::state::witness::{self, Witness};
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let cfg = s.cfg(Skill::Work);
    assert_eq!(s.tick(&cfg).code, 0);
    let paths = s.paths(Skill::Work);
    let wpath = witness::path(&paths);
    let after_one = Witness::load(&wpath).unwrap().unwrap();
    assert_eq!(s.tick(&cfg).code, 0);
    let history = std::fs::read_to_string(paths.history()).unwrap();
    let last = history.lines().last().unwrap();
    // As the announcement left it: tick 1's witness, tick 2's line pending.
    Witness {
        pending: vec![witness::digest(last.as_bytes())],
        ..after_one
    }
    .save(&wpath)
    .unwrap();
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}\n{}", r.out, r.err);
    assert!(!r.out.contains("foreign"), "{}", r.out);
    assert_eq!(s.last(Skill::Work).iteration, Some(3));
    let sidecars: Vec<_> = std::fs::read_dir(&paths.dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".foreign-"))
        .collect();
    assert!(sidecars.is_empty(), "{sidecars:?}");
    let now = Witness::load(&wpath).unwrap().unwrap();
    assert!(now.pending.is_empty());
    assert_eq!(now.iteration, 3);
}

#[test]
fn a_budget_rolled_back_with_its_history_fails_closed() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let cfg = s.cfg(Skill::Work);
    assert_eq!(s.tick(&cfg).code, 0);
    let paths = s.paths(Skill::Work);
    let budget = std::fs::read_to_string(paths.budget()).unwrap();
    let history = std::fs::read(paths.history()).unwrap();
    assert_eq!(s.tick(&cfg).code, 0);
    // Both put back as they were after tick 1.
    std::fs::write(paths.budget(), &budget).unwrap();
    std::fs::write(paths.history(), &history).unwrap();
    let r = s.tick(&cfg);
    assert_eq!(r.code, 65, "{}", r.err);
    assert!(r.err.contains("ends at iteration 1"), "{}", r.err);
    assert_eq!(std::fs::read_to_string(paths.budget()).unwrap(), budget);
}

#[test]
fn history_lines_the_engine_did_not_write_are_moved_aside_and_never_counted() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let cfg = s.cfg(Skill::Work);
    assert_eq!(s.tick(&cfg).code, 0);
    let paths = s.paths(Skill::Work);
    // What the upstream skill's prose has a model append after its work.
    let theirs =
        r#"{"iteration":1,"skill":"work","outcome":"ok","budget_snapshot":{"iterations_used":0}}"#;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(paths.history())
        .unwrap();
    std::io::Write::write_all(&mut f, format!("{theirs}\n").as_bytes()).unwrap();
    drop(f);
    let r = s.tick(&cfg);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("the engine did not write"), "{}", r.out);
    let lines = std::fs::read_to_string(paths.history()).unwrap();
    assert_eq!(lines.lines().count(), 2, "{lines}");
    assert_eq!(s.last(Skill::Work).iteration, Some(2));
    let sidecars: Vec<_> = std::fs::read_dir(&paths.dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.contains(".foreign-").then_some(name)
        })
        .collect();
    assert_eq!(sidecars.len(), 1, "{sidecars:?}");
    let moved = std::fs::read_to_string(paths.dir.join(&sidecars[0])).unwrap();
    assert_eq!(moved, format!("{theirs}\n"));
}
