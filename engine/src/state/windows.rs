//! `.sdd/loop/windows.json`: what the loop knows of the account's usage
//! windows — Claude Code's 5-hour and weekly limits — and the wait a limit
//! started (docs/src/usage-windows.md).
//!
//! The windows are the account's, not a skill's: one file serves the work
//! and review loops alike. [`WindowsState`] keeps the last figure read of
//! each window (how much of it is used, when it resets, where it was read)
//! and, while the loop waits for a reset, the [`Wait`]. A figure whose
//! reset has passed reads as 0% used: the window started again, which is
//! known, not guessed. A wait whose `until` has passed is over; nothing
//! has to clear it.
//!
//! [`WindowsReport`] is what the work reports of the windows (the skill
//! result's `usage_windows`): the figures it read last and, when it hit a
//! limit (a 429), which window and its reset. Written atomically and
//! durably like every state file ([`crate::state::files`]).

use std::fmt;
use std::path::Path;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::state::files::{self, FileError};

/// One of the account's usage windows.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    /// The rolling 5-hour window.
    FiveHour,
    /// The weekly (7-day) window.
    SevenDay,
}

impl Window {
    pub const ALL: [Window; 2] = [Window::FiveHour, Window::SevenDay];

    /// The recorded name: `five_hour`, `seven_day` (Claude Code's own).
    pub fn name(self) -> &'static str {
        match self {
            Window::FiveHour => "five_hour",
            Window::SevenDay => "seven_day",
        }
    }

    /// How the reports say it: `5-hour`, `weekly`.
    pub fn noun(self) -> &'static str {
        match self {
            Window::FiveHour => "5-hour",
            Window::SevenDay => "weekly",
        }
    }

    /// The flag setting its ceiling.
    pub fn flag(self) -> &'static str {
        match self {
            Window::FiveHour => "--max-5h-percent",
            Window::SevenDay => "--max-week-percent",
        }
    }

    /// A window named by Claude Code's `rateLimitType` (`five_hour`,
    /// `seven_day`, `seven_day_opus`, …): every weekly kind is the weekly
    /// window; anything else is taken for the 5-hour one.
    pub fn from_limit_type(kind: &str) -> Self {
        let kind = kind.to_ascii_lowercase();
        if kind.contains("seven") || kind.contains("week") || kind.contains("7d") {
            Window::SevenDay
        } else {
            Window::FiveHour
        }
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One window's figure as the work read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// How much of the window is used, 0–100.
    pub used_percent: f64,
    /// When the window resets (RFC 3339).
    pub resets_at: String,
}

/// A limit the work hit: the API answered 429 for this window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limited {
    pub window: Window,
    /// When the window resets (RFC 3339), when the answer said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
}

/// What the work reports of the usage windows (the skill result's
/// `usage_windows`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowsReport {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub five_hour: Option<Figure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seven_day: Option<Figure>,
    /// The work hit a window's limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited: Option<Limited>,
}

impl WindowsReport {
    pub fn figure(&self, w: Window) -> Option<&Figure> {
        match w {
            Window::FiveHour => self.five_hour.as_ref(),
            Window::SevenDay => self.seven_day.as_ref(),
        }
    }

    pub fn figure_mut(&mut self, w: Window) -> &mut Option<Figure> {
        match w {
            Window::FiveHour => &mut self.five_hour,
            Window::SevenDay => &mut self.seven_day,
        }
    }

    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// A window's figure as the loop recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Recorded {
    /// 0–100.
    pub used_percent: f64,
    /// RFC 3339.
    pub resets_at: String,
    /// When it was read (RFC 3339).
    pub read_at: String,
    /// Who read it: `claude-stream`, `skill-result`, `statusline`.
    pub source: String,
}

impl Recorded {
    /// The share used at `now`: 0 once the window has reset.
    pub fn used_at(&self, now: Timestamp) -> f64 {
        match self.reset() {
            Some(reset) if reset <= now => 0.0,
            _ => self.used_percent,
        }
    }

    pub fn reset(&self) -> Option<Timestamp> {
        crate::os::clock::parse(&self.resets_at).ok()
    }
}

/// The loop waits for a window to reset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Wait {
    pub window: Window,
    /// The reset (RFC 3339): the first tick at or after it goes on.
    pub until: String,
    /// Why: the limit the API answered, or the ceiling reached.
    pub reason: String,
    /// When the wait began (RFC 3339).
    pub since: String,
}

impl Wait {
    pub fn until(&self) -> Option<Timestamp> {
        crate::os::clock::parse(&self.until).ok()
    }

