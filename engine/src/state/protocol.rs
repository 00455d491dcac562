//! The wrapped-skill protocol (`docs/src/wrapped-skill.md`): what the engine
//! hands the skill it runs each tick, and what the skill hands back.
//!
//! The engine runs the skill command with three environment variables:
//! - `SDD_LOOP_REQUEST` — path of a JSON [`SkillRequest`] (what to work on
//!   this tick and what the gates decided);
//! - `SDD_LOOP_RESULT` — path where the skill writes its JSON
//!   [`SkillResult`] before exiting;
//! - `SDD_LOOP_EVENTS` — path of an optional JSON Lines stream of
//!   [`SkillEvent`]s, appended as work happens. If the engine is killed
//!   mid-tick, recovery reads this stream so no reported spend and no PR is
//!   lost; each event also counts as progress for the stall watchdog.
//!
//! Exit status 78 (`EX_QMD_UNREACHABLE`, BSD `EX_CONFIG`) or a stderr line
//! containing `qmd-unreachable` is the qmd signal of stop condition #11; the
//! exit status is read first and stderr scanned as the fallback. A missing or
//! invalid result makes the tick `errored` with a root cause that says why.
//!
//! The types are the one definition shared by the engine, the fake skill and
//! the harness; `sdd-loop schema skill-request|skill-result|skill-event`
//! prints their JSON Schemas.

use serde::{Deserialize, Serialize};

use crate::state::budget::ModelTokens;
use crate::state::history::PrState;
use crate::state::paths::Skill;

/// Protocol version written in every request and expected in every result.
pub const PROTOCOL_VERSION: u32 = 1;
/// Reserved exit status for "qmd unreachable" (ADR-0028 condition #11).
pub const EX_QMD_UNREACHABLE: i32 = 78;
/// The stderr sentinel for "qmd unreachable".
pub const QMD_SENTINEL: &str = "qmd-unreachable";
pub const ENV_REQUEST: &str = "SDD_LOOP_REQUEST";
pub const ENV_RESULT: &str = "SDD_LOOP_RESULT";
pub const ENV_EVENTS: &str = "SDD_LOOP_EVENTS";

/// How the skill should read an issue's acceptance criteria.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Criteria {
    /// The issue has a usable `### Acceptance Criteria` section.
    Clear,
    /// Ambiguous, and the user answered `proceed`: implement the best
    /// interpretation.
    BestInterpretation,
}

/// One issue `/sdd:work` is to implement this tick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueAssignment {
    pub number: u64,
    pub title: String,
    pub criteria: Criteria,
}

/// One PR `/sdd:review` is to review this tick (one round, ADR-0010).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrAssignment {
    pub number: u64,
    pub branch: String,
    /// Remote head at tick start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_sha: Option<String>,
    /// Whether the skill may merge this PR this tick (post-feedback-merge
    /// gate answered `merge`, or no human feedback was involved).
    pub merge_allowed: bool,
}

/// What the engine asks of the skill this tick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillRequest {
    pub protocol: u32,
    pub skill: Skill,
    pub iteration: u64,
    /// `owner/name` of the tracker repository, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// `/sdd:work`: the issues selected this tick.
    #[serde(default)]
    pub issues: Vec<IssueAssignment>,
    /// `/sdd:review`: the PRs to review this tick.
    #[serde(default)]
    pub prs: Vec<PrAssignment>,
    /// How many new PRs the skill may open this tick (the remaining PR
    /// budget); `None` when no PR ceiling applies (single-PR review).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_new_prs: Option<u64>,
    /// `--no-chain`: `/sdd:work` must not chain into review.
    pub no_chain: bool,
    /// `--dry-run`: plan and report, change nothing.
    pub dry_run: bool,
}

/// A PR the skill touched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrReport {
    pub number: u64,
    pub branch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_sha_at_start: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_sha_at_end: Option<String>,
    pub state: PrState,
    /// The skill opened this PR this tick.
    #[serde(default)]
    pub opened: bool,
}

