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

use std::ffi::OsString;
use std::path::PathBuf;

use super::record::TickRecord;
use super::tick::{self, Prepared, TickRun};
use crate::loading::case::Case;
use crate::world::clis::{Clis, INSTALL_HINT, Pinned};
use crate::world::error::HarnessError;
use crate::world::model::{BARRIER_VAR, CaseModel};
use crate::world::procs::Reaper;
use crate::world::sandbox::TRACKER_TOKEN;

/// The pinned CLI a real-CLI case runs, and where it was found.
pub fn cli(t: &TickRun<'_>) -> Result<(Pinned, PathBuf), HarnessError> {
    let pinned = t
        .case
        .driver
        .real_cli()
        .and_then(Pinned::named)
        .ok_or_else(|| HarnessError::Sandbox("this driver runs no real CLI".to_owned()))?;
    let path = t.opts.clis.get(&pinned).ok_or_else(|| {
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
pub fn model<'a>(t: &TickRun<'a>) -> Result<&'a CaseModel, HarnessError> {
    t.sandbox
        .model
        .as_ref()
        .ok_or_else(|| HarnessError::Sandbox("the case's mock model did not start".to_owned()))
}

/// What a real CLI needs beyond the engine's environment: the
/// confinement, `gh`'s token, the git identity and dates the world's own
/// commits use (so a scripted `git commit` has the same SHA every run),
/// and the barrier FIFO when the tick kills.
pub fn cli_env(t: &TickRun<'_>, prepared: &Prepared) -> Vec<(String, OsString)> {
    let mut env = t
        .sandbox
        .confinement
        .as_ref()
        .map(|c| c.env.clone())
        .unwrap_or_default();
    env.push(("GH_TOKEN".to_owned(), TRACKER_TOKEN.into()));
    let id = &t.sandbox.git.identity;
    for who in ["AUTHOR", "COMMITTER"] {
        env.push((format!("GIT_{who}_NAME"), id.name.clone().into()));
        env.push((format!("GIT_{who}_EMAIL"), id.email.clone().into()));
        env.push((format!("GIT_{who}_DATE"), id.date.clone().into()));
    }
    if prepared.fifo.is_some() {
        env.push((
            BARRIER_VAR.to_owned(),
            prepared.dir.join("barrier.fifo").into(),
        ));
    }
    env
}

/// Adds the model's verdict on tick `t` to the driver's.
pub fn with_model_verdict(
    t: &TickRun<'_>,
    model: &CaseModel,
    abort: Option<String>,
) -> Option<String> {
    match (abort, model.turns_verdict(t.n)) {
        (None, verdict) => verdict,
        (Some(abort), None) => Some(abort),
        (Some(abort), Some(verdict)) => Some(format!("{abort}\n  and {verdict}")),
    }
}

/// A real-agent tick: the engine drives the pinned CLI.
pub fn run(
    t: &TickRun<'_>,
    reaper: &mut Reaper,
) -> Result<(TickRecord, Option<String>), HarnessError> {
    let (pinned, exe) = cli(t)?;
    let model = model(t)?;
    let prepared = tick::prepare(t)?;
    let (mut args, mut env) = tick::loop_command(t, &prepared, reaper);
    args.extend([
        "--agent".into(),
        pinned.name.into(),
        "--agent-cmd".into(),
        exe.into_os_string(),
    ]);
    if pinned.name == "codex"
        && let Some(c) = &t.sandbox.confinement
    {
        for pair in &c.codex_config {
            args.push("--agent-arg=-c".into());
            args.push(format!("--agent-arg={pair}").into());
        }
    }
    env.extend(cli_env(t, &prepared));
    env.extend([
        ("CLAUDECODE".to_owned(), "1".into()),
        ("CLAUDE_CODE_ENTRYPOINT".to_owned(), "cli".into()),
    ]);
    let before = model.log().len();
    let (mut record, abort) = tick::run_engine(t, prepared, args, env, reaper)?;
    record.model_requests = before..model.log().len();
    let abort = with_model_verdict(t, model, abort);
    Ok((record, abort))
}
