//! Runs one case: build the sandbox, then for each tick apply the world
//! events and hand the tick to its driver ([`super::wrapper`],
//! [`super::agent`], [`super::session`], [`super::real`] or
//! [`super::real_session`]), which runs the real engine as
//! a subprocess (killing it where the case says) and records what
//! happened; finally capture history, budget.json, the project's files and
//! the tracker's journal into a [`RunRecord`].
//!
//! A tick that ends in a way the case did not script stops the run with a
//! message naming the case and the tick: an unexpected gate (exit 4, with
//! the gate and its question), an error exit (with the engine's `error:`
//! lines), a barrier or crash point never reached, or the case's time
//! limit. Every process started is killed when the run ends
//! ([`crate::world::procs::Reaper`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use sdd_loop::os::liveness::{self, OsProbe};
use sdd_mocks::git;
use serde_json::Value;

use super::at_once;
use super::driver::TickDriver;
use super::options::Options;
use super::phases::{Lap, Phases};
use super::record::{MachineRecord, PullRecord, RunRecord};
use super::tick::{Tick, TickRun};
use crate::loading::case::{self, Case, Event, TickSpec};
use crate::loading::duration;
use crate::world::edit;
use crate::world::error::HarnessError;
use crate::world::machines::{self, Change};
use crate::world::notify;
use crate::world::procs::Reaper;
use crate::world::redact::Redactor;
use crate::world::sandbox::Sandbox;

/// A finished run.
#[derive(Debug)]
pub struct CaseRun {
    pub record: RunRecord,
    pub redactor: Redactor,
    /// The sandbox, when it was kept.
    pub kept: Option<PathBuf>,
    /// From the start to the sandbox's removal.
    pub wall: Duration,
    pub phases: Phases,
}

static RUNS: AtomicU64 = AtomicU64::new(0);

/// Runs `case`.
pub fn run(case: &Case, opts: &Options) -> Result<CaseRun, HarnessError> {
    let started = Instant::now();
    let start_text = case
        .world
        .start
        .as_ref()
        .map_or(case::DEFAULT_START, |s| s.value.as_str());
    let start: Timestamp = start_text
        .parse()
        .map_err(|e| HarnessError::Sandbox(format!("start {start_text}: {e}")))?;
    let timeout_text = case
        .timeout
        .as_ref()
        .map_or(case::DEFAULT_TIMEOUT, |t| t.value.as_str());
    let timeout = duration::parse(timeout_text).map_err(HarnessError::Sandbox)?;
    let deadline = started + timeout;

    let marker = format!(
        "{}-{}-{}",
        case.id(),
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    );
    let mut reaper = Reaper::new(marker);
    let mut phases = Phases::default();
    let mut lap = Lap::start();
    let mut sandbox = Sandbox::build(
        case,
        &opts.fixtures,
        &opts.binaries,
        start,
        &mut reaper,
        opts.sandbox_parent.as_deref(),
        opts.worlds.as_deref(),
    )?;
    phases.world = lap.lap();
    let mut ticks = Vec::new();
    let mut aborted = None;
    let mut clock = start;
    let mut driver = TickDriver::for_case(case);
    for (i, spec) in case.ticks().iter().enumerate() {
        let n = i + 1;
        let prefix = format!("case {}, tick {n}", case.id());
        let events = apply_events(spec, &mut sandbox, &mut clock, case)
            .and_then(|()| live_changes(&spec.at_barrier));
        phases.events += lap.lap();
        let at_barrier = match events {
            Ok(changes) => changes,
            Err(msg) => {
                aborted = Some(format!("{prefix}: {msg}"));
                break;
            }
        };
        let run = |machine| TickRun {
            case,
            spec,
            n,
            sandbox: &sandbox,
            clock,
            deadline,
            timeout,
            opts,
            machine,
            at_barrier: at_barrier.clone(),
        };
        let ran = if spec.machines.is_empty() {
            let machine = spec
                .machine
                .as_ref()
                .and_then(|m| sandbox.machine(&m.value));
            vec![driver.run(Tick::prepare(run(machine), &mut reaper)?)?]
        } else {
            let on: Vec<_> = spec
                .machines
                .iter()
                .filter_map(|m| sandbox.machine(&m.value))
                .map(|m| run(Some(m)))
                .collect();
            let each = if case.driver == crate::loading::case::Driver::RealSession {
                at_once::Each::RealSession
            } else {
                at_once::Each::Wrapper
            };
            at_once::run(on, &reaper, each)?
        };
        phases.ticks.push(lap.lap());
        let mut abort = None;
        for (record, why) in ran {
            ticks.push(record);
            abort = abort.or(why);
        }
        if let Some(msg) = abort {
            aborted = Some(format!("{prefix}: {msg}"));
            break;
        }
        if !at_barrier.is_empty() {
            let dead = sandbox.dead_url.clone();
            machines::apply(&at_barrier, &mut clock, &mut sandbox.machines, &dead)?;
        }
    }

    let skill = case.skill.as_str();
    let captured: Vec<MachineRecord> = sandbox
        .machines
        .iter()
        .map(|m| capture(&m.name, &m.project, skill))
        .collect();
    let last = ticks.last().and_then(|t| t.machine.clone());
    let main = match last.and_then(|name| captured.iter().position(|m| m.name == name)) {
        Some(i) => captured[i].clone(),
        None => capture("", sandbox.project(), skill),
    };
    let record = RunRecord {
        ticks,
        history: main.history,
        budget: main.budget,
        lock: main.lock,
        files: main.files,
        requests: sandbox.tracker.requests(),
        model_log: sandbox.model.as_ref().map(|m| m.log()).unwrap_or_default(),
        workspace: opts.workspace.clone(),
        aborted,
        machines: captured,
        pulls: pulls(&sandbox),
        notifications: sandbox
            .notify
            .as_ref()
            .map(|r| r.received())
            .unwrap_or_default(),
    };
    let redactor = Redactor::new(
        &sandbox.root,
        sandbox.project(),
        &opts.workspace,
        sandbox.tracker.address().port(),
    )
    .dead_endpoint(&sandbox.dead_url)
    .notify_receiver(sandbox.notify.as_ref().map(|r| r.uri()).as_deref());
    drop(reaper);
    phases.capture = lap.lap();
    // Not kept, the sandbox is dropped with the closure: the tracker stops
    // and the directory is removed.
    let kept = opts.keep_sandbox.then(|| sandbox.keep());
    phases.teardown = lap.lap();
    Ok(CaseRun {
        record,
        redactor,
        kept,
        wall: started.elapsed(),
        phases,
    })
}

