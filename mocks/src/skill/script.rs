//! The fake skill's script: what it does on each invocation, in YAML
//! (`FAKE_SKILL_SCRIPT`), typed and `deny_unknown_fields`.
//!
//! ```yaml
//! ticks:
//!   - iteration: 1                  # optional: chosen by the request's iteration
//!     actions:
//!       - qmd: status                 # or { search: text } | { query: text } | update | embed
//!       - usage: { model: claude-opus-4-7, tokens_in: 120000, tokens_out: 30000 }
//!       - agents: 2
//!       - open_pr: { branch: feature/1-login, title: Add login page, commits: 1 }
//!       - open_pr_per_issue: { commits: 1 }   # feature/N, "Work on #N", "Closes #N"
//!       - push: { pr: 10, commits: 1 }
//!       - force_push: { pr: 10 }
//!       - comment: { on: 10, body: Addressed the review. }
//!       - reply: { pr: 10, to: 1001, body: Renamed. }
//!       - merge: { pr: 10 }
//!       - add_labels: { on: 1, labels: [in-progress] }
//!       - open_issue: { title: Upgrade Claude Code, labels: [claude-code-version-required] }
//!       - remove_label: { on: 1, label: in-progress }
//!       - worktree: { path: ../wt-1, branch: wt/1 }
//!       - failure: { target: "#1", root_cause: tests failed }
//!       - chain: { invoked: true, review_outcome: approved, autofix_pr: { invoked: false } }
//!       - review_round: { pr: 10 }
//!       - report_pr: { number: 10, branch: feature/1-login, state: open }
//!       - progress: halfway
//!       - stderr: a line printed verbatim
//!       - barrier: /tmp/sandbox/ready.fifo
//!       - hang
//!     summary: "Opened #3"             # the status block's Outcome line
//!     result: write                    # write (default) | missing | malformed
//!     exit: 0                          # not 90–99 (the fake skill's own failures)
//! default:                             # optional: when no entry is left
//!   actions: []
//! ```
//!
//! An entry with `iteration:` runs when the request carries that iteration.
//! Otherwise the entries without one run in order, one per such
//! invocation, counted in a file (`FAKE_SKILL_COUNTER`, else
//! `{script}.count`); past the end, `default` runs, or the fake skill
//! fails with its bad-script status.

use std::path::Path;

use sdd_loop::state::protocol::{ChainReport, Failure, ModelUsage, PrReport};
use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use super::exit;
use crate::fixture::unlocated;
use crate::yaml::{self, YamlError};

pub const FORMAT_HELP: &str = "the fake-skill script format is described in fixtures/README.md";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub ticks: Vec<Tick>,
    #[serde(default)]
    pub default: Option<Tick>,
}

/// What one invocation does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tick {
    #[serde(default)]
    pub iteration: Option<u64>,
    #[serde(default)]
    pub actions: Vec<Action>,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub result: ResultMode,
    #[serde(default = "exit_zero")]
    pub exit: Spanned<i32>,
}

fn exit_zero() -> Spanned<i32> {
    unlocated(0)
}

impl Tick {
    pub fn new(actions: Vec<Action>) -> Self {
        Self {
            iteration: None,
            actions,
            summary: None,
            result: ResultMode::Write,
            exit: exit_zero(),
        }
    }

    pub fn exit(mut self, code: i32) -> Self {
        self.exit = unlocated(code);
        self
    }

    pub fn at_iteration(mut self, iteration: u64) -> Self {
        self.iteration = Some(iteration);
        self
    }

    pub fn result(mut self, mode: ResultMode) -> Self {
        self.result = mode;
        self
    }
}

/// Whether and how the result file is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultMode {
    #[default]
    Write,
    Missing,
    Malformed,
}

/// A qmd call, as the skills make them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum QmdCall {
    Status,
    Search(String),
    Query(String),
    Update,
    Embed,
}

impl QmdCall {
    pub fn args(&self) -> Vec<String> {
        match self {
            QmdCall::Status => vec!["status".into()],
            QmdCall::Search(q) => vec!["search".into(), q.clone(), "--json".into()],
            QmdCall::Query(q) => vec!["query".into(), q.clone(), "--json".into()],
            QmdCall::Update => vec!["update".into()],
            QmdCall::Embed => vec!["embed".into()],
        }
    }
}

