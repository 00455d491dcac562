//! `driver: session`: the harness plays the agent of an in-session tick
//! — the way `/loop /sdd:work --loop` runs in a Claude Code
//! session, with no skill command for the engine to run.
//!
//! Each tick: `sdd-loop <skill> begin --loop --json --holder-pid H`, with
//! a stand-in session process `H` (a blocked `cat`) as the lock holder;
//! on `work`, the tick's scripted actions are done by running the fake
//! skill with the paths `begin` returned (the agent's own work: PRs,
//! comments, merges, progress events); its spend is written as a Claude
//! Code transcript under the sandbox's `HOME`; then
//! `sdd-loop <skill> end --iteration N --result … --transcript auto`.
//!
//! A `kill` ends the session: at a crash point of `begin` or `end`, or at
//! the fake skill's barrier (the session dies mid-work), the stand-in
//! holder is killed too, so the next tick finds a dead holder, reaps its
//! lock and recovers the iteration — and starts a new session.
//!
//! The tick's exit is `end`'s, or `begin`'s when the tick ended there
//! (`begin`'s 5, nothing to do this tick, reads as 0: the loop goes on).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sdd_loop::exit::NOTHING_TO_DO;
use sdd_loop::state::protocol::{
    ENV_EVENTS, ENV_REQUEST, ENV_RESULT, EX_QMD_UNREACHABLE, ModelUsage, QMD_SENTINEL, SkillResult,
};
use sdd_mocks::agent::transcript::Transcript;
use serde_json::Value;

use super::record::TickEnd;
use super::tick::{Env, Output, Tick, Ticked, io};
use super::verdict::tick_end;
use crate::loading::case::Kill;
use crate::world::error::HarnessError;
use crate::world::procs::Reaper;
use crate::world::spawn::{self, Ended, Ran};

/// The agent session across a case's ticks.
#[derive(Debug, Default)]
pub struct Agent {
    /// The stand-in session process holding in-session locks.
    holder: Option<u32>,
    /// Sessions started so far (names transcript files).
    sessions: u32,
}

/// What `begin` hands the agent: the protocol's files and the iteration.
#[derive(Debug)]
struct Begun {
    request: PathBuf,
    events: PathBuf,
    result: PathBuf,
    iteration: u64,
}

