//! One tick, whichever driver runs it: what every driver is handed
//! ([`TickRun`]), the files it writes for the fake skill and the engine
//! ([`prepare`]: the script, the scripted user's answers, the barrier
//! FIFO), the engine's environment and command line, and how the way a
//! tick ended becomes its [`TickEnd`] and, when the case did not script
//! it, the message that stops the case ([`verdict`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use sdd_mocks::skill::{Action, Script, Tick};
use serde::Serialize;

use super::options::Options;
use super::record::{TickEnd, TickRecord};
use crate::loading::case::{Case, Kill, TickSpec};
use crate::world::bins::Engine;
use crate::world::error::HarnessError;
use crate::world::procs::{MARKER, Reaper};
use crate::world::sandbox::{Sandbox, TRACKER_TOKEN};
use crate::world::spawn::{self, Ended, Invocation};

/// How long the engine's `--lock=wait` polls sleep, in milliseconds.
const POLL_MS: &str = "10";

pub fn io(what: &str) -> impl FnOnce(std::io::Error) -> HarnessError + '_ {
    move |source| HarnessError::Io {
        what: what.to_owned(),
        source,
    }
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

fn count_lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
        .unwrap_or(0)
}

/// The engine's error lines, for a failure message.
fn error_lines(stderr: &str) -> String {
    let picked: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error:") || l.starts_with("help:"))
        .collect();
    let lines = if picked.is_empty() {
        let all: Vec<&str> = stderr.lines().collect();
        all[all.len().saturating_sub(10)..].to_vec()
    } else {
        picked
    };
    if lines.is_empty() {
        "(nothing on stderr)".to_owned()
    } else {
        lines.join("\n  ")
    }
}

/// The gate and question of the engine's exit-4 message.
pub fn unanswered_gate(stderr: &str) -> Option<(String, String)> {
    stderr.lines().find_map(|line| {
        let rest = line.strip_prefix("error: gate ")?;
        let (name, rest) = rest.split_once(" needs an answer and none could be had: ")?;
        let question = rest.strip_suffix(" — nothing was changed").unwrap_or(rest);
        Some((name.to_owned(), question.to_owned()))
    })
}

/// One tick's inputs, shared by both drivers.
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
}

/// The files a tick hands the fake skill and the engine: the script, the
/// scripted user's answers, and the barrier FIFO when the tick kills there.
#[derive(Debug)]
pub struct Prepared {
    pub dir: PathBuf,
    pub script: PathBuf,
    pub answers: PathBuf,
    pub fifo: Option<std::fs::File>,
}

