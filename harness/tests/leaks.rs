//! No planted secret reaches what the harness writes (issue 10, "Leaks"):
//! the rendered snapshots, `grading.json`, the progress lines of
//! `sdd-evals run` — nor, with the real engine, the project's `.sdd/` or
//! the engine's output.
//!
//! A case's fake skill plants secrets in every channel it has (stderr
//! lines, a private key printed line by line, a progress event, a
//! failure's root cause, the summary, a failing exit's last stderr line):
//! credential shapes and the sandbox's tracker token, an exact value. The
//! case runs against the real engine, as a wrapper tick and in session;
//! then against an engine that redacts nothing (`--engine`, a script that
//! prints and records the secrets itself), so what keeps them out of the
//! snapshots and the grades is the harness's own redaction.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rstest::rstest;
use sdd_harness::driving::Options;
use sdd_harness::driving::runner;
use sdd_harness::judging::snapshot;
use sdd_harness::loading::case::Case;
use sdd_harness::reporting::benchmark::{self, Benchmark, Failing};
use sdd_harness::reporting::report::{self, Snapshots};
use sdd_harness::reporting::viewer;
use sdd_harness::world::bins::Binaries;
use sdd_harness::world::sandbox::TRACKER_TOKEN;

const GITHUB: &str = "ghp_Mz4Qw8Rt2Yx6Kp1Lc9Vn3Bh7Df5Gs0Ja8Ue2W";
const ANTHROPIC: &str = "sk-ant-api03-Hq7Wm2Xz9Lp4Rc8Tv1Kn6Bd3Fs5Gy0Je";
const AWS: &str = "AKIAQ7M2X9L4R8T1V6KN";
const BEARER: &str = "bearer-Ut8Ka3Wn6Yq1Zr5Xm9Hc2Lv";
const KEY_LINE: &str = "MIIEowIBAAKCAQEAu7Hk2Qw9Zr4Xm8Lc1Vn6Bd3Fs5Gy0JeTq7Wm2Xz9Lp4Rc8T";

/// The case, for the wrapper tick or the session driver.
fn case_yaml(driver: &str) -> String {
    format!(
        r##"id: leaks
name: Planted secrets reach no snapshot and no grade
proves: "the harness: credentials are redacted from snapshots and grades"
skill: work
driver: {driver}
world:
  backlog: two-ready-stories
args: [--max-agents, "1"]
ticks:
  - skill:
      actions:
        - stderr: "git push: remote rejected {GITHUB}"
        - stderr: "-----BEGIN RSA PRIVATE KEY-----"
        - stderr: "{KEY_LINE}"
        - stderr: "-----END RSA PRIVATE KEY-----"
        - progress: "pushing with {TRACKER_TOKEN}"
        - failure: {{ target: "#1", root_cause: "curl: Authorization: Bearer {BEARER}" }}
      summary: "Deployed with {AWS} and {ANTHROPIC}"
    expect:
      exit: 0
      printed: ["Outcome:"]
  - skill:
      actions:
        - stderr: "fatal: the tracker refused {TRACKER_TOKEN}"
      exit: 1
    expect: {{ exit: 0, outcome: errored }}
assertions:
  - text: The root cause is recorded with its credential redacted
    type: {{ history_field: {{ line: 1, pointer: /failures_this_iter/0/root_cause, is: {{ contains: "[REDACTED:authorization]" }} }} }}
"##
    )
}

/// An engine that redacts nothing: it prints and records the secrets.
fn leaky_engine() -> String {
    format!(
        r##"#!/bin/sh
mkdir -p .sdd/loop
echo '{{"iteration": 1, "outcome": "errored", "failures_this_iter": [{{"target": "#1", "root_cause": "Authorization: Bearer {BEARER}"}}], "summary": "{AWS}"}}' >> .sdd/loop/work.history.jsonl
echo '{{"iteration": 1, "rate_table_source": "{TRACKER_TOKEN}"}}' > .sdd/loop/work.budget.json
echo "Outcome: pushed with {GITHUB}"
echo "-----BEGIN OPENSSH PRIVATE KEY-----"
echo "{KEY_LINE}"
echo "-----END OPENSSH PRIVATE KEY-----"
echo "error: the tracker refused {TRACKER_TOKEN} and {ANTHROPIC}" >&2
exit 70
"##
    )
}

/// The leaky engine's case: every check quotes what it saw.
const LEAKY_CASE: &str = r#"id: leaky
name: Whatever an engine prints, the grades quote it redacted
proves: "the harness: credentials are redacted from snapshots and grades"
skill: work
world:
  backlog: two-ready-stories
ticks:
  - expect:
      printed: ["Outcome:"]
assertions:
  - text: The root cause is quoted as evidence
    type: { history_field: { pointer: /failures_this_iter/0/root_cause, is: { contains: "no such text" } } }
  - text: The budget is quoted as evidence
    type: { budget_field: { pointer: /rate_table_source, is: { contains: "no such text" } } }
"#;

fn options(engine: Option<String>) -> Options {
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    let binaries = Binaries::find(&std::env::current_exe().unwrap(), &vars, engine)
        .unwrap_or_else(|e| panic!("{e}\nhelp: {}", e.help()));
    Options {
        fixtures: support::fixtures(),
        workspace: support::workspace(),
        binaries,
        path: std::env::var_os("PATH").unwrap_or_default(),
        keep_sandbox: true,
        sandbox_parent: sdd_harness::world::sandbox::ram_dir(),
        worlds: None,
        clis: sdd_harness::world::clis::Clis::default(),
    }
}