impl Agent {
    /// The live session, started when there is none.
    fn session(&mut self, reaper: &mut Reaper) -> Result<u32, HarnessError> {
        if let Some(pid) = self.holder {
            return Ok(pid);
        }
        let child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io("start the stand-in session process (`cat`)"))?;
        let pid = child.id();
        reaper.adopt(child);
        self.holder = Some(pid);
        self.sessions += 1;
        Ok(pid)
    }

    /// The session dies (a kill ended the tick).
    fn die(&mut self) {
        if let Some(pid) = self.holder.take() {
            Reaper::kill(pid);
        }
    }

    /// Runs one in-session tick: `begin`, then the work and `end` when
    /// there is work.
    pub(crate) fn run_tick(&mut self, mut tick: Tick<'_>) -> Result<Ticked, HarnessError> {
        let kill = tick.kill();
        let holder = self.session(tick.reaper)?;
        let env = tick.env();
        let mut log = Output::default();
        let begin = begin(&mut tick, holder, env.clone())?;
        // With --json the report is on stderr and the summary on stdout.
        log.stdout.push_str(&begin.stderr);
        log.stderr.push_str(&begin.stdout);
        log.wall += begin.wall;
        let end = match &begin.ended {
            Ended::Exited(0) => {
                let begun = begun(&begin.stdout)?;
                self.work_and_end(&mut tick, &begun, holder, env, &mut log)?
            }
            Ended::Exited(code) if *code == i32::from(NOTHING_TO_DO) => TickEnd::Exited(0),
            other => tick_end(other, kill),
        };
        let barrier_missed = matches!(kill, Some(Kill::Barrier)) && end != TickEnd::KilledAtBarrier;
        if kill.is_some() {
            // Whatever the kill hit, the session is gone with it.
            self.die();
            tick.reaper.sweep();
        }
        let abort = tick.verdict(&end, &log.stderr, barrier_missed);
        Ok((tick.finish(end, log), abort))
    }

    /// The agent's work for the iteration `begin` opened, then `end`.
    fn work_and_end(
        &mut self,
        tick: &mut Tick<'_>,
        begun: &Begun,
        holder: u32,
        env: Env,
        log: &mut Output,
    ) -> Result<TickEnd, HarnessError> {
        let work = work(
            tick,
            &begun.request,
            &begun.events,
            &begun.result,
            env.clone(),
        )?;
        // The agent's own output, logged beside the engine's (it feeds the
        // verdict and `stderr.txt`): the engine never saw it to redact it.
        let credentials = crate::world::redact::credentials();
        log.stderr.push_str(&credentials.apply(&work.stdout));
        log.stderr.push_str(&credentials.apply(&work.stderr));
        log.wall += work.wall;
        match &work.ended {
            Ended::KilledAtBarrier => return Ok(TickEnd::KilledAtBarrier),
            Ended::TimedOut => return Ok(TickEnd::TimedOut),
            _ => {}
        }
        let mut args: Vec<OsString> = vec![
            tick.run.case.skill.as_str().into(),
            "end".into(),
            "--iteration".into(),
            begun.iteration.to_string().into(),
            "--holder-pid".into(),
            holder.to_string().into(),
        ];
        args.extend(self.result_args(tick, &begun.result)?);
        args.extend(work_args(&work));
        let invocation = tick.engine(args, env);
        let end = tick.spawn(&invocation, spawn::Control::default(), "run sdd-loop end")?;
        log.stdout.push_str(&end.stdout);
        log.stderr.push_str(&end.stderr);
        log.wall += end.wall;
        Ok(tick_end(&end.ended, tick.kill()))
    }

    /// What the agent tells `end` of its result file, with the spend moved
    /// out of it into a transcript.
    fn result_args(
        &mut self,
        tick: &Tick<'_>,
        result: &Path,
    ) -> Result<Vec<OsString>, HarnessError> {
        let parsed = std::fs::read(result)
            .ok()
            .and_then(|b| serde_json::from_slice::<SkillResult>(&b).ok());
        let Some(mut r) = parsed else {
            return Ok(vec![
                "--error".into(),
                "the session's result is missing or not a skill result".into(),
            ]);
        };
        let usage = std::mem::take(&mut r.usage);
        self.transcript(tick, &usage)?;
        let text = serde_json::to_vec_pretty(&r)
            .map_err(|e| HarnessError::Sandbox(format!("cannot write the result: {e}")))?;
        std::fs::write(result, text).map_err(io("rewrite the session's result"))?;
        Ok(vec![
            "--result".into(),
            result.as_os_str().to_owned(),
            "--transcript".into(),
            "auto".into(),
        ])
    }

    /// Writes the tick's spend as Claude Code writes a session transcript
    /// under the sandbox's `HOME`, where `end --transcript auto` looks. The
    /// clock is frozen within a tick, so the previous tick's file is moved
    /// to its tick directory, out of the window.
    fn transcript(&self, tick: &Tick<'_>, usage: &[ModelUsage]) -> Result<(), HarnessError> {
        let transcript = Transcript {
            project: tick.run.sandbox.project(),
            session: self.sessions,
            tick: tick.run.n,
            at: tick.run.clock,
        };
        let folder = transcript.folder(&tick.run.sandbox.home);
        std::fs::create_dir_all(&folder).map_err(io("create the transcript folder"))?;
        for old in std::fs::read_dir(&folder)
            .map_err(io("list the transcript folder"))?
            .flatten()
        {
            let _ = std::fs::rename(old.path(), tick.prepared.dir.join(old.file_name()));
        }
        std::fs::write(
            folder.join(transcript.file_name()),
            transcript.render(usage),
        )
        .map_err(io("write the session transcript"))
    }
}

