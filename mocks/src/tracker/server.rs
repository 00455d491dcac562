//! The mock tracker server: [`MockTracker`], an in-process wiremock server
//! on `127.0.0.1` serving a [`World`] through [`routes`](super::routes).
//!
//! Built with [`MockTracker::builder`] and started with
//! `MockServer::builder().start()` — never the pooled `MockServer::start()`,
//! whose recycled ports let a late request hit another test's mocks.
//! wiremock serves from its own thread, so a test may block on
//! a child process while the tracker answers it; the server stops when the
//! handle is dropped. [`BlockingMockTracker`] owns a tokio runtime for
//! callers that are not async.
//!
//! Each request, in order: recorded in the journal; checked against the
//! injected faults; checked for `Authorization: Bearer <token>` (or
//! `token <token>`) when a token is configured — a wrong one is 401
//! `{"message":"Bad credentials"}`, none at all 404 (a private repository,
//! as GitHub hides it); an unsupported `X-GitHub-Api-Version` is 400; then
//! routed. Every answer carries GitHub's `x-ratelimit-*` headers.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use percent_encoding::percent_decode_str;
use serde_json::Value;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::change::{CodeLookup, WorldChange};
use super::faults::{Fault, FaultId, FaultKind, Faults};
use super::journal::{Journal, RecordedRequest};
use super::pattern::RouteMatcher;
use super::routes::{self, ApiRequest, ApiResponse, Body};
use super::world::{Clock, NewIssue, PullSummary, World, WorldError};
use crate::fixture::Backlog;

/// What a request changes, behind one lock (wiremock's `Respond` is sync).
#[derive(Debug)]
struct State {
    world: World,
    faults: Faults,
    journal: Journal,
    /// Requests counted against the primary rate limit this window.
    used: u64,
}

/// The REST API versions GitHub accepts in `X-GitHub-Api-Version`; any
/// other is refused with 400, as GitHub does.
pub const API_VERSIONS: [&str; 2] = ["2022-11-28", "2026-03-10"];

/// GitHub's primary rate limit for a token, per hour.
pub const RATE_LIMIT: u64 = 5000;
const RATE_DOCS: &str = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api";

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Configures a [`MockTracker`].
#[derive(Debug, Default)]
pub struct MockTrackerBuilder {
    backlog: Option<Backlog>,
    token: Option<String>,
    origin: Option<PathBuf>,
    viewer: Option<String>,
    clock: Option<Clock>,
    port: Option<u16>,
}

impl MockTrackerBuilder {
    /// The starting state (default: an empty `acme/app`).
    pub fn backlog(mut self, backlog: Backlog) -> Self {
        self.backlog = Some(backlog);
        self
    }

    /// Require `Authorization: Bearer <token>` (or `token <token>`).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// A bare repository whose `refs/heads/{branch}` give live head SHAs
    /// (and which new pull requests' heads must exist in).
    pub fn origin(mut self, origin: impl Into<PathBuf>) -> Self {
        self.origin = Some(origin.into());
        self
    }

    /// The login API callers act as (default: the backlog's first agent
    /// login, else `sdd-agent`).
    pub fn viewer(mut self, login: impl Into<String>) -> Self {
        self.viewer = Some(login.into());
        self
    }

    /// Stamp new comments, reviews and merges with this time.
    pub fn fixed_time(mut self, at: Timestamp) -> Self {
        self.clock = Some(Clock::Fixed(at));
        self
    }

