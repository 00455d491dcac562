//! The fixture backlog: the tracker's starting state, one YAML file per
//! named world under `fixtures/backlogs/`.
//!
//! [`Backlog`] is what the mock tracker serves and what the git helper
//! materialises. The format (documented with examples in
//! `fixtures/README.md`):
//!
//! ```yaml
//! repository: acme/app            # owner/name
//! default_branch: main            # optional, default main
//! agent_logins: [sdd-worker, sdd-responder]
//! issues:
//!   - number: 1
//!     title: Add login page
//!     labels: [story]             # optional
//!     state: open                 # optional: open (default) | closed
//!     author: alice               # optional, default `octocat`
//!     body: |
//!       Depends on #3
//!       ### Acceptance Criteria
//!       - a user can log in
//!     comments: []                # optional: {id, author, body, at}
//! pull_requests:
//!   - number: 10
//!     title: Login page
//!     branch: feature/1-login
//!     base: main                  # optional, default: default_branch
//!     author: sdd-worker
//!     state: open                 # open | closed
//!     merged: false               # true only with state: closed
//!     labels: []
//!     head_sha: null              # optional; a live origin ref wins
//!     review_comments:            # {id, author, body, at, path?, replies}
//!       - id: 100
//!         author: alice
//!         body: Please rename this
//!         at: 2026-05-09T14:00:00Z
//!         replies:
//!           - { id: 101, author: sdd-responder, body: Done, at: 2026-05-09T14:10:00Z }
//!     issue_comments: []          # {id, author, body, at}
//!     reviews: []                 # {id, author, state, body, at}
//!     line_endings: crlf          # optional: this body only
//! line_endings: crlf              # optional: every body in CRLF, as
//!                                 # GitHub's web editor writes them
//! has_issues: false               # optional: issue routes answer 410
//! ```
//!
//! Issues and pull requests share one number space, as on GitHub, and
//! comment, reply and review ids are unique across the file; both are
//! checked after parsing and reported at the offending key. Dependencies
//! live in issue bodies (`Blocks: #N`, `Blocked by: #N`, `Depends on #N`);
//! the engine parses them, the fixture only carries the text.

use std::collections::BTreeMap;
use std::path::Path;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use crate::yaml::{self, YamlError};

/// Where the backlog format is documented; ends every `help:` line.
pub const FORMAT_HELP: &str = "the backlog format is described in fixtures/README.md";

/// A tracker's starting state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backlog {
    /// `owner/name`.
    pub repository: Spanned<String>,
    #[serde(default = "default_branch")]
    pub default_branch: String,
    /// Logins that are agents, not humans (the post-feedback-merge gate
    /// asks only about humans' feedback).
    #[serde(default)]
    pub agent_logins: Vec<String>,
    #[serde(default)]
    pub issues: Vec<Issue>,
    #[serde(default)]
    pub pull_requests: Vec<PullRequest>,
    /// How every body is served: `lf` (default) or `crlf`, as GitHub
    /// returns text written or edited in its web editor.
    #[serde(default)]
    pub line_endings: LineEndings,
    /// `false`: the repository has issues disabled, and every issue route
    /// answers 410 `Issues are disabled for this repo`, as GitHub does.
    #[serde(default = "yes")]
    pub has_issues: bool,
}

/// Line endings of the bodies the tracker serves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LineEndings {
    #[default]
    Lf,
    /// `\r\n`: what GitHub returns for text from its web editor.
    Crlf,
}

impl LineEndings {
    /// `text` with these line endings.
    pub fn apply(self, text: &str) -> String {
        let lf = text.replace("\r\n", "\n");
        match self {
            LineEndings::Lf => lf,
            LineEndings::Crlf => lf.replace('\n', "\r\n"),
        }
    }
}

fn yes() -> bool {
    true
}

fn default_branch() -> String {
    "main".to_owned()
}

fn not_merged() -> Spanned<bool> {
    unlocated(false)
}

fn default_author() -> String {
    "octocat".to_owned()
}

