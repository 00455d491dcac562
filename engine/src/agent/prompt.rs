//! The prompt an agent adapter gives the agent: the tick's
//! request in words — for `/sdd:work` the issues to implement with how to
//! read their criteria, for `/sdd:review` one review-response round per PR
//! (ADR-0010) with whether it may be merged — and the rule that the agent
//! does one iteration and never loops itself: the engine owns the loop.
//!
//! [`Template`] is a built-in text per skill, or a file given with
//! `--agent-prompt FILE` that replaces it. Templates name parts of the
//! request as `{{placeholder}}`; [`PLACEHOLDERS`] is the closed set, and a
//! file naming anything else is refused before the tick starts, with the
//! list, so a typo never reaches an agent as literal braces.

use std::path::{Path, PathBuf};

use crate::state::paths::Skill;
use crate::state::protocol::{Criteria, SkillRequest};

/// Every placeholder a template may use, with what it becomes.
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("skill", "`work` or `review`"),
    ("iteration", "the iteration number"),
    (
        "repository",
        "the tracker repository OWNER/NAME (or `the repository`)",
    ),
    (
        "issues",
        "work: one line per issue to implement, with how to read its criteria",
    ),
    (
        "prs",
        "review: one line per PR to review, with its branch, head and whether it may be merged",
    ),
    (
        "max_new_prs",
        "how many new PRs the tick may open (the PR budget left), or `any number of`",
    ),
    (
        "chain",
        "whether work may chain into review (`--no-chain` forbids it)",
    ),
    (
        "dry_run",
        "the dry-run rule under `--dry-run`, else nothing",
    ),
    (
        "request_file",
        "the path of the request as JSON (`sdd-loop schema skill-request`)",
    ),
    ("request_json", "the request itself, as JSON"),
];

const WORK: &str = "\
You are running ONE iteration of `/sdd:work --loop` for {{repository}} (iteration {{iteration}}). The sdd-loop engine drives the loop: it decided what this iteration does, and it counts budgets, pull requests and spend from what you do on the tracker and the git remote.

Implement exactly these issues, then stop:
{{issues}}

Rules for this iteration:
- Implement each issue on its own branch, push it, and open one pull request per issue whose body says `Closes #N` for the issue it implements. Open at most {{max_new_prs}} new pull request(s).
- {{chain}}
- Do not pick other issues, do not loop, and do not schedule or wait for further iterations: when these issues are done (or cannot be done), end your turn.
- If an issue cannot be finished, say which and why in your final message.
{{dry_run}}
The full request, as JSON, is in {{request_file}}.
";

const REVIEW: &str = "\
You are running ONE iteration of `/sdd:review --loop` for {{repository}} (iteration {{iteration}}). The sdd-loop engine drives the loop: it decided what this iteration does, and it counts budgets, comments, merges and spend from what you do on the tracker and the git remote.

Run exactly one review-response round (ADR-0010) on each of these pull requests, then stop:
{{prs}}

Rules for this iteration:
- One round per pull request: read its open review comments, address them with commits pushed to its branch and replies in the threads. Never a second round in this iteration.
- Merge a pull request only where the list above says merging is allowed, and only when its review is done.
- Do not review other pull requests, do not loop, and do not schedule or wait for further iterations: when the round is done, end your turn.
- If a round cannot be finished, say which and why in your final message.
{{dry_run}}
The full request, as JSON, is in {{request_file}}.
";

/// A prompt template: built in, or from `--agent-prompt FILE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    text: String,
    /// The file it came from; `None` for the built-in text.
    pub source: Option<PathBuf>,
}

/// A template that names an unknown placeholder or cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("--agent-prompt {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--agent-prompt {}:{line}: unknown placeholder {{{{{name}}}}}", path.display())]
    Unknown {
        path: PathBuf,
        line: usize,
        name: String,
    },
    #[error("--agent-prompt {}:{line}: a `{{{{` is never closed by `}}}}`", path.display())]
    Unclosed { path: PathBuf, line: usize },
}

