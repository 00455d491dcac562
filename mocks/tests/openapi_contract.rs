//! The mock tracker held to GitHub's published API (issue 27).
//!
//! `fixtures/github-openapi/operations.json` holds, for every operation
//! the engine's tracker client (`sdd_loop::world::tracker::HttpTracker`) calls,
//! the response schemas from GitHub's official OpenAPI description
//! (npm `@octokit/openapi`, pinned; extracted by the script beside it — no
//! network here). Two checks:
//!
//! - every request the engine's client makes, driven through every method
//!   of the `Tracker` seam against the mock (pagination included), is one
//!   of those documented operations;
//! - every answer the mock gives for each operation, on every page, in a
//!   world with open, closed and merged pull requests, CRLF bodies,
//!   labels, comments and review threads, validates against that
//!   operation's schema — and so do its error answers where GitHub
//!   documents them (404 for a repository the token cannot see, 410 with
//!   issues disabled, 422 with `errors[]`, 403 for the rate limit).
//!
//! And the check can fail: a mock answer with a field GitHub requires
//! removed, or given the wrong type, is rejected.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use sdd_loop::world::tracker::{HttpTracker, Tracker, TrackerConfig};
use sdd_mocks::fixture::Backlog;
use sdd_mocks::tracker::{BlockingMockTracker, Fault, MockTracker};
use serde_json::{Value, json};

const TOKEN: &str = "contract-token";

fn spec_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/github-openapi/operations.json")
}

static SPEC: LazyLock<Value> = LazyLock::new(|| {
    let path = spec_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
});

/// An operation: its id, method and path template.
#[derive(Debug, Clone)]
struct Operation {
    id: String,
    method: String,
    pattern: Regex,
}

fn operations() -> Vec<Operation> {
    SPEC["operations"]
        .as_object()
        .expect("operations")
        .iter()
        .map(|(id, op)| {
            let template = op["path"].as_str().unwrap().to_owned();
            let pattern = Regex::new(&format!(
                "^{}$",
                Regex::new(r"\\\{[a-z_]+\\\}")
                    .unwrap()
                    .replace_all(&regex::escape(&template), "[^/]+")
            ))
            .unwrap();
            Operation {
                id: id.clone(),
                method: op["method"].as_str().unwrap().to_owned(),
                pattern,
            }
        })
        .collect()
}

/// The documented operation a request is, if any. GitHub serves
/// `/repositories/{id}/…` (where its own `Link` headers point) as the
/// same operation as `/repos/{owner}/{repo}/…`.
fn operation_for(method: &str, path: &str) -> Option<Operation> {
    let by_id = Regex::new(r"^/repositories/\d+(/.*)?$").unwrap();
    let path = match by_id.captures(path) {
        Some(c) => format!("/repos/acme/app{}", c.get(1).map_or("", |m| m.as_str())),
        None => path.to_owned(),
    };
    operations()
        .into_iter()
        .find(|op| op.method == method && op.pattern.is_match(&path))
}

/// The validator for `operation`'s `status` response.
fn validator(operation: &str, status: u16) -> jsonschema::Validator {
    let schema = &SPEC["operations"][operation]["responses"][status.to_string()];
    assert!(
        schema.is_object(),
        "{operation} documents no JSON answer with status {status}"
    );
    let mut root = schema.clone();
    root["components"] = SPEC["components"].clone();
    jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("{operation}: {e}"))
}

/// Schema errors of `body` as `operation`'s `status` answer, one line each.
fn violations(operation: &str, status: u16, body: &Value) -> Vec<String> {
    validator(operation, status)
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .take(20)
        .collect()
}

const WORLD: &str = r#"
repository: acme/app
agent_logins: [sdd-worker, sdd-responder]
line_endings: crlf
issues:
  - number: 1
    title: Add login page
    labels: [story, in-progress]
    body: |
      Users sign in.

      ### Acceptance Criteria
      - a user can log in
    comments:
      - { id: 900, author: alice, body: "Is this\nstill planned?", at: 2026-05-09T13:00:00Z }
  - number: 2
    title: Add logout button
    body: "Blocked by: #1"
    line_endings: lf
  - number: 3
    title: Old bug
    state: closed
pull_requests:
  - number: 10
    title: Login page
    body: "Closes #1\nWith tests."
    branch: feature/1-login
    author: sdd-worker
    labels: [needs-review]
    head_sha: 1111111111111111111111111111111111111111
    review_comments:
      - id: 100
        author: alice
        body: Please rename this
        at: 2026-05-09T14:00:00Z
        path: src/login.rs
        replies:
          - { id: 101, author: sdd-responder, body: Done, at: 2026-05-09T14:10:00Z }
    issue_comments:
      - { id: 102, author: bob, body: LGTM, at: 2026-05-09T14:20:00Z }
  - number: 11
    title: Merged work
    branch: feature/merged
    state: closed
    merged: true
    merged_at: 2026-05-08T10:00:00Z
  - number: 12
    title: Abandoned
    branch: feature/abandoned
    state: closed