/// `open` or `closed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    #[default]
    Open,
    Closed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Open => "open",
            State::Closed => "closed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Issue {
    pub number: Spanned<u64>,
    pub title: String,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub labels: Vec<String>,
    #[serde(default)]
    pub state: State,
    #[serde(default = "default_author")]
    pub author: String,
    #[serde(default)]
    pub comments: Vec<Comment>,
    /// This issue's body only: `lf` or `crlf` [default: the backlog's].
    #[serde(default)]
    pub line_endings: Option<LineEndings>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PullRequest {
    pub number: Spanned<u64>,
    pub title: String,
    #[serde(default)]
    pub body: String,
    /// The head branch (`head.ref`).
    pub branch: String,
    /// The base branch; the backlog's `default_branch` when absent.
    #[serde(default)]
    pub base: Option<String>,
    #[serde(default = "default_author")]
    pub author: String,
    #[serde(default)]
    pub state: State,
    #[serde(default = "not_merged")]
    pub merged: Spanned<bool>,
    #[serde(default)]
    pub merged_at: Option<Timestamp>,
    #[serde(default)]
    pub labels: Vec<String>,
    /// Used when no origin repository is attached, or the branch is gone;
    /// absent, a stable made-up SHA is served.
    #[serde(default)]
    pub head_sha: Option<String>,
    #[serde(default)]
    pub review_comments: Vec<ReviewComment>,
    #[serde(default)]
    pub issue_comments: Vec<Comment>,
    #[serde(default)]
    pub reviews: Vec<Review>,
    /// This pull request's body only: `lf` or `crlf` [default: the backlog's].
    #[serde(default)]
    pub line_endings: Option<LineEndings>,
}

/// A conversation comment (issue or PR), or a reply in a review thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comment {
    pub id: Spanned<u64>,
    pub author: String,
    pub body: String,
    pub at: Timestamp,
}

/// A top-level review comment on a diff line, with its thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewComment {
    pub id: Spanned<u64>,
    pub author: String,
    pub body: String,
    pub at: Timestamp,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub replies: Vec<Comment>,
}

/// A submitted review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Review {
    pub id: Spanned<u64>,
    pub author: String,
    pub state: ReviewState,
    #[serde(default)]
    pub body: String,
    pub at: Timestamp,
}

/// GitHub's review states, spelled as GitHub spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewState {
    Approved,
    ChangesRequested,
    Commented,
}

impl ReviewState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewState::Approved => "APPROVED",
            ReviewState::ChangesRequested => "CHANGES_REQUESTED",
            ReviewState::Commented => "COMMENTED",
        }
    }
}

impl Backlog {
    /// Reads, parses and checks a backlog file.
    pub fn load(path: &Path) -> Result<Self, YamlError> {
        let backlog: Self = yaml::load(path, FORMAT_HELP)?;
        backlog.check(path)?;
        Ok(backlog)
    }

    /// Parses and checks backlog text; `path` is only used in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, YamlError> {
        let backlog: Self = yaml::parse(path, text, FORMAT_HELP)?;
        backlog.check(path)?;
        Ok(backlog)
    }

    /// An empty backlog for `owner/name`, for worlds built in code.
    pub fn empty(repository: &str) -> Self {
        Self {
            repository: unlocated(repository.to_owned()),
            default_branch: default_branch(),
            agent_logins: Vec::new(),
            issues: Vec::new(),
            pull_requests: Vec::new(),
            line_endings: LineEndings::Lf,
            has_issues: true,
        }
    }

    /// `(owner, name)`.
    pub fn owner_and_name(&self) -> (&str, &str) {
        self.repository
            .value
            .split_once('/')
            .unwrap_or((self.repository.value.as_str(), ""))
    }

    fn check(&self, path: &Path) -> Result<(), YamlError> {
        let repo = &self.repository;
        let valid = repo.value.split_once('/').is_some_and(|(owner, name)| {
            !owner.is_empty() && !name.is_empty() && !name.contains('/')
        });
        if !valid {
            return Err(YamlError::at(
                path,
                repo.referenced,
                format!("repository `{}` is not `owner/name`", repo.value),
                format!("write it as `acme/app` ({FORMAT_HELP})"),
            ));
        }

        let mut numbers: BTreeMap<u64, &Spanned<u64>> = BTreeMap::new();
        let issue_numbers = self.issues.iter().map(|i| &i.number);
        let pr_numbers = self.pull_requests.iter().map(|p| &p.number);
        for number in issue_numbers.chain(pr_numbers) {
            if let Some(first) = numbers.insert(number.value, number) {
                return Err(YamlError::at(
                    path,
                    number.referenced,
                    format!(
                        "number {} is already used at line {} (issues and pull requests share one number space)",
                        number.value,
                        first.referenced.line()
                    ),
                    format!("give each issue and pull request its own number ({FORMAT_HELP})"),
                ));
            }
        }

        for pr in &self.pull_requests {
            if pr.merged.value && pr.state == State::Open {
                return Err(YamlError::at(
                    path,
                    pr.merged.referenced,
                    format!(
                        "pull request #{} is merged but its state is open",
                        pr.number.value
                    ),
                    format!("a merged pull request has `state: closed` ({FORMAT_HELP})"),
                ));
            }
        }

        let mut ids: BTreeMap<u64, &Spanned<u64>> = BTreeMap::new();
        for id in self.comment_ids() {
            if let Some(first) = ids.insert(id.value, id) {
                return Err(YamlError::at(
                    path,
                    id.referenced,
                    format!(
                        "id {} is already used at line {}",
                        id.value,
                        first.referenced.line()
                    ),
                    format!(
                        "comment, reply and review ids are unique across the file ({FORMAT_HELP})"
                    ),
                ));
            }
        }
        Ok(())
    }

    fn comment_ids(&self) -> impl Iterator<Item = &Spanned<u64>> {
        let issue_comments = self
            .issues
            .iter()
            .flat_map(|i| i.comments.iter().map(|c| &c.id));
        let pr_ids = self.pull_requests.iter().flat_map(|pr| {
            let threads = pr
                .review_comments
                .iter()
                .flat_map(|rc| std::iter::once(&rc.id).chain(rc.replies.iter().map(|r| &r.id)));
            let conversation = pr.issue_comments.iter().map(|c| &c.id);
            let reviews = pr.reviews.iter().map(|r| &r.id);
            threads.chain(conversation).chain(reviews)
        });
        issue_comments.chain(pr_ids)
    }
}

