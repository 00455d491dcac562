//! Changes the world undergoes between ticks, "elsewhere" — a human merges
//! a pull request, a reviewer leaves a comment, a new story lands.
//!
//! [`WorldChange`] is an externally tagged enum so a scenario can list
//! changes in YAML with exact error locations:
//!
//! ```yaml
//! - add_issue: { title: Urgent fix, body: "### Acceptance Criteria\n- works" }
//! - merge_pr: 10
//! - close_pr: 11
//! - close_issue: 3
//! - add_review_comment: { pr: 10, author: alice, body: Please rename }
//! - reply_to_review_comment: { pr: 10, to: 100, author: alice, body: Thanks }
//! - add_issue_comment: { number: 1, author: bob, body: Any news? }
//! - add_review: { pr: 10, author: bob, state: APPROVED }
//! - set_labels: { number: 1, labels: [in-progress] }
//! - add_labels: { number: 1, labels: [do-not-merge] }
//! - remove_label: { number: 1, label: in-progress }
//! - set_head_sha: { pr: 10, sha: 0123abcd }
//! - reply_to_gate: { author: alice, answer: continue }
//! - reply_to_gate: { author: mallory, answer: continue, permission: read }
//! - reply_to_gate: { author: alice, answer: stop, gate: previous }
//! - reply_to_gate: { author: alice, answer: continue, edited_from_older: true }
//! - reply_to_gate: { author: sdd-worker, answer: continue, code: from_notification }
//! ```
//!
//! `reply_to_gate` answers a gate the loop posted (docs/src/gates-away.md):
//! a reply under the post — the latest gate post, or with `gate: previous`
//! the one before it — whose body is `/answer ID ANSWER` (or `body`, where
//! `{gate}` stands for the id), by `author`, whose repository permission
//! `permission` sets first; with `edited_from_older` the comment is
//! written a minute before the post and edited into the answer now. With
//! `code: from_notification` its first line ends with `code=CODE`, the
//! answer code the person was sent for that post: the tracker does not
//! know it, so whoever applies the change reads it where the
//! notification arrived ([`WorldChange::apply_with_codes`]).

use serde::{Deserialize, Serialize};

use super::world::{NewIssue, World, WorldError};
use crate::fixture::ReviewState;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum WorldChange {
    AddIssue(NewIssue),
    CloseIssue(u64),
    MergePr(u64),
    ClosePr(u64),
    AddReviewComment {
        pr: u64,
        author: String,
        body: String,
        #[serde(default)]
        path: Option<String>,
    },
    ReplyToReviewComment {
        pr: u64,
        to: u64,
        author: String,
        body: String,
    },
    AddIssueComment {
        number: u64,
        author: String,
        body: String,
    },
    AddReview {
        pr: u64,
        author: String,
        state: ReviewState,
        #[serde(default)]
        body: String,
    },
    SetLabels {
        number: u64,
        labels: Vec<String>,
    },
    AddLabels {
        number: u64,
        labels: Vec<String>,
    },
    RemoveLabel {
        number: u64,
        label: String,
    },
    SetHeadSha {
        pr: u64,
        sha: String,
    },
    ReplyToGate {
        author: String,
        answer: String,
        #[serde(default)]
        gate: GatePick,
        #[serde(default)]
        permission: Option<String>,
        #[serde(default)]
        edited_from_older: bool,
        #[serde(default)]
        body: Option<String>,
        #[serde(default)]
        code: Option<AnswerCode>,
    },
}

/// Where a scripted reply's answer code comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerCode {
    /// The code the gate's notification carried, as the person received it.
    FromNotification,
}

/// Finds the answer code sent for the gate posted at an address (the post
/// comment's `html_url`); an error says why there is none.
pub type CodeLookup<'a> = &'a dyn Fn(&str) -> Result<String, String>;

/// Which gate post a scripted reply answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GatePick {
    #[default]
    Latest,
    Previous,
}

