//! Asking a gate ([`Ctx::ask`]): the answerer's sources in order
//! (`rules/gates.rs`), then — in an `--unattended` loop — the tracker
//! (`super::away`, docs/src/gates-away.md); the answer recorded,
//! redacted, in the tick's `gates[]`.

use super::Failure;
use super::ctx::Ctx;
use crate::exit;
use crate::os::clock;
use crate::rules::gates::{Answer, GateError, Question};
use crate::state::history::GateRecord;

impl Ctx<'_, '_> {
    /// Asks one gate and records it (redacted) in this tick's `gates[]`.
    pub fn ask(&mut self, question: Question) -> Result<Answer, Failure> {
        let answered = match self.answerer.answer(&question) {
            Ok(answer) => {
                super::away::answered_here(self, &question)?;
                Ok((answer, None))
            }
            Err(GateError::Unanswered { .. }) if self.cfg.unattended && self.cfg.loop_mode => {
                let (answer, by) = super::away::ask(self, &question)?;
                Ok((answer, Some(by)))
            }
            Err(e) => Err(e),
        };
        match answered {
            Ok((answer, answered_by)) => {
                self.gates.push(GateRecord {
                    name: question.gate.name().to_owned(),
                    question: self.inputs.redactor.apply(&question.text),
                    answer: self.inputs.redactor.apply(&answer.recorded()),
                    at: clock::format(self.now()),
                    answered_by,
                    extra: Default::default(),
                });
                Ok(answer)
            }
            Err(e) => {
                let code = match &e {
                    GateError::Unanswered { .. } => exit::NEEDS_ANSWER,
                    GateError::BadAnswer { source_name, .. } if source_name == "--answer" => {
                        exit::USAGE
                    }
                    GateError::BadAnswer { .. } => exit::DATA,
                };
                let help = e.help();
                let mut message = e.to_string();
                if code == exit::NEEDS_ANSWER {
                    message.push_str(" — nothing was changed");
                }
                Err(Failure::new(code, message, help).with_question(match e {
                    GateError::Unanswered { question } => Some(question),
                    GateError::BadAnswer { .. } => None,
                }))
            }
        }
    }
}
