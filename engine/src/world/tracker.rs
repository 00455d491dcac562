//! The issue tracker, as far as the loop needs it: a GitHub-REST-shaped
//! subset behind the [`Tracker`] seam.
//!
//! [`HttpTracker`] speaks that subset over HTTP: open issues with labels and
//! bodies (paginated by `Link` headers), pull requests (state, merged,
//! labels, head), review comments with replies and author logins, and a
//! comment on an issue (the `escalate` answer). The bearer token comes from
//! the environment via the binary and is never printed — errors name the
//! URL and the status, not the headers. The answers are read by the
//! `parse_*` functions, which are public so they can be tested on any
//! input without a server.
//!
//! Every call is bounded in time, so a tracker that accepts connections and
//! never answers cannot hold a tick (and its lock): each request — connect
//! through the last byte of the body — gets [`TrackerConfig::timeout`], and
//! all attempts of one call together, with the waits between them, get
//! [`TrackerConfig::retry_budget`] (defaults in [`crate::config`]: 10 s and
//! 30 s). Transient failures (5xx, 429, a dropped connection, a timeout)
//! are retried a bounded number of times within that budget, honouring
//! `Retry-After`; a `Retry-After` the budget cannot cover ends the call at
//! once instead of sleeping past it. The waits are the clock's
//! ([`HttpTracker::with_sleep`]), so the harness's clock spends none of
//! them in real time. The errors name the URL, the limit
//! that ran out, and the flag that raises it.
//!
//! GitHub's rate limits: a *secondary* limit (403 or 429 with
//! `retry-after`, or a message naming the secondary rate limit) is waited
//! out like any `Retry-After`; the *primary* limit (403 or 429 with
//! `x-ratelimit-remaining: 0`) ends the call at once with
//! [`TrackerError::RateLimited`], which says when the limit resets
//! (`x-ratelimit-reset`) — the tick changes nothing and exits 75
//! ([`crate::exit::RATE_LIMITED`]). Every request names the API version
//! ([`API_VERSION`]). Bodies are read line-ending-agnostic: GitHub sends
//! what its web editor wrote with CRLF.

use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use crate::config;
pub use crate::rules::replies::Reply;
use crate::state::history::PrState;
use crate::world::backlog::{self, Issue};

/// The REST API version asked for (`X-GitHub-Api-Version`), as GitHub
/// recommends every request name one.
pub const API_VERSION: &str = "2022-11-28";

/// How long to wait after a secondary rate limit that gave no
/// `retry-after` (GitHub: "at least one minute").
const SECONDARY_WAIT: Duration = Duration::from_secs(60);

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
    /// Who merged it (`merged_by.login`), when the tracker says.
    pub merged_by: Option<String>,
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

/// What the tracker made of a post: the issue it is on, its id (a
/// comment's; an issue's number for a new issue), its address and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    pub number: u64,
    pub id: u64,
    pub url: String,
    pub created_at: jiff::Timestamp,
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
    #[error("tracker request {method} {url} timed out: {limit}")]
    TimedOut {
        method: &'static str,
        url: String,
        limit: TimeLimit,
    },
    #[error(
        "tracker answered {method} {url} with HTTP {status} and Retry-After {} s, but only {} s of the {} s tracker retry budget are left; gave up without waiting (raise the budget with --tracker-retry-budget SECS or SDD_LOOP_TRACKER_RETRY_BUDGET)",
        secs(*retry_after), secs(*left), secs(*budget)
    )]
    RetryAfterTooLong {
        method: &'static str,
        url: String,
        status: u16,
        retry_after: Duration,
        left: Duration,
        budget: Duration,
    },
    /// GitHub's primary rate limit is used up (exit 75).
    #[error("{0}")]
    RateLimited(Box<RateLimit>),
    #[error("tracker answered {url} with a body that is not the expected shape: {detail}")]
    Malformed { url: String, detail: String },
    #[error("no tracker repository configured")]
    NotConfigured,
}

