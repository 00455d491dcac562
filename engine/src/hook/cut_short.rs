//! `sdd-loop hook stop-failure` (`StopFailure`) and `sdd-loop hook
//! session-end` (`SessionEnd`): a turn that ends without its Stop hook
//! ending the tick (issue 33). The iteration this session holds is ended
//! as any other — `end` with the hook input's exact `transcript_path`
//! (the spend so far counted whole), the PRs from the world — and is
//! never left open:
//!
//! - **`StopFailure`**: the turn ended on a model-API error. The
//!   iteration is recorded `errored` with `turn_ended_by` the error's kind
//!   as Claude Code names it (`rate_limit`, `overloaded`, `server_error`,
//!   `authentication_failed`, …) and its `error_details` as the error. It
//!   fails none of its targets: a rate limit or an overloaded API is not a
//!   failure of the work, so it never feeds the repeated-failure gate. The
//!   next loop prompt begins the next iteration as usual.
//! - **`SessionEnd`**: the session ends (`clear`, `logout`,
//!   `prompt_input_exit`, …) with an iteration still open. A turn whose
//!   Stop hook ran but could not end it (`stopped`) finished: it is ended
//!   as the Stop hook would have. A turn cut short by a model-API error
//!   — its StopFailure hook's `end` failed or never ran (`claude -p` may
//!   exit first), the error kept in the session record or, failing that,
//!   Claude Code's own error entry last in the transcript — is ended with
//!   that cause. Any other was still running: `errored`, `turn_ended_by:
//!   session_end`, no target failed.
//!
//! Claude Code reads no answer from either event: the hook prints nothing.
//! The cause is written to the session record before `end` runs: `claude
//! -p` exits right after a failed turn and may stop the hook mid-way
//! (measured with 2.1.328), and the session's end then records the
//! iteration with that cause. When `end` fails, the iteration stays open as
//! after a Stop hook that could not end it (the session's end tries again,
//! then the session's next loop prompt, or `begin` recovers it as
//! interrupted once the session is gone).
//! No iteration held by this session: nothing is run or written.

use std::path::Path;

use super::answer::Answer;
use super::input::{Common, SessionEndInput, StopFailureInput};
use super::log::{self, Entry};
use super::seams::{Hook, both};
use super::state::Session;
use super::stop::{self, Held};
use crate::exit;
use crate::os::clock;
use crate::state::journal::Journal;
use crate::state::paths::StatePaths;
use crate::tick::SESSION_END;

/// How the turn ended, for `end`: `--turn-ended-by` and `--error` (none:
/// it finished, and `end` records it as the Stop hook would).
struct Cause {
    turn_ended_by: Option<String>,
    error: String,
    summary: Option<String>,
}