"#;

/// The mock serving [`WORLD`] plus 110 open issues: more than a page of
/// 100, so pagination (and GitHub's `/repositories/{id}/…` links) is
/// exercised.
fn world() -> BlockingMockTracker {
    let backlog = Backlog::parse(Path::new("contract.yaml"), &with_fillers()).unwrap();
    MockTracker::builder()
        .backlog(backlog)
        .token(TOKEN)
        .start_blocking()
        .unwrap()
}

/// [`WORLD`] with 110 more open issues, inserted among the issues.
fn with_fillers() -> String {
    let fillers: String = (20..130)
        .map(|n| format!("  - {{ number: {n}, title: Filler {n}, body: \"Depends on #1\" }}\n"))
        .collect();
    WORLD.replacen("pull_requests:", &format!("{fillers}pull_requests:"), 1)
}

/// GET `url` (POST with `body`) as the engine's client would, with the token.
fn call(url: &str, body: Option<&Value>) -> (u16, Option<String>, Value) {
    send(url, body, false)
}

/// PATCH `url` with `body`, with the token.
fn patch(url: &str, body: &Value) -> (u16, Option<String>, Value) {
    send(url, Some(body), true)
}

fn send(url: &str, body: Option<&Value>, patch: bool) -> (u16, Option<String>, Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = match body {
        Some(json) if patch => agent
            .patch(url)
            .header("Authorization", &format!("Bearer {TOKEN}"))
            .header("Accept", "application/vnd.github+json")
            .send_json(json)
            .unwrap(),
        Some(json) => agent
            .post(url)
            .header("Authorization", &format!("Bearer {TOKEN}"))
            .header("Accept", "application/vnd.github+json")
            .send_json(json)
            .unwrap(),
        None => agent
            .get(url)
            .header("Authorization", &format!("Bearer {TOKEN}"))
            .header("Accept", "application/vnd.github+json")
            .call()
            .unwrap(),
    };
    let status = response.status().as_u16();
    let link = response
        .headers()
        .get("link")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.body_mut().read_to_string().unwrap();
    (
        status,
        link,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// Every page from `first`, each (status, body).
fn pages(first: &str) -> Vec<(String, u16, Value)> {
    let mut out = Vec::new();
    let mut next = Some(first.to_owned());
    while let Some(url) = next {
        let (status, link, body) = call(&url, None);
        next = link
            .as_deref()
            .and_then(sdd_loop::world::tracker::next_link);
        out.push((url, status, body));
        assert!(out.len() < 20, "runaway pagination");
    }
    out
}

fn body_id((_, _, body): &(u16, Option<String>, Value)) -> u64 {
    body["id"].as_u64().expect("an id")
}

fn path_of(url: &str, base: &str) -> String {
    url.strip_prefix(base)
        .unwrap_or(url)
        .split('?')
        .next()
        .unwrap()
        .to_owned()
}

#[test]
fn every_request_the_engine_makes_is_a_documented_operation() {
    let t = world();
    let tracker = HttpTracker::new(TrackerConfig::new(&t.uri(), "acme/app", Some(TOKEN.into())));
    let issues = tracker.open_issues().unwrap();
    assert_eq!(
        issues.len(),
        112,
        "two fixture issues and 110 fillers, pulls left out"
    );
    assert!(
        issues
            .iter()
            .all(|i| !i.body.contains('\r') && !i.title.contains('\r'))
    );
    let pulls = tracker.open_pulls().unwrap();
    assert_eq!(pulls.iter().map(|p| p.number).collect::<Vec<_>>(), [10]);
    assert_eq!(pulls[0].closes(), BTreeSet::from([1]));
    assert_eq!(
        tracker.pull(11).unwrap().state,
        sdd_loop::state::history::PrState::Merged
    );
    assert_eq!(tracker.review_comments(10).unwrap().len(), 2);
    assert_eq!(tracker.issue_comments(1).unwrap().len(), 1);
    tracker.comment(2, "Escalated:\nplease clarify").unwrap();
    assert_eq!(tracker.login().unwrap(), "sdd-worker");
    let posted = tracker.post_comment(2, "A gate, id `g-00000001`").unwrap();
    assert_eq!(posted.number, 2);
    let replies = tracker.replies(2, posted.created_at).unwrap();
    assert!(
        replies
            .iter()
            .any(|r| r.id == posted.id && r.url == posted.url)
    );
    assert_eq!(tracker.permission("alice").unwrap(), "read");
    assert_eq!(tracker.permission("acme").unwrap(), "admin");
    assert_eq!(
        tracker
            .find_issue("sdd-loop-dashboard", "sdd-loop work dashboard")
            .unwrap(),
        None
    );
    let opened = tracker
        .open_issue("sdd-loop work dashboard", "state", &["sdd-loop-dashboard"])
        .unwrap();
    assert_eq!(
        tracker
            .find_issue("sdd-loop-dashboard", "sdd-loop work dashboard")
            .unwrap(),
        Some(opened.number)
    );
    tracker.edit_issue_body(opened.number, "new state").unwrap();

    let requests = t.requests();
    let mut used = BTreeSet::new();
    for r in &requests {
        assert!(
            r.status < 400,
            "{} {} answered {}",
            r.method,
            r.path,
            r.status
        );
        let op = operation_for(&r.method, &r.path).unwrap_or_else(|| {
            panic!(
                "{} {} is not an operation in {}",
                r.method,
                r.path,
                spec_path().display()
            )
        });
        used.insert(op.id);
    }
    assert!(
        requests
            .iter()
            .any(|r| r.path.starts_with("/repositories/")),
        "the second page came through GitHub's /repositories/{{id}} link"
    );
    // A person edits a comment (the mock answers it, held to the schema
    // below); the engine never does.
    let all: BTreeSet<String> = operations()
        .into_iter()
        .map(|o| o.id)
        .filter(|id| id != "issues/update-comment")
        .collect();
    assert_eq!(
        used, all,
        "every extracted operation is one the engine calls, and the engine calls each"
    );
}

#[test]
fn every_answer_of_the_mock_matches_githubs_schema() {
    let t = world();
    let base = t.uri();
    let repo = format!("{base}/repos/acme/app");
    let mut checked = BTreeSet::new();
    let mut failures = Vec::new();
    let mut check = |url: &str, status: u16, body: &Value, method: &str| {
        let path = path_of(url, &base);
        let op = operation_for(method, &path)
            .unwrap_or_else(|| panic!("{method} {path} is not a documented operation"));
        for v in violations(&op.id, status, body) {
            failures.push(format!("{method} {path} ({}): {v}", op.id));
        }
        checked.insert(op.id);
    };
    for first in [
        format!("{repo}/issues?state=open&per_page=100"),
        format!("{repo}/issues?state=all&per_page=30"),
        format!("{repo}/pulls?state=open&per_page=100"),
        format!("{repo}/pulls?state=all"),
        format!("{repo}/pulls/10/comments?per_page=100"),
        format!("{repo}/pulls/11/comments"),
        format!("{repo}/issues/1/comments?per_page=100"),
        format!("{repo}/issues/10/comments"),
        format!("{repo}/issues/2/comments"),
    ] {
        for (url, status, body) in pages(&first) {
            assert_eq!(status, 200, "{url}");
            check(&url, status, &body, "GET");
        }
    }
    for n in [10, 11, 12] {
        let url = format!("{repo}/pulls/{n}");
        let (status, _, body) = call(&url, None);
        check(&url, status, &body, "GET");
    }
    let url = format!("{repo}/issues/1/comments");
    let (status, _, body) = call(&url, Some(&json!({ "body": "Escalated:\r\nplease" })));
    assert_eq!(status, 201);
    check(&url, status, &body, "POST");
    let url = format!("{base}/user");
    let (status, _, body) = call(&url, None);
    check(&url, status, &body, "GET");
    let comment = body_id(&call(
        &format!("{repo}/issues/1/comments"),
        Some(&json!({ "body": "x" })),
    ));
    let url = format!("{repo}/issues/comments/{comment}");
    let (status, _, body) = patch(&url, &json!({ "body": "edited" }));
    assert_eq!(status, 200);
    assert_ne!(body["updated_at"], Value::Null);
    check(&url, status, &body, "PATCH");
    let url = format!("{repo}/issues/1/comments?since=2026-01-01T00:00:00Z");
    let (status, _, body) = call(&url, None);
    assert_eq!(status, 200);
    check(&url, status, &body, "GET");
    for user in ["alice", "acme", "sdd-worker"] {
        let url = format!("{repo}/collaborators/{user}/permission");
        let (status, _, body) = call(&url, None);
        check(&url, status, &body, "GET");
    }
    let url = format!("{repo}/issues");
    let (status, _, body) = call(
        &url,
        Some(
            &json!({ "title": "sdd-loop work dashboard", "body": "b", "labels": ["sdd-loop-dashboard"] }),
        ),
    );
    assert_eq!(status, 201);
    check(&url, status, &body, "POST");
    let url = format!("{repo}/issues/{}", body["number"]);
    let (status, _, body) = patch(&url, &json!({ "body": "state" }));
    assert_eq!(status, 200);
    check(&url, status, &body, "PATCH");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let all: BTreeSet<String> = operations().into_iter().map(|o| o.id).collect();
    assert_eq!(checked, all, "every operation's answer was checked");
}

#[test]
fn the_mocks_errors_match_githubs_error_schemas() {
    let t = world();
    let base = t.uri();
    let repo = format!("{base}/repos/acme/app");
    let mut failures = Vec::new();
    let mut check =
        |op: &str, status_want: u16, (status, _, body): (u16, Option<String>, Value)| {
            assert_eq!(status, status_want, "{op}: {body}");
            for v in violations(op, status, &body) {
                failures.push(format!("{op} {status}: {v}"));
            }
        };
    // A repository the token cannot see is 404, not 403.
    check(
        "issues/list-for-repo",
        404,
        call(&format!("{base}/repos/acme/private/issues"), None),
    );
    check("pulls/get", 404, call(&format!("{repo}/pulls/9999"), None));
    check(
        "issues/list-comments",
        404,
        call(&format!("{repo}/issues/9999/comments"), None),
    );
    // 422 with GitHub's errors[].
    check(
        "issues/create-comment",
        422,
        call(&format!("{repo}/issues/1/comments"), Some(&json!({}))),
    );
    // GitHub's primary rate limit.
    t.inject(Fault::primary_rate_limit("POST", "**/comments", 600).times(1));
    check(
        "issues/create-comment",
        403,
        call(
            &format!("{repo}/issues/1/comments"),
            Some(&json!({ "body": "x" })),
        ),
    );
    // Issues disabled: 410.
    let text = with_fillers().replacen("line_endings: crlf", "has_issues: false", 1);
    let disabled = MockTracker::builder()
        .backlog(Backlog::parse(Path::new("disabled.yaml"), &text).unwrap())
        .token(TOKEN)
        .start_blocking()
        .unwrap();
    let repo = format!("{}/repos/acme/app", disabled.uri());
    check(
        "issues/list-comments",
        410,
        call(&format!("{repo}/issues/1/comments"), None),
    );
    check(
        "issues/create-comment",
        410,
        call(
            &format!("{repo}/issues/1/comments"),
            Some(&json!({ "body": "x" })),
        ),
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_broken_answer_fails_the_contract() {
    let t = world();
    let repo = format!("{}/repos/acme/app", t.uri());
    let (_, _, issues) = call(&format!("{repo}/issues?per_page=5"), None);
    assert!(violations("issues/list-for-repo", 200, &issues).is_empty());
    // GitHub always sends `node_id`; an answer without it is not GitHub's.
    let mut broken = issues.clone();
    broken[0].as_object_mut().unwrap().remove("node_id");
    let found = violations("issues/list-for-repo", 200, &broken);
    assert!(found.iter().any(|v| v.contains("node_id")), "{found:?}");
    // A number is a number.
    let mut broken = issues;
    broken[0]["number"] = json!("1");
    assert!(!violations("issues/list-for-repo", 200, &broken).is_empty());

    let (_, _, pull) = call(&format!("{repo}/pulls/10"), None);
    assert!(violations("pulls/get", 200, &pull).is_empty());
    let mut broken = pull;
    broken["merged"] = json!("false");
    assert!(!violations("pulls/get", 200, &broken).is_empty());
    let (_, _, user) = call(&format!("{}/user", t.uri()), None);
    let mut broken = user;
    broken.as_object_mut().unwrap().remove("login");
    assert!(!violations("users/get-authenticated", 200, &broken).is_empty());
}

#[test]
fn the_engine_reads_githubs_own_example_answers() {
    use sdd_loop::world::tracker as t;
    let example = |op: &str| -> String {
        let examples = SPEC["operations"][op]["examples"].as_object().unwrap();
        let (_, value) = examples
            .iter()
            .find(|(name, _)| name.starts_with("20"))
            .unwrap_or_else(|| panic!("{op} has no example"));
        value.to_string()
    };
    // GitHub's example issue carries a `pull_request` key: it is a pull
    // request listed among issues, and left out.
    assert!(
        t::parse_issues("u", &example("issues/list-for-repo"))
            .unwrap()
            .is_empty()
    );
    assert!(
        !t::parse_pulls("u", &example("pulls/list"))
            .unwrap()
            .is_empty()
    );
    assert!(t::parse_pull("u", &example("pulls/get")).unwrap().number > 0);
    assert!(
        !t::parse_review_comments("u", &example("pulls/list-review-comments"))
            .unwrap()
            .is_empty()
    );
    assert!(
        !t::parse_issue_comments("u", &example("issues/list-comments"))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        t::parse_login("u", &example("users/get-authenticated")).unwrap(),
        "octocat"
    );
}
