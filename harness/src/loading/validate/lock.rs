//! The checks of a tick that ends the world's live lock holder
//! (`world.lock.pid: live`): before it starts (`before: - release_lock:
//! true`) or when the engine prints a text (`release_lock_when:`). Both
//! need that holder.

use serde_saphyr::Spanned;

use super::{Checked, Checker};
use crate::loading::case::{Event, FORMAT_HELP, TickSpec};

impl Checker<'_> {
    /// `release_lock: true` and `release_lock_when:`, in a case whose
    /// world has a live lock holder.
    pub(super) fn lock_holder(&self, tick: &TickSpec) -> Checked {
        for event in &tick.before {
            if let Event::ReleaseLock(release) = event {
                self.release_lock(release)?;
            }
        }
        if let Some(text) = &tick.release_lock_when
            && !self.live_lock
        {
            return Err(self.at(
                text.referenced,
                "`release_lock_when` needs a live lock holder to release".to_owned(),
                format!("add `lock: {{ pid: live }}` to the case's `world:` ({FORMAT_HELP})"),
            ));
        }
        Ok(())
    }

    fn release_lock(&self, release: &Spanned<bool>) -> Checked {
        if !release.value {
            return Err(self.at(
                release.referenced,
                "`release_lock: false` releases nothing".to_owned(),
                format!("write `release_lock: true` to end the world's live lock holder, or leave the event out ({FORMAT_HELP})"),
            ));
        }
        if !self.live_lock {
            return Err(self.at(
                release.referenced,
                "`release_lock` needs a live lock holder to release".to_owned(),
                format!("add `lock: {{ pid: live }}` to the case's `world:` ({FORMAT_HELP})"),
            ));
        }
        Ok(())
    }
}
