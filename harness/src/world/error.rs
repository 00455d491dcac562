//! Why the harness itself could not run a case (as opposed to a case that
//! ran and failed its checks): a missing binary, a fixture that does not
//! load, a sandbox that cannot be built.

use sdd_mocks::git::GitError;

use crate::world::bins::MissingBinary;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(transparent)]
    MissingBinary(#[from] MissingBinary),
    #[error("cannot {what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create the sandbox: {0}")]
    Sandbox(String),
    #[error("a fixture does not load:\n{0}")]
    Fixture(String),
    #[error(transparent)]
    Git(#[from] GitError),
}

impl HarnessError {
    /// The `help:` line.
    pub fn help(&self) -> String {
        match self {
            HarnessError::MissingBinary(m) => m.help(),
            HarnessError::Io { .. } | HarnessError::Sandbox(_) => {
                "check that the temporary directory is writable and has space".to_owned()
            }
            HarnessError::Fixture(_) => "fix the fixture (formats: fixtures/README.md)".to_owned(),
            HarnessError::Git(_) => "check that `git` is installed and on PATH".to_owned(),
        }
    }
}
