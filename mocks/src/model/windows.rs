//! A subscriber's usage windows on the Messages API (real-agents.md,
//! "Usage windows"): the `anthropic-ratelimit-unified-*` headers every
//! answer carries once a turn gave the account's [`Windows`], and the 429
//! a turn with a `limit` answers.
//!
//! The windows are the account's, not a turn's: a turn's `windows` sets
//! the figures of the windows it names, and every later answer (untooled
//! ones too) carries them until another turn changes them; before any
//! turn gives them, no answer carries any, as for an API key. Claude Code
//! reads the headers only in a subscriber's session (OAuth, no
//! `ANTHROPIC_API_KEY`); other APIs get none.
//!
//! Per window: `…-{5h|7d}-utilization` (a fraction 0–1), `…-{5h|7d}-reset`
//! (Unix seconds), `…-{5h|7d}-status` (`allowed`, `allowed_warning` with
//! `…-{5h|7d}-surpassed-threshold: 0.9` from 90% on, `rejected` for the
//! window whose limit a turn hits); and for the account: `…-status`,
//! `…-reset` and `…-representative-claim` (the limited window, else the
//! fuller one).

use serde::{Deserialize, Serialize};

/// One of the account's windows, as Claude Code names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    FiveHour,
    SevenDay,
}

impl Window {
    pub const ALL: [Window; 2] = [Window::FiveHour, Window::SevenDay];

    /// `five_hour`, `seven_day`: the representative claim's value.
    pub fn name(self) -> &'static str {
        match self {
            Window::FiveHour => "five_hour",
            Window::SevenDay => "seven_day",
        }
    }

    /// The headers' infix: `5h`, `7d`.
    fn short(self) -> &'static str {
        match self {
            Window::FiveHour => "5h",
            Window::SevenDay => "7d",
        }
    }

    /// The 429's text names the window this way.
    pub fn noun(self) -> &'static str {
        match self {
            Window::FiveHour => "5-hour",
            Window::SevenDay => "weekly",
        }
    }
}

/// One window's figure from a turn on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// How much of the window is used, a fraction 0–1.
    pub utilization: f64,
    /// When the window resets, RFC 3339 on the harness's clock
    /// (`2026-05-09T19:00:00Z`); sent as Unix seconds.
    pub resets_at: String,
}

/// A turn's `windows`: the windows it names, each from this answer on.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Windows {
    #[serde(default)]
    pub five_hour: Option<Figure>,
    #[serde(default)]
    pub seven_day: Option<Figure>,
}

impl Windows {
    pub fn get(&self, w: Window) -> Option<&Figure> {
        match w {
            Window::FiveHour => self.five_hour.as_ref(),
            Window::SevenDay => self.seven_day.as_ref(),
        }
    }

    fn get_mut(&mut self, w: Window) -> &mut Option<Figure> {
        match w {
            Window::FiveHour => &mut self.five_hour,
            Window::SevenDay => &mut self.seven_day,
        }
    }

