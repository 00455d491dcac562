//! `driver: real-loop`: the real interactive Claude Code, as a user runs
//! `/loop` — on a pseudo-terminal ([`crate::world::pty`]), offline against
//! the case's scripted model, this repository loaded as a plugin
//! (`--plugin-dir`), the case's `prompt` (`/loop /sdd-loop:work --loop …`)
//! typed once. From then on Claude Code's own scheduler submits the
//! prompts: `/loop`'s wakeup (`ScheduleWakeup`) or cron job
//! (`CronCreate`), armed by the model's scripted calls.
//!
//! Each tick is the next prompt the session submits: the one typed (the
//! case's at tick 1, a tick's `prompt:` later — a user answering a gate),
//! or the next fire. The driver never reads the screen to know where the
//! session is; it watches what the session leaves behind. `sdd-loop` on
//! the sandbox PATH keeps every run of the session under `loop/engine/`
//! (`crate::world::sandbox`): a tick begins with the run of the
//! `UserPromptSubmit` hook (one per submitted prompt) and ends when that
//! hook blocked the prompt (the model is not called) or, when it let it
//! through, when a `Stop` hook's run that did not block has ended (the
//! turn is over) — or a `StopFailure` hook's (the turn ended on a
//! model-API error, and no `Stop` comes). The tick's runs are copied to
//! `ticks/N/engine/` and read as a `real-session` tick's are ([`super::real_session`]); its model
//! requests are the model log's growth since the last tick.
//!
//! Claude Code's scheduler waits real time (a wakeup at least 60 s ahead,
//! a cron job on the minute), so a tick may wait minutes for its fire; the
//! case's `timeout` bounds the whole session. After the last tick the
//! case's `quiet:` is watched: a prompt submitted or a model request made
//! in that time fails the case. The engine's clock is a file
//! (`SDD_EVALS_NOW_FILE`) written before each tick, so `advance:` moves it
//! as in every other driver. The session's process group is SIGKILLed when
//! the case ends, passes or not.
//!
//! The configuration Claude Code starts with is written into its config
//! directory (`CLAUDE_CONFIG_DIR`, in the sandbox) as measured in
//! `reference/real-agents.md`: onboarding done, the scripted model's key
//! approved, the project trusted, and `Bash`, `Skill`, `ScheduleWakeup`,
//! `CronCreate` and `CronDelete` allowed without asking. A typed prompt
//! is its text, then Enter a second later (text and Enter in one write
//! would be read as a paste, the Enter as a new line); Enter is pressed
//! again while no prompt is submitted.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::real;
use super::real_session::{self, EngineRun, TICK_DIR_VAR};
use super::record::TickEnd;
use super::tick::{Output, Tick, Ticked, io};
use super::verdict;
use crate::loading::duration;
use crate::world::error::HarnessError;
use crate::world::model::{CaseModel, MODEL_KEY};
use crate::world::pty::Terminal;

/// The variable that tells `sdd-loop` on the sandbox PATH which file
/// holds the engine's clock.
pub const NOW_FILE_VAR: &str = "SDD_EVALS_NOW_FILE";

/// The tools the session may use without asking.
const ALLOWED: [&str; 5] = [
    "Bash",
    "Skill",
    "ScheduleWakeup",
    "CronCreate",
    "CronDelete",
];

/// How often the session's files are looked at.
const POLL: Duration = Duration::from_millis(100);

/// Between a typed prompt's text and its Enter.
const KEYSTROKE_GAP: Duration = Duration::from_secs(1);

/// How long a typed prompt may go unsubmitted before Enter is pressed
/// again (a prompt typed while Claude Code is still drawing its first
/// screen).
const ENTER_AGAIN: Duration = Duration::from_secs(10);

/// The interactive session across a case's ticks.
#[derive(Debug, Default)]
pub struct RealLoop {
    live: Option<Live>,
}

/// A running session.
#[derive(Debug)]
struct Live {
    terminal: Terminal,
    /// `loop/` in the sandbox: the session's engine runs, clock and screen.
    dir: PathBuf,
    /// Engine runs handed to ticks so far.
    runs_seen: usize,
    /// Model requests logged by the end of the last tick.
    requests_seen: usize,
}

