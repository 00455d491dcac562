//! Route patterns for fault injection and request queries: a path split on
//! `/` where `*` matches exactly one segment and `**` any number (zero or
//! more), e.g. `/repos/acme/app/pulls/*/merge` or `**/issues`.
//!
//! A [`RouteMatcher`] adds an optional method (`GET`, …; none or `*`
//! matches any) to a [`PathPattern`].

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    source: String,
    segments: Vec<String>,
}

impl PathPattern {
    pub fn new(pattern: &str) -> Self {
        Self {
            source: pattern.to_owned(),
            segments: split(pattern).map(str::to_owned).collect(),
        }
    }

    pub fn matches(&self, path: &str) -> bool {
        let path: Vec<&str> = split(path).collect();
        let pattern: Vec<&str> = self.segments.iter().map(String::as_str).collect();
        matches(&pattern, &path)
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }
}

fn split(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

fn matches(pattern: &[&str], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| matches(rest, &path[skip..])),
        Some((first, rest)) => match path.split_first() {
            Some((segment, path_rest)) => {
                (*first == "*" || first == segment) && matches(rest, path_rest)
            }
            None => false,
        },
    }
}

impl fmt::Display for PathPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl Serialize for PathPattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

impl<'de> Deserialize<'de> for PathPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| Self::new(&s))
    }
}

/// A method (optional) and a path pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteMatcher {
    /// `GET`, `POST`, …; absent or `*` = any method.
    #[serde(default)]
    pub method: Option<String>,
    pub path: PathPattern,
}

impl RouteMatcher {
    /// `method` may be `*` for any.
    pub fn new(method: &str, path: &str) -> Self {
        Self {
            method: (method != "*").then(|| method.to_ascii_uppercase()),
            path: PathPattern::new(path),
        }
    }

    pub fn matches(&self, method: &str, path: &str) -> bool {
        let method_ok = match self.method.as_deref() {
            None | Some("*") => true,
            Some(m) => m.eq_ignore_ascii_case(method),
        };
        method_ok && self.path.matches(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_and_multi_segment_wildcards() {
        let p = PathPattern::new("/repos/*/*/pulls/*/merge");
        assert!(p.matches("/repos/acme/app/pulls/10/merge"));
        assert!(!p.matches("/repos/acme/app/pulls/10"));
        let p = PathPattern::new("**/issues");
        assert!(p.matches("/repos/acme/app/issues"));
        assert!(!p.matches("/repos/acme/app/issues/1"));
        let p = PathPattern::new("**");
        assert!(p.matches("/anything/at/all"));
        assert!(p.matches("/"));
        let p = PathPattern::new("/repos/acme/app/issues/**");
        assert!(p.matches("/repos/acme/app/issues"));
        assert!(p.matches("/repos/acme/app/issues/1/comments"));
    }

    #[test]
    fn method_is_optional_and_case_insensitive() {
        assert!(RouteMatcher::new("*", "**").matches("DELETE", "/x"));
        assert!(RouteMatcher::new("get", "/x").matches("GET", "/x"));
        assert!(!RouteMatcher::new("POST", "/x").matches("GET", "/x"));
    }
}
