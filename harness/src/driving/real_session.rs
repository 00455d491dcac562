//! `driver: real-session`: a real Claude Code session per tick, the way
//! `/loop /sdd:work --loop` runs in-session — `claude -p PROMPT
//! --output-format stream-json --verbose --allowedTools Bash` in the
//! project, the case's scripted model making it call `sdd-loop <skill>
//! begin`, do the work and call `end` as Bash commands.
//!
//! PROMPT is what `/loop` re-sends each time: the case's `prompt` without
//! its leading `/loop ` (else `/sdd:<skill> --loop`), or the tick's own
//! `prompt` (a user's answer to a gate the hooks asked). Later ticks continue
//! the same session (`--continue`), so the session is one transcript, as
//! with `/loop`; the first tick, a tick after a kill and a tick with
//! `session: new` start a new one. The case's `claude_args` follow the
//! harness's own flags.
//!
//! Only the session sees what the engine prints, so `sdd-loop` on the
//! sandbox PATH keeps each run's arguments, output and exit status under
//! `ticks/N/engine/` (`crate::world::sandbox`); the tick's report is theirs
//! in order (`begin --json`'s report is on its stderr, as in
//! [`super::session`]) and its exit the last run's (`begin`'s 5, nothing
//! to do, counts as 0). The CLI's own stream and stderr are kept beside
//! them (`claude.jsonl`, `claude.stderr.txt`).
//!
//! `plugin: true` loads this repository as a Claude Code plugin
//! (`--plugin-dir` at the workspace root): its hooks run `sdd-loop hook
//! EVENT` from the same PATH, so they are runs under `ticks/N/engine/`
//! too, and what each hook told Claude Code (its JSON's strings) is the
//! tick's report. The model then runs no `sdd-loop` at all.
//!
//! `kill: barrier` SIGKILLs the `claude` process, and everything it
//! started, the moment a scripted command runs `sdd-evals-barrier` (it
//! writes `ready` into the tick's FIFO and blocks: no sleeps); the next
//! tick starts a new session, which reaps the dead session's lock.

use std::ffi::OsString;
use std::path::Path;

use sdd_loop::exit::NOTHING_TO_DO;

use super::real;
use super::record::TickEnd;
use super::tick::{Env, Output, Tick, TickRun, Ticked};
use super::verdict::{self, tick_end};
use crate::loading::case::{Case, SessionMode};
use crate::world::error::HarnessError;
use crate::world::model::CaseModel;
use crate::world::spawn::{Ended, Ran};

/// The variable that tells `sdd-loop` on the sandbox PATH where to keep
/// its runs.
pub const TICK_DIR_VAR: &str = "SDD_EVALS_TICK_DIR";

/// The real Claude Code session across a case's ticks (with machines,
/// one a machine: `--continue` goes on with its project's last session).
#[derive(Debug, Default)]
pub struct RealSession {
    /// The machines (`""`: the project) where a session exists to continue.
    live: std::collections::BTreeSet<String>,
}

/// The prompt `/loop` re-sends each tick.
pub fn prompt(case: &Case) -> String {
    match case.prompt.as_deref().map(str::trim) {
        Some(p) => p.strip_prefix("/loop ").unwrap_or(p).trim().to_owned(),
        None => format!("/sdd:{} --loop", case.skill.as_str()),
    }
}

/// One engine run the session made.
#[derive(Debug)]
pub(super) struct EngineRun {
    pub args: Vec<String>,
    pub stdout: String,
    pub stderr: String,
    pub exit: Option<i32>,
}

/// The engine runs under `dir/engine/`, in order.
pub(super) fn engine_runs(dir: &Path) -> Vec<EngineRun> {
    let dir = dir.join("engine");
    let read = |n: usize, ext: &str| std::fs::read_to_string(dir.join(format!("{n}.{ext}")));
    let mut runs = Vec::new();
    for n in 1.. {
        let Ok(args) = read(n, "args") else { break };
        runs.push(EngineRun {
            args: args.lines().map(str::to_owned).collect(),
            stdout: read(n, "out").unwrap_or_default(),
            stderr: read(n, "err").unwrap_or_default(),
            exit: read(n, "exit").ok().and_then(|e| e.trim().parse().ok()),
        });
    }
    runs
}

/// The last lines of `text`, for a failure message.
pub(super) fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let shown = all[all.len().saturating_sub(lines)..].join("\n  ");
    if shown.is_empty() {
        "(nothing)".to_owned()
    } else {
        shown
    }
}

