//! A run as a reviewer reads it: per tick, how it ended and, for each
//! history line it appended, the outcome, the gates asked (question and
//! answer), the budget used against each ceiling, the usage windows
//! (each before and after the work, the tick's share and the reset; the
//! wait a limit or the 5-hour ceiling started) and the stop cause.
//! [`timeline`] reads it from a [`RunRecord`]; the HTML viewer
//! ([`crate::reporting::viewer`]) draws it.
//!
//! Values come from the lines' `budget_snapshot` as the engine wrote them;
//! a field the line lacks is shown as absent, never guessed.

use serde::Serialize;
use serde_json::Value;

use crate::driving::record::RunRecord;

/// One tick.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TickView {
    pub number: usize,
    /// `exit 0`, `killed at the skill barrier`, …
    pub end: String,
    pub lines: Vec<LineView>,
}

/// One history line a tick appended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineView {
    pub iteration: Option<u64>,
    pub outcome: Option<String>,
    pub gates: Vec<GateView>,
    pub budget: Vec<Usage>,
    /// `stop_conditions_fired`, in order.
    pub stops: Vec<String>,
    /// The line's `usage_windows`, one phrase each: `5-hour 55% → 80%
    /// (this tick 25%), resets …`, then `limit hit: …` and `waits until …`.
    pub windows: Vec<String>,
}

/// A gate as recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateView {
    pub name: String,
    pub question: String,
    pub answer: String,
}

/// One budget dimension: used against its ceiling (`max` 0 = no ceiling).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Usage {
    pub dimension: &'static str,
    pub used: f64,
    pub max: f64,
}

