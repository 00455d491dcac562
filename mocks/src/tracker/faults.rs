//! Injected tracker faults (5xx, 429 + Retry-After, slow,
//! malformed, an error page of any body), matched per route and
//! programmable while the server runs.
//!
//! A [`Fault`] names a route ([`RouteMatcher`]: method and path pattern),
//! what goes wrong ([`FaultKind`]) and for how many matching requests
//! (`times`; absent = always). Faults are checked before authentication and
//! routing, first registered first; a delay fault then serves the request
//! normally, every other kind replaces the answer and changes nothing.
//! Deserializable, so a scenario can list faults in YAML:
//!
//! ```yaml
//! - { method: GET, path: "**/issues", fault: { status: 503 }, times: 2 }
//! - { path: "**/pulls/*/merge", fault: { rate_limited: { retry_after: 60 } } }
//! - { path: "**", fault: { primary_rate_limit: { reset_in: 1800 } } }
//! - { method: GET, path: "**/issues", fault: { secondary_rate_limit: { retry_after: 1 } }, times: 1 }
//! - { method: GET, path: "**/pulls", fault: { delay_ms: 1500 } }
//! - { method: GET, path: "**/pulls/*", fault: malformed, times: 1 }
//! - { path: "**/issues", fault: { error_body: { status: 401, body: "<html>…</html>" } } }
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::pattern::{PathPattern, RouteMatcher};

/// What goes wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultKind {
    /// Answer with this status and a GitHub-style `{"message": …}` body.
    Status(u16),
    /// 429 with `Retry-After: {retry_after}` and `x-ratelimit-remaining: 0`.
    RateLimited { retry_after: u64 },
    /// GitHub's primary rate limit: 403 (or `status`) with
    /// `x-ratelimit-remaining: 0` and `x-ratelimit-reset` `reset_in`
    /// seconds after the tracker's clock, and GitHub's message.
    PrimaryRateLimit {
        reset_in: u64,
        #[serde(default)]
        status: Option<u16>,
    },
    /// GitHub's secondary rate limit: 403 (or `status`) with GitHub's
    /// "secondary rate limit" message, `retry-after` when given, and a
    /// remaining primary quota.
    SecondaryRateLimit {
        #[serde(default)]
        retry_after: Option<u64>,
        #[serde(default)]
        status: Option<u16>,
    },
    /// Wait this long, then answer normally.
    DelayMs(u64),
    /// 200 with a body that is not valid JSON.
    Malformed,
    /// Answer with this status and this body, verbatim: an error page
    /// that quotes what it was sent (a proxy echoing the request's
    /// `Authorization` header, say), JSON or not.
    ErrorBody { status: u16, body: String },
}

/// One injected fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// `GET`, `POST`, …; absent or `*` = any method.
    #[serde(default)]
    pub method: Option<String>,
    /// Path pattern: `*` one segment, `**` any number.
    pub path: PathPattern,
    pub fault: FaultKind,
    /// How many matching requests it affects; absent = every one.
    #[serde(default)]
    pub times: Option<u32>,
}

impl Fault {
    pub fn new(method: &str, path: &str, fault: FaultKind) -> Self {
        let route = RouteMatcher::new(method, path);
        Self {
            method: route.method,
            path: route.path,
            fault,
            times: None,
        }
    }

    pub fn status(method: &str, path: &str, status: u16) -> Self {
        Self::new(method, path, FaultKind::Status(status))
    }

    pub fn rate_limited(method: &str, path: &str, retry_after: u64) -> Self {
        Self::new(method, path, FaultKind::RateLimited { retry_after })
    }

    pub fn primary_rate_limit(method: &str, path: &str, reset_in: u64) -> Self {
        Self::new(
            method,
            path,
            FaultKind::PrimaryRateLimit {
                reset_in,
                status: None,
            },
        )
    }

    pub fn secondary_rate_limit(method: &str, path: &str, retry_after: Option<u64>) -> Self {
        Self::new(
            method,
            path,
            FaultKind::SecondaryRateLimit {
                retry_after,
                status: None,
            },
        )
    }

    pub fn delay(method: &str, path: &str, delay: Duration) -> Self {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        Self::new(method, path, FaultKind::DelayMs(ms))
    }

    pub fn malformed(method: &str, path: &str) -> Self {
        Self::new(method, path, FaultKind::Malformed)
    }

    pub fn error_body(method: &str, path: &str, status: u16, body: impl Into<String>) -> Self {
        Self::new(
            method,
            path,
            FaultKind::ErrorBody {
                status,
                body: body.into(),
            },
        )
    }

    /// Only the next `n` matching requests.
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        RouteMatcher {
            method: self.method.clone(),
            path: self.path.clone(),
        }
        .matches(method, path)
    }
}

/// Identifies an injected fault, to remove it early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FaultId(u64);

/// The faults in force.
#[derive(Debug, Default)]
pub struct Faults {
    next: u64,
    active: Vec<(FaultId, Fault)>,
}

impl Faults {
    pub fn add(&mut self, fault: Fault) -> FaultId {
        let id = FaultId(self.next);
        self.next += 1;
        if fault.times != Some(0) {
            self.active.push((id, fault));
        }
        id
    }

    pub fn remove(&mut self, id: FaultId) {
        self.active.retain(|(i, _)| *i != id);
    }

    pub fn clear(&mut self) {
        self.active.clear();
    }

    /// The fault for this request, if any, counting it against `times`.
    pub fn take(&mut self, method: &str, path: &str) -> Option<FaultKind> {
        let index = self
            .active
            .iter()
            .position(|(_, f)| f.matches(method, path))?;
        let fault = &mut self.active[index].1;
        let kind = fault.fault.clone();
        if let Some(left) = &mut fault.times {
            *left -= 1;
            if *left == 0 {
                self.active.remove(index);
            }
        }
        Some(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_faults_expire_and_always_faults_stay() {
        let mut faults = Faults::default();
        faults.add(Fault::status("GET", "**/issues", 503).times(2));
        faults.add(Fault::malformed("*", "**"));
        assert_eq!(
            faults.take("GET", "/repos/a/b/issues"),
            Some(FaultKind::Status(503))
        );
        assert_eq!(
            faults.take("GET", "/repos/a/b/issues"),
            Some(FaultKind::Status(503))
        );
        for _ in 0..3 {
            assert_eq!(
                faults.take("GET", "/repos/a/b/issues"),
                Some(FaultKind::Malformed)
            );
        }
        faults.clear();
        assert_eq!(faults.take("GET", "/x"), None);
    }

    #[test]
    fn remove_by_id() {
        let mut faults = Faults::default();
        let id = faults.add(Fault::delay("GET", "/x", Duration::from_millis(5)));
        faults.remove(id);
        assert_eq!(faults.take("GET", "/x"), None);
    }
}
