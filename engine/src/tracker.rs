//! The issue tracker, as far as the loop needs it: a GitHub-REST-shaped
//! subset (DESIGN §8) behind the [`Tracker`] seam.
//!
//! [`HttpTracker`] speaks that subset over HTTP: open issues with labels and
//! bodies (paginated by `Link` headers), pull requests (state, merged,
//! labels, head), review comments with replies and author logins, and a
//! comment on an issue (the `escalate` answer). The bearer token comes from
//! the environment via the binary and is never printed — errors name the
//! URL and the status, not the headers. Transient failures (5xx, 429, a
//! dropped connection) are retried a bounded number of times, honouring
//! `Retry-After`.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::backlog::{self, Issue};
use crate::history::PrState;

/// A pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pull {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub state: PrState,
    pub labels: Vec<String>,
    pub head_ref: String,
    pub head_sha: String,
    pub author: String,
}

impl Pull {
    pub fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l.eq_ignore_ascii_case(label))
    }

    /// Issues this PR's body says it closes.
    pub fn closes(&self) -> BTreeSet<u64> {
        backlog::closes(&self.body)
    }
}

/// A review comment (top-level or a reply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewComment {
    pub id: u64,
    pub author: String,
    pub body: String,
    pub in_reply_to: Option<u64>,
}

/// Why the tracker could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrackerError {
    #[error("tracker request {method} {url} failed with HTTP {status}: {message}")]
    Status {
        method: &'static str,
        url: String,
        status: u16,
        message: String,
    },
    #[error("tracker at {url} is unreachable: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("tracker answered {url} with a body that is not the expected shape: {detail}")]
    Malformed { url: String, detail: String },
    #[error("no tracker repository configured")]
    NotConfigured,
}

impl TrackerError {
    pub fn help(&self) -> &'static str {
        match self {
            TrackerError::Status { status: 401, .. } | TrackerError::Status { status: 403, .. } => {
                "set a token with access to the repository in SDD_LOOP_TRACKER_TOKEN or GITHUB_TOKEN"
            }
            TrackerError::Status { status: 404, .. } => {
                "check --repo OWNER/NAME and --tracker-url; a private repository also answers 404 without a token"
            }
            TrackerError::NotConfigured => {
                "pass --repo OWNER/NAME (or set SDD_LOOP_REPO), or run inside a clone whose origin is on the tracker"
            }
            _ => {
                "check --tracker-url and the network, then run the tick again; nothing was changed"
            }
        }
    }
}

/// What the loop asks of the tracker.
pub trait Tracker: fmt::Debug {
    /// Open issues (pull requests excluded), all pages.
    fn open_issues(&self) -> Result<Vec<Issue>, TrackerError>;
    /// Open pull requests, all pages.
    fn open_pulls(&self) -> Result<Vec<Pull>, TrackerError>;
    fn pull(&self, number: u64) -> Result<Pull, TrackerError>;
    /// Review comments and replies on a PR, all pages.
    fn review_comments(&self, number: u64) -> Result<Vec<ReviewComment>, TrackerError>;
    /// Posts a comment on an issue or PR.
    fn comment(&self, number: u64, body: &str) -> Result<(), TrackerError>;
}

/// Connection settings for [`HttpTracker`].
#[derive(Clone)]
pub struct TrackerConfig {
    /// e.g. `https://api.github.com` (no trailing slash needed).
    pub base_url: String,
    /// `owner/name`.
    pub repo: String,
    pub token: Option<String>,
    /// Retries after the first attempt for 5xx / 429 / connection errors.
    pub retries: u32,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Longest `Retry-After` honoured.
    pub max_retry_after: Duration,
}

impl fmt::Debug for TrackerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrackerConfig")
            .field("base_url", &self.base_url)
            .field("repo", &self.repo)
            .field("token", &self.token.as_ref().map(|_| "[set]"))
            .field("retries", &self.retries)
            .finish()
    }
}