/// GitHub's answer that the primary rate limit is used up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimit {
    pub method: &'static str,
    pub url: String,
    pub status: u16,
    /// `x-ratelimit-limit`: requests per hour for this token.
    pub limit: Option<u64>,
    /// `x-ratelimit-resource`: `core`, `search`, …
    pub resource: Option<String>,
    /// `x-ratelimit-reset`: when the limit resets.
    pub reset: Option<jiff::Timestamp>,
    /// The tick's "now", to say how long that is.
    pub now: jiff::Timestamp,
    /// Whether the request carried a token.
    pub authenticated: bool,
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GitHub's API rate limit is used up: {} {} answered HTTP {} with x-ratelimit-remaining: 0{}; {}",
            self.method,
            self.url,
            self.status,
            limit_text(self.limit, self.resource.as_deref()),
            reset_text(self.reset, self.now)
        )
    }
}

/// Which time limit ended a tracker call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeLimit {
    /// Every attempt ran into the per-request timeout.
    Request { timeout: Duration, attempts: u32 },
    /// The attempts and the waits between them used up the retry budget.
    Budget { budget: Duration, attempts: u32 },
}

impl fmt::Display for TimeLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeLimit::Request { timeout, attempts } => write!(
                f,
                "no answer within the per-request timeout of {} s ({} {}; raise it with --tracker-timeout SECS or SDD_LOOP_TRACKER_TIMEOUT)",
                secs(*timeout),
                attempts,
                if *attempts == 1 {
                    "attempt"
                } else {
                    "attempts"
                },
            ),
            TimeLimit::Budget { budget, attempts } => write!(
                f,
                "{} {} used up the tracker retry budget of {} s (raise it with --tracker-retry-budget SECS or SDD_LOOP_TRACKER_RETRY_BUDGET)",
                attempts,
                if *attempts == 1 {
                    "attempt"
                } else {
                    "attempts"
                },
                secs(*budget),
            ),
        }
    }
}

/// `10`, `0.25`: seconds as a person would write them.
/// Most characters of an error body that is not JSON shown in an error.
pub const BODY_EXCERPT_CHARS: usize = 200;

/// The start of an error body that is not JSON (a proxy's HTML page), cut
/// after a whole word: a credential the page quotes is shown whole, to be
/// redacted like any other, or not at all — never cut in two, where the
/// half kept would no longer look like a credential.
fn excerpt(text: &str) -> String {
    let Some((end, _)) = text.char_indices().nth(BODY_EXCERPT_CHARS) else {
        return text.to_owned();
    };
    let head = &text[..end];
    let whole = if text[end..].starts_with(char::is_whitespace) {
        head
    } else {
        head.rfind(char::is_whitespace).map_or("", |at| &head[..at])
    };
    format!("{}…", whole.trim_end())
}

/// ` (limit 60 an hour, resource core)`, or nothing when GitHub said neither.
fn limit_text(limit: Option<u64>, resource: Option<&str>) -> String {
    match (limit, resource) {
        (Some(l), Some(r)) => format!(" (limit {l} an hour, resource {r})"),
        (Some(l), None) => format!(" (limit {l} an hour)"),
        (None, Some(r)) => format!(" (resource {r})"),
        (None, None) => String::new(),
    }
}

/// `it resets at 2026-05-09T15:00:00Z (in 30 min)`.
fn reset_text(reset: Option<jiff::Timestamp>, now: jiff::Timestamp) -> String {
    let Some(reset) = reset else {
        return "GitHub did not say when it resets (no x-ratelimit-reset header)".to_owned();
    };
    let left = reset.as_second() - now.as_second();
    let when = if left <= 0 {
        "already passed".to_owned()
    } else {
        format!("in {} min", (left + 59) / 60)
    };
    format!("it resets at {} ({when})", crate::os::clock::format(reset))
}

