//! The hooks' decision log, `.sdd/loop/{skill}.hooks.jsonl`: one JSON line
//! per decision a hook took about the loop — what it saw (the event, the
//! session, the prompt or the tool call's actions), what it answered, and
//! why. It is the record of every refusal a model met.
//!
//! Lines are redacted like every other state file (credential shapes,
//! secret-named environment values, the tracker token, the project's
//! CLAUDE.md patterns), quoted input is cut to [`QUOTE_MAX`] characters,
//! and each line is appended under the file's advisory lock
//! ([`crate::state::files::append_line`]), so hooks running side by side never
//! tear a line. A hook that cannot write its log still answers: the log
//! records decisions, it does not make them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::rules::claude_md::ClaudeMd;
use crate::rules::redact::Redactor;
use crate::state::files;
use crate::state::paths::{Skill, StatePaths};

/// Longest quoted input (a prompt, a command line) in the log.
pub const QUOTE_MAX: usize = 400;

/// One decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// When (RFC 3339).
    pub at: String,
    /// `user-prompt-submit`, `pre-tool-use` or `stop`.
    pub event: String,
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// The iteration the decision is about, when one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u64>,
    /// `pass`, `context`, `block`, `deny`, `tell`, or what was done
    /// (`ended`, `left-open`).
    pub decision: String,
    /// Why, in the words the model or the user saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What was recognised: the tool call's actions, the engine command
    /// run and its exit status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub saw: Vec<String>,
    /// The prompt or command line, cut short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
}

/// The log of `skill`'s loop in `project`.
pub fn path(project: &Path, skill: Skill) -> PathBuf {
    StatePaths::new(project, skill, None)
        .dir
        .join(format!("{skill}.hooks.jsonl"))
}

/// The redactor for what the hooks write: the engine's rules, the
/// environment's secrets, and the project's CLAUDE.md patterns when it
/// can be read.
pub fn redactor(project: &Path, vars: &BTreeMap<String, String>) -> Redactor {
    let mut builder = Redactor::builder().env(vars);
    // The tracker token, as the command line finds it (its name need not
    // look secret).
    if let Some(token) = ["SDD_LOOP_TRACKER_TOKEN", "GITHUB_TOKEN"]
        .iter()
        .find_map(|k| vars.get(*k).filter(|v| !v.is_empty()))
    {
        builder = builder.secret("tracker-token", token);
    }
    if let Ok(md) = ClaudeMd::load(&project.join("CLAUDE.md"))
        && let Ok(with_md) = builder.clone().claude_md(&md)
    {
        builder = with_md;
    }
    builder.build()
}

/// `text` cut to [`QUOTE_MAX`] characters.
pub fn quote(text: &str) -> String {
    crate::rules::redact::cut(text, QUOTE_MAX)
}

/// Appends `entry`, redacted, to `skill`'s log (the state directory must
/// exist: a project with no loop gets no log).
pub fn append(
    project: &Path,
    skill: Skill,
    entry: &Entry,
    redactor: &Redactor,
) -> Result<(), files::FileError> {
    let mut value = serde_json::to_value(entry).expect("log entries serialise");
    redactor.redact_json(&mut value);
    files::append_line(&path(project, skill), &value.to_string(), false).map(|_| ())
}
