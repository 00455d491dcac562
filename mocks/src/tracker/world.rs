//! The tracker's mutable state: issues, pull requests, their comments,
//! review threads, reviews and labels, seeded from a [`Backlog`] and
//! changed by API calls and by the harness between ticks.
//!
//! [`World`] renders each object in GitHub REST v3's JSON shape (field
//! names as GitHub's) and applies every mutation, so a merge, a comment, a
//! reply, a label change or a new pull request changes every later answer.
//! Issues and pull requests share one number space; a pull request is also
//! an issue (labels and conversation comments live on the issue side). With
//! an origin repository attached, a pull request's `head.sha` is read live
//! from `refs/heads/{branch}` there, so a skill's pushes show up; otherwise
//! (or when the branch is gone) the fixture's `head_sha` is served, and
//! failing that a stable made-up SHA — never `null`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::shapes::{self, Site};
use crate::fixture::{self, Backlog, LineEndings, ReviewState, State};
use crate::git::{self, Git};

/// What "now" is for new comments, reviews and merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    System,
    Fixed(Timestamp),
}

impl Clock {
    pub fn now(self) -> Timestamp {
        match self {
            // GitHub's timestamps have whole seconds.
            Clock::System => Timestamp::from_second(Timestamp::now().as_second())
                .unwrap_or_else(|_| Timestamp::now()),
            Clock::Fixed(t) => t,
        }
    }
}

/// A mutation the world refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    #[error("no issue or pull request #{0}")]
    NoSuchNumber(u64),
    #[error("#{0} is an issue, not a pull request")]
    NotAPull(u64),
    #[error("no review comment {id} on pull request #{pr}")]
    NoSuchComment { pr: u64, id: u64 },
    #[error("#{number} has no label `{label}`")]
    NoSuchLabel { number: u64, label: String },
    #[error("number #{0} is already taken")]
    NumberTaken(u64),
    #[error("pull request #{0} is not open")]
    NotOpen(u64),
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Clone)]
struct Conversation {
    id: u64,
    author: String,
    body: String,
    at: Timestamp,
}

#[derive(Debug, Clone)]
struct ReviewComment {
    id: u64,
    author: String,
    body: String,
    at: Timestamp,
    path: Option<String>,
    in_reply_to: Option<u64>,
}

#[derive(Debug, Clone)]
struct Review {
    id: u64,
    author: String,
    state: ReviewState,
    body: String,
    at: Timestamp,
}

#[derive(Debug, Clone)]
struct Issue {
    number: u64,
    title: String,
    body: String,
    state: State,
    labels: Vec<String>,
    author: String,
    comments: Vec<Conversation>,
    line_endings: Option<LineEndings>,
}

#[derive(Debug, Clone)]
struct Pull {
    number: u64,
    title: String,
    body: String,
    branch: String,
    base: String,
    author: String,
    state: State,
    merged: bool,
    merged_at: Option<Timestamp>,
    merge_sha: Option<String>,
    /// Who merged it, when it was merged through the API or a world change.
    merged_by: Option<String>,
    labels: Vec<String>,
    head_sha: Option<String>,
    review_comments: Vec<ReviewComment>,
    comments: Vec<Conversation>,
    reviews: Vec<Review>,
    line_endings: Option<LineEndings>,
}

/// An issue to add to a running world.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewIssue {
    /// Absent: the next free number.
    #[serde(default)]
    pub number: Option<u64>,
    pub title: String,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub labels: Vec<String>,
    #[serde(default = "octocat")]
    pub author: String,
}

fn octocat() -> String {
    "octocat".to_owned()
}

/// A pull request as the harness sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullSummary {
    pub number: u64,
    pub branch: String,
    pub state: sdd_loop::state::history::PrState,
    pub head_sha: String,
    pub labels: Vec<String>,
}

/// The tracker's state.
#[derive(Debug)]
pub struct World {
    owner: String,
    name: String,
    default_branch: String,
    agent_logins: Vec<String>,
    viewer: String,
    issues: BTreeMap<u64, Issue>,
    pulls: BTreeMap<u64, Pull>,
    next_id: u64,
    origin: Option<PathBuf>,
    git: Git,
    clock: Clock,
    base_uri: String,
    line_endings: LineEndings,
    has_issues: bool,
}

fn conversation(c: &fixture::Comment) -> Conversation {
    Conversation {
        id: c.id.value,
        author: c.author.clone(),
        body: c.body.clone(),
        at: c.at,
    }
}