fn one() -> u32 {
    1
}

fn one_u64() -> u64 {
    1
}

fn main_branch() -> String {
    "main".to_owned()
}

/// One step; run in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// Run `qmd …` from PATH; on failure print `qmd-unreachable: …` and
    /// exit 78, as the real skill does (ADR-0024).
    Qmd(QmdCall),
    /// Push a new branch (commits in the working clone) and open a PR.
    OpenPr {
        branch: String,
        title: String,
        #[serde(default = "main_branch")]
        base: String,
        #[serde(default)]
        body: String,
        #[serde(default = "one")]
        commits: u32,
    },
    /// For each issue the request selected, push `feature/{N}` and open a
    /// PR titled `Work on #{N}` that closes it: what a skill does with
    /// whichever issues its tick planned (two clones' ticks at once).
    OpenPrPerIssue {
        #[serde(default = "one")]
        commits: u32,
    },
    /// Push new commits to a PR's branch.
    Push {
        pr: u64,
        #[serde(default = "one")]
        commits: u32,
        #[serde(default)]
        message: Option<String>,
    },
    /// Rewrite a PR branch's last commit and force-push it.
    ForcePush {
        pr: u64,
        #[serde(default)]
        message: Option<String>,
    },
    /// A conversation comment on an issue or PR.
    Comment {
        on: u64,
        body: String,
    },
    /// Reply to the latest gate the loop posted on its dashboard issue
    /// with the exact answer (`/answer ID ANSWER`), under the token the
    /// skill was given: what a model in the loop holding the loop's token
    /// could do (docs/src/gates-away.md).
    AnswerGate {
        answer: String,
    },
    /// A reply in a review thread.
    Reply {
        pr: u64,
        to: u64,
        body: String,
    },
    /// Attempt a merge (a refusal is reported as a failure of `#pr`).
    Merge {
        pr: u64,
    },
    AddLabels {
        on: u64,
        labels: Vec<String>,
    },
    /// Open a tracker issue (e.g. the `claude-code-version-required` issue
    /// of an unavailable `/autofix-pr`).
    OpenIssue {
        title: String,
        #[serde(default)]
        body: String,
        #[serde(default)]
        labels: Vec<String>,
    },
    RemoveLabel {
        on: u64,
        label: String,
    },
    /// Report tokens spent by a model.
    Usage(ModelUsage),
    /// Report agents dispatched.
    Agents(u64),
    /// `git worktree add` (path relative to the working clone).
    Worktree {
        path: String,
        branch: String,
        #[serde(default)]
        start: Option<String>,
    },
    Failure(Failure),
    Chain(ChainReport),
    /// Count review-response rounds on a PR (more than one per tick is a
    /// contract violation the engine must catch).
    ReviewRound {
        pr: u64,
        #[serde(default = "one_u64")]
        rounds: u64,
    },
    /// Report a PR without touching it.
    ReportPr(PrReport),
    /// A heartbeat event.
    Progress(String),
    /// A line printed verbatim on stderr.
    Stderr(String),
    /// Signal `ready <pid>` on this path (a FIFO, or a file), then block
    /// until killed.
    Barrier(String),
    /// Block with no further output until killed.
    Hang,
}

