//! `sdd-loop hook user-prompt-submit` (`UserPromptSubmit`): a loop prompt
//! ([`super::prompt`]) begins a tick before the model sees it — `begin`
//! with the prompt's flags, this session as the lock holder — and the
//! outcome decides what the model gets:
//!
//! - **work**: the prompt goes on with the request as context: the work
//!   to do, the limits left, and that `end` runs by itself at the stop;
//! - **skip**, **stop**: the prompt is blocked with the reason (on a stop,
//!   the final report and how to end `/loop`); no request reaches the
//!   model, so a skipped or ended loop spends nothing — except a skip of
//!   a self-paced `/loop` (no interval: a `loop_wakeup` fire, or `/loop
//!   PROMPT` typed), which goes on to the model with only "nothing to do:
//!   re-arm the wakeup and end the turn" as context, since that loop
//!   fires again only when the model arms its next wakeup: blocked, it
//!   would end (`docs/src/claude-code.md`, "Self-paced `/loop`"). In that
//!   turn every PR, merge, review and push is refused. A session told its
//!   run has ended is refused the same way on every later fire (a `/loop`
//!   cron job fires until deleted) without `begin`, so the history gains
//!   no line per fire; `--resume` or `--fresh` runs `begin` again;
//! - **ask**: the prompt is blocked with the gate's exact question; the
//!   session's next prompt answers it (one of the options, `GATE=OPTION`,
//!   or the loop prompt again with `--answer GATE=OPTION`);
//! - an error of `begin`: the prompt is blocked with `error:` and `help:`.
//!
//! Before `begin`, an iteration this session still holds (its stop hook
//! could not end it) is ended, and the prompt is blocked if that fails.
//! The session holds it from this process, or from an earlier one that is
//! gone (`claude -p --continue` runs each prompt in a new process under
//! the same `session_id`): then its last loop prompt, recorded in the
//! session's own record (`{skill}.sessions/`, no other session writes
//! it), began that iteration, and its Stop hook ran and left it open
//! (`stopped`) — a session killed mid-turn ran no Stop hook, and its
//! iteration is recovered as interrupted by `begin`. `end` counts the
//! responses of that prompt (`--prompt-id`).
//! Any other prompt passes untouched: nothing is printed or written.

use super::answer::Answer;
use super::input::PromptInput;
use super::log::{self, Entry};
use super::prompt::{self, LoopPrompt};
use super::seams::{Hook, both};
use super::state::{Ended, Pending, Session};
use super::stop;
use crate::agent::prompt::Template;
use crate::exit;
use crate::os::clock;
use crate::os::liveness::{self, OsProbe};
use crate::rules::redact::Redactor;
use crate::state::budget::Budget;
use crate::state::files;
use crate::state::journal::Journal;
use crate::state::paths::{Skill, StatePaths};
use crate::state::protocol::SkillRequest;

/// The answer a pending question gets from `text`, if `text` is one:
/// an option (`proceed`), `GATE=OPTION`, or for a raise its values
/// (`raise max_iterations=10`).
fn answers(pending: &Pending, text: &str) -> Option<String> {
    let text = text.trim();
    let text = text
        .strip_prefix(&format!("{}=", pending.gate))
        .unwrap_or(text)
        .trim();
    let first = text.split_whitespace().next()?.to_ascii_lowercase();
    pending
        .options
        .iter()
        .find(|o| o.eq_ignore_ascii_case(&first))
        .map(|o| {
            let rest = text[first.len()..].trim();
            if rest.is_empty() {
                o.clone()
            } else {
                format!("{o} {rest}")
            }
        })
}

/// A gate question of this session that `prompt` answers: the loop
/// prompt to run again, with the answer among its flags.
fn pending_answer(
    project: &std::path::Path,
    session_id: &str,
    prompt: &str,
) -> Option<(LoopPrompt, String)> {
    for paths in both(project) {
        let Ok(Some(record)) = Session::load(&paths, session_id) else {
            continue;
        };
        let Some(pending) = record.pending else {
            continue;
        };
        let answer = answers(&pending, prompt)?;
        let mut flags = pending.flags.clone();
        flags.push("--answer".into());
        flags.push(format!("{}={answer}", pending.gate));
        return Some((
            LoopPrompt {
                skill: paths.skill,
                name: pending.name.clone(),
                flags,
                via_loop: None,
            },
            format!("{}={answer}", pending.gate),
        ));
    }
    None
}

