//! The clock seam: every timestamp the engine records comes from a
//! [`Clock`], and every wait the engine times by it — the tracker's retry
//! back-off and `retry-after`, the `--lock=wait` deadline — goes through
//! it too ([`Clock::sleep`], measured by [`Clock::monotonic`]).
//!
//! Production uses [`SystemClock`]: real time, real sleeps. The binary
//! reads two variables (`sdd-loop --help` lists them):
//!
//! - `SDD_LOOP_NOW` (RFC 3339) fixes the clock's *wall* reading: every
//!   timestamp of that process is that instant ([`FixedClock`]), so a
//!   scenario places each tick anywhere in a run without waiting for real
//!   minutes, and what the tick records is reproducible to the byte.
//! - `SDD_LOOP_CLOCK=simulated` makes the waits simulated
//!   ([`SimulatedClock`], the harness's clock): a sleep returns within a
//!   millisecond (a real process it polls still gets the CPU) and moves the clock's *monotonic* reading forward by its length, so a
//!   retry budget, a `retry-after` or a lock's wait deadline runs out as it
//!   would in real time, without the real time. Work in between still
//!   counts at its real length. The wall reading stays where the harness
//!   put it (`SDD_LOOP_NOW`, else the system's): wall time is the harness's
//!   to move, waits are the engine's. That is what `SDD_LOOP_NOW` always
//!   meant — a tick that waited out a `retry-after: 1` under it recorded
//!   the instant it was given, not one a second later — so every snapshot
//!   reads as it did.
//!
//! Simulated machines (issue 32), each with its own clock moved by the
//! harness during a tick, fit behind the same trait: a wall reading taken
//! from a file the harness rewrites (one file per machine, replaced by
//! rename, read on every [`Clock::now`]) instead of a fixed instant, with
//! the waits still simulated here; nothing that asks the clock changes.
//!
//! Waits on another real process stay on real time under every clock, since
//! a simulated second would not give that process a second to act: a killed
//! tick's orphaned skill given its drain timeout (`tick/load.rs`), and
//! `end --transcript` waiting for Claude Code's last writes
//! (`transcript/settle.rs`). The skill runner's watchdogs measure real
//! durations with `Instant` for the same reason. Tests of the library use
//! [`ManualClock`]. Timestamps are written as RFC 3339 UTC with whole
//! seconds (`2026-05-09T14:50:00Z`), the shape of the contract's examples.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};

/// The source of "now", and of waiting.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The wall reading: what the engine records.
    fn now(&self) -> Timestamp;

    /// The monotonic reading: time since an origin fixed for the process,
    /// never going back. Deadlines are readings of this.
    fn monotonic(&self) -> Duration {
        real_monotonic()
    }

    /// Waits `d` (real time, unless the clock simulates waits).
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// The real time a simulated wait still takes (see [`SimulatedClock`]).
const SIMULATED_WAIT_SLICE: Duration = Duration::from_millis(1);

/// Real time since the first reading in this process.
fn real_monotonic() -> Duration {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed()
}

/// Real wall-clock time.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// Always the same instant: `SDD_LOOP_NOW` semantics.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub Timestamp);

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        self.0
    }
}

/// The harness's clock (`SDD_LOOP_CLOCK=simulated`): waits are simulated
/// — a sleep returns at once and moves the monotonic reading forward by
/// its length — and the wall reading is `wall` (`SDD_LOOP_NOW`), else the
/// system's. See the module doc for why a wait leaves the wall alone.
#[derive(Debug)]
pub struct SimulatedClock {
    wall: Option<Timestamp>,
    slept: Mutex<Duration>,
}

impl SimulatedClock {
    pub fn new(wall: Option<Timestamp>) -> Self {
        Self {
            wall,
            slept: Mutex::new(Duration::ZERO),
        }
    }
}

impl Clock for SimulatedClock {
    fn now(&self) -> Timestamp {
        self.wall.unwrap_or_else(Timestamp::now)
    }

    fn monotonic(&self) -> Duration {
        real_monotonic() + *self.slept.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn sleep(&self, d: Duration) {
        *self.slept.lock().unwrap_or_else(|e| e.into_inner()) += d;
        // Whatever the waiter polls (a lock's holder) is a real process:
        // give it the CPU for up to a millisecond of each wait. Spinning
        // instead would run an hour's deadline of 10 ms polls (360,000)
        // out in seconds of CPU — before a loaded machine's harness ends
        // the holder — and starve the processes it waits for.
        std::thread::sleep(d.min(SIMULATED_WAIT_SLICE));
    }
}

/// A clock that moves only when told to; for tests.
#[derive(Debug)]
pub struct ManualClock(Mutex<Timestamp>);

impl ManualClock {
    pub fn at(ts: Timestamp) -> Self {
        Self(Mutex::new(ts))
    }

    /// Parses an RFC 3339 instant; panics on a bad literal (test helper).
    pub fn at_str(ts: &str) -> Self {
        Self::at(parse(ts).expect("valid RFC 3339 test timestamp"))
    }

    pub fn set(&self, ts: Timestamp) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = ts;
    }

    pub fn advance(&self, by: SignedDuration) {
        let mut now = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *now = now.saturating_add(by).unwrap_or(*now);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// RFC 3339, UTC, whole seconds: `2026-05-09T14:50:00Z`.
pub fn format(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Compact form for file names: `20260509T145000Z`.
pub fn format_compact(ts: Timestamp) -> String {
    ts.strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// Parses an RFC 3339 instant (any offset; stored as UTC).
pub fn parse(text: &str) -> Result<Timestamp, jiff::Error> {
    text.trim().parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_whole_seconds_utc() {
        let ts: Timestamp = "2026-05-09T16:50:00.75+02:00".parse().unwrap();
        assert_eq!(format(ts), "2026-05-09T14:50:00Z");
        assert_eq!(format_compact(ts), "20260509T145000Z");
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::at_str("2026-05-09T14:50:00Z");
        clock.advance(SignedDuration::from_mins(49));
        assert_eq!(format(clock.now()), "2026-05-09T15:39:00Z");
    }

    #[test]
    fn a_simulated_sleep_moves_the_monotonic_reading_and_leaves_the_wall() {
        let wall = parse("2026-05-09T14:50:00Z").unwrap();
        let clock = SimulatedClock::new(Some(wall));
        let before = clock.monotonic();
        let real = Instant::now();
        clock.sleep(Duration::from_secs(3600));
        assert!(real.elapsed() < Duration::from_secs(60), "no real hour");
        assert!(clock.monotonic() >= before + Duration::from_secs(3600));
        assert_eq!(clock.now(), wall);
    }

    #[test]
    fn fixed_clock_never_moves() {
        let base = parse("2026-05-09T14:50:00Z").unwrap();
        let clock = FixedClock(base);
        assert_eq!(clock.now(), base);
        assert_eq!(clock.now(), base);
    }
}
