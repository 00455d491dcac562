//! One invocation of the fake skill: read the engine's request, pick this
//! invocation's tick from the script, perform its actions in order against
//! the mock tracker, real git and `qmd` on PATH — reporting each as an
//! event as it happens — then write the result and exit as scripted.
//!
//! Failure paths, each with its own exit status ([`super::exit`]):
//! a failed qmd call prints `qmd-unreachable: <captured error>` on stderr,
//! writes the result so far (as the tick's `result:` says) and exits 78,
//! as the real skill does; the fake skill's own failures (bad script or
//! request, tracker or git error, unwritable files) print `[fake-skill]`
//! diagnostics, write no result and exit 90–94.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use sdd_loop::history::PrState;
use sdd_loop::protocol::{
    EX_QMD_UNREACHABLE, Failure, PrReport, QMD_SENTINEL, SkillRequest, WorktreeReport,
};

use super::barrier;
use super::client::{Merge, TrackerClient, TrackerError};
use super::counter;
use super::exit;
use super::report::{self, Report};
use super::script::{Action, Chosen, QmdCall, Script, Tick};
use crate::git::{self, Git, GitError};

/// What the binary gathers from its environment.
#[derive(Debug, Clone, Default)]
pub struct SkillEnv {
    /// `SDD_LOOP_REQUEST`.
    pub request: Option<PathBuf>,
    /// `SDD_LOOP_RESULT`.
    pub result: Option<PathBuf>,
    /// `SDD_LOOP_EVENTS`.
    pub events: Option<PathBuf>,
    /// `FAKE_SKILL_SCRIPT`.
    pub script: Option<PathBuf>,
    /// `FAKE_SKILL_COUNTER`; default `{script}.count`.
    pub counter: Option<PathBuf>,
    /// `SDD_LOOP_TRACKER_URL`, e.g. `http://127.0.0.1:4567`.
    pub tracker_url: Option<String>,
    /// `SDD_LOOP_REPO` (`owner/name`); default: the request's repository.
    pub repo: Option<String>,
    /// `SDD_LOOP_TRACKER_TOKEN`, else `GITHUB_TOKEN`.
    pub token: Option<String>,
    /// The working clone the skill runs in.
    pub cwd: PathBuf,
    pub pid: u32,
}

#[derive(Debug, thiserror::Error)]
enum ActError {
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

fn diag(err: &mut dyn Write, text: &str) {
    for line in text.lines() {
        let _ = writeln!(err, "[fake-skill] {line}");
    }
    let _ = err.flush();
}

struct Ctx<'a> {
    env: &'a SkillEnv,
    request: SkillRequest,
    report: Report,
    git: Git,
    tracker: Option<TrackerClient>,
}