/// Every file under `dir`, recursively, with its bytes.
fn files(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            files(&path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path.display().to_string(), bytes));
        }
    }
}

fn count(haystack: &[u8], needle: &str) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle.as_bytes())
        .count()
}

/// What the harness (and, with the real engine, the engine) left.
struct Seen {
    places: Vec<(String, Vec<u8>)>,
    passed: bool,
}

/// Runs the case in `yaml` and collects what it wrote: the rendered
/// snapshots, `grading.json` and `benchmark.json`, the progress lines —
/// and, when `engine_output`, the engine's output and the project's
/// `.sdd/`.
fn run(yaml: &str, engine: Option<String>, engine_output: bool) -> Seen {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("leaks.yaml");
    std::fs::write(&file, yaml).unwrap();
    let opts = options(engine);
    let case = Case::load(&file, &opts.fixtures).unwrap_or_else(|e| panic!("{}", e.render()));
    let ran = runner::run(&case, &opts).unwrap_or_else(|e| panic!("{e}"));
    let sandbox: PathBuf = ran.kept.clone().expect("the sandbox is kept");

    let mut places = Vec::new();
    for r in snapshot::render(case.id(), &ran.record, &ran.redactor) {
        places.push((format!("snapshot {}", r.name), r.text.into_bytes()));
    }
    // Stored snapshots are compared by the tests of the suite's cases.
    let result = report::evaluate(&case, &ran, Snapshots::Skip);
    let passed = result.passed;
    let mut progress = Vec::new();
    report::progress(&mut progress, 1, 1, &result);
    places.push(("the progress lines".to_owned(), progress));
    let out = dir.path().join("out");
    // The reports exactly as `sdd-evals run` writes them: grading, the
    // benchmark, the PR summary and the viewer page.
    let results = [result];
    let bench = Benchmark::new(&results, Duration::ZERO);
    let summary = benchmark::summary(&bench, None, &Failing::of(&results));
    let page = viewer::render(
        &results,
        viewer::Run {
            benchmark: &bench,
            compared: None,
        },
    );
    let json = bench.to_json();
    let others = [
        (report::BENCHMARK, json.as_str()),
        (report::SUMMARY, summary.as_str()),
        (report::VIEWER, page.as_str()),
    ];
    report::write_files(&out, &results, &others).unwrap();
    files(&out, &mut places);
    if engine_output {
        for t in &ran.record.ticks {
            places.push((format!("tick {} stdout", t.number), t.stdout.clone().into()));
            places.push((format!("tick {} stderr", t.number), t.stderr.clone().into()));
        }
        files(&sandbox.join("work/.sdd"), &mut places);
    }
    std::fs::remove_dir_all(&sandbox).unwrap();
    Seen { places, passed }
}

#[rstest]
#[case::wrapper_tick("wrapper")]
#[case::in_session("session")]
fn a_real_engine_s_run_leaves_no_secret_in_snapshots_or_grades(#[case] driver: &str) {
    let seen = run(&case_yaml(driver), None, true);
    assert!(seen.passed, "the case runs as scripted");
    assert_nothing_planted(
        &seen,
        &[
            "[REDACTED:github-token]",
            "[REDACTED:authorization]",
            "[REDACTED:aws-access-key-id]",
            "[REDACTED:anthropic-key]",
        ],
    );
}

#[test]
fn an_engine_that_redacts_nothing_leaves_no_secret_in_snapshots_or_grades() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("leaky-engine.sh");
    std::fs::write(&script, leaky_engine()).unwrap();
    let seen = run(
        LEAKY_CASE,
        Some(format!("sh '{}'", script.display())),
        false,
    );
    assert!(!seen.passed, "the leaky engine exits 70");
    assert_nothing_planted(
        &seen,
        &[
            "[REDACTED:github-token]",
            "[REDACTED:authorization]",
            "[REDACTED:anthropic-key]",
            "[REDACTED:private-key]",
            "[REDACTED:tracker-token]",
        ],
    );
}

/// No planted secret anywhere; every marker somewhere (the secrets did
/// reach what was checked).
fn assert_nothing_planted(seen: &Seen, markers: &[&str]) {
    let mut found = Vec::new();
    for secret in [GITHUB, ANTHROPIC, AWS, BEARER, KEY_LINE, TRACKER_TOKEN] {
        for (place, bytes) in &seen.places {
            let n = count(bytes, secret);
            if n > 0 {
                found.push(format!(
                    "{secret:?} {n}× in {place}:\n{}",
                    String::from_utf8_lossy(bytes)
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "planted secrets found:\n{}",
        found.join("\n")
    );
    for marker in markers {
        assert!(
            seen.places
                .iter()
                .any(|(_, bytes)| count(bytes, marker) > 0),
            "no {marker} anywhere: the secret never reached what was checked\n{}",
            seen.places
                .iter()
                .map(|(place, bytes)| format!("--- {place}\n{}\n", String::from_utf8_lossy(bytes)))
                .collect::<String>()
        );
    }
}