impl TrackerConfig {
    pub fn new(base_url: &str, repo: &str, token: Option<String>) -> Self {
        Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            repo: repo.to_owned(),
            token,
            retries: 3,
            timeout: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

/// The tracker over HTTP.
pub struct HttpTracker {
    config: TrackerConfig,
    agent: ureq::Agent,
    sleep: Box<dyn Fn(Duration) + Send + Sync>,
}

impl fmt::Debug for HttpTracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTracker")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Label {
    name: String,
}

#[derive(Deserialize)]
struct User {
    login: String,
}

#[derive(Deserialize)]
struct IssueJson {
    number: u64,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    labels: Vec<Label>,
    #[serde(default)]
    pull_request: Option<Value>,
}

#[derive(Deserialize)]
struct Head {
    #[serde(rename = "ref")]
    name: String,
    sha: String,
}

#[derive(Deserialize)]
struct PullJson {
    number: u64,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: Option<String>,
    state: String,
    #[serde(default)]
    merged: Option<bool>,
    #[serde(default)]
    merged_at: Option<String>,
    #[serde(default)]
    labels: Vec<Label>,
    head: Head,
    #[serde(default)]
    user: Option<User>,
}

#[derive(Deserialize)]
struct CommentJson {
    id: u64,
    #[serde(default)]
    body: String,
    user: User,
    #[serde(default)]
    in_reply_to_id: Option<u64>,
}

impl From<PullJson> for Pull {
    fn from(p: PullJson) -> Self {
        let merged = p.merged.unwrap_or(false) || p.merged_at.is_some();
        let state = if merged {
            PrState::Merged
        } else if p.state == "closed" {
            PrState::Closed
        } else {
            PrState::Open
        };
        Pull {
            number: p.number,
            title: p.title,
            body: p.body.unwrap_or_default(),
            state,
            labels: p.labels.into_iter().map(|l| l.name).collect(),
            head_ref: p.head.name,
            head_sha: p.head.sha,
            author: p.user.map(|u| u.login).unwrap_or_default(),
        }
    }
}

/// The `rel="next"` target of a `Link` header.
fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"")
            .then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned()
            })
    })
}

struct Page {
    body: String,
    next: Option<String>,
}

impl HttpTracker {
    pub fn new(config: TrackerConfig) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(config.timeout))
            .user_agent("sdd-loop")
            .build()
            .into();
        Self {
            config,
            agent,
            sleep: Box::new(std::thread::sleep),
        }
    }

    /// Replaces the retry wait (tests record it instead of sleeping).
    pub fn with_sleep(mut self, sleep: impl Fn(Duration) + Send + Sync + 'static) -> Self {
        self.sleep = Box::new(sleep);
        self
    }

    fn url(&self, path: &str) -> String {
        format!("{}/repos/{}{path}", self.config.base_url, self.config.repo)
    }

    fn backoff(&self, attempt: u32, retry_after: Option<&str>) -> Duration {
        retry_after
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs)
            .unwrap_or_else(|| Duration::from_millis(500 << attempt.min(6)))
            .min(self.config.max_retry_after)
    }

    fn send(
        &self,
        method: &'static str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Page, TrackerError> {
        let mut attempt = 0;
        loop {
            let auth = self.config.token.as_ref().map(|t| format!("Bearer {t}"));
            let result = match (method, body) {
                ("POST", Some(json)) => {
                    let mut req = self
                        .agent
                        .post(url)
                        .header("Accept", "application/vnd.github+json");
                    if let Some(a) = &auth {
                        req = req.header("Authorization", a);
                    }
                    req.send_json(json)
                }
                _ => {
                    let mut req = self
                        .agent
                        .get(url)
                        .header("Accept", "application/vnd.github+json");
                    if let Some(a) = &auth {
                        req = req.header("Authorization", a);
                    }
                    req.call()
                }
            };
            let mut response = match result {
                Ok(r) => r,
                Err(err) => {
                    if attempt < self.config.retries {
                        (self.sleep)(self.backoff(attempt, None));
                        attempt += 1;
                        continue;
                    }
                    return Err(TrackerError::Unreachable {
                        url: url.to_owned(),
                        detail: err.to_string(),
                    });
                }
            };
            let status = response.status().as_u16();
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let (retry_after, link) = (header("retry-after"), header("link"));
            let text =
                response
                    .body_mut()
                    .read_to_string()
                    .map_err(|e| TrackerError::Malformed {
                        url: url.to_owned(),
                        detail: e.to_string(),
                    })?;
            if (status == 429 || status >= 500) && attempt < self.config.retries {
                (self.sleep)(self.backoff(attempt, retry_after.as_deref()));
                attempt += 1;
                continue;
            }
            if !(200..300).contains(&status) {
                let message = serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| text.chars().take(200).collect());
                return Err(TrackerError::Status {
                    method,
                    url: url.to_owned(),
                    status,
                    message,
                });
            }
            return Ok(Page {
                body: text,
                next: link.as_deref().and_then(next_link),
            });
        }
    }

    fn parse<T: for<'de> Deserialize<'de>>(url: &str, text: &str) -> Result<T, TrackerError> {
        serde_json::from_str(text).map_err(|e| TrackerError::Malformed {
            url: url.to_owned(),
            detail: e.to_string(),
        })
    }

    fn get_all<T: for<'de> Deserialize<'de>>(&self, first: String) -> Result<Vec<T>, TrackerError> {
        let mut out = Vec::new();
        let mut next = Some(first);
        let mut pages = 0;
        while let Some(url) = next {
            pages += 1;
            if pages > 1000 {
                return Err(TrackerError::Malformed {
                    url,
                    detail: "more than 1000 pages; the Link header loops".into(),
                });
            }
            let page = self.send("GET", &url, None)?;
            out.extend(Self::parse::<Vec<T>>(&url, &page.body)?);
            next = page.next;
        }
        Ok(out)
    }
}

