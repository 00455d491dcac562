//! What the contract asks a skill's SKILL.md to state: the flags
//! (SPEC-0020 "CLI Surface for Loop Controls"), the gates it must state or
//! may only name (ADR-0028 confirmations 1 and 2), and ADR-0028's
//! single-PR review semantics as statements one block must make.

use std::sync::LazyLock;

use regex::Regex;
use sdd_loop::rules::gates::GateName;
use sdd_loop::state::paths::Skill;

/// What the contract asks a skill's document to state.
#[derive(Debug)]
pub struct Contract {
    /// Flags it must list (SPEC-0020 "CLI Surface for Loop Controls", and
    /// `--no-chain` of "Post-PR Chain Invocation" for work).
    pub flags: &'static [&'static str],
    /// Gates whose question and options it must state.
    pub stated: &'static [GateName],
    /// Gates it may leave to the other document, but must name.
    pub named: &'static [GateName],
}

pub fn contract(skill: Skill) -> Contract {
    match skill {
        // Confirmation 1: every gate a work tick can ask.
        Skill::Work => Contract {
            flags: &[
                "max-iterations",
                "max-prs",
                "max-minutes",
                "max-dollars",
                "lock",
                "resume",
                "budget-file",
                "no-chain",
            ],
            stated: &[
                GateName::ForceUnlock,
                GateName::ResumeDivergence,
                GateName::BacklogDrift,
                GateName::RepeatedFailure,
                GateName::AmbiguousCriteria,
                GateName::BudgetEscalation,
            ],
            named: &[],
        },
        // Confirmation 2: the review-only gate stated; the others a review
        // tick asks may be left to skills/work/SKILL.md by name.
        Skill::Review => Contract {
            flags: &[
                "pr",
                "max-iterations",
                "max-prs",
                "max-minutes",
                "max-dollars",
                "lock",
                "resume",
                "budget-file",
            ],
            stated: &[GateName::PostFeedbackMerge],
            named: &[
                GateName::ForceUnlock,
                GateName::ResumeDivergence,
                GateName::RepeatedFailure,
                GateName::BudgetEscalation,
            ],
        },
    }
}

/// ADR-0028 "Single-PR review loop semantics" as statements a document
/// makes, each a set of patterns one block must all match.
pub static SINGLE_PR: LazyLock<Vec<(&'static str, Vec<Regex>)>> = LazyLock::new(|| {
    let re = |p: &str| Regex::new(&format!("(?i){p}")).expect("a valid regex");
    vec![
        (
            "that prs_touched stays the one watched PR ([\"#N\"])",
            vec![
                re(r"prs_touched"),
                re(r#"stays|remains|collapses|only|\[\s*"?#"#),
            ],
        ),
        (
            "that the PR budget (#4) is inactive",
            vec![
                re(r"#4|pr budget|pr-touch|max-prs|condition 4"),
                re(r"inactive|never|not apply|does not|doesn't|no effect"),
            ],
        ),
        (
            "that comments_pushed and merges_attempted are visible counters",
            vec![
                re(r"comments_pushed|comments pushed"),
                re(r"merges_attempted|merges attempted"),
                re(r"status|shown|visible|report|every tick"),
            ],
        ),
        (
            "that the budget-escalation gate weighs only iterations, minutes and dollars",
            vec![
                re(r"budget[- ]escalation|80\s*%|budget gate"),
                re(r"iterations"),
                re(r"minutes"),
                re(r"dollars"),
            ],
        ),
        (
            "that the loop stops when the PR is merged, closed or labelled do-not-merge",
            vec![re(r"merged"), re(r"closed"), re(r"do-not-merge")],
        ),
    ]
});
