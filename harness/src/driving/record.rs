//! What a run left behind, captured before the sandbox goes away: each
//! tick's exit, output and the history lines it appended, the final
//! history and budget.json, the project's files, the mock tracker's
//! request journal and a real-CLI case's model log. Checks ([`crate::loading::check`]) read only this, so they are
//! tested without running anything.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sdd_mocks::model::LogEntry;
use sdd_mocks::tracker::RecordedRequest;
use serde_json::Value;

/// How a tick's engine process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickEnd {
    /// It exited with this status.
    Exited(i32),
    /// The harness SIGKILLed it when the fake skill reached its barrier.
    KilledAtBarrier,
    /// It aborted at this crash point (`SDD_LOOP_CRASH_AT`).
    Crashed { point: String, signal: i32 },
    /// A signal nobody scripted ended it.
    Signaled(i32),
    /// The case's time limit ran out during this tick.
    TimedOut,
}

impl TickEnd {
    pub fn code(&self) -> Option<i32> {
        match self {
            TickEnd::Exited(code) => Some(*code),
            _ => None,
        }
    }
}

impl fmt::Display for TickEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TickEnd::Exited(code) => write!(f, "exit {code}"),
            TickEnd::KilledAtBarrier => f.write_str("killed at the skill barrier"),
            TickEnd::Crashed { point, signal } => {
                write!(f, "aborted at crash point {point} (signal {signal})")
            }
            TickEnd::Signaled(sig) => write!(f, "killed by signal {sig}"),
            TickEnd::TimedOut => f.write_str("timed out"),
        }
    }
}

/// One tick as it ran.
#[derive(Debug, Clone)]
pub struct TickRecord {
    /// 1-based.
    pub number: usize,
    /// The engine arguments after `<skill> --loop` (the case's, then the tick's).
    pub args: Vec<String>,
    pub end: TickEnd,
    pub stdout: String,
    pub stderr: String,
    /// Indices into [`RunRecord::history`] of the lines this tick appended
    /// (a resumed tick may append a recovered iteration before its own).
    pub lines: Range<usize>,
    /// Indices into [`RunRecord::model_log`] of the requests this tick's
    /// real CLI made (empty for other drivers).
    pub model_requests: Range<usize>,
    pub wall: Duration,
    /// The report is what the plugin's hooks told Claude Code (`plugin:
    /// true`): a work or review tick's own status block, printed by the
    /// `end` the Stop hook runs, is not among it — only a blocked
    /// prompt's (a skip, a stop) is.
    pub from_hooks: bool,
    /// The machine it ran on, in a case with machines; its `lines` index
    /// that machine's history.
    pub machine: Option<String>,
}

/// What a run left in one machine's project.
#[derive(Debug, Clone, Default)]
pub struct MachineRecord {
    pub name: String,
    pub history: Vec<Value>,
    pub budget: Option<Value>,
    pub lock: Option<Value>,
    pub files: BTreeSet<String>,
}

/// A pull request on the tracker at the end of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRecord {
    pub number: u64,
    pub branch: String,
    /// The issues its body closes.
    pub closes: BTreeSet<u64>,
}

/// Everything a run produced.
#[derive(Debug, Clone, Default)]
pub struct RunRecord {
    pub ticks: Vec<TickRecord>,
    /// The history lines at the end of the run, parsed (a line that is not
    /// JSON is kept as a string).
    pub history: Vec<Value>,
    /// budget.json at the end of the run, if there is one.
    pub budget: Option<Value>,
    /// The lockfile at the end of the run, if one was left.
    pub lock: Option<Value>,
    /// Paths of the project's files and directories, relative, `/`-separated
    /// (`.git` left out).
    pub files: BTreeSet<String>,
    /// Every request the mock tracker answered.
    pub requests: Vec<RecordedRequest>,
    /// A real-CLI case: every request its scripted model answered, in order.
    pub model_log: Vec<LogEntry>,
    /// The workspace root, for checks on the repository's own files.
    pub workspace: PathBuf,
    /// Why the run stopped early, if it did.
    pub aborted: Option<String>,
    /// A case with machines: each machine's project at the end of the run
    /// (`history`, `budget`, `lock` and `files` above are the machine's
    /// that ran the last tick).
    pub machines: Vec<MachineRecord>,
    /// The pull requests on the tracker at the end of the run.
    pub pulls: Vec<PullRecord>,
    /// Every request the notification receiver was sent (`world.notify`),
    /// in order.
    pub notifications: Vec<sdd_mocks::notify::Received>,
}