/// Seconds for a reader: at most two decimals, no trailing zeros (`3`,
/// `1.5`, `0.99`; never `0.994344972`).
fn secs(d: Duration) -> String {
    let text = format!("{:.2}", d.as_secs_f64());
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

impl TrackerError {
    pub fn help(&self) -> &'static str {
        match self {
            TrackerError::Status {
                status: 403 | 429,
                message,
                ..
            } if message.to_ascii_lowercase().contains("rate limit") => {
                "GitHub is rate-limiting these requests (a secondary limit, waited out as long as the retry budget allowed): run the tick again in a few minutes, or let it wait longer with --tracker-retry-budget SECS; nothing was changed"
            }
            TrackerError::Status { status: 401, .. } | TrackerError::Status { status: 403, .. } => {
                "set a token with access to the repository in SDD_LOOP_TRACKER_TOKEN or GITHUB_TOKEN, or log in with `gh auth login` (used when neither is set)"
            }
            TrackerError::Status { status: 404, .. } => {
                "check --repo OWNER/NAME and --tracker-url; a private repository also answers 404 without a token"
            }
            TrackerError::NotConfigured => {
                "pass --repo OWNER/NAME (or set SDD_LOOP_REPO), or run inside a clone whose origin is on the tracker"
            }
            TrackerError::TimedOut {
                limit: TimeLimit::Request { .. },
                ..
            } => {
                "check --tracker-url and the network, or allow slower answers with --tracker-timeout SECS, then run the tick again; nothing was changed"
            }
            TrackerError::TimedOut {
                limit: TimeLimit::Budget { .. },
                ..
            } => {
                "check --tracker-url and the network, or allow more retries with --tracker-retry-budget SECS, then run the tick again; nothing was changed"
            }
            TrackerError::RateLimited(limit) if !limit.authenticated => {
                "nothing was changed; run the tick again after the reset. Requests without a token get GitHub's lowest limit (60 an hour): set SDD_LOOP_TRACKER_TOKEN or GITHUB_TOKEN, or log in with `gh auth login`, for 5,000 an hour"
            }
            TrackerError::RateLimited(_) => {
                "nothing was changed; run the tick again after the reset (a /loop interval longer than the reset wait avoids asking early). For a higher limit use a GitHub App installation token (up to 12,500 an hour) or a token no other tool is spending"
            }
            TrackerError::RetryAfterTooLong { .. } => {
                "the tracker is rate-limiting: run the tick again later, or let it wait with a larger --tracker-retry-budget SECS; nothing was changed"
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
    /// Conversation comments on an issue or PR, all pages (no replies:
    /// `in_reply_to` is always `None`).
    fn issue_comments(&self, number: u64) -> Result<Vec<ReviewComment>, TrackerError>;
    /// The login the token acts as (`GET /user`): whose comments and
    /// merges a tick made when its work reports none itself.
    fn login(&self) -> Result<String, TrackerError>;
    /// Posts a comment on an issue or PR and says where it landed.
    fn post_comment(&self, number: u64, body: &str) -> Result<Posted, TrackerError>;
    /// Conversation comments on an issue or PR updated at or after
    /// `since` (GitHub's `since`: an edited older comment is listed too).
    fn replies(&self, number: u64, since: jiff::Timestamp) -> Result<Vec<Reply>, TrackerError>;
    /// `login`'s permission on the repository (`admin`, `write`, `read`,
    /// `none`), from the collaborator-permission endpoint.
    fn permission(&self, login: &str) -> Result<String, TrackerError>;
    /// The open issue labelled `label` whose title is `title`, if any.
    fn find_issue(&self, label: &str, title: &str) -> Result<Option<u64>, TrackerError>;
    /// Opens an issue.
    fn open_issue(&self, title: &str, body: &str, labels: &[&str]) -> Result<Posted, TrackerError>;
    /// Replaces an issue's body.
    fn edit_issue_body(&self, number: u64, body: &str) -> Result<(), TrackerError>;
}

/// Connection settings for [`HttpTracker`].
#[derive(Clone)]
pub struct TrackerConfig {
    /// e.g. `https://api.github.com` (no trailing slash needed).
    pub base_url: String,
    /// `owner/name`.
    pub repo: String,
    pub token: Option<String>,
    /// Retries after the first attempt for 5xx / 429 / connection errors /
    /// timeouts, as far as the retry budget allows.
    pub retries: u32,
    /// Longest one request may take, from connecting to the last byte of
    /// the response.
    pub timeout: Duration,
    /// Longest one call may take: all its attempts and the waits between
    /// them, `Retry-After` included.
    pub retry_budget: Duration,
    /// The tick's "now" (`SDD_LOOP_NOW` or the system clock), against
    /// which a rate limit's reset time is told as "in N min".
    pub now: Option<jiff::Timestamp>,
    /// Where `token` came from, named when the tracker refuses it.
    pub token_source: Option<token::TokenSource>,
}

impl fmt::Debug for TrackerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrackerConfig")
            .field("base_url", &self.base_url)
            .field("repo", &self.repo)
            .field("token", &self.token.as_ref().map(|_| "[set]"))
            .field("retries", &self.retries)
            .field("timeout", &self.timeout)
            .field("retry_budget", &self.retry_budget)
            .field("now", &self.now)
            .field("token_source", &self.token_source)
            .finish()
    }
}

impl TrackerConfig {
    /// Settings with the default retries and time limits
    /// ([`config::DEFAULT_TRACKER_TIMEOUT_SECS`],
    /// [`config::DEFAULT_TRACKER_RETRY_BUDGET_SECS`]).
    pub fn new(base_url: &str, repo: &str, token: Option<String>) -> Self {
        Self {
            base_url: base_url.trim_end_matches('/').to_owned(),
            repo: repo.to_owned(),
            token,
            retries: 3,
            timeout: Duration::from_secs(config::DEFAULT_TRACKER_TIMEOUT_SECS),
            retry_budget: Duration::from_secs(config::DEFAULT_TRACKER_RETRY_BUDGET_SECS),
            now: None,
            token_source: None,
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
    #[serde(default)]
    merged_by: Option<User>,
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

#[derive(Deserialize)]
struct ReplyJson {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    user: Option<User>,
    created_at: jiff::Timestamp,
    updated_at: jiff::Timestamp,
    html_url: String,
}

#[derive(Deserialize)]
struct CreatedJson {
    id: u64,
    #[serde(default)]
    number: Option<u64>,
    html_url: String,
    created_at: jiff::Timestamp,
}

#[derive(Deserialize)]
struct PermissionJson {
    permission: String,
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
            title: backlog::one_line(&p.title),
            body: lf(p.body.unwrap_or_default()),
            state,
            labels: p.labels.into_iter().map(|l| l.name).collect(),
            head_ref: p.head.name,
            head_sha: p.head.sha,
            author: p.user.map(|u| u.login).unwrap_or_default(),
            merged_by: p.merged_by.map(|u| u.login),
        }
    }
}

/// The `rel="next"` target of a `Link` header.
pub fn next_link(link: &str) -> Option<String> {
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

/// A body as the engine reads it: line endings normalised to `\n`
/// (GitHub returns what its web editor wrote with CRLF).
fn lf(body: String) -> String {
    match backlog::normalize_newlines(&body) {
        std::borrow::Cow::Borrowed(_) => body,
        std::borrow::Cow::Owned(normal) => normal,
    }
}

fn parse<T: for<'de> Deserialize<'de>>(url: &str, text: &str) -> Result<T, TrackerError> {
    serde_json::from_str(text).map_err(|e| TrackerError::Malformed {
        url: url.to_owned(),
        detail: e.to_string(),
    })
}

/// One page of `GET /repos/{repo}/issues`, pull requests left out (the
/// issues endpoint lists both). `url` is named in errors.
pub fn parse_issues(url: &str, text: &str) -> Result<Vec<Issue>, TrackerError> {
    Ok(parse::<Vec<IssueJson>>(url, text)?
        .into_iter()
        .filter(|i| i.pull_request.is_none())
        .map(|i| Issue {
            number: i.number,
            title: backlog::one_line(&i.title),
            body: lf(i.body.unwrap_or_default()),
            labels: i.labels.into_iter().map(|l| l.name).collect(),
        })
        .collect())
}

/// One page of `GET /repos/{repo}/pulls`.
pub fn parse_pulls(url: &str, text: &str) -> Result<Vec<Pull>, TrackerError> {
    Ok(parse::<Vec<PullJson>>(url, text)?
        .into_iter()
        .map(Pull::from)
        .collect())
}

/// `GET /repos/{repo}/pulls/{number}`.
pub fn parse_pull(url: &str, text: &str) -> Result<Pull, TrackerError> {
    Ok(parse::<PullJson>(url, text)?.into())
}

/// One page of `GET /repos/{repo}/pulls/{number}/comments`.
pub fn parse_review_comments(url: &str, text: &str) -> Result<Vec<ReviewComment>, TrackerError> {
    Ok(parse::<Vec<CommentJson>>(url, text)?
        .into_iter()
        .map(|c| ReviewComment {
            id: c.id,
            author: c.user.login,
            body: lf(c.body),
            in_reply_to: c.in_reply_to_id,
        })
        .collect())
}

/// One page of `GET /repos/{repo}/issues/{number}/comments`.
pub fn parse_issue_comments(url: &str, text: &str) -> Result<Vec<ReviewComment>, TrackerError> {
    Ok(parse::<Vec<CommentJson>>(url, text)?
        .into_iter()
        .map(|c| ReviewComment {
            id: c.id,
            author: c.user.login,
            body: lf(c.body),
            in_reply_to: None,
        })
        .collect())
}

/// One page of `GET /repos/{repo}/issues/{number}/comments?since=…`,
/// with the comments' times.
pub fn parse_replies(url: &str, text: &str) -> Result<Vec<Reply>, TrackerError> {
    Ok(parse::<Vec<ReplyJson>>(url, text)?
        .into_iter()
        .map(|c| Reply {
            id: c.id,
            author: c.user.map(|u| u.login).unwrap_or_default(),
            body: lf(c.body.unwrap_or_default()),
            created_at: c.created_at,
            updated_at: c.updated_at,
            url: c.html_url,
        })
        .collect())
}

/// A created comment or issue (`201`): where it is, and when.
pub fn parse_created(url: &str, number: u64, text: &str) -> Result<Posted, TrackerError> {
    let c = parse::<CreatedJson>(url, text)?;
    Ok(Posted {
        number: c.number.unwrap_or(number),
        id: c.id,
        url: c.html_url,
        created_at: c.created_at,
    })
}

/// `GET /repos/{repo}/collaborators/{user}/permission`: the permission.
pub fn parse_permission(url: &str, text: &str) -> Result<String, TrackerError> {
    Ok(parse::<PermissionJson>(url, text)?.permission)
}

/// `GET /user`: the login.
pub fn parse_login(url: &str, text: &str) -> Result<String, TrackerError> {
    Ok(parse::<User>(url, text)?.login)
}

struct Page {
    body: String,
    next: Option<String>,
}

/// Why one attempt failed.
enum Failure {
    /// Not worth retrying: the error is final.
    Final(Box<TrackerError>),
    Status {
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    Connection(String),
    TimedOut,
}

impl HttpTracker {
    pub fn new(config: TrackerConfig) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(config.timeout))
            .user_agent("sdd-loop")
            // ureq fills both buffers with zeros on a connection's first
            // use: its 128 KiB defaults cost each tick 64 pages to fault
            // in and clear. A response's head must fit in the input buffer
            // (its limit is `max_response_header_size`, 64 KiB), bodies
            // stream through; a request's head is well under 16 KiB.
            .input_buffer_size(64 * 1024)
            .output_buffer_size(16 * 1024)
            .build()
            .into();
        Self {
            config,
            agent,
            sleep: Box::new(std::thread::sleep),
        }
    }

    /// Replaces the retry wait: the binary passes its clock's
    /// [`crate::os::clock::Clock::sleep`] (simulated under the harness),
    /// tests record the waits instead. Either way the waits count against
    /// the retry budget as if they had been slept.
    pub fn with_sleep(mut self, sleep: impl Fn(Duration) + Send + Sync + 'static) -> Self {
        self.sleep = Box::new(sleep);
        self
    }

    fn url(&self, path: &str) -> String {
        format!("{}/repos/{}{path}", self.config.base_url, self.config.repo)
    }

    fn backoff(attempt: u32) -> Duration {
        Duration::from_millis(500 << attempt.min(6))
    }

    /// One request, given at most `limit` from connecting to the last byte.
    fn attempt(
        &self,
        method: &'static str,
        url: &str,
        body: Option<&Value>,
        limit: Duration,
    ) -> Result<Page, Failure> {
        let auth = self.config.token.as_ref().map(|t| format!("Bearer {t}"));
        let result = match (method, body) {
            ("POST" | "PATCH", Some(json)) => {
                let builder = if method == "PATCH" {
                    self.agent.patch(url)
                } else {
                    self.agent.post(url)
                };
                let mut req = builder
                    .config()
                    .timeout_global(Some(limit))
                    .build()
                    .header("Accept", "application/vnd.github+json")
                    .header("X-GitHub-Api-Version", API_VERSION);
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                req.send_json(json)
            }
            _ => {
                let mut req = self
                    .agent
                    .get(url)
                    .config()
                    .timeout_global(Some(limit))
                    .build()
                    .header("Accept", "application/vnd.github+json")
                    .header("X-GitHub-Api-Version", API_VERSION);
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                req.call()
            }
        };
        let transport = |err: ureq::Error| match err {
            ureq::Error::Timeout(_) => Failure::TimedOut,
            other => Failure::Connection(other.to_string()),
        };
        let mut response = result.map_err(transport)?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (retry_after, link) = (header("retry-after"), header("link"));
        let remaining = header("x-ratelimit-remaining");
        let (limit, resource, reset) = (
            header("x-ratelimit-limit"),
            header("x-ratelimit-resource"),
            header("x-ratelimit-reset"),
        );
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|err| match err {
                ureq::Error::Timeout(_) | ureq::Error::Io(_) => transport(err),
                other => Failure::Final(Box::new(TrackerError::Malformed {
                    url: url.to_owned(),
                    detail: other.to_string(),
                })),
            })?;
        if (200..300).contains(&status) {
            return Ok(Page {
                body: text,
                next: link.as_deref().and_then(next_link),
            });
        }
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| excerpt(&text));
        let retry_after = retry_after
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let limited = status == 403 || status == 429;
        if limited && retry_after.is_none() && remaining.as_deref().map(str::trim) == Some("0") {
            // The primary limit: nothing to gain by asking again before
            // the reset, which is usually minutes away.
            return Err(Failure::Final(Box::new(TrackerError::RateLimited(
                Box::new(RateLimit {
                    method,
                    url: url.to_owned(),
                    status,
                    limit: limit.and_then(|v| v.trim().parse().ok()),
                    resource: resource.map(|r| r.trim().to_owned()),
                    reset: reset
                        .and_then(|v| v.trim().parse::<i64>().ok())
                        .and_then(|s| jiff::Timestamp::from_second(s).ok()),
                    now: self.config.now.unwrap_or_else(jiff::Timestamp::now),
                    authenticated: auth.is_some(),
                }),
            ))));
        }
        let secondary = limited
            && (retry_after.is_some()
                || message
                    .to_ascii_lowercase()
                    .contains("secondary rate limit"));
        if secondary || status == 429 || status >= 500 {
            return Err(Failure::Status {
                status,
                message,
                // GitHub: without `retry-after`, wait at least a minute
                // after a secondary limit.
                retry_after: retry_after.or(secondary.then_some(SECONDARY_WAIT)),
            });
        }
        let message = match (status, &auth, &self.config.token_source) {
            (401 | 403, Some(_), Some(source)) => {
                format!("{message} (the token sent came from {source})")
            }
            _ => message,
        };
        Err(Failure::Final(Box::new(TrackerError::Status {
            method,
            url: url.to_owned(),
            status,
            message,
        })))
    }

    /// A request with retries, within the per-request timeout and the
    /// call's retry budget. Time spent is what the attempts took plus the
    /// waits asked for, so a replaced [`HttpTracker::with_sleep`] keeps the
    /// same accounting.
    fn send(
        &self,
        method: &'static str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Page, TrackerError> {
        let budget = self.config.retry_budget;
        let mut spent = Duration::ZERO;
        let mut attempts = 0u32;
        loop {
            let limit = self.config.timeout.min(budget.saturating_sub(spent));
            let started = Instant::now();
            let outcome = self.attempt(method, url, body, limit);
            spent += started.elapsed();
            attempts += 1;
            let failure = match outcome {
                Ok(page) => return Ok(page),
                Err(Failure::Final(err)) => return Err(*err),
                Err(failure) => failure,
            };
            let left = budget.saturating_sub(spent);
            let wait = match &failure {
                Failure::Status {
                    status,
                    retry_after: Some(asked),
                    ..
                } if attempts <= self.config.retries && *asked >= left => {
                    return Err(TrackerError::RetryAfterTooLong {
                        method,
                        url: url.to_owned(),
                        status: *status,
                        retry_after: *asked,
                        left,
                        budget,
                    });
                }
                Failure::Status {
                    retry_after: Some(asked),
                    ..
                } => *asked,
                _ => Self::backoff(attempts - 1),
            };
            let out_of_retries = attempts > self.config.retries;
            let out_of_budget = wait >= left;
            if out_of_retries || out_of_budget {
                return Err(match failure {
                    Failure::Status {
                        status, message, ..
                    } => TrackerError::Status {
                        method,
                        url: url.to_owned(),
                        status,
                        message,
                    },
                    Failure::Connection(detail) => TrackerError::Unreachable {
                        url: url.to_owned(),
                        detail,
                    },
                    Failure::TimedOut => TrackerError::TimedOut {
                        method,
                        url: url.to_owned(),
                        limit: if out_of_budget || limit < self.config.timeout {
                            TimeLimit::Budget { budget, attempts }
                        } else {
                            TimeLimit::Request {
                                timeout: self.config.timeout,
                                attempts,
                            }
                        },
                    },
                    Failure::Final(err) => *err,
                });
            }
            (self.sleep)(wait);
            spent += wait;
        }
    }

    /// Every page from `first` on, following `Link: rel="next"`.
    fn get_all<T>(
        &self,
        first: String,
        parse_page: fn(&str, &str) -> Result<Vec<T>, TrackerError>,
    ) -> Result<Vec<T>, TrackerError> {
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
            out.extend(parse_page(&url, &page.body)?);
            next = page.next;
        }
        Ok(out)
    }
}

