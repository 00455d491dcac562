//! A tick on several machines at once (`machines: [a, b]`): one engine
//! per machine, each in its own clone with its own clock, started
//! together. The engines pause once they have read the backlog (a review
//! tick: its PRs; the engine's pause point `after-backlog`) and are released together
//! when every one has paused, so they claim their issues at the same
//! moment — the race two clones' loops run. Nothing sleeps: each engine
//! says `paused PID` in the FIFO `ready`, and one write of N bytes into
//! the FIFO `release` lets all N go.
//!
//! Each engine runs as a wrapper tick in a thread of its own, with a
//! reaper of its own carrying the case's marker; the reapers go (sweeping
//! the case's leftovers) only once every engine has ended.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Instant;

use super::tick::{Tick, TickRun, Ticked, io};
use super::{real_session, wrapper};
use crate::world::error::HarnessError;
use crate::world::procs::Reaper;
use crate::world::spawn;

/// What the engines and the ready FIFO tell the releaser.
enum Said {
    Paused,
    Ended,
}

/// How each machine's tick runs: the engine running the fake skill, or
/// a real Claude Code session of its own ([`real_session::run_at_once`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Each {
    Wrapper,
    RealSession,
}

/// Runs each of `on` (one per machine, the same tick) at once.
pub fn run(on: Vec<TickRun<'_>>, reaper: &Reaper, each: Each) -> Result<Vec<Ticked>, HarnessError> {
    let Some(first) = on.first() else {
        return Ok(Vec::new());
    };
    let count = on.len();
    let deadline = first.deadline;
    let pause = Pause::make(first.sandbox.machine_tick_dir(first.n, "pause")?)?;
    let (tx, rx) = mpsc::channel();
    pause.listen(tx.clone())?;
    let mut siblings: Vec<Reaper> = on.iter().map(|_| Reaper::new(reaper.marker())).collect();
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = on
            .into_iter()
            .zip(siblings.iter_mut())
            .map(|(run, sibling)| {
                let extra = pause.env();
                let tx = tx.clone();
                scope.spawn(move || {
                    let ran = Tick::prepare(run, sibling).and_then(|t| match each {
                        Each::Wrapper => wrapper::run_with(t, extra),
                        Each::RealSession => real_session::run_at_once(t, extra),
                    });
                    let _ = tx.send(Said::Ended);
                    ran
                })
            })
            .collect();
        drop(tx);
        pause.release_when_all_paused(&rx, count, deadline);
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(HarnessError::Sandbox(
                        "a machine's tick panicked".to_owned(),
                    ))
                })
            })
            .collect::<Vec<_>>()
    });
    pause.stop_listening();
    drop(siblings);
    results.into_iter().collect()
}

/// The pause point's two FIFOs, held open by the harness.
struct Pause {
    dir: PathBuf,
    ready: std::fs::File,
    release: std::fs::File,
}

impl Pause {
    fn make(dir: PathBuf) -> Result<Self, HarnessError> {
        let ready = spawn::make_fifo(&dir.join("ready")).map_err(io("make the pause FIFO"))?;
        let release = spawn::make_fifo(&dir.join("release")).map_err(io("make the pause FIFO"))?;
        Ok(Self {
            dir,
            ready,
            release,
        })
    }

    /// What an engine is told, to pause after reading the backlog.
    fn env(&self) -> Vec<(String, std::ffi::OsString)> {
        vec![
            ("SDD_LOOP_PAUSE_AT".to_owned(), "after-backlog".into()),
            ("SDD_LOOP_PAUSE_DIR".to_owned(), self.dir.clone().into()),
        ]
    }

    /// Passes each `paused` line of the ready FIFO to `tx`, from a thread
    /// that ends at [`Pause::stop_listening`]'s line.
    fn listen(&self, tx: mpsc::Sender<Said>) -> Result<(), HarnessError> {
        let fifo = self.ready.try_clone().map_err(io("open the pause FIFO"))?;
        std::thread::spawn(move || {
            for line in BufReader::new(fifo).lines() {
                match line {
                    Ok(l) if l.starts_with("paused") => {
                        if tx.send(Said::Paused).is_err() {
                            break;
                        }
                    }
                    _ => break,
                }
            }
        });
        Ok(())
    }

    /// Ends the listening thread.
    fn stop_listening(&self) {
        let _ = (&self.ready).write_all(b"done\n");
    }

    /// Waits until all `count` engines paused (or every one either paused
    /// or ended, or the deadline passed), then releases the paused ones.
    fn release_when_all_paused(&self, rx: &mpsc::Receiver<Said>, count: usize, deadline: Instant) {
        let (mut paused, mut ended) = (0, 0);
        while paused < count && paused + ended < count {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Said::Paused) => paused += 1,
                Ok(Said::Ended) => ended += 1,
                Err(_) => break,
            }
        }
        // One byte an engine: the paused ones go now, a late one when it pauses.
        let _ = (&self.release).write_all(&vec![b'g'; count]);
    }
}
