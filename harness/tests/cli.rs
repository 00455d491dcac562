//! `sdd-evals` commands, in-process through `main_with`.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use sdd_harness::cli::{Env, exit, main_with};

fn call(cwd: &Path, args: &[&str]) -> (u8, String, String) {
    call_with(cwd, &[], args)
}

/// `call` with these environment variables.
fn call_with(cwd: &Path, vars: &[(&str, &str)], args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = {
        let mut env = Env {
            stdout: &mut out,
            stderr: &mut err,
            vars: vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            cwd: cwd.to_path_buf(),
            exe: std::env::current_exe().unwrap(),
            stderr_is_terminal: false,
        };
        main_with(
            std::iter::once("sdd-evals")
                .chain(args.iter().copied())
                .map(Into::into),
            &mut env,
        )
    };
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn check_accepts_the_suite_and_refuses_broken_cases() {
    let root = support::workspace();
    let (code, out, err) = call(&root, &["check", "evals"]);
    assert_eq!(code, exit::OK, "{err}");
    assert!(
        out.contains("ok evals/loop/c4-pr-budget.yaml (c4-pr-budget)"),
        "{out}"
    );

    let (code, _, err) = call(&root, &["check", "harness/tests/broken"]);
    assert_eq!(code, exit::BAD_CASE);
    assert!(
        err.contains(
            "error: harness/tests/broken/unknown-gate.yaml:7:17: unknown gate `budget-escalaton`"
        ),
        "{err}"
    );
    let broken = std::fs::read_dir(root.join("harness/tests/broken"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        })
        .count();
    assert!(
        err.contains(&format!("{broken} case file(s) have errors")),
        "{err}"
    );
}

#[test]
fn new_scaffolds_a_case_that_checks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[workspace]\n").unwrap();
    std::os::unix::fs::symlink(support::fixtures().dir, dir.path().join("fixtures")).unwrap();
    let (code, out, err) = call(dir.path(), &["new", "my-first-case"]);
    assert_eq!(code, exit::OK, "{err}");
    assert!(out.contains("evals/loop/my-first-case.yaml"), "{out}");
    let text = std::fs::read_to_string(dir.path().join("evals/loop/my-first-case.yaml")).unwrap();
    assert!(
        text.lines().count() <= 17,
        "a minimal case is ~15 lines:\n{text}"
    );
    let (code, out, err) = call(dir.path(), &["check", "evals"]);
    assert_eq!(code, exit::OK, "{err}");
    assert!(out.contains("(my-first-case)"), "{out}");

    let (code, _, err) = call(dir.path(), &["new", "my-first-case"]);
    assert_eq!(code, exit::USAGE);
    assert!(err.contains("already exists"), "{err}");
    let (code, _, err) = call(dir.path(), &["new", "Bad_Name"]);
    assert_eq!(code, exit::USAGE);
    assert!(err.contains("help: use a-z, 0-9 and -"), "{err}");
}

#[test]
fn schema_describes_the_format_for_editors() {
    let (code, out, _) = call(&support::workspace(), &["schema"]);
    assert_eq!(code, exit::OK);
    let schema: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(schema["additionalProperties"], false);
    for key in ["id", "ticks", "world", "expect", "assertions"] {
        assert!(schema["properties"][key].is_object(), "{key}");
    }
    let required = schema["required"].as_array().unwrap();
    assert!(required.contains(&"ticks".into()) && required.contains(&"id".into()));
    // A `tracker:` event's names once lacked `reply_to_gate`, so an editor
    // flagged every case that scripts a reply to a posted gate.
    assert!(out.contains("\"reply_to_gate\""), "{out}");
}

#[test]
fn list_shows_every_case() {
    let (code, out, err) = call(&support::workspace(), &["list"]);
    assert_eq!(code, exit::OK, "{err}");
    assert!(out.contains("c4-pr-budget"), "{out}");
    assert!(out.contains("ADR-0028 confirmation 4"), "{out}");
}

#[test]
fn run_without_the_binaries_names_them_and_the_build_command() {
    let dir = tempfile::tempdir().unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = {
        let mut env = Env {
            stdout: &mut out,
            stderr: &mut err,
            vars: BTreeMap::new(),
            cwd: support::workspace(),
            exe: dir.path().join("sdd-evals"),
            stderr_is_terminal: false,
        };
        main_with(["sdd-evals", "run"].map(Into::into), &mut env)
    };
    let err = String::from_utf8(err).unwrap();
    assert_eq!(code, exit::UNAVAILABLE, "{err}");
    assert!(err.contains("cannot find the `sdd-loop` binary"), "{err}");
    assert!(err.contains("cargo build --workspace --bins"), "{err}");
}

