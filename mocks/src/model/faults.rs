//! Faults served before a turn (the mock model's side of issue 18): a 429
//! with `retry-after`, a 500, a 529 `overloaded_error` (Gemini: 503
//! `UNAVAILABLE`), a stream cut mid-message, a body that is not JSON, and
//! a hang — each for `times` attempts, after which the turn is served
//! normally.
//!
//! A turn's faults run in the order listed; [`FaultCounter`] remembers how
//! many the turn in hand has served, so a CLI that retries sees the next
//! fault and then the answer. A cut stream sends the first `after_events`
//! server-sent events of the real answer (default: half of them) and ends
//! the body there, without `message_stop` / `response.completed`; a cut
//! answer that is not streamed is its JSON cut in half.

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// 429 (`rate_limit_error`) with `retry-after: {retry_after}` (default 1 s).
    RateLimited,
    /// 500 (`api_error` / `server_error`).
    ServerError,
    /// 529 (`overloaded_error`).
    Overloaded,
    /// The answer's stream ends after `after_events` events.
    Cut,
    /// A 200 whose body is not valid JSON (streamed: one event whose data
    /// is cut inside its JSON).
    Malformed,
    /// No answer for `seconds` (default 300), then a 504: a model that
    /// hangs, for a CLI's own timeout or the engine's stall watchdog.
    Hang,
}

impl FaultKind {
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::RateLimited => "rate_limited",
            FaultKind::ServerError => "server_error",
            FaultKind::Overloaded => "overloaded",
            FaultKind::Cut => "cut",
            FaultKind::Malformed => "malformed",
            FaultKind::Hang => "hang",
        }
    }
}

/// One fault of a turn, as the script gives it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    pub fault: FaultKind,
    /// How many attempts it answers [default: 1].
    #[serde(default = "one")]
    pub times: u32,
    /// `rate_limited` only: the `retry-after` header, in seconds [default: 1].
    #[serde(default)]
    pub retry_after: Option<u64>,
    /// `cut` only: how many events are sent before the cut [default: half].
    #[serde(default)]
    pub after_events: Option<u32>,
    /// `hang` only: how long no answer comes, in seconds [default: 300].
    #[serde(default)]
    pub seconds: Option<u64>,
}

fn one() -> u32 {
    1
}

impl FaultSpec {
    /// The script's rules a fault must meet: `(message, help)` otherwise.
    pub(super) fn check(&self) -> Result<(), (String, String)> {
        let name = self.fault.name();
        if self.times == 0 {
            return Err((
                format!("fault `{name}` has `times: 0`"),
                "give it 1 or more attempts, or remove it".to_owned(),
            ));
        }
        if self.retry_after.is_some() && self.fault != FaultKind::RateLimited {
            return Err((
                format!("`retry_after` applies to `rate_limited`, not to `{name}`"),
                "remove `retry_after`, or make the fault `rate_limited`".to_owned(),
            ));
        }
        if self.seconds.is_some() && self.fault != FaultKind::Hang {
            return Err((
                format!("`seconds` applies to `hang`, not to `{name}`"),
                "remove `seconds`, or make the fault `hang`".to_owned(),
            ));
        }
        if self.after_events.is_some() && self.fault != FaultKind::Cut {
            return Err((
                format!("`after_events` applies to `cut`, not to `{name}`"),
                "remove `after_events`, or make the fault `cut`".to_owned(),
            ));
        }
        Ok(())
    }
}

/// A fault as served, for the answer and the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServedFault {
    pub kind: FaultKind,
    /// 1-based attempt of this fault, of `of`.
    pub attempt: u32,
    pub of: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// For a cut: the events sent (or, unstreamed, the bytes sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_events: Option<u32>,
    /// For a hang: how long the answer was held back, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<u64>,
}

/// How many faults the turn in hand has served.
#[derive(Debug, Default)]
pub struct FaultCounter {
    turn: usize,
    served: u32,
}

impl FaultCounter {
    /// The fault the next attempt at `turn` gets, if any is left, counted.
    pub fn next(&mut self, turn: usize, faults: &[Spanned<FaultSpec>]) -> Option<ServedFault> {
        if self.turn != turn {
            self.turn = turn;
            self.served = 0;
        }
        let mut before = 0u32;
        for spec in faults.iter().map(|f| &f.value) {
            if self.served < before + spec.times {
                let attempt = self.served - before + 1;
                self.served += 1;
                return Some(ServedFault {
                    kind: spec.fault,
                    attempt,
                    of: spec.times,
                    retry_after: match spec.fault {
                        FaultKind::RateLimited => Some(spec.retry_after.unwrap_or(1)),
                        _ => None,
                    },
                    after_events: spec.after_events,
                    seconds: match spec.fault {
                        FaultKind::Hang => Some(spec.seconds.unwrap_or(HANG_SECONDS)),
                        _ => None,
                    },
                });
            }
            before += spec.times;
        }
        None
    }
}

/// How long a `hang` holds its answer back unless the script says.
pub const HANG_SECONDS: u64 = 300;

/// Where a cut falls in `total` parts: `after` if given, else half, and
/// always at least one part short of the whole.
pub fn cut_point(after: Option<u32>, total: usize) -> usize {
    let wanted = after.map_or(total / 2, |n| usize::try_from(n).unwrap_or(usize::MAX));
    wanted.max(1).min(total.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(fault: FaultKind, times: u32) -> Spanned<FaultSpec> {
        let at = serde_saphyr::Location::UNKNOWN;
        Spanned::new(
            FaultSpec {
                fault,
                times,
                retry_after: None,
                after_events: None,
                seconds: None,
            },
            at,
            at,
        )
    }

    #[test]
    fn faults_run_in_order_then_the_turn_is_served() {
        let faults = [spec(FaultKind::Overloaded, 2), spec(FaultKind::Cut, 1)];
        let mut counter = FaultCounter::default();
        let served: Vec<_> = std::iter::from_fn(|| counter.next(0, &faults))
            .map(|f| (f.kind, f.attempt, f.of))
            .collect();
        assert_eq!(
            served,
            [
                (FaultKind::Overloaded, 1, 2),
                (FaultKind::Overloaded, 2, 2),
                (FaultKind::Cut, 1, 1)
            ]
        );
        assert_eq!(counter.next(1, &faults).map(|f| f.attempt), Some(1));
    }

    #[test]
    fn a_cut_is_never_the_whole_answer() {
        assert_eq!(cut_point(None, 8), 4);
        assert_eq!(cut_point(Some(20), 8), 7);
        assert_eq!(cut_point(Some(0), 8), 1);
    }
}
