//! Grading a run, SPEC-0017 style: every assertion becomes
//! `{text, passed, evidence}`, and so does every expectation (`expect:` of
//! the case and of each tick), as an implicit assertion with generated
//! text. The first grade is always whether the run went as scripted.

use serde::Serialize;

use super::check;
use crate::driving::record::RunRecord;
use crate::loading::case::Case;
use crate::loading::check::{Check, StatusLayout};
use crate::loading::expectations;

/// The text of the grade every case gets for its status blocks.
pub const STATUS_LAYOUT: &str =
    "every status block follows the canonical layout (loop-telemetry.md, Status Block)";

/// One graded assertion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grade {
    pub text: String,
    pub passed: bool,
    pub evidence: String,
    /// The known bug this assertion documents, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_failure: Option<String>,
}

impl Grade {
    pub fn new(text: impl Into<String>, passed: bool, evidence: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            passed,
            evidence: evidence.into(),
            known_failure: None,
        }
    }

    /// Whether the case may pass with this grade: it passed, or it is a
    /// known failure that still fails.
    pub fn ok(&self) -> bool {
        self.passed != self.known_failure.is_some()
    }
}

fn judged(text: String, check: &Check, run: &RunRecord) -> Grade {
    let (passed, evidence) = check::judge(check, run);
    Grade::new(text, passed, evidence)
}

/// Every grade of `run`: the run itself, the expectations, the assertions.
pub fn grade(case: &Case, run: &RunRecord) -> Vec<Grade> {
    let ran = run.ticks.len();
    let mut grades = vec![Grade::new(
        "every tick runs as scripted",
        run.aborted.is_none(),
        run.aborted.clone().unwrap_or_else(|| {
            let ends: Vec<String> = run
                .ticks
                .iter()
                .map(|t| format!("tick {}: {}", t.number, t.end))
                .collect();
            format!(
                "{ran} of {} ticks ran ({})",
                case.ticks().len(),
                ends.join(", ")
            )
        }),
    )];
    for (tick, text, check) in expectations::scoped(case) {
        // A tick on several machines at once is expected of each of them.
        let at_once = tick
            .and_then(|n| case.ticks().get(n - 1))
            .filter(|t| !t.machines.is_empty());
        match at_once {
            Some(t) => {
                for m in &t.machines {
                    let seen = on(run, &m.value);
                    grades.push(judged(format!("{text} on {}", m.value), &check, &seen));
                }
            }
            None => grades.push(judged(text, &check, run)),
        }
    }
    // Every loop-mode case is held to the status block's layout (without
    // --loop the engine prints none); a case that states the check itself
    // (to mark a known failure) stands in for this one.
    let stated = !case.loop_mode
        || case
            .assertions
            .iter()
            .any(|a| matches!(&a.check, Check::StatusLayout(c) if c.tick.is_none()));
    if !stated {
        grades.push(judged(
            STATUS_LAYOUT.to_owned(),
            &Check::StatusLayout(StatusLayout { tick: None }),
            run,
        ));
    }
    for a in &case.assertions {
        let mut g = match &a.machine {
            Some(m) => judged(a.text.clone(), &a.check, &on(run, &m.value)),
            None => judged(a.text.clone(), &a.check, run),
        };
        if let Some(bug) = &a.known_failure {
            if g.passed {
                g.evidence
                    .push_str(" — this known failure passes now: remove its `known_failure`");
            }
            g.known_failure = Some(bug.clone());
        }
        grades.push(g);
    }
    grades
}

/// The run as machine `name` saw it (an empty run for a machine it does
/// not know, which the loader refuses anyway).
fn on(run: &RunRecord, name: &str) -> RunRecord {
    run.on(name).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::driving::record::{TickEnd, TickRecord};
    use crate::loading::fixtures::Fixtures;

    const CASE: &str = r#"
id: t
name: t
proves: t
skill: work
ticks:
  - expect: { exit: 0, outcome: ok, gates: [{ name: budget-escalation, answer: continue }] }
  - expect: { exit: 3, printed: ["Loop Ended"] }
expect:
  stop_cause: prs_touched_budget
  final_iteration: 2
assertions:
  - text: no drift gate
    type: { no_gate: backlog-drift }
  - text: a question that differs
    type: { gate: { name: budget-escalation, question: "Approaching PRs (1/1). Continue or stop?" } }
  - text: a documented bug
    type: { final_iteration: 7 }
    known_failure: "a bug"
  - text: a documented bug that is fixed
    type: { final_iteration: 2 }
    known_failure: "another bug"
"#;

    fn record() -> RunRecord {
        let tick = |number, end, stdout: &str, lines| TickRecord {
            number,
            args: Vec::new(),
            end,
            stdout: stdout.to_owned(),
            stderr: String::new(),
            lines,
            model_requests: 0..0,
            wall: Duration::ZERO,
            from_hooks: false,
            machine: None,
        };
        RunRecord {
            ticks: vec![
                tick(1, TickEnd::Exited(0), "## Loop Iteration 1/5", 0..1),
                tick(2, TickEnd::Exited(3), "## Loop Ended — /sdd:work", 1..2),
            ],
            history: vec![
                json!({"iteration": 1, "outcome": "ok", "gates": [{"name": "budget-escalation", "question": "Approaching PRs (1/1). Continue, raise ceiling, or stop?", "answer": "continue"}], "stop_conditions_fired": []}),
                json!({"iteration": 2, "outcome": "halted", "gates": [], "stop_conditions_fired": ["prs_touched_budget"]}),
            ],
            ..RunRecord::default()
        }
    }

    #[test]
    fn expectations_and_assertions_are_graded_with_evidence() {
        let fixtures = Fixtures::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures"));
        let case = Case::parse(Path::new("t.yaml"), CASE, &fixtures).unwrap();
        let grades = grade(&case, &record());
        let by_text = |t: &str| grades.iter().find(|g| g.text == t).unwrap();
        assert!(by_text("every tick runs as scripted").passed);
        assert_eq!(
            by_text("tick 1 records exactly: budget-escalation").evidence,
            "tick 1 recorded: iteration 1 budget-escalation: \"Approaching PRs (1/1). Continue, raise ceiling, or stop?\" → \"continue\""
        );
        assert_eq!(
            by_text("tick 2 prints \"Loop Ended\"").evidence,
            "tick 2 printed: ## Loop Ended — /sdd:work"
        );
        assert!(by_text("the loop's stop cause is prs_touched_budget").passed);
        assert!(by_text("no drift gate").passed);

        let bug = by_text("a documented bug");
        assert!(
            !bug.passed && bug.ok(),
            "a known failure that fails is fine"
        );
        let fixed = by_text("a documented bug that is fixed");
        assert!(
            fixed.passed && !fixed.ok(),
            "a fixed known failure fails the case"
        );
        assert!(fixed.evidence.ends_with("remove its `known_failure`"));
        let layout = by_text(STATUS_LAYOUT);
        assert!(!layout.passed, "a bare header is not a status block");
        assert!(
            layout
                .evidence
                .contains("the header `## Loop Iteration 1/5` is not"),
            "{}",
            layout.evidence
        );
        // Regression: a mismatch showed what was recorded, not what was wanted.
        assert_eq!(
            by_text("a question that differs").evidence,
            "the run recorded: iteration 1 budget-escalation: \"Approaching PRs (1/1). Continue, raise ceiling, or stop?\" → \"continue\"; the case expects budget-escalation: \"Approaching PRs (1/1). Continue or stop?\""
        );
        assert_eq!(grades.iter().filter(|g| !g.ok()).count(), 3);
    }
}
