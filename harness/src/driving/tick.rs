//! One tick, whichever driver runs it: [`Tick`] owns what every driver
//! does the same way — it writes the files the fake skill and the engine
//! are handed (the script, the scripted user's answers, the barrier
//! FIFO), builds the engine's environment (the one place that spells it:
//! the frozen clock, the tracker, the sandbox's PATH) and command line,
//! runs processes under the case's deadline and reaper, and finishes into
//! a [`TickRecord`], keeping the tick's output beside its inputs. Whether
//! the way a tick ended stops the case is [`super::verdict`]'s, pure.
//! A driver adds only what is its own.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use sdd_mocks::skill::{Action, Script};
use serde::Serialize;

use super::options::Options;
use super::record::{TickEnd, TickRecord};
use super::verdict;
use crate::loading::case::{Case, Kill, TickSpec};
use crate::world::bins::Engine;
use crate::world::error::HarnessError;
use crate::world::machines::{self, Change, Machine};
use crate::world::procs::{MARKER, Reaper};
use crate::world::sandbox::{Sandbox, TRACKER_TOKEN};
use crate::world::spawn::{self, Invocation, Ran};

/// How long the engine's `--lock=wait` polls sleep, in milliseconds.
const POLL_MS: &str = "10";

/// The topic the notification receiver is given as, after its address.
pub const NOTIFY_TOPIC: &str = "sdd-evals-topic";

/// How long a real agent's processes may take to end once its engine was
/// killed (its guard stops them at once, SIGKILLs them 3 s later).
const STRAYS_WITHIN: Duration = Duration::from_secs(10);

/// What a tick ran, and why it stops the case if it does.
pub type Ticked = (TickRecord, Option<String>);

/// An environment: names and values, nothing inherited.
pub type Env = Vec<(String, OsString)>;

pub fn io(what: &str) -> impl FnOnce(std::io::Error) -> HarnessError + '_ {
    move |source| HarnessError::Io {
        what: what.to_owned(),
        source,
    }
}

/// What the runner hands a tick: the case, this tick's entry and the
/// world it runs in.
#[derive(Debug)]
pub struct TickRun<'a> {
    pub case: &'a Case,
    pub spec: &'a TickSpec,
    /// 1-based.
    pub n: usize,
    pub sandbox: &'a Sandbox,
    pub clock: Timestamp,
    pub deadline: Instant,
    pub timeout: Duration,
    pub opts: &'a Options,
    /// The machine the tick runs on, in a case with machines.
    pub machine: Option<&'a Machine>,
    /// What changes in the world when the fake skill reaches its barrier
    /// (`at_barrier:`), the tick going on.
    pub at_barrier: Vec<Change>,
}

impl TickRun<'_> {
    /// Where the engine runs: the tick's machine's clone, or the project.
    pub fn project(&self) -> &Path {
        self.machine.map_or(self.sandbox.project(), |m| &m.project)
    }
}

/// The files a tick hands the fake skill and the engine: the script, the
/// scripted user's answers, and the barrier FIFO when the tick kills there.
#[derive(Debug)]
pub struct Prepared {
    pub dir: PathBuf,
    pub script: PathBuf,
    pub answers: PathBuf,
    /// The barrier FIFO's path, when the tick kills there.
    pub barrier: Option<PathBuf>,
    /// The barrier FIFO, until a process is steered by it.
    pub fifo: Option<std::fs::File>,
}

/// What a tick's processes said, in the order the case reads them.
#[derive(Debug, Default)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
}

/// One tick being run: its inputs, its prepared files and the reaper of
/// every process it starts.
#[derive(Debug)]
pub struct Tick<'a> {
    pub run: TickRun<'a>,
    pub prepared: Prepared,
    pub reaper: &'a mut Reaper,
    /// History lines on disk when the tick started.
    history_before: usize,
}

/// One answers-file entry, as the engine reads it.
#[derive(Debug, Serialize)]
struct AnswerLine<'a> {
    gate: &'a str,
    answer: &'a str,
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    matches: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iteration: Option<u64>,
}