/// Forgets this session's pending questions (its next prompt was no
/// answer).
fn forget_pending(project: &std::path::Path, session_id: &str, redactor: &Redactor) {
    for paths in both(project) {
        if let Ok(Some(mut record)) = Session::load(&paths, session_id)
            && record.pending.is_some()
        {
            record.pending = None;
            let _ = record.save(&paths, redactor);
        }
    }
}

pub fn run(hook: &mut Hook<'_>, bytes: &[u8]) -> Answer {
    let input = match PromptInput::parse(bytes) {
        Ok(input) => input,
        Err(e) => {
            // A loop prompt in input this hook cannot read (no session id,
            // a field of another type) is blocked saying so; any other
            // prompt passes, as a refusal here would block every prompt.
            let loop_prompt = serde_json::from_slice::<serde_json::Value>(bytes)
                .ok()
                .and_then(|v| v["prompt"].as_str().and_then(prompt::recognise));
            return match loop_prompt {
                Some(_) => Answer::BlockPrompt(format!(
                    "sdd-loop cannot read this prompt's hook input ({e}), so it cannot begin the loop's tick: the prompt was not sent to the model. Claude Code writes every field it needs; a wrapper that rewrites hook input must keep `session_id`, `cwd` and `prompt`."
                )),
                None => Answer::Pass,
            };
        }
    };
    if !input.speaks_for_the_user() {
        return Answer::Pass;
    }
    let project = hook.project_for(&input.common.cwd);
    let session_id = input.common.session_id.clone();
    let (tick, answered) = match prompt::recognise(&input.prompt) {
        Some(p) => (p, None),
        None => {
            if !project.join(".sdd").join("loop").is_dir() {
                return Answer::Pass;
            }
            match pending_answer(&project, &session_id, &input.prompt) {
                Some((p, a)) => (p, Some(a)),
                None => {
                    let redactor = log::redactor(&project, hook.vars);
                    forget_pending(&project, &session_id, &redactor);
                    return Answer::Pass;
                }
            }
        }
    };
    let redactor = log::redactor(&project, hook.vars);
    let paths = StatePaths::new(&project, tick.skill, None);
    let mut saw = vec![format!(
        "{} {}{}",
        tick.name,
        tick.flags.join(" "),
        answered
            .as_ref()
            .map(|a| format!(" (the prompt answers {a})"))
            .unwrap_or_default()
    )];
    let answer = decide(hook, &input, &tick, &paths, &redactor, &mut saw);
    let entry = Entry {
        at: clock::format(hook.clock.now()),
        event: "user-prompt-submit".into(),
        session_id,
        prompt_id: input.common.prompt_id.clone(),
        iteration: Session::load(&paths, &input.common.session_id)
            .ok()
            .flatten()
            .filter(|s| s.prompt_id == input.common.prompt_id && s.prompt_id.is_some())
            .and_then(|s| s.iteration),
        decision: answer.decision().into(),
        reason: answer.text().map(log::quote),
        saw,
        input: Some(log::quote(&input.prompt)),
    };
    if files::ensure_state_dir(&paths.dir).is_ok() {
        let _ = log::append(&project, tick.skill, &entry, &redactor);
    }
    answer
}

