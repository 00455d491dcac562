//! A gate asked where the loop runs, told to the person once
//! (docs/src/notifications.md; docs/src/gates-away.md, "Asked here, and
//! told").
//!
//! A tick that ends asking a gate nobody here answered (exit 4: a Claude
//! Code session's question, a shell tick with no `--answer`) changes no
//! loop state — no budget, history or lock. When the person gave
//! notification URLs it is also told: a `gate-asked` notification with the
//! question, its options and where to answer — in the session that runs
//! the loop, or the tick run again with `--answer` — and no link and no
//! code, since the answer is given where the loop runs. One notification
//! per gate, not one per fire: the gate told is kept in
//! `{skill}.asked.json` ([`crate::state::asked`]), a tick that asks it
//! again tells nobody, and once a tick gets past its gates (the gate
//! answered, or no longer asked) the record goes, so the gate asked later
//! is told again. That file and the notifications' own are all such a
//! tick writes.

use super::ctx::Ctx;
use crate::os::clock;
use crate::rules::gates::Question;
use crate::state::asked::Asked;
use crate::state::files;
use crate::world::notify::{GateAsked, Notice};

/// Where the gate was asked, which says where it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AskedIn {
    /// `begin`: the session that runs the loop asks it.
    Session,
    /// A wrapper tick, from a shell: the tick is run again with the answer.
    Shell,
}

/// The tick ends asking `question`: tells the person, unless this gate is
/// the one already told.
pub(super) fn tell(ctx: &mut Ctx<'_, '_>, question: &Question, asked_in: AskedIn) {
    if !tells(ctx) {
        return;
    }
    let path = ctx.paths.asked();
    let gate = question.gate.name();
    let subject = question.subject();
    if Asked::load(&path).is_some_and(|told| told.is(gate, subject)) {
        return;
    }
    let text = ctx.inputs.redactor.apply(&question.text);
    ctx.notify(Notice::GateAsked(GateAsked {
        skill: ctx.cfg.skill.as_str().to_owned(),
        gate: gate.to_owned(),
        question: text.clone(),
        options: question.options().iter().map(|o| (*o).to_owned()).collect(),
        answer_with: answer_with(question, asked_in),
    }));
    let told = Asked {
        gate: gate.to_owned(),
        subject,
        question: text,
        at: clock::format(ctx.now()),
    };
    let saved = files::ensure_state_dir(&ctx.paths.dir).and_then(|()| told.save(&path));
    if let Err(e) = saved {
        ctx.note(format!(
            "warning: {e}; the gate's notification is sent, and may be sent again by the next tick that asks it"
        ));
    }
}

/// The tick got past its gates: the gate told, answered or no longer
/// asked, is told again when it is asked later.
pub(super) fn passed(ctx: &mut Ctx<'_, '_>) {
    if !tells(ctx) {
        return;
    }
    if let Err(e) = Asked::forget(&ctx.paths.asked()) {
        ctx.note(format!("warning: {e}"));
    }
}

/// Only a loop with notification URLs tells, or keeps what it told.
fn tells(ctx: &Ctx<'_, '_>) -> bool {
    ctx.cfg.loop_mode && !ctx.cfg.notify.is_empty()
}

/// Where and how the gate is answered, after "Answer ".
fn answer_with(question: &Question, asked_in: AskedIn) -> String {
    let flag = format!(
        "`--answer {}=<{}>`",
        question.gate,
        question.options().join("|")
    );
    match asked_in {
        AskedIn::Session => format!(
            "in the session that runs the loop: its question, or the loop prompt sent again with {flag}."
        ),
        AskedIn::Shell => format!(
            "where the loop runs: the tick run again with {flag} (or an entry in an `--answers` file)."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::gates::GateName;

    #[test]
    fn a_session_is_told_to_answer_in_the_session_a_shell_tick_with_the_flag() {
        let q = Question::backlog_drift();
        assert_eq!(q.gate, GateName::BacklogDrift);
        assert_eq!(
            answer_with(&q, AskedIn::Session),
            "in the session that runs the loop: its question, or the loop prompt sent again with `--answer backlog-drift=<re-propose|continue|stop>`."
        );
        assert_eq!(
            answer_with(&q, AskedIn::Shell),
            "where the loop runs: the tick run again with `--answer backlog-drift=<re-propose|continue|stop>` (or an entry in an `--answers` file)."
        );
    }
}