    /// The windows `newer` names replace these.
    pub fn update(&mut self, newer: &Windows) {
        for w in Window::ALL {
            if let Some(f) = newer.get(w) {
                *self.get_mut(w) = Some(f.clone());
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.five_hour.is_none() && self.seven_day.is_none()
    }

    /// The script's rules: a fraction 0–1 and an RFC 3339 reset.
    pub(super) fn check(&self) -> Result<(), (String, String)> {
        for w in Window::ALL {
            let Some(f) = self.get(w) else { continue };
            if !(0.0..=1.0).contains(&f.utilization) {
                return Err((
                    format!(
                        "`{}.utilization` is {}: it is a fraction of the window",
                        w.name(),
                        f.utilization
                    ),
                    "give a number from 0 to 1 (0.30 for 30%)".to_owned(),
                ));
            }
            if reset_seconds(&f.resets_at).is_none() {
                return Err((
                    format!(
                        "`{}.resets_at` is `{}`, not an RFC 3339 instant",
                        w.name(),
                        f.resets_at
                    ),
                    "write it like 2026-05-09T19:00:00Z".to_owned(),
                ));
            }
        }
        Ok(())
    }
}

/// `2026-05-09T19:00:00Z` as Unix seconds.
pub fn reset_seconds(at: &str) -> Option<i64> {
    at.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// From this share on a window is `allowed_warning`, as the API warns.
pub const WARNING_THRESHOLD: f64 = 0.9;

const PREFIX: &str = "anthropic-ratelimit-unified-";

/// The headers an answer carries with `windows` in force; `limited`: the
/// window whose limit this answer (a 429) hits.
pub fn headers(windows: &Windows, limited: Option<Window>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut claim: Option<(Window, f64, i64)> = None;
    for w in Window::ALL {
        let Some(f) = windows.get(w) else { continue };
        let reset = reset_seconds(&f.resets_at).unwrap_or(0);
        let utilization = if limited == Some(w) {
            f.utilization.max(1.0)
        } else {
            f.utilization
        };
        let status = if limited == Some(w) {
            "rejected"
        } else if utilization >= WARNING_THRESHOLD {
            "allowed_warning"
        } else {
            "allowed"
        };
        let name = |field: &str| format!("{PREFIX}{}-{field}", w.short());
        out.push((name("utilization"), utilization.to_string()));
        out.push((name("reset"), reset.to_string()));
        out.push((name("status"), status.to_owned()));
        if status == "allowed_warning" {
            out.push((name("surpassed-threshold"), WARNING_THRESHOLD.to_string()));
        }
        let representative = match (limited, claim) {
            (Some(l), _) => l == w,
            (None, None) => true,
            (None, Some((_, used, _))) => utilization > used,
        };
        if representative {
            claim = Some((w, utilization, reset));
        }
    }
    let limited_reset = limited
        .and_then(|l| windows.get(l))
        .and_then(|f| reset_seconds(&f.resets_at));
    let Some((w, _, reset)) =
        claim.or_else(|| limited.map(|l| (l, 1.0, limited_reset.unwrap_or(0))))
    else {
        return out;
    };
    let status = if limited.is_some() {
        "rejected"
    } else if out.iter().any(|(_, v)| v == "allowed_warning") {
        "allowed_warning"
    } else {
        "allowed"
    };
    out.push((format!("{PREFIX}status"), status.to_owned()));
    if reset > 0 {
        out.push((format!("{PREFIX}reset"), reset.to_string()));
    }
    out.push((format!("{PREFIX}representative-claim"), w.name().to_owned()));
    out
}

/// The 429's message, as the API words a subscriber's limit.
pub fn limit_message(window: Window) -> String {
    format!(
        "mock-model: the account's {} usage limit is reached (anthropic-ratelimit-unified-status: rejected)",
        window.noun()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(five: f64, week: f64) -> Windows {
        Windows {
            five_hour: Some(Figure {
                utilization: five,
                resets_at: "2026-05-09T19:00:00Z".into(),
            }),
            seven_day: Some(Figure {
                utilization: week,
                resets_at: "2026-05-12T09:00:00Z".into(),
            }),
        }
    }

    fn get<'a>(h: &'a [(String, String)], name: &str) -> Option<&'a str> {
        h.iter()
            .find(|(n, _)| n == &format!("{PREFIX}{name}"))
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn each_window_has_its_figure_reset_and_status_and_the_fuller_one_is_claimed() {
        let h = headers(&windows(0.3, 0.92), None);
        assert_eq!(get(&h, "5h-utilization"), Some("0.3"));
        assert_eq!(get(&h, "5h-reset"), Some("1778353200"));
        assert_eq!(get(&h, "5h-status"), Some("allowed"));
        assert_eq!(get(&h, "7d-status"), Some("allowed_warning"));
        assert_eq!(get(&h, "7d-surpassed-threshold"), Some("0.9"));
        assert_eq!(get(&h, "status"), Some("allowed_warning"));
        assert_eq!(get(&h, "representative-claim"), Some("seven_day"));
        assert_eq!(get(&h, "reset"), Some("1778576400"));
    }

    #[test]
    fn a_limit_rejects_its_window_and_claims_it() {
        let h = headers(&windows(0.97, 0.2), Some(Window::FiveHour));
        assert_eq!(get(&h, "5h-status"), Some("rejected"));
        assert_eq!(get(&h, "5h-utilization"), Some("1"));
        assert_eq!(get(&h, "status"), Some("rejected"));
        assert_eq!(get(&h, "representative-claim"), Some("five_hour"));
        assert_eq!(get(&h, "reset"), Some("1778353200"));
        // No figure known: still a rejection naming the window.
        let h = headers(&Windows::default(), Some(Window::SevenDay));
        assert_eq!(get(&h, "status"), Some("rejected"));
        assert_eq!(get(&h, "representative-claim"), Some("seven_day"));
        assert!(headers(&Windows::default(), None).is_empty());
    }
}
