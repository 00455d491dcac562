//! Simulated machines (issue 32): a case's `machines:` become directories
//! beside the project, each a machine of its own around the one origin
//! and the one mock tracker:
//!
//! ```text
//! [ROOT]/machines/NAME/work/    its clone of origin (a copy of the seeded project)
//! [ROOT]/machines/NAME/home/    its HOME
//! [ROOT]/machines/NAME/tmp/     its TMPDIR
//! [ROOT]/machines/NAME/clock    its clock: the instant its engine reads
//!                               (`SDD_LOOP_NOW_FILE`), the case's plus its skew
//! ```
//!
//! The clock file is rewritten (temporary file, then rename) whenever the
//! case's clock or the machine's skew moves — during a tick too, so a
//! running engine sees its lease run out. A partition points the clone's
//! `origin` and the machine's tracker URL at a loopback port nobody
//! listens on; an engine already running keeps the tracker URL it was
//! started with, and its git calls (a claim's renewal) fail from then on.

use std::path::{Path, PathBuf};

use jiff::{SignedDuration, Timestamp};
use sdd_mocks::git::{self, Git};

use crate::world::error::HarnessError;

/// One simulated machine.
#[derive(Debug, Clone)]
pub struct Machine {
    pub name: String,
    /// Its clone: where its engine runs.
    pub project: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
    /// The file its engine's clock reads.
    pub clock: PathBuf,
    /// How far its clock is ahead of the case's.
    pub skew: SignedDuration,
    /// Cut off (`partition`) until healed.
    pub partitioned: bool,
    /// Its clone's `origin` when reachable.
    origin: String,
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> HarnessError {
    move |source| HarnessError::Io { what, source }
}

impl Machine {
    /// Machine `name` under `root`, its clone a copy of `project`, its
    /// clock at `now` plus `skew`.
    pub fn build(
        root: &Path,
        project: &Path,
        origin: &Path,
        name: &str,
        skew: SignedDuration,
        now: Timestamp,
    ) -> Result<Self, HarnessError> {
        let dir = root.join("machines").join(name);
        let machine = Self {
            name: name.to_owned(),
            project: dir.join("work"),
            home: dir.join("home"),
            tmp: dir.join("tmp"),
            clock: dir.join("clock"),
            skew,
            partitioned: false,
            origin: origin.display().to_string(),
        };
        for d in [&machine.home, &machine.tmp] {
            std::fs::create_dir_all(d).map_err(io(format!("create {}", d.display())))?;
        }
        git::copy_tree(project, &machine.project)?;
        machine.set_clock(now)?;
        Ok(machine)
    }

    /// Writes the machine's clock: `now` plus its skew, replaced by rename
    /// so its engine never reads half an instant.
    pub fn set_clock(&self, now: Timestamp) -> Result<(), HarnessError> {
        let at = now
            .checked_add(self.skew)
            .map_err(|e| HarnessError::Sandbox(format!("machine {}'s clock: {e}", self.name)))?;
        let next = self.clock.with_extension("next");
        std::fs::write(&next, format!("{at}\n"))
            .map_err(io(format!("write {}", next.display())))?;
        std::fs::rename(&next, &self.clock).map_err(io(format!("move {}", next.display())))
    }

    /// The state directory of its project.
    pub fn state_dir(&self) -> PathBuf {
        self.project.join(".sdd").join("loop")
    }

    /// Cuts it off (`dead`: a URL nobody answers) or heals it, pointing its
    /// clone's `origin` there or back.
    pub fn partition(&mut self, cut: bool, dead: &str) -> Result<(), HarnessError> {
        let url = if cut {
            format!("{dead}/origin.git")
        } else {
            self.origin.clone()
        };
        Git::default().run(&self.project, ["remote", "set-url", "origin", url.as_str()])?;
        self.partitioned = cut;
        Ok(())
    }
}

/// A change to the machines' world, applied between ticks or while one
/// runs (a tick's `at_barrier:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Every machine's clock moves on.
    Advance(SignedDuration),
    /// One machine's skew from now on.
    Skew(String, SignedDuration),
    /// One machine cut off (`true`) or healed.
    Partition(String, bool),
}

/// Applies `changes` to `machines` at the case's clock `now`: the clock
/// files and the clones' `origin` follow. Doing it twice leaves the same
/// files, so a change made while a tick ran is made again, on the
/// runner's own copy, once it ended.
pub fn apply(
    changes: &[Change],
    now: &mut Timestamp,
    machines: &mut [Machine],
    dead: &str,
) -> Result<(), HarnessError> {
    for change in changes {
        match change {
            Change::Advance(by) => {
                *now = now
                    .checked_add(*by)
                    .map_err(|e| HarnessError::Sandbox(format!("advance the clock: {e}")))?;
            }
            Change::Skew(name, by) => find(machines, name)?.skew = *by,
            Change::Partition(name, cut) => find(machines, name)?.partition(*cut, dead)?,
        }
    }
    machines.iter().try_for_each(|m| m.set_clock(*now))
}

fn find<'m>(machines: &'m mut [Machine], name: &str) -> Result<&'m mut Machine, HarnessError> {
    machines
        .iter_mut()
        .find(|m| m.name == name)
        .ok_or_else(|| HarnessError::Sandbox(format!("no machine {name}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machines_clock_is_the_cases_plus_its_skew_and_moves_by_rename() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("work");
        std::fs::create_dir_all(project.join(".sdd")).unwrap();
        std::fs::write(project.join("CLAUDE.md"), "# app\n").unwrap();
        let now: Timestamp = "2026-05-09T14:00:00Z".parse().unwrap();
        let m = Machine::build(
            root.path(),
            &project,
            &root.path().join("origin.git"),
            "b",
            SignedDuration::from_mins(-3),
            now,
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(&m.clock).unwrap(),
            "2026-05-09T13:57:00Z\n"
        );
        assert!(
            m.project.join("CLAUDE.md").is_file(),
            "the seeded project is copied"
        );
        m.set_clock(now.checked_add(SignedDuration::from_mins(20)).unwrap())
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&m.clock).unwrap(),
            "2026-05-09T14:17:00Z\n"
        );
        assert!(!m.clock.with_extension("next").exists());
    }
}