/// `sdd-evals run ARGS` in `cwd` with the real binaries (found beside this
/// test) and this process's PATH (the engine runs git).
fn run(cwd: &Path, args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = {
        let mut env = Env {
            stdout: &mut out,
            stderr: &mut err,
            vars: BTreeMap::from([("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())]),
            cwd: cwd.to_path_buf(),
            exe: std::env::current_exe().unwrap(),
            stderr_is_terminal: false,
        };
        main_with(
            ["sdd-evals", "run", "--no-build"]
                .iter()
                .chain(args)
                .map(Into::into),
            &mut env,
        )
    };
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn a_failing_case_named_alone_prints_its_failure_and_no_pass_rate_error() {
    let root = support::workspace();
    let out = tempfile::tempdir().unwrap();
    let (code, table, err) = run(
        &root,
        &[
            "harness/tests/cases/fails-on-purpose.yaml",
            "--no-snapshots",
            "--out",
            out.path().to_str().unwrap(),
        ],
    );
    assert_eq!(code, exit::FAILED, "{err}");
    assert!(err.contains("fails-on-purpose ... FAILED"), "{err}");
    assert!(
        err.contains("the last history line is iteration 2"),
        "the failure is printed: {err}"
    );
    assert!(
        table.contains("The Tier 1 pass-rate threshold (80%) applies to the full suite; this run of 1 case(s) selected by name is not held to it."),
        "{table}"
    );
    assert!(!err.contains("pass rate"), "{err}");
    let summary = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(summary.contains("applies to the full suite"), "{summary}");
    assert!(!summary.contains("Below the Tier 1 threshold"), "{summary}");
}

#[test]
fn compare_shows_the_deltas_and_a_tier_1_skill_under_80_percent_fails_the_run() {
    let root = support::workspace();
    let out = tempfile::tempdir().unwrap();
    let before = out.path().join("before");
    let now = out.path().join("now");
    let (code, _, err) = run(
        &root,
        &[
            "evals/loop/backlog-empty.yaml",
            "evals/loop/c4-pr-budget.yaml",
            "--out",
            before.to_str().unwrap(),
        ],
    );
    assert_eq!(code, exit::OK, "{err}");

    // A directory is a suite, held to the Tier 1 threshold.
    let suite = out.path().join("suite");
    std::fs::create_dir(&suite).unwrap();
    for case in [
        "evals/loop/backlog-empty.yaml",
        "harness/tests/cases/fails-on-purpose.yaml",
    ] {
        let case = root.join(case);
        std::fs::copy(&case, suite.join(case.file_name().unwrap())).unwrap();
    }
    let (code, table, err) = run(
        &root,
        &[
            suite.to_str().unwrap(),
            "--no-snapshots",
            "--compare",
            before.join("benchmark.json").to_str().unwrap(),
            "--out",
            now.to_str().unwrap(),
        ],
    );
    assert_eq!(code, exit::FAILED, "{err}");
    assert!(
        table.contains("work          2  50% (−50.0 pts)"),
        "{table}"
    );
    assert!(
        err.contains("error: Tier 1 skill 'work' pass rate is 50% (threshold: 80%)"),
        "{err}"
    );
    assert!(
        !err.contains("snapshot"),
        "no snapshot was compared, so no snapshot help: {err}"
    );
    let summary = std::fs::read_to_string(now.join("summary.md")).unwrap();
    assert!(
        summary.contains("| work | 2 | 50% (−50.0 pts) |"),
        "{summary}"
    );
    assert!(
        summary.contains("- Tier 1 skill 'work' pass rate is 50% (threshold: 80%)"),
        "{summary}"
    );
    assert!(
        summary.contains("| `fails-on-purpose` | work |"),
        "{summary}"
    );
    for report in ["report.html", "grading.json", "benchmark.json"] {
        assert!(now.join(report).is_file(), "{report}");
    }

    let (code, _, err) = run(
        &root,
        &["evals/loop/backlog-empty.yaml", "--compare", "Cargo.toml"],
    );
    assert_eq!(code, exit::BAD_CASE);
    assert!(err.contains("Cargo.toml is not a benchmark.json"), "{err}");
}

#[test]
fn new_writes_where_dir_says() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[workspace]\n").unwrap();
    std::os::unix::fs::symlink(support::fixtures().dir, dir.path().join("fixtures")).unwrap();
    let (code, out, err) = call(dir.path(), &["new", "mine", "--dir", "my-cases"]);
    assert_eq!(code, exit::OK, "{err}");
    assert!(out.contains("created my-cases/mine.yaml"), "{out}");
    // Regression: the hint ran nextest, which runs only the cases under evals/.
    assert!(
        out.contains("`sdd-evals run my-cases/mine.yaml` runs it again")
            && !out.contains("nextest run -p"),
        "{out}"
    );
    assert!(dir.path().join("my-cases/mine.yaml").is_file());
    assert!(!dir.path().join("evals").exists(), "nothing under evals/");
}

#[test]
fn accept_writes_a_new_cases_snapshots_and_never_a_changed_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), "[workspace]\n").unwrap();
    std::os::unix::fs::symlink(support::fixtures().dir, dir.path().join("fixtures")).unwrap();
    let (code, out, err) = call(dir.path(), &["new", "my-first-case"]);
    assert_eq!(code, exit::OK, "{err}");
    assert!(
        out.contains("sdd-evals run evals/loop/my-first-case.yaml --accept"),
        "{out}"
    );
    let case = "evals/loop/my-first-case.yaml";
    let snapshots = dir.path().join("evals/loop/snapshots");

    let (code, _, err) = run(dir.path(), &[case]);
    assert_eq!(code, exit::FAILED, "no snapshot is stored yet: {err}");
    assert!(err.contains("help: `sdd-evals run CASE --accept`"), "{err}");
    assert!(!snapshots.exists(), "a plain run writes no snapshot");

    let (code, _, err) = run(dir.path(), &[case, "--accept"]);
    assert_eq!(code, exit::OK, "{err}");
    assert!(
        err.contains("new: written to evals/loop/snapshots/my-first-case__output.snap"),
        "{err}"
    );
    let output = snapshots.join("my-first-case__output.snap");
    let text = std::fs::read_to_string(&output).unwrap();
    assert!(text.contains("Backlog empty — 0 iterations used"), "{text}");
    let (code, out, err) = run(dir.path(), &[case]);
    assert_eq!(code, exit::OK, "the accepted snapshots match: {err}");
    // Regression: "1 cases: 1 passed".
    assert!(out.contains("\n1 case: 1 passed, 0 failed"), "{out}");

    let changed = text.replace("Backlog empty", "Backlog was empty");
    std::fs::write(&output, &changed).unwrap();
    let (code, _, err) = run(dir.path(), &[case, "--accept"]);
    assert_eq!(code, exit::FAILED, "{err}");
    assert!(
        err.contains("the new one is evals/loop/snapshots/my-first-case__output.snap.new: `sdd-evals review` shows the diff"),
        "{err}"
    );
    assert!(
        err.contains("help: a changed snapshot: the run wrote each changed snapshot beside the stored one as a .snap.new"),
        "{err}"
    );
    assert!(
        !err.contains("`--keep`"),
        "only a snapshot failed: no sandbox to look into: {err}"
    );
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        changed,
        "left as it was"
    );
    let pending = snapshots.join("my-first-case__output.snap.new");
    assert_eq!(
        std::fs::read_to_string(&pending).unwrap(),
        text,
        "the run's own output, for review"
    );

    // A failing new case: --accept writes none of its snapshots.
    let failing = dir
        .path()
        .join(case.replace("my-first-case", "failing-case"));
    let yaml = std::fs::read_to_string(dir.path().join(case))
        .unwrap()
        .replace("id: my-first-case", "id: failing-case")
        .replace("Backlog empty", "No such words");
    std::fs::write(&failing, yaml).unwrap();
    let (code, _, err) = run(dir.path(), &["evals/loop/failing-case.yaml", "--accept"]);
    assert_eq!(code, exit::FAILED, "{err}");
    assert!(
        err.contains("--accept writes a new case's snapshots only once its other checks pass"),
        "{err}"
    );
    assert!(
        !err.contains("help: `sdd-evals run CASE --accept`"),
        "{err}"
    );
    assert!(err.contains("`--keep` keeps the sandboxes"), "{err}");
    assert!(!snapshots.join("failing-case__output.snap").exists());
}

