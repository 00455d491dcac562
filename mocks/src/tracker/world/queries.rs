//! What the API's reads answer: the repository, the viewer, issues,
//! pull requests, their comments, reviews and labels, and a pull request
//! as the harness sees it.

use serde_json::Value;

use super::World;
use super::objects::ReviewComment;
use super::types::{PullSummary, WorldError};
use crate::fixture::State;

impl World {
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
        self.issue_comments_since(number, None)
    }

    /// Conversation comments updated at or after `since` (GitHub's
    /// `since`: an older comment edited since is listed too).
    pub fn issue_comments_since(
        &self,
        number: u64,
        since: Option<jiff::Timestamp>,
    ) -> Result<Vec<Value>, WorldError> {
        let comments = match (self.issues.get(&number), self.pulls.get(&number)) {
            (Some(i), _) => &i.comments,
            (None, Some(p)) => &p.comments,
            (None, None) => return Err(WorldError::NoSuchNumber(number)),
        };
        Ok(comments
            .iter()
            .filter(|c| since.is_none_or(|s| c.edited.unwrap_or(c.at) >= s))
            .map(|c| self.conversation_json(number, c))
            .collect())
    }

    /// `GET /repos/{owner}/{repo}/collaborators/{username}/permission`.
    pub fn permission_view(&self, login: &str) -> Value {
        let permission = self.permission(login);
        let mut user = self.site().user(login);
        user["role_name"] = Value::String(permission.clone());
        serde_json::json!({
            "permission": permission,
            "role_name": permission,
            "user": user,
        })
    }

    /// The address a person opens for issue (or PR) `number`'s comment `id`:
    /// its `html_url`.
    pub fn issue_comment_html_url(&self, number: u64, id: u64) -> String {
        format!(
            "{}/issues/{number}#issuecomment-{id}",
            self.site().html_url()
        )
    }

    /// The gate posts on the tracker (comments by the viewer naming a
    /// gate id, `` id `g-…` ``), oldest first: `(issue, comment id, gate id, at)`.
    pub fn gate_posts(&self) -> Vec<(u64, u64, String, jiff::Timestamp)> {
        let mut posts = Vec::new();
        let conversations = self
            .issues
            .values()
            .map(|i| (i.number, &i.comments))
            .chain(self.pulls.values().map(|p| (p.number, &p.comments)));
        for (number, comments) in conversations {
            for c in comments.iter().filter(|c| c.author == self.viewer) {
                if let Some(at) = c.body.find("id `g-") {
                    let id: String = c.body[at + 4..]
                        .chars()
                        .take_while(|ch| *ch != '`')
                        .collect();
                    posts.push((number, c.id, id, c.at));
                }
            }
        }
        posts.sort_by_key(|(_, id, _, at)| (*at, *id));
        posts
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
}