impl World {
    /// `viewer` is the login the API's callers act as (new comments,
    /// replies and pull requests are theirs).
    pub fn new(backlog: &Backlog, viewer: String, origin: Option<PathBuf>, clock: Clock) -> Self {
        let (owner, name) = backlog.owner_and_name();
        let issues = backlog
            .issues
            .iter()
            .map(|i| {
                let issue = Issue {
                    number: i.number.value,
                    title: i.title.clone(),
                    body: i.body.clone(),
                    state: i.state,
                    labels: i.labels.clone(),
                    author: i.author.clone(),
                    comments: i.comments.iter().map(conversation).collect(),
                    line_endings: i.line_endings,
                };
                (issue.number, issue)
            })
            .collect();
        let pulls = backlog
            .pull_requests
            .iter()
            .map(|p| {
                let mut review_comments = Vec::new();
                for rc in &p.review_comments {
                    review_comments.push(ReviewComment {
                        id: rc.id.value,
                        author: rc.author.clone(),
                        body: rc.body.clone(),
                        at: rc.at,
                        path: rc.path.clone(),
                        in_reply_to: None,
                    });
                    for reply in &rc.replies {
                        review_comments.push(ReviewComment {
                            id: reply.id.value,
                            author: reply.author.clone(),
                            body: reply.body.clone(),
                            at: reply.at,
                            path: rc.path.clone(),
                            in_reply_to: Some(rc.id.value),
                        });
                    }
                }
                let pull = Pull {
                    number: p.number.value,
                    title: p.title.clone(),
                    body: p.body.clone(),
                    branch: p.branch.clone(),
                    base: p
                        .base
                        .clone()
                        .unwrap_or_else(|| backlog.default_branch.clone()),
                    author: p.author.clone(),
                    state: p.state,
                    merged: p.merged.value,
                    merged_at: p.merged_at,
                    merge_sha: None,
                    merged_by: None,
                    labels: p.labels.clone(),
                    head_sha: p.head_sha.clone(),
                    review_comments,
                    comments: p.issue_comments.iter().map(conversation).collect(),
                    reviews: p
                        .reviews
                        .iter()
                        .map(|r| Review {
                            id: r.id.value,
                            author: r.author.clone(),
                            state: r.state,
                            body: r.body.clone(),
                            at: r.at,
                        })
                        .collect(),
                    line_endings: p.line_endings,
                };
                (pull.number, pull)
            })
            .collect();
        let mut world = Self {
            owner: owner.to_owned(),
            name: name.to_owned(),
            default_branch: backlog.default_branch.clone(),
            agent_logins: backlog.agent_logins.clone(),
            viewer,
            issues,
            pulls,
            next_id: 1,
            origin,
            git: Git::default(),
            clock,
            base_uri: String::new(),
            line_endings: backlog.line_endings,
            has_issues: backlog.has_issues,
        };
        world.next_id = world.max_id() + 1;
        world
    }

    fn max_id(&self) -> u64 {
        let issue_ids = self
            .issues
            .values()
            .flat_map(|i| i.comments.iter().map(|c| c.id));
        let pull_ids = self.pulls.values().flat_map(|p| {
            p.review_comments
                .iter()
                .map(|c| c.id)
                .chain(p.comments.iter().map(|c| c.id))
                .chain(p.reviews.iter().map(|r| r.id))
        });
        issue_ids.chain(pull_ids).max().unwrap_or(0)
    }

    /// The server's own base URI, used in `url` fields and `Link` headers.
    pub fn set_base_uri(&mut self, uri: &str) {
        self.base_uri = uri.trim_end_matches('/').to_owned();
    }

    pub fn base_uri(&self) -> &str {
        &self.base_uri
    }