#[test]
fn jobs_run_cases_at_once_and_report_them_in_suite_order() {
    let root = support::workspace();
    let out = tempfile::tempdir().unwrap();
    let cases = [
        "evals/loop/c9-resume-diverged.yaml",
        "evals/loop/backlog-empty.yaml",
        "evals/loop/dependency-cycle.yaml",
    ];
    let mut args = cases.to_vec();
    args.extend(["-j", "3", "--out", out.path().to_str().unwrap()]);
    let (code, table, err) = run(&root, &args);
    assert_eq!(code, exit::OK, "{err}");
    let order = |text: &str, ids: [&str; 3]| {
        let at: Vec<usize> = ids.iter().map(|id| text.find(id).unwrap()).collect();
        at.windows(2).all(|w| w[0] < w[1])
    };
    let ids = ["backlog-empty", "c9-resume-diverged", "dependency-cycle"];
    assert!(order(&err, ids), "progress in suite order:\n{err}");
    assert!(order(&table, ids), "table in suite order:\n{table}");
    assert!(err.contains("[1/3] backlog-empty ... ok"), "{err}");
}

/// `--timings` adds a row of phases per case, their sums, and the run's
/// wall and CPU time; the report's own table is unchanged above it.
#[test]
fn timings_show_each_cases_phases_and_the_runs_wall_and_cpu() {
    let root = support::workspace();
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().display().to_string();
    let args = [
        "evals/loop/backlog-empty.yaml",
        "evals/loop/c4-pr-budget.yaml",
        "--timings",
        "--out",
        &out_dir,
    ];
    let (code, table, err) = run(&root, &args);
    assert_eq!(code, exit::OK, "{err}");
    let timings = &table[table.find("case (ms)").expect("the timings table")..];
    for column in [
        "world", "events", "ticks", "capture", "judging", "teardown", "total",
    ] {
        assert!(
            timings.lines().next().unwrap().contains(column),
            "{timings}"
        );
    }
    let rows: Vec<&str> = timings.lines().collect();
    assert!(
        rows.iter().any(|r| r.starts_with("backlog-empty ")),
        "{timings}"
    );
    assert!(
        rows.iter().any(|r| r.starts_with("c4-pr-budget ")),
        "{timings}"
    );
    let all = rows
        .iter()
        .find(|r| r.starts_with("all 2 "))
        .expect("the sums");
    assert_eq!(
        all.split_whitespace().nth(5),
        Some("3"),
        "three ticks in all: {all}"
    );
    assert!(
        timings.contains("\nrun: ") && timings.contains(" job(s)"),
        "{timings}"
    );
    assert!(timings.contains("\ncpu: "), "{timings}");
}

