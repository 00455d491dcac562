//! `sdd-loop hook stop` (`Stop`): the session's turn is over, so its
//! tick is — the hook runs `end` for the iteration this session holds,
//! with the spend from the hook input's exact `transcript_path`, the PRs
//! from the tracker and the remote (`end` compares the world with the
//! snapshot `begin` kept), and the summary from `last_assistant_message`.
//!
//! - No iteration held by this session (none open, ended already by an
//!   explicit `end`, or another session's): nothing is printed.
//! - `end` fails on something that passes (the tracker or git
//!   unavailable, state not writable): the stop is blocked once with the
//!   reason, so the model can retry by stopping again; never when
//!   `stop_hook_active` says this turn was blocked already. The iteration
//!   then stays open, and the session's next loop prompt ends it first.
//! - `end` fails otherwise (the session's transcript is missing, a result
//!   cannot be read): blocking would not help, so the user is told
//!   (`systemMessage`) why the iteration is still open and how to end it
//!   — `end --iteration N` by hand, else the next loop prompt retries it
//!   and shows the error if it fails again.
//! - The loop ended: the user is told so.

use std::path::Path;

use super::answer::Answer;
use super::input::StopInput;
use super::log::{self, Entry};
use super::seams::{Hook, Ran, both};
use super::state::Session;
use crate::exit;
use crate::os::clock;
use crate::state::journal::Journal;
use crate::state::paths::Skill;

/// The first line of the model's last message, as the status block's
/// summary.
fn summary(message: Option<&str>) -> Option<String> {
    message.and_then(crate::agent::first_line)
}

/// The iteration `end` ends: its number, its holder and the `prompt_id`
/// of the loop prompt that began it, when the hooks recorded it.
pub(crate) struct Held {
    pub iteration: u64,
    pub pid: u32,
    pub prompt_id: Option<String>,
}

/// Runs `sdd-loop SKILL end` for `held`.
pub(crate) fn end(
    hook: &mut Hook<'_>,
    project: &Path,
    skill: Skill,
    held: &Held,
    transcript: Option<&Path>,
    summary: Option<String>,
) -> Ran {
    end_with(hook, project, skill, held, transcript, summary, &[])
}

/// [`end`] with more of `end`'s flags (`--turn-ended-by`, `--error`).
pub(crate) fn end_with(
    hook: &mut Hook<'_>,
    project: &Path,
    skill: Skill,
    held: &Held,
    transcript: Option<&Path>,
    summary: Option<String>,
    extra: &[String],
) -> Ran {
    let Held {
        iteration,
        pid,
        prompt_id,
    } = held;
    let mut args: Vec<String> = vec![
        skill.to_string(),
        "end".into(),
        "--iteration".into(),
        iteration.to_string(),
        "--holder-pid".into(),
        pid.to_string(),
        "--json".into(),
    ];
    if let Some(t) = transcript {
        args.push("--transcript".into());
        args.push(t.display().to_string());
        if let Some(p) = prompt_id {
            args.push("--prompt-id".into());
            args.push(p.clone());
        }
    }
    if let Some(s) = summary {
        args.push("--summary".into());
        args.push(s);
    }
    args.extend(extra.iter().cloned());
    hook.engine.run(project, &args)
}

/// What the user is told when `end` failed on something that trying
/// again will not mend (the session's transcript missing, a result that
/// cannot be read): what went wrong, that the iteration stays open, and
/// how it ends.
pub(crate) fn left_open(skill: Skill, n: u64, ran: &Ran) -> String {
    format!(
        "sdd-loop could not end iteration {n} of the {skill} loop: {} Nothing was recorded and the iteration is still open. {}",
        ran.error_text(),
        to_end_it(skill, n)
    )
}

/// How an iteration whose `end` keeps failing is ended after all.
pub(crate) fn to_end_it(skill: Skill, n: u64) -> String {
    format!(
        "To end it now, run `sdd-loop {skill} end --iteration {n}` in the project (with `--usage MODEL:IN:OUT` for the spend, which then is not read from the transcript); otherwise this session's next loop prompt tries `end` again before anything else, and once the session is gone the next tick records the iteration as interrupted."
    )
}

