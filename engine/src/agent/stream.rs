//! What the dialects share to read an agent's stream: what a line adds
//! ([`LineRead`]), what the whole stream said ([`Verdict`]), the
//! [`StreamReader`] each dialect implements, and the root cause of a run
//! that went wrong, quoted and bounded.

use crate::skill::runner::RunOutcome;
use crate::state::protocol::{ModelUsage, SkillEvent};

/// Longest root cause quoted from an agent.
pub const ROOT_CAUSE_MAX: usize = 400;

/// What one stdout line of an agent adds.
#[derive(Debug, Default, PartialEq)]
pub struct LineRead {
    /// Usage to journal now.
    pub events: Vec<SkillEvent>,
    /// Lines for the engine's stderr.
    pub echo: Vec<String>,
}

/// What an agent's whole stream said, once it exited.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    pub usage: Vec<ModelUsage>,
    /// The agent's own estimate of its spend (Claude's `total_cost_usd`).
    pub agent_cost: Option<f64>,
    /// Subagents it dispatched.
    pub agents: u64,
    /// Why the run failed (not yet redacted or truncated).
    pub failure: Option<String>,
    /// The agent's own final word was success and only how its process
    /// ended failed the run (Claude Code exiting 1 after a `success`
    /// result): see [`RunOutcome::result_succeeded`].
    pub result_succeeded: bool,
    /// The first line of its final message.
    pub summary: Option<String>,
    /// What the engine's stderr should say about the stream.
    pub notes: Vec<String>,
    /// The usage windows the stream reported (Claude Code, a
    /// subscriber's session).
    pub windows: Option<crate::state::windows::WindowsReport>,
}

/// Reads one agent's stream.
pub trait StreamReader: std::fmt::Debug + Send {
    /// One stdout line, as it arrives.
    fn line(&mut self, line: &str) -> LineRead;
    /// Usage written somewhere other than stdout, read on a timer while
    /// the agent runs and once after it exits; journaled at once.
    fn poll(&mut self) -> Vec<SkillEvent> {
        Vec::new()
    }
    /// Everything read, once the agent has exited.
    fn finish(&mut self, run: &RunOutcome) -> Verdict;
}

/// How often [`StreamReader::poll`] runs while the agent runs.
pub const POLL_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// The first non-empty line of `text`, trimmed and bounded.
pub(crate) fn first_line(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(bounded(line, 160))
}

pub(super) fn bounded(text: &str, max: usize) -> String {
    crate::rules::redact::cut(text, max)
}

/// One line of an agent's JSON stream as an event; a line that is not
/// JSON is `None`, counted in `noise` and echoed (unless blank).
pub(crate) fn event_or_noise(
    line: &str,
    noise: &mut u64,
    read: &mut LineRead,
) -> Option<serde_json::Value> {
    // A byte-order mark (a stream some wrapper re-encoded) is no reason
    // to lose the line it starts: an init line holds the session id.
    let event = serde_json::from_str(line.trim_start_matches('\u{feff}')).ok();
    if event.is_none() && !line.trim().is_empty() {
        *noise += 1;
        read.echo.push(line.to_owned());
    }
    event
}

/// The note of a stream with `noise` lines that were not JSON, if any.
pub(crate) fn noise_note(noise: u64) -> Option<String> {
    (noise > 0).then(|| format!("{noise} line(s) of the stream were not JSON (skipped)"))
}

/// An agent tick's root cause, `AGENT: WHY…[: QUOTE]`, or `None` when
/// nothing in `why` went wrong.
pub(crate) fn failure(
    agent: &str,
    why: &[String],
    sep: &str,
    quote: Option<&str>,
) -> Option<String> {
    if why.is_empty() {
        return None;
    }
    Some(format!(
        "{agent}: {}{}",
        why.join(sep),
        quote.map(|q| format!(": {q}")).unwrap_or_default()
    ))
}

/// The root cause of a run whose stream reports its failures as events
/// (Codex's `error` and `turn.failed`, OpenCode's `error`): each failure;
/// `unfinished` when the stream said nothing and never reached its
/// closing event; how the process ended; and the last stderr line, quoted
/// only when the stream said nothing.
pub(crate) fn event_failure(
    agent: &str,
    failures: Vec<String>,
    unfinished: Option<&str>,
    run: &RunOutcome,
) -> Option<String> {
    let quote = if failures.is_empty() {
        run.last_stderr()
    } else {
        None
    };
    let mut why = failures;
    if why.is_empty()
        && let Some(u) = unfinished
    {
        why.push(u.to_owned());
    }
    why.extend(how_it_ended(run));
    failure(agent, &why, "; ", quote)
}

/// A run that exited 0, for the adapters' tests.
#[cfg(test)]
pub(crate) fn exited_ok() -> RunOutcome {
    RunOutcome {
        exit_code: Some(0),
        ..RunOutcome::default()
    }
}

/// How the process ended, when that alone is a failure.
pub(crate) fn how_it_ended(run: &RunOutcome) -> Option<String> {
    if run.stalled {
        return Some("stalled: no output within the stall timeout, killed".to_owned());
    }
    match (run.exit_code, run.signal) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("exited {code}")),
        (None, Some(sig)) => Some(format!("killed by signal {sig}")),
        (None, None) => Some("ended without a status".to_owned()),
    }
}