fn decide(
    hook: &mut Hook<'_>,
    input: &PromptInput,
    tick: &LoopPrompt,
    paths: &StatePaths,
    redactor: &Redactor,
    saw: &mut Vec<String>,
) -> Answer {
    let skill = tick.skill;
    let project = hook.project_for(&input.common.cwd);
    let pid = match hook.session.clone() {
        Ok(pid) => pid,
        Err(why) => {
            return Answer::BlockPrompt(format!(
                "sdd-loop cannot tell which process is this session ({why}), so it cannot hold the loop's lock for it: the prompt was not sent to the model."
            ));
        }
    };
    let held = match held_here(paths, input, pid) {
        Ok(held) => held,
        Err(e) => {
            return Answer::BlockPrompt(format!(
                "sdd-loop cannot read the {skill} loop's state: {e}. The prompt was not sent to the model."
            ));
        }
    };
    if let Some(held) = held
        && let Err(refused) = end_left_open(hook, &project, skill, &held, input, saw)
    {
        return refused;
    }
    if let Some(refused) = ended_again(tick, paths, &input.common.session_id, saw) {
        return refused;
    }
    let args = begin_args(tick, pid);
    let ran = hook.engine.run(&project, &args);
    saw.push(format!("sdd-loop {} exited {}", args.join(" "), ran.code));
    let summary = ran.summary();
    let record = |iteration: Option<u64>, pending: Option<Pending>| Session {
        session_id: input.common.session_id.clone(),
        prompt_id: input.common.prompt_id.clone(),
        iteration,
        pending,
        stopped: false,
        cut_short: None,
        ended: None,
        skipped: false,
    };
    match ran.code {
        exit::TICK_DONE => {
            let iteration = summary["iteration"].as_u64();
            let _ = record(iteration, None).save(paths, redactor);
            match serde_json::from_value::<SkillRequest>(summary["request"].clone()) {
                Ok(request) => Answer::Context(context(tick, &request, &summary)),
                Err(e) => Answer::BlockPrompt(format!(
                    "sdd-loop began iteration {} but its request cannot be read ({e}); the iteration stays open and the next loop prompt ends it.",
                    iteration.unwrap_or(0)
                )),
            }
        }
        exit::NOTHING_TO_DO => {
            let reason = summary["reason"].as_str().unwrap_or("nothing to do");
            let notes = notes(&summary);
            if self_paced(input, tick) {
                saw.push("a self-paced /loop: the skip goes on to re-arm its wakeup".into());
                let _ = Session {
                    skipped: true,
                    ..record(None, None)
                }
                .save(paths, redactor);
                return Answer::Context(rearm_only(tick, reason, &notes));
            }
            let _ = record(None, None).save(paths, redactor);
            // A gate posted on the tracker: the tick waits and records
            // nothing (docs/src/gates-away.md).
            let recorded = if summary.get("waiting_for_person").is_some() {
                "Nothing is recorded until a person answers"
            } else {
                "The tick is recorded"
            };
            Answer::BlockPrompt(format!(
                "sdd-loop: nothing to do this tick of the {skill} loop — {reason}. {recorded}; the model was not called.{notes}"
            ))
        }
        exit::LOOP_ENDED => {
            let cause = summary["stop_cause"].as_str().unwrap_or("a stop condition");
            let report = ran.stderr.trim().to_owned();
            let ended = ended_run(paths, &report);
            let _ = Session {
                ended,
                ..record(None, None)
            }
            .save(paths, redactor);
            Answer::BlockPrompt(format!(
                "sdd-loop: the {skill} loop has ended ({cause}); the model was not called.\n\n{report}\n\n{TO_END_LOOP}",
            ))
        }
        exit::NEEDS_ANSWER => {
            let (pending, answer) = ask(tick, &summary);
            let _ = record(None, Some(pending)).save(paths, redactor);
            answer
        }
        _ => Answer::BlockPrompt(format!(
            "sdd-loop {skill} begin failed, so this tick did not start: {} The prompt was not sent to the model.",
            ran.error_text()
        )),
    }
}

/// Whether `input` is a fire of a self-paced `/loop` (no interval): a
/// wakeup (`source: "loop_wakeup"`), or `/loop PROMPT` with no interval
/// as the user typed it (or as a release that sends no `source`
/// re-submits it). Such a loop fires again only when the model arms its
/// next wakeup in the turn, so a blocked prompt would end it; a cron
/// `/loop` (an interval: `source: "schedule_wakeup"`) fires again by
/// itself.
fn self_paced(input: &PromptInput, tick: &LoopPrompt) -> bool {
    match input.source.as_deref() {
        Some("loop_wakeup") => true,
        None | Some("user") => tick.via_loop == Some(None),
        Some(_) => false,
    }
}

/// What the model is told when a self-paced `/loop`'s tick is skipped:
/// the skip, and only to re-arm the wakeup and end the turn.
fn rearm_only(tick: &LoopPrompt, reason: &str, notes: &str) -> String {
    let skill = tick.skill;
    format!(
        "[sdd-loop] Nothing to do this tick of the {skill} loop — {reason}. The tick is recorded as skipped and no iteration is open: there is no work in this turn. This /loop is self-paced, so it fires again only if you arm its next wakeup: re-arm it now as /loop says (ScheduleWakeup with the same prompt), then end the turn. Do nothing else: do not run {} (no iteration is open for it), and open, merge or review no PR and push nothing — the hooks refuse those in this turn. The next fire tries the tick again.{notes}",
        tick.name
    )
}

/// How `/loop` ends once the engine has ended the run it drives.
const TO_END_LOOP: &str = "To end /loop, cancel its schedule (ask to stop the loop, or delete its cron job); until then each firing is refused here and spends nothing. To go on, send the loop prompt with --resume (the same budgets, every condition checked afresh) or --fresh (new budgets).";

