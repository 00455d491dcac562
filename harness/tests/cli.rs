//! `sdd-evals` commands, in-process through `main_with`.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use sdd_harness::cli::{Env, exit, main_with};

fn call(cwd: &Path, args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = {
        let mut env = Env {
            stdout: &mut out,
            stderr: &mut err,
            vars: BTreeMap::new(),
            cwd: cwd.to_path_buf(),
            exe: std::env::current_exe().unwrap(),
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
    assert!(err.contains("19 case file(s) have errors"), "{err}");
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
        };
        main_with(["sdd-evals", "run"].map(Into::into), &mut env)
    };
    let err = String::from_utf8(err).unwrap();
    assert_eq!(code, exit::UNAVAILABLE, "{err}");
    assert!(err.contains("cannot find the `sdd-loop` binary"), "{err}");
    assert!(err.contains("cargo build --workspace --bins"), "{err}");
}
