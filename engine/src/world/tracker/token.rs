//! Where the tracker token comes from: `SDD_LOOP_TRACKER_TOKEN`, else
//! `GITHUB_TOKEN`, else — when neither is set — the token GitHub's own CLI
//! holds for the tracker's host (`gh auth token --hostname HOST`), which is
//! what most people who use GitHub from a terminal (or from Claude Code,
//! whose hooks inherit its environment) are logged in with and never export.
//!
//! `gh` is asked at most once per engine run (one tick), with its standard
//! input closed and [`GH_TIMEOUT`] to answer; what it prints is the token
//! and is never printed, logged or written anywhere — the caller redacts it
//! like the variables' token. When no token is found, [`NoToken`] says
//! why, for the "no token" note.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use std::time::Duration;

/// Longest `gh auth token` may take before it is killed and ignored.
pub const GH_TIMEOUT: Duration = Duration::from_secs(5);

/// The variables read, in order.
pub const TOKEN_VARS: [&str; 2] = ["SDD_LOOP_TRACKER_TOKEN", "GITHUB_TOKEN"];

/// Where a token came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// An environment variable, by name.
    Var(&'static str),
    /// `gh auth token --hostname HOST`.
    Gh { host: String },
}

impl fmt::Display for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenSource::Var(name) => write!(f, "{name}"),
            TokenSource::Gh { host } => write!(f, "`gh auth token --hostname {host}`"),
        }
    }
}

/// A token and where it came from. `Debug` never shows the token.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    pub value: String,
    pub source: TokenSource,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("value", &"[set]")
            .field("source", &self.source)
            .finish()
    }
}

/// Why no token was found (neither variable was set, and then…).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoToken {
    /// `gh` is not on `PATH`.
    GhAbsent,
    /// `gh` is installed but holds no token for the host.
    GhLoggedOut { host: String },
    /// `gh` did not answer in time, or could not be run.
    GhFailed { host: String, detail: String },
    /// The tracker URL names no host to ask `gh` about.
    NoHost,
}

impl fmt::Display for NoToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let vars = "SDD_LOOP_TRACKER_TOKEN and GITHUB_TOKEN are unset";
        match self {
            NoToken::GhAbsent => write!(f, "{vars}, and gh is not installed (not on PATH)"),
            NoToken::GhLoggedOut { host } => write!(
                f,
                "{vars}, and gh is not logged in to {host} (`gh auth login --hostname {host}`)"
            ),
            NoToken::GhFailed { host, detail } => write!(
                f,
                "{vars}, and `gh auth token --hostname {host}` gave no token: {detail}"
            ),
            NoToken::NoHost => write!(
                f,
                "{vars}, and the tracker URL names no host to ask gh about"
            ),
        }
    }
}

/// The host `gh` knows a tracker by: `github.com` for
/// `https://api.github.com`, the host itself for GitHub Enterprise Server
/// (`https://ghe.example.com/api/v3`) and anything else.
pub fn gh_host(tracker_url: &str) -> Option<String> {
    let rest = tracker_url
        .split_once("://")
        .map_or(tracker_url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split_once(']')
            .map_or(host, |(h, _)| h)
            .trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or(host)
    };
    let host = host.to_ascii_lowercase();
    match host.as_str() {
        "" => None,
        "api.github.com" => Some("github.com".to_owned()),
        _ => Some(host),
    }
}

/// The token for `tracker_url`: the first set variable, else `gh`'s.
pub fn find(vars: &BTreeMap<String, String>, tracker_url: &str) -> Result<Token, NoToken> {
    if let Some(token) = from_vars(vars) {
        return Ok(token);
    }
    let gh = crate::world::program::on_path(vars, "gh").ok_or(NoToken::GhAbsent)?;
    let host = gh_host(tracker_url).ok_or(NoToken::NoHost)?;
    let value = gh_token(&gh, &host, vars, GH_TIMEOUT)?;
    Ok(Token {
        value,
        source: TokenSource::Gh { host },
    })
}

/// The token of the first variable set of [`TOKEN_VARS`], named by it;
/// `gh` is not asked.
pub fn from_vars(vars: &BTreeMap<String, String>) -> Option<Token> {
    TOKEN_VARS.iter().find_map(|k| {
        vars.get(*k).filter(|v| !v.is_empty()).map(|v| Token {
            value: v.clone(),
            source: TokenSource::Var(k),
        })
    })
}

