//! Family `crash sweep`: every named crash point (`SDD_LOOP_CRASH_AT`) ×
//! seeds × a plain or `--resume` recovery tick, each in a world of its
//! own: a seed's prior ticks, the crashed tick (the engine aborts at the
//! point), the recovery tick, one more tick — then the counters'
//! invariants ([`Project::counter_violations`]) against what the skills
//! actually did. A case with any broken invariant, or a tick that did not
//! end as it should, is one violation. The points only an `--agent` tick
//! reaches ([`AGENT_ONLY`]) are left out: the wrapped skill here is a
//! command, which passes them by (the eval case `agent-killed-mid-stream`
//! crashes an agent tick at `after-agent-usage`).

use std::sync::Mutex;

use sdd_loop::os::crash::{AGENT_ONLY, POINTS};

use crate::world::{self, Project, Tracker};
use crate::{Ctx, Row, SplitMix};

struct Case {
    point: &'static str,
    seed: u64,
    resume: bool,
}

fn case(ctx: &Ctx, tracker: &Tracker, c: &Case) -> Vec<String> {
    let mut rng = SplitMix::new(c.seed);
    let mut p = Project::new(&ctx.engine, tracker);
    let mut problems = Vec::new();
    for _ in 0..rng.below(3) {
        p.set("REL_EVENTS", 1 + rng.below(3));
        let ran = world::run(p.tick());
        if ran.code() != Some(0) {
            problems.push(format!("prior tick: {}: {}", ran.how(), ran.output()));
        }
    }
    p.set("REL_EVENTS", 1 + rng.below(4));
    let mut crashed = p.tick();
    crashed.env("SDD_LOOP_CRASH_AT", c.point);
    let ran = world::run(crashed);
    if ran.code().is_some() {
        problems.push(format!("crashed tick did not abort ({})", ran.how()));
    }
    p.set("REL_EVENTS", 1 + rng.below(3));
    let mut recovery = p.tick();
    if c.resume {
        recovery.arg("--resume");
    }
    let ran = world::run(recovery);
    if ran.code() != Some(0) {
        problems.push(format!("recovery tick: {}: {}", ran.how(), ran.output()));
    } else if !ran.output().contains("Reaped stale lock for pid") {
        problems.push("recovery tick did not say it reaped the lock".into());
    }
    let ran = world::run(p.tick());
    if ran.code() != Some(0) {
        problems.push(format!(
            "tick after recovery: {}: {}",
            ran.how(),
            ran.output()
        ));
    }
    problems.extend(p.counter_violations());
    problems
}

pub fn run(ctx: &Ctx) -> Row {
    let seeds = if ctx.short { 2 } else { 10 };
    let tracker = Tracker::start();
    let points: Vec<&'static str> = POINTS
        .iter()
        .map(|(point, _)| *point)
        .filter(|point| !AGENT_ONLY.contains(point))
        .collect();
    let cases: Vec<Case> = points
        .iter()
        .flat_map(|point| {
            (0..seeds).flat_map(move |seed| {
                [false, true].map(|resume| Case {
                    point,
                    seed,
                    resume,
                })
            })
        })
        .collect();
    let failed = Mutex::new(Vec::new());
    crate::parallel(ctx.jobs, &cases, |c| {
        let problems = case(ctx, &tracker, c);
        if !problems.is_empty() {
            failed.lock().expect("failures").push(format!(
                "{} seed {} {}: {}",
                c.point,
                c.seed,
                if c.resume { "--resume" } else { "plain" },
                problems.join("; ")
            ));
        }
    });
    let failed = failed.into_inner().expect("failures");
    crate::report_problems("crash sweep", &failed);
    Row {
        family: "crash sweep",
        what: "engine aborted at each crash point, then a plain or `--resume` tick and one more; counters checked against the skills' own ledger".into(),
        trials: format!(
            "{} points (all but `--agent`'s {}) × {seeds} seeds × 2 = {} cases",
            points.len(),
            AGENT_ONLY.join(", "),
            cases.len()
        ),
        result: format!(
            "{} cases with iterations 1..n once each, tokens counted once, nothing left behind",
            cases.len() - failed.len()
        ),
        violations: Some(failed.len() as u64),
        secs: 0.0,
    }
}
