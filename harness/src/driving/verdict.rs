//! How a tick ended, as the case sees it, and whether that stops the
//! case: pure functions of what the engine left (its exit, its stderr,
//! whether the barrier was reached) and what the tick scripted. A tick
//! that ends in a way nobody scripted — an unexpected gate (exit 4), an
//! error exit, a signal, a barrier or crash point never reached, the
//! case's time limit — gets the message that stops the case ([`verdict`]).

use std::time::Duration;

use super::record::TickEnd;
use crate::loading::case::{AnswerSpec, Kill, TickSpec};
use crate::world::spawn::Ended;

/// How a process the tick ran ended, as the case sees it.
pub fn tick_end(ended: &Ended, kill: Option<&Kill>) -> TickEnd {
    match (ended, kill) {
        (Ended::Exited(code), _) => TickEnd::Exited(*code),
        (Ended::Signaled(signal), Some(Kill::CrashPoint(point))) => TickEnd::Crashed {
            point: point.value.clone(),
            signal: *signal,
        },
        (Ended::Signaled(signal), _) => TickEnd::Signaled(*signal),
        (Ended::KilledAtBarrier, _) => TickEnd::KilledAtBarrier,
        (Ended::TimedOut, _) => TickEnd::TimedOut,
    }
}

/// Why a tick of `spec` that ended as `end` stops the case, if it does;
/// `timeout` is the case's time limit.
pub fn verdict(
    spec: &TickSpec,
    timeout: Duration,
    end: &TickEnd,
    stderr: &str,
    barrier_missed: bool,
) -> Option<String> {
    let kill = spec.kill.as_ref().map(|k| &k.value);
    let expected_exit = spec.expect.exit.map(i32::from);
    match (end, kill) {
        (TickEnd::TimedOut, _) => Some(format!(
            "timed out: the case's time limit ({}) ran out during this tick, so the engine was killed; its stderr:\n  {}",
            humantime(timeout),
            error_lines(stderr)
        )),
        (_, Some(Kill::Barrier | Kill::Interrupt)) | (_, None)
            if barrier_missed && (kill.is_some() || !spec.at_barrier.is_empty()) =>
        {
            Some(format!(
                "the engine ended ({end}) before the fake skill reached its barrier; its stderr:\n  {}",
                error_lines(stderr)
            ))
        }
        (TickEnd::Exited(code), Some(Kill::CrashPoint(point))) => Some(format!(
            "the engine exited {code} without reaching crash point {}",
            point.value
        )),
        (TickEnd::Exited(4), _) if expected_exit != Some(4) => {
            Some(match unanswered_gate(stderr) {
                Some((gate, question)) => {
                    let scripted: Vec<&AnswerSpec> = spec
                        .answers
                        .iter()
                        .filter(|a| a.gate.value == gate)
                        .collect();
                    if scripted.is_empty() {
                        format!(
                            "unexpected gate {gate} asked {question:?} — answer it in this tick's `answers:` (e.g. `- {{ gate: {gate}, answer: ... }}`) or expect `exit: 4`"
                        )
                    } else {
                        format!(
                            "gate {gate} asked {question:?}, and none of this tick's {} `{gate}` answer(s) took it: {} — each entry answers one question (the first it fits, in order), `match:` is a text the question must contain and `iteration:` the iteration it must be; add an entry for this question or expect `exit: 4`",
                            scripted.len(),
                            scripted
                                .iter()
                                .map(|a| describe(a))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                }
                None => format!(
                    "the engine exited 4 (a gate needs an answer):\n  {}",
                    error_lines(stderr)
                ),
            })
        }
        (TickEnd::Exited(code), _) if *code != 0 && *code != 3 && expected_exit != Some(*code) => {
            Some(format!(
                "the engine exited {code}:\n  {}",
                error_lines(stderr)
            ))
        }
        (TickEnd::Signaled(signal), _) => Some(format!(
            "the engine was killed by signal {signal}:\n  {}",
            error_lines(stderr)
        )),
        _ => None,
    }
}

/// One scripted answer as the case wrote it.
fn describe(a: &AnswerSpec) -> String {
    let mut text = format!("`{}`", a.answer.value);
    if let Some(m) = &a.matches {
        text.push_str(&format!(" (match {m:?})"));
    }
    if let Some(i) = a.iteration {
        text.push_str(&format!(" (iteration {i})"));
    }
    text
}

/// `first`, and `then` after it when both stop the case.
pub fn and(first: Option<String>, then: Option<String>) -> Option<String> {
    match (first, then) {
        (Some(first), Some(then)) => Some(format!("{first}\n  and {then}")),
        (first, then) => first.or(then),
    }
}

/// The gate and question of the engine's exit-4 message.
pub fn unanswered_gate(stderr: &str) -> Option<(String, String)> {
    stderr.lines().find_map(|line| {
        let rest = line.strip_prefix("error: gate ")?;
        let (name, rest) = rest.split_once(" needs an answer and none could be had: ")?;
        let question = rest.strip_suffix(" — nothing was changed").unwrap_or(rest);
        Some((name.to_owned(), question.to_owned()))
    })
}

/// The engine's error lines, for a failure message.
fn error_lines(stderr: &str) -> String {
    let picked: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error:") || l.starts_with("help:"))
        .collect();
    let lines = if picked.is_empty() {
        let all: Vec<&str> = stderr.lines().collect();
        all[all.len().saturating_sub(10)..].to_vec()
    } else {
        picked
    };
    if lines.is_empty() {
        "(nothing on stderr)".to_owned()
    } else {
        lines.join("\n  ")
    }
}

fn humantime(d: Duration) -> String {
    let s = d.as_secs();
    if s.is_multiple_of(60) && s > 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unanswered_gate_is_read_from_the_engines_message() {
        let stderr = "warning: x\nerror: gate budget-escalation needs an answer and none could be had: Approaching PRs (1/1). Continue, raise ceiling, or stop? — nothing was changed\nhelp: answer it with --answer budget-escalation=<continue|raise|stop>\n";
        assert_eq!(
            unanswered_gate(stderr),
            Some((
                "budget-escalation".to_owned(),
                "Approaching PRs (1/1). Continue, raise ceiling, or stop?".to_owned()
            ))
        );
        assert_eq!(unanswered_gate("error: something else"), None);
    }

    #[test]
    fn a_second_reason_follows_the_first() {
        let s = |t: &str| Some(t.to_owned());
        assert_eq!(and(s("a"), s("b")), s("a\n  and b"));
        assert_eq!(and(None, s("b")), s("b"));
        assert_eq!(and(s("a"), None), s("a"));
        assert_eq!(and(None, None), None);
    }
}
