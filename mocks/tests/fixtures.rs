//! Every committed fixture loads, and the named worlds say what their
//! cases rely on.

use std::path::{Path, PathBuf};

use sdd_mocks::fixture::{Backlog, State};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

fn load(name: &str) -> Backlog {
    let path = fixtures().join("backlogs").join(name);
    Backlog::load(&path).unwrap_or_else(|e| panic!("{}", e.render()))
}

#[test]
fn every_backlog_loads() {
    let mut count = 0;
    for entry in std::fs::read_dir(fixtures().join("backlogs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            Backlog::load(&path).unwrap_or_else(|e| panic!("{}", e.render()));
            count += 1;
        }
    }
    assert!(count >= 8, "{count}");
}

#[test]
fn named_worlds_hold_what_their_cases_need() {
    let two = load("two-ready-stories.yaml");
    assert_eq!(two.issues.len(), 2);
    assert!(
        two.issues
            .iter()
            .all(|i| i.body.contains("### Acceptance Criteria"))
    );

    let ambiguous = load("ambiguous-criteria.yaml");
    assert!(!ambiguous.issues[0].body.contains("### Acceptance Criteria"));
    assert!(ambiguous.issues[1].body.contains("TBD"));

    let cycle = load("dependency-cycle.yaml");
    assert!(cycle.issues[0].body.contains("Blocked by: #51"));
    assert!(cycle.issues[1].body.contains("Blocked by: #50"));

    let busy = load("in-progress.yaml");
    assert!(busy.issues[0].labels.contains(&"in-progress".to_owned()));

    let feedback = load("pr-with-human-feedback.yaml");
    let thread = &feedback.pull_requests[0].review_comments[0];
    assert!(
        !feedback.agent_logins.contains(&thread.author),
        "a human comment"
    );
    assert!(
        feedback.agent_logins.contains(&thread.replies[0].author),
        "an agent reply"
    );

    // Regression: an unquoted `body: Closes #141` loads as "Closes" (a ` #`
    // starts a YAML comment), silently dropping the issue reference.
    assert_eq!(feedback.pull_requests[0].body, "Closes #141");

    let merged = load("merged-pr.yaml");
    assert!(merged.pull_requests[0].merged.value);
    assert_eq!(merged.pull_requests[0].state, State::Closed);

    assert_eq!(load("review-single-pr.yaml").pull_requests.len(), 1);
    let empty = load("empty.yaml");
    assert!(empty.issues.is_empty() && empty.pull_requests.is_empty());
}

#[test]
fn a_broken_backlog_names_file_line_and_column() {
    let path = fixtures().join("broken/backlog-unknown-key.yaml");
    let err = Backlog::load(&path).unwrap_err();
    let rendered = err.render();
    assert!(
        rendered.starts_with(&format!(
            "error: {}:8:5: unknown field `lables`",
            path.display()
        )),
        "{rendered}"
    );
    assert!(
        rendered
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("help: "),
        "{rendered}"
    );
}

#[test]
fn every_example_script_loads() {
    for entry in std::fs::read_dir(fixtures().join("scripts")).unwrap() {
        let path = entry.unwrap().path();
        sdd_mocks::skill::Script::load(&path).unwrap_or_else(|e| panic!("{}", e.render()));
    }
    let script =
        sdd_mocks::skill::Script::load(&fixtures().join("scripts/work-opens-one-pr.yaml")).unwrap();
    assert_eq!(
        script.ticks[0].summary.as_deref(),
        Some("Opened 1 PR for #1")
    );
}
