//! Performing a script's actions on the world, shared by the fake skill
//! and the fake agents: push branches and open PRs (real git, the mock
//! tracker), comment, reply, merge, label, add worktrees, call `qmd`,
//! print on stderr, block on a barrier.
//!
//! [`Actor`] does the work; what each action *reports* goes to a [`Sink`]:
//! the fake skill's [`super::report::Report`] turns it into protocol
//! events and a result, a fake agent's stream turns it into the events
//! its real counterpart prints — so both act on the world identically.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use sdd_loop::state::history::PrState;
use sdd_loop::state::protocol::{ChainReport, Failure, ModelUsage, PrReport, WorktreeReport};

use super::barrier;
use super::client::{Merge, TrackerClient, TrackerError};
use super::script::{Action, QmdCall};
use crate::git::{self, Git, GitError};

/// Where what an action did is reported.
pub trait Sink {
    fn usage(&mut self, usage: &ModelUsage) -> std::io::Result<()>;
    fn agents(&mut self, count: u64) -> std::io::Result<()>;
    /// A PR opened, pushed to, merged; `command` is what a person would
    /// have typed to do it.
    fn pr(&mut self, pr: PrReport, command: &str) -> std::io::Result<()>;
    fn comment(&mut self, pr: u64, body: &str) -> std::io::Result<()>;
    fn merge_attempted(&mut self, pr: u64) -> std::io::Result<()>;
    fn worktree(&mut self, worktree: WorktreeReport) -> std::io::Result<()>;
    fn failure(&mut self, failure: Failure) -> std::io::Result<()>;
    fn chain(&mut self, chain: ChainReport);
    fn review_round(&mut self, pr: u64, rounds: u64);
    /// A report of a PR without touching it.
    fn report_pr(&mut self, pr: PrReport) -> std::io::Result<()>;
    fn progress(&mut self, message: &str) -> std::io::Result<()>;
    /// A tracker call that changed nothing a report covers (labels).
    fn tool(&mut self, command: &str) -> std::io::Result<()>;
}

