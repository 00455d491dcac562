//! `mock-qmd` as the skills see it: every verb in every state.

use std::path::{Path, PathBuf};
use std::time::Instant;

use assert_cmd::Command;
use rstest::rstest;
use sdd_mocks::qmd::{self, QmdState};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/qmd")
}

fn qmd_cmd(state_file: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mock-qmd"));
    cmd.env(qmd::ENV_FIXTURES, fixtures())
        .env(qmd::ENV_STATE, state_file);
    cmd
}

/// What an answer from an `up` qmd must contain, per verb.
fn expect_up(verb: &str, stdout: &str) {
    match verb {
        "status" => {
            assert!(stdout.starts_with("QMD Status\n"), "{stdout}");
            assert!(stdout.contains("  Total:    5 files indexed"), "{stdout}");
            assert!(stdout.contains("  adr (qmd://adr/)"), "{stdout}");
        }
        "search" | "query" => {
            let hits: serde_json::Value = serde_json::from_str(stdout).unwrap();
            assert_eq!(
                hits[0]["file"], "qmd://adr/0024-qmd-hard-dependency.md",
                "{stdout}"
            );
            assert!(hits[0]["docid"].as_str().unwrap().starts_with('#'));
            assert!(hits[0]["snippet"].as_str().unwrap().contains("qmd"));
        }
        "update" => assert!(stdout.ends_with("✓ All collections updated.\n"), "{stdout}"),
        "embed" => assert_eq!(stdout, "✓ All content hashes already have embeddings.\n"),
        other => panic!("{other}"),
    }
}

fn args(verb: &str) -> Vec<&str> {
    match verb {
        "search" => vec!["search", "qmd unreachable", "--json"],
        "query" => vec!["query", "qmd", "unreachable", "-c", "adr", "--json"],
        other => vec![other],
    }
}

#[rstest]
fn every_verb_in_every_state(
    #[values("status", "search", "query", "update", "embed")] verb: &str,
    #[values(QmdState::Up, QmdState::Down, QmdState::Slow(200))] state: QmdState,
) {
    let dir = tempfile::tempdir().unwrap();
    let state_file = dir.path().join("qmd.state");
    qmd::state::write(&state_file, state).unwrap();
    let start = Instant::now();
    let out = qmd_cmd(&state_file).args(args(verb)).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    match state {
        QmdState::Down => {
            assert_eq!(out.status.code(), Some(1), "{stderr}");
            assert_eq!(stdout, "");
            assert!(
                stderr.starts_with("Error: cannot reach the qmd index"),
                "{stderr}"
            );
        }
        QmdState::Up | QmdState::Slow(_) => {
            assert!(out.status.success(), "{stderr}");
            expect_up(verb, &stdout);
        }
    }
    if let Some(delay) = state.delay() {
        assert!(
            start.elapsed() >= delay,
            "answered after {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn missing_state_file_is_up_and_search_formats_match_the_real_tool() {
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("never-written");
    let out = qmd_cmd(&absent)
        .args(["search", "review", "round"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success());
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("qmd://adr/0010-bounded-review.md:"),
        "{text}"
    );
    assert!(
        text.contains("Title: ADR-0010: Bounded review-response iteration"),
        "{text}"
    );

    let files = qmd_cmd(&absent)
        .args(["search", "login", "--files"])
        .output()
        .unwrap();
    let files = String::from_utf8(files.stdout).unwrap();
    assert!(
        files
            .lines()
            .all(|l| l.starts_with('#') && l.contains(",qmd://")),
        "{files}"
    );

    let none = qmd_cmd(&absent)
        .args(["search", "zzzzqqq"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(none.stdout).unwrap(),
        "No results found.\n"
    );
    let none = qmd_cmd(&absent)
        .args(["search", "zzzzqqq", "--json"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(none.stdout).unwrap(), "[]\n");
}

#[test]
fn unset_fixtures_is_the_mocks_own_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_mock-qmd"))
        .env_remove(qmd::ENV_FIXTURES)
        .env_remove(qmd::ENV_STATE)
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(91));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .starts_with("[mock-qmd] ")
    );
}
