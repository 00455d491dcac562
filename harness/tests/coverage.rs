//! `sdd-evals coverage`: the map of SPEC-0020 requirements and ADR-0028
//! confirmations to the cases that cover them, made from the cases each
//! time it is read (no copy in the docs to go stale); the command
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
fn the_docs_keep_no_copy_of_the_table_to_go_stale() {
    // The map is printed from the cases each time it is read; a copy in
    // the docs would need an edit with every new case's `covers:`.
    let root = support::workspace();
    let mut pages = vec![root.join("README.md"), root.join("evals/README.md")];
    for entry in std::fs::read_dir(root.join("docs/src")).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "md") {
            pages.push(entry.path());
        }
    }
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        assert!(
            coverage::spliced(&text).is_none(),
            "{} holds a coverage table again",
            page.display()
        );
    }
    let guide = std::fs::read_to_string(root.join("docs/src/writing-cases.md")).unwrap();
    assert!(guide.contains("`sdd-evals coverage` prints every requirement"));
}

#[test]
fn a_new_case_with_covers_is_in_the_map_at_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.yaml"),
        "id: mine\nname: mine\nproves: mine\ncovers: [\"Loop Mode Opt-In\", confirmation 3]\nskill: work\nticks: [{}]\n",
    )
    .unwrap();
    let (_, out, _) = call(
        &support::workspace(),
        &["coverage", "evals", dir.path().to_str().unwrap()],
    );
    let row = out
        .lines()
        .find(|l| l.starts_with("Loop Mode Opt-In "))
        .unwrap();
    assert!(row.contains("mine (0)"), "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("confirmation 3 "))
        .unwrap();
    assert!(row.contains("mine (0)"), "{out}");
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
