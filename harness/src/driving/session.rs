//! `driver: session`: the harness plays the agent of an in-session tick
//! (DESIGN §11) — the way `/loop /sdd:work --loop` runs in a Claude Code
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

use sdd_loop::state::protocol::{
    ENV_EVENTS, ENV_REQUEST, ENV_RESULT, EX_QMD_UNREACHABLE, QMD_SENTINEL, SkillResult,
};
use sdd_loop::transcript::project_slug;
use serde_json::{Value, json};

use super::tick::{self, TickRun};
use crate::driving::record::{TickEnd, TickRecord};
use crate::loading::case::Kill;
use crate::world::error::HarnessError;
use crate::world::procs::Reaper;
use crate::world::spawn::{self, Ended, Invocation, Ran};

/// `begin`: nothing for the agent to do this tick.
const NOTHING_TO_DO: i32 = 5;

/// The agent session across a case's ticks.
#[derive(Debug, Default)]
pub struct Agent {
    /// The stand-in session process holding in-session locks.
    holder: Option<u32>,
    /// Sessions started so far (names transcript files).
    sessions: u32,
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> HarnessError {
    move |source| HarnessError::Io {
        what: what.to_owned(),
        source,
    }
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

    /// Runs one in-session tick.
    pub(crate) fn run_tick(
        &mut self,
        t: &TickRun<'_>,
        reaper: &mut Reaper,
    ) -> Result<(TickRecord, Option<String>), HarnessError> {
        let prepared = tick::prepare(t)?;
        let kill = t.spec.kill.as_ref().map(|k| &k.value);
        let holder = self.session(reaper)?;
        let skill = t.case.skill.as_str();
        let env = tick::engine_env(t, &prepared.script, reaper);
        let before = tick::history_len(t);
        let mut log = Log::default();

        let mut args: Vec<OsString> = vec![skill.into(), "begin".into(), "--loop".into()];
        args.extend(t.case.args.iter().map(OsString::from));
        args.extend(t.spec.args.iter().map(OsString::from));
        args.extend([
            "--answers".into(),
            prepared.answers.clone().into(),
            "--json".into(),
            "--holder-pid".into(),
            holder.to_string().into(),
        ]);
        let begin = spawn::run(
            &tick::engine_invocation(t, args, env.clone()),
            spawn::Control::default(),
            t.deadline,
            reaper,
        )
        .map_err(io("run sdd-loop begin"))?;
        // With --json the report is on stderr and the summary on stdout.
        log.stdout.push_str(&begin.stderr);
        log.stderr.push_str(&begin.stdout);
        log.wall += begin.wall;
        let summary = last_json(&begin.stdout);
        let end = match &begin.ended {
            Ended::Exited(0) => {
                let summary = summary.ok_or_else(|| {
                    HarnessError::Sandbox(format!(
                        "sdd-loop begin exited 0 without a --json summary on stdout: {:?}",
                        begin.stdout
                    ))
                })?;
                self.work_and_end(t, &prepared, summary, holder, env, &mut log, reaper)?
            }
            Ended::Exited(NOTHING_TO_DO) => TickEnd::Exited(0),
            other => tick::tick_end(other, kill),
        };
        log.barrier_missed = matches!(kill, Some(Kill::Barrier)) && end != TickEnd::KilledAtBarrier;
        if kill.is_some() {
            // Whatever the kill hit, the session is gone with it.
            self.die();
            reaper.sweep();
        }
        let after = tick::history_len(t);
        let _ = std::fs::write(prepared.dir.join("stdout.txt"), &log.stdout);
        let _ = std::fs::write(prepared.dir.join("stderr.txt"), &log.stderr);
        let abort = tick::verdict(t, &end, &log.stderr, log.barrier_missed);
        Ok((
            TickRecord {
                number: t.n,
                args: t.case.args.iter().chain(&t.spec.args).cloned().collect(),
                end,
                stdout: log.stdout,
                stderr: log.stderr,
                lines: before..after.max(before),
                model_requests: 0..0,
                wall: log.wall,
                from_hooks: false,
            },
            abort,
        ))
    }

    /// The agent's work for the request `begin` returned, then `end`.
    #[expect(clippy::too_many_arguments, reason = "one tick's whole hand-over")]
    fn work_and_end(
        &mut self,
        t: &TickRun<'_>,
        prepared: &tick::Prepared,
        summary: Value,
        holder: u32,
        env: Vec<(String, OsString)>,
        log: &mut Log,
        reaper: &mut Reaper,
    ) -> Result<TickEnd, HarnessError> {
        let kill = t.spec.kill.as_ref().map(|k| &k.value);
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
        let iteration = summary["iteration"].as_u64().unwrap_or(0);

        let mut work_env = env.clone();
        work_env.extend([
            (ENV_REQUEST.to_owned(), request.into_os_string()),
            (ENV_EVENTS.to_owned(), events.into_os_string()),
            (ENV_RESULT.to_owned(), result.clone().into_os_string()),
        ]);
        let work = spawn::run(
            &Invocation {
                program: t.opts.binaries.fake_skill.clone(),
                args: Vec::new(),
                env: work_env,
                cwd: t.sandbox.project().to_path_buf(),
            },
            spawn::Control {
                barrier: prepared
                    .fifo
                    .as_ref()
                    .map(|f| f.try_clone())
                    .transpose()
                    .map_err(io("share the barrier FIFO"))?,
                ..spawn::Control::default()
            },
            t.deadline,
            reaper,
        )
        .map_err(io("run the session's work (the fake skill)"))?;
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
            t.case.skill.as_str().into(),
            "end".into(),
            "--iteration".into(),
            iteration.to_string().into(),
            "--holder-pid".into(),
            holder.to_string().into(),
        ];
        args.extend(self.report(t, &work, &result, &prepared.dir)?);
        let end = spawn::run(
            &tick::engine_invocation(t, args, env),
            spawn::Control::default(),
            t.deadline,
            reaper,
        )
        .map_err(io("run sdd-loop end"))?;
        log.stdout.push_str(&end.stdout);
        log.stderr.push_str(&end.stderr);
        log.wall += end.wall;
        Ok(tick::tick_end(&end.ended, kill))
    }