/// Which tick ran, and why (for diagnostics).
#[derive(Debug, Clone, PartialEq)]
pub enum Chosen<'a> {
    ByIteration(&'a Tick),
    ByOrder(u64, &'a Tick),
    Default(&'a Tick),
}

impl<'a> Chosen<'a> {
    pub fn tick(&self) -> &'a Tick {
        match self {
            Chosen::ByIteration(t) | Chosen::ByOrder(_, t) | Chosen::Default(t) => t,
        }
    }
}

impl Script {
    pub fn load(path: &Path) -> Result<Self, YamlError> {
        let script: Self = yaml::load(path, FORMAT_HELP)?;
        script.check(path)?;
        Ok(script)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Self, YamlError> {
        let script: Self = yaml::parse(path, text, FORMAT_HELP)?;
        script.check(path)?;
        Ok(script)
    }

    fn check(&self, path: &Path) -> Result<(), YamlError> {
        for tick in self.ticks.iter().chain(&self.default) {
            if !(0..=255).contains(&tick.exit.value) {
                return Err(YamlError::at(
                    path,
                    tick.exit.referenced,
                    format!("exit {} is not an exit status", tick.exit.value),
                    format!("use 0–255 ({FORMAT_HELP})"),
                ));
            }
            if exit::is_reserved(tick.exit.value) {
                return Err(YamlError::at(
                    path,
                    tick.exit.referenced,
                    format!(
                        "exit {} is reserved for the fake skill's own failures",
                        tick.exit.value
                    ),
                    format!(
                        "script another status; 90–99 mean a broken script, request, tracker or git ({FORMAT_HELP})"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The tick for a request at `iteration`; `next_in_order` is asked
    /// (and advances the counter) only when no entry names the iteration.
    pub fn choose<E>(
        &self,
        iteration: u64,
        next_in_order: impl FnOnce() -> Result<u64, E>,
    ) -> Result<Option<Chosen<'_>>, E> {
        if let Some(tick) = self.ticks.iter().find(|t| t.iteration == Some(iteration)) {
            return Ok(Some(Chosen::ByIteration(tick)));
        }
        let n = next_in_order()?;
        let ordered = self.ticks.iter().filter(|t| t.iteration.is_none());
        let nth = usize::try_from(n.saturating_sub(1))
            .ok()
            .and_then(|i| ordered.clone().nth(i));
        Ok(match (nth, &self.default) {
            (Some(tick), _) => Some(Chosen::ByOrder(n, tick)),
            (None, Some(default)) => Some(Chosen::Default(default)),
            (None, None) => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
ticks:
  - iteration: 3
    actions: [hang]
  - actions:
      - qmd: status
      - qmd: { search: login page }
      - usage: { model: claude-opus-4-7, tokens_in: 10, tokens_out: 2 }
      - open_pr: { branch: feature/1-login, title: Add login }
      - chain: { invoked: true, review_outcome: approved, autofix_pr: { invoked: false } }
      - report_pr: { number: 4, branch: b, state: merged }
    summary: ok
  - actions: [{ stderr: boom }]
    exit: 78
    result: missing
";

    #[test]
    fn parses_every_shape_and_chooses_ticks() {
        let s = Script::parse(Path::new("s.yaml"), SCRIPT).unwrap();
        assert_eq!(s.ticks[1].actions[0], Action::Qmd(QmdCall::Status));
        assert_eq!(
            s.ticks[1].actions[1],
            Action::Qmd(QmdCall::Search("login page".into()))
        );
        assert!(
            matches!(&s.ticks[1].actions[3], Action::OpenPr { base, commits: 1, .. } if base == "main")
        );
        assert_eq!(s.ticks[2].exit.value, 78);

        let by_iteration = s
            .choose::<()>(3, || panic!("no counter needed"))
            .unwrap()
            .unwrap();
        assert!(matches!(by_iteration, Chosen::ByIteration(t) if t.actions == vec![Action::Hang]));
        let first = s.choose::<()>(1, || Ok(1)).unwrap().unwrap();
        assert_eq!(first.tick().summary.as_deref(), Some("ok"));
        let second = s.choose::<()>(2, || Ok(2)).unwrap().unwrap();
        assert_eq!(second.tick().result, ResultMode::Missing);
        assert_eq!(s.choose::<()>(4, || Ok(3)).unwrap(), None);
    }

    #[test]
    fn reserved_exit_and_unknown_action_are_located() {
        let err = Script::parse(
            Path::new("s.yaml"),
            "ticks:\n  - actions: []\n    exit: 92\n",
        )
        .unwrap_err();
        assert_eq!((err.line, err.column), (3, 11), "{}", err.render());
        let err = Script::parse(
            Path::new("s.yaml"),
            "ticks:\n  - actions:\n      - explode: 1\n",
        )
        .unwrap_err();
        assert_eq!(err.line, 3, "{}", err.render());
    }

    #[test]
    fn round_trips_through_yaml_for_the_harness() {
        let script = Script {
            ticks: vec![Tick::new(vec![Action::Agents(2), Action::Hang]).exit(3)],
            default: None,
        };
        let text = serde_saphyr::to_string(&script).unwrap();
        let back = Script::parse(Path::new("w.yaml"), &text).unwrap();
        assert_eq!(back.ticks[0].actions, script.ticks[0].actions);
        assert_eq!(back.ticks[0].exit.value, 3);
    }
}
