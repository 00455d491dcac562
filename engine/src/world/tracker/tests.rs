//! Unit tests of `tracker.rs`.

use super::*;
use std::sync::{Arc, Mutex};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn tracker(server: &MockServer, token: Option<&str>) -> (HttpTracker, Arc<Mutex<Vec<Duration>>>) {
    let slept = Arc::new(Mutex::new(Vec::new()));
    let s = slept.clone();
    let t = HttpTracker::new(TrackerConfig::new(
        &server.uri(),
        "acme/app",
        token.map(str::to_owned),
    ))
    .with_sleep(move |d| s.lock().unwrap().push(d));
    (t, slept)
}

#[test]
fn issues_follow_link_pagination_and_drop_pulls() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    let page2 = format!(
        "{}/repos/acme/app/issues?state=open&per_page=100&page=2",
        server.uri()
    );
    rt.block_on(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues"))
            .and(query_param("page", "2"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!([
                {"number": 3, "title": "c", "body": "Blocked by: #1", "labels": [{"name": "story"}]}
            ])))
            .mount(&server),
    );
    rt.block_on(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues"))
            .and(header("authorization", "Bearer s3cret"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header(
                        "link",
                        format!("<{page2}>; rel=\"next\", <{page2}>; rel=\"last\"").as_str(),
                    )
                    .set_body_json(serde_json::json!([
                        {"number": 1, "title": "a", "body": null, "labels": []},
                        {"number": 2, "title": "pr", "pull_request": {"url": "x"}}
                    ])),
            )
            .mount(&server),
    );
    let (t, _) = tracker(&server, Some("s3cret"));
    let issues = t.open_issues().unwrap();
    let numbers: Vec<u64> = issues.iter().map(|i| i.number).collect();
    assert_eq!(numbers, vec![1, 3]);
    assert_eq!(issues[1].labels, vec!["story".to_owned()]);
}

#[test]
fn retries_5xx_and_429_honouring_retry_after() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(ResponseTemplate::new(502))
            .up_to_n_times(1)
            .mount(&server),
    );
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "7"))
            .up_to_n_times(1)
            .mount(&server),
    );
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "number": 7, "title": "t", "state": "closed", "merged": true,
                "labels": [{"name": "do-not-merge"}], "head": {"ref": "f/7", "sha": "abc"},
                "user": {"login": "sdd-worker"}
            })))
            .mount(&server),
    );
    let (t, slept) = tracker(&server, None);
    let pr = t.pull(7).unwrap();
    assert_eq!(pr.state, PrState::Merged);
    assert!(pr.has_label("do-not-merge"));
    assert_eq!((pr.head_ref.as_str(), pr.head_sha.as_str()), ("f/7", "abc"));
    assert_eq!(
        *slept.lock().unwrap(),
        vec![Duration::from_millis(500), Duration::from_secs(7)]
    );
}

#[test]
fn retries_are_bounded_and_errors_never_show_the_token() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(
                ResponseTemplate::new(503).set_body_json(serde_json::json!({"message": "down"})),
            )
            .mount(&server),
    );
    let (t, slept) = tracker(&server, Some("s3cret"));
    let err = t.pull(7).unwrap_err();
    assert_eq!(slept.lock().unwrap().len(), 3);
    assert!(
        matches!(err, TrackerError::Status { status: 503, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("down"));
    assert!(!format!("{err} {err:?} {t:?}").contains("s3cret"));
}

fn limited(
    server: &MockServer,
    configure: impl FnOnce(&mut TrackerConfig),
) -> (HttpTracker, Arc<Mutex<Vec<Duration>>>) {
    let mut config = TrackerConfig::new(&server.uri(), "acme/app", None);
    configure(&mut config);
    let slept = Arc::new(Mutex::new(Vec::new()));
    let s = slept.clone();
    let t = HttpTracker::new(config).with_sleep(move |d| s.lock().unwrap().push(d));
    (t, slept)
}

fn hanging(rt: &tokio::runtime::Runtime) -> MockServer {
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(serde_json::json!({}))
                    .set_delay(Duration::from_secs(600)),
            )
            .mount(&server),
    );
    server
}

