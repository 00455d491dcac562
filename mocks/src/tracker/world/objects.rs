//! What the world holds, as it holds it: issues, pull requests and
//! their conversation comments, review comments and reviews (rendered in
//! GitHub's shape by [`super::render`]).

use jiff::Timestamp;

use crate::fixture::{self, LineEndings, ReviewState, State};

#[derive(Debug, Clone)]
pub(super) struct Conversation {
    pub(super) id: u64,
    pub(super) author: String,
    pub(super) body: String,
    pub(super) at: Timestamp,
    /// When it was last edited (GitHub's `updated_at`), if ever.
    pub(super) edited: Option<Timestamp>,
}

#[derive(Debug, Clone)]
pub(super) struct ReviewComment {
    pub(super) id: u64,
    pub(super) author: String,
    pub(super) body: String,
    pub(super) at: Timestamp,
    pub(super) path: Option<String>,
    pub(super) in_reply_to: Option<u64>,
}

#[derive(Debug, Clone)]
pub(super) struct Review {
    pub(super) id: u64,
    pub(super) author: String,
    pub(super) state: ReviewState,
    pub(super) body: String,
    pub(super) at: Timestamp,
}

#[derive(Debug, Clone)]
pub(super) struct Issue {
    pub(super) number: u64,
    pub(super) title: String,
    pub(super) body: String,
    pub(super) state: State,
    pub(super) labels: Vec<String>,
    pub(super) author: String,
    pub(super) comments: Vec<Conversation>,
    pub(super) line_endings: Option<LineEndings>,
}

#[derive(Debug, Clone)]
pub(super) struct Pull {
    pub(super) number: u64,
    pub(super) title: String,
    pub(super) body: String,
    pub(super) branch: String,
    pub(super) base: String,
    pub(super) author: String,
    pub(super) state: State,
    pub(super) merged: bool,
    pub(super) merged_at: Option<Timestamp>,
    pub(super) merge_sha: Option<String>,
    /// Who merged it, when it was merged through the API or a world change.
    pub(super) merged_by: Option<String>,
    pub(super) labels: Vec<String>,
    pub(super) head_sha: Option<String>,
    pub(super) review_comments: Vec<ReviewComment>,
    pub(super) comments: Vec<Conversation>,
    pub(super) reviews: Vec<Review>,
    pub(super) line_endings: Option<LineEndings>,
}

pub(super) fn conversation(c: &fixture::Comment) -> Conversation {
    Conversation {
        id: c.id.value,
        author: c.author.clone(),
        body: c.body.clone(),
        at: c.at,
        edited: None,
    }
}
