//! The mock tracker over real HTTP: pagination, state, faults, auth, the
//! journal, live head SHAs from a git origin, and the standalone binary.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sdd_mocks::fixture::Backlog;
use sdd_mocks::git::{self, Git};
use sdd_mocks::tracker::{BlockingMockTracker, Fault, MockTracker, NewIssue, WorldChange};
use serde_json::{Value, json};

const TOKEN: &str = "t0ken";

fn backlog(issues: u64) -> Backlog {
    let mut text =
        String::from("repository: acme/app\nagent_logins: [sdd-worker, sdd-responder]\nissues:\n");
    for n in 1..=issues {
        text.push_str(&format!(
            "  - {{ number: {n}, title: Issue {n}, labels: [story] }}\n"
        ));
    }
    text.push_str(
        "pull_requests:\n  - number: 500\n    title: Login\n    branch: feature/1-login\n    head_sha: 1111111111111111111111111111111111111111\n    review_comments:\n      - { id: 900, author: alice, body: Rename this, at: 2026-05-09T14:00:00Z }\n",
    );
    Backlog::parse(Path::new("inline.yaml"), &text).unwrap()
}

fn tracker(issues: u64) -> BlockingMockTracker {
    MockTracker::builder()
        .backlog(backlog(issues))
        .token(TOKEN)
        .start_blocking()
        .unwrap()
}

struct Client {
    agent: ureq::Agent,
    base: String,
}

struct Reply {
    status: u16,
    link: Option<String>,
    retry_after: Option<String>,
    text: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }
}

impl Client {
    fn new(base: &str) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .new_agent();
        Self {
            agent,
            base: base.to_owned(),
        }
    }

    fn url(&self, path: &str) -> String {
        if path.starts_with("http") {
            path.to_owned()
        } else {
            format!("{}{path}", self.base)
        }
    }

    fn finish(response: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Reply {
        let mut response = response.unwrap();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (link, retry_after) = (header("link"), header("retry-after"));
        Reply {
            status: response.status().as_u16(),
            link,
            retry_after,
            text: response.body_mut().read_to_string().unwrap(),
        }
    }

    fn get_as(&self, path: &str, auth: Option<&str>) -> Reply {
        let mut req = self.agent.get(self.url(path));
        if let Some(auth) = auth {
            req = req.header("Authorization", auth);
        }
        Self::finish(req.call())
    }

    fn get(&self, path: &str) -> Reply {
        self.get_as(path, Some(&format!("Bearer {TOKEN}")))
    }

    fn send(&self, method: &str, path: &str, body: Value) -> Reply {
        let auth = format!("Bearer {TOKEN}");
        let url = self.url(path);
        let response = match method {
            "POST" => self
                .agent
                .post(url)
                .header("Authorization", &auth)
                .send_json(body),
            "PUT" => self
                .agent
                .put(url)
                .header("Authorization", &auth)
                .send_json(body),
            "DELETE" => self.agent.delete(url).header("Authorization", &auth).call(),
            other => panic!("{other}"),
        };
        Self::finish(response)
    }
}

fn next_link(link: &str) -> Option<String> {
    link.split(", ").find_map(|part| {
        let (url, rel) = part.split_once("; ")?;
        (rel == "rel=\"next\"").then(|| url.trim_matches(['<', '>']).to_owned())
    })
}

fn numbers(reply: &Reply) -> Vec<u64> {
    reply
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["number"].as_u64().unwrap())
        .collect()
}

#[test]
fn link_headers_lead_through_every_page_to_the_end() {
    let t = tracker(44);
    let c = Client::new(&t.uri());
    let mut url = "/repos/acme/app/issues?state=open&per_page=10".to_owned();
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let reply = c.get(&url);
        assert_eq!(reply.status, 200);
        pages += 1;
        seen.extend(numbers(&reply));
        match reply.link.as_deref().and_then(next_link) {
            Some(next) => {
                assert!(
                    next.starts_with(&t.uri()),
                    "absolute URL on the server's own URI: {next}"
                );
                url = next;
            }
            None => break,
        }
    }
    assert_eq!(pages, 5, "44 issues + 1 PR at 10 per page");
    let mut expected: Vec<u64> = (1..=44).chain([500]).collect();
    expected.reverse();
    assert_eq!(seen, expected, "newest first, nothing lost or repeated");
    assert_eq!(t.count("GET", "/repos/acme/app/issues"), 1);
    assert_eq!(
        t.count("GET", "/repositories/*/issues"),
        4,
        "GitHub's links name the repository by id"
    );

    let page = c.get("/repos/acme/app/issues?per_page=10&page=5");
    assert!(page.link.as_deref().unwrap().contains("rel=\"prev\""));
    assert!(!page.link.as_deref().unwrap().contains("rel=\"next\""));
    let default_page = c.get("/repos/acme/app/issues");
    assert_eq!(
        numbers(&default_page).len(),
        30,
        "GitHub's default per_page"
    );
}

