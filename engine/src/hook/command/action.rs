//! What a tool call does that the loop contract governs ([`Action`]),
//! and where a PR's body is ([`Body`]).

use crate::state::paths::Skill;

/// Where a new PR's body is, as far as the command says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// Given inline.
    Text(String),
    /// In a file (`--body-file F`, `-F body=@F`), relative to the cwd.
    File(String),
    /// In a JSON file's `body` field (`--input F`, `curl -d @F`).
    JsonFile(String),
    /// Not in the command (`--fill`, an editor, a GraphQL query): why.
    Unknown(String),
}

/// One thing a tool call does that the loop contract governs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Opens a pull request.
    OpenPr { via: String, body: Body },
    /// Merges a pull request (`None`: not named by number).
    Merge { via: String, pr: Option<u64> },
    /// Submits a review on a pull request.
    Review { via: String, pr: Option<u64> },
    /// `git push`: the remote and the branches pushed (`HEAD` for the
    /// current one; `None`: which ones cannot be told, e.g. `--all`).
    Push {
        dir: Option<String>,
        remote: Option<String>,
        branches: Option<Vec<String>>,
    },
    /// `sdd-loop SKILL begin`.
    Begin { skill: Skill },
    /// The `Skill` tool running a loop skill with `--loop` (`name` as
    /// called, `args` its arguments).
    LoopSkill {
        skill: Skill,
        name: String,
        args: String,
    },
    /// Writes, moves, truncates or deletes `path` (as written: relative
    /// to the call's working directory, after any `cd` of the same
    /// command line): a redirection, a file command (read in `touch.rs`) or one of
    /// Claude Code's file tools. `deletes`: the path may go away (and with
    /// it whatever is under it).
    Touch {
        via: String,
        path: String,
        deletes: bool,
    },
    /// A command line nested past what is read (wrappers in wrappers,
    /// substitutions in substitutions): it may do any of the above, so it
    /// fails closed as a PR would.
    Unreadable { why: String },
}

impl Action {
    /// A PR, a merge, a review, a push or a loop skill: what fails closed.
    pub fn changes_prs(&self) -> bool {
        !matches!(self, Action::Begin { .. } | Action::Touch { .. })
    }

    /// One line for the decision log and the refusals.
    pub fn describe(&self) -> String {
        match self {
            Action::OpenPr { via, .. } => format!("open a PR ({via})"),
            Action::Merge { via, pr } => match pr {
                Some(n) => format!("merge PR #{n} ({via})"),
                None => format!("merge a PR ({via})"),
            },
            Action::Review { via, pr } => match pr {
                Some(n) => format!("review PR #{n} ({via})"),
                None => format!("review a PR ({via})"),
            },
            Action::Push { branches, .. } => match branches {
                Some(b) if !b.is_empty() => format!("push {} (git push)", b.join(", ")),
                Some(_) => "push the current branch (git push)".to_owned(),
                None => "push branches (git push)".to_owned(),
            },
            Action::Begin { skill } => format!("begin a {skill} tick (sdd-loop {skill} begin)"),
            Action::LoopSkill { name, args, .. } => {
                format!("run the loop skill {name} {args} (Skill)")
            }
            Action::Touch { via, path, deletes } => {
                let what = if *deletes { "delete or move" } else { "write" };
                format!("{what} {path} ({via})")
            }
            Action::Unreadable { why } => format!("run a command line it cannot read ({why})"),
        }
    }
}