/// `sdd-loop <skill> begin --loop --json --holder-pid H`.
fn begin(tick: &mut Tick<'_>, holder: u32, env: Env) -> Result<Ran, HarnessError> {
    let mut args = tick.engine_args(&["begin", "--loop"]);
    args.extend([
        "--json".into(),
        "--holder-pid".into(),
        holder.to_string().into(),
    ]);
    let invocation = tick.engine(args, env);
    tick.spawn(&invocation, spawn::Control::default(), "run sdd-loop begin")
}

/// What `begin`'s `--json` summary (its last JSON line on stdout) hands
/// the agent.
fn begun(stdout: &str) -> Result<Begun, HarnessError> {
    let summary = last_json(stdout).ok_or_else(|| {
        HarnessError::Sandbox(format!(
            "sdd-loop begin exited 0 without a --json summary on stdout: {stdout:?}"
        ))
    })?;
    let path = |key: &str| summary[key].as_str().map(PathBuf::from);
    let (Some(request), Some(events), Some(result)) = (
        path("request_file"),
        path("events_file"),
        path("result_file"),
    ) else {
        return Err(HarnessError::Sandbox(format!(
            "sdd-loop begin's summary lacks request_file, events_file or result_file: {summary}"
        )));
    };
    Ok(Begun {
        request,
        events,
        result,
        iteration: summary["iteration"].as_u64().unwrap_or(0),
    })
}

/// The agent's work: the fake skill, run with the paths of the tick's
/// exchange (the ones `begin` returned, or that the hooks opened), at the
/// case's barrier when it has one.
pub(super) fn work(
    tick: &mut Tick<'_>,
    request: &Path,
    events: &Path,
    result: &Path,
    mut env: Env,
) -> Result<Ran, HarnessError> {
    env.extend([
        (ENV_REQUEST.to_owned(), request.into()),
        (ENV_EVENTS.to_owned(), events.into()),
        (ENV_RESULT.to_owned(), result.into()),
    ]);
    let invocation = tick.in_project(tick.run.opts.binaries.fake_skill.clone(), Vec::new(), env);
    let control = spawn::Control {
        barrier: tick
            .prepared
            .fifo
            .as_ref()
            .map(|f| f.try_clone())
            .transpose()
            .map_err(io("share the barrier FIFO"))?,
        ..spawn::Control::default()
    };
    tick.spawn(
        &invocation,
        control,
        "run the session's work (the fake skill)",
    )
}

/// What the agent tells `end` of how the work went.
fn work_args(work: &Ran) -> Vec<OsString> {
    let qmd_line = work.stderr.lines().find(|l| l.contains(QMD_SENTINEL));
    match (&work.ended, qmd_line) {
        (Ended::Exited(0), _) => Vec::new(),
        (Ended::Exited(EX_QMD_UNREACHABLE), line) | (Ended::Exited(_), line @ Some(_)) => vec![
            "--qmd-unreachable".into(),
            line.unwrap_or(QMD_SENTINEL).into(),
        ],
        (other, _) => {
            let last = work.stderr.lines().rev().find(|l| !l.trim().is_empty());
            let how = match other {
                Ended::Exited(code) => format!("the work failed (exit {code})"),
                Ended::Signaled(sig) => format!("the work was killed by signal {sig}"),
                _ => "the work ended abnormally".to_owned(),
            };
            vec![
                "--error".into(),
                match last {
                    Some(line) => format!("{how}: {line}"),
                    None => how,
                }
                .into(),
            ]
        }
    }
}

/// The last line of `text` that is a JSON object.
fn last_json(text: &str) -> Option<Value> {
    text.lines().rev().find_map(|l| {
        serde_json::from_str::<Value>(l)
            .ok()
            .filter(Value::is_object)
    })
}
