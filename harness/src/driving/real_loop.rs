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
//! With `machines:`, each machine runs a session of its own, in its clone
//! with its own HOME, clock and Claude Code config directory (its
//! `home/.claude`), all typed the case's prompt at once; a tick names its
//! machine, and a machine's ticks are its session's prompts in order. The
//! sessions claim in the case's order: every `begin` their hooks run
//! pauses once it has read the backlog (the engine's pause point
//! `after-backlog`, FIFOs of the session's own), and the ticks go in
//! rounds — a round is a run of consecutive ticks on different machines
//! ([`super::rounds`]). Once every tick of a round has read its backlog (or its
//! prompt's hook ended without pausing), each is let go in the case's
//! order when the turn of the one before it has ended. So every fire of a
//! round sees the backlog as it was before any of them claimed, each
//! one's claims meet those left by the ones before it, and the sessions'
//! turns come one at a time: the case's one scripted model serves them in
//! order, as it serves one session, and a run is the same every time.
//!
//! The configuration Claude Code starts with is written into its config
//! directory (`CLAUDE_CONFIG_DIR`, in the sandbox) as measured in
//! `reference/real-agents.md`: onboarding done, the scripted model's key
//! approved, the project trusted, and `Bash`, `Skill`, `ScheduleWakeup`,
//! `CronCreate` and `CronDelete` allowed without asking, and with
//! `statusline: true` the statusLine `sdd-loop statusline`. A typed prompt
//! is its text, then Enter a second later (text and Enter in one write
//! would be read as a paste, the Enter as a new line); Enter is pressed
//! again while no prompt is submitted.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::real;
use super::real_session::{self, EngineRun, TICK_DIR_VAR};
use super::record::TickEnd;
use super::rounds::{Hold, rounds};
use super::tick::{Env, Output, Tick, TickRun, Ticked, io};
use super::verdict;
use crate::loading::case::TickSpec;
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

/// The interactive sessions across a case's ticks.
#[derive(Debug, Default)]
pub struct RealLoop {
    /// The running sessions, by machine (`""`: the project's one session).
    sessions: BTreeMap<String, Live>,
    /// Model requests logged by the end of the last tick: the sessions'
    /// turns come one at a time, so the requests since are this tick's.
    requests_seen: usize,
}

/// A running session.
#[derive(Debug)]
struct Live {
    terminal: Terminal,
    /// `loop/` in the sandbox (a machine's: `machines/NAME/loop/`): the
    /// session's engine runs, clock and screen.
    dir: PathBuf,
    /// `dir` as a failure names it, relative to the sandbox.
    shown: String,
    /// Engine runs handed to ticks so far.
    runs_seen: usize,
    /// A machine's session: where its engines pause once they have read
    /// the backlog.
    hold: Option<Hold>,
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

/// The machine a tick names (`""` without one).
fn machine_of(spec: &TickSpec) -> &str {
    spec.machine.as_ref().map_or("", |m| m.value.as_str())
}

impl Live {
    /// Starts Claude Code on a pseudo-terminal for `tick`'s case (on its
    /// machine, if it names one), its runs kept in `dir` (named `shown`
    /// in a failure), `extra` added to its environment, and waits until
    /// its session has started.
    fn start(
        tick: &Tick<'_>,
        (dir, shown): (PathBuf, String),
        hold: Option<Hold>,
        extra: Env,
    ) -> Result<Self, HarnessError> {
        let (_, exe) = real::cli(tick)?;
        let config = write_config(tick)?;
        let mut env = tick.env();
        env.extend(real::cli_env(tick));
        env.push((TICK_DIR_VAR.to_owned(), dir.clone().into()));
        env.extend(extra);
        env.extend(hold.iter().flat_map(Hold::env));
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
            shown,
            runs_seen: 0,
            hold,
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
            self.alive(deadline, what)?;
            std::thread::park_timeout(POLL);
        }
    }