    /// What the agent tells `end`: its result file (with the spend moved
    /// into a transcript), and how the work went.
    fn report(
        &mut self,
        t: &TickRun<'_>,
        work: &Ran,
        result: &Path,
        tick_dir: &Path,
    ) -> Result<Vec<OsString>, HarnessError> {
        let mut args: Vec<OsString> = Vec::new();
        let parsed = std::fs::read(result)
            .ok()
            .and_then(|b| serde_json::from_slice::<SkillResult>(&b).ok());
        match parsed {
            Some(mut r) => {
                let usage = std::mem::take(&mut r.usage);
                self.transcript(t, &usage, tick_dir)?;
                let text = serde_json::to_vec_pretty(&r)
                    .map_err(|e| HarnessError::Sandbox(format!("cannot write the result: {e}")))?;
                std::fs::write(result, text).map_err(io("rewrite the session's result"))?;
                args.extend(["--result".into(), result.as_os_str().to_owned()]);
                args.extend(["--transcript".into(), "auto".into()]);
            }
            None => args.extend([
                "--error".into(),
                "the session's result is missing or not a skill result".into(),
            ]),
        }
        let qmd_line = work.stderr.lines().find(|l| l.contains(QMD_SENTINEL));
        match (&work.ended, qmd_line) {
            (Ended::Exited(0), _) => {}
            (Ended::Exited(EX_QMD_UNREACHABLE), line) | (Ended::Exited(_), line @ Some(_)) => {
                args.extend([
                    "--qmd-unreachable".into(),
                    line.unwrap_or(QMD_SENTINEL).into(),
                ]);
            }
            (other, _) => {
                let last = work.stderr.lines().rev().find(|l| !l.trim().is_empty());
                let how = match other {
                    Ended::Exited(code) => format!("the work failed (exit {code})"),
                    Ended::Signaled(sig) => format!("the work was killed by signal {sig}"),
                    _ => "the work ended abnormally".to_owned(),
                };
                args.extend([
                    "--error".into(),
                    match last {
                        Some(line) => format!("{how}: {line}"),
                        None => how,
                    }
                    .into(),
                ]);
            }
        }
        Ok(args)
    }

