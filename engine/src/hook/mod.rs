//! The loop contract enforced inside a Claude Code session (issue "the
//! contract enforced in-session"): `sdd-loop hook EVENT`, wired by this
//! repository's plugin (`hooks/hooks.json`) to five Claude Code hooks
//! that run outside the model, so the contract no longer rests on the
//! model obeying SKILL.md.
//!
//! - [`user_prompt`] (`UserPromptSubmit`): a loop prompt ([`prompt`])
//!   runs `begin` with the prompt's flags, the session as the lock holder
//!   and the session's transcript; work becomes context for the model,
//!   while skip, stop and ask block the prompt — the model is not called.
//! - [`pre_tool`] (`PreToolUse`): what a tool call would do ([`command`])
//!   is refused when the contract forbids it — a PR beyond `max_new_prs`,
//!   a PR for an issue not in the request, a merge under `hold` or where
//!   merging is not allowed, a second review round (ADR-0010), or any of
//!   these when the session holds the loop but no iteration is open.
//! - [`stop`] (`Stop`): ends the open iteration: PRs from the world, spend
//!   from the exact transcript, the summary from the last message.
//! - [`cut_short`] (`StopFailure`, `SessionEnd`): ends the open iteration
//!   of a turn that a model-API error or the session's end cut short,
//!   with that cause and the spend so far — never left open, never a
//!   failure of the work (issue 33).
//!
//! Every hook answers with what Claude Code accepts ([`answer`]) or
//! nothing, within its time limit ([`TIMEOUTS`], the same as in
//! `hooks/hooks.json`; past it, the event's fallback: [`in_time`]), and
//! appends what it decided and why to `.sdd/loop/{skill}.hooks.jsonl`
//! ([`log`]) — the fallback too. What the hooks remember
//! between calls is in [`state`]. `begin` and `end` themselves run through
//! the [`Engine`] seam: the command line's own commands, so a hook and an
//! explicit `sdd-loop work begin` are one code path.

pub mod answer;
pub mod command;
pub mod cut_short;
pub mod in_time;
pub mod input;
pub mod log;
pub mod owned;
pub mod pre_tool;
pub mod prompt;
pub mod state;
pub mod stop;
pub mod user_prompt;
pub mod words;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::os::clock::Clock;
use crate::state::paths::{Skill, StatePaths};
use crate::world::git::Git;

pub use answer::Answer;
pub use in_time::fallback;
pub use input::HookEvent;

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

/// Runs hook `event` on `input` (the bytes Claude Code wrote).
pub fn run(event: HookEvent, input: &[u8], hook: &mut Hook<'_>) -> Answer {
    match event {
        HookEvent::UserPromptSubmit => user_prompt::run(hook, input),
        HookEvent::PreToolUse => pre_tool::run(hook, input),
        HookEvent::Stop => stop::run(hook, input),
        HookEvent::StopFailure => cut_short::stop_failure(hook, input),
        HookEvent::SessionEnd => cut_short::session_end(hook, input),
    }
}
