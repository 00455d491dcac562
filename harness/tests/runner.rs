//! The runner end to end, against the real binaries: determinism (two
//! runs give byte-identical snapshots), an unexpected gate, the per-case
//! time limit, and `--engine` with another command line.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use sdd_harness::driving::Options;
use sdd_harness::driving::runner::{self, CaseRun};
use sdd_harness::judging::grade;
use sdd_harness::judging::snapshot;
use sdd_harness::loading::case::Case;
use sdd_harness::world::bins::{Binaries, Engine};

fn options(engine: Option<String>) -> Options {
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    let binaries = Binaries::find(&std::env::current_exe().unwrap(), &vars, engine)
        .unwrap_or_else(|e| panic!("{e}\nhelp: {}", e.help()));
    Options {
        fixtures: support::fixtures(),
        workspace: support::workspace(),
        binaries,
        path: std::env::var_os("PATH").unwrap_or_default(),
        keep_sandbox: false,
        sandbox_parent: sdd_harness::world::sandbox::ram_dir(),
        worlds: None,
        clis: sdd_harness::world::clis::Clis::default(),
    }
}

fn load(path: &Path, opts: &Options) -> Case {
    Case::load(path, &opts.fixtures).unwrap_or_else(|e| panic!("{}", e.render()))
}

fn run(case: &Case, opts: &Options) -> CaseRun {
    runner::run(case, opts).unwrap_or_else(|e| panic!("{e}"))
}

/// Running the suite twice must give byte-identical snapshots: nothing
/// that varies between runs (pids, paths, ports, times) may leak through.
/// Covers a plain run, a run killed at the skill barrier and a crash, and
/// an agent's run and an agent killed mid-stream.
#[test]
fn two_runs_give_byte_identical_snapshots() {
    let opts = options(None);
    for name in [
        "c4-pr-budget",
        "c5-live-lock-skips",
        "c9-resume-reattach",
        "c9-crash-late-diverged",
        "c4-pr-budget-claude",
        "agent-killed-mid-stream",
    ] {
        let case = load(
            &support::workspace().join(format!("evals/loop/{name}.yaml")),
            &opts,
        );
        let render = |run: &CaseRun| snapshot::render(case.id(), &run.record, &run.redactor);
        let (first, second) = (run(&case, &opts), run(&case, &opts));
        assert_eq!(render(&first), render(&second), "{name}");
        assert_ne!(first.record.ticks.len(), 0);
    }
}

#[test]
fn an_unexpected_gate_fails_the_case_with_its_question() {
    let opts = options(None);
    let case = load(Path::new("tests/cases/unanswered-gate.yaml"), &opts);
    let run = run(&case, &opts);
    let aborted = run.record.aborted.as_deref().expect("the case must stop");
    assert!(
        aborted.starts_with("case unanswered-gate, tick 1: unexpected gate ambiguous-criteria asked \"Issue #20 has ambiguous criteria. Skip, escalate, or proceed with my best interpretation?\""),
        "{aborted}"
    );
    assert_eq!(run.record.ticks.len(), 1, "tick 2 never ran");
    let grades = grade::grade(&case, &run.record);
    assert!(!grades[0].passed);
    assert_eq!(grades[0].evidence, aborted);
}

#[test]
fn the_time_limit_names_the_case_and_the_tick_and_kills_everything() {
    let opts = options(None);
    let case = load(Path::new("tests/cases/hangs.yaml"), &opts);
    let run = run(&case, &opts);
    let aborted = run.record.aborted.as_deref().expect("the case must stop");
    assert!(
        aborted.starts_with(
            "case hangs, tick 1: timed out: the case's time limit (2s) ran out during this tick"
        ),
        "{aborted}"
    );
    assert_eq!(
        run.record.ticks[0].end,
        sdd_harness::driving::record::TickEnd::TimedOut
    );
}

#[test]
fn another_engine_command_runs_the_same_case() {
    let engine = match options(None).binaries.engine {
        Engine::Binary(path) => path,
        Engine::Command(_) => unreachable!("no --engine given"),
    };
    // A command line, as `--engine` takes it: here the same engine behind
    // an `env` wrapper, so the shell path of the runner is exercised.
    let opts = options(Some(format!("env '{}'", engine.display())));
    let case = load(
        &support::workspace().join("evals/loop/backlog-empty.yaml"),
        &opts,
    );
    let run = run(&case, &opts);
    let failed: Vec<_> = grade::grade(&case, &run.record)
        .into_iter()
        .filter(|g| !g.ok())
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}