impl WorldChange {
    /// Applies the change; a reply's `code: from_notification` is refused
    /// here, where no notification is at hand.
    pub fn apply(&self, world: &mut World) -> Result<(), WorldError> {
        self.apply_with_codes(world, &|_| {
            Err("no notification receiver is at hand to read the code from".to_owned())
        })
    }

    /// Applies the change, reading a reply's `code: from_notification` with
    /// `codes`.
    pub fn apply_with_codes(
        &self,
        world: &mut World,
        codes: CodeLookup<'_>,
    ) -> Result<(), WorldError> {
        match self {
            WorldChange::AddIssue(issue) => world.add_issue(issue).map(drop),
            WorldChange::CloseIssue(n) => world.close_issue(*n),
            WorldChange::MergePr(n) => world.merge_pull(*n).map(drop),
            WorldChange::ClosePr(n) => world.close_pull(*n),
            WorldChange::AddReviewComment {
                pr,
                author,
                body,
                path,
            } => world
                .add_review_comment(*pr, author, body, path.as_deref())
                .map(drop),
            WorldChange::ReplyToReviewComment {
                pr,
                to,
                author,
                body,
            } => world
                .reply_to_review_comment(*pr, *to, author, body)
                .map(drop),
            WorldChange::AddIssueComment {
                number,
                author,
                body,
            } => world.add_issue_comment(*number, author, body).map(drop),
            WorldChange::AddReview {
                pr,
                author,
                state,
                body,
            } => world.add_review(*pr, author, *state, body).map(drop),
            WorldChange::SetLabels { number, labels } => {
                world.set_labels(*number, labels).map(drop)
            }
            WorldChange::AddLabels { number, labels } => {
                world.add_labels(*number, labels).map(drop)
            }
            WorldChange::RemoveLabel { number, label } => {
                world.remove_label(*number, label).map(drop)
            }
            WorldChange::SetHeadSha { pr, sha } => world.set_head_sha(*pr, sha),
            WorldChange::ReplyToGate {
                author,
                answer,
                gate,
                permission,
                edited_from_older,
                body,
                code,
            } => {
                let posts = world.gate_posts();
                let pick = match gate {
                    GatePick::Latest => posts.len().checked_sub(1),
                    GatePick::Previous => posts.len().checked_sub(2),
                };
                let Some((number, comment, id, posted)) = pick.and_then(|i| posts.get(i)).cloned()
                else {
                    return Err(WorldError::Invalid(format!(
                        "reply_to_gate: the tracker holds {} gate post(s), none to answer as the {gate:?} one",
                        posts.len()
                    )));
                };
                if let Some(p) = permission {
                    world.set_permission(author, p);
                }
                let mut text = match body {
                    Some(b) => b.replace("{gate}", &id),
                    None => format!("/answer {id} {answer}"),
                };
                if let Some(AnswerCode::FromNotification) = code {
                    let url = world.issue_comment_html_url(number, comment);
                    let code = codes(&url).map_err(|e| {
                        WorldError::Invalid(format!(
                            "reply_to_gate: `code: from_notification` for the gate posted at {url}: {e}"
                        ))
                    })?;
                    text = with_code(&text, &code);
                }
                if *edited_from_older {
                    let before = posted
                        .checked_sub(jiff::SignedDuration::from_mins(1))
                        .unwrap_or(posted);
                    let comment = world.add_issue_comment_at(
                        number,
                        author,
                        "I will look at this.",
                        before,
                    )?;
                    world.edit_issue_comment(comment, &text).map(drop)
                } else {
                    let now = world.now();
                    world
                        .add_issue_comment_at(number, author, &text, now)
                        .map(drop)
                }
            }
        }
    }
}