impl Tracker for HttpTracker {
    fn open_issues(&self) -> Result<Vec<Issue>, TrackerError> {
        self.get_all(self.url("/issues?state=open&per_page=100"), parse_issues)
    }

    fn open_pulls(&self) -> Result<Vec<Pull>, TrackerError> {
        self.get_all(self.url("/pulls?state=open&per_page=100"), parse_pulls)
    }

    fn pull(&self, number: u64) -> Result<Pull, TrackerError> {
        let url = self.url(&format!("/pulls/{number}"));
        let page = self.send("GET", &url, None)?;
        parse_pull(&url, &page.body)
    }

    fn review_comments(&self, number: u64) -> Result<Vec<ReviewComment>, TrackerError> {
        self.get_all(
            self.url(&format!("/pulls/{number}/comments?per_page=100")),
            parse_review_comments,
        )
    }

    fn comment(&self, number: u64, body: &str) -> Result<(), TrackerError> {
        let url = self.url(&format!("/issues/{number}/comments"));
        self.send("POST", &url, Some(&serde_json::json!({ "body": body })))?;
        Ok(())
    }

    fn issue_comments(&self, number: u64) -> Result<Vec<ReviewComment>, TrackerError> {
        self.get_all(
            self.url(&format!("/issues/{number}/comments?per_page=100")),
            parse_issue_comments,
        )
    }

