//! The window budgets: ceilings on how much of Claude Code's 5-hour and
//! weekly usage windows the loop may leave used (`--max-5h-percent`,
//! `--max-week-percent`; docs/src/usage-windows.md).
//!
//! Pure rules, no I/O: what a 429's text says of the window and its reset
//! ([`limit_in_text`]), what a tick's work leaves the loop to do once its
//! figures are known ([`after_work`]: go on, wait for a reset, or stop),
//! and the words the reports use. The 5-hour ceiling and any limit the
//! API answered **wait** — the run is not over, the window comes back
//! within hours; the weekly ceiling **stops** the run (`usage_window`),
//! naming its reset. Unknown is not zero: a ceiling with no figure to
//! check it against is the tick's to refuse, never read as 0% used.

use jiff::{SignedDuration, Timestamp, ToSpan};

use crate::os::clock;
use crate::rules::stop::{Fired, StopCause};
use crate::state::windows::{Limited, Wait, Window, WindowsLine, WindowsState};

/// The two window ceilings, in percent of the window; `None`: not set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WindowCeilings {
    pub five_hour: Option<f64>,
    pub seven_day: Option<f64>,
}

impl WindowCeilings {
    pub fn get(&self, w: Window) -> Option<f64> {
        match w {
            Window::FiveHour => self.five_hour,
            Window::SevenDay => self.seven_day,
        }
    }

    /// Whether any window budget is set.
    pub fn any(&self) -> bool {
        self.five_hour.is_some() || self.seven_day.is_some()
    }

    /// The budgeted windows with their ceilings.
    pub fn set(&self) -> impl Iterator<Item = (Window, f64)> + '_ {
        Window::ALL
            .into_iter()
            .filter_map(|w| self.get(w).map(|c| (w, c)))
    }
}

/// `42%`, `42.5%`.
pub fn percent(p: f64) -> String {
    if (p - p.round()).abs() < 0.05 {
        format!("{:.0}%", p.round())
    } else {
        format!("{p:.1}%")
    }
}

/// How long until `at`: `42 min`, `3 h 12 min`, `2 d 5 h`.
pub fn remaining(now: Timestamp, at: Timestamp) -> String {
    let secs = at.duration_since(now).as_secs().max(0);
    let minutes = (secs + 59) / 60;
    if minutes < 60 {
        format!("{minutes} min")
    } else if minutes < 48 * 60 {
        let (h, m) = (minutes / 60, minutes % 60);
        if m == 0 {
            format!("{h} h")
        } else {
            format!("{h} h {m} min")
        }
    } else {
        let hours = minutes / 60;
        let (d, h) = (hours / 24, hours % 24);
        if h == 0 {
            format!("{d} d")
        } else {
            format!("{d} d {h} h")
        }
    }
}

/// A reset as the reports say it: `19:31 UTC` within a day,
/// `2026-05-12 19:31 UTC` further off.
pub fn reset_time(now: Timestamp, at: Timestamp) -> String {
    let format = if at.duration_since(now) < SignedDuration::from_hours(24) {
        "%H:%M UTC"
    } else {
        "%Y-%m-%d %H:%M UTC"
    };
    at.strftime(format).to_string()
}

/// The note of a tick that waits: `waiting for the 5-hour window to
/// reset at 19:31 UTC (42 min)`.
pub fn waiting_note(wait: &Wait, now: Timestamp) -> String {
    let until = wait.until().unwrap_or(now);
    format!(
        "waiting for the {} window to reset at {} ({}) — {}; this tick spends nothing and uses no iteration",
        wait.window.noun(),
        reset_time(now, until),
        remaining(now, until),
        wait.reason
    )
}

/// The status block's line for a tick that read the windows: each
/// window before and after the work, its reset, and the tick's share —
/// `Usage windows: 5-hour 55% → 80%, resets 19:00 UTC (this tick: 25% of
/// the 5-hour window) · weekly …`.
pub fn status_line(line: &WindowsLine, now: Timestamp) -> Option<String> {
    let parts: Vec<String> = Window::ALL
        .into_iter()
        .filter_map(|w| {
            let l = match w {
                Window::FiveHour => line.five_hour.as_ref(),
                Window::SevenDay => line.seven_day.as_ref(),
            }?;
            let figures = match l.before {
                Some(b) => format!("{} → {}", percent(b), percent(l.after)),
                None => format!("{} (no figure before this tick)", percent(l.after)),
            };
            let reset = clock::parse(&l.resets_at)
                .map(|r| format!(", resets {}", reset_time(now, r)))
                .unwrap_or_default();
            let share = l
                .this_tick
                .map(|t| format!(" (this tick: {} of the {} window)", percent(t), w.noun()))
                .unwrap_or_default();
            Some(format!("{} {figures}{reset}{share}", w.noun()))
        })
        .collect();
    (!parts.is_empty()).then(|| format!("Usage windows: {}", parts.join(" · ")))
}