    /// Listen on this port of 127.0.0.1 (default: a free one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    pub async fn start(self) -> std::io::Result<MockTracker> {
        let listener = TcpListener::bind(("127.0.0.1", self.port.unwrap_or(0)))?;
        let backlog = self.backlog.unwrap_or_else(|| Backlog::empty("acme/app"));
        let viewer = self
            .viewer
            .or_else(|| backlog.agent_logins.first().cloned())
            .unwrap_or_else(|| "sdd-agent".to_owned());
        let mut world = World::new(
            &backlog,
            viewer,
            self.origin,
            self.clock.unwrap_or(Clock::System),
        );
        let server = MockServer::builder()
            .listener(listener)
            .disable_request_recording()
            .start()
            .await;
        world.set_base_uri(&server.uri());
        let state = Arc::new(Mutex::new(State {
            world,
            faults: Faults::default(),
            journal: Journal::default(),
            used: 0,
        }));
        Mock::given(wiremock::matchers::any())
            .respond_with(Responder {
                state: Arc::clone(&state),
                token: self.token,
            })
            .mount(&server)
            .await;
        Ok(MockTracker { server, state })
    }

    /// Starts on a runtime the returned handle owns, for callers that are
    /// not async. Must not be called from inside a tokio runtime.
    pub fn start_blocking(self) -> std::io::Result<BlockingMockTracker> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let tracker = runtime.block_on(self.start())?;
        Ok(BlockingMockTracker {
            tracker: Some(tracker),
            runtime,
        })
    }
}

#[derive(Debug)]
struct Responder {
    state: Arc<Mutex<State>>,
    token: Option<String>,
}

fn api_request(request: &Request) -> ApiRequest {
    let path = request.url.path().to_owned();
    let segments = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    ApiRequest {
        method: request.method.as_str().to_owned(),
        path,
        segments,
        query: request
            .url
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
        body: request.body.clone(),
    }
}

fn authorized(token: Option<&str>, request: &Request) -> bool {
    let Some(token) = token else {
        return true;
    };
    request
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .is_some_and(|(scheme, credential)| {
            (scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token"))
                && credential.trim() == token
        })
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        422 => "Validation Failed",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Injected fault",
    }
}

impl Responder {
    /// A wrong token is 401 `Bad credentials`; no token at all, when one
    /// is required, is what GitHub says to a stranger about a private
    /// repository — 404 — and 401 `Requires authentication` for `/user`.
    fn serve(&self, world: &mut World, request: &Request, api: &ApiRequest) -> ApiResponse {
        let version = request
            .headers
            .get("x-github-api-version")
            .and_then(|v| v.to_str().ok());
        if let Some(version) = version
            && !API_VERSIONS.contains(&version.trim())
        {
            return ApiResponse::message(
                400,
                &format!(
                    "Unsupported 'X-GitHub-Api-Version' header: {version}. Supported versions are: {}",
                    API_VERSIONS.join(", ")
                ),
            );
        }
        if authorized(self.token.as_deref(), request) {
            routes::handle(world, api)
        } else if request.headers.contains_key("authorization") {
            ApiResponse::message(401, "Bad credentials")
        } else if api.segments.first().is_some_and(|s| s == "user") {
            ApiResponse::message(401, "Requires authentication")
        } else {
            ApiResponse::not_found()
        }
    }
}