impl RunRecord {
    /// Tick `number`: the first record of it (a tick on several machines
    /// at once has one each; [`RunRecord::on`] tells them apart).
    pub fn tick(&self, number: usize) -> Option<&TickRecord> {
        self.ticks.iter().find(|t| t.number == number)
    }

    /// The run as machine `name` saw it: its project, and only the ticks
    /// it ran; `None` for a machine the run does not know.
    pub fn on(&self, name: &str) -> Option<RunRecord> {
        let m = self.machines.iter().find(|m| m.name == name)?;
        Some(RunRecord {
            ticks: self
                .ticks
                .iter()
                .filter(|t| t.machine.as_deref() == Some(name))
                .cloned()
                .collect(),
            history: m.history.clone(),
            budget: m.budget.clone(),
            lock: m.lock.clone(),
            files: m.files.clone(),
            ..self.clone()
        })
    }

    /// The history lines a record's `lines` index: its machine's, or the
    /// project's.
    fn history_of(&self, tick: &TickRecord) -> &[Value] {
        match &tick.machine {
            Some(name) => self
                .machines
                .iter()
                .find(|m| &m.name == name)
                .map_or(&[][..], |m| &m.history),
            None => &self.history,
        }
    }

    pub fn last_tick(&self) -> Option<&TickRecord> {
        self.ticks.last()
    }

    /// The history lines `tick` appended (on its machine, if it has one).
    pub fn lines_of(&self, tick: &TickRecord) -> &[Value] {
        self.history_of(tick).get(tick.lines.clone()).unwrap_or(&[])
    }

    /// The history lines a tick appended, or every line.
    pub fn lines(&self, tick: Option<usize>) -> &[Value] {
        match tick.and_then(|n| self.tick(n)) {
            Some(t) => self.history_of(t).get(t.lines.clone()).unwrap_or(&[]),
            None if tick.is_some() => &[],
            None => &self.history,
        }
    }

    /// Every gate recorded, with the iteration of its line, in order.
    pub fn gates(&self, tick: Option<usize>) -> Vec<(u64, &Value)> {
        self.lines(tick)
            .iter()
            .flat_map(|line| {
                let iteration = line["iteration"].as_u64().unwrap_or(0);
                line["gates"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(move |gate| (iteration, gate))
            })
            .collect()
    }

    /// Total tokens in and out, from the last history line's budget
    /// snapshot (else budget.json).
    pub fn tokens(&self) -> (u64, u64) {
        let from = |v: &Value| {
            (
                v["tokens_in"].as_u64().unwrap_or(0),
                v["tokens_out"].as_u64().unwrap_or(0),
            )
        };
        match self.history.last() {
            Some(line) if line["budget_snapshot"].is_object() => from(&line["budget_snapshot"]),
            _ => self.budget.as_ref().map(from).unwrap_or((0, 0)),
        }
    }

    /// The relative paths under `root` (files and directories), `.git` left out.
    pub fn list_files(root: &Path) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if entry.file_name() == ".git" && dir == root {
                    continue;
                }
                if let Ok(rel) = path.strip_prefix(root) {
                    found.insert(rel.to_string_lossy().replace('\\', "/"));
                }
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(path);
                }
            }
        }
        found
    }
}