/// The limit a 429's text names — Claude Code's "You've hit your 5-hour
/// limit · resets 7:31pm (UTC)" (the `-p` result, `StopFailure`'s
/// message) — with its reset: the next such time after `now`, in the
/// zone it names (UTC when it names none, or one this system lacks); or,
/// when a reset is not today, the date it gives too ("resets Nov 1,
/// 2027, 7pm (UTC)", as 2.1.332 words it).
pub fn limit_in_text(text: &str, now: Timestamp) -> Option<Limited> {
    static LIMIT: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = LIMIT.get_or_init(|| {
        regex::Regex::new(
            r"(?i)hit your ([a-z0-9][a-z0-9 -]{0,30}?) limit(?:\s*[·•.,-]?\s*resets\s+(?:([a-z]{3,9})\.?\s+(\d{1,2}),?\s+(\d{4}),?\s+(?:at\s+)?)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?(?:\s*\(([^)]{1,64})\))?)?",
        )
        .expect("the limit pattern compiles")
    });
    let caps = re.captures(text)?;
    let kind = caps.get(1).map_or("", |m| m.as_str()).to_ascii_lowercase();
    let window = if kind.contains("week") || kind.contains("7-day") {
        Window::SevenDay
    } else {
        Window::FiveHour
    };
    let resets_at = caps.get(5).and_then(|h| {
        let mut hour: i8 = h.as_str().parse().ok()?;
        let minute: i8 = caps.get(6).map_or(Some(0), |m| m.as_str().parse().ok())?;
        match caps
            .get(7)
            .map(|m| m.as_str().to_ascii_lowercase())
            .as_deref()
        {
            Some("pm") if hour < 12 => hour += 12,
            Some("am") if hour == 12 => hour = 0,
            _ => {}
        }
        let zone = caps
            .get(8)
            .and_then(|z| jiff::tz::TimeZone::get(z.as_str().trim()).ok())
            .unwrap_or(jiff::tz::TimeZone::UTC);
        let local = now.to_zoned(zone);
        let date = match (caps.get(2), caps.get(3), caps.get(4)) {
            (Some(month), Some(day), Some(year)) => jiff::civil::Date::new(
                year.as_str().parse().ok()?,
                month_number(month.as_str())?,
                day.as_str().parse().ok()?,
            )
            .ok()?,
            _ => local.date(),
        };
        let at = date
            .at(hour, minute, 0, 0)
            .to_zoned(local.time_zone().clone())
            .ok()?;
        let at = if at.timestamp() <= now && caps.get(2).is_none() {
            at.checked_add(1.day()).ok()?
        } else {
            at
        };
        Some(clock::format(at.timestamp()))
    });
    Some(Limited { window, resets_at })
}

/// `Nov`, `November` → 11.
fn month_number(name: &str) -> Option<i8> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let name = name.to_ascii_lowercase();
    let index = MONTHS.iter().position(|m| name.starts_with(m))?;
    i8::try_from(index + 1).ok()
}

/// How long a limit whose reset nobody gave is waited out before a tick
/// tries again: one answer from the API is cheap, an hour of fires
/// spending nothing costs nothing.
pub const UNKNOWN_RESET_WAIT: SignedDuration = SignedDuration::from_hours(1);

/// What the loop does after a tick whose figures are in `state`.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    Go,
    /// Wait for this reset; the run goes on after it.
    Wait(Wait),
    /// The weekly ceiling: the run stops.
    Stop(Fired),
}