/// Whether a failed `end` may pass if tried again.
pub(crate) fn transient(code: u8) -> bool {
    code == exit::UNAVAILABLE || code == exit::CANT_WRITE || code == exit::RATE_LIMITED
}

pub fn run(hook: &mut Hook<'_>, bytes: &[u8]) -> Answer {
    let Ok(input) = StopInput::parse(bytes) else {
        return Answer::Pass;
    };
    let project = hook.project_for(&input.common.cwd);
    let Ok(pid) = hook.session.clone() else {
        return Answer::Pass;
    };
    let mut answer = Answer::Pass;
    let mut redactor = None;
    for paths in both(&project) {
        if !paths.dir.is_dir() {
            continue;
        }
        let journal = match Journal::load(&paths.inflight()) {
            Ok(Some(j)) if j.pid == pid => j,
            _ => continue,
        };
        let skill = paths.skill;
        let summary = summary(input.last_assistant_message.as_deref());
        let began = Session::began(&paths, &input.common.session_id, journal.iteration);
        let held = Held {
            iteration: journal.iteration,
            pid,
            prompt_id: began.as_ref().and_then(|s| s.prompt_id.clone()),
        };
        // The response that ended the turn: `end` waits until the
        // transcript holds it (Claude Code may write it late).
        let last: Vec<String> = match (
            &input.common.transcript_path,
            input.last_assistant_message.as_deref(),
        ) {
            (Some(_), Some(m)) if !m.trim().is_empty() => {
                vec!["--last-message".into(), m.to_owned()]
            }
            _ => Vec::new(),
        };
        let ran = end_with(
            hook,
            &project,
            skill,
            &held,
            input.common.transcript_path.as_deref(),
            summary.clone(),
            &last,
        );
        let n = journal.iteration;
        let (decision, this) = match ran.code {
            exit::TICK_DONE => ("ended", Answer::Pass),
            exit::LOOP_ENDED => {
                let cause = ran.summary()["stop_cause"]
                    .as_str()
                    .unwrap_or("a stop condition")
                    .to_owned();
                (
                    "ended",
                    Answer::Tell(format!(
                        "sdd-loop: iteration {n} is recorded and the {skill} loop has ended ({cause}); further loop prompts are refused without calling the model."
                    )),
                )
            }
            exit::NOT_OPEN => ("not-open", Answer::Pass),
            code if transient(code) && !input.stop_hook_active => (
                "block",
                Answer::BlockStop(format!(
                    "sdd-loop could not end iteration {n} of the {skill} loop: {} Nothing was recorded and the iteration is still open. Stop again to retry `end` once; if it fails again, the next loop prompt retries it before anything else.",
                    ran.error_text()
                )),
            ),
            // The block of the first stop said what happens next.
            code if transient(code) => ("left-open", Answer::Pass),
            _ => ("left-open", Answer::Tell(left_open(skill, n, &ran))),
        };
        let redactor = redactor.get_or_insert_with(|| log::redactor(&project, hook.vars));
        if decision == "left-open"
            && let Some(mut session) = began
        {
            // The turn ended with the iteration open (a blocked stop goes
            // on with the turn): the session's next loop prompt ends it,
            // from whichever process it runs in.
            session.stopped = true;
            let _ = session.save(&paths, redactor);
        }
        let entry = Entry {
            at: clock::format(hook.clock.now()),
            event: "stop".into(),
            session_id: input.common.session_id.clone(),
            prompt_id: input.common.prompt_id.clone(),
            iteration: Some(n),
            decision: decision.into(),
            reason: this
                .text()
                .map(str::to_owned)
                .or_else(|| (ran.code != exit::TICK_DONE).then(|| ran.error_text())),
            saw: vec![format!(
                "sdd-loop {skill} end --iteration {n}{}{} exited {}",
                input
                    .common
                    .transcript_path
                    .as_ref()
                    .map(|t| format!(" --transcript {}", t.display()))
                    .unwrap_or_default(),
                summary
                    .as_ref()
                    .map(|s| format!(" --summary '{s}'"))
                    .unwrap_or_default(),
                ran.code
            )],
            input: None,
        };
        let _ = log::append(&project, skill, &entry, redactor);
        if answer == Answer::Pass {
            answer = this;
        }
    }
    answer
}