/// One engine run of the session, as the shim numbered it.
fn run_at(dir: &Path, n: usize) -> Option<EngineRun> {
    let engine = dir.join("engine");
    let read = |ext: &str| std::fs::read_to_string(engine.join(format!("{n}.{ext}")));
    // A run is whole once its exit status is written.
    let exit = read("exit").ok()?;
    Some(EngineRun {
        args: read("args").ok()?.lines().map(str::to_owned).collect(),
        stdout: read("out").unwrap_or_default(),
        stderr: read("err").unwrap_or_default(),
        exit: exit.trim().parse().ok(),
    })
}

/// Whether `run` is the hook `event`'s.
fn is_hook(run: &EngineRun, event: &str) -> bool {
    run.args.first().is_some_and(|a| a == "hook") && run.args.get(1).is_some_and(|e| e == event)
}

/// Whether a hook's answer blocked (a prompt or a stop).
fn blocked(run: &EngineRun) -> bool {
    serde_json::from_str::<serde_json::Value>(run.stdout.trim())
        .is_ok_and(|v| v["decision"] == "block")
}

/// Whether a tick's `runs` so far show `wait` is over: its prompt was
/// submitted (its `UserPromptSubmit` hook ran); its turn ended — the
/// prompt blocked, a `Stop` that did not block, or a `StopFailure` (the
/// turn ended on a model-API error: no `Stop` comes).
fn reached(runs: &[EngineRun], wait: &Wait) -> bool {
    let Some(prompt) = runs.iter().position(|r| is_hook(r, "user-prompt-submit")) else {
        return false;
    };
    let after = &runs[prompt + 1..];
    match wait {
        Wait::Prompt => true,
        Wait::TurnEnd => {
            blocked(&runs[prompt])
                || after.iter().any(|r| is_hook(r, "stop-failure"))
                || after
                    .iter()
                    .rev()
                    .find(|r| is_hook(r, "stop"))
                    .is_some_and(|r| !blocked(r))
        }
    }
}

/// What is being waited for.
enum Wait {
    /// The tick's prompt: the run of its `UserPromptSubmit` hook.
    Prompt,
    /// The end of the tick's turn: a `Stop` run that did not block.
    TurnEnd,
}

impl Live {
    /// Starts Claude Code on a pseudo-terminal for `tick`'s case and waits
    /// until its session has started.
    fn start(tick: &Tick<'_>, dir: PathBuf) -> Result<Self, HarnessError> {
        let (_, exe) = real::cli(tick)?;
        let config = write_config(tick)?;
        let mut env = tick.env();
        env.extend(real::cli_env(tick));
        env.push((TICK_DIR_VAR.to_owned(), dir.clone().into()));
        env.push((NOW_FILE_VAR.to_owned(), dir.join("now").into()));
        env.push(("TERM".to_owned(), "xterm-256color".into()));
        let mut args: Vec<OsString> = vec![
            "--plugin-dir".into(),
            tick.run.opts.workspace.clone().into(),
        ];
        args.extend(tick.run.case.claude_args.iter().map(OsString::from));
        let invocation = tick.in_project(exe, args, env);
        let terminal =
            Terminal::spawn(&invocation, &dir.join("screen.txt")).map_err(io("start claude"))?;
        let mut live = Self {
            terminal,
            dir,
            runs_seen: 0,
            requests_seen: 0,
        };
        live.until(
            tick.run.deadline,
            "Claude Code to start its session",
            |_| {
                // Its session file is written once the session has started.
                std::fs::read_dir(config.join("sessions")).is_ok_and(|d| {
                    d.flatten()
                        .any(|e| e.path().extension().is_some_and(|x| x == "json"))
                })
            },
        )
        .map_err(HarnessError::Sandbox)?;
        Ok(live)
    }

    /// Waits until `done` holds, failing at `deadline` or when Claude
    /// Code ends; `what` names what was waited for.
    fn until(
        &mut self,
        deadline: Instant,
        what: &str,
        mut done: impl FnMut(&mut Self) -> bool,
    ) -> Result<(), String> {
        loop {
            if done(self) {
                return Ok(());
            }
            if self.terminal.ended() {
                return Err(format!(
                    "Claude Code ended while the case waited for {what} (its screen is loop/screen.txt under a kept sandbox)"
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the case's time ran out waiting for {what} (its screen is loop/screen.txt under a kept sandbox)"
                ));
            }
            std::thread::park_timeout(POLL);
        }
    }

