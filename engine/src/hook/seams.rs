//! What every hook is given and shares: the [`Hook`] seams (the
//! environment, the project, the session, the clock, git and the
//! [`Engine`] that runs `begin` and `end`), each event's time limit, and
//! the protocol handshake with the plugin's launcher.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::input::HookEvent;
use crate::os::clock::Clock;
use crate::state::paths::{Skill, StatePaths};
use crate::world::git::Git;

/// Each hook's time limit in seconds, as `hooks/hooks.json` declares it;
/// a hook answers [`MARGIN_SECS`] before it, whatever the engine is doing.
pub const TIMEOUTS: [(HookEvent, u64); 5] = [
    (HookEvent::UserPromptSubmit, 120),
    (HookEvent::PreToolUse, 30),
    (HookEvent::Stop, 120),
    (HookEvent::StopFailure, 120),
    (HookEvent::SessionEnd, 30),
];

/// How long before Claude Code's limit a hook gives its fallback answer.
pub const MARGIN_SECS: u64 = 5;

/// The hook protocols this engine speaks: the events and arguments of
/// `sdd-loop hook`, the JSON it reads and the answers it prints. The
/// plugin's launcher (`hooks/sdd-loop-hook`, its `PROTOCOL`) runs an
/// engine only when its own protocol is among these; a change either side
/// could misread is a new number, never a change to an old one. Protocol
/// 2 (issue 33) adds the events `stop-failure` and `session-end`, the
/// `Skill` tool to `pre-tool-use` and the prompt's `source` to
/// `user-prompt-submit`: a plugin wiring them must not run an engine that
/// would fail the new events or let another session's prompt start a loop.
/// Protocol 1's plugin is served as before.
pub const PROTOCOLS: [u32; 2] = [1, 2];

/// What `sdd-loop hook --protocol` prints (one line, no newline):
/// `hook-protocol 1,2 sdd-loop 0.2.0`.
pub fn handshake() -> String {
    let list: Vec<String> = PROTOCOLS.iter().map(u32::to_string).collect();
    format!(
        "hook-protocol {} sdd-loop {}",
        list.join(","),
        env!("CARGO_PKG_VERSION")
    )
}

impl HookEvent {
    /// The time limit `hooks/hooks.json` gives this hook.
    pub fn timeout_secs(self) -> u64 {
        TIMEOUTS
            .iter()
            .find(|(e, _)| *e == self)
            .map_or(60, |(_, s)| *s)
    }
}

/// What one `sdd-loop` command printed and returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ran {
    pub code: u8,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// The `--json` summary line (the last line of stdout that is JSON).
    pub fn summary(&self) -> serde_json::Value {
        self.stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or(serde_json::Value::Null)
    }

    /// What went wrong, in the engine's words: its `error:` and `help:`
    /// lines, else the summary's, else the exit status.
    pub fn error_text(&self) -> String {
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| l.starts_with("error:") || l.starts_with("help:"))
            .collect();
        if !lines.is_empty() {
            let mut text = lines.join(" ");
            if !text.ends_with(['.', '!', '?']) {
                text.push('.');
            }
            return text;
        }
        let summary = self.summary();
        match (summary["error"].as_str(), summary["help"].as_str()) {
            (Some(e), Some(h)) => format!("error: {e} help: {h}"),
            (Some(e), None) => format!("error: {e}"),
            _ => format!("sdd-loop exited {}", self.code),
        }
    }
}

/// Runs `sdd-loop ARGS` in a project: the command line's own commands.
pub trait Engine {
    fn run(&mut self, project: &Path, args: &[String]) -> Ran;
}

/// What every hook is given besides its input.
pub struct Hook<'a> {
    /// The environment (for redaction and the project directory).
    pub vars: &'a BTreeMap<String, String>,
    /// The project: `-C DIR`, else `$CLAUDE_PROJECT_DIR`, else the
    /// input's `cwd`.
    pub project: Option<PathBuf>,
    /// The session process (Claude Code): the lock holder, or why it
    /// could not be found.
    pub session: Result<u32, String>,
    pub clock: &'a dyn Clock,
    pub engine: &'a mut dyn Engine,
    /// git in the project, for `git push` of new branches.
    pub git: &'a dyn Git,
}

impl std::fmt::Debug for Hook<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hook")
            .field("project", &self.project)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl Hook<'_> {
    /// The project directory for an input whose `cwd` is `cwd`.
    pub fn project_for(&self, cwd: &Path) -> PathBuf {
        self.project.clone().unwrap_or_else(|| cwd.to_path_buf())
    }
}

/// Both loops' state paths in `project`.
pub(crate) fn both(project: &Path) -> [StatePaths; 2] {
    [
        StatePaths::new(project, Skill::Work, None),
        StatePaths::new(project, Skill::Review, None),
    ]
}