    /// Whether the loop still waits at `now` (an unreadable `until` is no
    /// wait: it would never end).
    pub fn holds_at(&self, now: Timestamp) -> bool {
        self.until().is_some_and(|u| u > now)
    }
}

/// One window on a history line: its share before and after the tick's
/// work, the tick's own share, and its reset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowLine {
    /// Before the work (0–100); absent when no figure was known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<f64>,
    /// After the work (0–100).
    pub after: f64,
    /// The tick's share: what the work added to the window (the whole
    /// figure when the window reset during the tick); absent when no
    /// figure was known before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub this_tick: Option<f64>,
    /// RFC 3339.
    pub resets_at: String,
}

/// A history line's `usage_windows`: present only when the loop reads
/// the windows (a window budget, or figures the work reported).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowsLine {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub five_hour: Option<WindowLine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seven_day: Option<WindowLine>,
    /// The limit the work hit (a 429).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited: Option<Limited>,
    /// The wait this tick started: the next ticks before `until` wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<Wait>,
}

impl WindowsLine {
    pub fn window_mut(&mut self, w: Window) -> &mut Option<WindowLine> {
        match w {
            Window::FiveHour => &mut self.five_hour,
            Window::SevenDay => &mut self.seven_day,
        }
    }
}

/// The contents of `windows.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowsState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub five_hour: Option<Recorded>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seven_day: Option<Recorded>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<Wait>,
    /// Windows a budgeted tick's work reported no figure for: the next
    /// tick refuses to start on a ceiling it cannot check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreported: Vec<Window>,
}

/// A `windows.json` that is not what the engine writes.
#[derive(Debug, thiserror::Error)]
pub enum WindowsError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("usage-window file {path} is not valid: {why}")]
    Invalid { path: String, why: String },
}

impl WindowsError {
    pub fn help(&self) -> String {
        match self {
            WindowsError::File(e) => e.help(),
            WindowsError::Invalid { path, .. } => format!(
                "delete {path}: the next tick that reads the windows writes it again (a wait it held is forgotten)"
            ),
        }
    }
}

impl WindowsState {
    pub fn recorded(&self, w: Window) -> Option<&Recorded> {
        match w {
            Window::FiveHour => self.five_hour.as_ref(),
            Window::SevenDay => self.seven_day.as_ref(),
        }
    }

    pub fn recorded_mut(&mut self, w: Window) -> &mut Option<Recorded> {
        match w {
            Window::FiveHour => &mut self.five_hour,
            Window::SevenDay => &mut self.seven_day,
        }
    }

    /// The file at `path`; empty when there is none.
    pub fn load(path: &Path) -> Result<Self, WindowsError> {
        let Some(bytes) = files::read_bytes(path)? else {
            return Ok(Self::default());
        };
        serde_json::from_slice(&bytes).map_err(|e| WindowsError::Invalid {
            path: path.display().to_string(),
            why: e.to_string(),
        })
    }

    /// `windows.json` at `path` with the figures of a session's statusLine
    /// (`statusline.json` at `statusline`) over its own where those are as
    /// new or newer: the statusLine writes only its own file, so a tick's
    /// wait is never overwritten by a refresh. A damaged or unreadable
    /// `statusline.json` is no figure (the next refresh writes it whole).
    pub fn load_with_statusline(path: &Path, statusline: &Path) -> Result<Self, WindowsError> {
        let mut state = Self::load(path)?;
        let Ok(seen) = Self::load(statusline) else {
            return Ok(state);
        };
        for w in Window::ALL {
            let Some(fig) = seen.recorded(w) else {
                continue;
            };
            let newer = match (state.recorded(w), clock_of(&fig.read_at)) {
                (None, _) => true,
                (Some(own), Some(read)) => clock_of(&own.read_at).is_none_or(|o| read >= o),
                (Some(_), None) => false,
            };
            if newer {
                *state.recorded_mut(w) = Some(fig.clone());
                state.unreported.retain(|u| *u != w);
            }
        }
        Ok(state)
    }

    /// Replaces the file atomically and durably.
    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        self.save_with(path, files::Durability::Durable)
    }

    /// Replaces the file atomically, waiting for the disk only as far as
    /// `durability` asks.
    pub fn save_with(&self, path: &Path, durability: files::Durability) -> Result<(), FileError> {
        let mut json = serde_json::to_vec_pretty(self).expect("windows serialise");
        json.push(b'\n');
        files::write_atomic_with(path, &json, durability)
    }
}