impl<'a> Tick<'a> {
    /// Prepares tick `run`: its fake-skill script, answers file and
    /// barrier FIFO are written, the history's length noted.
    pub fn prepare(run: TickRun<'a>, reaper: &'a mut Reaper) -> Result<Self, HarnessError> {
        let dir = match run.machine {
            Some(m) => run.sandbox.machine_tick_dir(run.n, &m.name)?,
            None => run.sandbox.tick_dir(run.n)?,
        };
        let barrier = match run.spec.kill.as_ref().map(|k| &k.value) {
            Some(Kill::Barrier | Kill::Interrupt) => Some(dir.join("barrier.fifo")),
            _ if !run.at_barrier.is_empty() => Some(dir.join("barrier.fifo")),
            _ => None,
        };
        let fifo = barrier
            .as_deref()
            .map(spawn::make_fifo)
            .transpose()
            .map_err(io("make the barrier FIFO"))?;
        let prepared = Prepared {
            script: dir.join("script.yaml"),
            answers: dir.join("answers.yaml"),
            dir,
            barrier,
            fifo,
        };
        write_script(&run, &prepared)?;
        write_answers(&run, &prepared)?;
        let mut tick = Self {
            run,
            prepared,
            reaper,
            history_before: 0,
        };
        tick.history_before = tick.history_len();
        Ok(tick)
    }

