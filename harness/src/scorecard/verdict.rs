//! A scorecard cell's [`Verdict`] (issue 35): the case's `held_when`
//! rules over what its run measured ([`CellRun`]) — requests per session
//! and the loop's state files — never over a plugin's own files or words.
//!
//! `held` only when every rule holds and the run had no problem (a
//! submission that timed out or failed proves nothing either way: that is
//! `error`); `broken` carries each failed rule's evidence and the state
//! files left; a case the adapter cannot express is `n/a`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::cell::CellRun;
use super::format::{Count, Rule, ScoreCase};

/// One cell's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Verdict {
    Held {
        evidence: Vec<String>,
    },
    Broken {
        evidence: Vec<String>,
    },
    /// The case cannot be expressed for this plugin.
    #[serde(rename = "n/a")]
    NotApplicable {
        why: String,
    },
    /// The cell could not be run or judged.
    Error {
        why: String,
    },
}

impl Verdict {
    /// `held`, `broken`, `n/a` or `error`.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Held { .. } => "held",
            Verdict::Broken { .. } => "broken",
            Verdict::NotApplicable { .. } => "n/a",
            Verdict::Error { .. } => "error",
        }
    }
}

fn count(what: &str, n: Option<u32>, bound: Count) -> (bool, String) {
    match n {
        Some(n) => (
            bound.holds(n),
            format!(
                "{what}: {n} model request{} (held: {})",
                if n == 1 { "" } else { "s" },
                bound.describe()
            ),
        ),
        None => (false, format!("{what}: did not run")),
    }
}

fn fires_text(run: &CellRun) -> String {
    let parts: Vec<String> = run.fires.iter().map(u32::to_string).collect();
    let question = run
        .question
        .map(|q| format!(", question {q}"))
        .unwrap_or_default();
    format!("fires {}{question}", parts.join(" + "))
}

/// What the other session did to the files present before it ran.
fn state_changes(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Vec<String> {
    before
        .iter()
        .filter_map(|(path, sum)| match after.get(path) {
            None => Some(format!("{path} deleted")),
            Some(s) if s != sum => Some(format!("{path} rewritten")),
            Some(_) => None,
        })
        .collect()
}

fn rule(r: &Rule, run: &CellRun) -> (bool, String) {
    match r {
        Rule::LoopRequests(bound) => {
            let (ok, text) = count("loop session", Some(run.loop_requests()), *bound);
            let exhausted = if run.loop_exhausted {
                "; its scripted model ran out of answers"
            } else {
                ""
            };
            (ok, format!("{text} ({}){exhausted}", fires_text(run)))
        }
        Rule::QuestionRequests(bound) => count("the question", run.question, *bound),
        Rule::OtherRequests(bound) => count("the other session", run.other, *bound),
        Rule::StateKeptByOther(wanted) => match &run.state_around_other {
            None => (false, "the other session did not run".to_owned()),
            Some((before, after)) => {
                let changes = state_changes(before, after);
                let kept = changes.is_empty();
                let text = if kept {
                    format!(
                        "the other session left the loop's {} state file(s) as they were",
                        before.len()
                    )
                } else {
                    format!(
                        "the other session changed the loop's state: {}",
                        changes.join(", ")
                    )
                };
                (kept == *wanted, text)
            }
        },
        Rule::Any(rules) => {
            let results: Vec<(bool, String)> = rules.iter().map(|r| rule(r, run)).collect();
            let ok = results.iter().any(|(ok, _)| *ok);
            let texts: Vec<String> = results.into_iter().map(|(_, t)| t).collect();
            (ok, format!("one of: {}", texts.join("; or ")))
        }
    }
}

/// The verdict of `case` on `run`.
pub fn judge(case: &ScoreCase, run: &CellRun) -> Verdict {
    if !run.problems.is_empty() {
        return Verdict::Error {
            why: run.problems.join("; "),
        };
    }
    let results: Vec<(bool, String)> = case.held_when.iter().map(|r| rule(r, run)).collect();
    let held = results.iter().all(|(ok, _)| *ok);
    let mut evidence: Vec<String> = results.into_iter().map(|(_, t)| t).collect();
    if held {
        Verdict::Held { evidence }
    } else {
        evidence.push(if run.state_at_end.is_empty() {
            "state at the end: none".to_owned()
        } else {
            format!("state at the end: {}", run.state_at_end.join(", "))
        });
        Verdict::Broken { evidence }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn case(rules: &str) -> ScoreCase {
        let text = format!("id: c\nname: c\nheld: c\nheld_when: {rules}\n");
        sdd_loop::yaml::parse(
            Path::new("c.yaml"),
            &text,
            crate::scorecard::format::FORMAT_HELP,
        )
        .unwrap()
    }

    #[test]
    fn a_loop_over_its_cap_is_broken_with_the_requests_per_fire() {
        let c = case("[{ loop_requests: { at_most: 3 } }]");
        let run = CellRun {
            fires: vec![2, 2, 2, 2],
            ..CellRun::default()
        };
        let Verdict::Broken { evidence } = judge(&c, &run) else {
            panic!("not broken")
        };
        assert_eq!(
            evidence[0],
            "loop session: 8 model requests (held: at most 3) (fires 2 + 2 + 2 + 2)"
        );
        let within = CellRun {
            fires: vec![1, 1, 0, 0],
            ..CellRun::default()
        };
        assert_eq!(judge(&c, &within).word(), "held");
    }

    #[test]
    fn a_state_file_the_other_session_deleted_is_evidence_and_a_new_one_is_not() {
        let c = case("[{ state_kept_by_other: true }]");
        let before: BTreeMap<String, String> = [("s".to_owned(), "1 2".to_owned())].into();
        let mut grown = before.clone();
        grown.insert("t".to_owned(), "3 4".to_owned());
        let kept = CellRun {
            state_around_other: Some((before.clone(), grown)),
            ..CellRun::default()
        };
        assert_eq!(judge(&c, &kept).word(), "held");
        let deleted = CellRun {
            state_around_other: Some((before, BTreeMap::new())),
            ..CellRun::default()
        };
        let Verdict::Broken { evidence } = judge(&c, &deleted) else {
            panic!("not broken")
        };
        assert_eq!(
            evidence[0],
            "the other session changed the loop's state: s deleted"
        );
    }

    #[test]
    fn a_run_that_timed_out_is_an_error_not_a_verdict() {
        let c = case("[{ loop_requests: { at_most: 3 } }]");
        let run = CellRun {
            problems: vec!["submission 1 was still running".to_owned()],
            ..CellRun::default()
        };
        assert_eq!(judge(&c, &run).word(), "error");
    }
}