/// After the work: a limit the API answered waits for its reset,
/// whatever the budgets say; then the 5-hour ceiling reached waits for
/// that window's reset; then the weekly ceiling reached stops the run.
pub fn after_work(
    state: &WindowsState,
    limited: Option<&Limited>,
    ceilings: &WindowCeilings,
    now: Timestamp,
) -> Next {
    let since = clock::format(now);
    if let Some(l) = limited {
        let until = l
            .resets_at
            .as_deref()
            .and_then(|r| clock::parse(r).ok())
            .or_else(|| state.recorded(l.window).and_then(|r| r.reset()))
            .filter(|u| *u > now);
        let (until, reason) = match until {
            Some(u) => (u, format!("the {} window's limit was hit", l.window.noun())),
            None => (
                now + UNKNOWN_RESET_WAIT,
                format!(
                    "the {} window's limit was hit and its reset was not given: trying again in an hour",
                    l.window.noun()
                ),
            ),
        };
        return Next::Wait(Wait {
            window: l.window,
            until: clock::format(until),
            reason,
            since,
        });
    }
    if let Some(reached) = reached(state, ceilings, Window::FiveHour, now) {
        return Next::Wait(Wait {
            window: Window::FiveHour,
            until: clock::format(reached.reset),
            reason: reached.phrase(),
            since,
        });
    }
    if let Some(reached) = reached(state, ceilings, Window::SevenDay, now) {
        return Next::Stop(weekly_stop(&reached, now));
    }
    Next::Go
}

/// A window at or past its ceiling.
#[derive(Debug, Clone, PartialEq)]
pub struct Reached {
    pub window: Window,
    pub used: f64,
    pub ceiling: f64,
    pub reset: Timestamp,
}

impl Reached {
    /// `5-hour window at 80% (ceiling 75%)`.
    pub fn phrase(&self) -> String {
        format!(
            "{} window at {} (ceiling {})",
            self.window.noun(),
            percent(self.used),
            percent(self.ceiling)
        )
    }
}

/// Whether window `w` has reached its ceiling at `now` (a window past its
/// reset is empty and reaches nothing).
pub fn reached(
    state: &WindowsState,
    ceilings: &WindowCeilings,
    w: Window,
    now: Timestamp,
) -> Option<Reached> {
    let ceiling = ceilings.get(w)?;
    let recorded = state.recorded(w)?;
    let reset = recorded.reset()?;
    let used = recorded.used_at(now);
    (reset > now && used >= ceiling).then_some(Reached {
        window: w,
        used,
        ceiling,
        reset,
    })
}

/// The weekly ceiling's stop, its reset named.
pub fn weekly_stop(r: &Reached, now: Timestamp) -> Fired {
    Fired::new(
        StopCause::UsageWindow,
        format!(
            "Usage window budget reached: {} — it resets at {} (in {}); raise {} or resume after the reset",
            r.phrase(),
            reset_time(now, r.reset),
            remaining(now, r.reset),
            r.window.flag()
        ),
    )
}