/// Tokens one model used this tick.
///
/// `tokens_in` is every input token the model consumed; the cache fields
/// are the parts of it that were cache reads and cache writes (Anthropic's
/// `input_tokens` excludes them, so a Claude adapter reports
/// `input + cache_creation + cache_read` here). Without them every input
/// token is priced at the input rate, which never under-counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelUsage {
    pub model: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// The part of `tokens_in` read from the prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// The part of `tokens_in` written to the prompt cache (all lifetimes).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// The part of `cache_write_tokens` written with the 1-hour lifetime.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_1h_tokens: u64,
}

impl ModelUsage {
    /// The counts, without the model name, as the budget keeps them.
    pub fn tokens(&self) -> ModelTokens {
        ModelTokens {
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            cache_read_tokens: self.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens,
            cache_write_1h_tokens: self.cache_write_1h_tokens,
        }
    }

    /// `model`'s usage from its counts.
    pub fn from_tokens(model: impl Into<String>, tokens: ModelTokens) -> Self {
        Self {
            model: model.into(),
            tokens_in: tokens.tokens_in,
            tokens_out: tokens.tokens_out,
            cache_read_tokens: tokens.cache_read_tokens,
            cache_write_tokens: tokens.cache_write_tokens,
            cache_write_1h_tokens: tokens.cache_write_1h_tokens,
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A worktree the skill left on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorktreeReport {
    pub path: String,
    pub branch: String,
    pub head_sha: String,
}

/// A target that failed, with its root cause (drives condition #6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    /// `"#N"`: the issue or PR.
    pub target: String,
    pub root_cause: String,
}

/// Whether work chained into review, and how that went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChainReport {
    pub invoked: bool,
    /// Required when `invoked`: one of `approve`, `changes-requested`,
    /// `needs-human`, `errored` (another value makes the tick `errored`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_outcome: Option<String>,
    /// Present when `invoked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autofix_pr: Option<AutofixReport>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AutofixReport {
    pub invoked: bool,
    /// Required when `invoked`: one of `accepted`, `unavailable`,
    /// `errored` (another value makes the tick `errored`). Never invoked
    /// after `review_outcome` `errored`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Review-response rounds run on one PR this tick (ADR-0010: at most one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewRounds {
    pub pr: u64,
    pub rounds: u64,
}

/// What the skill reports at the end of its tick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillResult {
    pub protocol: u32,
    #[serde(default)]
    pub prs: Vec<PrReport>,
    #[serde(default)]
    pub usage: Vec<ModelUsage>,
    #[serde(default)]
    pub agents_dispatched: u64,
    /// Top-level review comments and replies.
    #[serde(default)]
    pub comments_pushed: u64,
    #[serde(default)]
    pub merges_attempted: u64,
    #[serde(default)]
    pub worktrees: Vec<WorktreeReport>,
    #[serde(default)]
    pub failures: Vec<Failure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainReport>,
    #[serde(default)]
    pub review_rounds: Vec<ReviewRounds>,
    /// One line for the status block's `Outcome:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The work's own estimate of what it spent, in USD (a Claude Code
    /// agent's `total_cost_usd`). Recorded beside the engine's estimate as
    /// `agent_cost_usd_this_iter` and compared with it on the status
    /// block; the cost stop never uses it (the contract prices tokens ×
    /// rates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_cost_usd: Option<f64>,
    /// What the work read of the account's usage windows — the figures
    /// last seen and a limit hit (a 429) — for the window budgets
    /// (docs/src/usage-windows.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_windows: Option<crate::state::windows::WindowsReport>,
}