    pub fn owner(&self) -> &str {
        &self.owner
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn viewer(&self) -> &str {
        &self.viewer
    }

    /// Whether the repository has issues enabled (else issue routes are 410).
    pub fn has_issues(&self) -> bool {
        self.has_issues
    }

    /// What "now" is for this world.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// A body as served: in `own` line endings, else the world's.
    fn body(&self, text: &str, own: Option<LineEndings>) -> String {
        own.unwrap_or(self.line_endings).apply(text)
    }

    pub fn agent_logins(&self) -> &[String] {
        &self.agent_logins
    }

    fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn next_number(&self) -> u64 {
        let issues = self.issues.keys().max().copied().unwrap_or(0);
        let pulls = self.pulls.keys().max().copied().unwrap_or(0);
        issues.max(pulls) + 1
    }

    /// The live origin ref, else the fixture's SHA, else a stable made-up
    /// one (GitHub always has a head SHA, and clients rely on it).
    fn head_sha(&self, pull: &Pull) -> String {
        let live = self
            .origin
            .as_ref()
            .and_then(|origin| git::ref_sha(&self.git, origin, &pull.branch).ok().flatten());
        live.or_else(|| pull.head_sha.clone())
            .unwrap_or_else(|| crate::hash::fake_sha(&format!("{}#{}", pull.branch, pull.number)))
    }

    fn labels_mut(&mut self, number: u64) -> Result<&mut Vec<String>, WorldError> {
        if let Some(issue) = self.issues.get_mut(&number) {
            return Ok(&mut issue.labels);
        }
        self.pulls
            .get_mut(&number)
            .map(|p| &mut p.labels)
            .ok_or(WorldError::NoSuchNumber(number))
    }

    fn pull_mut(&mut self, number: u64) -> Result<&mut Pull, WorldError> {
        if self.issues.contains_key(&number) {
            return Err(WorldError::NotAPull(number));
        }
        self.pulls
            .get_mut(&number)
            .ok_or(WorldError::NoSuchNumber(number))
    }

    fn pull(&self, number: u64) -> Result<&Pull, WorldError> {
        if self.issues.contains_key(&number) {
            return Err(WorldError::NotAPull(number));
        }
        self.pulls
            .get(&number)
            .ok_or(WorldError::NoSuchNumber(number))
    }

    // ---- JSON views -------------------------------------------------------
    //
    // Every field GitHub's OpenAPI description requires for the object
    // (see `shapes`); bodies in the world's line endings.

    /// The site the objects live on.
    pub fn site(&self) -> Site<'_> {
        Site {
            base: &self.base_uri,
            owner: &self.owner,
            name: &self.name,
            default_branch: &self.default_branch,
            has_issues: self.has_issues,
            open_issues: self
                .issues
                .values()
                .filter(|i| i.state == State::Open)
                .count() as u64,
        }
    }

