//! `driver: claude` and `driver: codex`: the engine drives a real agent's
//! test double as the tick's work — `sdd-loop <skill> --loop
//! --agent claude|codex`, with `fake-claude` / `fake-codex` installed as
//! `claude` / `codex` on the sandbox PATH.
//!
//! The tick's `skill:` entry is what the agent does — its actions act on
//! the world as the fake skill's do; its `exit`, when not 0, is the agent's
//! exit status — and its `agent:` entry how the agent's stream reports it
//! (`sdd_mocks::agent::script::Stream`). The harness writes them as the
//! fake agent's script (`ticks/N/agent.yaml`); the agent saves the prompt
//! it was given as `ticks/N/prompt.txt`. Every tick also runs the engine
//! with `CLAUDECODE` and `CLAUDE_CODE_ENTRYPOINT` set, as inside a Claude
//! Code session: `fake-claude` refuses to start when they reach it, so
//! every claude case proves the engine removes them.

use sdd_mocks::agent::script::{AgentScript, AgentTick, Kind};
use sdd_mocks::agent::{ENV_COUNTER, ENV_PROMPT, ENV_SCRIPT};
use sdd_mocks::skill::Action;

use super::tick::{Env, Tick, Ticked, io};
use crate::world::error::HarnessError;

/// The `--agent` value of a fake agent.
pub fn flag(kind: Kind) -> &'static str {
    match kind {
        Kind::Claude => "claude",
        Kind::Codex => "codex",
    }
}

/// An agent tick: `sdd-loop <skill> --loop --agent claude|codex`, the
/// engine driving the fake agent.
pub fn run(tick: Tick<'_>, kind: Kind) -> Result<Ticked, HarnessError> {
    let mut args = tick.loop_args();
    args.extend(["--agent".into(), flag(kind).into()]);
    let mut env = tick.env();
    env.extend(agent_env(&tick)?);
    tick.run_engine(args, env)
}

/// Writes the fake agent's script for this tick; what the engine needs to
/// drive it.
fn agent_env(tick: &Tick<'_>) -> Result<Env, HarnessError> {
    let spec = tick.run.spec;
    let prepared = &tick.prepared;
    let mut entry = AgentTick::default();
    if let Some(skill) = &spec.skill {
        entry.actions = skill.actions.clone();
        if skill.exit.value != 0 {
            entry.exit = Some(skill.exit.value);
        }
    }
    if let Some(fifo) = &prepared.barrier {
        for action in &mut entry.actions {
            if let Action::Barrier(p) = action {
                *p = fifo.display().to_string();
            }
        }
    }
    if let Some(stream) = &spec.agent {
        entry.stream = stream.value.clone();
    }
    let script = AgentScript {
        ticks: Vec::new(),
        default: Some(entry),
    };
    let path = prepared.dir.join("agent.yaml");
    let text = serde_saphyr::to_string(&script)
        .map_err(|e| HarnessError::Sandbox(format!("cannot write the fake agent's script: {e}")))?;
    std::fs::write(&path, text).map_err(io("write the fake agent's script"))?;
    let var = |k: &str, v: std::ffi::OsString| (k.to_owned(), v);
    Ok(vec![
        var(ENV_SCRIPT, path.clone().into()),
        var(ENV_COUNTER, path.with_file_name("agent.count").into()),
        var(ENV_PROMPT, prepared.dir.join("prompt.txt").into()),
        var("CLAUDECODE", "1".into()),
        var("CLAUDE_CODE_ENTRYPOINT", "cli".into()),
    ])
}