/// Why an action failed.
#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error("{0}")]
    Tracker(#[from] TrackerError),
    #[error("{0}")]
    Git(#[from] GitError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// qmd failed; the captured error.
    #[error("{0}")]
    Qmd(String),
}

/// Who acts, and where.
#[derive(Debug)]
pub struct Actor {
    /// The working clone.
    pub cwd: PathBuf,
    pub pid: u32,
    pub git: Git,
    /// The tracker's base URL, repository and token, when configured.
    pub tracker_url: Option<String>,
    pub repo: Option<String>,
    pub token: Option<String>,
    /// The issues the request selected (`open_pr_per_issue`).
    pub issues: Vec<u64>,
    tracker: Option<TrackerClient>,
}

impl Actor {
    pub fn new(
        cwd: PathBuf,
        pid: u32,
        tracker_url: Option<String>,
        repo: Option<String>,
        token: Option<String>,
    ) -> Self {
        Self {
            cwd,
            pid,
            git: Git::default(),
            tracker_url,
            repo,
            token,
            issues: Vec::new(),
            tracker: None,
        }
    }

    fn tracker(&mut self) -> Result<&TrackerClient, TrackerError> {
        if self.tracker.is_none() {
            let url = self
                .tracker_url
                .as_deref()
                .ok_or(TrackerError::NotConfigured(
                    "set SDD_LOOP_TRACKER_URL to the tracker's base URL",
                ))?;
            let repo = self.repo.as_deref().ok_or(TrackerError::NotConfigured(
                "set SDD_LOOP_REPO, or put `repository` in the request",
            ))?;
            self.tracker = Some(TrackerClient::new(url, repo, self.token.clone()));
        }
        Ok(self.tracker.as_ref().expect("set just above"))
    }

    /// Performs one action, reporting it to `sink`. Does not return after
    /// `barrier` or `hang`.
    pub fn act(
        &mut self,
        action: &Action,
        sink: &mut dyn Sink,
        err: &mut dyn Write,
    ) -> Result<(), ActError> {
        match action {
            Action::Qmd(call) => qmd(call, &self.cwd)?,
            Action::OpenPr {
                branch,
                title,
                base,
                body,
                commits,
            } => self.open_pr(sink, branch, title, base, body, *commits)?,
            Action::OpenPrPerIssue { commits } => {
                for n in self.issues.clone() {
                    let (branch, title) = (format!("feature/{n}"), format!("Work on #{n}"));
                    let body = format!("Closes #{n}");
                    self.open_pr(sink, &branch, &title, "main", &body, *commits)?;
                }
            }
            Action::Push {
                pr,
                commits,
                message,
            } => self.push(sink, *pr, *commits, message.as_deref())?,
            Action::ForcePush { pr, message } => self.force_push(sink, *pr, message.as_deref())?,
            Action::Comment { on, body } => {
                self.tracker()?.comment(*on, body)?;
                sink.comment(*on, body)?;
            }
            Action::AnswerGate { answer } => {
                let tracker = self.tracker()?;
                let Some((on, id)) = tracker.latest_gate()? else {
                    return Err(ActError::Io(std::io::Error::other(
                        "answer_gate: no gate is posted on a dashboard issue",
                    )));
                };
                let body = format!("/answer {id} {answer}");
                tracker.comment(on, &body)?;
                sink.comment(on, &body)?;
            }
            Action::Reply { pr, to, body } => {
                self.tracker()?.reply(*pr, *to, body)?;
                sink.comment(*pr, body)?;
            }
            Action::Merge { pr } => self.merge(sink, *pr)?,
            Action::AddLabels { on, labels } => {
                self.tracker()?.add_labels(*on, labels)?;
                sink.tool(&format!(
                    "gh issue edit {on} --add-label {}",
                    labels.join(",")
                ))?;
            }
            Action::OpenIssue {
                title,
                body,
                labels,
            } => {
                self.tracker()?.open_issue(title, body, labels)?;
                sink.tool(&format!("gh issue create --title {title:?}"))?;
            }
            Action::RemoveLabel { on, label } => {
                self.tracker()?.remove_label(*on, label)?;
                sink.tool(&format!("gh issue edit {on} --remove-label {label}"))?;
            }
            Action::Usage(usage) => sink.usage(usage)?,
            Action::Agents(count) => sink.agents(*count)?,
            Action::Worktree {
                path,
                branch,
                start,
            } => self.worktree(sink, path, branch, start.as_deref())?,
            Action::Failure(failure) => sink.failure(failure.clone())?,
            Action::Chain(chain) => sink.chain(chain.clone()),
            Action::ReviewRound { pr, rounds } => sink.review_round(*pr, *rounds),
            Action::ReportPr(pr) => sink.report_pr(pr.clone())?,
            Action::Progress(message) => sink.progress(message)?,
            Action::Stderr(line) => {
                writeln!(err, "{line}")?;
                err.flush()?;
            }
            Action::Barrier(path) => self.barrier(err, path)?,
            Action::Hang => {
                err.flush()?;
                barrier::block_until_killed();
            }
        }
        Ok(())
    }

    /// Pushes `branch` and opens its pull request.
    fn open_pr(
        &mut self,
        sink: &mut dyn Sink,
        branch: &str,
        title: &str,
        base: &str,
        body: &str,
        commits: u32,
    ) -> Result<(), ActError> {
        let sha = git::push_commits(&self.git, &self.cwd, branch, base, commits, title)?;
        let number = self.tracker()?.create_pull(title, branch, base, body)?;
        sink.pr(
            PrReport {
                number,
                branch: branch.to_owned(),
                head_sha_at_start: None,
                head_sha_at_end: Some(sha),
                state: PrState::Open,
                opened: true,
            },
            &format!("git push -u origin {branch} && gh pr create --title {title:?}"),
        )?;
        Ok(())
    }

    /// Pushes `commits` onto pull request `pr`'s branch.
    fn push(
        &mut self,
        sink: &mut dyn Sink,
        pr: u64,
        commits: u32,
        message: Option<&str>,
    ) -> Result<(), ActError> {
        let (branch, base, start) = self.tracker()?.pull(pr)?;
        let message = message.map_or_else(|| format!("Address review on #{pr}"), str::to_owned);
        let sha = git::push_commits(&self.git, &self.cwd, &branch, &base, commits, &message)?;
        sink.pr(
            PrReport {
                number: pr,
                branch: branch.clone(),
                head_sha_at_start: start,
                head_sha_at_end: Some(sha),
                state: PrState::Open,
                opened: false,
            },
            &format!("git push origin {branch}"),
        )?;
        Ok(())
    }

    /// Rewrites pull request `pr`'s branch and force-pushes it.
    fn force_push(
        &mut self,
        sink: &mut dyn Sink,
        pr: u64,
        message: Option<&str>,
    ) -> Result<(), ActError> {
        let (branch, _, start) = self.tracker()?.pull(pr)?;
        let message = message.map_or_else(|| format!("Rebase #{pr}"), str::to_owned);
        let sha = git::rewrite_branch(&self.git, &self.cwd, &branch, &message)?;
        sink.pr(
            PrReport {
                number: pr,
                branch: branch.clone(),
                head_sha_at_start: start,
                head_sha_at_end: Some(sha),
                state: PrState::Open,
                opened: false,
            },
            &format!("git push --force-with-lease origin {branch}"),
        )?;
        Ok(())
    }

    /// Merges pull request `pr`, or reports why the tracker refused.
    fn merge(&mut self, sink: &mut dyn Sink, pr: u64) -> Result<(), ActError> {
        sink.merge_attempted(pr)?;
        match self.tracker()?.merge(pr)? {
            Merge::Merged { sha } => {
                let (branch, _, _) = self.tracker()?.pull(pr)?;
                sink.pr(
                    PrReport {
                        number: pr,
                        branch,
                        head_sha_at_start: None,
                        head_sha_at_end: Some(sha),
                        state: PrState::Merged,
                        opened: false,
                    },
                    &format!("gh pr merge {pr}"),
                )?;
            }
            Merge::Refused { message } => sink.failure(Failure {
                target: format!("#{pr}"),
                root_cause: format!("merge refused: {message}"),
            })?,
        }
        Ok(())
    }

    /// Adds a worktree at `path` (under the working directory) on `branch`.
    fn worktree(
        &mut self,
        sink: &mut dyn Sink,
        path: &str,
        branch: &str,
        start: Option<&str>,
    ) -> Result<(), ActError> {
        let path = self.cwd.join(path);
        let start = start.unwrap_or("HEAD");
        let head_sha = git::worktree_add(&self.git, &self.cwd, &path, branch, start)?;
        let path = path.canonicalize().unwrap_or(path);
        sink.worktree(WorktreeReport {
            path: path.display().to_string(),
            branch: branch.to_owned(),
            head_sha,
        })?;
        Ok(())
    }

    /// Signals the barrier FIFO at `path` and blocks until killed or
    /// interrupted.
    fn barrier(&self, err: &mut dyn Write, path: &str) -> Result<(), ActError> {
        err.flush()?;
        let interrupts = barrier::Interrupts::catch()?;
        barrier::signal_ready(&self.cwd.join(path), self.pid)?;
        interrupts.block_until_killed_or_interrupted();
        writeln!(err, "interrupted at the barrier: draining")?;
        err.flush()?;
        Ok(())
    }
}

/// Runs `qmd` from PATH; the captured error when it fails.
fn qmd(call: &QmdCall, cwd: &std::path::Path) -> Result<(), ActError> {
    let args = call.args();
    let shown = format!("qmd {}", args.join(" "));
    let output = Command::new("qmd")
        .args(&args)
        .current_dir(cwd)
        .output()
        .map_err(|e| ActError::Qmd(format!("{shown}: cannot run qmd: {e}")))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let captured = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ");
    Err(ActError::Qmd(format!(
        "{shown} failed ({}): {captured}",
        output.status
    )))
}