impl Tracker for HttpTracker {
    fn open_issues(&self) -> Result<Vec<Issue>, TrackerError> {
        let items: Vec<IssueJson> = self.get_all(self.url("/issues?state=open&per_page=100"))?;
        Ok(items
            .into_iter()
            .filter(|i| i.pull_request.is_none())
            .map(|i| Issue {
                number: i.number,
                title: i.title,
                body: i.body.unwrap_or_default(),
                labels: i.labels.into_iter().map(|l| l.name).collect(),
            })
            .collect())
    }

    fn open_pulls(&self) -> Result<Vec<Pull>, TrackerError> {
        let items: Vec<PullJson> = self.get_all(self.url("/pulls?state=open&per_page=100"))?;
        Ok(items.into_iter().map(Pull::from).collect())
    }

    fn pull(&self, number: u64) -> Result<Pull, TrackerError> {
        let url = self.url(&format!("/pulls/{number}"));
        let page = self.send("GET", &url, None)?;
        Ok(Self::parse::<PullJson>(&url, &page.body)?.into())
    }

    fn review_comments(&self, number: u64) -> Result<Vec<ReviewComment>, TrackerError> {
        let items: Vec<CommentJson> =
            self.get_all(self.url(&format!("/pulls/{number}/comments?per_page=100")))?;
        Ok(items
            .into_iter()
            .map(|c| ReviewComment {
                id: c.id,
                author: c.user.login,
                body: c.body,
                in_reply_to: c.in_reply_to_id,
            })
            .collect())
    }

    fn comment(&self, number: u64, body: &str) -> Result<(), TrackerError> {
        let url = self.url(&format!("/issues/{number}/comments"));
        self.send("POST", &url, Some(&serde_json::json!({ "body": body })))?;
        Ok(())
    }
}

/// `owner/name` from a git remote URL on any host
/// (`git@host:owner/name.git`, `https://host/owner/name`).
pub fn repo_from_remote(url: &str) -> Option<String> {
    let url = url.trim().trim_end_matches('/').trim_end_matches(".git");
    let path = if let Some((_, rest)) = url.split_once("://") {
        rest.split_once('/')?.1
    } else {
        url.split_once(':')?.1
    };
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        [.., owner, name] => Some(format!("{owner}/{name}")),
        _ => None,
    }
}

/// Whether a PR carries human feedback the responder has addressed: a
/// top-level review comment by a non-agent login with at least one reply
/// from an agent login.
pub fn addressed_human_feedback(comments: &[ReviewComment], agents: &BTreeSet<String>) -> bool {
    let is_agent = |login: &str| agents.iter().any(|a| a.eq_ignore_ascii_case(login));
    comments.iter().any(|top| {
        top.in_reply_to.is_none()
            && !is_agent(&top.author)
            && comments
                .iter()
                .any(|r| r.in_reply_to == Some(top.id) && is_agent(&r.author))
    })
}

#[cfg(test)]
mod tests {
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

    fn tracker(
        server: &MockServer,
        token: Option<&str>,
    ) -> (HttpTracker, Arc<Mutex<Vec<Duration>>>) {
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
                    ResponseTemplate::new(503)
                        .set_body_json(serde_json::json!({"message": "down"})),
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
        let t = HttpTracker::new(TrackerConfig::new("http://127.0.0.1:9", "a/b", None))
            .with_sleep(|_| {});
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
                .respond_with(
                    ResponseTemplate::new(201).set_body_json(serde_json::json!({"id": 1})),
                )
                .expect(1)
                .mount(&server),
        );
        let (t, _) = tracker(&server, None);
        t.comment(4, "hi").unwrap();
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
}
