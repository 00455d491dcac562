//! A world's project: a directory with its own `.sdd/`, the ticks run in
//! it ([`Project::tick`]), and the counters' invariants checked against
//! the skills' ledger ([`Project::counter_violations`]). Dropping it stops
//! and reaps whatever skill of it still runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rustix::process::{Pid, Signal};
use sdd_loop::state::history::{self, HistoryLine, Outcome};
use serde_json::Value;

use super::ledger::Ledger;
use super::procs::{group_alive, reap_adopted, this_program};
use super::tracker::{REPO, Tracker};

/// The instant every tick's clock reads, so no budget runs out on its own.
pub const NOW: &str = "2026-05-09T14:00:00Z";

/// A project directory with its own `.sdd/`, the skill's ledger and the
/// FIFOs a family synchronises on.
#[derive(Debug)]
pub struct Project {
    pub dir: tempfile::TempDir,
    pub engine: PathBuf,
    pub tracker_url: String,
    /// Extra environment every tick of this project gets (and passes on to
    /// its skill).
    pub env: BTreeMap<String, String>,
}

impl Project {
    pub fn new(engine: &Path, tracker: &Tracker) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("reliability-")
            .tempdir()
            .expect("temp dir");
        let mut env = BTreeMap::new();
        env.insert(
            "REL_LEDGER".to_owned(),
            dir.path().join("ledger").display().to_string(),
        );
        env.insert(
            "REL_ACTIVE".to_owned(),
            dir.path().join("active.lock").display().to_string(),
        );
        Self {
            dir,
            engine: engine.to_path_buf(),
            tracker_url: tracker.uri(),
            env,
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn state(&self) -> PathBuf {
        self.root().join(".sdd/loop")
    }

    pub fn set(&mut self, key: &str, value: impl ToString) {
        self.env.insert(key.to_owned(), value.to_string());
    }

    /// `sdd-loop work --loop` with budgets no family runs into.
    pub fn tick(&self) -> Command {
        self.command(&[
            "work",
            "--loop",
            "--max-iterations",
            "1000000",
            "--max-prs",
            "1000000",
            "--max-minutes",
            "1000000",
            "--max-dollars",
            "0",
        ])
    }

    /// `sdd-loop ARGS` in this project, with a clean environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.engine);
        cmd.current_dir(self.root())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("SDD_LOOP_TRACKER_URL", &self.tracker_url)
            .env("SDD_LOOP_REPO", REPO)
            .env(
                "SDD_LOOP_SKILL_CMD",
                format!("'{}' {}", this_program().display(), crate::SKILL),
            )
            .env("SDD_LOOP_NOW", NOW)
            .envs(&self.env)
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    pub fn history(&self) -> Result<Vec<HistoryLine>, String> {
        let tail = history::read_all(&self.state().join("work.history.jsonl"))
            .map_err(|e| e.to_string())?;
        if tail.torn.is_some() {
            return Err("history has a torn last line".into());
        }
        Ok(tail.lines.into_iter().map(|l| l.line).collect())
    }

    pub fn budget(&self) -> Result<Value, String> {
        let path = self.state().join("work.budget.json");
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn ledger(&self) -> Ledger {
        Ledger::parse(&std::fs::read_to_string(self.root().join("ledger")).unwrap_or_default())
    }

    /// The counters' invariants after a run of ticks, as problems (none =
    /// held): every iteration recorded exactly once (1..=n, no gaps, no
    /// duplicates), `budget.json` and the last lock-holding tick's history
    /// line agreeing with them, every token the skills reported in their events counted
    /// exactly once (in `budget.json` and summed over the history lines),
    /// no journal or lock left, and no two skill runs at once.
    pub fn counter_violations(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let lines = match self.history() {
            Ok(lines) => lines,
            Err(e) => return vec![e],
        };
        let consumed: Vec<&HistoryLine> = lines
            .iter()
            .filter(|l| matches!(l.outcome, Some(Outcome::Ok | Outcome::Errored)))
            .collect();
        let iterations: Vec<u64> = consumed.iter().filter_map(|l| l.iteration).collect();
        let n = iterations.len() as u64;
        if iterations != (1..=n).collect::<Vec<_>>() {
            problems.push(format!(
                "iterations recorded {iterations:?}, expected 1..={n}"
            ));
        }
        let ledger = self.ledger();
        let (tin, tout) = (ledger.tokens_in(), ledger.tokens_out());
        let history_in: u64 = lines.iter().filter_map(|l| l.tokens_in_this_iter).sum();
        if history_in != tin {
            problems.push(format!(
                "history lines count {history_in} tokens in, the skills' events {tin}"
            ));
        }
        match self.budget() {
            Ok(budget) => {
                let field = |name: &str| budget[name].as_u64().unwrap_or(u64::MAX);
                for (name, want) in [
                    ("iterations_used", n),
                    ("tokens_in", tin),
                    ("tokens_out", tout),
                ] {
                    if field(name) != want {
                        problems.push(format!(
                            "budget.json {name} = {}, expected {want}",
                            budget[name]
                        ));
                    }
                }
            }
            Err(e) => problems.push(e),
        }
        // The last line written under the lock, as the engine reconciles
        // against: a skipped tick's line carries the budget it read, which
        // a holder finishing beside it may have advanced before the skipped
        // line was appended.
        let last_held = lines.iter().rev().find(|l| l.authoritative());
        if let Some(snap) = last_held.and_then(|l| l.budget_snapshot.as_ref())
            && (snap.iterations_used != Some(n) || snap.tokens_in != Some(tin))
        {
            problems.push(format!(
                "last history line's snapshot says {:?} iterations, {:?} tokens in; expected {n}, {tin}",
                snap.iterations_used, snap.tokens_in
            ));
        }
        for left in ["work.inflight.json", "work.lock"] {
            if self.state().join(left).exists() {
                problems.push(format!("{left} left behind"));
            }
        }
        if ledger.overlaps > 0 {
            problems.push(format!(
                "{} skill runs started beside another",
                ledger.overlaps
            ));
        }
        if ledger.unfinished() > 0 {
            problems.push(format!("{} skill runs never finished", ledger.unfinished()));
        }
        if ledger.unreadable > 0 {
            problems.push(format!("{} unreadable ledger lines", ledger.unreadable));
        }
        problems
    }
}

impl Project {
    /// Reaps the skill processes (skill, its shell, its guard) this
    /// program adopted as the subreaper when their engine died.
    pub fn reap_adopted(&self) {
        for run in self.ledger().runs.values() {
            for pid in [run.pid, run.ppid, run.pgid] {
                reap_adopted(pid);
            }
        }
    }

    /// Skill process groups of this project still running.
    pub fn strays(&self) -> usize {
        self.ledger()
            .runs
            .values()
            .filter(|r| group_alive(r.pgid))
            .count()
    }
}

impl Drop for Project {
    /// Stops whatever skill of this project is still running (a family
    /// that failed half-way), then reaps what it adopted.
    fn drop(&mut self) {
        for run in self.ledger().runs.values() {
            if group_alive(run.pgid)
                && let Some(group) = Pid::from_raw(run.pgid)
            {
                let _ = rustix::process::kill_process_group(group, Signal::KILL);
            }
        }
        self.reap_adopted();
    }
}
