//! The world's objects in GitHub REST v3's JSON shape: every field
//! GitHub's OpenAPI description requires for the object (see
//! [`crate::tracker::shapes`]), field names as GitHub's, bodies in the
//! world's line endings.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::World;
use super::objects::{Conversation, Issue, Pull, Review, ReviewComment};
use crate::fixture::State;
use crate::tracker::shapes::{self, Site};

impl World {
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

    pub(super) fn association(&self, login: &str) -> &'static str {
        let mut members = self.agent_logins.clone();
        members.push(self.viewer.clone());
        shapes::association(login, &self.owner, &members)
    }

    /// The fields an issue and a pull request share on the issues API.
    #[expect(
        clippy::too_many_arguments,
        reason = "the fields an issue and a pull request share"
    )]
    pub(super) fn issue_fields(
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

    pub(super) fn issue_json(&self, issue: &Issue) -> Value {
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

    pub(super) fn closed_at(pull: &Pull) -> Option<Timestamp> {
        match pull.state {
            State::Open => None,
            State::Closed => Some(pull.merged_at.unwrap_or_else(shapes::epoch)),
        }
    }

    pub(super) fn pull_as_issue_json(&self, pull: &Pull) -> Value {
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
    pub(super) fn pull_shape(&self, pull: &Pull, full: bool) -> Value {
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

    pub(super) fn pull_json(&self, pull: &Pull) -> Value {
        self.pull_shape(pull, true)
    }

    pub(super) fn conversation_json(&self, number: u64, c: &Conversation) -> Value {
        let site = self.site();
        json!({
            "id": c.id,
            "node_id": shapes::node_id("IC", c.id),
            "url": format!("{}/issues/comments/{}", site.repo_url(), c.id),
            "html_url": self.issue_comment_html_url(number, c.id),
            "issue_url": format!("{}/issues/{number}", site.repo_url()),
            "body": self.body(&c.body, None),
            "user": site.user(&c.author),
            "author_association": self.association(&c.author),
            "created_at": c.at.to_string(),
            "updated_at": c.edited.unwrap_or(c.at).to_string(),
        })
    }

    pub(super) fn review_comment_json(&self, pr: u64, c: &ReviewComment) -> Value {
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

    pub(super) fn review_json(&self, r: &Review) -> Value {
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
}