#[test]
fn comments_labels_and_pulls_change_later_reads() {
    let t = tracker(2);
    let c = Client::new(&t.uri());

    let posted = c.send(
        "POST",
        "/repos/acme/app/issues/1/comments",
        json!({ "body": "Taking this" }),
    );
    assert_eq!(posted.status, 201);
    assert_eq!(
        posted.json()["user"]["login"],
        "sdd-worker",
        "the viewer is the first agent login"
    );
    let comments = c.get("/repos/acme/app/issues/1/comments").json();
    assert_eq!(comments[0]["body"], "Taking this");
    assert_eq!(c.get("/repos/acme/app/issues/1").json()["comments"], 1);

    let labels = c.send(
        "POST",
        "/repos/acme/app/issues/1/labels",
        json!({ "labels": ["in-progress"] }),
    );
    assert_eq!(labels.status, 200);
    let names: Vec<Value> = labels
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("story"), json!("in-progress")]);
    assert_eq!(
        c.get("/repos/acme/app/issues?labels=in-progress")
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let removed = c.send(
        "DELETE",
        "/repos/acme/app/issues/1/labels/in-progress",
        Value::Null,
    );
    assert_eq!(removed.json()[0]["name"], "story");
    assert_eq!(removed.json().as_array().unwrap().len(), 1);
    let missing = c.send(
        "DELETE",
        "/repos/acme/app/issues/1/labels/in-progress",
        Value::Null,
    );
    assert_eq!(missing.status, 404);

    let opened = c.send(
        "POST",
        "/repos/acme/app/pulls",
        json!({ "title": "Issue 1", "head": "feature/1", "base": "main", "body": "Closes #1" }),
    );
    assert_eq!(opened.status, 201);
    assert_eq!(
        opened.json()["number"],
        501,
        "after the largest issue/PR number"
    );
    assert_eq!(numbers(&c.get("/repos/acme/app/pulls")), vec![501, 500]);

    let reply = c.send(
        "POST",
        "/repos/acme/app/pulls/500/comments/900/replies",
        json!({ "body": "Done" }),
    );
    assert_eq!(reply.status, 201);
    let thread = c.get("/repos/acme/app/pulls/500/comments").json();
    assert_eq!(thread[1]["in_reply_to_id"], 900);
    assert_eq!(thread[1]["user"]["login"], "sdd-worker");

    let merged = c.send("PUT", "/repos/acme/app/pulls/500/merge", json!({}));
    assert_eq!(merged.status, 200);
    assert_eq!(merged.json()["merged"], true);
    let pr = c.get("/repos/acme/app/pulls/500").json();
    assert_eq!(
        (pr["state"].as_str(), pr["merged"].as_bool()),
        (Some("closed"), Some(true))
    );
    assert_eq!(
        c.send("PUT", "/repos/acme/app/pulls/500/merge", json!({}))
            .status,
        405
    );
    assert_eq!(numbers(&c.get("/repos/acme/app/pulls")), vec![501]);
    assert_eq!(
        numbers(&c.get("/repos/acme/app/pulls?state=closed")),
        vec![500]
    );

    let review = c.send(
        "POST",
        "/repos/acme/app/pulls/501/reviews",
        json!({ "event": "APPROVE", "body": "ok" }),
    );
    assert_eq!(review.json()["state"], "APPROVED");
    assert_eq!(
        c.get("/repos/acme/app/pulls/501/reviews")
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn world_changes_between_ticks_show_in_the_api() {
    let t = tracker(1);
    let c = Client::new(&t.uri());
    let n = t
        .add_issue(&NewIssue {
            number: None,
            title: "Urgent".into(),
            body: "### Acceptance Criteria\n- fast".into(),
            labels: vec![],
            author: "alice".into(),
        })
        .unwrap();
    assert_eq!(n, 501);
    assert_eq!(
        c.get("/repos/acme/app/issues/501").json()["title"],
        "Urgent"
    );

    let id = t
        .add_review_comment(500, "carol", "One more thing")
        .unwrap();
    let comments = c.get("/repos/acme/app/pulls/500/comments").json();
    assert_eq!(comments.as_array().unwrap().last().unwrap()["id"], id);

    t.set_labels(1, &["do-not-merge"]).unwrap();
    assert_eq!(
        c.get("/repos/acme/app/issues/1").json()["labels"][0]["name"],
        "do-not-merge"
    );

    t.apply(&WorldChange::ClosePr(500)).unwrap();
    let pr = c.get("/repos/acme/app/pulls/500").json();
    assert_eq!(
        (pr["state"].as_str(), pr["merged"].as_bool()),
        (Some("closed"), Some(false))
    );
    assert_eq!(
        t.merge_pr(500).unwrap_err().to_string(),
        "pull request #500 is not open"
    );
}

#[test]
fn each_fault_kind() {
    let t = tracker(1);
    let c = Client::new(&t.uri());

    t.inject(Fault::status("GET", "**/issues", 503).times(1));
    assert_eq!(c.get("/repos/acme/app/issues").status, 503);
    assert_eq!(
        c.get("/repos/acme/app/issues").status,
        200,
        "only the next request"
    );

    t.inject(Fault::rate_limited("*", "**/pulls/*/merge", 42));
    for _ in 0..2 {
        let limited = c.send("PUT", "/repos/acme/app/pulls/500/merge", json!({}));
        assert_eq!(limited.status, 429);
        assert_eq!(limited.retry_after.as_deref(), Some("42"));
    }
    assert_eq!(
        t.pull(500).unwrap().state,
        sdd_loop::state::history::PrState::Open,
        "a faulted call changes nothing"
    );
    t.clear_faults();

    t.inject(Fault::malformed("GET", "/repos/acme/app/pulls/500").times(1));
    let broken = c.get("/repos/acme/app/pulls/500");
    assert_eq!(broken.status, 200);
    assert!(
        serde_json::from_str::<Value>(&broken.text).is_err(),
        "{}",
        broken.text
    );

    let delay = Duration::from_millis(300);
    let id = t.inject(Fault::delay("GET", "**/pulls/*", delay));
    let start = Instant::now();
    let slow = c.get("/repos/acme/app/pulls/500");
    assert!(start.elapsed() >= delay, "{:?}", start.elapsed());
    assert_eq!(slow.json()["number"], 500, "a delay still answers");
    t.remove_fault(id);

    let page = "<html><body>401: token rejected</body></html>";
    t.inject(Fault::error_body("GET", "**/issues", 401, page).times(1));
    let rejected = c.get("/repos/acme/app/issues");
    assert_eq!((rejected.status, rejected.text.as_str()), (401, page));

    let statuses: Vec<u16> = t.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![503, 200, 429, 429, 200, 200, 401]);
}

#[test]
fn faults_from_yaml() {
    let faults: Vec<Fault> = sdd_mocks::yaml::parse(
        Path::new("faults.yaml"),
        "- { method: GET, path: \"**/issues\", fault: { status: 502 }, times: 1 }\n- { path: \"**\", fault: { rate_limited: { retry_after: 7 } } }\n",
        "h",
    )
    .unwrap();
    let t = tracker(1);
    for fault in faults {
        t.inject(fault);
    }
    let c = Client::new(&t.uri());
    assert_eq!(c.get("/repos/acme/app/issues").status, 502);
    assert_eq!(
        c.get("/repos/acme/app/issues").retry_after.as_deref(),
        Some("7")
    );
}

#[test]
fn requests_without_the_token_are_rejected() {
    let t = tracker(1);
    let c = Client::new(&t.uri());
    // A private repository is invisible to a stranger: 404, as on GitHub.
    let none = c.get_as("/repos/acme/app/issues", None);
    assert_eq!(none.status, 404);
    assert_eq!(none.json()["message"], "Not Found");
    assert_eq!(c.get_as("/user", None).status, 401);
    assert_eq!(
        c.get_as("/user", None).json()["message"],
        "Requires authentication"
    );
    let wrong = c.get_as("/repos/acme/app/issues", Some("Bearer wrong"));
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.json()["message"], "Bad credentials");
    assert_eq!(
        c.get_as("/repos/acme/app/issues", Some(&format!("token {TOKEN}")))
            .status,
        200
    );
    assert_eq!(
        c.get_as("/repos/acme/app/nope", Some(&format!("Bearer {TOKEN}")))
            .status,
        404
    );

    let seen: Vec<(bool, u16)> = t
        .requests()
        .iter()
        .map(|r| (r.has_auth, r.status))
        .collect();
    assert_eq!(
        seen,
        vec![
            (false, 404),
            (false, 401),
            (false, 401),
            (true, 401),
            (true, 200),
            (true, 404)
        ]
    );
    let open = MockTracker::builder().start_blocking().unwrap();
    assert_eq!(
        Client::new(&open.uri())
            .get_as("/repos/acme/app/issues", None)
            .status,
        200,
        "no token configured"
    );
}