fn clock_of(t: &str) -> Option<Timestamp> {
    t.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_past_its_reset_reads_as_an_empty_window() {
        let r = Recorded {
            used_percent: 80.0,
            resets_at: "2026-05-09T19:00:00Z".into(),
            read_at: "2026-05-09T14:00:00Z".into(),
            source: "claude-stream".into(),
        };
        assert_eq!(r.used_at("2026-05-09T18:59:59Z".parse().unwrap()), 80.0);
        assert_eq!(r.used_at("2026-05-09T19:00:00Z".parse().unwrap()), 0.0);
    }

    #[test]
    fn a_wait_holds_until_its_reset_and_not_at_it() {
        let w = Wait {
            window: Window::FiveHour,
            until: "2026-05-09T19:00:00Z".into(),
            reason: "x".into(),
            since: "2026-05-09T14:00:00Z".into(),
        };
        assert!(w.holds_at("2026-05-09T18:59:59Z".parse().unwrap()));
        assert!(!w.holds_at("2026-05-09T19:00:00Z".parse().unwrap()));
    }

    #[test]
    fn the_file_round_trips_and_a_missing_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("windows.json");
        assert_eq!(WindowsState::load(&path).unwrap(), WindowsState::default());
        let state = WindowsState {
            five_hour: Some(Recorded {
                used_percent: 55.0,
                resets_at: "2026-05-09T19:00:00Z".into(),
                read_at: "2026-05-09T14:00:00Z".into(),
                source: "claude-stream".into(),
            }),
            unreported: vec![Window::SevenDay],
            ..WindowsState::default()
        };
        state.save(&path).unwrap();
        assert_eq!(WindowsState::load(&path).unwrap(), state);
        std::fs::write(&path, "{").unwrap();
        assert!(matches!(
            WindowsState::load(&path),
            Err(WindowsError::Invalid { .. })
        ));
    }

    #[test]
    fn the_statuslines_figures_are_read_over_the_ticks_where_as_new_or_newer() {
        let dir = tempfile::tempdir().unwrap();
        let (own, seen) = (
            dir.path().join("windows.json"),
            dir.path().join("statusline.json"),
        );
        let fig = |used: f64, read_at: &str, source: &str| Recorded {
            used_percent: used,
            resets_at: "2026-05-09T19:00:00Z".into(),
            read_at: read_at.into(),
            source: source.into(),
        };
        let wait = Wait {
            window: Window::FiveHour,
            until: "2026-05-09T19:00:00Z".into(),
            reason: "x".into(),
            since: "2026-05-09T14:00:00Z".into(),
        };
        WindowsState {
            five_hour: Some(fig(50.0, "2026-05-09T14:10:00Z", "claude-stream")),
            seven_day: Some(fig(20.0, "2026-05-09T14:10:00Z", "claude-stream")),
            wait: Some(wait.clone()),
            unreported: vec![Window::SevenDay],
        }
        .save(&own)
        .unwrap();
        // No statusLine file: windows.json as it is.
        let alone = WindowsState::load_with_statusline(&own, &seen).unwrap();
        assert_eq!(alone, WindowsState::load(&own).unwrap());
        WindowsState {
            five_hour: Some(fig(55.0, "2026-05-09T14:10:00Z", "statusline")),
            seven_day: Some(fig(10.0, "2026-05-09T14:00:00Z", "statusline")),
            ..WindowsState::default()
        }
        .save(&seen)
        .unwrap();
        let merged = WindowsState::load_with_statusline(&own, &seen).unwrap();
        // As new: the statusLine's; older: the tick's own, still unreported.
        assert_eq!(merged.five_hour.as_ref().unwrap().used_percent, 55.0);
        assert_eq!(merged.seven_day.as_ref().unwrap().used_percent, 20.0);
        assert_eq!(merged.unreported, vec![Window::SevenDay]);
        assert_eq!(merged.wait, Some(wait.clone()));
        WindowsState {
            seven_day: Some(fig(25.0, "2026-05-09T14:20:00Z", "statusline")),
            ..WindowsState::default()
        }
        .save(&seen)
        .unwrap();
        let merged = WindowsState::load_with_statusline(&own, &seen).unwrap();
        assert_eq!(merged.seven_day.as_ref().unwrap().used_percent, 25.0);
        assert!(merged.unreported.is_empty(), "a figure read is reported");
        // A torn statusLine file is no figure, never an error.
        std::fs::write(&seen, "{\"five_h").unwrap();
        let torn = WindowsState::load_with_statusline(&own, &seen).unwrap();
        assert_eq!(torn, WindowsState::load(&own).unwrap());
    }

    #[test]
    fn limit_types_name_their_window() {
        assert_eq!(Window::from_limit_type("five_hour"), Window::FiveHour);
        assert_eq!(Window::from_limit_type("seven_day"), Window::SevenDay);
        assert_eq!(Window::from_limit_type("seven_day_opus"), Window::SevenDay);
    }
}
