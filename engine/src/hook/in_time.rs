//! A hook answers within Claude Code's time limit whatever the engine is
//! doing: [`within`] waits for the hook's own answer until
//! [`super::MARGIN_SECS`] before the limit, then gives the event's
//! [`fallback`] — a prompt blocked (the engine's state is unknown), a PR
//! or merge refused, a stop let through — and logs it ([`super::log`])
//! like every decision a hook takes: in the log of the loop a prompt
//! names, or of each loop whose open iteration this session holds (the
//! one a stop, a turn cut short or the session's end was ending, and has
//! perhaps left open). A stop that may leave it open says so to the user,
//! as a stop whose `end` failed does ([`super::stop`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::answer::Answer;
use super::input::HookEvent;
use super::log::{self, Entry};
use super::seams::{MARGIN_SECS, both};
use super::state::Session;
use super::{pre_tool, prompt, stop};
use crate::os::clock::{self, Clock};
use crate::state::journal::Journal;
use crate::state::paths::Skill;

/// What a hook answers when it runs out of time: a prompt is blocked (the
/// engine's state is unknown), a PR or merge is refused, a stop passes.
pub fn fallback(event: HookEvent, input: &[u8]) -> Answer {
    let limit = event.timeout_secs();
    match event {
        HookEvent::UserPromptSubmit => Answer::BlockPrompt(format!(
            "sdd-loop did not answer within {} s (the tracker may be slow or down): the prompt was not sent to the model. Check `sdd-loop status work` (or review) before the next loop prompt.",
            limit - MARGIN_SECS
        )),
        HookEvent::PreToolUse => pre_tool::fail_closed(input, "sdd-loop did not decide in time"),
        HookEvent::Stop | HookEvent::StopFailure | HookEvent::SessionEnd => Answer::Pass,
    }
}

/// What the hook knew before its work began: enough to answer and log
/// without it while it still runs.
pub struct Waiting<'a> {
    /// The environment (for redaction).
    pub vars: &'a BTreeMap<String, String>,
    /// `-C DIR` or `$CLAUDE_PROJECT_DIR`; else the input's `cwd`.
    pub project: Option<PathBuf>,
    /// The session process, or why it could not be found.
    pub session: Result<u32, String>,
    pub clock: &'a dyn Clock,
}

impl std::fmt::Debug for Waiting<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiting")
            .field("project", &self.project)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// One line of the log a fallback answer leaves.
struct Logged {
    skill: Skill,
    iteration: Option<u64>,
    decision: String,
    reason: String,
}

/// The hook's answer sent on `answered` within `limit`; else — past it,
/// or when the hook panicked and dropped its sender — the event's
/// [`fallback`], logged.
pub fn within(
    event: HookEvent,
    input: &[u8],
    answered: &mpsc::Receiver<Answer>,
    limit: Duration,
    waiting: &Waiting<'_>,
) -> Answer {
    let cut = match answered.recv_timeout(limit) {
        Ok(answer) => return answer,
        Err(mpsc::RecvTimeoutError::Timeout) => Cut::Late(limit),
        Err(mpsc::RecvTimeoutError::Disconnected) => Cut::Failed,
    };
    let mut answer = fallback(event, input);
    let value: Value = serde_json::from_slice(input).unwrap_or(Value::Null);
    let Some(project) = waiting
        .project
        .clone()
        .or_else(|| value["cwd"].as_str().map(PathBuf::from))
        .filter(|p| p.join(".sdd").join("loop").is_dir())
    else {
        // No loop here: nothing to log.
        return answer;
    };
    let session_id = value["session_id"].as_str().unwrap_or_default();
    let prompt = value["prompt"].as_str();
    let lines: Vec<Logged> = concerned(event, &project, session_id, prompt, waiting, &answer)
        .into_iter()
        .map(|(skill, iteration)| logged(event, skill, iteration, &answer, cut))
        .collect();
    if event == HookEvent::Stop
        && let Some(open) = lines.iter().find(|l| l.decision == "left-open")
    {
        answer = Answer::Tell(open.reason.clone());
    }
    let redactor = log::redactor(&project, waiting.vars);
    for line in lines {
        let entry = Entry {
            at: clock::format(waiting.clock.now()),
            event: event.command().into(),
            session_id: session_id.to_owned(),
            prompt_id: value["prompt_id"].as_str().map(str::to_owned),
            iteration: line.iteration,
            decision: line.decision,
            reason: Some(line.reason),
            saw: vec![match cut {
                Cut::Late(limit) => format!(
                    "no answer from the engine within {} s: the hook's fallback answer",
                    limit.as_secs()
                ),
                Cut::Failed => {
                    "the hook stopped on an internal error before it answered: its fallback answer"
                        .to_owned()
                }
            }],
            input: prompt.map(log::quote),
        };
        let _ = log::append(&project, line.skill, &entry, &redactor);
    }
    answer
}