#[test]
fn journal_answers_queries() {
    let t = tracker(1);
    let c = Client::new(&t.uri());
    c.get("/repos/acme/app/issues?state=all&per_page=5");
    c.send(
        "POST",
        "/repos/acme/app/issues/1/comments",
        json!({ "body": "x" }),
    );
    let posts = t.requests_to("POST", "**/comments");
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].body_json().unwrap()["body"], "x");
    let gets = t.requests_to("GET", "/repos/*/*/issues");
    assert_eq!(gets[0].query_param("per_page"), Some("5"));
    t.clear_requests();
    assert!(t.requests().is_empty());
}

#[tokio::test]
async fn head_sha_is_read_live_from_the_origin() {
    let dir = tempfile::tempdir().unwrap();
    let backlog = Backlog::parse(
        Path::new("g.yaml"),
        "repository: acme/app\npull_requests:\n  - { number: 10, title: Login, branch: feature/1-login, head_sha: stale }\n",
    )
    .unwrap();
    let g = Git::default();
    let world = git::materialise(&g, &backlog, dir.path()).unwrap();
    let t = MockTracker::builder()
        .backlog(backlog)
        .origin(&world.origin)
        .start()
        .await
        .unwrap();
    let before = git::ref_sha(&g, &world.origin, "feature/1-login")
        .unwrap()
        .unwrap();
    assert_eq!(
        t.pull(10).unwrap().head_sha,
        before,
        "the live ref wins over the fixture"
    );
    let after = git::push_commits(&g, &world.clone, "feature/1-login", "main", 1, "fix").unwrap();
    let uri = t.uri();
    let body = tokio::task::spawn_blocking(move || {
        Client::new(&uri)
            .get_as("/repos/acme/app/pulls/10", None)
            .json()
    })
    .await
    .unwrap();
    assert_eq!(body["head"]["sha"], after);

    let refused = t.read(|w| w.pull_view(10)).unwrap();
    assert_eq!(refused["head"]["ref"], "feature/1-login");
}