impl Usage {
    /// The share of the ceiling used, 0–1 (0 without a ceiling).
    pub fn fraction(&self) -> f64 {
        if self.max > 0.0 {
            (self.used / self.max).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// `2/5`, `$0.03/$25.00`, `$0.03 (no ceiling)`.
    pub fn label(&self) -> String {
        let show = |v: f64| {
            if self.dimension == "dollars" {
                format!("${v:.2}")
            } else {
                format!("{v}")
            }
        };
        if self.max > 0.0 {
            format!("{}/{}", show(self.used), show(self.max))
        } else {
            format!("{} (no ceiling)", show(self.used))
        }
    }
}

/// The budget dimensions: name, used field, ceiling field.
const DIMENSIONS: [(&str, &str, &str); 4] = [
    ("iterations", "iterations_used", "max_iterations"),
    ("PRs", "prs_touched_total", "max_prs"),
    ("minutes", "minutes_elapsed", "max_minutes"),
    ("dollars", "dollars_estimate", "max_dollars"),
];

fn usage(snapshot: &Value) -> Vec<Usage> {
    DIMENSIONS
        .iter()
        .filter_map(|(dimension, used, max)| {
            let used = snapshot.get(*used).and_then(Value::as_f64).or_else(|| {
                (*used == "prs_touched_total")
                    .then(|| snapshot["prs_touched"].as_array().map(|a| a.len() as f64))
                    .flatten()
            })?;
            Some(Usage {
                dimension,
                used,
                max: snapshot.get(*max).and_then(Value::as_f64).unwrap_or(0.0),
            })
        })
        .collect()
}

fn percent(v: &Value) -> Option<String> {
    v.as_f64().map(|p| format!("{p}%"))
}

/// A line's `usage_windows` as phrases (none when it has none).
fn windows(w: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (key, noun) in [("five_hour", "5-hour"), ("seven_day", "weekly")] {
        let l = &w[key];
        let Some(after) = percent(&l["after"]) else {
            continue;
        };
        let figures = match percent(&l["before"]) {
            Some(before) => format!("{before} → {after}"),
            None => after,
        };
        let share = percent(&l["this_tick"])
            .map(|t| format!(" (this tick {t})"))
            .unwrap_or_default();
        out.push(format!(
            "{noun} {figures}{share}, resets {}",
            text(&l["resets_at"])
        ));
    }
    if w["limited"].is_object() {
        out.push(format!(
            "limit hit: {} window",
            text(&w["limited"]["window"])
        ));
    }
    if w["wait"].is_object() {
        out.push(format!(
            "waits until {} ({})",
            text(&w["wait"]["until"]),
            text(&w["wait"]["reason"])
        ));
    }
    out
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

fn line_view(line: &Value) -> LineView {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect::<Vec<_>>()
    };
    LineView {
        iteration: line["iteration"].as_u64(),
        outcome: line["outcome"].as_str().map(str::to_owned),
        gates: line["gates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|g| GateView {
                name: text(&g["name"]),
                question: text(&g["question"]),
                answer: text(&g["answer"]),
            })
            .collect(),
        budget: usage(&line["budget_snapshot"]),
        stops: strings(&line["stop_conditions_fired"]),
        windows: windows(&line["usage_windows"]),
    }
}

/// Every tick of `run`, with the lines it appended.
pub fn timeline(run: &RunRecord) -> Vec<TickView> {
    run.ticks
        .iter()
        .map(|t| TickView {
            number: t.number,
            end: t.end.to_string(),
            lines: run.lines(Some(t.number)).iter().map(line_view).collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::driving::record::{TickEnd, TickRecord};

    #[test]
    fn a_tick_shows_its_lines_gates_budget_and_stop() {
        let run = RunRecord {
            ticks: vec![TickRecord {
                number: 1,
                args: Vec::new(),
                end: TickEnd::Exited(3),
                stdout: String::new(),
                stderr: String::new(),
                lines: 0..1,
                model_requests: 0..0,
                wall: Duration::ZERO,
                from_hooks: false,
                machine: None,
            }],
            history: vec![json!({
                "iteration": 2, "outcome": "halted",
                "gates": [{"name": "budget-escalation", "question": "Approaching PRs (1/1). Continue, raise ceiling, or stop?", "answer": "continue"}],
                "stop_conditions_fired": ["prs_touched_budget"],
                "budget_snapshot": {"iterations_used": 1, "max_iterations": 5, "prs_touched": ["#1", "#2"], "max_prs": 1,
                                    "minutes_elapsed": 3, "max_minutes": 60, "dollars_estimate": 0.5, "max_dollars": 0}
            })],
            ..RunRecord::default()
        };
        let view = timeline(&run);
        assert_eq!(view[0].end, "exit 3");
        let line = &view[0].lines[0];
        assert_eq!(line.outcome.as_deref(), Some("halted"));
        assert_eq!(line.gates[0].answer, "continue");
        assert_eq!(line.stops, ["prs_touched_budget"]);
        let labels: Vec<String> = line.budget.iter().map(Usage::label).collect();
        assert_eq!(labels, ["1/5", "2/1", "3/60", "$0.50 (no ceiling)"]);
        assert_eq!(line.budget[1].fraction(), 1.0, "an overshoot fills the bar");
        assert!(line.windows.is_empty(), "no usage_windows, none shown");
    }

    #[test]
    fn a_line_shows_its_usage_windows_and_the_wait_it_started() {
        let w = windows(&json!({
            "five_hour": {"before": 55.0, "after": 80.0, "this_tick": 25.0, "resets_at": "2026-05-09T19:00:00Z"},
            "seven_day": {"after": 10.0, "resets_at": "2026-05-12T09:00:00Z"},
            "wait": {"window": "five_hour", "until": "2026-05-09T19:00:00Z", "reason": "5-hour window at 80% (ceiling 75%)", "since": "x"}
        }));
        assert_eq!(
            w,
            [
                "5-hour 55% → 80% (this tick 25%), resets 2026-05-09T19:00:00Z",
                "weekly 10%, resets 2026-05-12T09:00:00Z",
                "waits until 2026-05-09T19:00:00Z (5-hour window at 80% (ceiling 75%))",
            ]
        );
    }
}