/// A value built in code, with no place in a file.
pub fn unlocated<T>(value: T) -> Spanned<T> {
    Spanned::new(
        value,
        serde_saphyr::Location::UNKNOWN,
        serde_saphyr::Location::UNKNOWN,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
repository: acme/app
agent_logins: [sdd-worker, sdd-responder]
issues:
  - number: 1
    title: Add login page
    labels: [story]
    body: |
      Depends on #3
      ### Acceptance Criteria
      - a user can log in
pull_requests:
  - number: 10
    title: Login page
    branch: feature/1-login
    author: sdd-worker
    review_comments:
      - id: 100
        author: alice
        body: Please rename this
        at: 2026-05-09T14:00:00Z
        replies:
          - { id: 101, author: sdd-responder, body: Done, at: 2026-05-09T14:10:00Z }
    reviews:
      - { id: 102, author: bob, state: CHANGES_REQUESTED, at: 2026-05-09T14:20:00Z }
";

    #[test]
    fn sample_parses_with_defaults() {
        let b = Backlog::parse(Path::new("s.yaml"), SAMPLE).unwrap();
        assert_eq!(b.owner_and_name(), ("acme", "app"));
        assert_eq!(b.default_branch, "main");
        assert_eq!(b.issues[0].state, State::Open);
        assert_eq!(b.issues[0].author, "octocat");
        assert!(b.issues[0].body.contains("### Acceptance Criteria"));
        let pr = &b.pull_requests[0];
        assert_eq!(pr.base, None);
        assert!(!pr.merged.value);
        assert_eq!(pr.review_comments[0].replies[0].id.value, 101);
        assert_eq!(pr.reviews[0].state, ReviewState::ChangesRequested);
        assert_eq!(
            pr.review_comments[0].at,
            "2026-05-09T14:00:00Z".parse::<Timestamp>().unwrap()
        );
    }

    #[test]
    fn duplicate_number_points_at_the_second_use() {
        let text = "repository: a/b\nissues:\n  - number: 1\n    title: x\npull_requests:\n  - number: 1\n    title: y\n    branch: b\n";
        let err = Backlog::parse(Path::new("d.yaml"), text).unwrap_err();
        assert_eq!((err.line, err.column), (6, 13), "{err}");
        assert!(err.message.contains("already used at line 3"), "{err}");
    }

    #[test]
    fn merged_open_pr_is_refused_at_merged() {
        let text = "repository: a/b\npull_requests:\n  - number: 2\n    title: y\n    branch: b\n    merged: true\n";
        let err = Backlog::parse(Path::new("m.yaml"), text).unwrap_err();
        assert_eq!(err.line, 6, "{err}");
        assert!(
            err.render()
                .contains("help: a merged pull request has `state: closed`")
        );
    }

    #[test]
    fn bad_repository_and_duplicate_ids_are_located() {
        let err = Backlog::parse(Path::new("r.yaml"), "repository: acme\n").unwrap_err();
        assert_eq!((err.line, err.column), (1, 13), "{err}");
        let text = "repository: a/b\nissues:\n  - number: 1\n    title: x\n    comments:\n      - { id: 5, author: a, body: b, at: 2026-05-09T14:00:00Z }\n      - { id: 5, author: a, body: c, at: 2026-05-09T14:00:00Z }\n";
        let err = Backlog::parse(Path::new("i.yaml"), text).unwrap_err();
        assert_eq!(err.line, 7, "{err}");
    }

    #[test]
    fn unknown_state_names_the_choices() {
        let text = "repository: a/b\nissues:\n  - number: 1\n    title: x\n    state: done\n";
        let err = Backlog::parse(Path::new("s.yaml"), text).unwrap_err();
        assert_eq!(err.line, 5, "{err}");
        assert!(err.message.contains("open"), "{err}");
        assert!(
            err.help.starts_with("use one of the values"),
            "{}",
            err.help
        );
    }
}