/// A real-CLI case whose CLI is not installed is reported skipped — never
/// passed — and `--require-agents` makes it a failure.
#[test]
fn a_real_cli_case_without_its_cli_is_skipped_and_require_agents_fails_it() {
    let root = support::workspace();
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().display().to_string();
    let case = "evals/loop/c8-cost-budget-real-codex.yaml";
    let (code, stdout, stderr) = call(&root, &["run", case, "--out", &out_dir]);
    assert_eq!(code, exit::OK, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "c8-cost-budget-real-codex ... skipped: @openai/codex 0.169.0 is not installed"
        ),
        "{stderr}"
    );
    assert!(stdout.contains("0 passed, 0 failed, 1 skipped"), "{stdout}");
    let grading = std::fs::read_to_string(out.path().join("grading.json")).unwrap();
    assert!(
        grading.contains("\"skipped\": \"@openai/codex"),
        "{grading}"
    );

    let (code, _, stderr) = call(&root, &["run", case, "--out", &out_dir, "--require-agents"]);
    assert_eq!(code, exit::FAILED, "{stderr}");
    assert!(
        stderr.contains("c8-cost-budget-real-codex ... FAILED"),
        "{stderr}"
    );
}

#[test]
fn agents_lists_each_pinned_cli_and_how_to_install_a_missing_one() {
    let root = support::workspace();
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().display().to_string();
    let (code, stdout, _) = call(&root, &["agents", "--dir", &dir_arg]);
    assert_eq!(code, exit::UNAVAILABLE, "{stdout}");
    for line in [
        "claude   @anthropic-ai/claude-code@2.1.332",
        "codex    @openai/codex@0.169.0",
        "gemini   @google/gemini-cli@0.61.0",
        "opencode opencode-ai@1.18.33",
        "missing: its cases are skipped; install it with `sdd-evals agents install`",
    ] {
        assert!(stdout.contains(line), "{stdout}");
    }
    assert!(
        stdout.contains(&format!("install directory: {dir_arg} (0 MB)")),
        "{stdout}"
    );
}

