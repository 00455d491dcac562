//! The fake agents: `fake-claude` and `fake-codex`, the
//! test doubles of Claude Code and Codex run headless. Per invocation they
//! follow a YAML script ([`script`]) — acting on the world exactly as the
//! fake skill does ([`crate::skill::act`]: push branches, open PRs through
//! the mock tracker, comment, merge) — and print what their real
//! counterparts print, untidy parts included: a `system` init event,
//! several models, cache tokens, one step's usage repeated on each of its
//! content blocks (a partial count first), `user` tool results, non-JSON
//! noise on stdout, chatter on stderr, a final `result` with `modelUsage`
//! (helper models, decorated ids with `canonicalModel`), cumulative Codex
//! turn usage, and scripted exit statuses. They honour
//! `--max-budget-usd` and can block at a barrier.
//!
//! They never speak the engine's protocol: no request, result or events
//! file — the engine must learn everything from their stream and from
//! the world. Their own failures are prefixed `[fake-claude]` /
//! `[fake-codex]` and exit 90–94, like the fake skill's.
//!
//! A played in-session agent leaves what Claude Code leaves: a session
//! transcript ([`transcript`]).

pub mod claude;
pub mod codex;
pub mod script;
pub mod transcript;

use std::io::Write;
use std::path::PathBuf;

use crate::skill::act::{ActError, Actor, Sink};
use crate::skill::{counter, exit};
use script::{AgentScript, AgentTick, Kind};

pub const ENV_SCRIPT: &str = "FAKE_AGENT_SCRIPT";
pub const ENV_COUNTER: &str = "FAKE_AGENT_COUNTER";
/// Where the prompt received is saved, when set.
pub const ENV_PROMPT: &str = "FAKE_AGENT_PROMPT";

/// What a fake agent's process has: its arguments, environment and
/// standard streams (gathered by the binary, so the library reads no
/// process state itself).
pub struct Process<'a> {
    pub args: Vec<std::ffi::OsString>,
    pub vars: std::collections::BTreeMap<String, String>,
    pub stdin: &'a mut dyn std::io::Read,
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
    pub cwd: PathBuf,
    pub pid: u32,
}

impl std::fmt::Debug for Process<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl Process<'_> {
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).filter(|v| !v.is_empty()).cloned()
    }

    /// Whether `name` is set at all (even empty).
    pub fn var_set(&self, name: &str) -> bool {
        self.vars.contains_key(name)
    }

    /// The environment the script and the world need.
    pub fn agent_env(&self) -> AgentEnv {
        AgentEnv {
            script: self.var(ENV_SCRIPT).map(Into::into),
            counter: self.var(ENV_COUNTER).map(Into::into),
            prompt_log: self.var(ENV_PROMPT).map(Into::into),
            tracker_url: self.var(crate::skill::ENV_TRACKER_URL),
            repo: self.var(crate::skill::ENV_REPO),
            token: self
                .var(crate::skill::ENV_TRACKER_TOKEN)
                .or_else(|| self.var(crate::skill::ENV_GITHUB_TOKEN)),
            cwd: self.cwd.clone(),
            pid: self.pid,
        }
    }

    /// The prompt: the argument, else standard input to its end.
    pub fn prompt(&mut self, argument: Option<String>) -> std::io::Result<String> {
        match argument.filter(|p| p != "-") {
            Some(p) => Ok(p),
            None => {
                let mut text = String::new();
                self.stdin.read_to_string(&mut text)?;
                Ok(text)
            }
        }
    }
}

/// What a fake agent's binary gathers from its environment.
#[derive(Debug, Clone, Default)]
pub struct AgentEnv {
    pub script: Option<PathBuf>,
    pub counter: Option<PathBuf>,
    pub prompt_log: Option<PathBuf>,
    pub tracker_url: Option<String>,
    pub repo: Option<String>,
    pub token: Option<String>,
    pub cwd: PathBuf,
    pub pid: u32,
}

/// Prints a fake agent's own diagnostics.
pub fn diag(kind: Kind, err: &mut dyn Write, text: &str) {
    for line in text.lines() {
        let _ = writeln!(err, "[{}] {line}", kind.name());
    }
    let _ = err.flush();
}