impl Ctx<'_> {
    fn tracker(&mut self) -> Result<&TrackerClient, TrackerError> {
        if self.tracker.is_none() {
            let url = self
                .env
                .tracker_url
                .as_deref()
                .ok_or(TrackerError::NotConfigured(
                    "set SDD_LOOP_TRACKER_URL to the tracker's base URL",
                ))?;
            let repo = self
                .env
                .repo
                .as_deref()
                .or(self.request.repository.as_deref())
                .ok_or(TrackerError::NotConfigured(
                    "set SDD_LOOP_REPO, or put `repository` in the request",
                ))?;
            self.tracker = Some(TrackerClient::new(url, repo, self.env.token.clone()));
        }
        Ok(self.tracker.as_ref().expect("set just above"))
    }

    fn path(&self, path: &str) -> PathBuf {
        self.env.cwd.join(path)
    }

    fn act(&mut self, action: &Action, err: &mut dyn Write) -> Result<(), ActError> {
        let cwd = self.env.cwd.clone();
        match action {
            Action::Qmd(call) => qmd(call, &cwd)?,
            Action::OpenPr {
                branch,
                title,
                base,
                body,
                commits,
            } => {
                let sha = git::push_commits(&self.git, &cwd, branch, base, *commits, title)?;
                let number = self.tracker()?.create_pull(title, branch, base, body)?;
                self.report.pr(PrReport {
                    number,
                    branch: branch.clone(),
                    head_sha_at_start: None,
                    head_sha_at_end: Some(sha),
                    state: PrState::Open,
                    opened: true,
                })?;
            }
            Action::Push {
                pr,
                commits,
                message,
            } => {
                let (branch, base, start) = self.tracker()?.pull(*pr)?;
                let message = message
                    .clone()
                    .unwrap_or_else(|| format!("Address review on #{pr}"));
                let sha = git::push_commits(&self.git, &cwd, &branch, &base, *commits, &message)?;
                self.report.pr(PrReport {
                    number: *pr,
                    branch,
                    head_sha_at_start: start,
                    head_sha_at_end: Some(sha),
                    state: PrState::Open,
                    opened: false,
                })?;
            }
            Action::ForcePush { pr, message } => {
                let (branch, _, start) = self.tracker()?.pull(*pr)?;
                let message = message.clone().unwrap_or_else(|| format!("Rebase #{pr}"));
                let sha = git::rewrite_branch(&self.git, &cwd, &branch, &message)?;
                self.report.pr(PrReport {
                    number: *pr,
                    branch,
                    head_sha_at_start: start,
                    head_sha_at_end: Some(sha),
                    state: PrState::Open,
                    opened: false,
                })?;
            }
            Action::Comment { on, body } => {
                self.tracker()?.comment(*on, body)?;
                self.report.comment(*on)?;
            }
            Action::Reply { pr, to, body } => {
                self.tracker()?.reply(*pr, *to, body)?;
                self.report.comment(*pr)?;
            }
            Action::Merge { pr } => {
                self.report.merge_attempted(*pr)?;
                match self.tracker()?.merge(*pr)? {
                    Merge::Merged { sha } => {
                        let (branch, _, _) = self.tracker()?.pull(*pr)?;
                        self.report.pr(PrReport {
                            number: *pr,
                            branch,
                            head_sha_at_start: None,
                            head_sha_at_end: Some(sha),
                            state: PrState::Merged,
                            opened: false,
                        })?;
                    }
                    Merge::Refused { message } => self.report.failure(Failure {
                        target: format!("#{pr}"),
                        root_cause: format!("merge refused: {message}"),
                    })?,
                }
            }
            Action::AddLabels { on, labels } => self.tracker()?.add_labels(*on, labels)?,
            Action::OpenIssue {
                title,
                body,
                labels,
            } => self.tracker()?.open_issue(title, body, labels)?,
            Action::RemoveLabel { on, label } => self.tracker()?.remove_label(*on, label)?,
            Action::Usage(usage) => self.report.usage(usage)?,
            Action::Agents(count) => self.report.agents(*count)?,
            Action::Worktree {
                path,
                branch,
                start,
            } => {
                let path = self.path(path);
                let start = start.as_deref().unwrap_or("HEAD");
                let head_sha = git::worktree_add(&self.git, &cwd, &path, branch, start)?;
                let path = path.canonicalize().unwrap_or(path);
                self.report.worktree(WorktreeReport {
                    path: path.display().to_string(),
                    branch: branch.clone(),
                    head_sha,
                })?;
            }
            Action::Failure(failure) => self.report.failure(failure.clone())?,
            Action::Chain(chain) => self.report.chain(chain.clone()),
            Action::ReviewRound { pr, rounds } => self.report.review_round(*pr, *rounds),
            Action::ReportPr(pr) => self.report.pr(pr.clone())?,
            Action::Progress(message) => self.report.progress(message)?,
            Action::Stderr(line) => {
                writeln!(err, "{line}")?;
                err.flush()?;
            }
            Action::Barrier(path) => {
                err.flush()?;
                barrier::signal_ready(&self.path(path), self.env.pid)?;
                barrier::block_until_killed_or_interrupted()?;
                writeln!(err, "interrupted at the barrier: draining")?;
                err.flush()?;
            }
            Action::Hang => {
                err.flush()?;
                barrier::block_until_killed();
            }
        }
        Ok(())
    }
}

