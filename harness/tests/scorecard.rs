//! `sdd-evals scorecard`, in-process through `main_with`: a new failure
//! class is one YAML file (issue 35) — added from a temporary directory,
//! it gets a row with a verdict for every adapter — and the command's
//! refusals name the file and the fix.
//!
//! The run needs the pinned Claude Code (`sdd-evals agents install`);
//! without it the test prints `SKIPPED: …` and passes, unless
//! `SDD_EVALS_REQUIRE_AGENTS=1` (CI sets it), as `evals.rs` does.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use sdd_harness::cli::{Env, exit, find_workspace, main_with};
use sdd_harness::world::clis::{Clis, Places};

fn workspace() -> std::path::PathBuf {
    find_workspace(&std::env::current_dir().unwrap()).expect("the tests run inside the workspace")
}

fn call(cwd: &Path, vars: BTreeMap<String, String>, args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = {
        let mut env = Env {
            stdout: &mut out,
            stderr: &mut err,
            vars,
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

/// A failure class the family does not have: the loop's cap in one
/// submission, with the model never done.
const NEW_CASE: &str = "\
id: cap-one-fire
name: A cap of 2 holds in one submission
held: the loop's session makes at most 3 model requests
held_when:
  - loop_requests: { at_most: 3 }
";

#[test]
fn a_new_failure_class_is_one_yaml_file_and_gets_a_row_for_every_adapter() {
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    let places = Places::from_vars(&vars).expect("SDD_EVALS_AGENT_VERSIONS is well formed");
    let claude = places
        .clis()
        .into_iter()
        .find(|c| c.name == "claude")
        .unwrap();
    if Clis::find(&places).get(&claude).is_none() {
        assert!(
            vars.get("SDD_EVALS_REQUIRE_AGENTS")
                .is_none_or(|v| v != "1"),
            "Claude Code is not installed (sdd-evals agents install)"
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: Claude Code is not installed (sdd-evals agents install); SDD_EVALS_REQUIRE_AGENTS=1 makes this fail"
        );
        return;
    }
    let root = workspace();
    let tmp = tempfile::tempdir().unwrap();
    let cases = tmp.path().join("cases");
    std::fs::create_dir(&cases).unwrap();
    std::fs::write(cases.join("cap-one-fire.yaml"), NEW_CASE).unwrap();
    let out = tmp.path().join("out");
    let adapters = "evals/scorecard/adapters";
    let (code, stdout, stderr) = call(
        &root,
        vars,
        &[
            "scorecard",
            ".",
            "fixtures/loop-plugins/reference",
            "fixtures/loop-plugins/reference-session",
            "--adapter",
            &format!("{adapters}/sdd-loop.yaml"),
            "--adapter",
            &format!("{adapters}/reference.yaml"),
            "--adapter",
            &format!("{adapters}/reference-session.yaml"),
            "--cases",
            cases.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(code, exit::OK, "{stdout}\n{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("scorecard.json")).unwrap())
            .unwrap();
    assert_eq!(json["rows"][0]["id"], "cap-one-fire", "{json:#}");
    let words: Vec<&str> = json["cells"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    // Every loop here honours its cap within one submission.
    assert_eq!(words, ["held", "held", "held"], "{stdout}");
    assert!(stdout.contains("cap-one-fire"), "{stdout}");
    assert!(out.join("scorecard.html").is_file());
}

#[test]
fn a_case_with_an_unknown_key_is_refused_at_its_line() {
    let root = workspace();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("bad.yaml"),
        "id: bad\nname: bad\nheld: bad\nfirez: 2\nheld_when: []\n",
    )
    .unwrap();
    let (code, _, stderr) = call(
        &root,
        BTreeMap::new(),
        &[
            "scorecard",
            "fixtures/loop-plugins/reference",
            "--adapter",
            "evals/scorecard/adapters/reference.yaml",
            "--cases",
            tmp.path().to_str().unwrap(),
        ],
    );
    assert_eq!(code, exit::BAD_CASE, "{stderr}");
    assert!(
        stderr.contains("bad.yaml:4:1: unknown field `firez`"),
        "{stderr}"
    );
    assert!(stderr.contains("help: "), "{stderr}");
}

#[test]
fn an_unknown_case_id_lists_the_cases_there_are() {
    let root = workspace();
    let (code, _, stderr) = call(
        &root,
        BTreeMap::new(),
        &[
            "scorecard",
            "fixtures/loop-plugins/reference",
            "--adapter",
            "evals/scorecard/adapters/reference.yaml",
            "--case",
            "no-such-case",
        ],
    );
    assert_eq!(code, exit::USAGE, "{stderr}");
    assert!(stderr.contains("no case `no-such-case`"), "{stderr}");
    assert!(stderr.contains("cap-refired"), "{stderr}");
}
