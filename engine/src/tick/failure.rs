//! The one error type of a tick: [`Failure`], an exit code with the
//! `error:` message and the `help:` line that says what to do. Every
//! lower-level error (files, lock, budget, history, journal, tracker, git)
//! converts into it with the exit status of its kind
//! (`docs/src/exit-codes-and-variables.md`).

use crate::exit;
use crate::rules::gates::Question;
use crate::state::budget::BudgetError;
use crate::state::files::FileError;
use crate::state::history::HistoryError;
use crate::state::journal::JournalError;
use crate::state::lock::LockError;
use crate::world::git::GitError;
use crate::world::tracker::TrackerError;

/// A reason to end the tick with an error exit code.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub code: u8,
    pub message: String,
    pub help: String,
    /// The gate that could not get an answer (exit 4): what `begin --json`
    /// hands the agent to ask the user.
    pub unanswered: Option<Question>,
    /// Not a failure: the gate is posted on the tracker and the tick waits
    /// for a person (docs/src/gates-away.md); nothing was changed.
    pub awaiting: Option<Box<super::awaiting::AwaitingPerson>>,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>, help: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            help: help.into(),
            unanswered: None,
            awaiting: None,
        }
    }

    pub fn with_question(mut self, question: Option<Question>) -> Self {
        self.unanswered = question;
        self
    }
}

impl From<FileError> for Failure {
    fn from(e: FileError) -> Self {
        let code = match e {
            FileError::Symlink { .. } | FileError::WrongKind { .. } => exit::DATA,
            FileError::Io { .. } => exit::CANT_WRITE,
        };
        Failure::new(code, e.to_string(), e.help())
    }
}

impl From<LockError> for Failure {
    fn from(e: LockError) -> Self {
        match e {
            LockError::File(f) => f.into(),
            other => Failure::new(
                exit::CANT_WRITE,
                other.to_string(),
                "the lock guard needs a local filesystem that supports flock",
            ),
        }
    }
}

impl From<BudgetError> for Failure {
    fn from(e: BudgetError) -> Self {
        match e {
            BudgetError::File(f) => f.into(),
            other => Failure::new(
                exit::DATA,
                other.to_string(),
                "the file was left exactly as it was; once it is deleted, start the fresh run on purpose with --fresh (a loop under way is never restarted silently; earlier history is kept)",
            ),
        }
    }
}

impl From<HistoryError> for Failure {
    fn from(e: HistoryError) -> Self {
        let help = e.help();
        match e {
            HistoryError::File(f) => f.into(),
            other => Failure::new(exit::DATA, other.to_string(), help),
        }
    }
}

impl From<JournalError> for Failure {
    fn from(e: JournalError) -> Self {
        match e {
            JournalError::File(f) => f.into(),
            other => Failure::new(
                exit::DATA,
                other.to_string(),
                "move the journal aside to continue; the interrupted iteration's spend will then not be recovered",
            ),
        }
    }
}

impl From<TrackerError> for Failure {
    fn from(e: TrackerError) -> Self {
        let code = match e {
            TrackerError::NotConfigured => exit::USAGE,
            TrackerError::RateLimited(_) => exit::RATE_LIMITED,
            _ => exit::UNAVAILABLE,
        };
        Failure::new(code, e.to_string(), e.help())
    }
}

impl From<GitError> for Failure {
    fn from(e: GitError) -> Self {
        Failure::new(
            exit::UNAVAILABLE,
            e.to_string(),
            "check that the project is a git clone and the remote is reachable (--remote)",
        )
    }
}