/// The run budget.json says has ended, as `report` told this session.
fn ended_run(paths: &StatePaths, report: &str) -> Option<Ended> {
    let budget = Budget::load(paths.budget()).ok().flatten()?;
    let stopped = budget.stopped?;
    Some(Ended {
        started_at: budget.started_at,
        cause: stopped.cause,
        iteration: stopped.iteration,
        report: report.to_owned(),
    })
}

/// A loop prompt (not `--resume`, not `--fresh`) for the run this
/// session was already told has ended, still ended: refused with the same
/// final report, without `begin` — which would append another halted
/// history line on every fire of a `/loop` cron job.
fn ended_again(
    tick: &LoopPrompt,
    paths: &StatePaths,
    session_id: &str,
    saw: &mut Vec<String>,
) -> Option<Answer> {
    if tick.flags.iter().any(|f| f == "--resume" || f == "--fresh") {
        return None;
    }
    let told = Session::load(paths, session_id).ok().flatten()?.ended?;
    let now = ended_run(paths, &told.report)?;
    if now != told {
        return None;
    }
    saw.push(format!(
        "the run this session was told had ended ({}, iteration {}) still is: begin not run",
        told.cause, told.iteration
    ));
    Some(Answer::BlockPrompt(format!(
        "sdd-loop: the {} loop has ended ({}); this fire records nothing, and the model was not called.\n\n{}\n\n{TO_END_LOOP}",
        tick.skill, told.cause, told.report
    )))
}

/// An iteration this session still holds: its stop did not end it. The
/// session is this process, or this session's earlier process (`claude
/// -p --continue` runs each prompt in a new one, under the same session
/// id), gone now after its Stop hook left the iteration open.
fn held_here(
    paths: &StatePaths,
    input: &PromptInput,
    pid: u32,
) -> Result<Option<stop::Held>, crate::state::journal::JournalError> {
    let Some(j) = Journal::load(&paths.inflight())? else {
        return Ok(None);
    };
    let began = Session::began(paths, &input.common.session_id, j.iteration);
    // Its Stop hook ran and left the iteration open: not killed.
    let ours = j.pid == pid
        || (began.as_ref().is_some_and(|s| s.stopped)
            && liveness::check(&OsProbe, j.pid, j.process_start).is_dead());
    Ok(ours.then_some(stop::Held {
        iteration: j.iteration,
        pid: j.pid,
        prompt_id: began.and_then(|s| s.prompt_id),
    }))
}

/// Ends the iteration this session left open; the refusal when that
/// fails.
fn end_left_open(
    hook: &mut Hook<'_>,
    project: &std::path::Path,
    skill: Skill,
    held: &stop::Held,
    input: &PromptInput,
    saw: &mut Vec<String>,
) -> Result<(), Answer> {
    let n = held.iteration;
    let ran = stop::end(
        hook,
        project,
        skill,
        held,
        input.common.transcript_path.as_deref(),
        Some("Ended at the next loop prompt: the stop did not end it".into()),
    );
    saw.push(format!(
        "iteration {n} was still open in this session: sdd-loop {skill} end exited {}",
        ran.code
    ));
    if !matches!(
        ran.code,
        exit::TICK_DONE | exit::LOOP_ENDED | exit::NOT_OPEN
    ) {
        return Err(Answer::BlockPrompt(format!(
            "sdd-loop could not end iteration {n} of the {skill} loop, which this session left open: {} The prompt was not sent to the model; send it again once that is fixed, or end the iteration by hand: `sdd-loop {skill} end --iteration {n}` in the project (with `--usage MODEL:IN:OUT` for its spend, when the transcript cannot give it).",
            ran.error_text()
        )));
    }
    Ok(())
}

/// `sdd-loop SKILL begin` with the loop prompt's flags, held for the
/// session's process unless they name one, answering in JSON.
fn begin_args(tick: &LoopPrompt, pid: u32) -> Vec<String> {
    let mut args: Vec<String> = vec![tick.skill.to_string(), "begin".into()];
    args.extend(tick.flags.iter().filter(|f| *f != "--json").cloned());
    if !tick.flags.iter().any(|f| f.starts_with("--holder-pid")) {
        args.push("--holder-pid".into());
        args.push(pid.to_string());
    }
    args.push("--json".into());
    args
}

