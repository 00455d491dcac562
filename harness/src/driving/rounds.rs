//! The rounds of a `driver: real-loop` case with machines
//! ([`super::real_loop`]): which ticks are one round ([`rounds`]), and
//! the [`Hold`] on each machine's session, where its engines pause once
//! they have read the backlog until the harness lets them go — so the
//! fires of a round claim in the case's order, each after the turn of the
//! one before it (`docs/src/case-format.md`, "Machines").

use std::fs::File;
use std::io::{Read, Write};
use std::ops::Range;
use std::path::PathBuf;

use super::tick::{Env, io};
use crate::world::error::HarnessError;
use crate::world::spawn;

/// The rounds of a case with machines, given each tick's machine in
/// order: runs of consecutive ticks on different machines, as ranges of
/// 1-based tick numbers. `a, b, a, b` is two rounds; `a, a` is two.
pub(super) fn rounds(machines: &[&str]) -> Vec<Range<usize>> {
    let mut rounds = Vec::new();
    let mut start = 1;
    for (i, machine) in machines.iter().enumerate() {
        let n = i + 1;
        if machines[start - 1..i].contains(machine) {
            rounds.push(start..n);
            start = n;
        }
    }
    if !machines.is_empty() {
        rounds.push(start..machines.len() + 1);
    }
    rounds
}

/// Where a machine's session's engines pause: `begin` stops once it has
/// read the backlog (the engine's pause point `after-backlog`) and says
/// `paused PID` in the FIFO `ready`; one byte in the FIFO `release` lets
/// it go. Both are held open by the harness, so no open blocks the engine.
#[derive(Debug)]
pub(super) struct Hold {
    dir: PathBuf,
    ready: File,
    release: File,
    /// Bytes read from `ready` that make no whole line yet.
    partial: Vec<u8>,
    /// Engines that said they paused, and engines let go.
    paused: usize,
    released: usize,
}

impl Hold {
    pub(super) fn make(dir: PathBuf) -> Result<Self, HarnessError> {
        std::fs::create_dir_all(&dir).map_err(io("create the session's pause directory"))?;
        let ready = spawn::make_fifo(&dir.join("ready")).map_err(io("make the pause FIFO"))?;
        // Read while polling the session's files: never blocks.
        rustix::fs::fcntl_setfl(&ready, rustix::fs::OFlags::NONBLOCK)
            .map_err(|e| io("make the pause FIFO")(e.into()))?;
        let release = spawn::make_fifo(&dir.join("release")).map_err(io("make the pause FIFO"))?;
        Ok(Self {
            dir,
            ready,
            release,
            partial: Vec::new(),
            paused: 0,
            released: 0,
        })
    }

    /// What the session's engines are told, to pause after reading the
    /// backlog.
    pub(super) fn env(&self) -> Env {
        vec![
            ("SDD_LOOP_PAUSE_AT".to_owned(), "after-backlog".into()),
            ("SDD_LOOP_PAUSE_DIR".to_owned(), self.dir.clone().into()),
        ]
    }

    /// Whether an engine of the session is paused, waiting to be let go.
    pub(super) fn holding(&mut self) -> bool {
        let mut buf = [0u8; 256];
        while let Ok(n @ 1..) = (&self.ready).read(&mut buf) {
            self.partial.extend_from_slice(&buf[..n]);
        }
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            if line.starts_with(b"paused") {
                self.paused += 1;
            }
        }
        self.paused > self.released
    }

    /// Lets the paused engine go, if one is paused.
    pub(super) fn let_go(&mut self) -> Result<(), HarnessError> {
        if self.holding() {
            (&self.release)
                .write_all(b"g")
                .map_err(io("release a paused engine"))?;
            self.released += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_a_run_of_consecutive_ticks_on_different_machines() {
        assert_eq!(rounds(&["a", "b", "a", "b", "a", "b"]), [1..3, 3..5, 5..7]);
        assert_eq!(rounds(&["a", "a", "b"]), [1..2, 2..4]);
        assert_eq!(rounds(&["a", "b", "b", "a"]), [1..3, 3..5]);
        assert_eq!(rounds(&["a", "b", "c", "a"]), [1..4, 4..5]);
        assert_eq!(rounds(&["a"]), vec![1..2]);
        assert!(rounds(&[]).is_empty());
    }

    /// A machine's session's engines pause on its own FIFOs: a `paused`
    /// line holds one until one byte lets it go, and only a paused one is
    /// let go (a byte written early would let the next `begin` through
    /// before its round).
    #[test]
    fn a_hold_lets_go_only_the_engine_that_paused() {
        let dir = tempfile::tempdir().unwrap();
        let mut hold = Hold::make(dir.path().join("pause")).unwrap();
        assert!(!hold.holding());
        hold.let_go().unwrap();
        assert_eq!(hold.released, 0, "nothing paused, nothing let go");
        let mut ready = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join("pause/ready"))
            .unwrap();
        ready.write_all(b"paused 12").unwrap();
        assert!(!hold.holding(), "half a line is no pause yet");
        ready.write_all(b"\n").unwrap();
        assert!(hold.holding());
        hold.let_go().unwrap();
        assert!(!hold.holding());
        let mut release = std::fs::OpenOptions::new()
            .read(true)
            .open(dir.path().join("pause/release"))
            .unwrap();
        let mut byte = [0u8; 1];
        release.read_exact(&mut byte).unwrap();
        assert_eq!(&byte, b"g");
        let env = hold.env();
        assert!(
            env.iter()
                .any(|(k, v)| k == "SDD_LOOP_PAUSE_AT" && v == "after-backlog")
        );
    }
}