/// Runs `gh auth token --hostname HOST` with the engine's environment,
/// killing it after `timeout`.
fn gh_token(
    gh: &Path,
    host: &str,
    vars: &BTreeMap<String, String>,
    timeout: Duration,
) -> Result<String, NoToken> {
    let failed = |detail: String| NoToken::GhFailed {
        host: host.to_owned(),
        detail,
    };
    let ended = crate::world::program::run_within(
        gh,
        &["auth", "token", "--hostname", host],
        vars,
        timeout,
    )
    .map_err(|e| match e {
        crate::world::program::NoAnswer::Run(e) => {
            failed(format!("cannot run {}: {e}", gh.display()))
        }
        timed_out => failed(timed_out.to_string()),
    })?;
    let (status, out) = (ended.status, ended.stdout);
    let token = String::from_utf8_lossy(&out).trim().to_owned();
    if !status.success() || token.is_empty() {
        return Err(NoToken::GhLoggedOut {
            host: host.to_owned(),
        });
    }
    if token.chars().any(char::is_whitespace) {
        return Err(failed("it printed more than one word".to_owned()));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_as_gh_knows_them() {
        assert_eq!(
            gh_host("https://api.github.com").as_deref(),
            Some("github.com")
        );
        assert_eq!(
            gh_host("https://API.GitHub.com/").as_deref(),
            Some("github.com")
        );
        assert_eq!(
            gh_host("https://ghe.example.com/api/v3").as_deref(),
            Some("ghe.example.com")
        );
        assert_eq!(
            gh_host("http://127.0.0.1:4567").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(gh_host("http://[::1]:80/x").as_deref(), Some("::1"));
        assert_eq!(
            gh_host("https://user:pw@h.example/x").as_deref(),
            Some("h.example")
        );
        assert_eq!(gh_host(""), None);
    }

    #[test]
    fn variables_come_first_in_order() {
        let vars = BTreeMap::from([
            ("GITHUB_TOKEN".to_owned(), "b".to_owned()),
            ("SDD_LOOP_TRACKER_TOKEN".to_owned(), "a".to_owned()),
        ]);
        let t = find(&vars, "https://api.github.com").unwrap();
        assert_eq!(
            (t.value.as_str(), &t.source),
            ("a", &TokenSource::Var("SDD_LOOP_TRACKER_TOKEN"))
        );
        assert!(!format!("{t:?}").contains("\"a\""), "{t:?}");
    }

    // Regression: with no repository configured the CLI took the token
    // from the variables alone and named it SDD_LOOP_TRACKER_TOKEN even
    // when it came from GITHUB_TOKEN.
    #[test]
    fn a_variable_s_token_is_named_by_its_variable() {
        let vars = BTreeMap::from([("GITHUB_TOKEN".to_owned(), "b".to_owned())]);
        let t = from_vars(&vars).unwrap();
        assert_eq!(
            (t.value.as_str(), &t.source),
            ("b", &TokenSource::Var("GITHUB_TOKEN"))
        );
        let empty = BTreeMap::from([("SDD_LOOP_TRACKER_TOKEN".to_owned(), String::new())]);
        assert!(from_vars(&empty).is_none(), "an empty variable is no token");
    }

    fn stub_gh(script: &str) -> (tempfile::TempDir, BTreeMap<String, String>) {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let gh = dir.path().join("gh");
        std::fs::write(&gh, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
        let vars = BTreeMap::from([(
            "PATH".to_owned(),
            format!("{}:/usr/bin:/bin", dir.path().display()),
        )]);
        (dir, vars)
    }

    #[test]
    fn a_logged_in_gh_gives_its_token_for_the_host() {
        let (_dir, vars) = stub_gh(
            r#"[ "$1 $2 $3 $4" = "auth token --hostname github.com" ] || exit 3; echo gho_stubtoken123"#,
        );
        let t = find(&vars, "https://api.github.com").unwrap();
        assert_eq!(t.value, "gho_stubtoken123");
        assert_eq!(
            t.source,
            TokenSource::Gh {
                host: "github.com".into()
            }
        );
        assert_eq!(
            t.source.to_string(),
            "`gh auth token --hostname github.com`"
        );
    }

    #[test]
    fn a_logged_out_gh_says_so() {
        let (_dir, vars) = stub_gh("echo 'no oauth token found for github.com' >&2; exit 1");
        let err = find(&vars, "https://api.github.com").unwrap_err();
        assert_eq!(
            err,
            NoToken::GhLoggedOut {
                host: "github.com".into()
            }
        );
        assert!(
            err.to_string()
                .contains("gh is not logged in to github.com"),
            "{err}"
        );
    }

    #[test]
    fn a_hanging_gh_is_killed_at_the_timeout() {
        let (dir, vars) = stub_gh("exec sleep 30");
        let started = std::time::Instant::now();
        let err = gh_token(
            &dir.path().join("gh"),
            "github.com",
            &vars,
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(matches!(err, NoToken::GhFailed { .. }), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn without_gh_on_path_the_reason_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let vars = BTreeMap::from([("PATH".to_owned(), dir.path().display().to_string())]);
        assert_eq!(
            find(&vars, "https://api.github.com"),
            Err(NoToken::GhAbsent)
        );
        assert!(
            NoToken::GhAbsent
                .to_string()
                .contains("gh is not installed")
        );
    }
}