    /// Why waiting for `what` is over, if it is: Claude Code ended, or
    /// `deadline` passed.
    fn alive(&mut self, deadline: Instant, what: &str) -> Result<(), String> {
        if self.terminal.ended() {
            return Err(format!(
                "Claude Code ended while the case waited for {what} (its screen is {}/screen.txt under a kept sandbox)",
                self.shown
            ));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the case's time ran out waiting for {what} (its screen is {}/screen.txt under a kept sandbox)",
                self.shown
            ));
        }
        Ok(())
    }

    /// Waits until the session's screen shows `text` — a dialog of
    /// Claude Code's own — then presses Escape to close it.
    fn dismiss(&mut self, deadline: Instant, text: &str) -> Result<(), String> {
        let screen = self.dir.join("screen.txt");
        let what = format!("the screen to show {text:?} (`dismiss:`)");
        self.until(deadline, &what, |_| {
            std::fs::read(&screen).is_ok_and(|b| String::from_utf8_lossy(&b).contains(text))
        })?;
        self.type_text("\x1b")
            .map_err(|e| format!("could not press Escape: {e}"))
    }

    /// Types `text`, then Enter.
    fn type_prompt(&mut self, text: &str) -> Result<(), HarnessError> {
        self.type_text(text)?;
        // Keystroke pacing, not synchronisation: see the module's comment.
        std::thread::sleep(KEYSTROKE_GAP);
        self.type_text("\r")
    }

    /// Types `text` as it is.
    fn type_text(&mut self, text: &str) -> Result<(), HarnessError> {
        self.terminal
            .type_text(text)
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

    /// Whether an engine of the session is paused, waiting to be let go.
    fn holding(&mut self) -> bool {
        self.hold.as_mut().is_some_and(Hold::holding)
    }

    /// Whether the session's next prompt has come: its engine paused
    /// having read the backlog, or its prompt's hook ended.
    fn arrived(&mut self) -> bool {
        self.holding() || self.reached(&Wait::Prompt)
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
}

/// Watches the sessions for `quiet` after the last tick: the prompts
/// submitted and model requests made in that time, if any were. Every
/// session ended, nothing more can come.
fn watch_quiet(
    sessions: &mut BTreeMap<String, Live>,
    (text, quiet): (&str, Duration),
    model: &CaseModel,
) -> Option<String> {
    let until = Instant::now() + quiet;
    let requests = model.log().len();
    loop {
        let stirred = sessions
            .values_mut()
            .any(|live| live.holding() || !live.new_runs().is_empty());
        if stirred || model.log().len() > requests {
            break;
        }
        // Running out of time is the quiet held.
        if Instant::now() >= until || sessions.values_mut().all(|l| l.terminal.ended()) {
            return None;
        }
        std::thread::park_timeout(POLL);
    }
    let prompts: usize = sessions
        .values_mut()
        .map(|live| {
            let held = usize::from(live.holding());
            let hooks = live
                .new_runs()
                .iter()
                .filter(|r| is_hook(r, "user-prompt-submit"))
                .count();
            held + hooks
        })
        .sum();
    Some(format!(
        "within `quiet: {text}` of the last tick the session submitted {prompts} more prompt(s) and made {} more model request(s) (the model's log is model.log)",
        model.log().len() - requests
    ))
}

/// Claude Code's config directory for `tick`'s session: the sandbox's
/// (`CLAUDE_CONFIG_DIR` of the confinement), or a machine's own
/// `home/.claude`.
fn config_dir(tick: &Tick<'_>) -> Result<PathBuf, HarnessError> {
    if let Some(m) = tick.run.machine {
        let dir = m.home.join(".claude");
        std::fs::create_dir_all(&dir).map_err(io("create Claude Code's config directory"))?;
        return Ok(dir);
    }
    tick.run
        .sandbox
        .confinement
        .as_ref()
        .and_then(|c| c.env.iter().find(|(k, _)| k == "CLAUDE_CONFIG_DIR"))
        .map(|(_, v)| PathBuf::from(v))
        .ok_or_else(|| {
            HarnessError::Sandbox("the sandbox has no Claude Code config directory".to_owned())
        })
}

/// Claude Code's configuration for an unattended interactive session, in
/// its config directory; that directory.
fn write_config(tick: &Tick<'_>) -> Result<PathBuf, HarnessError> {
    let config = config_dir(tick)?;
    let key_tail: String = {
        let chars: Vec<char> = MODEL_KEY.chars().collect();
        chars[chars.len().saturating_sub(20)..].iter().collect()
    };
    let mut projects = serde_json::Map::new();
    projects.insert(
        tick.run.project().display().to_string(),
        serde_json::json!({ "hasTrustDialogAccepted": true }),
    );
    let state = serde_json::json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "customApiKeyResponses": { "approved": [key_tail], "rejected": [] },
        "projects": projects,
    });
    let mut settings = serde_json::json!({ "permissions": { "allow": ALLOWED } });
    if tick.run.case.statusline {
        // The sandbox's `sdd-loop`: it reads the case's clock.
        settings["statusLine"] =
            serde_json::json!({ "type": "command", "command": "sdd-loop statusline" });
    }
    for (name, value) in [(".claude.json", state), ("settings.json", settings)] {
        std::fs::write(config.join(name), format!("{value:#}\n"))
            .map_err(io("write Claude Code's configuration"))?;
    }
    Ok(config)
}