/// Runs `qmd` from PATH; the captured error when it fails.
fn qmd(call: &QmdCall, cwd: &Path) -> Result<(), ActError> {
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

fn load_request(env: &SkillEnv) -> Result<SkillRequest, String> {
    let path = env
        .request
        .as_ref()
        .ok_or("SDD_LOOP_REQUEST is not set; the engine sets it to the request file's path")?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the request {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "the request {} is not a valid skill request: {e}",
            path.display()
        )
    })
}

fn counter_path(env: &SkillEnv, script: &Path) -> PathBuf {
    env.counter.clone().unwrap_or_else(|| {
        let mut name = script.as_os_str().to_owned();
        name.push(".count");
        PathBuf::from(name)
    })
}

/// One invocation; the exit status. Does not return after `barrier` or
/// `hang`.
pub fn run(env: &SkillEnv, err: &mut dyn Write) -> u8 {
    let request = match load_request(env) {
        Ok(r) => r,
        Err(e) => {
            diag(err, &format!("error: {e}"));
            return exit::BAD_REQUEST;
        }
    };
    let Some(result_path) = env.result.clone() else {
        diag(
            err,
            "error: SDD_LOOP_RESULT is not set; the engine sets it to where the result goes",
        );
        return exit::BAD_REQUEST;
    };
    let Some(script_path) = env.script.clone() else {
        diag(
            err,
            "error: FAKE_SKILL_SCRIPT is not set\nhelp: point it at a fake-skill script (format: fixtures/README.md)",
        );
        return exit::BAD_SCRIPT;
    };
    let script = match Script::load(&script_path) {
        Ok(s) => s,
        Err(e) => {
            diag(err, &e.render());
            return exit::BAD_SCRIPT;
        }
    };
    let counter = counter_path(env, &script_path);
    let chosen = match script.choose(request.iteration, || counter::advance(&counter)) {
        Ok(Some(chosen)) => chosen,
        Ok(None) => {
            diag(
                err,
                &format!(
                    "error: {} has no tick for iteration {} and no `default`\nhelp: add a tick (or `default:`); the invocation counter is {}",
                    script_path.display(),
                    request.iteration,
                    counter.display()
                ),
            );
            return exit::BAD_SCRIPT;
        }
        Err(e) => {
            diag(
                err,
                &format!("error: invocation counter {}: {e}", counter.display()),
            );
            return exit::IO;
        }
    };
    let tick: &Tick = chosen.tick();
    if matches!(chosen, Chosen::Default(_)) && !script.ticks.is_empty() {
        diag(
            err,
            &format!(
                "no tick left for iteration {}; running `default`",
                request.iteration
            ),
        );
    }
    let report = match Report::new(env.events.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            diag(err, &format!("error: cannot open the events stream: {e}"));
            return exit::IO;
        }
    };
    let mut ctx = Ctx {
        env,
        request,
        report,
        git: Git::default(),
        tracker: None,
    };
    let mut code = u8::try_from(tick.exit.value).unwrap_or(u8::MAX);
    for action in &tick.actions {
        match ctx.act(action, err) {
            Ok(()) => {}
            Err(ActError::Qmd(captured)) => {
                let _ = writeln!(err, "{QMD_SENTINEL}: {captured}");
                code = u8::try_from(EX_QMD_UNREACHABLE).unwrap_or(78);
                break;
            }
            Err(e) => {
                let status = match e {
                    ActError::Tracker(_) => exit::TRACKER,
                    ActError::Git(_) => exit::GIT,
                    ActError::Io(_) | ActError::Qmd(_) => exit::IO,
                };
                diag(err, &format!("error: {action:?} failed: {e}"));
                return status;
            }
        }
    }
    let result = ctx.report.result(tick.summary.as_deref());
    if let Err(e) = report::write_result(&result_path, tick.result, &result) {
        diag(
            err,
            &format!(
                "error: cannot write the result {}: {e}",
                result_path.display()
            ),
        );
        return exit::IO;
    }
    let _ = err.flush();
    code
}
