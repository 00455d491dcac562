//! `sdd-evals coverage`: the map of SPEC-0020 requirements and ADR-0028
//! confirmations to the cases that cover them. The table in
//! `evals/README.md` is regenerated here and must match, and the command
//! fails, naming them, while any requirement has no case.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sdd_harness::cli::{Env, exit, main_with};
use sdd_harness::loading::coverage::{self, Coverage};
use sdd_harness::loading::suite;

fn call(cwd: &Path, args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = {
        let mut env = Env {
            stdout: &mut out,
            stderr: &mut err,
            vars: BTreeMap::new(),
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

fn suite_map() -> Coverage {
    let root = support::workspace();
    let files = suite::case_files(&root, &[PathBuf::from("evals")]).unwrap();
    let (cases, errors) = suite::load(&files, &support::fixtures());
    assert!(errors.is_empty(), "{errors:?}");
    Coverage::of(&cases)
}

#[test]
fn the_readme_table_is_current() {
    let readme = std::fs::read_to_string(support::workspace().join("evals/README.md")).unwrap();
    let stored = coverage::spliced(&readme).expect("evals/README.md has the coverage markers");
    let want = format!("\n\n{}\n", suite_map().markdown());
    assert!(
        stored == want,
        "evals/README.md's coverage table is out of date: run `cargo run -p sdd-harness --bin sdd-evals -- coverage --markdown --write evals/README.md`\n--- stored\n{stored}\n--- generated\n{want}"
    );
}

#[test]
fn every_name_is_listed_and_uncovered_ones_fail_the_command() {
    let map = suite_map();
    assert_eq!(map.requirements.len(), 35);
    assert_eq!(map.confirmations.len(), 9);
    let (code, out, err) = call(&support::workspace(), &["coverage"]);
    assert!(out.contains("Cost Budget Stop (Condition #12)  "), "{out}");
    assert!(out.contains("c8-cost-budget ("), "{out}");
    let uncovered = map.uncovered();
    if uncovered.is_empty() {
        assert_eq!(code, exit::OK, "{err}");
    } else {
        assert_eq!(code, exit::FAILED);
        assert!(
            err.contains(&format!(
                "error: {} requirement(s) have no case: ",
                uncovered.len()
            )),
            "{err}"
        );
        assert!(uncovered.iter().all(|u| err.contains(u)), "{err}");
    }
}

#[test]
fn a_suite_covering_everything_passes() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = sdd_harness::loading::requirements::names()
        .iter()
        .map(|n| format!("  - \"{n}\"\n"))
        .collect();
    let case = format!(
        "id: all\nname: all\nproves: all\ncovers:\n{}skill: work\nticks: [{{}}]\nassertions:\n  - text: one\n    type: {{ final_iteration: 1 }}\n",
        names.concat()
    );
    std::fs::write(dir.path().join("all.yaml"), case).unwrap();
    let (code, out, err) = call(
        &support::workspace(),
        &["coverage", dir.path().to_str().unwrap()],
    );
    assert_eq!(code, exit::OK, "{out}{err}");
    assert!(
        out.ends_with(
            "35 of 35 SPEC-0020 requirements and 9 of 9 ADR-0028 confirmations have a case\n"
        ),
        "{out}"
    );
    assert!(out.contains("Final Report on Stop"), "{out}");
    assert!(out.contains("all (1)"), "{out}");
}
