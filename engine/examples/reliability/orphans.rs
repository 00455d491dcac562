//! Family `orphans` (issue "no orphaned skill", Done-when): the engine is
//! SIGKILLed while its skill is mid-way through appending usage events,
//! and the next tick is started at once. Two skills must never run at
//! once, and the spend counted must equal the sum of the events the skills
//! wrote — the orphan's events after the kill included.
//!
//! The victim's skill says `ready` into a FIFO after a seeded number of
//! its events; the family reads it, SIGKILLs the engine, reaps it and
//! starts the next tick without a pause. Each skill run holds an advisory
//! lock for its whole life (`skill.rs`), so a run that starts beside
//! another writes `overlap` to the ledger. Worlds run side by side, each
//! a chain of trials; its counters are checked at the end
//! ([`Project::counter_violations`]).

use std::sync::Mutex;
use std::time::Duration;

use crate::world::{self, Project, Tracker};
use crate::{Ctx, Row, SplitMix};

/// What one world's chain of trials saw.
#[derive(Debug, Default)]
struct Seen {
    trials: u64,
    overlaps: u64,
    written: u64,
    counted: u64,
    stopped_by_next_tick: u64,
    problems: Vec<String>,
}

fn world_chain(
    ctx: &Ctx,
    tracker: &Tracker,
    world: u64,
    trials: u64,
    events: u64,
    pace_ms: u64,
) -> Seen {
    let mut seen = Seen::default();
    let mut rng = SplitMix::new(1000 + world);
    let mut p = Project::new(&ctx.engine, tracker);
    let fifo = p.root().join("ready.fifo");
    crate::lock_race::mkfifo(&fifo);
    p.set("REL_EVENTS", events);
    p.set("REL_PACE_MS", pace_ms);
    for trial in 0..trials {
        let mut victim = p.tick();
        victim
            .env("REL_READY_FIFO", &fifo)
            .env("REL_READY_AFTER", (1 + rng.below(events - 1)).to_string());
        let mut running = world::spawn(victim);
        if !crate::wait_ready(&fifo, Duration::from_secs(60)) {
            let ran = running.wait();
            seen.problems.push(format!(
                "trial {trial}: the skill never said ready ({}): {}",
                ran.how(),
                ran.output()
            ));
            break;
        }
        running.kill_engine();
        let killed = running.wait();
        let next = world::run(p.tick());
        seen.trials += 1;
        if killed.code().is_some() {
            seen.problems.push(format!(
                "trial {trial}: the engine was not killed ({})",
                killed.how()
            ));
        }
        let out = next.output();
        if next.code() != Some(0) {
            seen.problems.push(format!(
                "trial {trial}: the next tick: {}: {out}",
                next.how()
            ));
        }
        if out.contains("Stopped the skill of interrupted iteration") {
            seen.stopped_by_next_tick += 1;
        }
        p.reap_adopted();
    }
    let ledger = p.ledger();
    seen.overlaps = ledger.overlaps;
    seen.written = ledger.tokens_in();
    seen.counted = p
        .budget()
        .ok()
        .and_then(|b| b["tokens_in"].as_u64())
        .unwrap_or(0);
    seen.problems.extend(
        p.counter_violations()
            .into_iter()
            .map(|e| format!("world {world}: {e}")),
    );
    let strays = p.strays();
    if strays > 0 {
        seen.problems.push(format!(
            "world {world}: {strays} skill process groups outlived the last tick"
        ));
    }
    seen
}

pub fn run(ctx: &Ctx) -> Row {
    // Full: the 100 trials with a skill that works for 2 s.
    let (trials, events, pace_ms) = if ctx.short {
        (8, 10, 50)
    } else {
        (100, 20, 100)
    };
    let worlds: u64 = 4;
    let tracker = Tracker::start();
    let all = Mutex::new(Seen::default());
    let ids: Vec<u64> = (0..worlds).collect();
    crate::parallel(worlds as usize, &ids, |&w| {
        let share = trials / worlds + u64::from(w < trials % worlds);
        let seen = world_chain(ctx, &tracker, w, share, events, pace_ms);
        let mut all = all.lock().expect("results");
        all.trials += seen.trials;
        all.overlaps += seen.overlaps;
        all.written += seen.written;
        all.counted += seen.counted;
        all.stopped_by_next_tick += seen.stopped_by_next_tick;
        all.problems.extend(seen.problems);
    });
    let all = all.into_inner().expect("results");
    crate::report_problems("orphans", &all.problems);
    let lost = all.written as i64 - all.counted as i64;
    Row {
        family: "orphans",
        what: format!(
            "engine SIGKILLed mid-skill (skill appends {events} usage events over {:.1} s), next tick started at once",
            (events - 1) as f64 * pace_ms as f64 / 1000.0
        ),
        trials: format!("{} trials in {worlds} worlds", all.trials),
        result: format!(
            "overlapping skill runs {}; spend written {} tokens, counted {}, lost {lost}; orphan still running when the next tick began: {} of {}",
            all.overlaps, all.written, all.counted, all.stopped_by_next_tick, all.trials
        ),
        violations: Some(all.problems.len() as u64),
        secs: 0.0,
    }
}
