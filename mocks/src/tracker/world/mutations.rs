//! Every change the API's writes and the harness's world changes make:
//! comments, labels, new issues and pull requests, merges, closes, review
//! comments, replies and reviews. Each changes every later answer.

use serde_json::Value;

use super::World;
use super::objects::{Conversation, Issue, Pull, Review, ReviewComment};
use super::types::{NewIssue, WorldError, octocat};
use crate::fixture::{ReviewState, State};
use crate::git;

impl World {
    pub fn add_issue_comment(
        &mut self,
        number: u64,
        author: &str,
        body: &str,
    ) -> Result<Value, WorldError> {
        let comment = self.push_issue_comment(number, author, body, self.clock.now())?;
        Ok(self.conversation_json(number, &comment))
    }

    /// A conversation comment written at `at` (a reply scripted by a case).
    pub fn add_issue_comment_at(
        &mut self,
        number: u64,
        author: &str,
        body: &str,
        at: jiff::Timestamp,
    ) -> Result<u64, WorldError> {
        Ok(self.push_issue_comment(number, author, body, at)?.id)
    }

    /// Appends a conversation comment to issue or PR `number`; a copy of it.
    fn push_issue_comment(
        &mut self,
        number: u64,
        author: &str,
        body: &str,
        at: jiff::Timestamp,
    ) -> Result<Conversation, WorldError> {
        let comment = Conversation {
            id: self.next_id,
            author: author.to_owned(),
            body: body.to_owned(),
            at,
            edited: None,
        };
        let comments = match (self.issues.get_mut(&number), self.pulls.get_mut(&number)) {
            (Some(i), _) => &mut i.comments,
            (None, Some(p)) => &mut p.comments,
            (None, None) => return Err(WorldError::NoSuchNumber(number)),
        };
        comments.push(comment.clone());
        self.next_id += 1;
        Ok(comment)
    }

    /// `PATCH /issues/comments/{id}`: a new body, edited now.
    pub fn edit_issue_comment(&mut self, id: u64, body: &str) -> Result<Value, WorldError> {
        let now = self.clock.now();
        let found = self
            .issues
            .values_mut()
            .map(|i| (i.number, &mut i.comments))
            .chain(self.pulls.values_mut().map(|p| (p.number, &mut p.comments)))
            .find_map(|(n, comments)| comments.iter_mut().find(|c| c.id == id).map(|c| (n, c)));
        let Some((number, comment)) = found else {
            return Err(WorldError::NoSuchNumber(id));
        };
        comment.body = body.to_owned();
        comment.edited = Some(now);
        let comment = comment.clone();
        Ok(self.conversation_json(number, &comment))
    }

    /// `PATCH /issues/{n}`: a new body.
    pub fn edit_issue_body(&mut self, number: u64, body: &str) -> Result<(), WorldError> {
        if let Some(issue) = self.issues.get_mut(&number) {
            issue.body = body.to_owned();
            return Ok(());
        }
        self.pulls
            .get_mut(&number)
            .map(|p| p.body = body.to_owned())
            .ok_or(WorldError::NoSuchNumber(number))
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