    /// Types `text`, then Enter.
    fn type_prompt(&mut self, text: &str) -> Result<(), HarnessError> {
        self.terminal
            .type_text(text)
            .map_err(io("type into claude"))?;
        // Keystroke pacing, not synchronisation: see the module's comment.
        std::thread::sleep(KEYSTROKE_GAP);
        self.terminal
            .type_text("\r")
            .map_err(io("type into claude"))
    }

    /// The runs after the ones handed to ticks, up to the first not yet
    /// ended.
    fn new_runs(&self) -> Vec<EngineRun> {
        (self.runs_seen + 1..)
            .map_while(|n| run_at(&self.dir, n))
            .collect()
    }

    /// Whether the tick's runs so far show `wait` is over.
    fn reached(&self, wait: &Wait) -> bool {
        reached(&self.new_runs(), wait)
    }

    /// Waits for the tick's prompt (pressing Enter again while a typed one
    /// is not submitted), then for its turn to end.
    fn await_tick(&mut self, deadline: Instant, typed: bool) -> Result<(), String> {
        let mut enter_at = Instant::now() + ENTER_AGAIN;
        self.until(deadline, "the tick's prompt to be submitted", |live| {
            if live.reached(&Wait::Prompt) {
                return true;
            }
            if typed && Instant::now() >= enter_at {
                enter_at = Instant::now() + ENTER_AGAIN;
                let _ = live.terminal.type_text("\r");
            }
            false
        })?;
        self.until(deadline, "the tick's turn to end (a Stop hook)", |live| {
            live.reached(&Wait::TurnEnd)
        })
    }

    /// Hands the tick its runs: copied to `tick_dir/engine/`, numbered
    /// from 1, and counted as seen.
    fn take_runs(&mut self, tick_dir: &Path) -> Vec<EngineRun> {
        let runs = self.new_runs();
        let (from, to) = (self.dir.join("engine"), tick_dir.join("engine"));
        let _ = std::fs::create_dir_all(&to);
        for i in 1..=runs.len() {
            for ext in ["args", "out", "err", "exit"] {
                let _ = std::fs::copy(
                    from.join(format!("{}.{ext}", self.runs_seen + i)),
                    to.join(format!("{i}.{ext}")),
                );
            }
        }
        self.runs_seen += runs.len();
        runs
    }

    /// Watches the session for `quiet` after its last tick: the first
    /// prompt submitted or model request made in that time, if any.
    fn watch_quiet(
        &mut self,
        (text, quiet): (&str, Duration),
        model: &CaseModel,
    ) -> Option<String> {
        let until = Instant::now() + quiet;
        let requests = model.log().len();
        let stirred = self.until(until, "", |live| {
            !live.new_runs().is_empty() || model.log().len() > requests
        });
        // Running out of time is the quiet held.
        stirred.is_ok().then(|| {
            let prompts = self
                .new_runs()
                .iter()
                .filter(|r| is_hook(r, "user-prompt-submit"))
                .count();
            format!(
                "within `quiet: {text}` of the last tick the session submitted {prompts} more prompt(s) and made {} more model request(s) (the model's log is model.log)",
                model.log().len() - requests
            )
        })
    }
}

/// Claude Code's configuration for an unattended interactive session, in
/// its config directory; that directory.
fn write_config(tick: &Tick<'_>) -> Result<PathBuf, HarnessError> {
    let sandbox = tick.run.sandbox;
    let config = sandbox
        .confinement
        .as_ref()
        .and_then(|c| c.env.iter().find(|(k, _)| k == "CLAUDE_CONFIG_DIR"))
        .map(|(_, v)| PathBuf::from(v))
        .ok_or_else(|| {
            HarnessError::Sandbox("the sandbox has no Claude Code config directory".to_owned())
        })?;
    let key_tail: String = {
        let chars: Vec<char> = MODEL_KEY.chars().collect();
        chars[chars.len().saturating_sub(20)..].iter().collect()
    };
    let mut projects = serde_json::Map::new();
    projects.insert(
        sandbox.project().display().to_string(),
        serde_json::json!({ "hasTrustDialogAccepted": true }),
    );
    let state = serde_json::json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "customApiKeyResponses": { "approved": [key_tail], "rejected": [] },
        "projects": projects,
    });
    let settings = serde_json::json!({ "permissions": { "allow": ALLOWED } });
    for (name, value) in [(".claude.json", state), ("settings.json", settings)] {
        std::fs::write(config.join(name), format!("{value:#}\n"))
            .map_err(io("write Claude Code's configuration"))?;
    }
    Ok(config)
}