/// GitHub's rate-limit headers, on every answer.
fn rate_headers(response: &mut ApiResponse, remaining: u64, reset: i64) {
    for (name, value) in [
        ("x-ratelimit-limit", RATE_LIMIT.to_string()),
        ("x-ratelimit-remaining", remaining.to_string()),
        ("x-ratelimit-used", (RATE_LIMIT - remaining).to_string()),
        ("x-ratelimit-reset", reset.to_string()),
        ("x-ratelimit-resource", "core".to_owned()),
        ("x-github-api-version-selected", "2022-11-28".to_owned()),
    ] {
        if !response
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(name))
        {
            response.headers.push((name.to_owned(), value));
        }
    }
}

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let api = api_request(request);
        let mut state = lock(&self.state);
        let state = &mut *state;
        let fault = state.faults.take(&api.method, &api.path);
        let mut delay = None;
        let response = match fault {
            None => self.serve(&mut state.world, request, &api),
            Some(FaultKind::DelayMs(ms)) => {
                delay = Some(Duration::from_millis(ms));
                self.serve(&mut state.world, request, &api)
            }
            Some(FaultKind::Status(status)) => ApiResponse::message(status, reason(status)),
            Some(FaultKind::PrimaryRateLimit { reset_in, status }) => {
                let mut r = ApiResponse::json(
                    status.unwrap_or(403),
                    serde_json::json!({
                        "message": "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000000:0000000:00000000.",
                        "documentation_url": RATE_DOCS,
                        "status": status.unwrap_or(403).to_string(),
                    }),
                );
                let reset =
                    state.world.now().as_second() + i64::try_from(reset_in).unwrap_or(i64::MAX / 2);
                rate_headers(&mut r, 0, reset);
                r
            }
            Some(FaultKind::SecondaryRateLimit {
                retry_after,
                status,
            }) => {
                let mut r = ApiResponse::json(
                    status.unwrap_or(403),
                    serde_json::json!({
                        "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000000:0000000:00000000.",
                        "documentation_url": format!("{RATE_DOCS}#about-secondary-rate-limits"),
                        "status": status.unwrap_or(403).to_string(),
                    }),
                );
                if let Some(secs) = retry_after {
                    r.headers.push(("retry-after".to_owned(), secs.to_string()));
                }
                r
            }
            Some(FaultKind::RateLimited { retry_after }) => {
                let mut r = ApiResponse::message(429, "API rate limit exceeded");
                r.headers
                    .push(("Retry-After".to_owned(), retry_after.to_string()));
                r.headers
                    .push(("x-ratelimit-remaining".to_owned(), "0".to_owned()));
                r
            }
            Some(FaultKind::Malformed) => ApiResponse {
                status: 200,
                headers: Vec::new(),
                body: Body::Raw("{\"message\": \"truncated".to_owned()),
            },
            Some(FaultKind::ErrorBody { status, body }) => ApiResponse {
                status,
                headers: Vec::new(),
                body: Body::Raw(body),
            },
        };
        let mut response = response;
        state.used = (state.used + 1).min(RATE_LIMIT - 1);
        let hour = state.world.now().as_second().div_euclid(3600);
        rate_headers(&mut response, RATE_LIMIT - state.used, (hour + 1) * 3600);
        state.journal.push(RecordedRequest {
            method: api.method.clone(),
            path: api.path.clone(),
            query: api.query.clone(),
            body: String::from_utf8_lossy(&api.body).into_owned(),
            has_auth: request.headers.contains_key("authorization"),
            status: response.status,
        });
        let mut template = ResponseTemplate::new(response.status);
        for (name, value) in &response.headers {
            template = template.insert_header(name.as_str(), value.as_str());
        }
        template = match response.body {
            Body::Json(value) => template.set_body_json(value),
            Body::Raw(text) => template.set_body_raw(text, "application/json"),
            Body::Empty => template,
        };
        match delay {
            Some(delay) => template.set_delay(delay),
            None => template,
        }
    }
}

/// A running mock tracker; stops when dropped.
#[derive(Debug)]
pub struct MockTracker {
    server: MockServer,
    state: Arc<Mutex<State>>,
}

impl MockTracker {
    pub fn builder() -> MockTrackerBuilder {
        MockTrackerBuilder::default()
    }

    /// The base URL, e.g. `http://127.0.0.1:4567` (no trailing slash).
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    pub fn address(&self) -> SocketAddr {
        *self.server.address()
    }

    /// `owner/name`.
    pub fn repository(&self) -> String {
        let state = lock(&self.state);
        format!("{}/{}", state.world.owner(), state.world.name())
    }

    // ---- faults -----------------------------------------------------------

    pub fn inject(&self, fault: Fault) -> FaultId {
        lock(&self.state).faults.add(fault)
    }

    pub fn remove_fault(&self, id: FaultId) {
        lock(&self.state).faults.remove(id);
    }

    pub fn clear_faults(&self) {
        lock(&self.state).faults.clear();
    }

