//! The skills' ledger: one line per thing a skill run did (`start`,
//! `event`, `term`, `end`, `overlap`), appended atomically by `skill.rs`
//! and read back here — the exact record a family compares the engine's
//! counters with.

use std::collections::BTreeMap;

/// One skill run, as its ledger lines tell it.
#[derive(Debug, Clone, Default)]
pub struct SkillRun {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub events: u64,
    pub ended: bool,
    pub terminated: bool,
}

/// Everything the skills of a project did, in the order they did it.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    pub runs: BTreeMap<i32, SkillRun>,
    /// Runs that started while another was running.
    pub overlaps: u64,
    /// Lines the parser did not understand (a torn write would show here).
    pub unreadable: u64,
}

impl Ledger {
    pub fn parse(text: &str) -> Self {
        let mut ledger = Ledger::default();
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<i64>().ok());
            let Some(pid) = num(1).map(|p| p as i32) else {
                ledger.unreadable += 1;
                continue;
            };
            match (f[0], num(2), num(3)) {
                ("start", Some(ppid), Some(pgid)) => {
                    ledger.runs.insert(
                        pid,
                        SkillRun {
                            pid,
                            ppid: ppid as i32,
                            pgid: pgid as i32,
                            ..SkillRun::default()
                        },
                    );
                }
                ("event", Some(tin), Some(tout)) => {
                    let run = ledger.runs.entry(pid).or_default();
                    run.tokens_in += tin as u64;
                    run.tokens_out += tout as u64;
                    run.events += 1;
                }
                ("overlap", ..) => ledger.overlaps += 1,
                ("term", ..) => ledger.runs.entry(pid).or_default().terminated = true,
                ("end", ..) => ledger.runs.entry(pid).or_default().ended = true,
                _ => ledger.unreadable += 1,
            }
        }
        ledger
    }

    pub fn tokens_in(&self) -> u64 {
        self.runs.values().map(|r| r.tokens_in).sum()
    }

    pub fn tokens_out(&self) -> u64 {
        self.runs.values().map(|r| r.tokens_out).sum()
    }

    /// Runs that started and never finished.
    pub fn unfinished(&self) -> usize {
        self.runs.values().filter(|r| !r.ended).count()
    }
}