impl PromptError {
    pub fn help(&self) -> String {
        match self {
            PromptError::Read { .. } => {
                "pass a readable text file, or drop --agent-prompt to use the built-in prompt"
                    .into()
            }
            PromptError::Unknown { .. } | PromptError::Unclosed { .. } => format!(
                "placeholders are {}; see `sdd-loop work --help`",
                PLACEHOLDERS
                    .iter()
                    .map(|(n, _)| format!("{{{{{n}}}}}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// The placeholders of `text`, each with its 1-based line, in order.
fn placeholders(text: &str) -> Result<Vec<(usize, &str)>, usize> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut consumed = 0;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let line = text[..consumed + open].matches('\n').count() + 1;
        let Some(close) = after.find("}}") else {
            return Err(line);
        };
        out.push((line, after[..close].trim()));
        consumed += open + 2 + close + 2;
        rest = &after[close + 2..];
    }
    Ok(out)
}

impl Template {
    /// The built-in template of `skill`.
    pub fn built_in(skill: Skill) -> Self {
        Self {
            text: match skill {
                Skill::Work => WORK,
                Skill::Review => REVIEW,
            }
            .to_owned(),
            source: None,
        }
    }

    /// A template file, checked: every placeholder must be known.
    pub fn load(path: &Path) -> Result<Self, PromptError> {
        let text = std::fs::read_to_string(path).map_err(|source| PromptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, text)
    }

    /// `text`, read from `path`, checked.
    pub fn parse(path: &Path, text: String) -> Result<Self, PromptError> {
        let found = placeholders(&text).map_err(|line| PromptError::Unclosed {
            path: path.to_path_buf(),
            line,
        })?;
        if let Some((line, name)) = found
            .iter()
            .find(|(_, n)| !PLACEHOLDERS.iter().any(|(k, _)| k == n))
        {
            return Err(PromptError::Unknown {
                path: path.to_path_buf(),
                line: *line,
                name: (*name).to_owned(),
            });
        }
        Ok(Self {
            text,
            source: Some(path.to_path_buf()),
        })
    }

    /// The prompt for `request`, whose JSON is at `request_file`.
    pub fn render(&self, request: &SkillRequest, request_file: &Path) -> String {
        let mut out = String::with_capacity(self.text.len() + 512);
        let mut rest = self.text.as_str();
        while let Some(open) = rest.find("{{") {
            out.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let Some(close) = after.find("}}") else {
                out.push_str(&rest[open..]);
                return out;
            };
            out.push_str(&value(after[..close].trim(), request, request_file));
            rest = &after[close + 2..];
        }
        out.push_str(rest);
        out
    }
}

fn value(name: &str, request: &SkillRequest, request_file: &Path) -> String {
    match name {
        "skill" => request.skill.as_str().to_owned(),
        "iteration" => request.iteration.to_string(),
        "repository" => request
            .repository
            .clone()
            .unwrap_or_else(|| "the repository".to_owned()),
        "issues" => issues(request),
        "prs" => prs(request),
        "max_new_prs" => request
            .max_new_prs
            .map_or_else(|| "any number of".to_owned(), |n| n.to_string()),
        "chain" => if request.no_chain {
            "Do not chain into `/sdd:review` after opening a pull request (--no-chain)."
        } else {
            "You may chain into `/sdd:review` on the pull requests you open, as `/sdd:work` normally does."
        }
        .to_owned(),
        "dry_run" => if request.dry_run {
            "\nThis is a dry run (--dry-run): plan and report what you would do, and change nothing — no commits, pushes, pull requests, comments or merges.\n"
        } else {
            ""
        }
        .to_owned(),
        "request_file" => request_file.display().to_string(),
        "request_json" => serde_json::to_string_pretty(request).unwrap_or_default(),
        // Checked when the template was loaded; the built-ins use only
        // known names.
        other => format!("{{{{{other}}}}}"),
    }
}

fn issues(request: &SkillRequest) -> String {
    if request.issues.is_empty() {
        return "- (none)".to_owned();
    }
    request
        .issues
        .iter()
        .map(|i| {
            let how = match i.criteria {
                Criteria::Clear => "implement what its `### Acceptance Criteria` section asks",
                Criteria::BestInterpretation => {
                    "its acceptance criteria are ambiguous and the user chose `proceed`: implement your best interpretation and state the assumptions you made in the pull request body"
                }
            };
            format!("- #{} {} — {how}", i.number, i.title)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn prs(request: &SkillRequest) -> String {
    if request.prs.is_empty() {
        return "- (none)".to_owned();
    }
    request
        .prs
        .iter()
        .map(|p| {
            let head = p
                .head_sha
                .as_deref()
                .map(|s| format!(", head {}", s.chars().take(7).collect::<String>()))
                .unwrap_or_default();
            let merge = if p.merge_allowed {
                "merging is allowed when the review is done"
            } else {
                "do NOT merge it (hold for a human re-review)"
            };
            let branch = if p.branch.is_empty() {
                String::new()
            } else {
                format!("branch `{}`", p.branch)
            };
            format!("- PR #{} ({branch}{head}) — {merge}", p.number)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::protocol::{IssueAssignment, PROTOCOL_VERSION, PrAssignment};

    fn request(skill: Skill) -> SkillRequest {
        SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill,
            iteration: 3,
            repository: Some("acme/app".into()),
            issues: vec![
                IssueAssignment {
                    number: 1,
                    title: "Add login".into(),
                    criteria: Criteria::Clear,
                },
                IssueAssignment {
                    number: 2,
                    title: "Tidy up".into(),
                    criteria: Criteria::BestInterpretation,
                },
            ],
            prs: vec![PrAssignment {
                number: 142,
                branch: "feature/142".into(),
                head_sha: Some("abcdef0123".into()),
                merge_allowed: false,
            }],
            max_new_prs: Some(2),
            no_chain: true,
            dry_run: false,
        }
    }

    #[test]
    fn work_prompt_names_each_issue_the_budget_and_the_no_loop_rule() {
        let p =
            Template::built_in(Skill::Work).render(&request(Skill::Work), Path::new("/x/r.json"));
        assert!(p.contains("for acme/app (iteration 3)"), "{p}");
        assert!(p.contains(
            "- #1 Add login — implement what its `### Acceptance Criteria` section asks"
        ));
        assert!(p.contains(
            "- #2 Tidy up — its acceptance criteria are ambiguous and the user chose `proceed`"
        ));
        assert!(p.contains("Open at most 2 new pull request(s)."));
        assert!(p.contains("Do not chain into `/sdd:review`"));
        assert!(p.contains("do not loop"));
        assert!(p.contains("/x/r.json"));
        assert!(!p.contains("{{"), "every placeholder is filled: {p}");
        assert!(!p.contains("dry run"));
    }

    #[test]
    fn review_prompt_asks_one_round_and_says_whether_to_merge() {
        let mut r = request(Skill::Review);
        r.dry_run = true;
        let p = Template::built_in(Skill::Review).render(&r, Path::new("r.json"));
        assert!(p.contains("exactly one review-response round (ADR-0010)"));
        assert!(p.contains("- PR #142 (branch `feature/142`, head abcdef0) — do NOT merge it"));
        assert!(p.contains("This is a dry run (--dry-run)"));
        assert!(!p.contains("{{"));
    }

    #[test]
    fn a_template_file_replaces_the_built_in_and_unknown_placeholders_are_refused() {
        let t = Template::parse(
            Path::new("p.md"),
            "Do {{ skill }} #{{iteration}} on {{repository}}:\n{{issues}}\n{{request_json}}".into(),
        )
        .unwrap();
        let p = t.render(&request(Skill::Work), Path::new("r.json"));
        assert!(
            p.starts_with("Do work #3 on acme/app:\n- #1 Add login"),
            "{p}"
        );
        assert!(p.contains("\"max_new_prs\": 2"));

        let err = Template::parse(Path::new("p.md"), "ok\n{{isues}}".into()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--agent-prompt p.md:2: unknown placeholder {{isues}}"
        );
        assert!(err.help().contains("{{issues}}"), "{}", err.help());
        let err = Template::parse(Path::new("p.md"), "{{skill".into()).unwrap_err();
        assert!(matches!(err, PromptError::Unclosed { line: 1, .. }));
    }
}