    // ---- the journal ------------------------------------------------------

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).journal.all()
    }

    /// Requests whose method is `method` (`*` = any) and whose path matches
    /// `path` (`*` one segment, `**` any number).
    pub fn requests_to(&self, method: &str, path: &str) -> Vec<RecordedRequest> {
        lock(&self.state)
            .journal
            .matching(&RouteMatcher::new(method, path))
    }

    pub fn count(&self, method: &str, path: &str) -> usize {
        self.requests_to(method, path).len()
    }

    pub fn clear_requests(&self) {
        lock(&self.state).journal.clear();
    }

    // ---- the world --------------------------------------------------------

    /// Reads the world (e.g. `t.read(|w| w.pull_view(10))`).
    pub fn read<R>(&self, f: impl FnOnce(&World) -> R) -> R {
        f(&lock(&self.state).world)
    }

    pub fn apply(&self, change: &WorldChange) -> Result<(), WorldError> {
        change.apply(&mut lock(&self.state).world)
    }

    /// [`MockTracker::apply`], a reply's `code: from_notification` read
    /// with `codes` ([`WorldChange::apply_with_codes`]).
    pub fn apply_with_codes(
        &self,
        change: &WorldChange,
        codes: CodeLookup<'_>,
    ) -> Result<(), WorldError> {
        change.apply_with_codes(&mut lock(&self.state).world, codes)
    }

    /// Moves a fixed clock: what "now" is for what the world writes next.
    pub fn set_time(&self, at: Timestamp) {
        lock(&self.state).world.set_time(at);
    }

    pub fn add_issue(&self, issue: &NewIssue) -> Result<u64, WorldError> {
        lock(&self.state).world.add_issue(issue)
    }

    /// Merges a pull request "elsewhere" (as a human would).
    pub fn merge_pr(&self, number: u64) -> Result<String, WorldError> {
        lock(&self.state).world.merge_pull(number)
    }

    pub fn close_pr(&self, number: u64) -> Result<(), WorldError> {
        lock(&self.state).world.close_pull(number)
    }

    /// A top-level review comment by `author`; its id.
    pub fn add_review_comment(&self, pr: u64, author: &str, body: &str) -> Result<u64, WorldError> {
        let comment = lock(&self.state)
            .world
            .add_review_comment(pr, author, body, None)?;
        Ok(comment["id"].as_u64().unwrap_or_default())
    }

    /// A reply by `author` in review comment `to`'s thread; its id.
    pub fn reply_to_review_comment(
        &self,
        pr: u64,
        to: u64,
        author: &str,
        body: &str,
    ) -> Result<u64, WorldError> {
        let reply = lock(&self.state)
            .world
            .reply_to_review_comment(pr, to, author, body)?;
        Ok(reply["id"].as_u64().unwrap_or_default())
    }

    pub fn add_issue_comment(
        &self,
        number: u64,
        author: &str,
        body: &str,
    ) -> Result<u64, WorldError> {
        let comment = lock(&self.state)
            .world
            .add_issue_comment(number, author, body)?;
        Ok(comment["id"].as_u64().unwrap_or_default())
    }

    pub fn set_labels(&self, number: u64, labels: &[&str]) -> Result<(), WorldError> {
        let labels: Vec<String> = labels.iter().map(|l| (*l).to_owned()).collect();
        lock(&self.state)
            .world
            .set_labels(number, &labels)
            .map(drop)
    }

    pub fn labels(&self, number: u64) -> Result<Vec<String>, WorldError> {
        self.read(|w| w.labels(number))
    }

    /// A pull request's state, branch and (live) head SHA.
    pub fn pull(&self, number: u64) -> Result<PullSummary, WorldError> {
        self.read(|w| w.pull_summary(number))
    }

    /// `GET /issues/{n}` as the API would answer it.
    pub fn issue_json(&self, number: u64) -> Result<Value, WorldError> {
        self.read(|w| w.issue_view(number))
    }
}

/// A [`MockTracker`] with its own runtime, for non-async callers; derefs to
/// the tracker. Stops when dropped.
#[derive(Debug)]
pub struct BlockingMockTracker {
    tracker: Option<MockTracker>,
    runtime: tokio::runtime::Runtime,
}

impl std::ops::Deref for BlockingMockTracker {
    type Target = MockTracker;
    fn deref(&self) -> &MockTracker {
        self.tracker
            .as_ref()
            .expect("the tracker lives until the handle is dropped")
    }
}

impl Drop for BlockingMockTracker {
    fn drop(&mut self) {
        let _guard = self.runtime.enter();
        self.tracker.take();
    }
}