/// `text` with ` code=CODE` at the end of its first line, where the
/// engine reads an answer.
fn with_code(text: &str, code: &str) -> String {
    match text.split_once('\n') {
        Some((first, rest)) => format!("{first} code={code}\n{rest}"),
        None => format!("{text} code={code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn yaml_list_of_changes_parses_and_applies() {
        let text = "- add_issue: { title: New }\n- merge_pr: 10\n- add_review_comment: { pr: 10, author: alice, body: hi }\n- set_labels: { number: 1, labels: [in-progress] }\n";
        let changes: Vec<WorldChange> = crate::yaml::parse(Path::new("c.yaml"), text, "h").unwrap();
        assert_eq!(changes[1], WorldChange::MergePr(10));
        let mut world = world(
            "repository: a/b\nissues: [{ number: 1, title: x }]\npull_requests: [{ number: 10, title: p, branch: f }]\n",
        );
        for change in &changes {
            change.apply(&mut world).unwrap();
        }
        assert_eq!(world.labels(1).unwrap(), vec!["in-progress"]);
        assert!(world.is_merged(10).unwrap());
        assert_eq!(
            world.list_issues("open", &[]).len(),
            2,
            "#1 and the new #11"
        );
    }

    /// The world of a backlog file's text, its token's login `bot`.
    fn world(backlog: &str) -> World {
        let backlog = crate::fixture::Backlog::parse(Path::new("b.yaml"), backlog).unwrap();
        World::new(
            &backlog,
            "bot".into(),
            None,
            super::super::world::Clock::System,
        )
    }

    fn world_with_a_gate_post() -> World {
        let mut world = world("repository: a/b\nissues: [{ number: 1, title: x }]\n");
        world
            .add_issue_comment(
                1,
                "bot",
                "**sdd-loop work asks** — gate `budget-escalation`, id `g-0000abcd`",
            )
            .unwrap();
        world
    }

    #[test]
    fn a_reply_with_the_code_from_the_notification_carries_it_on_its_answer_line() {
        let change: WorldChange = crate::yaml::parse(
            Path::new("c.yaml"),
            "reply_to_gate: { author: bot, answer: continue, code: from_notification }",
            "h",
        )
        .unwrap();
        let mut world = world_with_a_gate_post();
        let post = world.issue_comments(1).unwrap()[0]["html_url"]
            .as_str()
            .unwrap()
            .to_owned();
        let asked = std::cell::RefCell::new(Vec::new());
        change
            .apply_with_codes(&mut world, &|url| {
                asked.borrow_mut().push(url.to_owned());
                Ok("5f0c1e9a7b2d4c68".to_owned())
            })
            .unwrap();
        assert_eq!(
            asked.into_inner(),
            vec![post],
            "the code is looked up by the post's address"
        );
        assert_eq!(
            world.issue_comments(1).unwrap()[1]["body"],
            "/answer g-0000abcd continue code=5f0c1e9a7b2d4c68"
        );
    }

    #[test]
    fn a_reply_whose_code_cannot_be_read_is_not_written() {
        let change = WorldChange::ReplyToGate {
            author: "bot".into(),
            answer: "continue".into(),
            gate: GatePick::Latest,
            permission: None,
            edited_from_older: false,
            body: Some("/answer {gate} continue\nThanks".into()),
            code: Some(AnswerCode::FromNotification),
        };
        let mut world = world_with_a_gate_post();
        let err = change.apply(&mut world).unwrap_err().to_string();
        assert!(err.contains("no notification receiver"), "{err}");
        assert_eq!(world.issue_comments(1).unwrap().len(), 1);
        change
            .apply_with_codes(&mut world, &|_| Ok("c0de".to_owned()))
            .unwrap();
        assert_eq!(
            world.issue_comments(1).unwrap()[1]["body"],
            "/answer g-0000abcd continue code=c0de\nThanks",
            "the code ends the first line, where the engine reads the answer"
        );
    }

    #[test]
    fn unknown_change_is_located() {
        let err = crate::yaml::parse::<Vec<WorldChange>>(
            Path::new("c.yaml"),
            "- merge_pr: 1\n- explode: 2\n",
            "h",
        )
        .unwrap_err();
        assert_eq!(err.line, 2, "{}", err.render());
    }
}