#[test]
fn a_tracker_that_never_answers_ends_at_the_per_request_timeout() {
    let rt = rt();
    let server = hanging(&rt);
    let (t, slept) = limited(&server, |c| {
        c.timeout = Duration::from_millis(50);
        c.retries = 2;
        c.retry_budget = Duration::from_secs(600);
    });
    let err = t.pull(7).unwrap_err();
    assert_eq!(
        err,
        TrackerError::TimedOut {
            method: "GET",
            url: format!("{}/repos/acme/app/pulls/7", server.uri()),
            limit: TimeLimit::Request {
                timeout: Duration::from_millis(50),
                attempts: 3
            },
        }
    );
    assert_eq!(
        *slept.lock().unwrap(),
        vec![Duration::from_millis(500), Duration::from_secs(1)]
    );
    let text = err.to_string();
    assert!(
            text.contains("per-request timeout of 0.05 s (3 attempts; raise it with --tracker-timeout SECS or SDD_LOOP_TRACKER_TIMEOUT)"),
            "{text}"
        );
    assert!(err.help().contains("--tracker-timeout"));
}

#[test]
fn a_tracker_that_never_answers_ends_within_the_retry_budget() {
    let rt = rt();
    let server = hanging(&rt);
    let (t, slept) = limited(&server, |c| {
        c.timeout = Duration::from_millis(50);
        c.retry_budget = Duration::from_millis(300);
    });
    let err = t.pull(7).unwrap_err();
    assert!(
        matches!(
            err,
            TrackerError::TimedOut {
                limit: TimeLimit::Budget { attempts: 1, .. },
                ..
            }
        ),
        "{err}"
    );
    // The first backoff (0.5 s) does not fit in what is left of 0.3 s.
    assert!(slept.lock().unwrap().is_empty());
    assert!(
            err.to_string().contains("used up the tracker retry budget of 0.3 s (raise it with --tracker-retry-budget SECS or SDD_LOOP_TRACKER_RETRY_BUDGET)"),
            "{err}"
        );
}

#[test]
fn retry_after_beyond_the_budget_gives_up_at_once() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "3600"))
            .expect(1)
            .mount(&server),
    );
    let (t, slept) = tracker(&server, None);
    let err = t.pull(7).unwrap_err();
    let TrackerError::RetryAfterTooLong {
        status,
        retry_after,
        budget,
        ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(
        (*status, *retry_after, *budget),
        (429, Duration::from_secs(3600), Duration::from_secs(30))
    );
    assert!(slept.lock().unwrap().is_empty());
    assert!(
        err.to_string().contains("Retry-After 3600 s")
            && err.to_string().contains("--tracker-retry-budget SECS"),
        "{err}"
    );
    rt.block_on(server.verify());
}

#[test]
fn server_errors_are_retried_only_within_the_budget() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(ResponseTemplate::new(503))
            .mount(&server),
    );
    let (t, slept) = limited(&server, |c| {
        c.retries = 10;
        c.retry_budget = Duration::from_secs(2);
    });
    let err = t.pull(7).unwrap_err();
    assert!(
        matches!(err, TrackerError::Status { status: 503, .. }),
        "{err}"
    );
    // Backoffs 0.5 s and 1 s fit in 2 s, the next (2 s) does not: the
    // budget, not the ten retries, ended the call.
    let slept = slept.lock().unwrap().clone();
    let backoffs = [Duration::from_millis(500), Duration::from_secs(1)];
    assert!(
        !slept.is_empty() && backoffs.starts_with(&slept),
        "{slept:?}"
    );
}