/// A gate needs the user's answer: the question kept for the next
/// prompt, and the refusal that asks it.
fn ask(tick: &LoopPrompt, summary: &serde_json::Value) -> (Pending, Answer) {
    let skill = tick.skill;
    let gate = summary["gate"].as_str().unwrap_or("").to_owned();
    let question = summary["question"].as_str().unwrap_or("").to_owned();
    let options: Vec<String> = summary["options"]
        .as_array()
        .map(|o| {
            o.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let flags: Vec<String> = tick
        .flags
        .iter()
        .filter(|f| *f != "--json")
        .cloned()
        .collect();
    let raise = if gate == "budget-escalation" {
        " (a raise names its ceilings: `raise max_iterations=10`)"
    } else {
        ""
    };
    let answer = Answer::BlockPrompt(format!(
        "sdd-loop: the {skill} loop needs your answer before this tick can run (gate {gate}):\n\n  {question}\n\nAnswer with your next prompt: one of {}{raise} — or send the loop prompt again with `--answer {gate}=<option>` (`{} {} --answer {gate}={}`). Nothing was changed, and the model was not called.",
        options
            .iter()
            .map(|o| format!("`{o}`"))
            .collect::<Vec<_>>()
            .join(", "),
        tick.name,
        flags.join(" "),
        options.first().map_or("<option>", String::as_str),
    ));
    let pending = Pending {
        gate,
        question,
        options,
        name: tick.name.clone(),
        flags,
    };
    (pending, answer)
}

fn notes(summary: &serde_json::Value) -> String {
    let notes: Vec<&str> = summary["notes"]
        .as_array()
        .map(|n| n.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    if notes.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", notes.join("\n"))
    }
}

/// What the model is told with a work prompt: that the tick began, the
/// request in the words the agent adapters use, and what the hooks do.
fn context(tick: &LoopPrompt, request: &SkillRequest, summary: &serde_json::Value) -> String {
    let skill = tick.skill;
    let request_file = summary["request_file"]
        .as_str()
        .map(std::path::PathBuf::from)
        .unwrap_or_default();
    let body = Template::built_in(skill).render(request, &request_file);
    let limit = match request.max_new_prs {
        Some(n) => format!("at most {n} new pull request(s)"),
        None => "no limit on new pull requests".to_owned(),
    };
    let refused = match skill {
        Skill::Work => format!(
            "a PR beyond {limit}, a PR whose body does not say `Closes #N` for an issue above, any merge, a second review of one PR"
        ),
        Skill::Review => format!(
            "{limit}, a merge not allowed above (or held by the post-feedback-merge gate), a review of a PR not listed, a second review round on one PR (ADR-0010)"
        ),
    };
    format!(
        "[sdd-loop] The sdd-loop plugin's hook ran `sdd-loop {skill} begin` for this prompt ({}): iteration {} of the {skill} loop is open, held by this session. Do not run `sdd-loop {skill} begin` or `sdd-loop {skill} end` yourself: `end` runs when you stop — it finds your PRs on the tracker and your spend in this session's transcript. The engine owns `.sdd/loop/` and does the bookkeeping the sdd skill's loop section describes — it holds the lock, keeps the budget and appends this tick's telemetry line to the history — so skip those steps: write no lockfile, edit no budget, append no history line (the hooks refuse writes, moves and deletions there; reading is fine). The hooks refuse {refused}.\n\n{body}",
        tick.name, request.iteration,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(gate: &str, options: &[&str]) -> Pending {
        Pending {
            gate: gate.into(),
            question: "?".into(),
            options: options.iter().map(|o| (*o).to_owned()).collect(),
            name: "/sdd:work".into(),
            flags: vec!["--loop".into()],
        }
    }

    #[test]
    fn an_option_answers_in_any_of_its_spellings() {
        let p = pending(
            "ambiguous-criteria",
            &["skip", "escalate", "proceed", "stop"],
        );
        assert_eq!(answers(&p, "proceed"), Some("proceed".into()));
        assert_eq!(answers(&p, "  Proceed\n"), Some("proceed".into()));
        assert_eq!(answers(&p, "ambiguous-criteria=skip"), Some("skip".into()));
        assert_eq!(answers(&p, "please proceed"), None);
        assert_eq!(answers(&p, "hello"), None);
        let p = pending("budget-escalation", &["continue", "raise", "stop"]);
        assert_eq!(
            answers(&p, "raise max_iterations=10"),
            Some("raise max_iterations=10".into())
        );
    }
}