#[test]
fn standalone_binary_serves_until_stdin_closes() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/backlogs/two-ready-stories.yaml");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mock-tracker"))
        .arg("--backlog")
        .arg(&fixture)
        .args(["--token", TOKEN])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line.trim();
    assert!(base.starts_with("http://127.0.0.1:"), "{line:?}");
    let c = Client::new(base);
    let issues = c.get("/repos/acme/app/issues");
    assert_eq!(issues.status, 200);
    assert_eq!(numbers(&issues).len(), 2);
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn standalone_binary_reports_a_broken_backlog_with_its_location() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.yaml");
    std::fs::write(
        &file,
        "repository: acme/app\nissues:\n  - number: 1\n    titel: Typo\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mock-tracker"))
        .arg("--backlog")
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with(&format!(
            "error: {}:4:5: unknown field `titel`",
            file.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with("help: "),
        "{stderr}"
    );
}

#[test]
fn an_unsupported_api_version_is_refused_as_github_does() {
    let t = tracker(1);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let status = |version: &str| {
        agent
            .get(format!("{}/repos/acme/app/issues", t.uri()))
            .header("Authorization", &format!("Bearer {TOKEN}"))
            .header("X-GitHub-Api-Version", version)
            .call()
            .unwrap()
            .status()
            .as_u16()
    };
    assert_eq!(status("2022-11-28"), 200);
    assert_eq!(status("2019-01-01"), 400);
}
