//! The checks of a tick that `driver: hooks` plays: only it takes a
//! `source:` (who sent the prompt), and one session's hooks have no kill
//! and no new session.

use super::{Checked, Checker};
use crate::loading::case::{Driver, FORMAT_HELP, TickSpec};

impl Checker<'_> {
    /// `source:` only with `driver: hooks`, which takes no `kill:` or
    /// `session:`.
    pub(super) fn hooks(&self, tick: &TickSpec) -> Checked {
        if self.driver != Driver::Hooks && tick.source.is_some() {
            return Err(self.at(
                self.ticks_at,
                "a tick's `source:` is who sent the `UserPromptSubmit` prompt the harness plays, and only `driver: hooks` plays it".to_owned(),
                format!("add `driver: hooks` to the case, or drop the tick's `source:` ({FORMAT_HELP})"),
            ));
        }
        if self.driver == Driver::Hooks && (tick.kill.is_some() || tick.session.is_some()) {
            return Err(self.at(
                self.ticks_at,
                "`driver: hooks` plays one session's hooks: a tick takes no `kill:` and no `session:`".to_owned(),
                format!("drop them, or use `driver: session` or `real-session` ({FORMAT_HELP})"),
            ));
        }
        Ok(())
    }
}