/// The stream a fake agent prints as it acts.
pub trait Emitter: Sink {
    /// Before the first action.
    fn start(&mut self) -> std::io::Result<()>;
    /// Whether the agent must stop now (its spend passed
    /// `--max-budget-usd`).
    fn over_budget(&self) -> bool;
    /// The end of the stream, as `tick` says (or at the spend limit).
    fn finish(&mut self, tick: &AgentTick) -> std::io::Result<i32>;
    /// A failed `qmd` call: the agent reports it and ends in error.
    fn qmd_failed(&mut self, captured: &str) -> std::io::Result<()>;
}

/// Saves the prompt, picks this invocation's entry and checks it.
pub fn prepare(
    kind: Kind,
    env: &AgentEnv,
    prompt: &str,
    err: &mut dyn Write,
) -> Result<AgentTick, u8> {
    if let Some(path) = &env.prompt_log
        && let Err(e) = std::fs::write(path, prompt)
    {
        diag(
            kind,
            err,
            &format!("error: cannot save the prompt to {}: {e}", path.display()),
        );
        return Err(exit::IO);
    }
    let Some(script_path) = &env.script else {
        diag(
            kind,
            err,
            &format!(
                "error: {ENV_SCRIPT} is not set\nhelp: point it at a fake-agent script (format: fixtures/README.md)"
            ),
        );
        return Err(exit::BAD_SCRIPT);
    };
    let script = AgentScript::load(script_path).map_err(|e| {
        diag(kind, err, &e.render());
        exit::BAD_SCRIPT
    })?;
    let counter_path = env.counter.clone().unwrap_or_else(|| {
        let mut name = script_path.as_os_str().to_owned();
        name.push(".count");
        PathBuf::from(name)
    });
    let n = counter::advance(&counter_path).map_err(|e| {
        diag(
            kind,
            err,
            &format!("error: invocation counter {}: {e}", counter_path.display()),
        );
        exit::IO
    })?;
    let Some(tick) = script.nth(n) else {
        diag(
            kind,
            err,
            &format!(
                "error: {} has no entry for invocation {n} and no `default`\nhelp: add an entry (or `default:`)",
                script_path.display()
            ),
        );
        return Err(exit::BAD_SCRIPT);
    };
    if let Err(e) = tick.check(kind) {
        diag(
            kind,
            err,
            &format!(
                "error: {}: {e}\nhelp: {}",
                script_path.display(),
                script::FORMAT_HELP
            ),
        );
        return Err(exit::BAD_SCRIPT);
    }
    Ok(tick.clone())
}

/// Plays `tick`: every action on the world, each reported to `emitter`,
/// then the end of the stream. The exit status. Does not return after
/// `barrier` or `hang`.
pub fn play(
    kind: Kind,
    env: &AgentEnv,
    tick: &AgentTick,
    emitter: &mut dyn Emitter,
    err: &mut dyn Write,
) -> u8 {
    let mut actor = Actor::new(
        env.cwd.clone(),
        env.pid,
        env.tracker_url.clone(),
        env.repo.clone(),
        env.token.clone(),
    );
    let io_failed = |err: &mut dyn Write, e: std::io::Error| {
        diag(kind, err, &format!("error: cannot print the stream: {e}"));
        exit::IO
    };
    if let Err(e) = emitter.start() {
        return io_failed(err, e);
    }
    for action in &tick.actions {
        match actor.act(action, emitter, err) {
            Ok(()) => {}
            Err(ActError::Qmd(captured)) => {
                let _ = writeln!(
                    err,
                    "{}: {captured}",
                    sdd_loop::state::protocol::QMD_SENTINEL
                );
                if let Err(e) = emitter.qmd_failed(&captured) {
                    return io_failed(err, e);
                }
                return 1;
            }
            Err(e) => {
                let status = match e {
                    ActError::Tracker(_) => exit::TRACKER,
                    ActError::Git(_) => exit::GIT,
                    ActError::Io(_) | ActError::Qmd(_) => exit::IO,
                };
                diag(kind, err, &format!("error: {action:?} failed: {e}"));
                return status;
            }
        }
        if emitter.over_budget() {
            break;
        }
    }
    match emitter.finish(tick) {
        Ok(code) => {
            let _ = err.flush();
            u8::try_from(code).unwrap_or(u8::MAX)
        }
        Err(e) => io_failed(err, e),
    }
}
