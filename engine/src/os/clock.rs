//! The clock seam: every timestamp the engine records comes from a [`Clock`].
//!
//! Production uses [`SystemClock`]. The binary reads `SDD_LOOP_NOW`
//! (RFC 3339) and builds a [`FixedClock`]: every timestamp of that tick is
//! that instant, so a scenario places each tick anywhere in a run without
//! waiting for real minutes, and what the tick records is reproducible to
//! the byte. (Watchdogs and lock polling measure real durations with
//! `Instant`, never with this clock.) Tests of the library use
//! [`ManualClock`]. Timestamps are written as RFC 3339 UTC with whole
//! seconds (`2026-05-09T14:50:00Z`), the shape of the contract's examples.

use std::sync::Mutex;

use jiff::{SignedDuration, Timestamp};

/// The source of "now".
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> Timestamp;
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
    fn fixed_clock_never_moves() {
        let base = parse("2026-05-09T14:50:00Z").unwrap();
        let clock = FixedClock(base);
        assert_eq!(clock.now(), base);
        assert_eq!(clock.now(), base);
    }
}