    /// Writes the tick's spend as Claude Code writes a session transcript
    /// under the sandbox's `HOME`, where `end --transcript auto` looks: one
    /// assistant entry per response (the first one streamed as two), the
    /// user turns between them and a torn last line. The clock is frozen
    /// within a tick, so the previous tick's file is moved to its tick
    /// directory, out of the window.
    fn transcript(
        &mut self,
        t: &TickRun<'_>,
        usage: &[sdd_loop::state::protocol::ModelUsage],
        tick_dir: &Path,
    ) -> Result<(), HarnessError> {
        let folder = t
            .sandbox
            .home
            .join(".claude/projects")
            .join(project_slug(t.sandbox.project()));
        std::fs::create_dir_all(&folder).map_err(io("create the transcript folder"))?;
        for old in std::fs::read_dir(&folder)
            .map_err(io("list the transcript folder"))?
            .flatten()
        {
            let _ = std::fs::rename(old.path(), tick_dir.join(old.file_name()));
        }
        let session = format!("00000000-0000-4000-8000-{:012}", self.sessions);
        let at = t.clock.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let cwd = t.sandbox.project().display().to_string();
        let entry = |kind: &str, extra: Value| {
            let mut e = json!({
                "parentUuid": null, "isSidechain": false, "userType": "external",
                "cwd": cwd, "sessionId": session, "version": "2.0.31",
                "gitBranch": "main", "type": kind,
                "uuid": format!("{kind}-{}", extra["uuid"].as_str().unwrap_or("0")),
                "timestamp": at,
            });
            if let (Some(map), Value::Object(more)) = (e.as_object_mut(), extra) {
                map.extend(more.into_iter().filter(|(k, _)| k != "uuid"));
            }
            e.to_string()
        };
        let mut lines = vec![entry(
            "user",
            json!({"uuid": "prompt", "message": {"role": "user", "content": "/sdd:work --loop"}}),
        )];
        for (i, u) in usage.iter().enumerate() {
            let id = format!("msg_t{}_{i}", t.n);
            let request = format!("req_t{}_{i}", t.n);
            let cached = u.cache_read_tokens + u.cache_write_tokens;
            let usage_json = |output: u64| {
                json!({
                    "input_tokens": u.tokens_in.saturating_sub(cached),
                    "cache_creation_input_tokens": u.cache_write_tokens,
                    "cache_read_input_tokens": u.cache_read_tokens,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": u.cache_write_tokens.saturating_sub(u.cache_write_1h_tokens),
                        "ephemeral_1h_input_tokens": u.cache_write_1h_tokens,
                    },
                    "output_tokens": output,
                    "service_tier": "standard",
                })
            };
            let message = |content: Value, output: u64| {
                json!({
                    "uuid": format!("{id}-{output}"),
                    "requestId": request,
                    "message": {
                        "id": id, "type": "message", "role": "assistant", "model": u.model,
                        "content": content, "stop_reason": null, "stop_sequence": null,
                        "usage": usage_json(output),
                    },
                })
            };
            if i == 0 {
                // Streamed: a thinking block first, with a partial count.
                lines.push(entry(
                    "assistant",
                    message(
                        json!([{"type": "thinking", "thinking": "…", "signature": "s"}]),
                        1,
                    ),
                ));
            }
            lines.push(entry(
                "assistant",
                message(json!([{"type": "text", "text": "Done."}]), u.tokens_out),
            ));
            lines.push(entry(
                "user",
                json!({"uuid": format!("{id}-result"), "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}}),
            ));
        }
        let mut text = lines.join("\n");
        text.push_str("\n{\"type\":\"assistant\",\"timestamp\":\"");
        let path = folder.join(format!("{session}.jsonl"));
        std::fs::write(&path, text).map_err(io("write the session transcript"))
    }
}

/// What a tick's three processes said, in order.
#[derive(Debug, Default)]
struct Log {
    stdout: String,
    stderr: String,
    wall: std::time::Duration,
    barrier_missed: bool,
}

/// The last line of `text` that is a JSON object.
fn last_json(text: &str) -> Option<Value> {
    text.lines().rev().find_map(|l| {
        serde_json::from_str::<Value>(l)
            .ok()
            .filter(Value::is_object)
    })
}
