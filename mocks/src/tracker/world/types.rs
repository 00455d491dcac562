//! The world's public types: its clock, the mutations it refuses, an
//! issue to add and a pull request as the harness sees it.

use jiff::Timestamp;

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

pub(super) fn octocat() -> String {
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
