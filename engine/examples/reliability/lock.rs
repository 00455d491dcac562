//! Family `lock`: N processes released at once against one lock, from an
//! empty start and from a dead holder's lock; a violation is a trial with
//! two holders, none, or a lock file left behind (`shared/lock_race.rs`).

use crate::lock_race::{self, Race, Start};
use crate::{Ctx, Row};

pub fn run(ctx: &Ctx) -> Row {
    let (procs, trials) = if ctx.short { (8, 100) } else { (64, 2000) };
    let mut holders_max = 0;
    let (mut double, mut none, mut leftover, mut violations) = (0, 0, 0, 0);
    let starts = [Start::Empty, Start::Dead];
    for start in starts {
        let out = lock_race::race(
            &ctx.exe,
            crate::LOCK_WORKER,
            Race {
                procs,
                trials,
                start,
                naive: false,
            },
        );
        holders_max = holders_max.max(out.holders_max);
        double += out.double;
        none += out.none;
        leftover += out.leftover;
        violations += out.violations();
    }
    Row {
        family: "lock",
        what: "processes released at once on one lock, empty and dead-holder starts".into(),
        trials: format!(
            "{procs} processes × {trials} trials × {} starts ({})",
            starts.len(),
            starts.map(Start::name).join(", ")
        ),
        result: format!(
            "most holders at once {holders_max}; double holders {double}, no holder {none}, lock left behind {leftover}"
        ),
        violations: Some(violations as u64),
        secs: 0.0,
    }
}