/// What a run left in a project.
fn capture(name: &str, project: &Path, skill: &str) -> MachineRecord {
    let state = project.join(".sdd").join("loop");
    let json = |file: String| {
        std::fs::read(state.join(file))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    };
    MachineRecord {
        name: name.to_owned(),
        history: read_history(&state.join(format!("{skill}.history.jsonl"))),
        budget: json(format!("{skill}.budget.json")),
        lock: json(format!("{skill}.lock")),
        files: RunRecord::list_files(project),
    }
}

/// The pull requests on the tracker, with the issues each closes.
fn pulls(sandbox: &Sandbox) -> Vec<PullRecord> {
    sandbox.tracker.read(|world| {
        world
            .list_pulls("all", None, None)
            .into_iter()
            .map(|(number, p)| PullRecord {
                number,
                branch: p["head"]["ref"].as_str().unwrap_or_default().to_owned(),
                closes: sdd_loop::world::backlog::closes(p["body"].as_str().unwrap_or_default()),
            })
            .collect()
    })
}

/// A tick's `at_barrier:` events as the changes they make.
fn live_changes(events: &[Event]) -> Result<Vec<Change>, String> {
    events
        .iter()
        .enumerate()
        .map(|(i, event)| {
            let fail = |e: String| format!("at_barrier[{}]: {e}", i + 1);
            Ok(match event {
                Event::Advance(d) => Change::Advance(signed(&d.value).map_err(fail)?),
                Event::Skew { machine, by } => Change::Skew(
                    machine.value.clone(),
                    duration::parse_signed(&by.value).map_err(fail)?,
                ),
                Event::Partition(m) => Change::Partition(m.value.clone(), true),
                Event::Heal(m) => Change::Partition(m.value.clone(), false),
                _ => {
                    return Err(fail(
                        "only advance, skew, partition and heal happen at a barrier".to_owned(),
                    ));
                }
            })
        })
        .collect()
}

fn signed(text: &str) -> Result<SignedDuration, String> {
    let d = duration::parse(text)?;
    SignedDuration::try_from(d).map_err(|e| e.to_string())
}

fn read_history(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| Value::String(l.to_owned())))
        .collect()
}

