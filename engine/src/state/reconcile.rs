//! Reconciliation of the budget checkpoint against the history log
//! (history is the write-ahead log, `budget.json` a checkpoint:
//! `docs/src/architecture.md`, "History wins").
//!
//! A tick appends its history line, then rewrites `budget.json`; a crash
//! between the two leaves the checkpoint one tick behind. [`reconcile`] is the
//! one function that decides the run's counters from both — history wins —
//! and says what it did in one line.
//!
//! A history line belongs to the checkpoint's run when its snapshot's
//! `run_started_at` equals the budget's `started_at` (lines of the contract's
//! older shapes, which lack it, are assumed to). A missing `budget.json` with
//! history present is a deleted checkpoint: the contract makes deleting it
//! the way to start a fresh run, so the counters are rebuilt from history
//! only when resuming.
//!
//! Not every difference is a lag. A tick writes `budget.json` at its
//! commit too, before its history line, with the time since the last tick
//! added (and its flags' ceilings, a `--resume` that clears the stop): the
//! checkpoint is then *ahead* of history — while the tick runs, or after
//! it was killed. Its values still give way to history's (the killed
//! tick's time is recounted from its journal, or from the last tick's
//! end), but nothing is reported as restored: [`State::Ahead`]. A
//! checkpoint is behind when a counter holds less than history recorded;
//! fields that carry no order (the stop, a looser ceiling, the rates)
//! count as the rest of the checkpoint does.

use crate::os::clock;
use crate::state::budget::{Budget, Ceilings, PrSet, round_dollars};
use crate::state::history::{HistoryLine, Outcome};
use crate::state::journal::Journal;

/// What the reconciliation decided.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// No checkpoint and no history (or a deliberate fresh start).
    Fresh,
    /// The checkpoint agrees with the last history line (or there is no
    /// history line of its run).
    InSync,
    /// The checkpoint lagged or disagreed; these fields were taken from
    /// history line `iteration`.
    Restored {
        iteration: Option<u64>,
        fields: Vec<&'static str>,
    },
    /// The checkpoint was written after history line `iteration`, by a
    /// tick's commit (running, or killed since): no lag. History's values
    /// were taken for these fields all the same.
    Ahead {
        iteration: Option<u64>,
        fields: Vec<&'static str>,
    },

    /// No checkpoint: rebuilt entirely from the last history line (resume).
    Rebuilt { iteration: Option<u64> },
    /// No checkpoint while history exists, not resuming: a fresh run.
    FreshAfterDeletedCheckpoint,
}

/// A ceiling `budget.json` holds stricter than history's last line: a
/// tick writes its ceilings to `budget.json` before its history line, so
/// only a hand edit makes the checkpoint's stricter — and a stricter
/// ceiling can only end the loop sooner, so it stands. A looser one is a
/// widening, and history's value is restored.
#[derive(Debug, Clone, PartialEq)]
pub struct Lowered {
    pub field: &'static str,
    /// The value kept, from `budget.json`, and history's.
    pub kept: String,
    pub history: String,
}

/// The decided budget and its one-line report.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconciliation {
    /// `None` for a fresh run: the caller creates the first write.
    pub budget: Option<Budget>,
    pub state: State,
    /// Ceilings `budget.json` holds stricter than history, kept.
    pub lowered: Vec<Lowered>,
}

