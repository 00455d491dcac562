//! Every case under `evals/` is its own test, found at run time
//! (datatest-stable), so a new case needs no rebuild and each one shows up
//! — and can be filtered, partitioned and retried — on its own under
//! `cargo nextest run` and `cargo test`.
//!
//! Each test runs the case against the real binaries, fails with the
//! evidence of every failed expectation or assertion, and checks the
//! case's three snapshots with insta in `snapshots/` next to the case
//! (review changes with `cargo review-snapshots`, i.e. `sdd-evals review`). This is a test harness's
//! `main`, so it reads the environment: `SDD_EVALS_KEEP=1` keeps the
//! sandboxes, `SDD_EVALS_TMPDIR` says where they go (default: /dev/shm
//! when there is one); `INSTA_WORKSPACE_ROOT` (or nextest's
//! `NEXTEST_WORKSPACE_ROOT`) locates the workspace when running from a
//! nextest archive.
//!
//! A real-CLI case (`driver: real-claude|real-codex|real-gemini|real-opencode|real-session`) whose
//! pinned CLI is not installed (`sdd-evals agents install`; found through
//! `SDD_EVALS_AGENTS_DIR`, `XDG_CACHE_HOME`, `HOME` and `PATH`, at the
//! versions `SDD_EVALS_AGENT_VERSIONS` names if any, as
//! `sdd-evals` finds it) cannot run. nextest has no way for a test to
//! report itself skipped at run time, so such a test prints `SKIPPED: …`
//! with the install command on stderr and passes — unless
//! `SDD_EVALS_REQUIRE_AGENTS=1`, which makes it fail (CI sets it).

use std::collections::BTreeMap;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use sdd_harness::driving::Options;
use sdd_harness::driving::real;
use sdd_harness::driving::runner;
use sdd_harness::judging::snapshot;
use sdd_harness::loading::case::Case;
use sdd_harness::loading::diagnostics;
use sdd_harness::loading::fixtures::Fixtures;
use sdd_harness::reporting::report::{self, Snapshots};
use sdd_harness::world::bins::Binaries;
use sdd_harness::world::clis::{Clis, Places};

/// A failure message, shown as it is (datatest prints errors with `{:?}`,
/// which would quote a `String` and escape its newlines).
struct Failure(String);

impl std::fmt::Debug for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failure {}

fn fail(message: String) -> Box<dyn std::error::Error> {
    Box::new(Failure(message))
}

fn workspace(vars: &BTreeMap<String, String>) -> PathBuf {
    ["INSTA_WORKSPACE_ROOT", "NEXTEST_WORKSPACE_ROOT"]
        .iter()
        .find_map(|k| vars.get(*k).filter(|v| !v.is_empty()).map(PathBuf::from))
        .or_else(|| {
            vars.get("CARGO_MANIFEST_DIR")
                .map(|d| Path::new(d).join(".."))
        })
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
}

fn run_case(path: &Path) -> datatest_stable::Result<()> {
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    let workspace = workspace(&vars);
    let fixtures = Fixtures::new(workspace.join("fixtures"));
    let case = Case::load(path, &fixtures).map_err(|e| fail(diagnostics::render(&e, path)))?;
    let places = Places::from_vars(&vars).map_err(|e| fail(e.to_string()))?;
    let clis = Clis::find(&places);
    if let Some(why) = real::missing_cli(&case, &clis) {
        if vars
            .get("SDD_EVALS_REQUIRE_AGENTS")
            .is_some_and(|v| v == "1")
        {
            return Err(fail(format!(
                "case {} cannot run: {why} (SDD_EVALS_REQUIRE_AGENTS=1 makes a missing CLI a failure)",
                case.id()
            )));
        }
        // A test's stderr is what nextest shows for it (and keeps in JUnit).
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: case {} did not run: {why}; this test passes without running it (SDD_EVALS_REQUIRE_AGENTS=1 makes it fail)",
            case.id()
        );
        return Ok(());
    }
    let binaries = Binaries::find(&std::env::current_exe()?, &vars, None)
        .map_err(|e| fail(format!("error: {e}\nhelp: {}", e.help())))?;
    let opts = Options {
        fixtures,
        workspace,
        binaries,
        path: vars.get("PATH").cloned().unwrap_or_default().into(),
        keep_sandbox: vars.get("SDD_EVALS_KEEP").is_some_and(|v| v == "1"),
        sandbox_parent: sdd_harness::cli::sandbox_parent(&vars),
        worlds: None,
        clis,
    };
    let run =
        runner::run(&case, &opts).map_err(|e| fail(format!("error: {e}\nhelp: {}", e.help())))?;
    let result = report::evaluate(&case, &run, Snapshots::Skip);

    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(std::path::absolute(snapshot::dir_for(path))?);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(snapshot::description(&case));
    let mut failures = Vec::new();
    for rendered in snapshot::render(case.id(), &run.record, &run.redactor) {
        let asserted = settings.bind(|| {
            catch_unwind(AssertUnwindSafe(|| {
                insta::assert_snapshot!(rendered.name.as_str(), rendered.text.as_str());
            }))
        });
        if asserted.is_err() {
            failures.push(format!(
                "snapshot {} does not match (see the diff above; `cargo review-snapshots` shows it again, `--accept` takes it)",
                rendered.name
            ));
        }
    }
    for g in result.expectations.iter().filter(|g| !g.ok()) {
        failures.push(format!(
            "✗ {}\n    {}",
            g.text,
            g.evidence.replace('\n', "\n    ")
        ));
    }
    if let Some(dir) = &run.kept {
        failures.push(format!("(sandbox kept at {})", dir.display()));
    }
    if failures.iter().any(|f| !f.starts_with("(sandbox")) {
        return Err(fail(format!(
            "case {} failed:\n{}",
            case.id(),
            failures.join("\n")
        )));
    }
    Ok(())
}

datatest_stable::harness! {
    // evals/scorecard/ holds the loop-safety scorecard's cases, which
    // `sdd-evals scorecard` runs (tests/scorecard.rs), not engine cases.
    { test = run_case, root = "../evals", pattern = r"^(?!scorecard/).*\.yaml$" },
}