impl RealLoop {
    /// Runs one tick: the session's next prompt and its turn.
    pub fn run_tick(&mut self, tick: Tick<'_>) -> Result<Ticked, HarnessError> {
        let model = real::model(&tick)?;
        let started = Instant::now();
        let dir = tick.run.sandbox.root.join("loop");
        std::fs::create_dir_all(&dir).map_err(io("create the session's directory"))?;
        std::fs::write(dir.join("now"), tick.run.clock.to_string())
            .map_err(io("write the engine's clock"))?;
        let typed = match &mut self.live {
            None => {
                let mut live = match Live::start(&tick, dir) {
                    Ok(live) => live,
                    Err(HarnessError::Sandbox(why)) => return Ok(failed(tick, why)),
                    Err(e) => return Err(e),
                };
                let prompt = tick.run.case.prompt.clone().unwrap_or_default();
                live.type_prompt(prompt.trim())?;
                self.live = Some(live);
                true
            }
            Some(live) => match &tick.run.spec.prompt {
                Some(p) => {
                    live.type_prompt(p.trim())?;
                    true
                }
                None => false,
            },
        };
        let Some(live) = self.live.as_mut() else {
            return Ok(failed(tick, "the session did not start".to_owned()));
        };
        let waited = live.await_tick(tick.run.deadline, typed);
        let runs = live.take_runs(&tick.prepared.dir);
        let requests = live.requests_seen..model.log().len();
        live.requests_seen = requests.end;
        let mut abort = waited.err();
        if abort.is_none() && tick.run.n == tick.run.case.ticks().len() {
            abort = quiet(&tick).and_then(|q| live.watch_quiet(q, model));
        }
        if abort.is_some() || tick.run.n == tick.run.case.ticks().len() {
            self.live = None;
        }
        let output = Output {
            wall: started.elapsed(),
            ..real_session::report(&runs)
        };
        let end = TickEnd::Exited(real_session::last_exit(&runs).unwrap_or(0));
        let abort = match abort {
            Some(why) => Some(why),
            None => tick.verdict(&end, &output.stderr, false),
        };
        let abort = verdict::and(abort, model.turns_verdict(tick.run.n));
        let mut record = tick.finish(end, output);
        record.model_requests = requests;
        record.from_hooks = true;
        Ok((record, abort))
    }
}

/// The case's `quiet:`, when it has one.
fn quiet<'a>(tick: &Tick<'a>) -> Option<(&'a str, Duration)> {
    let q = tick.run.case.quiet.as_ref()?;
    duration::parse(&q.value)
        .ok()
        .map(|d| (q.value.as_str(), d))
}

/// A tick whose session could not start.
fn failed(tick: Tick<'_>, why: String) -> Ticked {
    let record = tick.finish(TickEnd::Exited(0), Output::default());
    (record, Some(why))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(event: &str, out: &str) -> EngineRun {
        EngineRun {
            args: vec!["hook".to_owned(), event.to_owned()],
            stdout: out.to_owned(),
            stderr: String::new(),
            exit: Some(0),
        }
    }

    /// A turn that ends on a model-API error runs `StopFailure` and no
    /// `Stop`: the tick waited for the case's timeout before.
    #[test]
    fn a_turn_ends_at_a_stop_that_does_not_block_or_at_a_stop_failure() {
        let prompt = || run("user-prompt-submit", r#"{"hookSpecificOutput":{}}"#);
        let block = r#"{"decision":"block","reason":"r"}"#;
        assert!(!reached(&[], &Wait::Prompt));
        assert!(reached(&[prompt()], &Wait::Prompt));
        assert!(!reached(&[prompt()], &Wait::TurnEnd));
        let stopped_once = [prompt(), run("pre-tool-use", "{}"), run("stop", block)];
        assert!(!reached(&stopped_once, &Wait::TurnEnd));
        let stopped = [prompt(), run("stop", block), run("stop", "")];
        assert!(reached(&stopped, &Wait::TurnEnd));
        let failed = [prompt(), run("stop-failure", "")];
        assert!(reached(&failed, &Wait::TurnEnd));
        assert!(reached(&[run("user-prompt-submit", block)], &Wait::TurnEnd));
    }
}