    /// The kill the tick scripted, if any.
    pub fn kill(&self) -> Option<&'a Kill> {
        self.run.spec.kill.as_ref().map(|k| &k.value)
    }

    /// The environment every process of a tick gets (nothing is
    /// inherited): the sandbox's PATH, HOME and TMPDIR, the frozen and
    /// simulated clock, the tracker, the fake skill's script and mock qmd,
    /// the notification receiver's topic URL (`world.notify`), and the
    /// case's marker.
    pub fn env(&self) -> Env {
        let TickRun { sandbox, opts, .. } = self.run;
        let script = &self.prepared.script;
        let mut path = OsString::from(sandbox.bin.as_os_str());
        if !opts.path.is_empty() {
            path.push(":");
            path.push(&opts.path);
        }
        let machine = self.run.machine;
        let mut env = vec![
            var("PATH", &path),
            var("HOME", &machine.map_or(&sandbox.home, |m| &m.home)),
            var("TMPDIR", &machine.map_or(&sandbox.tmp, |m| &m.tmp)),
            var("GIT_CONFIG_NOSYSTEM", &"1"),
            var("GIT_TERMINAL_PROMPT", &"0"),
            // A sandbox repository never needs `git maintenance run --auto`,
            // which git would start after every fetch and push (a tenth of
            // the suite's processes).
            var("GIT_CONFIG_COUNT", &"1"),
            var("GIT_CONFIG_KEY_0", &"maintenance.auto"),
            var("GIT_CONFIG_VALUE_0", &"false"),
            var(MARKER, &self.reaper.marker()),
            match machine {
                // A machine's clock is its file, which the harness moves
                // during the tick too.
                Some(m) => var("SDD_LOOP_NOW_FILE", &m.clock),
                None => var("SDD_LOOP_NOW", &self.run.clock.to_string()),
            },
            // The engine's waits (tracker back-off, retry-after, --lock=wait's
            // deadline) move its clock instead of taking real time.
            var("SDD_LOOP_CLOCK", &"simulated"),
            var(
                "SDD_LOOP_TRACKER_URL",
                &match machine {
                    Some(m) if m.partitioned => sandbox.dead_url.clone(),
                    _ => sandbox.tracker.uri(),
                },
            ),
            var("SDD_LOOP_REPO", &sandbox.tracker.repository()),
            var("SDD_LOOP_TRACKER_TOKEN", &TRACKER_TOKEN),
            var("SDD_LOOP_POLL_MS", &POLL_MS),
            var("FAKE_SKILL_SCRIPT", script),
            var("FAKE_SKILL_COUNTER", &script.with_file_name("script.count")),
            var("MOCK_QMD_STATE", &sandbox.qmd_state),
            var("MOCK_QMD_FIXTURES", &opts.fixtures.qmd()),
        ];
        if let Some(receiver) = &sandbox.notify {
            env.push(var(
                "SDD_LOOP_NOTIFY",
                &format!("{}/{NOTIFY_TOPIC}", receiver.uri()),
            ));
        }
        if let Some(m) = machine {
            // A claim names its holder's machine: each machine its own.
            env.push(var("SDD_LOOP_HOST", &m.name));
        }
        if let Some(Kill::CrashPoint(point)) = self.kill() {
            env.push(var("SDD_LOOP_CRASH_AT", &point.value));
        }
        env
    }

    /// The engine (or `--engine CMD`) with `args`, in the project.
    pub fn engine(&self, args: Vec<OsString>, env: Env) -> Invocation {
        let (program, args) = match &self.run.opts.binaries.engine {
            Engine::Binary(path) => (path.clone(), args),
            Engine::Command(cmd) => {
                let mut sh: Vec<OsString> = vec![
                    "-c".into(),
                    format!("exec {cmd} \"$@\"").into(),
                    "sdd-engine".into(),
                ];
                sh.extend(args);
                (PathBuf::from("sh"), sh)
            }
        };
        self.in_project(program, args, env)
    }

    /// `program` with `args` and `env`, in the project.
    pub fn in_project(&self, program: PathBuf, args: Vec<OsString>, env: Env) -> Invocation {
        Invocation {
            program,
            args,
            env,
            cwd: self.run.project().to_path_buf(),
        }
    }

    /// `<skill>`, then `between`, the case's and the tick's arguments and
    /// the answers file: how every engine command of a tick starts.
    pub fn engine_args(&self, between: &[&str]) -> Vec<OsString> {
        let case = self.run.case;
        let mut args: Vec<OsString> = vec![case.skill.as_str().into()];
        args.extend(between.iter().map(OsString::from));
        args.extend(case.args.iter().map(OsString::from));
        args.extend(self.run.spec.args.iter().map(OsString::from));
        args.push("--answers".into());
        args.push(self.prepared.answers.clone().into());
        args
    }

    /// The command line of a `sdd-loop <skill> --loop` tick (the
    /// wrapper's and the agent drivers'); a driver adds how the work is
    /// done.
    pub fn loop_args(&self) -> Vec<OsString> {
        self.engine_args(if self.run.case.loop_mode {
            &["--loop"]
        } else {
            &[]
        })
    }

    /// How the tick's main process is steered: the barrier and what
    /// happens there, and the live lock holder released when the engine
    /// prints a text. The barrier FIFO goes with it.
    pub fn control(&mut self) -> spawn::Control {
        spawn::Control {
            barrier: self.prepared.fifo.take(),
            at_barrier: match self.kill() {
                Some(Kill::Interrupt) => spawn::AtBarrier::Interrupt,
                None if !self.run.at_barrier.is_empty() => spawn::AtBarrier::Continue,
                // A real agent is not the harness's to stop: the engine dies
                // alone, and its guard must stop the agent (checked below).
                _ if self.guards_real_agent() => spawn::AtBarrier::KillOnly,
                _ => spawn::AtBarrier::Kill,
            },
            release: self
                .run
                .spec
                .release_lock_when
                .as_ref()
                .zip(self.run.sandbox.live_lock)
                .map(|(text, pid)| (text.value.clone(), pid)),
            on_barrier: self.on_barrier(),
        }
    }

    /// The tick's `at_barrier:` changes, made on a copy of the machines
    /// while the tick runs (the runner makes them again on its own once
    /// the tick ended).
    fn on_barrier(&self) -> Option<spawn::OnBarrier> {
        if self.run.at_barrier.is_empty() {
            return None;
        }
        let changes = self.run.at_barrier.clone();
        let mut now = self.run.clock;
        let mut copy = self.run.sandbox.machines.clone();
        let dead = self.run.sandbox.dead_url.clone();
        Some(spawn::OnBarrier(Box::new(move || {
            let _ = machines::apply(&changes, &mut now, &mut copy, &dead);
        })))
    }

    /// Runs `invocation` under the case's deadline; `what` names it in an
    /// error.
    pub fn spawn(
        &mut self,
        invocation: &Invocation,
        control: spawn::Control,
        what: &str,
    ) -> Result<Ran, HarnessError> {
        spawn::run(invocation, control, self.run.deadline, self.reaper).map_err(io(what))
    }

    /// Runs the engine with `args` and `env` as this tick's one process
    /// and finishes the tick with how it ended and what it printed.
    pub fn run_engine(mut self, args: Vec<OsString>, env: Env) -> Result<Ticked, HarnessError> {
        let invocation = self.engine(args, env);
        let control = self.control();
        let ran = self.spawn(&invocation, control, "run the engine")?;
        let mut strays = Vec::new();
        if matches!(self.kill(), Some(Kill::CrashPoint(_) | Kill::Barrier)) {
            if self.guards_real_agent() {
                // A real agent must not outlive the engine that drove it,
                // aborted at a crash point or SIGKILLed at the barrier: its
                // guard stops it. Whatever is left after a while is named.
                strays = self.reaper.wait_for_strays(STRAYS_WITHIN);
            }
            // The aborted engine's skill may still be running: nothing of
            // this tick may outlive it.
            self.reaper.sweep();
        }
        let end = verdict::tick_end(&ran.ended, self.kill());
        let abort = verdict::and(
            self.verdict(&end, &ran.stderr, ran.barrier_missed),
            strays_verdict(&strays),
        );
        let output = Output {
            stdout: ran.stdout,
            stderr: ran.stderr,
            wall: ran.wall,
        };
        Ok((self.finish(end, output), abort))
    }

    /// Why this tick, ended as `end`, stops the case, if it does.
    pub fn verdict(&self, end: &TickEnd, stderr: &str, barrier_missed: bool) -> Option<String> {
        verdict::verdict(self.run.spec, self.run.timeout, end, stderr, barrier_missed)
    }

    /// The tick's record: how it ended, its output (kept beside its inputs
    /// for `--keep`) and the history lines it appended.
    pub fn finish(self, end: TickEnd, output: Output) -> TickRecord {
        let dir = &self.prepared.dir;
        let _ = std::fs::write(dir.join("stdout.txt"), &output.stdout);
        let _ = std::fs::write(dir.join("stderr.txt"), &output.stderr);
        let after = self.history_len();
        let TickRun { case, spec, n, .. } = self.run;
        TickRecord {
            number: n,
            args: case.args.iter().chain(&spec.args).cloned().collect(),
            end,
            stdout: output.stdout,
            stderr: output.stderr,
            lines: self.history_before..after.max(self.history_before),
            model_requests: 0..0,
            wall: output.wall,
            from_hooks: false,
            machine: self.run.machine.map(|m| m.name.clone()),
        }
    }

    /// The number of history lines on disk.
    fn history_len(&self) -> usize {
        let state = self
            .run
            .machine
            .map_or_else(|| self.run.sandbox.state_dir(), |m| m.state_dir());
        let path = state.join(format!("{}.history.jsonl", self.run.case.skill.as_str()));
        std::fs::read_to_string(path)
            .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
            .unwrap_or(0)
    }

    /// Whether the engine runs a real agent CLI under its guard this tick.
    fn guards_real_agent(&self) -> bool {
        let driver = self.run.case.driver;
        driver.real_cli().is_some() && driver.engine_drives_agent()
    }
}

