//! Why a transcript could not be found, read or settled: [`TranscriptError`],
//! each naming the file or folder and, through [`TranscriptError::help`],
//! the fix.

use std::io;
use std::path::PathBuf;

/// Why a transcript could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("cannot read the Claude Code transcript {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot list the Claude Code transcripts in {}: {source}", path.display())]
    List {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the project directory {} is not an absolute path", project.display())]
    RelativeProject { project: PathBuf },
    #[error("no Claude Code transcripts for {}: {} does not exist", project.display(), dir.display())]
    NoProjectFolder { project: PathBuf, dir: PathBuf },
    #[error("several Claude Code project folders may belong to {}: {}", project.display(), candidates.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(", "))]
    AmbiguousProjectFolder {
        project: PathBuf,
        candidates: Vec<PathBuf>,
    },
    #[error("{} holds no Claude Code transcript (*.jsonl)", dir.display())]
    NoTranscripts { dir: PathBuf },
}

impl TranscriptError {
    /// The one-line fix shown under the error.
    pub fn help(&self) -> String {
        let choose = "pass --transcript PATH with the session's .jsonl file";
        match self {
            TranscriptError::Read { source, .. } if source.kind() == io::ErrorKind::NotFound => {
                format!(
                    "Claude Code writes no transcript for a session started with --no-session-persistence: start it without that flag, report the spend with --usage MODEL:IN:OUT instead of --transcript, or {choose}"
                )
            }
            TranscriptError::Read { .. } | TranscriptError::List { .. } => {
                format!("check the file's permissions, or {choose}")
            }
            TranscriptError::RelativeProject { .. } => {
                "give the project directory as an absolute path".to_owned()
            }
            TranscriptError::NoProjectFolder { .. } | TranscriptError::NoTranscripts { .. } => {
                format!(
                    "run from the directory Claude Code was started in, set CLAUDE_CONFIG_DIR if Claude Code uses another config directory, or {choose}"
                )
            }
            TranscriptError::AmbiguousProjectFolder { .. } => choose.to_owned(),
        }
    }
}