#[test]
fn auth_failure_is_not_retried_and_helps() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls"))
            .respond_with(
                ResponseTemplate::new(401)
                    .set_body_json(serde_json::json!({"message": "Bad credentials"})),
            )
            .mount(&server),
    );
    let (t, slept) = tracker(&server, None);
    let err = t.open_pulls().unwrap_err();
    assert!(slept.lock().unwrap().is_empty());
    assert!(
        err.to_string().contains("HTTP 401: Bad credentials"),
        "{err}"
    );
    assert!(err.help().contains("GITHUB_TOKEN"));
}

// A proxy's HTML error page was shown cut at 200 characters, wherever
// that fell: a token it quoted across the cut kept its first half, which
// no longer looked like a token and so escaped redaction.
#[test]
fn an_error_page_is_cut_after_a_whole_word() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    let token = format!("ghp_{}", "Q".repeat(36));
    let page = format!("<p>{} {token} was refused</p>", "w".repeat(180));
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls"))
            .respond_with(ResponseTemplate::new(403).set_body_string(page))
            .mount(&server),
    );
    let (t, _) = tracker(&server, None);
    let err = t.open_pulls().unwrap_err().to_string();
    assert!(
        err.ends_with(&format!("HTTP 403: <p>{}…", "w".repeat(180))),
        "{err}"
    );
    assert_eq!(excerpt("short page"), "short page");
    assert_eq!(
        excerpt(&"é".repeat(300)),
        "…",
        "one word too long shows none of it"
    );
}

#[test]
fn malformed_body_is_a_clear_error() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/1/comments"))
            .respond_with(ResponseTemplate::new(200).set_body_string("{not json"))
            .mount(&server),
    );
    let (t, _) = tracker(&server, None);
    assert!(matches!(
        t.review_comments(1).unwrap_err(),
        TrackerError::Malformed { .. }
    ));
}

#[test]
fn unreachable_tracker() {
    let t =
        HttpTracker::new(TrackerConfig::new("http://127.0.0.1:9", "a/b", None)).with_sleep(|_| {});
    assert!(matches!(
        t.open_issues().unwrap_err(),
        TrackerError::Unreachable { .. }
    ));
}

#[test]
fn comment_posts_json() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/repos/acme/app/issues/4/comments"))
            .and(wiremock::matchers::body_json(
                serde_json::json!({"body": "hi"}),
            ))
            .respond_with(ResponseTemplate::new(201).set_body_json(serde_json::json!({"id": 1})))
            .expect(1)
            .mount(&server),
    );
    let (t, _) = tracker(&server, None);
    t.comment(4, "hi").unwrap();
    rt.block_on(server.verify());
}

/// The client's buffers (64 KiB in, 16 KiB out) bound neither a body nor
/// a response head within ureq's 64 KiB limit: a 20 KiB header, a body of
/// 100 issues with 4 KiB bodies each (about 450 KiB), a 200 KiB comment.
#[test]
fn bodies_and_heads_larger_than_the_buffers_go_through() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    let issues: Vec<serde_json::Value> = (1..=100)
        .map(|n| serde_json::json!({"number": n, "title": "t", "body": "b".repeat(4096), "labels": []}))
        .collect();
    rt.block_on(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("x-padding", "p".repeat(20 * 1024).as_str())
                    .set_body_json(issues),
            )
            .mount(&server),
    );
    let comment = "c".repeat(200 * 1024);
    rt.block_on(
        Mock::given(method("POST"))
            .and(path("/repos/acme/app/issues/4/comments"))
            .and(wiremock::matchers::body_json(
                serde_json::json!({"body": comment}),
            ))
            .respond_with(ResponseTemplate::new(201).set_body_json(serde_json::json!({"id": 1})))
            .expect(1)
            .mount(&server),
    );
    let (t, _) = tracker(&server, None);
    let got = t.open_issues().unwrap();
    assert_eq!(got.len(), 100);
    assert_eq!(got[99].body.len(), 4096);
    t.comment(4, &comment).unwrap();
    rt.block_on(server.verify());
}

