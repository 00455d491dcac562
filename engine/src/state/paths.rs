//! Where a loop keeps its state: `.sdd/loop/{skill}.*` (ADR-0028 §Budget
//! controls, §Telemetry) plus the engine's own companions.
//!
//! [`StatePaths`] is the one place that spells these names; everything else
//! asks it. The budget file may be moved with `--budget-file`; the others are
//! fixed by the contract.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The wrapped skill a loop runs: `/sdd:work` or `/sdd:review`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Skill {
    Work,
    Review,
}

impl Skill {
    pub fn as_str(self) -> &'static str {
        match self {
            Skill::Work => "work",
            Skill::Review => "review",
        }
    }
}

impl fmt::Display for Skill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Skill {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "work" => Ok(Skill::Work),
            "review" => Ok(Skill::Review),
            other => Err(format!(
                "unknown skill `{other}` (expected `work` or `review`)"
            )),
        }
    }
}

/// The state files of one skill's loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatePaths {
    pub skill: Skill,
    /// `.sdd/loop`, resolved against the project root.
    pub dir: PathBuf,
    budget: PathBuf,
    root: PathBuf,
}

impl StatePaths {
    /// Paths under `{root}/.sdd/loop/`; `budget_file` overrides the budget
    /// location (relative paths are taken from `root`).
    pub fn new(root: &Path, skill: Skill, budget_file: Option<&Path>) -> Self {
        let dir = root.join(".sdd").join("loop");
        let budget = match budget_file {
            Some(p) if p.is_absolute() => p.to_path_buf(),
            Some(p) => root.join(p),
            None => dir.join(format!("{skill}.budget.json")),
        };
        Self {
            skill,
            dir,
            budget,
            root: root.to_path_buf(),
        }
    }

    /// The project root the paths were made from.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn file(&self, suffix: &str) -> PathBuf {
        self.dir.join(format!("{}.{suffix}", self.skill))
    }

    /// `{skill}.lock` — present while a tick runs.
    pub fn lock(&self) -> PathBuf {
        self.file("lock")
    }

    /// `{skill}.lock.guard` — never deleted; its advisory lock serialises
    /// the read–check–reap–create sequence of acquisition.
    pub fn lock_guard(&self) -> PathBuf {
        self.file("lock.guard")
    }

    /// `{skill}.budget.json` (or `--budget-file`).
    pub fn budget(&self) -> &Path {
        &self.budget
    }

    /// `{skill}.history.jsonl` — append-only, one line per tick.
    pub fn history(&self) -> PathBuf {
        self.file("history.jsonl")
    }

    /// `{skill}.inflight.json` — the interrupted-iteration journal.
    pub fn inflight(&self) -> PathBuf {
        self.file("inflight.json")
    }

    /// `{skill}.stop` — a graceful stop request (condition #8).
    pub fn stop_request(&self) -> PathBuf {
        self.file("stop")
    }

    /// `{skill}.transcript.json` — the ledger of transcript spend
    /// (`end --transcript`): which responses earlier ticks counted.
    pub fn transcript_ledger(&self) -> PathBuf {
        self.file("transcript.json")
    }

    /// `windows.json` — the account's usage windows and the wait for a
    /// reset; one file for both skills (the windows are the account's).
    pub fn windows(&self) -> PathBuf {
        self.dir.join("windows.json")
    }

    /// `statusline.json` — the usage windows a Claude Code session's
    /// statusLine command last recorded (`sdd-loop statusline`), read over
    /// `windows.json`'s figures where newer; the command's only file.
    pub fn statusline_windows(&self) -> PathBuf {
        self.dir.join("statusline.json")
    }

    /// `{skill}.gates.json` — the gates posted on the tracker and waiting
    /// for a person (docs/src/gates-away.md).
    pub fn gates(&self) -> PathBuf {
        self.file("gates.json")
    }

    /// `{skill}.asked.json` — the gate last asked here (exit 4) and told
    /// to the person's notification URLs (docs/src/notifications.md).
    pub fn asked(&self) -> PathBuf {
        self.file("asked.json")
    }

    /// Per-tick exchange directory with the wrapped skill.
    pub fn exchange_dir(&self) -> PathBuf {
        self.file("exchange")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_paths() {
        let p = StatePaths::new(Path::new("/repo"), Skill::Work, None);
        assert_eq!(p.lock(), Path::new("/repo/.sdd/loop/work.lock"));
        assert_eq!(p.budget(), Path::new("/repo/.sdd/loop/work.budget.json"));
        assert_eq!(p.history(), Path::new("/repo/.sdd/loop/work.history.jsonl"));
        assert_eq!(p.stop_request(), Path::new("/repo/.sdd/loop/work.stop"));
    }

    #[test]
    fn budget_file_override_is_relative_to_root() {
        let p = StatePaths::new(Path::new("/repo"), Skill::Review, Some(Path::new("b.json")));
        assert_eq!(p.budget(), Path::new("/repo/b.json"));
        assert_eq!(p.lock(), Path::new("/repo/.sdd/loop/review.lock"));
    }

    #[test]
    fn skill_parses_and_rejects_unknown() {
        assert_eq!("review".parse::<Skill>().unwrap(), Skill::Review);
        assert!("audit".parse::<Skill>().unwrap_err().contains("audit"));
    }
}