#[test]
fn agents_looks_for_the_claude_version_the_environment_names_and_refuses_a_bad_name() {
    let root = support::workspace();
    let dir = tempfile::tempdir().unwrap();
    let dir_arg = dir.path().display().to_string();
    let args = ["agents", "--dir", &dir_arg];
    let versions = "SDD_EVALS_AGENT_VERSIONS";
    let (code, stdout, _) = call_with(&root, &[(versions, "claude@2.1.999")], &args);
    assert_eq!(code, exit::UNAVAILABLE, "{stdout}");
    assert!(
        stdout.contains("claude   @anthropic-ai/claude-code@2.1.999 "),
        "{stdout}"
    );
    assert!(stdout.contains("codex    @openai/codex@"), "{stdout}");
    let (code, stdout, stderr) = call_with(&root, &[(versions, "claude=2.1.999")], &args);
    assert_eq!(code, exit::USAGE, "{stdout}");
    assert!(
        stderr
            .contains("SDD_EVALS_AGENT_VERSIONS has `claude=2.1.999`: each entry is NAME@VERSION"),
        "{stderr}"
    );
    assert!(stdout.is_empty(), "{stdout}");
}

#[test]
fn the_readme_examples_are_cases_of_the_suite() {
    let root = support::workspace();
    let readme = std::fs::read_to_string(root.join("evals/README.md")).unwrap();
    for id in [
        "budget-hand-edited",
        "max-iterations-two",
        "hook-budget-hand-edited",
    ] {
        let case = std::fs::read_to_string(root.join(format!("evals/loop/{id}.yaml"))).unwrap();
        assert!(
            readme.contains(&format!("```yaml\n{case}```")),
            "evals/README.md's copy of evals/loop/{id}.yaml differs from the file"
        );
        assert!(case.lines().count() <= 30, "{id} is over 30 lines");
    }
}

#[test]
fn review_shows_accepts_and_rejects_changed_snapshots_without_cargo_insta() {
    let dir = tempfile::tempdir().unwrap();
    let snaps = dir.path().join("snapshots");
    std::fs::create_dir(&snaps).unwrap();
    let write = |name: &str, body: &str, line: bool| {
        let meta = if line { "assertion_line: 120\n" } else { "" };
        std::fs::write(
            snaps.join(name),
            format!(
                "---\nsource: harness/tests/evals.rs\ndescription: a case\n{meta}---\n{body}\n"
            ),
        )
        .unwrap();
    };
    write(
        "one__output.snap",
        "==> tick 1 (exit 0)\nold line\nsame",
        false,
    );
    write(
        "one__output.snap.new",
        "==> tick 1 (exit 0)\nnew line\nsame",
        true,
    );
    write("two__output.snap", "two", false);
    write("two__output.snap.new", "two, changed", true);
    let root = support::workspace();
    let at = dir.path().to_str().unwrap();

    let (code, out, err) = call(&root, &["review", at]);
    assert_eq!(code, exit::OK, "{err}");
    assert!(out.contains("-old line\n+new line\n"), "{out}");
    assert!(out.contains("2 snapshot(s) to review"), "{out}");
    assert!(
        snaps.join("one__output.snap.new").exists(),
        "listing changes nothing"
    );

    let one = snaps.join("one__output.snap.new");
    let (code, out, err) = call(&root, &["review", "--accept", one.to_str().unwrap()]);
    assert_eq!(code, exit::OK, "{err}");
    assert!(out.contains("accepted "), "{out}");
    assert!(!one.exists());
    let stored = std::fs::read_to_string(snaps.join("one__output.snap")).unwrap();
    assert!(
        stored.contains("new line") && !stored.contains("assertion_line"),
        "{stored}"
    );

    let (code, out, _) = call(&root, &["review", "--reject", at]);
    assert_eq!(code, exit::OK);
    assert!(out.contains("rejected "), "{out}");
    assert_eq!(
        std::fs::read_to_string(snaps.join("two__output.snap")).unwrap(),
        "---\nsource: harness/tests/evals.rs\ndescription: a case\n---\ntwo\n"
    );
    let (_, out, _) = call(&root, &["review", at]);
    assert!(out.starts_with("no snapshot to review"), "{out}");
}
