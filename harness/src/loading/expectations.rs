//! A case's expectations (`expect:` of the case and of each tick) as the
//! checks they stand for, each with the text its grade carries — so an
//! expectation and an assertion of the same kind share one judge.

use sdd_mocks::fixture::unlocated;

use super::case::Case;
use super::check::{
    Check, Comparison, Count, ExitCheck, GateSpec, GatesInOrder, OutcomeCheck, Stream, TextCheck,
};

fn gate_list(gates: &[GateSpec]) -> String {
    if gates.is_empty() {
        return "no gate".to_owned();
    }
    gates
        .iter()
        .map(|g| g.name.value.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The expectations of `case` as checks, each with its text.
pub fn of(case: &Case) -> Vec<(String, Check)> {
    scoped(case).into_iter().map(|(_, t, c)| (t, c)).collect()
}

/// The expectations of `case` as checks, each with the tick it is about
/// (`None`: the run's) and its text.
pub fn scoped(case: &Case) -> Vec<(Option<usize>, String, Check)> {
    let mut all = Vec::new();
    for (i, tick) in case.ticks().iter().enumerate() {
        let n = i + 1;
        let mut out = Scoped(&mut all, Some(n));
        let at = || Some(unlocated(n));
        let e = &tick.expect;
        if let Some(code) = e.exit {
            out.push((
                format!("tick {n} exits {code}"),
                Check::Exit(ExitCheck {
                    code: i32::from(code),
                    tick: at(),
                }),
            ));
        }
        if let Some(outcome) = e.outcome {
            out.push((
                format!("tick {n} records outcome {}", outcome.as_str()),
                Check::Outcome(OutcomeCheck {
                    is: outcome,
                    tick: at(),
                }),
            ));
        }
        if let Some(gates) = &e.gates {
            out.push((
                format!("tick {n} records exactly: {}", gate_list(gates)),
                Check::GatesInOrder(GatesInOrder {
                    gates: gates.clone(),
                    tick: at(),
                }),
            ));
        }
        for text in &e.printed {
            out.push((
                format!("tick {n} prints {text:?}"),
                Check::Printed(TextCheck {
                    text: text.clone(),
                    tick: at(),
                    stream: Stream::Stdout,
                }),
            ));
        }
        for text in &e.not_printed {
            out.push((
                format!("tick {n} does not print {text:?}"),
                Check::NotPrinted(TextCheck {
                    text: text.clone(),
                    tick: at(),
                    stream: Stream::Stdout,
                }),
            ));
        }
        for text in &e.stderr {
            out.push((
                format!("tick {n} prints {text:?} on stderr"),
                Check::Printed(TextCheck {
                    text: text.clone(),
                    tick: at(),
                    stream: Stream::Stderr,
                }),
            ));
        }
    }
    let mut out = Scoped(&mut all, None);
    let e = &case.expect;
    if let Some(cause) = &e.stop_cause {
        out.push((
            format!("the loop's stop cause is {}", cause.value),
            Check::StopCause(cause.clone()),
        ));
    }
    if let Some(n) = e.final_iteration {
        out.push((
            format!("the last history line is iteration {n}"),
            Check::FinalIteration(n),
        ));
    }
    if let Some(n) = e.history_lines {
        out.push((
            format!("the history file holds {n} line(s)"),
            Check::HistoryLines(Count {
                is: Comparison::Equals(n.into()),
            }),
        ));
    }
    if let Some(code) = e.exit {
        out.push((
            format!("the last tick exits {code}"),
            Check::Exit(ExitCheck {
                code: i32::from(code),
                tick: None,
            }),
        ));
    }
    if let Some(gates) = &e.gates {
        out.push((
            format!("the run records exactly, in order: {}", gate_list(gates)),
            Check::GatesInOrder(GatesInOrder {
                gates: gates.clone(),
                tick: None,
            }),
        ));
    }
    for text in &e.printed {
        out.push((
            format!("some tick prints {text:?}"),
            Check::Printed(TextCheck {
                text: text.clone(),
                tick: None,
                stream: Stream::Stdout,
            }),
        ));
    }
    for text in &e.not_printed {
        out.push((
            format!("no tick prints {text:?}"),
            Check::NotPrinted(TextCheck {
                text: text.clone(),
                tick: None,
                stream: Stream::Stdout,
            }),
        ));
    }
    for path in &e.files.present {
        out.push((
            format!("{path} exists in the project"),
            Check::FilePresent(path.clone()),
        ));
    }
    for path in &e.files.absent {
        out.push((
            format!("{path} does not exist in the project"),
            Check::FileAbsent(path.clone()),
        ));
    }
    all
}

/// Pushes checks with the tick they are about.
struct Scoped<'o>(&'o mut Vec<(Option<usize>, String, Check)>, Option<usize>);

impl Scoped<'_> {
    fn push(&mut self, (text, check): (String, Check)) {
        self.0.push((self.1, text, check));
    }
}
