//! `driver: hooks`: the harness plays Claude Code's side of the plugin's
//! hooks, with no CLI — what a Claude Code session with the plugin sends
//! for one prompt, as `reference/agent-formats.md` documents the inputs:
//!
//! 1. `UserPromptSubmit` with the tick's `prompt:` (else the case's loop
//!    prompt without `/loop `) and, when the tick gives one, its
//!    `source:` (who sent it: `user`, `sdk`, `loop_wakeup`,
//!    `schedule_wakeup`, `system`, `poll_event`, …; without it the input
//!    has no such field, as older releases send it);
//! 2. when the hook let the prompt through and began a tick, the model's
//!    work: the tick's fake-skill actions, run with the files the tick's
//!    request names (`.sdd/loop/{skill}.exchange/N/`); their spend is
//!    written as the session's Claude Code transcript, where the hooks
//!    read it (`transcript_path`);
//! 3. `Stop` (`stop_hook_active: false`); when that blocks, Claude Code
//!    would go on with the turn and stop again: a second `Stop` with
//!    `stop_hook_active: true`.
//!
//! Every hook runs as Claude Code runs it: the plugin's launcher,
//! `hooks/sdd-loop-hook EVENT`, with the input on stdin, in the project,
//! `sdd-loop` on the sandbox PATH keeping each run under
//! `ticks/N/engine/` — read as a `real-session` tick's
//! ([`super::real_session::report`]). One session runs the whole case
//! (one `session_id`, one transcript); its process, the lock's holder, is
//! the harness's.

use std::path::{Path, PathBuf};

use sdd_loop::state::protocol::{ModelUsage, SkillResult};
use sdd_mocks::agent::transcript::Transcript;
use serde_json::{Value, json};

use super::real_session::{self, TICK_DIR_VAR};
use super::record::TickEnd;
use super::session;
use super::tick::{Env, Output, Tick, Ticked, io};
use super::verdict::tick_end;
use crate::world::error::HarnessError;
use crate::world::spawn::{self, Ended};

/// Plays one prompt's hooks: the session's transcript holds this
/// prompt and its responses (the hooks count the tick's own).
pub fn run_tick(mut tick: Tick<'_>) -> Result<Ticked, HarnessError> {
    let project = tick.run.project().to_path_buf();
    let transcript = Transcript {
        project: &project,
        session: 1,
        tick: tick.run.n,
        at: tick.run.clock,
    };
    let home = tick.run.machine.map_or(&tick.run.sandbox.home, |m| &m.home);
    let folder = transcript.folder(home);
    std::fs::create_dir_all(&folder).map_err(io("create the transcript folder"))?;
    let transcript_path = folder.join(transcript.file_name());
    // The prompt, as Claude Code writes it before the hook runs; the
    // tick's responses follow once the work has spent them.
    std::fs::write(&transcript_path, transcript.render(&[]))
        .map_err(io("write the session transcript"))?;
    let common = json!({
        "session_id": transcript.session_id(),
        "transcript_path": transcript_path,
        "cwd": project,
        "permission_mode": "default",
    });
    let mut env = tick.env();
    env.push((TICK_DIR_VAR.to_owned(), tick.prepared.dir.clone().into()));
    let mut wall = std::time::Duration::ZERO;

    let prompt = tick
        .run
        .spec
        .prompt
        .clone()
        .unwrap_or_else(|| real_session::prompt(tick.run.case));
    let mut input = with(
        &common,
        json!({"hook_event_name": "UserPromptSubmit", "prompt": prompt}),
    );
    if let Some(source) = &tick.run.spec.source {
        input["source"] = json!(source);
    }
    let (answer, took) = hook(&mut tick, "user-prompt-submit", &input, &env)?;
    wall += took;
    let mut end = TickEnd::Exited(0);
    if answer["decision"] != "block" {
        if let Some(exchange) = opened(&project, tick.run.case.skill.as_str()) {
            let (ended, took, usage) = work(&mut tick, &exchange, env.clone())?;
            wall += took;
            std::fs::write(&transcript_path, transcript.render(&usage))
                .map_err(io("write the session transcript"))?;
            if !matches!(ended, Ended::Exited(_)) {
                end = tick_end(&ended, None);
            }
        }
        let stop = json!({
            "hook_event_name": "Stop",
            "last_assistant_message": "Done.",
            "background_tasks": [],
            "session_crons": [],
        });
        let mut active = false;
        loop {
            let mut input = with(&common, stop.clone());
            input["stop_hook_active"] = json!(active);
            let (answer, took) = hook(&mut tick, "stop", &input, &env)?;
            wall += took;
            if answer["decision"] != "block" || active {
                break;
            }
            active = true;
        }
    }
    let runs = real_session::engine_runs(&tick.prepared.dir);
    let output = Output {
        wall,
        ..real_session::report(&runs)
    };
    if end == TickEnd::Exited(0) {
        end = TickEnd::Exited(real_session::last_exit(&runs).unwrap_or(0));
    }
    let abort = tick.verdict(&end, &output.stderr, false);
    let mut record = tick.finish(end, output);
    record.from_hooks = true;
    Ok((record, abort))
}

