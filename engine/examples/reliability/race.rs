//! Family `race`: N ticks started at once on one project, round after
//! round, as a `/loop` with a tight interval (or several terminals) would.
//! One of them takes the lock and runs the skill; the others skip and each
//! append a `skipped_lock` line — so the history is appended by ticks that
//! do not hold the lock, at the same moment as the holder reads and
//! appends it.
//!
//! Every tick started must leave exactly one history line: a round's lines
//! are counted against the ticks it started, every line must parse (no
//! torn tail, no damage mid-file), and no `.torn-*` sidecar may appear —
//! nothing crashed, so nothing is torn. Rounds run with a skill that works
//! for a while (the holder's run overlaps the others' skips) and one that
//! returns at once (the holder appends beside them). The usual counters'
//! invariants ([`Project::counter_violations`]) are checked at the end.

use std::sync::Mutex;

use crate::world::{self, Project, Tracker};
use crate::{Ctx, Row};

/// The two skills a world's rounds run with.
#[derive(Debug, Clone, Copy)]
struct Skill {
    name: &'static str,
    /// Usage events the skill appends, and the pause between them.
    events: u64,
    pace_ms: u64,
}

const SKILLS: [Skill; 2] = [
    Skill {
        name: "a skill that works 0.2 s",
        events: 2,
        pace_ms: 200,
    },
    Skill {
        name: "a skill that returns at once",
        events: 1,
        pace_ms: 0,
    },
];

/// What one world saw.
#[derive(Debug, Default)]
struct Seen {
    ticks: u64,
    lines: u64,
    lost: u64,
    extra: u64,
    sidecars: u64,
    problems: Vec<String>,
}

fn sidecars(p: &Project) -> u64 {
    std::fs::read_dir(p.state())
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().contains(".torn-"))
                .count() as u64
        })
        .unwrap_or(0)
}

fn lines_on_disk(p: &Project) -> Result<u64, String> {
    p.history().map(|lines| lines.len() as u64)
}

fn world_rounds(ctx: &Ctx, tracker: &Tracker, skill: Skill, rounds: u64, ticks: u64) -> Seen {
    let mut seen = Seen::default();
    let mut p = Project::new(&ctx.engine, tracker);
    p.set("REL_EVENTS", skill.events);
    p.set("REL_PACE_MS", skill.pace_ms);
    for round in 0..rounds {
        let before = match lines_on_disk(&p) {
            Ok(n) => n,
            Err(e) => {
                seen.problems
                    .push(format!("{}: before round {round}: {e}", skill.name));
                break;
            }
        };
        let running: Vec<_> = (0..ticks).map(|_| world::spawn(p.tick())).collect();
        for (i, tick) in running.into_iter().enumerate() {
            let ran = tick.wait();
            seen.ticks += 1;
            if ran.code() != Some(0) {
                seen.problems.push(format!(
                    "{}: round {round}, tick {i}: {}: {}",
                    skill.name,
                    ran.how(),
                    ran.output()
                ));
            }
        }
        let after = match lines_on_disk(&p) {
            Ok(n) => n,
            Err(e) => {
                seen.problems
                    .push(format!("{}: after round {round}: {e}", skill.name));
                break;
            }
        };
        let written = after.saturating_sub(before);
        seen.lines += written;
        if written < ticks {
            seen.lost += ticks - written;
            seen.problems.push(format!(
                "{}: round {round}: {written} history lines for {ticks} ticks",
                skill.name
            ));
        } else if written > ticks {
            seen.extra += written - ticks;
            seen.problems.push(format!(
                "{}: round {round}: {written} history lines for {ticks} ticks",
                skill.name
            ));
        }
        p.reap_adopted();
    }
    seen.sidecars = sidecars(&p);
    if seen.sidecars > 0 {
        seen.problems.push(format!(
            "{}: {} torn-line sidecars appeared though nothing crashed",
            skill.name, seen.sidecars
        ));
    }
    seen.problems.extend(
        p.counter_violations()
            .into_iter()
            .map(|e| format!("{}: {e}", skill.name)),
    );
    seen
}

pub fn run(ctx: &Ctx) -> Row {
    // Full: rounds × ticks = 5,000 per skill.
    let (ticks, rounds) = if ctx.short { (10, 15) } else { (10, 500) };
    let worlds_per_skill = ctx.jobs.max(1) as u64;
    let tracker = Tracker::start();
    let all = Mutex::new(Seen::default());
    let worlds: Vec<(Skill, u64)> = SKILLS
        .iter()
        .flat_map(|s| (0..worlds_per_skill).map(move |w| (*s, w)))
        .collect();
    crate::parallel(ctx.jobs, &worlds, |&(skill, w)| {
        let share = rounds / worlds_per_skill + u64::from(w < rounds % worlds_per_skill);
        let seen = world_rounds(ctx, &tracker, skill, share, ticks);
        let mut all = all.lock().expect("results");
        all.ticks += seen.ticks;
        all.lines += seen.lines;
        all.lost += seen.lost;
        all.extra += seen.extra;
        all.sidecars += seen.sidecars;
        all.problems.extend(seen.problems);
    });
    let all = all.into_inner().expect("results");
    crate::report_problems("race", &all.problems);
    Row {
        family: "race",
        what: format!(
            "{ticks} ticks started at once on one project, round after round ({} and {})",
            SKILLS[0].name, SKILLS[1].name
        ),
        trials: format!(
            "{rounds} rounds × {ticks} ticks × {} skills = {} ticks",
            SKILLS.len(),
            all.ticks
        ),
        result: format!(
            "history lines {} for {} ticks: lost {}, extra {}; torn-line sidecars {}",
            all.lines, all.ticks, all.lost, all.extra, all.sidecars
        ),
        violations: Some(all.problems.len() as u64),
        secs: 0.0,
    }
}