    fn association(&self, login: &str) -> &'static str {
        let mut members = self.agent_logins.clone();
        members.push(self.viewer.clone());
        shapes::association(login, &self.owner, &members)
    }

    /// The fields an issue and a pull request share on the issues API.
    #[expect(
        clippy::too_many_arguments,
        reason = "the fields an issue and a pull request share"
    )]
    fn issue_fields(
        &self,
        number: u64,
        title: &str,
        body: String,
        state: State,
        labels: &[String],
        author: &str,
        comments: usize,
        closed_at: Option<Timestamp>,
    ) -> Value {
        let site = self.site();
        let url = format!("{}/issues/{number}", site.repo_url());
        let id = shapes::id_of("issue", &format!("{}/{}#{number}", self.owner, self.name));
        json!({
            "id": id,
            "node_id": shapes::node_id("I", id),
            "url": url,
            "repository_url": site.repo_url(),
            "labels_url": format!("{url}/labels{{/name}}"),
            "comments_url": format!("{url}/comments"),
            "events_url": format!("{url}/events"),
            "html_url": format!("{}/issues/{number}", site.html_url()),
            "number": number,
            "state": state.as_str(),
            "state_reason": match state {
                State::Open => Value::Null,
                State::Closed => json!("completed"),
            },
            "title": title,
            "body": body,
            "user": site.user(author),
            "labels": site.labels(labels),
            "assignee": null,
            "assignees": [],
            "milestone": null,
            "locked": false,
            "active_lock_reason": null,
            "comments": comments,
            "closed_at": closed_at.map(|t| t.to_string()),
            "created_at": shapes::EPOCH,
            "updated_at": shapes::EPOCH,
            "closed_by": null,
            "author_association": self.association(author),
        })
    }

    fn issue_json(&self, issue: &Issue) -> Value {
        let closed = (issue.state == State::Closed).then(shapes::epoch);
        self.issue_fields(
            issue.number,
            &issue.title,
            self.body(&issue.body, issue.line_endings),
            issue.state,
            &issue.labels,
            &issue.author,
            issue.comments.len(),
            closed,
        )
    }

    fn closed_at(pull: &Pull) -> Option<Timestamp> {
        match pull.state {
            State::Open => None,
            State::Closed => Some(pull.merged_at.unwrap_or_else(shapes::epoch)),
        }
    }

    fn pull_as_issue_json(&self, pull: &Pull) -> Value {
        let mut v = self.issue_fields(
            pull.number,
            &pull.title,
            self.body(&pull.body, pull.line_endings),
            pull.state,
            &pull.labels,
            &pull.author,
            pull.comments.len(),
            Self::closed_at(pull),
        );
        let site = self.site();
        v["pull_request"] = json!({
            "url": format!("{}/pulls/{}", site.repo_url(), pull.number),
            "html_url": format!("{}/pull/{}", site.html_url(), pull.number),
            "diff_url": format!("{}/pull/{}.diff", site.html_url(), pull.number),
            "patch_url": format!("{}/pull/{}.patch", site.html_url(), pull.number),
            "merged_at": pull.merged_at.map(|t| t.to_string()),
        });
        v["draft"] = json!(false);
        v
    }

    /// A pull request as `GET /pulls` lists it (`pull-request-simple`);
    /// `full` adds what `GET /pulls/{n}` says besides (`pull-request`).
    fn pull_shape(&self, pull: &Pull, full: bool) -> Value {
        let site = self.site();
        let repo = site.repository();
        let url = format!("{}/pulls/{}", site.repo_url(), pull.number);
        let issue_url = format!("{}/issues/{}", site.repo_url(), pull.number);
        let html = format!("{}/pull/{}", site.html_url(), pull.number);
        let head_sha = self.head_sha(pull);
        let id = shapes::id_of(
            "pull",
            &format!("{}/{}#{}", self.owner, self.name, pull.number),
        );
        let owner = site.user(&self.owner);
        let mut v = json!({
            "id": id,
            "node_id": shapes::node_id("PR", id),
            "number": pull.number,
            "url": url,
            "html_url": html,
            "diff_url": format!("{html}.diff"),
            "patch_url": format!("{html}.patch"),
            "issue_url": issue_url,
            "commits_url": format!("{url}/commits"),
            "review_comments_url": format!("{url}/comments"),
            "review_comment_url": format!("{}/pulls/comments{{/number}}", site.repo_url()),
            "comments_url": format!("{issue_url}/comments"),
            "statuses_url": format!("{}/statuses/{head_sha}", site.repo_url()),
            "title": pull.title,
            "body": self.body(&pull.body, pull.line_endings),
            "state": pull.state.as_str(),
            "locked": false,
            "active_lock_reason": null,
            "draft": false,
            "user": site.user(&pull.author),
            "author_association": self.association(&pull.author),
            "labels": site.labels(&pull.labels),
            "assignee": null,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "milestone": null,
            "auto_merge": null,
            "created_at": shapes::EPOCH,
            "updated_at": shapes::EPOCH,
            "closed_at": Self::closed_at(pull).map(|t| t.to_string()),
            "merged_at": pull.merged_at.map(|t| t.to_string()),
            "merge_commit_sha": pull.merge_sha,
        });
        v["head"] = json!({
            "ref": pull.branch,
            "sha": head_sha,
            "label": format!("{}:{}", self.owner, pull.branch),
            "user": owner,
            "repo": repo,
        });
        v["base"] = json!({
            "ref": pull.base,
            "sha": crate::hash::fake_sha(&format!("{}@base", pull.base)),
            "label": format!("{}:{}", self.owner, pull.base),
            "user": owner,
            "repo": repo,
        });
        let review_comment = format!("{}/pulls/comments{{/number}}", site.repo_url());
        let statuses = format!("{}/statuses/{head_sha}", site.repo_url());
        v["_links"] = json!({
            "self": { "href": url },
            "html": { "href": html },
            "issue": { "href": issue_url },
            "comments": { "href": format!("{issue_url}/comments") },
            "review_comments": { "href": format!("{url}/comments") },
            "review_comment": { "href": review_comment },
            "commits": { "href": format!("{url}/commits") },
            "statuses": { "href": statuses },
        });
        if full {
            let extra = json!({
                "merged": pull.merged,
                "mergeable": if pull.state == State::Open { json!(true) } else { Value::Null },
                "rebaseable": if pull.state == State::Open { json!(true) } else { Value::Null },
                "mergeable_state": if pull.state == State::Open { "clean" } else { "unknown" },
                "merged_by": pull.merged_by.as_deref().map(|l| site.user(l)),
                "comments": pull.comments.len(),
                "review_comments": pull.review_comments.len(),
                "maintainer_can_modify": false,
                "commits": 1,
                "additions": 1,
                "deletions": 0,
                "changed_files": 1,
            });
            if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
                v.extend(extra);
            }
        }
        v
    }

    fn pull_json(&self, pull: &Pull) -> Value {
        self.pull_shape(pull, true)
    }

    fn conversation_json(&self, number: u64, c: &Conversation) -> Value {
        let site = self.site();
        json!({
            "id": c.id,
            "node_id": shapes::node_id("IC", c.id),
            "url": format!("{}/issues/comments/{}", site.repo_url(), c.id),
            "html_url": format!("{}/issues/{number}#issuecomment-{}", site.html_url(), c.id),
            "issue_url": format!("{}/issues/{number}", site.repo_url()),
            "body": self.body(&c.body, None),
            "user": site.user(&c.author),
            "author_association": self.association(&c.author),
            "created_at": c.at.to_string(),
            "updated_at": c.at.to_string(),
        })
    }

    fn review_comment_json(&self, pr: u64, c: &ReviewComment) -> Value {
        let site = self.site();
        let url = format!("{}/pulls/comments/{}", site.repo_url(), c.id);
        let pull_url = format!("{}/pulls/{pr}", site.repo_url());
        let html = format!("{}/pull/{pr}#discussion_r{}", site.html_url(), c.id);
        let sha = self
            .pulls
            .get(&pr)
            .map(|p| self.head_sha(p))
            .unwrap_or_else(|| crate::hash::fake_sha(&format!("#{pr}")));
        let mut v = json!({
            "id": c.id,
            "node_id": shapes::node_id("PRRC", c.id),
            "url": url,
            "pull_request_review_id": null,
            "diff_hunk": "@@ -1 +1 @@",
            "path": c.path.clone().unwrap_or_default(),
            "position": 1,
            "original_position": 1,
            "commit_id": sha,
            "original_commit_id": sha,
            "user": site.user(&c.author),
            "body": self.body(&c.body, None),
            "created_at": c.at.to_string(),
            "updated_at": c.at.to_string(),
            "html_url": html,
            "pull_request_url": pull_url,
            "author_association": self.association(&c.author),
            "_links": {
                "self": { "href": url },
                "html": { "href": html },
                "pull_request": { "href": pull_url },
            },
        });
        if let Some(to) = c.in_reply_to {
            v["in_reply_to_id"] = json!(to);
        }
        v
    }

    fn review_json(&self, r: &Review) -> Value {
        json!({
            "id": r.id,
            "node_id": shapes::node_id("PRR", r.id),
            "user": self.site().user(&r.author),
            "body": self.body(&r.body, None),
            "state": r.state.as_str(),
            "submitted_at": r.at.to_string(),
            "author_association": self.association(&r.author),
        })
    }

    /// `GET /repos/{owner}/{repo}`.
    pub fn repo_view(&self) -> Value {
        self.site().repository()
    }

    /// `GET /user`.
    pub fn viewer_view(&self) -> Value {
        self.site().viewer(&self.viewer)
    }

    /// Issues and pull requests (as issues) in `state` (`open`, `closed`,
    /// `all`) carrying every label in `labels`, by number.
    pub fn list_issues(&self, state: &str, labels: &[String]) -> Vec<(u64, Value)> {
        let wanted = |s: State, own: &[String]| {
            (state == "all" || state == s.as_str()) && labels.iter().all(|l| own.contains(l))
        };
        let issues = self
            .issues
            .values()
            .filter(|i| wanted(i.state, &i.labels))
            .map(|i| (i.number, self.issue_json(i)));
        let pulls = self
            .pulls
            .values()
            .filter(|p| wanted(p.state, &p.labels))
            .map(|p| (p.number, self.pull_as_issue_json(p)));
        let mut all: Vec<_> = issues.chain(pulls).collect();
        all.sort_by_key(|(n, _)| *n);
        all
    }

    pub fn issue_view(&self, number: u64) -> Result<Value, WorldError> {
        if let Some(issue) = self.issues.get(&number) {
            return Ok(self.issue_json(issue));
        }
        self.pulls
            .get(&number)
            .map(|p| self.pull_as_issue_json(p))
            .ok_or(WorldError::NoSuchNumber(number))
    }

    pub fn issue_comments(&self, number: u64) -> Result<Vec<Value>, WorldError> {
        let comments = match (self.issues.get(&number), self.pulls.get(&number)) {
            (Some(i), _) => &i.comments,
            (None, Some(p)) => &p.comments,
            (None, None) => return Err(WorldError::NoSuchNumber(number)),
        };
        Ok(comments
            .iter()
            .map(|c| self.conversation_json(number, c))
            .collect())
    }

    pub fn labels(&self, number: u64) -> Result<Vec<String>, WorldError> {
        match (self.issues.get(&number), self.pulls.get(&number)) {
            (Some(i), _) => Ok(i.labels.clone()),
            (None, Some(p)) => Ok(p.labels.clone()),
            (None, None) => Err(WorldError::NoSuchNumber(number)),
        }
    }

    pub fn labels_view(&self, number: u64) -> Result<Value, WorldError> {
        self.labels(number).map(|l| self.site().labels(&l))
    }

    /// Pull requests in `state` (`open`, `closed`, `all`), optionally only
    /// those whose head is `head` (`owner:branch` or `branch`) or whose
    /// base is `base`, by number.
    pub fn list_pulls(
        &self,
        state: &str,
        head: Option<&str>,
        base: Option<&str>,
    ) -> Vec<(u64, Value)> {
        let head = head.map(|h| h.split_once(':').map_or(h, |(_, branch)| branch));
        self.pulls
            .values()
            .filter(|p| state == "all" || state == p.state.as_str())
            .filter(|p| head.is_none_or(|h| h == p.branch))
            .filter(|p| base.is_none_or(|b| b == p.base))
            .map(|p| (p.number, self.pull_shape(p, false)))
            .collect()
    }

    pub fn pull_view(&self, number: u64) -> Result<Value, WorldError> {
        self.pull(number).map(|p| self.pull_json(p))
    }

    pub fn review_comments(&self, number: u64) -> Result<Vec<Value>, WorldError> {
        let pull = self.pull(number)?;
        let mut comments: Vec<&ReviewComment> = pull.review_comments.iter().collect();
        comments.sort_by_key(|c| (c.at, c.id));
        Ok(comments
            .into_iter()
            .map(|c| self.review_comment_json(number, c))
            .collect())
    }

    pub fn reviews(&self, number: u64) -> Result<Vec<Value>, WorldError> {
        Ok(self
            .pull(number)?
            .reviews
            .iter()
            .map(|r| self.review_json(r))
            .collect())
    }

    pub fn is_merged(&self, number: u64) -> Result<bool, WorldError> {
        Ok(self.pull(number)?.merged)
    }

    /// A pull request's state as the engine's history records it.
    pub fn pull_summary(&self, number: u64) -> Result<PullSummary, WorldError> {
        use sdd_loop::state::history::PrState;
        let pull = self.pull(number)?;
        Ok(PullSummary {
            number,
            branch: pull.branch.clone(),
            state: match (pull.state, pull.merged) {
                (_, true) => PrState::Merged,
                (State::Open, false) => PrState::Open,
                (State::Closed, false) => PrState::Closed,
            },
            head_sha: self.head_sha(pull),
            labels: pull.labels.clone(),
        })
    }

    // ---- mutations --------------------------------------------------------

    /// A conversation comment on an issue or pull request; its JSON.
    pub fn add_issue_comment(
        &mut self,
        number: u64,
        author: &str,
        body: &str,
    ) -> Result<Value, WorldError> {
        let comment = Conversation {
            id: self.next_id,
            author: author.to_owned(),
            body: body.to_owned(),
            at: self.clock.now(),
        };
        let view = self.conversation_json(number, &comment);
        let comments = match (self.issues.get_mut(&number), self.pulls.get_mut(&number)) {
            (Some(i), _) => &mut i.comments,
            (None, Some(p)) => &mut p.comments,
            (None, None) => return Err(WorldError::NoSuchNumber(number)),
        };
        comments.push(comment);
        self.next_id += 1;
        Ok(view)
    }

    /// Adds labels (no duplicates); the labels now on `number`.
    pub fn add_labels(
        &mut self,
        number: u64,
        labels: &[String],
    ) -> Result<Vec<String>, WorldError> {
        let own = self.labels_mut(number)?;
        for label in labels {
            if !own.contains(label) {
                own.push(label.clone());
            }
        }
        Ok(own.clone())
    }

    /// Replaces the labels on `number`.
    pub fn set_labels(
        &mut self,
        number: u64,
        labels: &[String],
    ) -> Result<Vec<String>, WorldError> {
        let own = self.labels_mut(number)?;
        own.clear();
        own.extend(labels.iter().cloned());
        Ok(own.clone())
    }

    pub fn remove_label(&mut self, number: u64, label: &str) -> Result<Vec<String>, WorldError> {
        let own = self.labels_mut(number)?;
        let before = own.len();
        own.retain(|l| l != label);
        if own.len() == before {
            return Err(WorldError::NoSuchLabel {
                number,
                label: label.to_owned(),
            });
        }
        Ok(own.clone())
    }

    /// Adds an issue; its number.
    pub fn add_issue(&mut self, new: &NewIssue) -> Result<u64, WorldError> {
        let number = new.number.unwrap_or_else(|| self.next_number());
        if self.issues.contains_key(&number) || self.pulls.contains_key(&number) {
            return Err(WorldError::NumberTaken(number));
        }
        self.issues.insert(
            number,
            Issue {
                number,
                title: new.title.clone(),
                body: new.body.clone(),
                state: State::Open,
                labels: new.labels.clone(),
                author: new.author.clone(),
                comments: Vec::new(),
                line_endings: None,
            },
        );
        Ok(number)
    }

    pub fn close_issue(&mut self, number: u64) -> Result<(), WorldError> {
        match (self.issues.get_mut(&number), self.pulls.get_mut(&number)) {
            (Some(i), _) => i.state = State::Closed,
            (None, Some(p)) => p.state = State::Closed,
            (None, None) => return Err(WorldError::NoSuchNumber(number)),
        }
        Ok(())
    }

    /// Opens a pull request from `head` into `base` as `author`; its JSON.
    pub fn create_pull(
        &mut self,
        title: &str,
        head: &str,
        base: &str,
        body: &str,
        author: &str,
    ) -> Result<Value, WorldError> {
        let head = head.split_once(':').map_or(head, |(_, branch)| branch);
        if head.is_empty() || title.is_empty() {
            return Err(WorldError::Invalid(
                "title and head are required".to_owned(),
            ));
        }
        if let Some(origin) = &self.origin
            && git::ref_sha(&self.git, origin, head)
                .ok()
                .flatten()
                .is_none()
        {
            return Err(WorldError::Invalid(format!(
                "head branch `{head}` does not exist"
            )));
        }
        if let Some(open) = self
            .pulls
            .values()
            .find(|p| p.state == State::Open && p.branch == head)
        {
            return Err(WorldError::Invalid(format!(
                "a pull request already exists for {}:{head} (#{})",
                self.owner, open.number
            )));
        }
        let number = self.next_number();
        let pull = Pull {
            number,
            title: title.to_owned(),
            body: body.to_owned(),
            branch: head.to_owned(),
            base: if base.is_empty() {
                self.default_branch.clone()
            } else {
                base.to_owned()
            },
            author: author.to_owned(),
            state: State::Open,
            merged: false,
            merged_at: None,
            merge_sha: None,
            merged_by: None,
            labels: Vec::new(),
            head_sha: None,
            review_comments: Vec::new(),
            comments: Vec::new(),
            reviews: Vec::new(),
            line_endings: None,
        };
        let view = self.pull_json(&pull);
        self.pulls.insert(number, pull);
        Ok(view)
    }

    /// Merges an open pull request "elsewhere", as a human (`octocat`)
    /// would; the merge SHA.
    pub fn merge_pull(&mut self, number: u64) -> Result<String, WorldError> {
        self.merge_pull_as(number, &octocat())
    }

    /// Merges an open pull request as `by`; the merge SHA (the head: the
    /// mock does not write a merge commit to origin).
    pub fn merge_pull_as(&mut self, number: u64, by: &str) -> Result<String, WorldError> {
        let now = self.clock.now();
        let pull = self.pull(number)?;
        if pull.state != State::Open {
            return Err(WorldError::NotOpen(number));
        }
        let sha = self.head_sha(pull);
        let pull = self.pull_mut(number)?;
        pull.state = State::Closed;
        pull.merged = true;
        pull.merged_at = Some(now);
        pull.merge_sha = Some(sha.clone());
        pull.merged_by = Some(by.to_owned());
        Ok(sha)
    }

    /// Closes a pull request without merging.
    pub fn close_pull(&mut self, number: u64) -> Result<(), WorldError> {
        self.pull_mut(number)?.state = State::Closed;
        Ok(())
    }

    /// Pins the head SHA served when no origin ref answers.
    pub fn set_head_sha(&mut self, number: u64, sha: &str) -> Result<(), WorldError> {
        self.pull_mut(number)?.head_sha = Some(sha.to_owned());
        Ok(())
    }

    /// A new top-level review comment; its JSON.
    pub fn add_review_comment(
        &mut self,
        pr: u64,
        author: &str,
        body: &str,
        path: Option<&str>,
    ) -> Result<Value, WorldError> {
        self.pull(pr)?;
        let comment = ReviewComment {
            id: self.next_id(),
            author: author.to_owned(),
            body: body.to_owned(),
            at: self.clock.now(),
            path: path.map(str::to_owned),
            in_reply_to: None,
        };
        let view = self.review_comment_json(pr, &comment);
        self.pull_mut(pr)?.review_comments.push(comment);
        Ok(view)
    }

    /// A reply in the thread of review comment `to` (a reply to a reply
    /// joins the same thread, as on GitHub); its JSON.
    pub fn reply_to_review_comment(
        &mut self,
        pr: u64,
        to: u64,
        author: &str,
        body: &str,
    ) -> Result<Value, WorldError> {
        let target = self
            .pull(pr)?
            .review_comments
            .iter()
            .find(|c| c.id == to)
            .ok_or(WorldError::NoSuchComment { pr, id: to })?;
        let root = target.in_reply_to.unwrap_or(target.id);
        let path = target.path.clone();
        let comment = ReviewComment {
            id: self.next_id(),
            author: author.to_owned(),
            body: body.to_owned(),
            at: self.clock.now(),
            path,
            in_reply_to: Some(root),
        };
        let view = self.review_comment_json(pr, &comment);
        self.pull_mut(pr)?.review_comments.push(comment);
        Ok(view)
    }

    /// A submitted review; its JSON.
    pub fn add_review(
        &mut self,
        pr: u64,
        author: &str,
        state: ReviewState,
        body: &str,
    ) -> Result<Value, WorldError> {
        self.pull(pr)?;
        let review = Review {
            id: self.next_id(),
            author: author.to_owned(),
            state,
            body: body.to_owned(),
            at: self.clock.now(),
        };
        let view = self.review_json(&review);
        self.pull_mut(pr)?.reviews.push(review);
        Ok(view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn world() -> World {
        let backlog = Backlog::parse(
            Path::new("w.yaml"),
            "repository: acme/app\nissues:\n  - { number: 1, title: A, labels: [story] }\npull_requests:\n  - number: 10\n    title: P\n    branch: feature/a\n    head_sha: abc\n    review_comments:\n      - id: 100\n        author: alice\n        body: fix\n        at: 2026-05-09T14:00:00Z\n",
        )
        .unwrap();
        let mut w = World::new(
            &backlog,
            "sdd-worker".into(),
            None,
            Clock::Fixed("2026-05-10T00:00:00Z".parse().unwrap()),
        );
        w.set_base_uri("http://127.0.0.1:9/");
        w
    }

    #[test]
    fn issues_list_includes_pulls_with_pull_request_object() {
        let w = world();
        let all = w.list_issues("open", &[]);
        assert_eq!(all.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![1, 10]);
        assert!(all[0].1.get("pull_request").is_none());
        assert_eq!(
            all[1].1["pull_request"]["url"],
            "http://127.0.0.1:9/repos/acme/app/pulls/10"
        );
        assert_eq!(w.list_issues("open", &["story".into()]).len(), 1);
    }

    #[test]
    fn ids_and_numbers_continue_after_the_fixture() {
        let mut w = world();
        let reply = w
            .reply_to_review_comment(10, 100, "sdd-responder", "done")
            .unwrap();
        assert_eq!(reply["id"], 101);
        assert_eq!(reply["in_reply_to_id"], 100);
        let nested = w
            .reply_to_review_comment(10, 101, "alice", "thanks")
            .unwrap();
        assert_eq!(
            nested["in_reply_to_id"], 100,
            "replies join the root thread"
        );
        let pr = w
            .create_pull("New", "feature/b", "", "", "sdd-worker")
            .unwrap();
        assert_eq!(pr["number"], 11);
        assert_eq!(pr["base"]["ref"], "main");
        assert!(matches!(
            w.create_pull("Again", "feature/b", "main", "", "x"),
            Err(WorldError::Invalid(_))
        ));
        assert_eq!(
            w.add_issue(&NewIssue {
                number: None,
                title: "t".into(),
                body: String::new(),
                labels: vec![],
                author: "a".into()
            })
            .unwrap(),
            12
        );
    }

    #[test]
    fn merge_closes_and_refuses_twice() {
        let mut w = world();
        assert_eq!(w.merge_pull(10).unwrap(), "abc");
        let v = w.pull_view(10).unwrap();
        assert_eq!(
            (v["state"].as_str(), v["merged"].as_bool()),
            (Some("closed"), Some(true))
        );
        assert_eq!(v["merged_at"], "2026-05-10T00:00:00Z");
        assert_eq!(w.merge_pull(10), Err(WorldError::NotOpen(10)));
        assert_eq!(w.merge_pull(1), Err(WorldError::NotAPull(1)));
        assert_eq!(
            w.pull_summary(10).unwrap().state,
            sdd_loop::state::history::PrState::Merged
        );
    }

    #[test]
    fn labels_add_remove() {
        let mut w = world();
        assert_eq!(
            w.add_labels(10, &["a".into(), "a".into()]).unwrap(),
            vec!["a"]
        );
        assert_eq!(w.remove_label(10, "a").unwrap(), Vec::<String>::new());
        assert!(matches!(
            w.remove_label(10, "a"),
            Err(WorldError::NoSuchLabel { .. })
        ));
        assert_eq!(w.set_labels(1, &["x".into()]).unwrap(), vec!["x"]);
    }

    #[test]
    fn line_endings_per_backlog_and_per_issue() {
        let text = "repository: acme/app\nissues:\n  - { number: 1, title: A, body: \"a\\nb\\n\", line_endings: crlf }\n  - { number: 2, title: B, body: \"a\\nb\" }\n";
        let lf = Backlog::parse(Path::new("w.yaml"), text).unwrap();
        let w = World::new(&lf, "v".into(), None, Clock::System);
        assert_eq!(w.issue_view(1).unwrap()["body"], "a\r\nb\r\n");
        assert_eq!(w.issue_view(2).unwrap()["body"], "a\nb");
        let crlf = Backlog::parse(
            Path::new("w.yaml"),
            &format!(
                "line_endings: crlf\n{}",
                text.replace(", line_endings: crlf", ", line_endings: lf")
            ),
        )
        .unwrap();
        let w = World::new(&crlf, "v".into(), None, Clock::System);
        assert_eq!(w.issue_view(1).unwrap()["body"], "a\nb\n");
        assert_eq!(w.issue_view(2).unwrap()["body"], "a\r\nb");
    }
}