#[test]
fn remote_urls() {
    assert_eq!(
        repo_from_remote("git@github.com:acme/app.git").as_deref(),
        Some("acme/app")
    );
    assert_eq!(
        repo_from_remote("https://github.com/acme/app/").as_deref(),
        Some("acme/app")
    );
    assert_eq!(repo_from_remote("/tmp/origin.git"), None);
}

#[test]
fn human_feedback_needs_a_human_comment_with_an_agent_reply() {
    let agents = BTreeSet::from(["sdd-responder".to_owned()]);
    let c = |id, author: &str, reply| ReviewComment {
        id,
        author: author.into(),
        body: String::new(),
        in_reply_to: reply,
    };
    assert!(!addressed_human_feedback(&[c(1, "alice", None)], &agents));
    assert!(addressed_human_feedback(
        &[c(1, "alice", None), c(2, "sdd-responder", Some(1))],
        &agents
    ));
    assert!(!addressed_human_feedback(
        &[c(1, "sdd-responder", None), c(2, "sdd-responder", Some(1))],
        &agents
    ));
    assert!(!addressed_human_feedback(
        &[c(1, "alice", None), c(2, "bob", Some(1))],
        &agents
    ));
}

/// Regression: a 429's message said "only 0.994344972 s of the 3 s … left".
#[test]
fn seconds_in_messages_have_at_most_two_decimals() {
    for (d, shown) in [
        (Duration::from_secs(3), "3"),
        (Duration::from_millis(1500), "1.5"),
        (Duration::from_nanos(994_344_972), "0.99"),
        (Duration::from_millis(9_996), "10"),
        (Duration::ZERO, "0"),
    ] {
        assert_eq!(secs(d), shown, "{d:?}");
    }
}

#[test]
fn the_primary_rate_limit_ends_the_call_and_says_when_it_resets() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    // 2026-05-09T14:30:00Z, 30 minutes after the tick's "now".
    rt.block_on(
        Mock::given(path("/repos/acme/app/issues"))
            .and(header("x-github-api-version", API_VERSION))
            .respond_with(
                ResponseTemplate::new(403)
                    .insert_header("x-ratelimit-limit", "60")
                    .insert_header("x-ratelimit-remaining", "0")
                    .insert_header("x-ratelimit-used", "60")
                    .insert_header("x-ratelimit-reset", "1778337000")
                    .insert_header("x-ratelimit-resource", "core")
                    .set_body_json(serde_json::json!({
                        "message": "API rate limit exceeded for 127.0.0.1.",
                        "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
                    })),
            )
            .expect(1)
            .mount(&server),
    );
    let mut config = TrackerConfig::new(&server.uri(), "acme/app", None);
    config.now = Some("2026-05-09T14:00:00Z".parse().unwrap());
    let slept = Arc::new(Mutex::new(Vec::new()));
    let s = slept.clone();
    let t = HttpTracker::new(config).with_sleep(move |d| s.lock().unwrap().push(d));
    let err = t.open_issues().unwrap_err();
    let TrackerError::RateLimited(limit) = &err else {
        panic!("{err:?}");
    };
    assert_eq!((limit.status, limit.authenticated), (403, false));
    let text = err.to_string();
    assert!(
        text.contains("GitHub's API rate limit is used up"),
        "{text}"
    );
    assert!(text.contains("limit 60 an hour, resource core"), "{text}");
    assert!(
        text.contains("it resets at 2026-05-09T14:30:00Z (in 30 min)"),
        "{text}"
    );
    assert!(err.help().contains("5,000 an hour") && err.help().contains("gh auth login"));
    assert!(
        slept.lock().unwrap().is_empty(),
        "the primary limit is not waited for"
    );
    assert_eq!(
        crate::tick::Failure::from(err).code,
        crate::exit::RATE_LIMITED
    );
    rt.block_on(server.verify());
}