fn var(k: &str, v: &dyn AsRef<std::ffi::OsStr>) -> (String, OsString) {
    (k.to_owned(), v.as_ref().to_owned())
}

/// The fake skill's script: the tick's `skill:` entry, its barrier at the
/// tick's FIFO.
fn write_script(run: &TickRun<'_>, prepared: &Prepared) -> Result<(), HarnessError> {
    let mut entry = run
        .spec
        .skill
        .clone()
        .unwrap_or_else(|| sdd_mocks::skill::Tick::new(Vec::new()));
    if let Some(path) = &prepared.barrier {
        for action in &mut entry.actions {
            if let Action::Barrier(p) = action {
                *p = path.display().to_string();
            }
        }
    }
    let script = Script {
        ticks: Vec::new(),
        default: Some(entry),
    };
    let text = serde_saphyr::to_string(&script)
        .map_err(|e| HarnessError::Sandbox(format!("cannot write the fake skill's script: {e}")))?;
    std::fs::write(&prepared.script, text).map_err(io("write the fake skill's script"))
}

/// The scripted user's answers, as the engine reads them.
fn write_answers(run: &TickRun<'_>, prepared: &Prepared) -> Result<(), HarnessError> {
    let answers: Vec<AnswerLine<'_>> = run
        .spec
        .answers
        .iter()
        .map(|a| AnswerLine {
            gate: &a.gate.value,
            answer: &a.answer.value,
            matches: a.matches.as_deref(),
            iteration: a.iteration,
        })
        .collect();
    let text = if answers.is_empty() {
        String::new()
    } else {
        serde_saphyr::to_string(&answers)
            .map_err(|e| HarnessError::Sandbox(format!("cannot write the answers: {e}")))?
    };
    std::fs::write(&prepared.answers, text).map_err(io("write the answers file"))
}

/// The agent's processes that outlived its killed engine, if any did.
fn strays_verdict(strays: &[(u32, String)]) -> Option<String> {
    if strays.is_empty() {
        return None;
    }
    let list: Vec<String> = strays
        .iter()
        .map(|(pid, cmd)| format!("  pid {pid}: {cmd}"))
        .collect();
    Some(format!(
        "{} process(es) of the agent outlived the killed engine by {} s:\n{}",
        strays.len(),
        STRAYS_WITHIN.as_secs(),
        list.join("\n")
    ))
}
