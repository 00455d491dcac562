//! The checks of a case's simulated machines (`machines:`): their names
//! and skews, that every tick of a case with machines names where it runs
//! (and only a case with machines does), that a tick on several machines
//! at once is a wrapper or real-session tick that kills nothing, that a
//! real-loop tick is one machine's next prompt with no `before:`, and that
//! what happens at a barrier is something that can happen while a tick
//! runs.

use sdd_mocks::skill::Action;
use serde_saphyr::{Location, Spanned};

use super::{Checked, Checker};
use crate::loading::case::{Case, Driver, Event, FORMAT_HELP, TickSpec};
use crate::loading::diagnostics::unknown;
use crate::loading::duration;

impl Checker<'_> {
    /// The case's machines, and every place a case names one.
    pub(super) fn machines(&self, case: &Case) -> Checked {
        let names: Vec<String> = case
            .machine_names()
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        for (name, spec) in &case.machines {
            let ok = !name.value.is_empty()
                && name
                    .value
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !ok {
                return Err(self.at(
                    name.referenced,
                    format!("machine `{}` is not made of a-z, 0-9 and -", name.value),
                    format!(
                        "a machine's name names its directory, e.g. `a` or `laptop` ({FORMAT_HELP})"
                    ),
                ));
            }
            if let Some(skew) = &spec.skew {
                self.skew(skew)?;
            }
        }
        if !names.is_empty()
            && !matches!(
                case.driver,
                Driver::Wrapper | Driver::RealSession | Driver::RealLoop
            )
        {
            return Err(self.at(
                self.ticks_at,
                "machines run wrapper ticks (the engine runs the fake skill), real-session ticks (a real Claude Code session each) or real-loop ticks (an interactive session each) only".to_owned(),
                format!("drop `driver:`, set `driver: real-session` or `real-loop`, or drop the machines ({FORMAT_HELP})"),
            ));
        }
        for tick in &case.ticks.value {
            self.tick_machines(tick, &names)?;
            if !names.is_empty() && case.driver == Driver::RealLoop {
                self.real_loop_tick(tick)?;
            }
        }
        for a in &case.assertions {
            if let Some(m) = &a.machine {
                self.machine_name(m, &names)?;
            }
        }
        Ok(())
    }

    /// A real-loop tick on a machine is that machine's session's next
    /// prompt: on one machine, with nothing changed before it — the
    /// sessions fire by themselves, so an event between ticks would reach
    /// a fire already under way.
    fn real_loop_tick(&self, tick: &TickSpec) -> Checked {
        if let Some(m) = tick.machines.first() {
            return Err(self.at(
                m.referenced,
                "a real-loop tick is one machine's session's next prompt, not several at once".to_owned(),
                format!("list a tick for each machine, `machine: a` then `machine: b`: consecutive ticks on different machines are one round, whose fires have all read the backlog before the first is let go ({FORMAT_HELP})"),
            ));
        }
        if !tick.before.is_empty() {
            let at = tick
                .machine
                .as_ref()
                .map_or(self.ticks_at, |m| m.referenced);
            return Err(self.at(
                at,
                "`before:` events in a real-loop case with machines: the sessions fire by themselves, so an event between ticks would reach a fire already under way".to_owned(),
                format!("drop `before:`; set the world up in `world:` ({FORMAT_HELP})"),
            ));
        }
        Ok(())
    }

    fn skew(&self, skew: &Spanned<String>) -> Checked {
        duration::parse_signed(&skew.value).map(drop).map_err(|e| {
            self.at(
                skew.referenced,
                e,
                format!("e.g. `skew: -2m` (behind) or `skew: 3m` (ahead) ({FORMAT_HELP})"),
            )
        })
    }

    fn machine_name(&self, name: &Spanned<String>, names: &[String]) -> Checked {
        if names.is_empty() {
            return Err(self.at(
                name.referenced,
                format!(
                    "machine `{}`, but the case declares no machines",
                    name.value
                ),
                format!(
                    "declare them at the top: `machines: {{ a: {{}}, b: {{}} }}` ({FORMAT_HELP})"
                ),
            ));
        }
        if names.contains(&name.value) {
            return Ok(());
        }
        Err(unknown(
            self.path,
            name,
            "machine",
            names,
            "the case's machines are",
        ))
    }

    fn tick_machines(&self, tick: &TickSpec, names: &[String]) -> Checked {
        for m in tick.machine.iter().chain(&tick.machines) {
            self.machine_name(m, names)?;
        }
        for event in tick.before.iter().chain(&tick.at_barrier) {
            match event {
                Event::Skew { machine, by } => {
                    self.machine_name(machine, names)?;
                    self.skew(by)?;
                }
                Event::Partition(m) | Event::Heal(m) => self.machine_name(m, names)?,
                _ => {}
            }
        }
        let at = tick
            .machine
            .as_ref()
            .or(tick.machines.first())
            .map_or(self.ticks_at, |m| m.referenced);
        if names.is_empty() {
            return self.at_barrier(tick, at);
        }
        match (&tick.machine, tick.machines.len()) {
            (None, 0) => Err(self.at(
                self.ticks_at,
                "in a case with machines, every tick says where it runs".to_owned(),
                format!("add `machine: {}` (or `machines: [a, b]` for several at once) ({FORMAT_HELP})", names[0]),
            )),
            (Some(_), n) if n > 0 => Err(self.at(
                at,
                "a tick runs on `machine:` or on `machines:`, not both".to_owned(),
                format!("`machines: [a, b]` runs it on both at once ({FORMAT_HELP})"),
            )),
            (None, 1) => Err(self.at(
                at,
                "`machines:` with one machine".to_owned(),
                format!("write `machine: {}` ({FORMAT_HELP})", tick.machines[0].value),
            )),
            (None, _) if tick.kill.is_some() || !tick.at_barrier.is_empty() || tick.release_lock_when.is_some() => Err(self.at(
                at,
                "a tick on several machines at once cannot be killed or changed at a barrier".to_owned(),
                format!("run the kill on one machine (`machine: a`) in a tick of its own ({FORMAT_HELP})"),
            )),
            _ => self.at_barrier(tick, at),
        }
    }

    /// What happens at a barrier: only what can change while a tick runs,
    /// in a tick whose skill has a barrier and that kills nothing.
    fn at_barrier(&self, tick: &TickSpec, at: Location) -> Checked {
        if tick.at_barrier.is_empty() {
            return Ok(());
        }
        if tick.machine.is_none() {
            return Err(self.at(
                at,
                "`at_barrier:` changes a machine's world while its tick runs: the tick needs a `machine:`".to_owned(),
                format!("declare `machines:` and run the tick on one ({FORMAT_HELP})"),
            ));
        }
        if tick.kill.is_some() {
            return Err(self.at(
                at,
                "`at_barrier:` and `kill:` both act at the barrier".to_owned(),
                format!("keep one: `kill:` ends the engine there, `at_barrier:` changes the world and lets it go on ({FORMAT_HELP})"),
            ));
        }
        let has_barrier = tick
            .skill
            .as_ref()
            .is_some_and(|s| s.actions.iter().any(|a| matches!(a, Action::Barrier(_))));
        if !has_barrier {
            return Err(self.at(
                at,
                "`at_barrier:` needs the fake skill to reach a `barrier` action".to_owned(),
                format!("add `- barrier: held` to the tick's skill actions ({FORMAT_HELP})"),
            ));
        }
        for event in &tick.at_barrier {
            match event {
                Event::Advance(d) => self.duration(d, "advance: 14m")?,
                Event::Skew { .. } | Event::Partition(_) | Event::Heal(_) => {}
                _ => {
                    return Err(self.at(
                        at,
                        "only `advance`, `skew`, `partition` and `heal` happen at a barrier"
                            .to_owned(),
                        format!("move other events to the tick's `before:` ({FORMAT_HELP})"),
                    ));
                }
            }
        }
        Ok(())
    }
}
