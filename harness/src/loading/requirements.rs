//! The closed set a case's `covers:` names: SPEC-0020's 35 requirements, by
//! their `### Requirement:` titles verbatim, and ADR-0028's confirmation
//! tests 1–9 (`confirmation 4`). [`crate::loading::validate`] refuses any other
//! name, and `sdd-evals coverage` ([`crate::loading::coverage`]) maps every one of
//! them to the cases that prove it.
//!
//! The titles are data here because the reference documents live outside
//! the repository; a test pins their number. ADR-0028's tenth confirmation
//! ("a spec follows this ADR") is met by SPEC-0020 existing, which no eval
//! can show, so it is not a name a case can cover.

/// SPEC-0020's requirements, in the spec's order.
pub const SPEC_0020: [&str; 35] = [
    "Loop Mode Opt-In",
    "CLI Surface for Loop Controls",
    "Backlog-Empty Stop (Condition #1)",
    "Terminal-PR Stop (Condition #2)",
    "Iteration Budget Stop (Condition #3)",
    "PR-Touch Budget Stop (Condition #4)",
    "Wall-Clock Budget Stop (Condition #5)",
    "Repeated-Failure Stop (Condition #6)",
    "Dependency-Cycle Stop (Condition #7)",
    "User Interrupt Stop (Condition #8)",
    "Lockfile Contention Skip (Condition #9)",
    "Prior-Gate-Stop Honor (Condition #10)",
    "qmd-Unreachable Stop (Condition #11)",
    "Cost Budget Stop (Condition #12)",
    "Lockfile Schema and Acquisition",
    "PID Liveness as Sole Staleness Signal",
    "Concurrency Invariants for /sdd:work",
    "Concurrency Invariants for /sdd:review",
    "Backlog-Drift Gate",
    "Ambiguous-Acceptance-Criteria Gate",
    "Budget-Escalation Gate (80% Threshold, Multi-Budget Batching)",
    "Post-Feedback-Merge Gate",
    "Force-Unlock Gate",
    "Repeated-Failure Gate",
    "Gates Are Not Debounced Across Iterations",
    "Budget Schema and Persistence",
    "Budget Schema — comments_pushed Definition",
    "Telemetry Schema",
    "Resume Contract",
    "Resume Contract Reconciliation",
    "Single-PR Review Loop Semantics",
    "Post-PR Chain Invocation",
    "Chain Outcome Telemetry",
    "ADR-0010 Bounded-Iteration Preservation",
    "Final Report on Stop",
];

/// ADR-0028's confirmation tests an eval can prove.
pub const CONFIRMATIONS: std::ops::RangeInclusive<u32> = 1..=9;

/// `confirmation N`.
pub fn confirmation(n: u32) -> String {
    format!("confirmation {n}")
}

/// Every name a case may cover: the requirements, then the confirmations.
pub fn names() -> Vec<String> {
    SPEC_0020
        .iter()
        .map(|s| (*s).to_owned())
        .chain(CONFIRMATIONS.map(confirmation))
        .collect()
}

pub fn is_known(name: &str) -> bool {
    SPEC_0020.contains(&name) || CONFIRMATIONS.map(confirmation).any(|c| c == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_0020_has_35_distinct_requirements() {
        let distinct: std::collections::BTreeSet<_> = SPEC_0020.iter().collect();
        assert_eq!(distinct.len(), 35);
        assert_eq!(names().len(), 35 + 9);
        assert!(is_known("confirmation 9") && !is_known("confirmation 10"));
        assert!(is_known("Telemetry Schema") && !is_known("telemetry schema"));
    }
}
