//! The loop contract enforced inside a Claude Code session (issue "the
//! contract enforced in-session"): `sdd-loop hook EVENT`, wired by this
//! repository's plugin (`hooks/hooks.json`) to five Claude Code hooks
//! that run outside the model, so the contract no longer rests on the
//! model obeying SKILL.md.
//!
//! - [`user_prompt`] (`UserPromptSubmit`): a loop prompt ([`prompt`])
//!   runs `begin` with the prompt's flags, the session as the lock holder
//!   and the session's transcript; work becomes context for the model,
//!   while skip, stop and ask block the prompt — the model is not called.
//! - [`pre_tool`] (`PreToolUse`): what a tool call would do ([`command`])
//!   is refused when the contract forbids it — a PR beyond `max_new_prs`,
//!   a PR for an issue not in the request, a merge under `hold` or where
//!   merging is not allowed, a second review round (ADR-0010), or any of
//!   these when the session holds the loop but no iteration is open.
//! - [`stop`] (`Stop`): ends the open iteration: PRs from the world, spend
//!   from the exact transcript, the summary from the last message.
//! - [`cut_short`] (`StopFailure`, `SessionEnd`): ends the open iteration
//!   of a turn that a model-API error or the session's end cut short,
//!   with that cause and the spend so far — never left open, never a
//!   failure of the work (issue 33).
//!
//! Every hook answers with what Claude Code accepts ([`answer`]) or
//! nothing, within its time limit ([`TIMEOUTS`], the same as in
//! `hooks/hooks.json`; past it, the event's fallback: [`in_time`]), and
//! appends what it decided and why to `.sdd/loop/{skill}.hooks.jsonl`
//! ([`log`]) — the fallback too. What the hooks remember
//! between calls is in [`state`]. `begin` and `end` themselves run through
//! the [`Engine`] seam: the command line's own commands, so a hook and an
//! explicit `sdd-loop work begin` are one code path.

pub mod answer;
pub mod command;
pub mod cut_short;
pub mod in_time;
pub mod input;
pub mod log;
pub mod owned;
pub mod pre_tool;
pub mod prompt;
mod seams;
pub mod state;
pub mod stop;
pub mod user_prompt;
pub mod words;

pub use answer::Answer;
pub use in_time::fallback;
pub use input::HookEvent;
pub use seams::{Engine, Hook, MARGIN_SECS, PROTOCOLS, Ran, TIMEOUTS, handshake};

/// Runs hook `event` on `input` (the bytes Claude Code wrote).
pub fn run(event: HookEvent, input: &[u8], hook: &mut Hook<'_>) -> Answer {
    match event {
        HookEvent::UserPromptSubmit => user_prompt::run(hook, input),
        HookEvent::PreToolUse => pre_tool::run(hook, input),
        HookEvent::Stop => stop::run(hook, input),
        HookEvent::StopFailure => cut_short::stop_failure(hook, input),
        HookEvent::SessionEnd => cut_short::session_end(hook, input),
    }
}