/// Writes this tick's fake-skill script and answers file.
pub fn prepare(t: &TickRun<'_>) -> Result<Prepared, HarnessError> {
    let dir = t.sandbox.tick_dir(t.n)?;
    let (fifo, fifo_path) = match t.spec.kill.as_ref().map(|k| &k.value) {
        Some(Kill::Barrier | Kill::Interrupt) => {
            let path = dir.join("barrier.fifo");
            (
                Some(spawn::make_fifo(&path).map_err(io("make the barrier FIFO"))?),
                Some(path),
            )
        }
        _ => (None, None),
    };

    let mut entry = t
        .spec
        .skill
        .clone()
        .unwrap_or_else(|| Tick::new(Vec::new()));
    if let Some(path) = &fifo_path {
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
    let script_path = dir.join("script.yaml");
    let script_text = serde_saphyr::to_string(&script)
        .map_err(|e| HarnessError::Sandbox(format!("cannot write the fake skill's script: {e}")))?;
    std::fs::write(&script_path, script_text).map_err(io("write the fake skill's script"))?;

    let answers: Vec<AnswerLine<'_>> = t
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
    let answers_path = dir.join("answers.yaml");
    let answers_text = if answers.is_empty() {
        String::new()
    } else {
        serde_saphyr::to_string(&answers)
            .map_err(|e| HarnessError::Sandbox(format!("cannot write the answers: {e}")))?
    };
    std::fs::write(&answers_path, answers_text).map_err(io("write the answers file"))?;
    Ok(Prepared {
        dir,
        script: script_path,
        answers: answers_path,
        fifo,
    })
}

/// The number of history lines on disk.
pub fn history_len(t: &TickRun<'_>) -> usize {
    count_lines(
        &t.sandbox
            .state_dir()
            .join(format!("{}.history.jsonl", t.case.skill.as_str())),
    )
}

/// How the engine's run is steered: the barrier and what happens there,
/// and the live lock holder released when the engine prints a text.
pub fn control(t: &TickRun<'_>, fifo: Option<std::fs::File>) -> spawn::Control {
    spawn::Control {
        barrier: fifo,
        at_barrier: match t.spec.kill.as_ref().map(|k| &k.value) {
            Some(Kill::Interrupt) => spawn::AtBarrier::Interrupt,
            // A real agent is not the harness's to stop: the engine dies
            // alone, and its guard must stop the agent (checked below).
            _ if guards_real_agent(t) => spawn::AtBarrier::KillOnly,
            _ => spawn::AtBarrier::Kill,
        },
        release: t
            .spec
            .release_lock_when
            .as_ref()
            .zip(t.sandbox.live_lock)
            .map(|(text, pid)| (text.value.clone(), pid)),
    }
}

/// How a process the tick ran ended, as the case sees it.
pub fn tick_end(ended: &Ended, kill: Option<&Kill>) -> TickEnd {
    match (ended, kill) {
        (Ended::Exited(code), _) => TickEnd::Exited(*code),
        (Ended::Signaled(signal), Some(Kill::CrashPoint(point))) => TickEnd::Crashed {
            point: point.value.clone(),
            signal: *signal,
        },
        (Ended::Signaled(signal), _) => TickEnd::Signaled(*signal),
        (Ended::KilledAtBarrier, _) => TickEnd::KilledAtBarrier,
        (Ended::TimedOut, _) => TickEnd::TimedOut,
    }
}

/// Why a tick that ended as `end` stops the case, if it does.
pub fn verdict(
    t: &TickRun<'_>,
    end: &TickEnd,
    stderr: &str,
    barrier_missed: bool,
) -> Option<String> {
    let kill = t.spec.kill.as_ref().map(|k| &k.value);
    let expected_exit = t.spec.expect.exit.map(i32::from);
    match (end, kill) {
        (TickEnd::TimedOut, _) => Some(format!(
            "timed out: the case's time limit ({}) ran out during this tick, so the engine was killed; its stderr:\n  {}",
            humantime(t.timeout),
            error_lines(stderr)
        )),
        (_, Some(Kill::Barrier | Kill::Interrupt)) if barrier_missed => Some(format!(
            "the engine ended ({end}) before the fake skill reached its barrier; its stderr:\n  {}",
            error_lines(stderr)
        )),
        (TickEnd::Exited(code), Some(Kill::CrashPoint(point))) => Some(format!(
            "the engine exited {code} without reaching crash point {}",
            point.value
        )),
        (TickEnd::Exited(4), _) if expected_exit != Some(4) => {
            Some(match unanswered_gate(stderr) {
                Some((gate, question)) => format!(
                    "unexpected gate {gate} asked {question:?} — answer it in this tick's `answers:` (e.g. `- {{ gate: {gate}, answer: ... }}`) or expect `exit: 4`"
                ),
                None => format!(
                    "the engine exited 4 (a gate needs an answer):\n  {}",
                    error_lines(stderr)
                ),
            })
        }
        (TickEnd::Exited(code), _) if *code != 0 && *code != 3 && expected_exit != Some(*code) => {
            Some(format!(
                "the engine exited {code}:\n  {}",
                error_lines(stderr)
            ))
        }
        (TickEnd::Signaled(signal), _) => Some(format!(
            "the engine was killed by signal {signal}:\n  {}",
            error_lines(stderr)
        )),
        _ => None,
    }
}

fn humantime(d: Duration) -> String {
    let s = d.as_secs();
    if s.is_multiple_of(60) && s > 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// The environment every process of a tick gets (nothing is inherited):
/// the sandbox's PATH, HOME and TMPDIR, the frozen and simulated clock,
/// the tracker, the fake skill's script and mock qmd, and the case's
/// marker.
pub fn engine_env(t: &TickRun<'_>, script: &Path, reaper: &Reaper) -> Vec<(String, OsString)> {
    let sandbox = t.sandbox;
    let opts = t.opts;
    let mut path = OsString::from(sandbox.bin.as_os_str());
    if !opts.path.is_empty() {
        path.push(":");
        path.push(&opts.path);
    }
    let var = |k: &str, v: &dyn AsRef<std::ffi::OsStr>| (k.to_owned(), v.as_ref().to_owned());
    let mut env = vec![
        var("PATH", &path),
        var("HOME", &sandbox.home),
        var("TMPDIR", &sandbox.tmp),
        var("GIT_CONFIG_NOSYSTEM", &"1"),
        var("GIT_TERMINAL_PROMPT", &"0"),
        // A sandbox repository never needs `git maintenance run --auto`,
        // which git would start after every fetch and push (a tenth of
        // the suite's processes).
        var("GIT_CONFIG_COUNT", &"1"),
        var("GIT_CONFIG_KEY_0", &"maintenance.auto"),
        var("GIT_CONFIG_VALUE_0", &"false"),
        var(MARKER, &reaper.marker()),
        var("SDD_LOOP_NOW", &t.clock.to_string()),
        // The engine's waits (tracker back-off, retry-after, --lock=wait's
        // deadline) move its clock instead of taking real time.
        var("SDD_LOOP_CLOCK", &"simulated"),
        var("SDD_LOOP_TRACKER_URL", &sandbox.tracker.uri()),
        var("SDD_LOOP_REPO", &sandbox.tracker.repository()),
        var("SDD_LOOP_TRACKER_TOKEN", &TRACKER_TOKEN),
        var("SDD_LOOP_POLL_MS", &POLL_MS),
        var("FAKE_SKILL_SCRIPT", &script),
        var("FAKE_SKILL_COUNTER", &script.with_file_name("script.count")),
        var("MOCK_QMD_STATE", &sandbox.qmd_state),
        var("MOCK_QMD_FIXTURES", &opts.fixtures.qmd()),
    ];
    if let Some(Kill::CrashPoint(point)) = t.spec.kill.as_ref().map(|k| &k.value) {
        env.push(var("SDD_LOOP_CRASH_AT", &point.value));
    }
    env
}

/// The engine (or `--engine CMD`) with `args`, in the project.
pub fn engine_invocation(
    t: &TickRun<'_>,
    args: Vec<OsString>,
    env: Vec<(String, OsString)>,
) -> Invocation {
    let (program, args) = match &t.opts.binaries.engine {
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
    Invocation {
        program,
        args,
        env,
        cwd: t.sandbox.project().to_path_buf(),
    }
}

/// The command line and environment of a `sdd-loop <skill> --loop` tick
/// (the wrapper's and the agent drivers'): the case's and the tick's
/// arguments and the answers file; a driver adds how the work is done.
pub fn loop_command(
    t: &TickRun<'_>,
    prepared: &Prepared,
    reaper: &Reaper,
) -> (Vec<OsString>, Vec<(String, OsString)>) {
    let mut args: Vec<OsString> = vec![t.case.skill.as_str().into()];
    if t.case.loop_mode {
        args.push("--loop".into());
    }
    args.extend(t.case.args.iter().map(OsString::from));
    args.extend(t.spec.args.iter().map(OsString::from));
    args.push("--answers".into());
    args.push(prepared.answers.clone().into());
    (args, engine_env(t, &prepared.script, reaper))
}

/// Whether the engine runs a real agent CLI under its guard this tick.
fn guards_real_agent(t: &TickRun<'_>) -> bool {
    t.case.driver.real_cli().is_some() && t.case.driver.engine_drives_agent()
}

/// How long a real agent's processes may take to end once its engine was
/// killed (its guard stops them at once, SIGKILLs them 3 s later).
const STRAYS_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs the engine with `args` and `env` as this tick and records how it
/// ended, what it printed and the history lines it wrote.
pub fn run_engine(
    t: &TickRun<'_>,
    prepared: Prepared,
    args: Vec<OsString>,
    env: Vec<(String, OsString)>,
    reaper: &mut Reaper,
) -> Result<(TickRecord, Option<String>), HarnessError> {
    let kill = t.spec.kill.as_ref().map(|k| &k.value);
    let invocation = engine_invocation(t, args, env);
    let before = history_len(t);
    let ran = spawn::run(&invocation, control(t, prepared.fifo), t.deadline, reaper)
        .map_err(io("run the engine"))?;
    let mut strays = Vec::new();
    if matches!(kill, Some(Kill::CrashPoint(_) | Kill::Barrier)) {
        if guards_real_agent(t) {
            // A real agent must not outlive the engine that drove it,
            // aborted at a crash point or SIGKILLed at the barrier: its
            // guard stops it. Whatever is left after a while is named.
            strays = reaper.wait_for_strays(STRAYS_WITHIN);
        }
        // The aborted engine's skill may still be running: nothing of this
        // tick may outlive it.
        reaper.sweep();
    }
    let after = history_len(t);
    // Kept sandboxes (`--keep`) show each tick's output beside its inputs.
    let _ = std::fs::write(prepared.dir.join("stdout.txt"), &ran.stdout);
    let _ = std::fs::write(prepared.dir.join("stderr.txt"), &ran.stderr);
    let end = tick_end(&ran.ended, kill);
    let mut abort = verdict(t, &end, &ran.stderr, ran.barrier_missed);
    if !strays.is_empty() {
        let list: Vec<String> = strays
            .iter()
            .map(|(pid, cmd)| format!("  pid {pid}: {cmd}"))
            .collect();
        let text = format!(
            "{} process(es) of the agent outlived the killed engine by {} s:\n{}",
            strays.len(),
            STRAYS_WITHIN.as_secs(),
            list.join("\n")
        );
        abort = Some(match abort {
            Some(a) => format!("{a}\n  and {text}"),
            None => text,
        });
    }
    Ok((
        TickRecord {
            number: t.n,
            args: t.case.args.iter().chain(&t.spec.args).cloned().collect(),
            end,
            stdout: ran.stdout,
            stderr: ran.stderr,
            lines: before..after.max(before),
            model_requests: 0..0,
            wall: ran.wall,
            from_hooks: false,
        },
        abort,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unanswered_gate_is_read_from_the_engines_message() {
        let stderr = "warning: x\nerror: gate budget-escalation needs an answer and none could be had: Approaching PRs (1/1). Continue, raise ceiling, or stop? — nothing was changed\nhelp: answer it with --answer budget-escalation=<continue|raise|stop>\n";
        assert_eq!(
            unanswered_gate(stderr),
            Some((
                "budget-escalation".to_owned(),
                "Approaching PRs (1/1). Continue, raise ceiling, or stop?".to_owned()
            ))
        );
        assert_eq!(unanswered_gate("error: something else"), None);
    }
}
