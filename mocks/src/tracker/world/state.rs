//! [`World`] itself: what it is seeded with from a [`Backlog`], and the
//! lookups and counters its views and mutations share — ids, numbers,
//! a pull request's live `head.sha`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use jiff::Timestamp;

use super::objects::{Issue, Pull, Review, ReviewComment, conversation};
use super::types::{Clock, WorldError};
use crate::fixture::{Backlog, LineEndings};
use crate::git::{self, Git};

/// The tracker's state.
#[derive(Debug)]
pub struct World {
    pub(super) owner: String,
    pub(super) name: String,
    pub(super) default_branch: String,
    pub(super) agent_logins: Vec<String>,
    pub(super) viewer: String,
    pub(super) issues: BTreeMap<u64, Issue>,
    pub(super) pulls: BTreeMap<u64, Pull>,
    pub(super) next_id: u64,
    pub(super) origin: Option<PathBuf>,
    pub(super) git: Git,
    pub(super) clock: Clock,
    pub(super) base_uri: String,
    pub(super) line_endings: LineEndings,
    pub(super) has_issues: bool,
    /// Repository permissions set by the case (`admin`, `write`, `read`,
    /// `none`); see [`World::permission`] for everyone else.
    pub(super) permissions: BTreeMap<String, String>,
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
            permissions: BTreeMap::new(),
        };
        world.next_id = world.max_id() + 1;
        world
    }

    pub(super) fn max_id(&self) -> u64 {
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

    /// Moves a fixed clock (the harness's, as a case advances it).
    pub fn set_time(&mut self, at: Timestamp) {
        if let Clock::Fixed(_) = self.clock {
            self.clock = Clock::Fixed(at);
        }
    }

    /// `login`'s permission on the repository: as the case set it, else
    /// `admin` for the owner, `write` for the viewer and the agents,
    /// `read` for anyone else (a public repository's reader).
    pub fn permission(&self, login: &str) -> String {
        if let Some(p) = self.permissions.get(login) {
            return p.clone();
        }
        if login == self.owner {
            "admin".into()
        } else if login == self.viewer || self.agent_logins.iter().any(|a| a == login) {
            "write".into()
        } else {
            "read".into()
        }
    }

    pub fn set_permission(&mut self, login: &str, permission: &str) {
        self.permissions
            .insert(login.to_owned(), permission.to_owned());
    }

    /// A body as served: in `own` line endings, else the world's.
    pub(super) fn body(&self, text: &str, own: Option<LineEndings>) -> String {
        own.unwrap_or(self.line_endings).apply(text)
    }

    pub fn agent_logins(&self) -> &[String] {
        &self.agent_logins
    }

    pub(super) fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub(super) fn next_number(&self) -> u64 {
        let issues = self.issues.keys().max().copied().unwrap_or(0);
        let pulls = self.pulls.keys().max().copied().unwrap_or(0);
        issues.max(pulls) + 1
    }

    /// The live origin ref, else the fixture's SHA, else a stable made-up
    /// one (GitHub always has a head SHA, and clients rely on it).
    pub(super) fn head_sha(&self, pull: &Pull) -> String {
        let live = self
            .origin
            .as_ref()
            .and_then(|origin| git::ref_sha(&self.git, origin, &pull.branch).ok().flatten());
        live.or_else(|| pull.head_sha.clone())
            .unwrap_or_else(|| crate::hash::fake_sha(&format!("{}#{}", pull.branch, pull.number)))
    }

    pub(super) fn labels_mut(&mut self, number: u64) -> Result<&mut Vec<String>, WorldError> {
        if let Some(issue) = self.issues.get_mut(&number) {
            return Ok(&mut issue.labels);
        }
        self.pulls
            .get_mut(&number)
            .map(|p| &mut p.labels)
            .ok_or(WorldError::NoSuchNumber(number))
    }

    pub(super) fn pull_mut(&mut self, number: u64) -> Result<&mut Pull, WorldError> {
        if self.issues.contains_key(&number) {
            return Err(WorldError::NotAPull(number));
        }
        self.pulls
            .get_mut(&number)
            .ok_or(WorldError::NoSuchNumber(number))
    }

    pub(super) fn pull(&self, number: u64) -> Result<&Pull, WorldError> {
        if self.issues.contains_key(&number) {
            return Err(WorldError::NotAPull(number));
        }
        self.pulls
            .get(&number)
            .ok_or(WorldError::NoSuchNumber(number))
    }
}