    fn login(&self) -> Result<String, TrackerError> {
        let url = format!("{}/user", self.config.base_url);
        let page = self.send("GET", &url, None)?;
        parse_login(&url, &page.body)
    }

    fn post_comment(&self, number: u64, body: &str) -> Result<Posted, TrackerError> {
        let url = self.url(&format!("/issues/{number}/comments"));
        let page = self.send("POST", &url, Some(&serde_json::json!({ "body": body })))?;
        parse_created(&url, number, &page.body)
    }

    fn replies(&self, number: u64, since: jiff::Timestamp) -> Result<Vec<Reply>, TrackerError> {
        self.get_all(
            self.url(&format!(
                "/issues/{number}/comments?since={}&per_page=100",
                crate::os::clock::format(since)
            )),
            parse_replies,
        )
    }

    fn permission(&self, login: &str) -> Result<String, TrackerError> {
        let url = self.url(&format!("/collaborators/{login}/permission"));
        let page = self.send("GET", &url, None)?;
        parse_permission(&url, &page.body)
    }

    fn find_issue(&self, label: &str, title: &str) -> Result<Option<u64>, TrackerError> {
        let issues = self.get_all(
            self.url(&format!("/issues?state=open&labels={label}&per_page=100")),
            parse_issues,
        )?;
        Ok(issues
            .into_iter()
            .filter(|i| i.title == title)
            .map(|i| i.number)
            .min())
    }

