//! The clock seam: every timestamp the engine records comes from a
//! [`Clock`], and every wait the engine times by it — the tracker's retry
//! back-off and `retry-after`, the `--lock=wait` deadline — goes through
//! it too ([`Clock::sleep`], measured by [`Clock::monotonic`]).
//!
//! Production uses [`SystemClock`]: real time, real sleeps. The binary
//! reads three variables (`sdd-loop --help` lists them):
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
//! - `SDD_LOOP_NOW_FILE` (a path) makes the wall reading the instant that
//!   file holds, read again on every [`Clock::now`] ([`FileWall`]): the
//!   harness moves the clock *during* a tick by replacing the file
//!   (write a temporary file, then rename it over), so a claim's lease
//!   runs out while the tick that holds it is still running (issue 32:
//!   one file per simulated machine, each with its own skew). One small
//!   read a reading, no thread; a reading that fails (the file gone,
//!   half-written by someone not renaming) keeps the last good one. With
//!   `SDD_LOOP_CLOCK=simulated` the waits are simulated as above.
//!
//! Waits on another real process stay on real time under every clock, since
//! a simulated second would not give that process a second to act: a killed
//! tick's orphaned skill given its drain timeout (`tick/load.rs`), and
//! `end --transcript` waiting for Claude Code's last writes
//! (`transcript/settle.rs`). The skill runner's watchdogs measure real
//! durations with `Instant` for the same reason. Tests of the library use
//! [`ManualClock`]. Timestamps are written as RFC 3339 UTC with whole
//! seconds (`2026-05-09T14:50:00Z`), the shape of the contract's examples.

use std::path::{Path, PathBuf};
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

/// A wall reading taken from a file someone else moves
/// (`SDD_LOOP_NOW_FILE`): the RFC 3339 instant the file holds, read on
/// every reading. The file is meant to be replaced by rename, so a reader
/// sees the old instant or the new one; a reading that fails keeps the
/// last good one, which [`FileWall::open`] guarantees there is.
#[derive(Debug)]
pub struct FileWall {
    path: PathBuf,
    last: Mutex<Timestamp>,
}

/// Why a clock file gives no instant.
#[derive(Debug, thiserror::Error)]
pub enum ClockFileError {
    #[error("cannot read the clock file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the clock file {path} holds {text:?}, not an RFC 3339 instant: {source}")]
    Parse {
        path: PathBuf,
        text: String,
        source: jiff::Error,
    },
}

impl FileWall {
    /// Reads `path` once: a clock whose file gives no instant now is
    /// refused, so every later reading has a last good instant to keep.
    pub fn open(path: &Path) -> Result<Self, ClockFileError> {
        let first = read_instant(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            last: Mutex::new(first),
        })
    }

    /// The file's instant, or the last good one.
    pub fn read(&self) -> Timestamp {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(now) = read_instant(&self.path) {
            *last = now;
        }
        *last
    }
}

fn read_instant(path: &Path) -> Result<Timestamp, ClockFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ClockFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text).map_err(|source| ClockFileError::Parse {
        path: path.to_path_buf(),
        text: text.trim().to_owned(),
        source,
    })
}

/// Where a clock's wall reading comes from.
#[derive(Debug)]
pub enum Wall {
    /// The system's real time.
    System,
    /// One instant for the whole process (`SDD_LOOP_NOW`).
    Fixed(Timestamp),
    /// The instant a file holds, moved by someone else (`SDD_LOOP_NOW_FILE`).
    File(FileWall),
}

impl Wall {
    fn read(&self) -> Timestamp {
        match self {
            Wall::System => Timestamp::now(),
            Wall::Fixed(at) => *at,
            Wall::File(file) => file.read(),
        }
    }
}

/// Real waits, the wall reading from a file (`SDD_LOOP_NOW_FILE`).
#[derive(Debug)]
pub struct FileClock(pub FileWall);

impl Clock for FileClock {
    fn now(&self) -> Timestamp {
        self.0.read()
    }
}

/// The harness's clock (`SDD_LOOP_CLOCK=simulated`): waits are simulated
/// — a sleep returns at once and moves the monotonic reading forward by
/// its length — and the wall reading is `wall` (`SDD_LOOP_NOW` or
/// `SDD_LOOP_NOW_FILE`), else the system's. See the module doc for why a
/// wait leaves the wall alone.
#[derive(Debug)]
pub struct SimulatedClock {
    wall: Wall,
    slept: Mutex<Duration>,
}

impl SimulatedClock {
    pub fn new(wall: Option<Timestamp>) -> Self {
        Self::reading(wall.map_or(Wall::System, Wall::Fixed))
    }

    /// Simulated waits, the wall reading from `wall`.
    pub fn reading(wall: Wall) -> Self {
        Self {
            wall,
            slept: Mutex::new(Duration::ZERO),
        }
    }
}

impl Clock for SimulatedClock {
    fn now(&self) -> Timestamp {
        self.wall.read()
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
    fn a_file_clock_reads_the_instant_the_file_holds_now_and_keeps_the_last_good_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clock");
        std::fs::write(&path, "2026-05-09T14:50:00Z\n").unwrap();
        let clock = FileClock(FileWall::open(&path).unwrap());
        assert_eq!(format(clock.now()), "2026-05-09T14:50:00Z");
        let next = dir.path().join("clock.new");
        std::fs::write(&next, "2026-05-09T15:06:00Z").unwrap();
        std::fs::rename(&next, &path).unwrap();
        assert_eq!(format(clock.now()), "2026-05-09T15:06:00Z");
        std::fs::write(&path, "garbage").unwrap();
        assert_eq!(format(clock.now()), "2026-05-09T15:06:00Z");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(format(clock.now()), "2026-05-09T15:06:00Z");
    }

    #[test]
    fn a_clock_file_that_gives_no_instant_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clock");
        let err = FileWall::open(&path).unwrap_err().to_string();
        assert!(
            err.contains("cannot read the clock file") && err.contains("clock"),
            "{err}"
        );
        std::fs::write(&path, "noon").unwrap();
        let err = FileWall::open(&path).unwrap_err().to_string();
        assert!(
            err.contains("holds \"noon\", not an RFC 3339 instant"),
            "{err}"
        );
    }

    #[test]
    fn a_simulated_clock_reading_a_file_moves_with_it_and_simulates_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clock");
        std::fs::write(&path, "2026-05-09T14:50:00Z").unwrap();
        let clock = SimulatedClock::reading(Wall::File(FileWall::open(&path).unwrap()));
        let before = clock.monotonic();
        clock.sleep(Duration::from_secs(600));
        assert!(clock.monotonic() >= before + Duration::from_secs(600));
        assert_eq!(
            format(clock.now()),
            "2026-05-09T14:50:00Z",
            "a wait leaves the wall"
        );
        std::fs::write(&path, "2026-05-09T15:20:00Z").unwrap();
        assert_eq!(format(clock.now()), "2026-05-09T15:20:00Z");
    }

    #[test]
    fn fixed_clock_never_moves() {
        let base = parse("2026-05-09T14:50:00Z").unwrap();
        let clock = FixedClock(base);
        assert_eq!(clock.now(), base);
        assert_eq!(clock.now(), base);
    }
}