/// `common` with `fields` added.
fn with(common: &Value, fields: Value) -> Value {
    let mut input = common.clone();
    if let (Some(to), Value::Object(from)) = (input.as_object_mut(), fields) {
        to.extend(from);
    }
    input
}

/// Runs the plugin's launcher for `event` on `input`, as Claude Code runs
/// a hook; its answer (`{}` when it printed none) and how long it took.
fn hook(
    tick: &mut Tick<'_>,
    event: &str,
    input: &Value,
    env: &Env,
) -> Result<(Value, std::time::Duration), HarnessError> {
    let stdin = tick.prepared.dir.join(format!("{event}.input.json"));
    std::fs::write(&stdin, format!("{input}\n")).map_err(io("write a hook's input"))?;
    let launcher = tick.run.opts.workspace.join("hooks/sdd-loop-hook");
    // The input on stdin, as Claude Code writes it (the shell execs the
    // launcher, whose parent is then the harness: the session's process).
    let args = vec![
        "-c".into(),
        "exec \"$0\" \"$1\" < \"$2\"".into(),
        launcher.into(),
        event.into(),
        stdin.into(),
    ];
    let invocation = tick.in_project(PathBuf::from("/bin/sh"), args, env.clone());
    let ran = tick.spawn(
        &invocation,
        spawn::Control::default(),
        "run the plugin's hook launcher",
    )?;
    let answer = serde_json::from_str(ran.stdout.trim()).unwrap_or_else(|_| json!({}));
    Ok((answer, ran.wall))
}

/// The exchange directory of the iteration open now, if one is: the
/// prompt's hook began it (an iteration's directory goes when it ends).
fn opened(project: &Path, skill: &str) -> Option<PathBuf> {
    let dir = project.join(format!(".sdd/loop/{skill}.exchange"));
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().join("request.json").is_file())
        .max_by_key(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
        })
        .map(|e| e.path())
}

/// The model's work: the tick's fake-skill actions with the request's
/// files; how it ended, how long it took and what it spent.
fn work(
    tick: &mut Tick<'_>,
    exchange: &Path,
    env: Env,
) -> Result<(Ended, std::time::Duration, Vec<ModelUsage>), HarnessError> {
    let result = exchange.join("result.json");
    let ran = session::work(
        tick,
        &exchange.join("request.json"),
        &exchange.join("events.jsonl"),
        &result,
        env,
    )?;
    // The session reports nothing to the engine: the hooks find its PRs in
    // the world and its spend in the transcript. The result file goes.
    let usage = std::fs::read(&result)
        .ok()
        .and_then(|b| serde_json::from_slice::<SkillResult>(&b).ok())
        .map(|r| r.usage)
        .unwrap_or_default();
    let _ = std::fs::remove_file(&result);
    Ok((ran.ended, ran.wall, usage))
}