/// One progress event on the `SDD_LOOP_EVENTS` stream. Usage and counts are
/// increments; the final result carries the tick's totals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case", deny_unknown_fields)]
pub enum SkillEvent {
    /// Tokens spent since the last usage event for this model; the cache
    /// fields are parts of `tokens_in`, as in [`ModelUsage`].
    Usage {
        model: String,
        tokens_in: u64,
        tokens_out: u64,
        #[serde(default, skip_serializing_if = "is_zero")]
        cache_read_tokens: u64,
        #[serde(default, skip_serializing_if = "is_zero")]
        cache_write_tokens: u64,
        #[serde(default, skip_serializing_if = "is_zero")]
        cache_write_1h_tokens: u64,
    },
    /// A PR was opened, pushed to, merged or closed.
    Pr {
        number: u64,
        branch: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        head_sha: Option<String>,
        state: PrState,
        #[serde(default)]
        opened: bool,
    },
    AgentDispatched {
        #[serde(default = "one")]
        count: u64,
    },
    CommentPushed {
        pr: u64,
        #[serde(default = "one")]
        count: u64,
    },
    MergeAttempted {
        pr: u64,
    },
    Worktree {
        path: String,
        branch: String,
        head_sha: String,
    },
    Failure {
        target: String,
        root_cause: String,
    },
    /// A heartbeat with no accounting effect.
    Progress {
        message: String,
    },
    /// Written by the engine, not the skill (issue 32): the claim on
    /// issue or PR `number` was lost while the work ran — another clone
    /// took it, or it could not be renewed before it lapsed. Stop working
    /// on it: no PR, no merge for it this tick.
    ClaimLost {
        number: u64,
        reason: String,
    },
}

fn one() -> u64 {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_result_parses_with_defaults() {
        let r: SkillResult = serde_json::from_str(r#"{"protocol":1}"#).unwrap();
        assert_eq!(
            r,
            SkillResult {
                protocol: 1,
                ..Default::default()
            }
        );
    }

    #[test]
    fn unknown_result_field_is_an_error_naming_it() {
        let err = serde_json::from_str::<SkillResult>(r#"{"protocol":1,"tokens":5}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `tokens`"), "{err}");
    }

    #[test]
    fn events_are_tagged_lines() {
        let e: SkillEvent = serde_json::from_str(
            r#"{"event":"usage","model":"claude-opus-4-7","tokens_in":10,"tokens_out":2}"#,
        )
        .unwrap();
        assert!(matches!(e, SkillEvent::Usage { tokens_in: 10, .. }));
        let e: SkillEvent = serde_json::from_str(r#"{"event":"agent_dispatched"}"#).unwrap();
        assert_eq!(e, SkillEvent::AgentDispatched { count: 1 });
        assert!(
            serde_json::from_str::<SkillEvent>(
                r#"{"event":"usage","model":"m","tokens_in":1,"tokens_out":1,"x":1}"#
            )
            .is_err()
        );
    }

    #[test]
    fn cache_parts_are_optional_and_omitted_when_zero() {
        let old = r#"{"event":"usage","model":"m","tokens_in":10,"tokens_out":2}"#;
        let e: SkillEvent = serde_json::from_str(old).unwrap();
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            old,
            "old lines unchanged"
        );
        let e: SkillEvent = serde_json::from_str(
            r#"{"event":"usage","model":"m","tokens_in":10,"tokens_out":2,"cache_read_tokens":6,"cache_write_tokens":3,"cache_write_1h_tokens":1}"#,
        )
        .unwrap();
        assert!(matches!(
            e,
            SkillEvent::Usage {
                cache_read_tokens: 6,
                cache_write_tokens: 3,
                cache_write_1h_tokens: 1,
                ..
            }
        ));
        let u: ModelUsage = serde_json::from_str(
            r#"{"model":"m","tokens_in":10,"tokens_out":2,"cache_read_tokens":6}"#,
        )
        .unwrap();
        assert_eq!(u.tokens().cache_read_tokens, 6);
        assert_eq!(ModelUsage::from_tokens("m", u.tokens()), u);
        assert_eq!(
            serde_json::to_string(&ModelUsage {
                model: "m".into(),
                tokens_in: 1,
                tokens_out: 1,
                ..ModelUsage::default()
            })
            .unwrap(),
            r#"{"model":"m","tokens_in":1,"tokens_out":1}"#
        );
    }

    #[test]
    fn request_round_trips() {
        let req = SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill: Skill::Work,
            iteration: 2,
            repository: Some("acme/app".into()),
            issues: vec![IssueAssignment {
                number: 12,
                title: "Add login".into(),
                criteria: Criteria::Clear,
            }],
            prs: vec![],
            max_new_prs: Some(1),
            no_chain: false,
            dry_run: false,
        };
        let text = serde_json::to_string(&req).unwrap();
        assert_eq!(serde_json::from_str::<SkillRequest>(&text).unwrap(), req);
    }
}