/// `--max-5h-percent` and `--max-week-percent` take a share of the window
/// above 0 and at most 100.
pub fn valid_ceiling(p: f64) -> bool {
    p.is_finite() && p > 0.0 && p <= 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::windows::Recorded;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn state(five: f64, week: f64) -> WindowsState {
        let rec = |used: f64, reset: &str| Recorded {
            used_percent: used,
            resets_at: reset.into(),
            read_at: "2026-05-09T14:00:00Z".into(),
            source: "claude-stream".into(),
        };
        WindowsState {
            five_hour: Some(rec(five, "2026-05-09T19:00:00Z")),
            seven_day: Some(rec(week, "2026-05-12T09:00:00Z")),
            ..WindowsState::default()
        }
    }

    const BOTH: WindowCeilings = WindowCeilings {
        five_hour: Some(75.0),
        seven_day: Some(50.0),
    };

    #[test]
    fn claude_codes_limit_text_names_the_window_and_the_next_reset() {
        let now = at("2026-05-09T14:00:00Z");
        let l = limit_in_text("You've hit your 5-hour limit · resets 7:31pm (UTC)", now).unwrap();
        assert_eq!(l.window, Window::FiveHour);
        assert_eq!(l.resets_at.as_deref(), Some("2026-05-09T19:31:00Z"));
        // Already past today: tomorrow's.
        let l = limit_in_text("You've hit your weekly limit · resets 9am (UTC)", now).unwrap();
        assert_eq!(l.window, Window::SevenDay);
        assert_eq!(l.resets_at.as_deref(), Some("2026-05-10T09:00:00Z"));
        // A reset on another day carries its date (Claude Code 2.1.332).
        let l = limit_in_text(
            "You've hit your 5-hour limit · resets Nov 1, 2027, 7pm (UTC)",
            now,
        )
        .unwrap();
        assert_eq!(l.resets_at.as_deref(), Some("2027-11-01T19:00:00Z"));
        let l = limit_in_text("claude: result error: You've hit your 5-hour limit", now).unwrap();
        assert_eq!(l.resets_at, None);
        assert_eq!(limit_in_text("the tests failed", now), None);
    }

    #[test]
    fn a_limit_waits_for_its_reset_whatever_the_budgets() {
        let now = at("2026-05-09T14:00:00Z");
        let l = Limited {
            window: Window::FiveHour,
            resets_at: Some("2026-05-09T19:31:00Z".into()),
        };
        let Next::Wait(w) = after_work(
            &WindowsState::default(),
            Some(&l),
            &WindowCeilings::default(),
            now,
        ) else {
            panic!()
        };
        assert_eq!(w.until, "2026-05-09T19:31:00Z");
        assert_eq!(
            waiting_note(&w, now),
            "waiting for the 5-hour window to reset at 19:31 UTC (5 h 31 min) — the 5-hour window's limit was hit; this tick spends nothing and uses no iteration"
        );
        // No reset given: an hour.
        let l = Limited {
            window: Window::FiveHour,
            resets_at: None,
        };
        let Next::Wait(w) = after_work(&WindowsState::default(), Some(&l), &BOTH, now) else {
            panic!()
        };
        assert_eq!(w.until, "2026-05-09T15:00:00Z");
    }

    #[test]
    fn the_five_hour_ceiling_waits_and_the_weekly_one_stops() {
        let now = at("2026-05-09T14:00:00Z");
        assert_eq!(after_work(&state(74.9, 10.0), None, &BOTH, now), Next::Go);
        let Next::Wait(w) = after_work(&state(75.0, 10.0), None, &BOTH, now) else {
            panic!()
        };
        assert_eq!(
            (w.window, w.until.as_str()),
            (Window::FiveHour, "2026-05-09T19:00:00Z")
        );
        assert_eq!(w.reason, "5-hour window at 75% (ceiling 75%)");
        let Next::Stop(f) = after_work(&state(10.0, 50.0), None, &BOTH, now) else {
            panic!()
        };
        assert_eq!(f.cause, StopCause::UsageWindow);
        assert_eq!(
            f.message,
            "Usage window budget reached: weekly window at 50% (ceiling 50%) — it resets at 2026-05-12 09:00 UTC (in 2 d 19 h); raise --max-week-percent or resume after the reset"
        );
        // Unset ceilings check nothing; a window past its reset is empty.
        assert_eq!(
            after_work(&state(99.0, 99.0), None, &WindowCeilings::default(), now),
            Next::Go
        );
        assert_eq!(
            after_work(&state(99.0, 10.0), None, &BOTH, at("2026-05-09T19:00:00Z")),
            Next::Go
        );
    }

    #[test]
    fn the_status_line_shows_each_window_before_and_after_and_the_ticks_share() {
        use crate::state::windows::WindowLine;
        let now = at("2026-05-09T14:20:00Z");
        let line = WindowsLine {
            five_hour: Some(WindowLine {
                before: Some(55.0),
                after: 80.0,
                this_tick: Some(25.0),
                resets_at: "2026-05-09T19:00:00Z".into(),
            }),
            seven_day: Some(WindowLine {
                before: None,
                after: 10.0,
                this_tick: None,
                resets_at: "2026-05-12T09:00:00Z".into(),
            }),
            ..WindowsLine::default()
        };
        assert_eq!(
            status_line(&line, now).unwrap(),
            "Usage windows: 5-hour 55% → 80%, resets 19:00 UTC (this tick: 25% of the 5-hour window) · weekly 10% (no figure before this tick), resets 2026-05-12 09:00 UTC"
        );
        assert_eq!(status_line(&WindowsLine::default(), now), None);
    }

    #[test]
    fn remaining_time_reads_at_every_scale() {
        let now = at("2026-05-09T14:00:00Z");
        assert_eq!(remaining(now, at("2026-05-09T14:42:00Z")), "42 min");
        assert_eq!(remaining(now, at("2026-05-09T17:00:00Z")), "3 h");
        assert_eq!(remaining(now, at("2026-05-12T19:00:00Z")), "3 d 5 h");
        assert_eq!(percent(42.0), "42%");
        assert_eq!(percent(42.5), "42.5%");
    }
}