/// What a hook told Claude Code (`sdd-loop hook EVENT`'s JSON: the
/// reason of a block or refusal, the context added, the message shown),
/// as text, one string a line: the tick's report in a `plugin: true` case.
fn hook_text(stdout: &str) -> String {
    fn strings(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let mut out = String::new();
    match serde_json::from_str::<serde_json::Value>(stdout.trim()) {
        Ok(value) => strings(&value, &mut out),
        Err(_) if stdout.trim().is_empty() => {}
        Err(_) => out.push_str(stdout),
    }
    out
}

/// What Claude Code's `result` event said, when it reports an error.
fn result_error(stream: &str) -> Option<String> {
    stream.lines().rev().find_map(|line| {
        let event: serde_json::Value = serde_json::from_str(line).ok()?;
        (event["type"] == "result" && event["is_error"] == true).then(|| {
            format!(
                "{}: {}",
                event["subtype"].as_str().unwrap_or("error"),
                event["result"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| event["errors"].to_string())
            )
        })
    })
}

/// Whether the session's turn ended on a model-API error that the case's
/// own script served (a mock-model `faults:` entry): `claude -p` then
/// exits 1, and that is the tick's subject (Claude Code runs
/// `StopFailure`), not a failure of the session.
fn scripted_api_error(stream: &str) -> bool {
    stream
        .lines()
        .rev()
        .find_map(|line| {
            let event: serde_json::Value = serde_json::from_str(line).ok()?;
            (event["type"] == "result").then(|| {
                event["api_error_status"].is_number()
                    && event["result"]
                        .as_str()
                        .is_some_and(|r| r.contains("mock-model: scripted"))
            })
        })
        .unwrap_or(false)
}

/// One machine's session in a tick on several machines at once: a new
/// session against a model of its own that plays the tick's turns (the
/// sessions' requests arrive interleaved), with `extra` variables (the
/// engine's pause point) reaching the hooks' engine.
pub fn run_at_once(tick: Tick<'_>, extra: Env) -> Result<Ticked, HarnessError> {
    let log = tick.prepared.dir.join("model.log");
    let model = CaseModel::for_machine(tick.run.case, tick.run.spec, log)?;
    let mut env = extra;
    env.push(("ANTHROPIC_BASE_URL".to_owned(), model.uri().into()));
    let (mut record, abort) = RealSession::default().run_with(tick, &model, 1, env)?;
    // The case's model served none of it.
    record.model_requests = 0..0;
    Ok((record, abort))
}

impl RealSession {
    /// Runs one tick as a real Claude Code session.
    pub fn run_tick(&mut self, tick: Tick<'_>) -> Result<Ticked, HarnessError> {
        let model = real::model(&tick)?;
        let n = tick.run.n;
        self.run_with(tick, model, n, Vec::new())
    }

    /// Runs `tick` against `model` (tick `n` of its script), with `extra`
    /// variables after the tick's own.
    fn run_with(
        &mut self,
        mut tick: Tick<'_>,
        model: &CaseModel,
        n: usize,
        extra: Env,
    ) -> Result<Ticked, HarnessError> {
        let (_, exe) = real::cli(&tick)?;
        let kill = tick.kill();
        let mut env = tick.env();
        env.extend(real::cli_env(&tick));
        env.push((TICK_DIR_VAR.to_owned(), tick.prepared.dir.clone().into()));
        env.extend(extra);
        let args = self.claude_args(&tick);
        let requests_before = model.log().len();
        let invocation = tick.in_project(exe, args, env);
        let control = tick.control();
        let ran = tick.spawn(&invocation, control, "run claude")?;
        let dir = &tick.prepared.dir;
        let _ = std::fs::write(dir.join("claude.jsonl"), &ran.stdout);
        let _ = std::fs::write(dir.join("claude.stderr.txt"), &ran.stderr);
        let on = machine_key(&tick);
        self.live.insert(on.clone());
        if kill.is_some() {
            // Whatever the kill hit, the session is gone with it.
            self.live.remove(&on);
            tick.reaper.sweep();
        }
        let runs = engine_runs(dir);
        let output = Output {
            wall: ran.wall,
            ..report(&runs)
        };
        let ended = if matches!(ran.ended, Ended::Exited(1)) && scripted_api_error(&ran.stdout) {
            &Ended::Exited(0)
        } else {
            &ran.ended
        };
        let end = match (ended, last_exit(&runs)) {
            (Ended::Exited(0), Some(code)) => TickEnd::Exited(code),
            (Ended::Exited(0), None) => TickEnd::Exited(0),
            (other, _) => tick_end(other, kill),
        };
        let abort = match session_failure(&tick, &ran, &runs) {
            Some(why) => Some(why),
            None => tick.verdict(&end, &output.stderr, ran.barrier_missed),
        };
        let abort = verdict::and(abort, model.turns_verdict(n));
        let from_hooks = tick.run.case.plugin;
        let mut record = tick.finish(end, output);
        record.model_requests = requests_before..model.log().len();
        record.from_hooks = from_hooks;
        Ok((record, abort))
    }

    /// `claude`'s command line this tick: the prompt, the stream, Bash,
    /// the session continued unless a new one starts, the plugin, and the
    /// case's own flags.
    fn claude_args(&self, tick: &Tick<'_>) -> Vec<OsString> {
        let TickRun {
            case, spec, opts, ..
        } = tick.run;
        let mut args: Vec<OsString> = vec![
            "-p".into(),
            spec.prompt.clone().unwrap_or_else(|| prompt(case)).into(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
            "--allowedTools".into(),
            "Bash".into(),
        ];
        if self.live.contains(&machine_key(tick)) && spec.session != Some(SessionMode::New) {
            args.push("--continue".into());
        }
        if case.plugin {
            args.push("--plugin-dir".into());
            args.push(opts.workspace.clone().into_os_string());
        }
        args.extend(case.claude_args.iter().map(OsString::from));
        args
    }
}

/// Which session a tick continues: its machine's, or the project's (`""`).
fn machine_key(tick: &Tick<'_>) -> String {
    tick.run.machine.map(|m| m.name.clone()).unwrap_or_default()
}

/// The tick's report and the rest, from the engine's runs in order: a
/// hook's JSON as text, `begin --json`'s report from its stderr.
pub(super) fn report(runs: &[EngineRun]) -> Output {
    let mut output = Output::default();
    for run in runs {
        if run.args.first().is_some_and(|a| a == "hook") {
            output.stdout.push_str(&hook_text(&run.stdout));
            output.stderr.push_str(&run.stderr);
            continue;
        }
        let json_begin =
            run.args.iter().any(|a| a == "begin") && run.args.iter().any(|a| a == "--json");
        let (report, rest) = if json_begin {
            (&run.stderr, &run.stdout)
        } else {
            (&run.stdout, &run.stderr)
        };
        output.stdout.push_str(report);
        output.stderr.push_str(rest);
    }
    output
}

/// The last run's exit status (`begin`'s nothing to do counts as 0).
pub(super) fn last_exit(runs: &[EngineRun]) -> Option<i32> {
    runs.iter().rev().find_map(|r| r.exit).map(|code| {
        if code == i32::from(NOTHING_TO_DO) {
            0
        } else {
            code
        }
    })
}

/// Why the session itself stops the case, if it does: `claude` failed,
/// or it ran no `sdd-loop` when nothing killed it.
fn session_failure(tick: &Tick<'_>, ran: &Ran, runs: &[EngineRun]) -> Option<String> {
    let TickRun { case, n, opts, .. } = tick.run;
    let cli_failed = match &ran.ended {
        Ended::Exited(0) | Ended::KilledAtBarrier | Ended::TimedOut => None,
        Ended::Exited(1) if scripted_api_error(&ran.stdout) => None,
        Ended::Exited(code) => Some(format!("exited {code}")),
        Ended::Signaled(sig) => Some(format!("was killed by signal {sig}")),
    };
    let quiet = runs.is_empty() && tick.kill().is_none();
    match cli_failed {
        Some(how) => Some(format!(
            "claude {how}{}; its stderr:\n  {}",
            result_error(&ran.stdout)
                .map(|r| format!(" ({r})"))
                .unwrap_or_default(),
            tail(&ran.stderr, 10)
        )),
        None if quiet && case.plugin => Some(format!(
            "no hook of the plugin ran `sdd-loop`: `claude --plugin-dir {}` loaded no `hooks/hooks.json` (ticks/{n}/claude.stderr.txt has the CLI's errors)",
            opts.workspace.display(),
        )),
        None if quiet => Some(format!(
            "the session ran no `sdd-loop` command: its model turns must run `sdd-loop {} begin …` (ticks/{n}/claude.jsonl has the session's stream)",
            case.skill.as_str(),
        )),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_is_what_loop_re_sends() {
        let dir = tempfile::tempdir().unwrap();
        let write = |text: &str| {
            let path = dir.path().join("c.yaml");
            std::fs::write(&path, text).unwrap();
            let fixtures = crate::loading::fixtures::Fixtures::new(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures"),
            );
            Case::load(&path, &fixtures).unwrap()
        };
        let base = "id: x\nname: x\nproves: x\nskill: work\nticks: [{}]\n";
        assert_eq!(prompt(&write(base)), "/sdd:work --loop");
        let with = format!("{base}prompt: /loop /sdd:work --loop --max-prs 1\n");
        assert_eq!(prompt(&write(&with)), "/sdd:work --loop --max-prs 1");
    }
}
