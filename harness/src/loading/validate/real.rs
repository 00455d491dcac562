//! The checks of the real CLIs' cases: a model's turns instead of a fake
//! skill, `driver: real-loop`'s own keys, and a barrier kill only where a
//! model's Bash call reaches the barrier.

use serde_saphyr::Location;

use super::{Checked, Checker, driver_name};
use crate::loading::case::{Case, Driver, FORMAT_HELP, Kill, TickSpec};

impl Checker<'_> {
    /// `model:` only with a real CLI, which takes no `skill:`; each turn
    /// says something; a real session is steered by its model alone.
    pub(super) fn real(&self, tick: &TickSpec) -> Checked {
        let at = |l: Location| {
            if l == Location::UNKNOWN {
                self.ticks_at
            } else {
                l
            }
        };
        self.hooks(tick)?;
        if !self.driver.prompted() && tick.prompt.is_some() {
            return Err(self.at(
                self.ticks_at,
                "a tick's `prompt:` is what a real Claude Code session is sent, and this case runs none".to_owned(),
                format!("add `driver: real-session` to the case, or drop the tick's `prompt:` ({FORMAT_HELP})"),
            ));
        }
        if self.driver.real_cli().is_none() {
            if let Some(turn) = tick.model.first() {
                return Err(self.at(
                    at(turn.referenced),
                    "`model:` scripts the model a real CLI talks to, and this case runs none".to_owned(),
                    format!("add `driver: real-claude`, `real-codex`, `real-gemini`, `real-opencode` or `real-session` to the case, or drop `model:` ({FORMAT_HELP})"),
                ));
            }
            if tick.session.is_some() {
                return Err(self.at(
                    self.ticks_at,
                    "`session:` chooses the real Claude Code session of a tick, and this case runs none".to_owned(),
                    format!("add `driver: real-session` to the case, or drop `session:` ({FORMAT_HELP})"),
                ));
            }
            return Ok(());
        }
        if let Some(skill) = &tick.skill {
            return Err(self.at(
                at(skill.exit.referenced),
                format!("`skill:` scripts the fake skill, and with `driver: {}` the work is the real CLI's", driver_name(self.driver)),
                format!("script what the model makes the CLI do as this tick's `model:` turns, e.g. `- calls: [{{ bash: {{ command: \"git push -u origin feature/1-login && gh pr create …\" }} }}]` (fixtures/model/README.md; {FORMAT_HELP})"),
            ));
        }
        for turn in &tick.model {
            // A `limit:` turn is answered 429, with neither.
            let limited = turn.value.limit.is_some();
            if turn.value.text.is_none() && turn.value.calls.is_empty() && !limited {
                return Err(self.at(
                    at(turn.referenced),
                    "this model turn has neither `text` nor `calls`".to_owned(),
                    format!("give the turn a `text`, a `calls` list, or both, or `limit: five_hour` for a 429 (fixtures/model/README.md; {FORMAT_HELP})"),
                ));
            }
        }
        if self.driver.prompted() {
            if let Some(a) = tick.answers.first() {
                return Err(self.at(
                    a.gate.referenced,
                    "a real session answers a gate itself: `begin` exits 4 with the question, and the model runs `begin` again with `--answer GATE=ANSWER`".to_owned(),
                    format!("drop `answers:` and script the re-run as a model turn, e.g. `- calls: [{{ bash: {{ command: \"sdd-loop work begin --loop --json --answer ambiguous-criteria=proceed\" }} }}]` ({FORMAT_HELP})"),
                ));
            }
            if !tick.args.is_empty() {
                return Err(self.at(
                    self.ticks_at,
                    "a real session's engine arguments are the model's: `args:` would reach no command".to_owned(),
                    format!("write them in the model's `sdd-loop … begin` command ({FORMAT_HELP})"),
                ));
            }
        }
        Ok(())
    }

    /// `driver: real-loop`: the typed `/loop` prompt and the plugin are
    /// what it runs, it kills nothing, and only it watches a `quiet:`.
    pub(super) fn real_loop(&self, case: &Case) -> Checked {
        let dismiss = case.ticks.value.iter().find_map(|t| t.dismiss.as_ref());
        if let Some(d) = dismiss
            && (case.driver != Driver::RealLoop || !case.machines.is_empty())
        {
            return Err(self.at(
                d.referenced,
                "`dismiss:` closes a dialog on the screen of one interactive session, and this case runs none".to_owned(),
                format!("use `driver: real-loop` without `machines:`, or drop `dismiss:` ({FORMAT_HELP})"),
            ));
        }
        if case.driver != Driver::RealLoop {
            if case.statusline {
                return Err(self.at(
                    case.id.referenced,
                    "`statusline: true` installs the statusLine of an interactive session, and this case runs none".to_owned(),
                    format!("add `driver: real-loop`, or drop `statusline:` ({FORMAT_HELP})"),
                ));
            }
            return match &case.quiet {
                Some(q) => Err(self.at(
                    q.referenced,
                    "`quiet:` watches an interactive session after its last tick, and this case runs none".to_owned(),
                    format!("add `driver: real-loop`, or drop `quiet:` ({FORMAT_HELP})"),
                )),
                None => Ok(()),
            };
        }
        if let Some(q) = &case.quiet {
            self.duration(q, "quiet: 2m")?;
        }
        if case.prompt.is_none() || !case.plugin {
            return Err(self.at(
                case.id.referenced,
                "`driver: real-loop` types the case's `prompt:` into Claude Code with this plugin loaded".to_owned(),
                format!("give the case `prompt: /loop /sdd-loop:work --loop …` and `plugin: true` ({FORMAT_HELP})"),
            ));
        }
        for (i, tick) in case.ticks.value.iter().enumerate() {
            // A session's first tick: the case's first, or its machine's.
            let first = !case.ticks.value[..i].iter().any(|t| {
                t.machine.as_ref().map(|m| &m.value) == tick.machine.as_ref().map(|m| &m.value)
            });
            let what = if tick.kill.is_some() {
                Some("`kill:`")
            } else if tick.session.is_some() {
                Some("`session:`")
            } else if first && tick.prompt.is_some() {
                Some("a session's first tick's `prompt:` (the case's `prompt:` is typed then)")
            } else {
                None
            };
            if let Some(what) = what {
                return Err(self.at(
                    self.ticks_at,
                    format!("tick {}: {what} has no meaning in one interactive session that `/loop` drives", i + 1),
                    format!("drop it, or use `driver: real-session` ({FORMAT_HELP})"),
                ));
            }
        }
        Ok(())
    }

    /// `kill: barrier` with a real CLI: a model turn runs the barrier
    /// helper, and only a barrier kill reaches a real session.
    pub(super) fn real_barrier(&self, tick: &TickSpec, kill: &Kill, at: Location) -> Checked {
        if matches!(kill, Kill::Interrupt) && self.driver == Driver::RealSession {
            return Err(self.at(
                at,
                "`kill: interrupt` interrupts the engine while it runs the work, which an in-session tick never does".to_owned(),
                format!("use `kill: barrier` for a session that dies mid-work ({FORMAT_HELP})"),
            ));
        }
        let runs_barrier = tick.model.iter().any(|turn| {
            turn.value.calls.iter().any(|c| match c {
                sdd_mocks::model::Call::Bash { command, .. } => {
                    command.contains("sdd-evals-barrier")
                }
                // A shell tool called by name (OpenCode's `bash`).
                sdd_mocks::model::Call::Tool { input, .. } => input
                    .get("command")
                    .and_then(serde_json::Value::as_str)
                    .is_some_and(|c| c.contains("sdd-evals-barrier")),
            })
        });
        if runs_barrier {
            return Ok(());
        }
        Err(self.at(
            at,
            "a barrier kill on a tick whose model runs no `sdd-evals-barrier`".to_owned(),
            format!("make a model turn's Bash call run `sdd-evals-barrier` where the CLI should be killed, e.g. `command: \"sdd-loop work begin --loop --json && sdd-evals-barrier\"` ({FORMAT_HELP})"),
        ))
    }
}