#[test]
fn a_secondary_rate_limit_is_waited_out_and_retried() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(
                ResponseTemplate::new(403)
                    .insert_header("retry-after", "1")
                    .insert_header("x-ratelimit-remaining", "4990")
                    .set_body_json(serde_json::json!({
                        "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
                    })),
            )
            .up_to_n_times(1)
            .mount(&server),
    );
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(ResponseTemplate::new(403).set_body_json(serde_json::json!({
                "message": "You have exceeded a secondary rate limit and have been temporarily blocked from content creation."
            })))
            .up_to_n_times(1)
            .mount(&server),
    );
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "number": 7, "title": "T\r", "body": "Closes #1\r\n", "state": "open",
                "head": { "ref": "f", "sha": "abc" }
            })))
            .mount(&server),
    );
    let slept = Arc::new(Mutex::new(Vec::new()));
    let mut config = TrackerConfig::new(&server.uri(), "acme/app", Some("tok".into()));
    config.retry_budget = Duration::from_secs(120);
    let s = slept.clone();
    let t2 = HttpTracker::new(config).with_sleep(move |d| s.lock().unwrap().push(d));
    let pr = t2.pull(7).unwrap();
    assert_eq!(
        *slept.lock().unwrap(),
        vec![Duration::from_secs(1), Duration::from_secs(60)],
        "retry-after, then GitHub's one minute when it gives none"
    );
    assert_eq!((pr.title.as_str(), pr.body.as_str()), ("T", "Closes #1\n"));
    assert_eq!(pr.closes(), BTreeSet::from([1]));
}

#[test]
fn a_403_that_is_no_rate_limit_is_final_and_names_the_token_source() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(
                ResponseTemplate::new(403)
                    .insert_header("x-ratelimit-remaining", "4999")
                    .set_body_json(serde_json::json!({ "message": "Resource not accessible by personal access token" })),
            )
            .expect(1)
            .mount(&server),
    );
    let mut config = TrackerConfig::new(&server.uri(), "acme/app", Some("tok".into()));
    config.token_source = Some(token::TokenSource::Gh {
        host: "127.0.0.1".into(),
    });
    let t = HttpTracker::new(config).with_sleep(|_| {});
    let err = t.pull(7).unwrap_err();
    assert!(
        err.to_string()
            .contains("(the token sent came from `gh auth token --hostname 127.0.0.1`)"),
        "{err}"
    );
    assert_eq!(
        crate::tick::Failure::from(err).code,
        crate::exit::UNAVAILABLE
    );
    rt.block_on(server.verify());
}

#[test]
fn a_secondary_limit_that_outlasts_the_retries_is_named_as_a_rate_limit() {
    let rt = rt();
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(path("/repos/acme/app/pulls/7"))
            .respond_with(ResponseTemplate::new(403).insert_header("retry-after", "1").set_body_json(
                serde_json::json!({ "message": "You have exceeded a secondary rate limit." }),
            ))
            .mount(&server),
    );
    let (t, slept) = tracker(&server, Some("tok"));
    let err = t.pull(7).unwrap_err();
    assert_eq!(
        slept.lock().unwrap().len(),
        3,
        "three retries, each after its retry-after"
    );
    assert!(
        matches!(err, TrackerError::Status { status: 403, .. }),
        "{err:?}"
    );
    assert!(
        err.help().contains("rate-limiting") && !err.help().contains("set a token"),
        "{}",
        err.help()
    );
}

#[test]
fn only_a_url_naming_a_host_names_a_repository_on_the_tracker() {
    for (url, repo) in [
        ("git@github.com:acme/app.git", Some("acme/app")),
        ("ssh://git@github.com/acme/app.git", Some("acme/app")),
        ("https://github.com/acme/app", Some("acme/app")),
        ("git://example.org/acme/app.git", Some("acme/app")),
        ("gh-work:acme/app", Some("acme/app")),
        ("/srv/git/app.git", None),
        ("file:///srv/git/app.git", None),
        ("../origin.git", None),
        ("C:/repos/app", None),
        ("hang::nowhere", None),
    ] {
        assert_eq!(super::network_repository(url).as_deref(), repo, "{url}");
    }
}