impl Reconciliation {
    /// One line describing the reconciliation (`None` when nothing notable
    /// happened).
    pub fn note(&self, budget_path: &str) -> Option<String> {
        let state = self.state_note(budget_path);
        let lowered = (!self.lowered.is_empty()).then(|| {
            format!(
                "{budget_path} holds a stricter ceiling than history, set by hand: {} — kept (it can only end the loop sooner; a looser one is restored from history)",
                self.lowered
                    .iter()
                    .map(|l| format!("{} {} (history: {})", l.field, l.kept, l.history))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
        match (state, lowered) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    }

    fn state_note(&self, budget_path: &str) -> Option<String> {
        match &self.state {
            State::Fresh | State::InSync | State::Ahead { .. } => None,
            State::Restored { iteration, fields } => Some(format!(
                "Reconciled {budget_path} with history (history wins): {} restored from iteration {}",
                fields.join(", "),
                iteration.map_or("?".to_owned(), |i| i.to_string())
            )),
            State::Rebuilt { iteration } => Some(format!(
                "Reconciled: {budget_path} was missing — counters rebuilt from history iteration {}",
                iteration.map_or("?".to_owned(), |i| i.to_string())
            )),
            State::FreshAfterDeletedCheckpoint => Some(format!(
                "{budget_path} is absent while history exists — starting a fresh run (history kept; pass --resume to continue the recorded run instead)"
            )),
        }
    }
}

fn same_run(budget: &Budget, line: &HistoryLine) -> bool {
    match line
        .budget_snapshot
        .as_ref()
        .and_then(|s| s.run_started_at.as_deref())
    {
        Some(run) => run == budget.started_at,
        None => true,
    }
}

/// How a field `budget.json` holds otherwise than history's line came to
/// differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Differs {
    /// It holds less than the line recorded: written before the line.
    Behind,
    /// It holds more: written after the line, by a tick's commit.
    Ahead,
    /// The field carries no order (the stop, a looser ceiling, the
    /// rates): it reads as the rest of the checkpoint.
    Unordered,
}

fn unordered<T>(_: &T, _: &T) -> Differs {
    Differs::Unordered
}

fn ahead_if(more: bool) -> Differs {
    if more {
        Differs::Ahead
    } else {
        Differs::Behind
    }
}

/// `mine` holds every entry of `theirs`: a checkpoint written since.
fn superset<'a>(mine: impl IntoIterator<Item = &'a str>, theirs: &[&str]) -> Differs {
    let mine: Vec<&str> = mine.into_iter().collect();
    ahead_if(theirs.iter().all(|t| mine.contains(t)))
}

/// The later of two tick ends; unordered when either cannot be read.
fn later_end(mine: Option<&str>, theirs: Option<&str>) -> Differs {
    match (mine.map(clock::parse), theirs.map(clock::parse)) {
        (Some(Ok(mine)), Some(Ok(theirs))) => ahead_if(mine > theirs),
        (None, Some(Ok(_))) => Differs::Behind,
        _ => Differs::Unordered,
    }
}

/// Overwrites `budget` with every value the line records, but a ceiling
/// `budget.json` holds stricter ([`Lowered`]); returns the fields that
/// changed, with how each differed, and the stricter ceilings kept.
fn apply_line(
    budget: &mut Budget,
    line: &HistoryLine,
) -> (Vec<(&'static str, Differs)>, Vec<Lowered>) {
    let mut changed = Vec::new();
    let mut lowered = Vec::new();
    let snap = line.snapshot();
    // 0 iterations, PRs or minutes ends the loop at once; $0 disables the
    // cost ceiling.
    macro_rules! ceiling {
        ($field:ident, $value:expr, $stricter:expr) => {
            if let Some(v) = $value {
                if budget.$field != v {
                    if $stricter(budget.$field, v) {
                        lowered.push(Lowered {
                            field: stringify!($field),
                            kept: budget.$field.to_string(),
                            history: v.to_string(),
                        });
                    } else {
                        budget.$field = v;
                        changed.push((stringify!($field), Differs::Unordered));
                    }
                }
            }
        };
    }
    let fewer = |mine: u64, theirs: u64| mine < theirs;
    let cheaper = |mine: f64, theirs: f64| mine > 0.0 && (theirs == 0.0 || mine < theirs);
    ceiling!(max_iterations, snap.max_iterations, fewer);
    ceiling!(max_prs, snap.max_prs, fewer);
    ceiling!(max_minutes, snap.max_minutes, fewer);
    ceiling!(max_dollars, snap.max_dollars, cheaper);
    macro_rules! take {
        ($field:ident, $value:expr, $differs:expr) => {
            if let Some(v) = $value {
                if budget.$field != v {
                    let differs = $differs(&budget.$field, &v);
                    budget.$field = v;
                    changed.push((stringify!($field), differs));
                }
            }
        };
    }
    let more = |mine: &u64, theirs: &u64| ahead_if(mine > theirs);
    // Older shapes carry no snapshot; a non-skipped line still proves its
    // iteration was used.
    let iterations = snap.iterations_used.or(match line.outcome {
        Some(Outcome::SkippedLock) => None,
        _ => line.iteration.filter(|i| *i > budget.iterations_used),
    });
    take!(iterations_used, iterations, more);
    take!(comments_pushed, snap.comments_pushed, more);
    take!(merges_attempted, snap.merges_attempted, more);
    take!(tokens_in, snap.tokens_in, more);
    take!(tokens_out, snap.tokens_out, more);
    take!(agents_dispatched, snap.agents_dispatched, more);
    // Repricing at a commit can lower dollars; a success resets the qmd
    // count.
    take!(
        dollars_estimate,
        snap.dollars_estimate.map(round_dollars),
        unordered
    );
    take!(
        qmd_failures_consecutive,
        snap.qmd_failures_consecutive,
        unordered
    );
    take!(tokens_by_model, snap.tokens_by_model.clone(), unordered);
    take!(rate_table_source, snap.rate_table_source.clone(), unordered);
    if let Some(prs) = &snap.prs_touched {
        let set: PrSet = prs.iter().cloned().collect();
        if budget.prs_touched != set {
            let theirs: Vec<&str> = set.iter().collect();
            let differs = superset(budget.prs_touched.iter(), &theirs);
            budget.prs_touched = set;
            changed.push(("prs_touched", differs));
        }
    }
    match (snap.seconds_elapsed, snap.minutes_elapsed) {
        (Some(secs), _) if budget.seconds_elapsed != Some(secs) => {
            let differs = ahead_if(budget.elapsed_seconds() > secs);
            budget.set_elapsed_seconds(secs);
            changed.push(("minutes_elapsed", differs));
        }
        (None, Some(mins)) if budget.minutes_elapsed != mins => {
            let differs = ahead_if(budget.minutes_elapsed > mins);
            budget.minutes_elapsed = mins;
            budget.seconds_elapsed = Some(mins * 60);
            changed.push(("minutes_elapsed", differs));
        }
        _ => {}
    }
    if budget.stopped != snap.stopped && (snap.stopped.is_some() || snap.run_started_at.is_some()) {
        budget.stopped = snap.stopped.clone();
        changed.push(("stopped", Differs::Unordered));
    }
    take!(
        last_tick_ended_at,
        snap.last_tick_ended_at.clone().map(Some),
        |mine: &Option<String>, theirs: &Option<String>| later_end(
            mine.as_deref(),
            theirs.as_deref()
        )
    );
    take!(
        deferred,
        snap.deferred.clone(),
        |mine: &Vec<String>, theirs: &Vec<String>| superset(
            mine.iter().map(String::as_str),
            &theirs.iter().map(String::as_str).collect::<Vec<_>>()
        )
    );
    (changed, lowered)
}

/// The state a checkpoint that differs from history's line in `changed`
/// is in: ahead when some field holds more and none less; else restored,
/// naming what lagged (and what carries no order).
fn judged(iteration: Option<u64>, changed: &[(&'static str, Differs)]) -> State {
    let with = |keep: &dyn Fn(Differs) -> bool| -> Vec<&'static str> {
        changed
            .iter()
            .filter(|(_, d)| keep(*d))
            .map(|(f, _)| *f)
            .collect()
    };
    let behind = changed.iter().any(|(_, d)| *d == Differs::Behind);
    let ahead = changed.iter().any(|(_, d)| *d == Differs::Ahead);
    if changed.is_empty() {
        State::InSync
    } else if ahead && !behind {
        State::Ahead {
            iteration,
            fields: with(&|_| true),
        }
    } else {
        State::Restored {
            iteration,
            fields: with(&|d| d != Differs::Ahead),
        }
    }
}

/// Decides the run's budget from the checkpoint and the last history line.
///
/// `resuming` allows rebuilding a deleted checkpoint from history.
pub fn reconcile(
    budget: Option<Budget>,
    last: Option<&HistoryLine>,
    resuming: bool,
) -> Reconciliation {
    match (budget, last) {
        (None, None) => Reconciliation {
            budget: None,
            state: State::Fresh,
            lowered: Vec::new(),
        },
        (None, Some(line)) if resuming => {
            let snap = line.snapshot();
            let started = snap
                .run_started_at
                .clone()
                .or_else(|| line.started_at.clone())
                .unwrap_or_default();
            let d = Ceilings::default();
            let ceilings = Ceilings {
                max_iterations: snap.max_iterations.unwrap_or(d.max_iterations),
                max_prs: snap.max_prs.unwrap_or(d.max_prs),
                max_minutes: snap.max_minutes.unwrap_or(d.max_minutes),
                max_dollars: snap.max_dollars.unwrap_or(d.max_dollars),
            };
            let source = snap
                .rate_table_source
                .clone()
                .unwrap_or_else(|| "built-in default".to_owned());
            let mut rebuilt = Budget::start(&started, ceilings, &source);
            // Its ceilings are the line's already: none is lowered.
            apply_line(&mut rebuilt, line);
            if snap.prs_touched.is_none() {
                // Older shapes: at least the PRs this line touched.
                for pr in line.prs_touched_this_iter.iter().flatten() {
                    rebuilt.prs_touched.insert(pr.clone());
                }
            }
            Reconciliation {
                budget: Some(rebuilt),
                state: State::Rebuilt {
                    iteration: line.iteration,
                },
                lowered: Vec::new(),
            }
        }
        (None, Some(_)) => Reconciliation {
            budget: None,
            state: State::FreshAfterDeletedCheckpoint,
            lowered: Vec::new(),
        },
        (Some(budget), None) => Reconciliation {
            budget: Some(budget),
            state: State::InSync,
            lowered: Vec::new(),
        },
        (Some(mut budget), Some(line)) => {
            if !same_run(&budget, line) {
                return Reconciliation {
                    budget: Some(budget),
                    state: State::InSync,
                    lowered: Vec::new(),
                };
            }
            let (changed, lowered) = apply_line(&mut budget, line);
            let state = judged(line.iteration, &changed);
            Reconciliation {
                budget: Some(budget),
                state,
                lowered,
            }
        }
    }
}

/// The iteration the next tick runs, by the files as they are (nothing
/// repaired yet): one past the `iterations_used` of the checkpoint
/// reconciled with history (`recon`: history wins), or past the
/// interrupted iteration `journal` holds when `lines` (history's last)
/// do not record it yet — a tick recovers it first. A tick's lock says
/// this iteration from the moment it is taken, so a lock left by a tick
/// killed before it loaded the state names the iteration `--resume` runs.
pub fn next_iteration(
    recon: &Reconciliation,
    journal: Option<&Journal>,
    lines: &[HistoryLine],
) -> u64 {
    let Some(budget) = &recon.budget else {
        return 1;
    };
    let interrupted = journal
        .filter(|j| j.unrecorded_in(lines, &budget.started_at))
        .map_or(0, |j| j.iteration);
    budget.iterations_used.max(interrupted).saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::history::BudgetSnapshot;

    fn budget() -> Budget {
        let mut b = Budget::start(
            "2026-05-09T14:32:00Z",
            Ceilings::default(),
            "built-in default",
        );
        b.iterations_used = 2;
        b.prs_touched.insert("#1");
        b.add_usage("claude-opus-4-7", 100, 10);
        b.dollars_estimate = 0.00225;
        b.set_elapsed_seconds(600);
        b
    }

    fn snapshot_of(b: &Budget) -> BudgetSnapshot {
        BudgetSnapshot::from(b)
    }

    fn line_for(b: &Budget, iteration: u64) -> HistoryLine {
        HistoryLine {
            iteration: Some(iteration),
            outcome: Some(Outcome::Ok),
            budget_snapshot: Some(snapshot_of(b)),
            ..Default::default()
        }
    }

    #[test]
    fn nothing_is_fresh() {
        let r = reconcile(None, None, false);
        assert_eq!(r.state, State::Fresh);
        assert!(r.budget.is_none());
        assert!(r.note("b").is_none());
    }

    #[test]
    fn agreeing_files_are_in_sync() {
        let b = budget();
        let line = line_for(&b, 2);
        let r = reconcile(Some(b.clone()), Some(&line), false);
        assert_eq!(r.state, State::InSync);
        assert_eq!(r.budget.unwrap(), b);
    }

    #[test]
    fn lagging_checkpoint_is_restored_from_history() {
        let lagging = budget();
        let mut ahead = lagging.clone();
        ahead.iterations_used = 3;
        ahead.prs_touched.insert("#2");
        ahead.add_usage("claude-opus-4-7", 50, 5);
        ahead.set_elapsed_seconds(900);
        let line = line_for(&ahead, 3);
        let r = reconcile(Some(lagging), Some(&line), false);
        let State::Restored { iteration, fields } = &r.state else {
            panic!("{:?}", r.state)
        };
        assert_eq!(*iteration, Some(3));
        assert!(fields.contains(&"iterations_used"));
        assert!(fields.contains(&"prs_touched"));
        assert_eq!(r.budget.as_ref().unwrap(), &ahead);
        assert!(r.note("work.budget.json").unwrap().contains("history wins"));
    }

    // Regression: a tick's commit writes budget.json before its history
    // line, the time since the last tick added (and a --resume's cleared
    // stop, its flags' wider ceiling); `status` during every ordinary tick,
    // and the tick after one killed there, called that checkpoint "behind
    // history" and named minutes_elapsed restored.
    #[test]
    fn a_checkpoint_written_since_the_line_is_ahead_not_behind() {
        let mut recorded = budget();
        recorded.stopped = Some(crate::state::budget::RunStop {
            cause: "cost_budget".into(),
            iteration: 2,
            gate: None,
        });
        let line = line_for(&recorded, 2);
        let mut committed = recorded.clone();
        committed.set_elapsed_seconds(603);
        committed.stopped = None;
        committed.max_iterations = 9;
        let r = reconcile(Some(committed), Some(&line), false);
        assert_eq!(
            r.state,
            State::Ahead {
                iteration: Some(2),
                fields: vec!["max_iterations", "minutes_elapsed", "stopped"],
            }
        );
        assert!(r.note("b").is_none(), "{:?}", r.note("b"));
        assert_eq!(r.budget.unwrap(), recorded, "history's values all the same");

        // Behind in one counter: a lag, naming what lagged and what carries
        // no order, not what is ahead.
        let mut mixed = recorded.clone();
        mixed.set_elapsed_seconds(603);
        mixed.iterations_used = 1;
        mixed.stopped = None;
        let r = reconcile(Some(mixed), Some(&line), false);
        assert_eq!(
            r.state,
            State::Restored {
                iteration: Some(2),
                fields: vec!["iterations_used", "stopped"],
            }
        );
    }

    #[test]
    fn history_of_an_older_run_is_ignored() {
        let b = budget();
        let mut old = b.clone();
        old.started_at = "2026-01-01T00:00:00Z".into();
        old.iterations_used = 5;
        let line = line_for(&old, 5);
        assert_eq!(reconcile(Some(b), Some(&line), false).state, State::InSync);
    }

    #[test]
    fn deleted_checkpoint_starts_fresh_unless_resuming() {
        let b = budget();
        let line = line_for(&b, 2);
        let r = reconcile(None, Some(&line), false);
        assert_eq!(r.state, State::FreshAfterDeletedCheckpoint);
        assert!(r.budget.is_none());

        let r = reconcile(None, Some(&line), true);
        assert_eq!(r.state, State::Rebuilt { iteration: Some(2) });
        assert_eq!(r.budget.unwrap(), b);
    }

    #[test]
    fn older_partial_line_still_advances_iterations() {
        let b = budget();
        let line = HistoryLine {
            iteration: Some(3),
            outcome: Some(Outcome::Ok),
            ..Default::default()
        };
        let r = reconcile(Some(b), Some(&line), false);
        assert_eq!(r.budget.unwrap().iterations_used, 3);

        let skipped = HistoryLine {
            iteration: Some(3),
            outcome: Some(Outcome::SkippedLock),
            ..Default::default()
        };
        assert_eq!(
            reconcile(Some(budget()), Some(&skipped), false).state,
            State::InSync
        );
    }
    // A ceiling lowered by hand in budget.json stands (it can only end the
    // loop sooner); one raised by hand is restored from history. $0 turns
    // the cost ceiling off: lowering dollars to 0 is a widening.
    #[test]
    fn a_stricter_ceiling_set_by_hand_stands_and_a_looser_one_is_restored() {
        let recorded = budget();
        let line = line_for(&recorded, 2);

        let mut lowered = recorded.clone();
        lowered.max_iterations = 3;
        lowered.max_dollars = 10.0;
        let r = reconcile(Some(lowered.clone()), Some(&line), false);
        assert_eq!(r.state, State::InSync);
        assert_eq!(r.budget.as_ref().unwrap(), &lowered);
        let note = r.note("work.budget.json").unwrap();
        assert!(
            note.contains("stricter ceiling than history, set by hand: max_iterations 3 (history: 5), max_dollars 10 (history: 25) — kept"),
            "{note}"
        );

        let mut raised = recorded.clone();
        raised.max_prs = 99;
        raised.max_dollars = 0.0;
        let r = reconcile(Some(raised), Some(&line), false);
        let State::Restored { fields, .. } = &r.state else {
            panic!("{:?}", r.state)
        };
        assert_eq!(fields, &["max_prs", "max_dollars"]);
        assert_eq!(r.budget.as_ref().unwrap(), &recorded);
        assert!(r.lowered.is_empty());

        // With the cost ceiling off in history, any dollar ceiling is
        // stricter; both notes come out when both happen.
        let mut off = recorded.clone();
        off.max_dollars = 0.0;
        let line = line_for(&off, 2);
        let mut both = off.clone();
        both.max_dollars = 5.0;
        both.iterations_used = 1;
        let r = reconcile(Some(both), Some(&line), false);
        assert_eq!(r.budget.as_ref().unwrap().max_dollars, 5.0);
        assert_eq!(r.budget.as_ref().unwrap().iterations_used, 2);
        let note = r.note("b").unwrap();
        assert!(
            note.contains("iterations_used restored")
                && note.contains("max_dollars 5 (history: 0) — kept"),
            "{note}"
        );
    }
}
