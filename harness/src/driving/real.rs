//! `driver: real-claude`, `real-codex`, `real-gemini` and `real-opencode`:
//! the engine drives the pinned real CLI as the tick's work — `sdd-loop
//! <skill> --loop --agent claude|codex|gemini|opencode --agent-cmd
//! <installed binary>` — against the case's scripted model
//! (`crate::world::model`), as a user would run it with their own model
//! provider.
//!
//! The tick's `model:` turns are what the model answers; their Bash
//! calls run for real in the project (`git`, `gh` → fake-gh, the engine as
//! `sdd-loop`). The CLI runs confined: configuration and transcripts
//! inside the sandbox, the model's base URL and key, telemetry off, no
//! network but loopback. Claude Code finds the model through
//! `ANTHROPIC_BASE_URL`; Codex through a provider added with `-c`, passed
//! as `--agent-arg`s the way users pass flags (docs/src/agents.md); the Gemini CLI
//! through `GOOGLE_GEMINI_BASE_URL`; OpenCode through the `anthropic`
//! provider of the sandbox's `opencode.json`. Every tick runs the
//! engine with `CLAUDECODE` and `CLAUDE_CODE_ENTRYPOINT` set, as inside a
//! Claude Code session, so every case proves the engine removes them.
//!
//! A tick also fails when its CLI took more or fewer model turns than it
//! was given, or a request broke the script's `expect`: the message quotes
//! the model's log ([`CaseModel::turns_verdict`]).

use std::path::PathBuf;

use super::tick::{Env, Tick, Ticked};
use super::verdict;
use crate::loading::case::Case;
use crate::world::clis::{Clis, INSTALL_HINT, Pinned};
use crate::world::error::HarnessError;
use crate::world::model::{BARRIER_VAR, CaseModel};
use crate::world::sandbox::TRACKER_TOKEN;

/// The pinned CLI a real-CLI case runs, and where it was found.
pub fn cli(tick: &Tick<'_>) -> Result<(Pinned, PathBuf), HarnessError> {
    let pinned = tick
        .run
        .case
        .driver
        .real_cli()
        .and_then(Pinned::named)
        .ok_or_else(|| HarnessError::Sandbox("this driver runs no real CLI".to_owned()))?;
    let path = tick.run.opts.clis.get(&pinned).ok_or_else(|| {
        HarnessError::Sandbox(format!(
            "{} ({}) is not installed: install it with `{INSTALL_HINT}`",
            pinned.name,
            pinned.spec()
        ))
    })?;
    Ok((pinned, path.to_path_buf()))
}

/// Why `case` cannot run here, if it cannot: its real CLI was not found.
/// The message names the CLI, the pinned version and the command that
/// installs it; such a case is reported skipped — never passed — or, with
/// `--require-agents`, failed.
pub fn missing_cli(case: &Case, clis: &Clis) -> Option<String> {
    let pinned = Pinned::named(case.driver.real_cli()?)?;
    clis.get(&pinned).is_none().then(|| {
        format!(
            "{} {} is not installed (nor on PATH): install it with `{INSTALL_HINT}`",
            pinned.package, pinned.version
        )
    })
}

/// The case's model (a real-CLI sandbox always has one).
pub fn model<'a>(tick: &Tick<'a>) -> Result<&'a CaseModel, HarnessError> {
    tick.run
        .sandbox
        .model
        .as_ref()
        .ok_or_else(|| HarnessError::Sandbox("the case's mock model did not start".to_owned()))
}

/// What a real CLI needs beyond the engine's environment: the
/// confinement, `gh`'s token, the git identity and dates the world's own
/// commits use (so a scripted `git commit` has the same SHA every run),
/// and the barrier FIFO when the tick kills.
pub fn cli_env(tick: &Tick<'_>) -> Env {
    let sandbox = tick.run.sandbox;
    let mut env = sandbox
        .confinement
        .as_ref()
        .map(|c| c.env.clone())
        .unwrap_or_default();
    env.push(("GH_TOKEN".to_owned(), TRACKER_TOKEN.into()));
    let id = &sandbox.git.identity;
    for who in ["AUTHOR", "COMMITTER"] {
        env.push((format!("GIT_{who}_NAME"), id.name.clone().into()));
        env.push((format!("GIT_{who}_EMAIL"), id.email.clone().into()));
        env.push((format!("GIT_{who}_DATE"), id.date.clone().into()));
    }
    if let Some(fifo) = &tick.prepared.barrier {
        env.push((BARRIER_VAR.to_owned(), fifo.clone().into()));
    }
    env
}

/// A real-agent tick: the engine drives the pinned CLI.
pub fn run(tick: Tick<'_>) -> Result<Ticked, HarnessError> {
    let (pinned, exe) = cli(&tick)?;
    let model = model(&tick)?;
    let n = tick.run.n;
    let mut args = tick.loop_args();
    args.extend([
        "--agent".into(),
        pinned.name.into(),
        "--agent-cmd".into(),
        exe.into_os_string(),
    ]);
    if pinned.name == "codex"
        && let Some(c) = &tick.run.sandbox.confinement
    {
        for pair in &c.codex_config {
            args.push("--agent-arg=-c".into());
            args.push(format!("--agent-arg={pair}").into());
        }
    }
    let mut env = tick.env();
    env.extend(cli_env(&tick));
    env.extend([
        ("CLAUDECODE".to_owned(), "1".into()),
        ("CLAUDE_CODE_ENTRYPOINT".to_owned(), "cli".into()),
    ]);
    let before = model.log().len();
    let (mut record, abort) = tick.run_engine(args, env)?;
    record.model_requests = before..model.log().len();
    Ok((record, verdict::and(abort, model.turns_verdict(n))))
}