/// A `StopFailure` error kind as `end --turn-ended-by` takes it.
fn kind(error: Option<&str>) -> String {
    error
        .filter(|e| {
            !e.is_empty()
                && e.len() <= 64
                && e.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .unwrap_or("unknown")
        .to_owned()
}

fn api_error(kind: &str, details: Option<&str>) -> String {
    let details = details
        .and_then(crate::agent::first_line)
        .map(|d| format!(": {d}"))
        .unwrap_or_default();
    format!("the turn ended on a model API error ({kind}{details}), not on a failure of the work")
}

/// The error's details for `end`: Claude Code's own, else — on a 429 —
/// the last message when it names a usage window's limit ("You've hit
/// your 5-hour limit · resets 7:31pm (UTC)", measured with 2.1.332: the
/// only word of it StopFailure carries), so `end` starts the wait for
/// that reset (docs/src/usage-windows.md).
fn limit_details(input: &StopFailureInput, now: jiff::Timestamp) -> Option<&str> {
    input
        .error_details
        .as_deref()
        .filter(|d| !d.trim().is_empty())
        .or_else(|| {
            input
                .last_assistant_message
                .as_deref()
                .filter(|m| crate::rules::windows::limit_in_text(m, now).is_some())
        })
}

pub fn stop_failure(hook: &mut Hook<'_>, bytes: &[u8]) -> Answer {
    let Ok(input) = StopFailureInput::parse(bytes) else {
        return Answer::Pass;
    };
    let kind = kind(input.error.as_deref());
    let error = api_error(&kind, limit_details(&input, hook.clock.now()));
    let summary = input
        .last_assistant_message
        .as_deref()
        .and_then(crate::agent::first_line);
    end_held(hook, &input.common, "stop-failure", |_| Cause {
        turn_ended_by: Some(kind.clone()),
        error: error.clone(),
        summary: summary.clone(),
    });
    Answer::Pass
}

pub fn session_end(hook: &mut Hook<'_>, bytes: &[u8]) -> Answer {
    let Ok(input) = SessionEndInput::parse(bytes) else {
        return Answer::Pass;
    };
    let reason = input.reason.as_deref().unwrap_or("other").to_owned();
    end_held(hook, &input.common, "session-end", |began| match began {
        Some(Session {
            cut_short: Some(kind),
            ..
        }) => Cause {
            turn_ended_by: Some(kind.clone()),
            error: api_error(kind, None),
            summary: None,
        },
        Some(Session { stopped: true, .. }) => Cause {
            turn_ended_by: None,
            error: String::new(),
            summary: Some(format!(
                "Ended at the session's end ({reason}): the stop did not end it"
            )),
        },
        _ => match transcript_api_error(input.common.transcript_path.as_deref()) {
            // `claude -p` may exit before its StopFailure hook ran.
            Some(kind) => Cause {
                error: api_error(&kind, None),
                turn_ended_by: Some(kind),
                summary: None,
            },
            None => Cause {
                turn_ended_by: Some(SESSION_END.to_owned()),
                error: format!("the session ended ({reason}) before its turn did"),
                summary: None,
            },
        },
    });
    Answer::Pass
}

/// The API error that ended the session's last turn, as its transcript
/// records it: the last assistant entry is Claude Code's own
/// (`isApiErrorMessage: true`) with the error's kind in `error` (measured
/// with 2.1.328: `"error": "rate_limit"`, `"apiErrorStatus": 429`).
fn transcript_api_error(transcript: Option<&Path>) -> Option<String> {
    let text = std::fs::read_to_string(transcript?).ok()?;
    let last = text.lines().rev().find_map(|line| {
        let entry: serde_json::Value = serde_json::from_str(line).ok()?;
        (entry["type"] == "assistant").then_some(entry)
    })?;
    (last["isApiErrorMessage"] == true).then(|| kind(last["error"].as_str()))
}

/// Ends every iteration this session holds, as `cause` says for the
/// session's record of it.
fn end_held(
    hook: &mut Hook<'_>,
    common: &Common,
    event: &str,
    cause: impl Fn(Option<&Session>) -> Cause,
) {
    let project = hook.project_for(&common.cwd);
    let Ok(pid) = hook.session.clone() else {
        return;
    };
    for paths in both(&project) {
        if !paths.dir.is_dir() {
            continue;
        }
        let journal = match Journal::load(&paths.inflight()) {
            Ok(Some(j)) if j.pid == pid => j,
            _ => continue,
        };
        let began = Session::began(&paths, &common.session_id, journal.iteration);
        let cause = cause(began.as_ref());
        if event == "stop-failure"
            && let Some(mut session) = began.clone()
        {
            // `claude -p` exits right after the failed turn and may stop
            // this hook before `end` is done (measured with 2.1.328): the
            // cause is kept first, for the session's end to record.
            session.cut_short = cause.turn_ended_by.clone();
            let _ = session.save(&paths, &log::redactor(&project, hook.vars));
        }
        let held = Held {
            iteration: journal.iteration,
            pid,
            prompt_id: began.as_ref().and_then(|s| s.prompt_id.clone()),
        };
        end_one(hook, &project, &paths, common, event, &held, began, cause);
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "one iteration's end: where, whose, which, and why"
)]
fn end_one(
    hook: &mut Hook<'_>,
    project: &Path,
    paths: &StatePaths,
    common: &Common,
    event: &str,
    held: &Held,
    began: Option<Session>,
    cause: Cause,
) {
    let skill = paths.skill;
    let mut extra = Vec::new();
    if let Some(by) = &cause.turn_ended_by {
        extra.extend(["--turn-ended-by".into(), by.clone()]);
        extra.extend(["--error".into(), cause.error.clone()]);
    }
    let ran = stop::end_with(
        hook,
        project,
        skill,
        held,
        common.transcript_path.as_deref(),
        cause.summary.clone(),
        &extra,
    );
    let n = held.iteration;
    let decision = match ran.code {
        exit::TICK_DONE | exit::LOOP_ENDED => "ended",
        exit::NOT_OPEN => "not-open",
        _ => "left-open",
    };
    let redactor = log::redactor(project, hook.vars);
    if decision == "left-open"
        && let Some(mut session) = began
    {
        // The turn is over with the iteration open: the session's next
        // loop prompt (or its end) ends it, from whichever process.
        session.stopped = true;
        if event == "stop-failure" {
            session.cut_short = cause.turn_ended_by.clone();
        }
        let _ = session.save(paths, &redactor);
    }
    let entry = Entry {
        at: clock::format(hook.clock.now()),
        event: event.into(),
        session_id: common.session_id.clone(),
        prompt_id: common.prompt_id.clone(),
        iteration: Some(n),
        decision: decision.into(),
        reason: match (&cause.turn_ended_by, decision) {
            // Why it stays open, and how it ends: no one else is told
            // (Claude Code reads no answer from these events).
            (Some(_), "left-open") => Some(format!(
                "{}; {}",
                cause.error,
                stop::left_open(skill, n, &ran)
            )),
            (None, "left-open") => Some(stop::left_open(skill, n, &ran)),
            (Some(_), _) => Some(cause.error.clone()),
            (None, _) => (ran.code != exit::TICK_DONE).then(|| ran.error_text()),
        },
        saw: vec![format!(
            "sdd-loop {skill} end --iteration {n}{} exited {}",
            cause
                .turn_ended_by
                .as_ref()
                .map(|by| format!(" --turn-ended-by {by}"))
                .unwrap_or_default(),
            ran.code
        )],
        input: None,
    };
    let _ = log::append(project, skill, &entry, &redactor);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_kind_is_taken_as_claude_code_names_it_or_unknown() {
        assert_eq!(kind(Some("rate_limit")), "rate_limit");
        assert_eq!(kind(Some("overloaded")), "overloaded");
        for odd in [None, Some(""), Some("Rate Limit"), Some("x;rm -rf")] {
            assert_eq!(kind(odd), "unknown", "{odd:?}");
        }
    }
}
