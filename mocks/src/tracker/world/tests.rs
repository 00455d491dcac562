//! The world's rendering, numbering, merges, labels and line endings.

use super::*;
use std::path::Path;

use crate::fixture::Backlog;

fn world() -> World {
    let backlog = Backlog::parse(
        Path::new("w.yaml"),
        "repository: acme/app\nissues:\n  - { number: 1, title: A, labels: [story] }\npull_requests:\n  - number: 10\n    title: P\n    branch: feature/a\n    head_sha: abc\n    review_comments:\n      - id: 100\n        author: alice\n        body: fix\n        at: 2026-05-09T14:00:00Z\n",
    )
    .unwrap();
    let mut w = World::new(
        &backlog,
        "sdd-worker".into(),
        None,
        Clock::Fixed("2026-05-10T00:00:00Z".parse().unwrap()),
    );
    w.set_base_uri("http://127.0.0.1:9/");
    w
}

#[test]
fn issues_list_includes_pulls_with_pull_request_object() {
    let w = world();
    let all = w.list_issues("open", &[]);
    assert_eq!(all.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![1, 10]);
    assert!(all[0].1.get("pull_request").is_none());
    assert_eq!(
        all[1].1["pull_request"]["url"],
        "http://127.0.0.1:9/repos/acme/app/pulls/10"
    );
    assert_eq!(w.list_issues("open", &["story".into()]).len(), 1);
}

#[test]
fn ids_and_numbers_continue_after_the_fixture() {
    let mut w = world();
    let reply = w
        .reply_to_review_comment(10, 100, "sdd-responder", "done")
        .unwrap();
    assert_eq!(reply["id"], 101);
    assert_eq!(reply["in_reply_to_id"], 100);
    let nested = w
        .reply_to_review_comment(10, 101, "alice", "thanks")
        .unwrap();
    assert_eq!(
        nested["in_reply_to_id"], 100,
        "replies join the root thread"
    );
    let pr = w
        .create_pull("New", "feature/b", "", "", "sdd-worker")
        .unwrap();
    assert_eq!(pr["number"], 11);
    assert_eq!(pr["base"]["ref"], "main");
    assert!(matches!(
        w.create_pull("Again", "feature/b", "main", "", "x"),
        Err(WorldError::Invalid(_))
    ));
    assert_eq!(
        w.add_issue(&NewIssue {
            number: None,
            title: "t".into(),
            body: String::new(),
            labels: vec![],
            author: "a".into()
        })
        .unwrap(),
        12
    );
}

#[test]
fn merge_closes_and_refuses_twice() {
    let mut w = world();
    assert_eq!(w.merge_pull(10).unwrap(), "abc");
    let v = w.pull_view(10).unwrap();
    assert_eq!(
        (v["state"].as_str(), v["merged"].as_bool()),
        (Some("closed"), Some(true))
    );
    assert_eq!(v["merged_at"], "2026-05-10T00:00:00Z");
    assert_eq!(w.merge_pull(10), Err(WorldError::NotOpen(10)));
    assert_eq!(w.merge_pull(1), Err(WorldError::NotAPull(1)));
    assert_eq!(
        w.pull_summary(10).unwrap().state,
        sdd_loop::state::history::PrState::Merged
    );
}

#[test]
fn labels_add_remove() {
    let mut w = world();
    assert_eq!(
        w.add_labels(10, &["a".into(), "a".into()]).unwrap(),
        vec!["a"]
    );
    assert_eq!(w.remove_label(10, "a").unwrap(), Vec::<String>::new());
    assert!(matches!(
        w.remove_label(10, "a"),
        Err(WorldError::NoSuchLabel { .. })
    ));
    assert_eq!(w.set_labels(1, &["x".into()]).unwrap(), vec!["x"]);
}

#[test]
fn line_endings_per_backlog_and_per_issue() {
    let text = "repository: acme/app\nissues:\n  - { number: 1, title: A, body: \"a\\nb\\n\", line_endings: crlf }\n  - { number: 2, title: B, body: \"a\\nb\" }\n";
    let lf = Backlog::parse(Path::new("w.yaml"), text).unwrap();
    let w = World::new(&lf, "v".into(), None, Clock::System);
    assert_eq!(w.issue_view(1).unwrap()["body"], "a\r\nb\r\n");
    assert_eq!(w.issue_view(2).unwrap()["body"], "a\nb");
    let crlf = Backlog::parse(
        Path::new("w.yaml"),
        &format!(
            "line_endings: crlf\n{}",
            text.replace(", line_endings: crlf", ", line_endings: lf")
        ),
    )
    .unwrap();
    let w = World::new(&crlf, "v".into(), None, Clock::System);
    assert_eq!(w.issue_view(1).unwrap()["body"], "a\nb\n");
    assert_eq!(w.issue_view(2).unwrap()["body"], "a\r\nb");
}