/// Why the hook's own answer never came.
#[derive(Debug, Clone, Copy)]
enum Cut {
    /// Not within this limit.
    Late(Duration),
    /// The hook panicked (its sender dropped).
    Failed,
}

impl Cut {
    fn words(self) -> String {
        match self {
            Cut::Late(limit) => format!(
                "within {} s (the tracker may be slow or down)",
                limit.as_secs()
            ),
            Cut::Failed => "(the hook stopped on an internal error)".to_owned(),
        }
    }
}

/// What the fallback decided about `skill`'s loop, and why.
fn logged(
    event: HookEvent,
    skill: Skill,
    iteration: Option<u64>,
    answer: &Answer,
    cut: Cut,
) -> Logged {
    let ends = matches!(
        event,
        HookEvent::Stop | HookEvent::StopFailure | HookEvent::SessionEnd
    );
    match iteration.filter(|_| ends) {
        Some(n) => Logged {
            skill,
            iteration,
            decision: "left-open".into(),
            reason: format!(
                "sdd-loop did not end iteration {n} of the {skill} loop {}, so it may still be open. {}",
                cut.words(),
                stop::to_end_it(skill, n)
            ),
        },
        None => Logged {
            skill,
            iteration,
            decision: match (event, answer) {
                (HookEvent::PreToolUse, Answer::Pass) => "allow".into(),
                _ => answer.decision().into(),
            },
            reason: answer.text().map_or_else(
                || format!("sdd-loop did not answer {}", cut.words()),
                log::quote,
            ),
        },
    }
}

/// The loops a fallback answer concerns, with the iteration when one is
/// open: a loop prompt's own loop (another prompt: the loops whose gate
/// question it may answer); else each loop whose open iteration this
/// session holds — and for a refused tool call with none, the work loop,
/// where a decision the hook cannot make is logged ([`pre_tool`]).
fn concerned(
    event: HookEvent,
    project: &Path,
    session_id: &str,
    prompt: Option<&str>,
    waiting: &Waiting<'_>,
    answer: &Answer,
) -> Vec<(Skill, Option<u64>)> {
    if event == HookEvent::UserPromptSubmit {
        if let Some(tick) = prompt.and_then(prompt::recognise) {
            return vec![(tick.skill, None)];
        }
        return both(project)
            .iter()
            .filter(|paths| {
                Session::load(paths, session_id)
                    .ok()
                    .flatten()
                    .is_some_and(|s| s.pending.is_some())
            })
            .map(|paths| (paths.skill, None))
            .collect();
    }
    let held: Vec<(Skill, Option<u64>)> = both(project)
        .iter()
        .filter_map(
            |paths| match (Journal::load(&paths.inflight()), &waiting.session) {
                (Ok(Some(j)), Ok(pid)) if j.pid == *pid => Some((paths.skill, Some(j.iteration))),
                _ => None,
            },
        )
        .collect();
    if held.is_empty() && matches!(answer, Answer::Deny(_)) {
        return vec![(Skill::Work, None)];
    }
    held
}