fn apply_events(
    spec: &TickSpec,
    sandbox: &mut Sandbox,
    clock: &mut Timestamp,
    case: &Case,
) -> Result<(), String> {
    // The project a file event changes: the tick's (first) machine's.
    let project = spec
        .on_machines()
        .first()
        .and_then(|m| sandbox.machine(m))
        .map_or_else(|| sandbox.project().to_path_buf(), |m| m.project.clone());
    let state = project.join(".sdd").join("loop");
    for (i, event) in spec.before.iter().enumerate() {
        let fail = |e: String| format!("before[{}]: {e}", i + 1);
        match event {
            Event::Advance(d) => {
                let d = signed(&d.value).map_err(fail)?;
                *clock = clock.checked_add(d).map_err(|e| fail(e.to_string()))?;
                // The tracker dates what it is sent by the case's clock: a
                // reply to a posted gate is compared with the post's time.
                sandbox.tracker.set_time(*clock);
            }
            Event::Skew { .. } | Event::Partition(_) | Event::Heal(_) => {
                let changes = live_changes(std::slice::from_ref(event)).map_err(fail)?;
                let dead = sandbox.dead_url.clone();
                machines::apply(&changes, clock, &mut sandbox.machines, &dead)
                    .map_err(|e| fail(e.to_string()))?;
            }
            Event::Qmd(state) => sandbox.set_qmd(*state).map_err(|e| fail(e.to_string()))?,
            Event::Tracker(change) => {
                let received = sandbox.notify.as_ref().map(|r| r.received());
                sandbox
                    .tracker
                    .apply_with_codes(&change.value, &|post| {
                        notify::answer_code(received.as_deref(), post)
                    })
                    .map_err(|e| fail(e.to_string()))?;
            }
            Event::Push {
                branch,
                commits,
                message,
            } => {
                let dir = sandbox.elsewhere().map_err(|e| fail(e.to_string()))?;
                let base = sandbox.world.default_branch.clone();
                git::push_commits(
                    &sandbox.git,
                    &dir,
                    branch,
                    &base,
                    *commits,
                    message.as_deref().unwrap_or("Pushed elsewhere"),
                )
                .map_err(|e| fail(e.to_string()))?;
            }
            Event::ForcePush { branch, message } => {
                let dir = sandbox.elsewhere().map_err(|e| fail(e.to_string()))?;
                git::rewrite_branch(
                    &sandbox.git,
                    &dir,
                    branch,
                    message.as_deref().unwrap_or("Rewritten elsewhere"),
                )
                .map_err(|e| fail(e.to_string()))?;
            }
            Event::Fault(fault) => {
                sandbox.tracker.inject(fault.clone());
            }
            Event::StopFile(present) => {
                let dir = state.clone();
                let path = dir.join(format!("{}.stop", case.skill.as_str()));
                if *present {
                    std::fs::create_dir_all(&dir).map_err(|e| fail(e.to_string()))?;
                    std::fs::write(&path, "").map_err(|e| fail(e.to_string()))?;
                } else {
                    let _ = std::fs::remove_file(&path);
                }
            }
            Event::ReleaseLock(_) => {
                if let Some(holder) = sandbox.live_lock.take() {
                    Reaper::kill(holder);
                    // A signal is delivered after kill(2) returns: the
                    // tick starts once the holder is seen gone.
                    let until = Instant::now() + Duration::from_secs(10);
                    while !liveness::check(&OsProbe, holder, None).is_dead() {
                        if Instant::now() >= until {
                            return Err(fail(format!(
                                "the live lock holder (pid {holder}) did not end within 10 s of SIGKILL"
                            )));
                        }
                        std::thread::park_timeout(Duration::from_millis(5));
                    }
                }
            }
            Event::File { path, content } => Sandbox::write_file_in(&project, &path.value, content)
                .map_err(|e| fail(e.to_string()))?,
            Event::Remove(path) => {
                Sandbox::remove_file_in(&project, &path.value).map_err(|e| fail(e.to_string()))?
            }
            Event::Edit(e) => {
                edit::apply_edit(&project, case.skill.as_str(), e).map_err(fail)?;
            }
            Event::Truncate(t) => {
                edit::apply_truncate(&project, case.skill.as_str(), t).map_err(fail)?;
            }
        }
    }
    sandbox.set_clocks(*clock).map_err(|e| e.to_string())
}
