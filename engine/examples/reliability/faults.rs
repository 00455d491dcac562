//! Family `faults`: what a tick does when the world misbehaves — one row
//! per fault, with the tick's exit status and outcome, how long it took,
//! and the engine's peak memory (`VmHWM` of the engine process, sampled
//! every 2 ms while it ran; the kernel keeps the high-water mark, so only
//! growth in the last 2 ms before exit could be missed).
//!
//! Tracker faults (every request answered with the fault) must end the
//! tick with exit 69, `budget.json` and history byte-for-byte unchanged
//! and the lock released — a hanging tracker within its time limits (the
//! defaults in full mode: well under a minute). Skill faults must end the
//! tick with exit 0 and the expected outcome, the spend the skill's events
//! reported counted once, nothing left running, and the engine's memory
//! bounded whatever the skill prints.

use std::path::Path;

use sdd_loop::state::history::Outcome;

use crate::world::{self, Fault, Project, Ran, Tracker};
use crate::{Ctx, Row};

/// The engine's peak memory allowed under any fault: a bound, so the
/// skill's 100 MB of output must not be held in memory.
const PEAK_LIMIT_KIB: u64 = 64 * 1024;

enum Kind {
    Tracker(Fault),
    Skill {
        mode: &'static str,
        outcome: Outcome,
    },
}

struct Case {
    name: String,
    kind: Kind,
}

/// Bytes the flooding skill prints: the issue's 100 MB, or 32 MB in
/// short mode (a debug build redacts 100 MB in about 13 s).
fn flood_bytes(short: bool) -> u64 {
    if short { 32 << 20 } else { 100 << 20 }
}

fn cases(short: bool) -> Vec<Case> {
    let tracker = |name: &str, fault| Case {
        name: name.into(),
        kind: Kind::Tracker(fault),
    };
    let skill = |name: &str, mode, outcome| Case {
        name: name.into(),
        kind: Kind::Skill { mode, outcome },
    };
    let mb = flood_bytes(short) >> 20;
    vec![
        tracker(
            "tracker 503",
            Fault::Status(503, r#"{"message": "Service Unavailable"}"#.into()),
        ),
        tracker("tracker 429 (Retry-After: 1)", Fault::RateLimited(1)),
        tracker("tracker hangs", Fault::Hang),
        tracker("tracker garbage body", Fault::Garbage),
        skill("skill hangs, silent", "hang", Outcome::Errored),
        skill(
            &format!("skill prints {mb} MiB (1 KiB lines)"),
            "flood",
            Outcome::Ok,
        ),
        skill(
            &format!("skill prints {mb} MiB (one line)"),
            "flood-one-line",
            Outcome::Ok,
        ),
        skill("skill writes a garbage result", "garbage", Outcome::Errored),
        skill("skill killed by a signal", "signal", Outcome::Errored),
    ]
}

fn state_bytes(p: &Project) -> Vec<Option<Vec<u8>>> {
    ["work.budget.json", "work.history.jsonl"]
        .iter()
        .map(|f| std::fs::read(p.state().join(f)).ok())
        .collect()
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// A message fit for a table cell: URLs and the project's path replaced
/// by placeholders, at most 110 characters.
fn shorten(text: &str, p: &Project) -> String {
    let text = text.replace(&p.root().display().to_string(), "[project]");
    let text: String = text
        .split(' ')
        .map(|w| if w.starts_with("http://") { "[url]" } else { w })
        .collect::<Vec<_>>()
        .join(" ");
    let mut cut: String = text.chars().take(110).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// Runs one case; its row.
fn case(ctx: &Ctx, c: &Case) -> Row {
    let tracker = Tracker::start();
    let mut p = Project::new(&ctx.engine, &tracker);
    let mut problems = Vec::new();
    let first = world::run(p.tick());
    if first.code() != Some(0) {
        problems.push(format!(
            "the tick before the fault: {}: {}",
            first.how(),
            first.output()
        ));
    }
    let limits: &[&str] = if ctx.short {
        &["--tracker-timeout", "1", "--tracker-retry-budget", "3"]
    } else {
        &[]
    };
    // 3 s in short mode too: only the silent skill waits it out (2 s more),
    // and beside CI's other steps a busy skill can be off the CPU for a
    // good part of a second, which a 1 s limit would take for a stall.
    let stall = "3";
    let (ran, outcome): (Ran, String) = match &c.kind {
        Kind::Tracker(fault) => {
            let before = state_bytes(&p);
            tracker.set_fault(fault.clone());
            let mut cmd = p.tick();
            cmd.args(limits);
            let ran = world::run(cmd);
            tracker.set_fault(Fault::None);
            if ran.code() != Some(69) {
                problems.push(format!("expected exit 69: {}", ran.output()));
            }
            if state_bytes(&p) != before {
                problems.push("budget.json or history changed".into());
            }
            if !ran.output().contains("nothing was changed") {
                problems.push("the error does not say nothing was changed".into());
            }
            if ran.secs > 60.0 {
                problems.push(format!("the tick took {:.0} s", ran.secs));
            }
            (ran, "—".into())
        }
        Kind::Skill { mode, outcome } => {
            p.set("REL_MODE", mode);
            p.set("REL_FLOOD_BYTES", flood_bytes(ctx.short));
            let mut cmd = p.tick();
            cmd.args(["--stall-timeout", stall]);
            let ran = world::run(cmd);
            if ran.code() != Some(0) {
                problems.push(format!("expected exit 0: {}", ran.output()));
            }
            let last = p.history().ok().and_then(|h| h.last().cloned());
            let got = last.as_ref().and_then(|l| l.outcome);
            if got != Some(*outcome) {
                problems.push(format!("outcome {got:?}, expected {outcome:?}"));
            }
            // A silent skill is killed by the watchdog: it cannot say it ended.
            problems.extend(
                p.counter_violations()
                    .into_iter()
                    .filter(|v| !(*mode == "hang" && v.contains("never finished"))),
            );
            if p.strays() > 0 {
                problems.push("the skill outlived its tick".into());
            }
            let cause = last
                .and_then(|l| l.failures_this_iter)
                .and_then(|f| f.into_iter().next())
                .map(|f| format!(": {}", f.root_cause))
                .unwrap_or_default();
            (
                ran,
                format!("{}{cause}", got.map_or("none", Outcome::as_str)),
            )
        }
    };
    if ran.peak_kib > PEAK_LIMIT_KIB {
        problems.push(format!("engine peak memory {}", mib(ran.peak_kib)));
    }
    if Path::new(&p.state().join("work.lock")).exists() {
        problems.push("lock left behind".into());
    }
    crate::report_problems(&c.name, &problems);
    let said = match &c.kind {
        Kind::Tracker(_) => {
            let output = ran.output();
            output
                .lines()
                .find(|l| l.starts_with("error:"))
                .map(|l| shorten(l, &p))
                .unwrap_or_default()
        }
        Kind::Skill { .. } => format!("outcome {}", shorten(&outcome, &p)),
    };
    Row {
        family: "fault",
        what: c.name.clone(),
        trials: "1 tick".into(),
        result: format!("{}, {said}; engine peak {}", ran.how(), mib(ran.peak_kib)),
        violations: Some(problems.len() as u64),
        secs: ran.secs,
    }
}

pub fn run(ctx: &Ctx) -> Vec<Row> {
    cases(ctx.short).iter().map(|c| case(ctx, c)).collect()
}
