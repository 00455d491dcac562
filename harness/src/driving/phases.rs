//! Where a case's wall time went, phase by phase, for `sdd-evals run
//! --timings`: building its world, the events before each tick, each tick,
//! capturing what the run left, judging it, and removing the sandbox. A
//! phase that takes wall time its CPU does not explain is waiting — a
//! sleep on a clock, a process start, a lock — and the place to look.

use std::time::{Duration, Instant};

/// One case's phases. `judging` is filled in by whoever judges the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Phases {
    /// The sandbox: git world, mock tracker, the project's seeded state.
    pub world: Duration,
    /// The world events before the ticks (`before:`), all ticks together.
    pub events: Duration,
    /// Each tick, in order.
    pub ticks: Vec<Duration>,
    /// History, budget.json, the project's files and the tracker's journal.
    pub capture: Duration,
    /// Grades and snapshots.
    pub judging: Duration,
    /// Stopping the tracker and removing the sandbox.
    pub teardown: Duration,
}

impl Phases {
    /// Every phase together.
    pub fn total(&self) -> Duration {
        self.world
            + self.events
            + self.ticks.iter().sum::<Duration>()
            + self.capture
            + self.judging
            + self.teardown
    }
}

/// A stopwatch that hands out the time since it last did.
#[derive(Debug)]
pub struct Lap(Instant);

impl Lap {
    pub fn start() -> Self {
        Self(Instant::now())
    }

    /// The time since the start or the last lap.
    pub fn lap(&mut self) -> Duration {
        let now = Instant::now();
        let took = now - self.0;
        self.0 = now;
        took
    }
}