impl RealLoop {
    /// Runs one tick: its session's next prompt and its turn.
    pub fn run_tick(&mut self, mut tick: Tick<'_>) -> Result<Ticked, HarnessError> {
        let model = real::model(&tick)?;
        let started = Instant::now();
        let waited = match tick.run.machine {
            None => self.next_prompt(&tick),
            Some(_) => self.next_in_round(&mut tick),
        };
        let waited = match waited {
            Ok(waited) => waited,
            // A session that could not start.
            Err(HarnessError::Sandbox(why)) => return Ok(failed(tick, why)),
            Err(e) => return Err(e),
        };
        let Some(live) = self.sessions.get_mut(machine_of(tick.run.spec)) else {
            return Ok(failed(tick, "the session did not start".to_owned()));
        };
        let runs = live.take_runs(&tick.prepared.dir);
        let requests = self.requests_seen..model.log().len();
        self.requests_seen = requests.end;
        let mut abort = waited.err();
        let last = tick.run.n == tick.run.case.ticks().len();
        if abort.is_none() && last {
            abort = quiet(&tick).and_then(|q| watch_quiet(&mut self.sessions, q, model));
        }
        if abort.is_some() || last {
            self.sessions.clear();
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

    /// The one session's next prompt: the session started and the case's
    /// prompt typed at the first tick, a tick's `prompt:` typed later;
    /// then its turn waited for.
    fn next_prompt(&mut self, tick: &Tick<'_>) -> Result<Result<(), String>, HarnessError> {
        let dir = tick.run.sandbox.root.join("loop");
        std::fs::create_dir_all(&dir).map_err(io("create the session's directory"))?;
        std::fs::write(dir.join("now"), tick.run.clock.to_string())
            .map_err(io("write the engine's clock"))?;
        let typed = match self.sessions.get_mut("") {
            None => {
                let now = vec![(NOW_FILE_VAR.to_owned(), dir.join("now").into())];
                let mut live = Live::start(tick, (dir, "loop".to_owned()), None, now)?;
                let prompt = tick.run.case.prompt.clone().unwrap_or_default();
                live.type_prompt(prompt.trim())?;
                self.sessions.insert(String::new(), live);
                true
            }
            Some(live) => {
                if let Some(d) = &tick.run.spec.dismiss
                    && let Err(why) = live.dismiss(tick.run.deadline, &d.value)
                {
                    return Ok(Err(why));
                }
                match &tick.run.spec.prompt {
                    Some(p) => {
                        live.type_prompt(p.trim())?;
                        true
                    }
                    None => false,
                }
            }
        };
        let live = self
            .sessions
            .get_mut("")
            .ok_or_else(|| HarnessError::Sandbox("the session did not start".to_owned()))?;
        Ok(live.await_tick(tick.run.deadline, typed))
    }

    /// A machine's next prompt: at the first tick of a round, every
    /// session of the round started or typed to, and waited for until
    /// each has read its backlog; then this tick's engine let go, and its
    /// turn waited for.
    fn next_in_round(&mut self, tick: &mut Tick<'_>) -> Result<Result<(), String>, HarnessError> {
        let case = tick.run.case;
        let on: Vec<&str> = case.ticks().iter().map(machine_of).collect();
        let round = rounds(&on)
            .into_iter()
            .find(|r| r.contains(&tick.run.n))
            .unwrap_or(tick.run.n..tick.run.n + 1);
        if round.start == tick.run.n
            && let Err(why) = self.begin_round(tick, round)?
        {
            return Ok(Err(why));
        }
        let name = machine_of(tick.run.spec);
        let live = self.sessions.get_mut(name).ok_or_else(|| {
            HarnessError::Sandbox(format!("machine {name}'s session did not start"))
        })?;
        if let Some(hold) = &mut live.hold {
            hold.let_go()?;
        }
        Ok(live.await_tick(tick.run.deadline, false))
    }

    /// The start of a round: each of its ticks' sessions started and
    /// typed the case's prompt (a machine's first tick), or typed the
    /// tick's own `prompt:`, all at once; then every one waited for until
    /// its tick has come (pressing Enter again while a typed prompt is not
    /// submitted).
    fn begin_round(
        &mut self,
        tick: &mut Tick<'_>,
        round: Range<usize>,
    ) -> Result<Result<(), String>, HarnessError> {
        let run = &tick.run;
        let (case, deadline) = (run.case, run.deadline);
        let mut typed: Vec<(&str, String)> = Vec::new();
        for n in round.clone() {
            let spec = &case.ticks()[n - 1];
            let name = machine_of(spec);
            if !self.sessions.contains_key(name) {
                let live = start_on(tick, n)?;
                self.sessions.insert(name.to_owned(), live);
                typed.push((name, case.prompt.clone().unwrap_or_default()));
            } else if let Some(p) = &spec.prompt {
                typed.push((name, p.clone()));
            }
        }
        for (name, text) in &typed {
            if let Some(live) = self.sessions.get_mut(*name) {
                live.type_text(text.trim())?;
            }
        }
        // Keystroke pacing, not synchronisation: see the module's comment.
        std::thread::sleep(KEYSTROKE_GAP);
        for (name, _) in &typed {
            if let Some(live) = self.sessions.get_mut(*name) {
                live.type_text("\r")?;
            }
        }
        let names: Vec<&str> = round.map(|n| machine_of(&case.ticks()[n - 1])).collect();
        let mut enter_at = Instant::now() + ENTER_AGAIN;
        loop {
            let mut waiting = Vec::new();
            for name in &names {
                let Some(live) = self.sessions.get_mut(*name) else {
                    continue;
                };
                if live.arrived() {
                    continue;
                }
                let what = format!("machine {name}'s prompt of this round");
                if let Err(why) = live.alive(deadline, &what) {
                    return Ok(Err(why));
                }
                if typed.iter().any(|(t, _)| t == name) && Instant::now() >= enter_at {
                    let _ = live.terminal.type_text("\r");
                }
                waiting.push(*name);
            }
            if waiting.is_empty() {
                return Ok(Ok(()));
            }
            if Instant::now() >= enter_at {
                enter_at = Instant::now() + ENTER_AGAIN;
            }
            std::thread::park_timeout(POLL);
        }
    }
}

/// Starts the session of tick `n`'s machine, from the tick being run.
fn start_on(tick: &mut Tick<'_>, n: usize) -> Result<Live, HarnessError> {
    let run = &tick.run;
    let case = run.case;
    let spec = &case.ticks()[n - 1];
    let name = machine_of(spec);
    let machine = run.sandbox.machine(name).ok_or_else(|| {
        HarnessError::Sandbox(format!("tick {n} names machine {name}, which is not built"))
    })?;
    let its = TickRun {
        case,
        spec,
        n,
        sandbox: run.sandbox,
        clock: run.clock,
        deadline: run.deadline,
        timeout: run.timeout,
        opts: run.opts,
        machine: Some(machine),
        at_barrier: Vec::new(),
    };
    let shown = format!("machines/{name}/loop");
    let dir = run.sandbox.root.join(&shown);
    std::fs::create_dir_all(&dir).map_err(io("create the session's directory"))?;
    let hold = Hold::make(dir.join("pause"))?;
    let its = Tick::prepare(its, &mut *tick.reaper)?;
    let config = vec![("CLAUDE_CONFIG_DIR".to_owned(), config_dir(&its)?.into())];
    Live::start(&its, (dir, shown), Some(hold), config)
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