    fn open_issue(&self, title: &str, body: &str, labels: &[&str]) -> Result<Posted, TrackerError> {
        let url = self.url("/issues");
        let json = serde_json::json!({ "title": title, "body": body, "labels": labels });
        let page = self.send("POST", &url, Some(&json))?;
        parse_created(&url, 0, &page.body)
    }

    fn edit_issue_body(&self, number: u64, body: &str) -> Result<(), TrackerError> {
        let url = self.url(&format!("/issues/{number}"));
        self.send("PATCH", &url, Some(&serde_json::json!({ "body": body })))?;
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

/// `owner/name` from a git remote URL that names a host — `ssh://`,
/// `git://`, `http(s)://` or scp-like `[user@]host:owner/name` — and
/// `None` for a local path or `file://` URL, which names no repository on
/// any tracker.
pub fn network_repository(url: &str) -> Option<String> {
    let url = url.trim();
    // `transport::address`: a remote helper's own address, not a URL.
    if url.contains("::") {
        return None;
    }
    let networked = match url.split_once("://") {
        Some((scheme, _)) => !scheme.eq_ignore_ascii_case("file"),
        // scp-like: a colon before the first slash, and not a Windows
        // drive letter.
        None => url
            .split_once(':')
            .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/') && host.len() > 1),
    };
    if !networked {
        return None;
    }
    repo_from_remote(url)
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

pub mod token;

#[cfg(test)]
mod tests;
