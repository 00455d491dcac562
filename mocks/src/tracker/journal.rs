//! Every request the mock tracker received, for assertions.
//!
//! A [`RecordedRequest`] keeps the method, the path (as sent), the decoded
//! query, the body, whether an `Authorization` header was present and the
//! status the mock answered. Queries filter by a [`RouteMatcher`], so a test
//! can say "how many `PUT **/merge` calls" in one line.

use serde_json::Value;

use super::pattern::RouteMatcher;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: String,
    /// An `Authorization` header was sent (whatever its value).
    pub has_auth: bool,
    /// The status the mock answered with.
    pub status: u16,
}

impl RecordedRequest {
    /// The body as JSON, when it is JSON.
    pub fn body_json(&self) -> Option<Value> {
        serde_json::from_str(&self.body).ok()
    }

    /// A query parameter's value.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The requests received so far, oldest first.
#[derive(Debug, Default)]
pub struct Journal {
    requests: Vec<RecordedRequest>,
}

impl Journal {
    pub fn push(&mut self, request: RecordedRequest) {
        self.requests.push(request);
    }

    pub fn all(&self) -> Vec<RecordedRequest> {
        self.requests.clone()
    }

    pub fn matching(&self, route: &RouteMatcher) -> Vec<RecordedRequest> {
        self.requests
            .iter()
            .filter(|r| route.matches(&r.method, &r.path))
            .cloned()
            .collect()
    }

    pub fn clear(&mut self) {
        self.requests.clear();
    }
}
