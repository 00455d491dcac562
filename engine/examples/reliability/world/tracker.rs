//! The tracker of a world: a GitHub-shaped wiremock server on loopback
//! whose answers a family can switch to a [`Fault`] while ticks run.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The repository every world's tracker serves.
pub const REPO: &str = "acme/app";

/// What the tracker does with the next requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Serve the backlog.
    None,
    /// Answer every request with this status and JSON body.
    Status(u16, String),
    /// 429 with `Retry-After`.
    RateLimited(u64),
    /// Accept the request and never answer it.
    Hang,
    /// 200 with a body that is not JSON.
    Garbage,
}

#[derive(Debug)]
struct Answers {
    fault: Arc<Mutex<Fault>>,
}

fn pull_json(n: u64) -> Value {
    json!({
        "number": n, "title": format!("PR {n}"), "body": "", "state": "open",
        "merged": false, "labels": [], "user": {"login": "sdd-worker"},
        "head": {"ref": format!("feature/{n}"), "sha": format!("sha{n}")}
    })
}

impl Respond for Answers {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let fault = self
            .fault
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match fault {
            Fault::None => {}
            Fault::Status(status, body) => {
                return ResponseTemplate::new(status).set_body_raw(body, "application/json");
            }
            Fault::RateLimited(secs) => {
                return ResponseTemplate::new(429)
                    .insert_header("Retry-After", secs.to_string().as_str())
                    .insert_header("x-ratelimit-remaining", "0")
                    .set_body_json(json!({"message": "API rate limit exceeded"}));
            }
            Fault::Hang => {
                return ResponseTemplate::new(200)
                    .set_body_json(json!([]))
                    .set_delay(Duration::from_secs(24 * 3600));
            }
            Fault::Garbage => {
                return ResponseTemplate::new(200).set_body_raw(
                    "<html>502 Bad Gateway</html>{\"message\": \"trunc",
                    "text/html",
                );
            }
        }
        let path = request.url.path();
        let base = format!("/repos/{REPO}");
        let Some(rest) = path.strip_prefix(&base) else {
            return ResponseTemplate::new(404).set_body_json(json!({"message": "Not Found"}));
        };
        match rest {
            "/issues" => ResponseTemplate::new(200).set_body_json(json!([
                {"number": 1, "title": "One", "body": "### Acceptance Criteria\n- one", "labels": []},
                {"number": 2, "title": "Two", "body": "### Acceptance Criteria\n- two", "labels": []}
            ])),
            "/pulls" => ResponseTemplate::new(200).set_body_json(json!([])),
            _ => match rest.strip_prefix("/pulls/").and_then(|n| n.parse().ok()) {
                Some(n) => ResponseTemplate::new(200).set_body_json(pull_json(n)),
                None => ResponseTemplate::new(404).set_body_json(json!({"message": "Not Found"})),
            },
        }
    }
}

/// A GitHub-shaped tracker on loopback: two open issues with clear
/// criteria, no open PRs, and any PR a skill reports exists. Stops when
/// dropped.
#[derive(Debug)]
pub struct Tracker {
    server: Option<MockServer>,
    runtime: tokio::runtime::Runtime,
    fault: Arc<Mutex<Fault>>,
}

impl Tracker {
    pub fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        // A fresh server, never the pooled one: a late request must not
        // reach another world's mocks.
        let server = runtime.block_on(MockServer::builder().start());
        let fault = Arc::new(Mutex::new(Fault::None));
        runtime.block_on(
            Mock::given(any())
                .respond_with(Answers {
                    fault: Arc::clone(&fault),
                })
                .mount(&server),
        );
        Self {
            server: Some(server),
            runtime,
            fault,
        }
    }

    pub fn uri(&self) -> String {
        self.server.as_ref().expect("running").uri()
    }

    pub fn set_fault(&self, fault: Fault) {
        *self.fault.lock().unwrap_or_else(PoisonError::into_inner) = fault;
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        let _guard = self.runtime.enter();
        self.server.take();
    }
}
