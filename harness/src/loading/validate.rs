//! The checks a case passes after it parses: names of things outside the
//! file (fixtures, gates, stop causes, crash points), durations, times,
//! paths and tick references. Each failure is a [`YamlError`] at the
//! offending value's `file:line:column`, with a `help:` that lists the
//! valid names (and suggests the nearest one).
//!
//! The closed sets come from the engine (`sdd_loop::rules::gates::GateName`,
//! `sdd_loop::rules::stop::StopCause`, `sdd_loop::os::crash::POINTS`) and from the
//! fixture directories, so a case can never name something the engine or
//! the fixtures do not have. So do the fields a `pointer` names: they are
//! checked against the engine's schemas ([`crate::loading::reference`]), except a
//! field the case's own `world` writes. How the errors read — the
//! did-you-means, the quoted source — is [`super::diagnostics`].

use std::path::{Component, Path};

use sdd_loop::os::crash;
use sdd_loop::rules::gates::{self, GateName};
use sdd_loop::rules::stop::StopCause;
use sdd_mocks::agent::script::AgentTick;
use sdd_mocks::skill::exit::is_reserved;
use sdd_mocks::skill::{Action, ResultMode};
use sdd_mocks::tracker::{AnswerCode, WorldChange};
use sdd_mocks::yaml::YamlError;
use serde_saphyr::{Location, Spanned};

use crate::loading::case::{Case, Driver, Event, FORMAT_HELP, Kill, PidSpec, TickSpec};
use crate::loading::check::{Check, Comparison, GateSpec, MODEL_OUTCOMES};
use crate::loading::diagnostics::{names_help, nearest, unknown};
use crate::loading::fixtures::Fixtures;
use crate::loading::names::{self, NO_STOP};
use crate::loading::reference::{self, Doc};
use crate::loading::{duration, requirements};

mod edits;
mod hooks;
mod lock;
mod machines;
mod real;

struct Checker<'a> {
    path: &'a Path,
    fixtures: &'a Fixtures,
    ticks: usize,
    /// Where `ticks:` is, for what has no location of its own.
    ticks_at: Location,
    driver: Driver,
    /// `world.lock.pid: live`.
    live_lock: bool,
    /// `world.notify`: a notification receiver.
    notify: bool,
    /// Top-level fields the case's `world` writes into history lines and
    /// budget.json: a pointer may name them even when the engine does not.
    seeded_history: Vec<&'a str>,
    seeded_budget: Vec<&'a str>,
}

type Checked = Result<(), YamlError>;

impl Checker<'_> {
    fn at(&self, location: Location, message: String, help: impl Into<String>) -> YamlError {
        YamlError::at(self.path, location, message, help)
    }

    fn gate(&self, name: &Spanned<String>) -> Checked {
        match GateName::from_name(&name.value) {
            Some(_) => Ok(()),
            None => Err(unknown(
                self.path,
                name,
                "gate",
                &names::gates(),
                "the gates are",
            )),
        }
    }

    /// `agent:` only with a fake agent, and a tick the agent can play.
    fn agent(&self, tick: &TickSpec) -> Checked {
        let at = tick
            .agent
            .as_ref()
            .map(|a| a.referenced)
            .or(tick.skill.as_ref().map(|s| s.exit.referenced))
            .filter(|l| *l != Location::UNKNOWN)
            .unwrap_or(self.ticks_at);
        let Some(kind) = self.driver.agent() else {
            return match &tick.agent {
                Some(a) => Err(self.at(
                    a.referenced,
                    "`agent:` describes a fake agent's stream, and this case drives none".to_owned(),
                    format!("add `driver: claude` or `driver: codex` to the case, or drop `agent:` ({FORMAT_HELP})"),
                )),
                None => Ok(()),
            };
        };
        let mut entry = AgentTick {
            stream: tick
                .agent
                .as_ref()
                .map(|a| a.value.clone())
                .unwrap_or_default(),
            ..AgentTick::default()
        };
        if let Some(skill) = &tick.skill {
            entry.actions = skill.actions.clone();
            if skill.result != ResultMode::Write || skill.summary.is_some() {
                return Err(self.at(
                    at,
                    "`result` and `summary` are protocol reports, and an agent speaks no protocol".to_owned(),
                    format!("drop them: the engine reads the agent's stream and the world; the final message is `agent: {{ message: ... }}` ({FORMAT_HELP})"),
                ));
            }
        }
        entry.check(kind).map_err(|e| {
            self.at(
                at,
                e,
                format!("see \"Fake agents\" in fixtures/README.md ({FORMAT_HELP})"),
            )
        })
    }

    fn gates(&self, specs: &[GateSpec]) -> Checked {
        specs.iter().try_for_each(|g| self.gate(&g.name))
    }

    fn stop_cause(&self, name: &Spanned<String>) -> Checked {
        if name.value == NO_STOP || StopCause::from_name(&name.value).is_some() {
            return Ok(());
        }
        Err(unknown(
            self.path,
            name,
            "stop cause",
            &names::stop_causes(),
            "the stop causes are",
        ))
    }

    /// `example` is a correct line for where the duration was written.
    fn duration(&self, text: &Spanned<String>, example: &str) -> Checked {
        duration::parse(&text.value).map(drop).map_err(|e| {
            self.at(
                text.referenced,
                e,
                format!("e.g. `{example}` ({FORMAT_HELP})"),
            )
        })
    }

    fn relative(&self, p: &Spanned<String>, of: &str) -> Checked {
        let ok = !p.value.is_empty()
            && Path::new(&p.value)
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if ok {
            return Ok(());
        }
        Err(self.at(
            p.referenced,
            format!("`{}` is not a relative path inside {of}", p.value),
            format!("write a path such as `docs/notes.md`, without `..` or a leading `/` ({FORMAT_HELP})"),
        ))
    }

    fn tick_ref(&self, tick: &Option<Spanned<usize>>) -> Checked {
        match tick {
            Some(t) if t.value == 0 || t.value > self.ticks => Err(self.at(
                t.referenced,
                format!(
                    "tick {} does not exist: the case has {} tick(s)",
                    t.value, self.ticks
                ),
                format!("ticks are numbered from 1 ({FORMAT_HELP})"),
            )),
            _ => Ok(()),
        }
    }

    fn pointer(&self, p: &Spanned<String>) -> Checked {
        if p.value.is_empty() || p.value.starts_with('/') {
            return Ok(());
        }
        Err(self.at(
            p.referenced,
            format!("`{}` is not a JSON pointer", p.value),
            format!("a pointer starts with `/`, e.g. `/budget_snapshot/dollars_estimate` ({FORMAT_HELP})"),
        ))
    }

    /// A pointer into `doc`: well formed, and naming fields that exist.
    fn field(&self, p: &Spanned<String>, doc: Doc) -> Checked {
        self.pointer(p)?;
        let seeded = match doc {
            Doc::History => &self.seeded_history,
            Doc::Budget => &self.seeded_budget,
        };
        let first = p.value.split('/').nth(1).unwrap_or_default();
        if seeded.contains(&first) {
            return Ok(());
        }
        let Err(miss) = reference::check_pointer(doc, &p.value) else {
            return Ok(());
        };
        let parent = if miss.parent.is_empty() {
            doc.describe().to_owned()
        } else {
            format!("{} in {}", miss.parent, doc.describe())
        };
        let help = if miss.fields.is_empty() {
            format!(
                "{parent} has no fields: its elements are numbered from 0, e.g. `{}/0` (the fields: docs/src/case-format.md, \"Reference, generated from the engine\")",
                miss.parent
            )
        } else {
            names_help(
                &miss.token,
                &miss.fields,
                &format!("the fields of {parent} are"),
            )
        };
        Err(self.at(
            p.referenced,
            format!(
                "`{}` names no field: {parent} has no `{}`",
                p.value, miss.token
            ),
            help,
        ))
    }

    fn comparison(&self, c: &Comparison, doc: Option<Doc>) -> Checked {
        match (c, doc) {
            (Comparison::AtLeastField(p) | Comparison::AtMostField(p), Some(doc)) => {
                self.field(p, doc)
            }
            (Comparison::AtLeastField(p) | Comparison::AtMostField(p), None) => self.pointer(p),
            _ => Ok(()),
        }
    }

    fn case(&self, case: &Case) -> Checked {
        let id = &case.id;
        if id.value.is_empty()
            || !id
                .value
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            return Err(self.at(
                id.referenced,
                format!("id `{}` is not made of a-z, 0-9 and -", id.value),
                format!("ids name snapshot files, e.g. `c4-pr-budget` ({FORMAT_HELP})"),
            ));
        }
        self.covers(case)?;
        self.world(case)?;
        self.machines(case)?;
        if !case.loop_mode && case.driver.in_session() {
            return Err(self.at(
                case.id.referenced,
                format!("`loop: false` with `driver: {}`: the in-session halves exist only in loop mode", driver_name(case.driver)),
                format!("drop one of them ({FORMAT_HELP})"),
            ));
        }
        if case.driver.prompted() && !case.args.is_empty() {
            return Err(self.at(
                case.id.referenced,
                "a real session's engine arguments are the model's: `args:` would reach no command"
                    .to_owned(),
                format!("write them in the model's `sdd-loop … begin` commands ({FORMAT_HELP})"),
            ));
        }
        if !case.driver.claude_session() && !case.claude_args.is_empty() {
            return Err(self.at(
                case.id.referenced,
                "`claude_args` are for the `claude` a real session runs, and this case runs none".to_owned(),
                format!("add `driver: real-session`, or pass agent flags as `--agent-arg=…` in `args:` ({FORMAT_HELP})"),
            ));
        }
        if !case.driver.claude_session() && case.plugin {
            return Err(self.at(
                case.id.referenced,
                "`plugin: true` loads the plugin into the `claude` a real session runs, and this case runs none".to_owned(),
                format!("add `driver: real-session`, or drop `plugin:` ({FORMAT_HELP})"),
            ));
        }
        if case.auth == crate::loading::case::Auth::Oauth
            && case.driver.real_cli() != Some("claude")
        {
            return Err(self.at(
                case.id.referenced,
                "`auth: oauth` signs the real Claude Code in as a subscriber, and this case runs none".to_owned(),
                format!("use `driver: real-claude`, `real-session` or `real-loop`, or drop `auth:` ({FORMAT_HELP})"),
            ));
        }
        if let Some(t) = &case.timeout {
            self.duration(t, "timeout: 2m")?;
        }
        self.real_loop(case)?;
        if case.ticks.value.is_empty() {
            return Err(self.at(
                case.ticks.referenced,
                "a case needs at least one tick".to_owned(),
                format!("`ticks: [{{}}]` runs the engine once with a fake skill that does nothing ({FORMAT_HELP})"),
            ));
        }
        for tick in &case.ticks.value {
            self.tick(tick)?;
        }
        let expect = &case.expect;
        if let Some(cause) = &expect.stop_cause {
            self.stop_cause(cause)?;
        }
        if let Some(gates) = &expect.gates {
            self.gates(gates)?;
        }
        for a in &case.assertions {
            self.check(&a.check)?;
        }
        Ok(())
    }

    fn covers(&self, case: &Case) -> Checked {
        for (i, name) in case.covers.iter().enumerate() {
            if !requirements::is_known(&name.value) {
                let names = requirements::names();
                let nearest = nearest(&name.value, &names)
                    .map(|v| format!("did you mean `{v}`? "))
                    .unwrap_or_default();
                return Err(self.at(
                    name.referenced,
                    format!("unknown requirement `{}`", name.value),
                    format!(
                        "{nearest}covers: names SPEC-0020 requirement titles, verbatim, and `confirmation 1` … `confirmation 9`; `sdd-evals coverage` lists them ({FORMAT_HELP})"
                    ),
                ));
            }
            if case.covers[..i].iter().any(|n| n.value == name.value) {
                return Err(self.at(
                    name.referenced,
                    format!("`{}` is listed twice", name.value),
                    format!("name each requirement once ({FORMAT_HELP})"),
                ));
            }
        }
        Ok(())
    }

    fn world(&self, case: &Case) -> Checked {
        let world = &case.world;
        if let Some(name) = &world.backlog
            && !self.fixtures.backlog(&name.value).is_file()
        {
            return Err(unknown(
                self.path,
                name,
                "backlog fixture",
                &self.fixtures.backlogs(),
                "the backlogs in fixtures/backlogs/ are",
            ));
        }
        if let Some(name) = &world.claude_md
            && !self.fixtures.claude_md(&name.value).is_file()
        {
            return Err(unknown(
                self.path,
                name,
                "CLAUDE.md fixture",
                &self.fixtures.claude_mds(),
                "the files in fixtures/claude-md/ are",
            ));
        }
        if let Some(start) = &world.start
            && let Err(e) = start.value.parse::<jiff::Timestamp>()
        {
            return Err(self.at(
                start.referenced,
                format!("`{}` is not an RFC 3339 instant: {e}", start.value),
                format!("e.g. `start: 2026-05-09T14:00:00Z` ({FORMAT_HELP})"),
            ));
        }
        let mut files: Vec<&Spanned<String>> = world.files.keys().collect();
        files.sort_by_key(|f| (f.referenced.line(), f.referenced.column()));
        files
            .into_iter()
            .try_for_each(|f| self.relative(f, "the project"))
    }

    fn tick(&self, tick: &TickSpec) -> Checked {
        for event in &tick.before {
            match event {
                Event::Advance(d) => self.duration(d, "advance: 50m")?,
                Event::File { path, .. } | Event::Remove(path) => {
                    self.relative(path, "the project")?;
                }
                Event::Edit(edit) => self.edit(edit)?,
                Event::Tracker(change) => self.tracker_change(change)?,
                Event::Truncate(t) => {
                    self.edited_file(&t.file)?;
                    if let Some(n) = &t.drop
                        && n.value == 0
                    {
                        return Err(self.at(
                            n.referenced,
                            "`drop: 0` cuts nothing".to_owned(),
                            format!("give the number of bytes to cut from the end, or leave `drop` out to tear the last line in half ({FORMAT_HELP})"),
                        ));
                    }
                }
                _ => {}
            }
        }
        for a in &tick.answers {
            self.gate(&a.gate)?;
            if let Some(gate) = GateName::from_name(&a.gate.value)
                && let Err(detail) = gates::parse_answer(gate, &a.answer.value)
            {
                return Err(self.at(
                    a.answer.referenced,
                    format!(
                        "`{}` is not an answer to gate {gate}: {detail}",
                        a.answer.value
                    ),
                    format!(
                        "gate {gate} accepts: {} ({FORMAT_HELP})",
                        gate.options().join(", ")
                    ),
                ));
            }
        }
        if let Some(skill) = &tick.skill {
            let exit = &skill.exit;
            if !(0..=255).contains(&exit.value) || is_reserved(exit.value) {
                return Err(self.at(
                    exit.referenced,
                    format!("exit {} cannot be scripted", exit.value),
                    "use 0–255 except 90–99, which the fake skill keeps for its own failures (fixtures/README.md)",
                ));
            }
        }
        match tick.kill.as_ref().map(|k| (&k.value, k.referenced)) {
            Some((Kill::CrashPoint(point), _))
                if !crash::POINTS.iter().any(|(p, _)| *p == point.value) =>
            {
                let names: Vec<String> = names::crash_points();
                return Err(unknown(
                    self.path,
                    point,
                    "crash point",
                    &names,
                    "the crash points (`sdd-loop crash-points`) are",
                ));
            }
            Some((Kill::CrashPoint(point), _)) if self.driver == Driver::RealSession => {
                return Err(self.at(
                    point.referenced,
                    "a real session runs the engine from its own Bash calls, where a crash point cannot be set".to_owned(),
                    format!("kill the session with `kill: barrier` and a model turn that runs `sdd-evals-barrier` ({FORMAT_HELP})"),
                ));
            }
            Some((Kill::CrashPoint(point), _))
                if self.driver.in_session()
                    && crash::WRAPPER_ONLY.contains(&point.value.as_str()) =>
            {
                return Err(self.at(
                    point.referenced,
                    format!(
                        "crash point `{}` is reached only by a wrapper tick (the engine running the skill)",
                        point.value
                    ),
                    format!(
                        "with `driver: session` the work is the harness's, not the engine's: kill it there with `kill: barrier`, or use a crash point of begin or end ({FORMAT_HELP})"
                    ),
                ));
            }
            Some((Kill::CrashPoint(point), _))
                if !self.driver.engine_drives_agent()
                    && crash::AGENT_ONLY.contains(&point.value.as_str()) =>
            {
                return Err(self.at(
                    point.referenced,
                    format!(
                        "crash point `{}` is reached only while the engine drives an agent",
                        point.value
                    ),
                    format!(
                        "use it with `driver: claude`, `codex`, `real-claude`, `real-codex`, `real-gemini` or `real-opencode`, or pick another crash point ({FORMAT_HELP})"
                    ),
                ));
            }
            Some((kill @ (Kill::Barrier | Kill::Interrupt), at)) => {
                let name = if matches!(kill, Kill::Barrier) {
                    "barrier"
                } else {
                    "interrupt"
                };
                if self.driver.real_cli().is_some() {
                    return self.real_barrier(tick, kill, at);
                }
                let has_barrier = tick
                    .skill
                    .as_ref()
                    .is_some_and(|s| s.actions.iter().any(|a| matches!(a, Action::Barrier(_))));
                if !has_barrier {
                    return Err(self.at(
                        at,
                        format!("`kill: {name}` on a tick whose fake skill has no `barrier` action"),
                        format!("add `- barrier: here` to this tick's `skill: {{ actions: [...] }}` where the engine should be stopped ({FORMAT_HELP})"),
                    ));
                }
                if matches!(kill, Kill::Interrupt) && self.driver == Driver::Session {
                    return Err(self.at(
                        at,
                        "`kill: interrupt` interrupts the engine while it runs the skill, which an in-session tick never does".to_owned(),
                        format!("use a wrapper case (no `driver:`) for Ctrl-C, or `kill: barrier` for a session that dies mid-work ({FORMAT_HELP})"),
                    ));
                }
            }
            _ => {}
        }
        self.lock_holder(tick)?;
        self.agent(tick)?;
        self.real(tick)?;
        if let Some(gates) = &tick.expect.gates {
            self.gates(gates)?;
        }
        Ok(())
    }

    /// A reply that takes its answer code from the notification needs a
    /// receiver to have recorded one.
    fn tracker_change(&self, change: &Spanned<WorldChange>) -> Checked {
        if let WorldChange::ReplyToGate {
            code: Some(AnswerCode::FromNotification),
            ..
        } = &change.value
            && !self.notify
        {
            return Err(self.at(
                change.referenced,
                "`code: from_notification` reads the code from the notification receiver, and this case has none".to_owned(),
                format!("add `notify: {{}}` under `world:` — the engine then tells each posted gate there with its code ({FORMAT_HELP})"),
            ));
        }
        Ok(())
    }

    fn check(&self, check: &Check) -> Checked {
        match check {
            Check::StopCause(c) => self.stop_cause(c),
            Check::FinalIteration(_) | Check::FilePresent(_) | Check::FileAbsent(_) => Ok(()),
            Check::Exit(c) => self.tick_ref(&c.tick),
            Check::Outcome(c) => self.tick_ref(&c.tick),
            Check::Gate(c) => {
                self.gate(&c.name)?;
                self.tick_ref(&c.tick)
            }
            Check::GatesInOrder(c) => {
                self.gates(&c.gates)?;
                self.tick_ref(&c.tick)
            }
            Check::NoGate(name) => self.gate(name),
            Check::Printed(c) | Check::NotPrinted(c) => self.tick_ref(&c.tick),
            Check::HistoryLines(c) => self.comparison(&c.is, None),
            Check::HistoryField(c) => {
                if let Some(line) = &c.line
                    && line.value == 0
                {
                    return Err(self.at(
                        line.referenced,
                        "history lines are numbered from 1".to_owned(),
                        format!("leave `line` out for the last line ({FORMAT_HELP})"),
                    ));
                }
                self.field(&c.pointer, Doc::History)?;
                self.comparison(&c.is, Some(Doc::History))
            }
            Check::BudgetField(c) => {
                self.field(&c.pointer, Doc::Budget)?;
                self.comparison(&c.is, Some(Doc::Budget))
            }
            Check::LockField(c) => {
                self.pointer(&c.pointer)?;
                self.comparison(&c.is, None)
            }
            Check::RepoFileContains(c) => self.relative(&c.path, "the repository"),
            Check::TrackerRequests(c) => self.comparison(&c.is, None),
            Check::Notifications(c) => match &c.is {
                Some(is) => self.comparison(is, None),
                None if c.contains.is_empty() && c.not_contains.is_empty() => Err(self.at(
                    self.ticks_at,
                    "`notifications` checks nothing".to_owned(),
                    format!("give it `is`, `contains` or `not_contains` ({FORMAT_HELP})"),
                )),
                None => Ok(()),
            },
            Check::PullRequests(c) => self.comparison(&c.is, None),
            Check::ModelRequest(_) | Check::ModelRequests(_) | Check::ModelTotals(_)
                if self.driver.real_cli().is_none() =>
            {
                Err(self.at(
                    self.ticks_at,
                    "a model check reads the scripted model's log, and this case runs no real CLI".to_owned(),
                    format!("use it with `driver: real-claude`, `real-codex`, `real-gemini`, `real-opencode` or `real-session` ({FORMAT_HELP})"),
                ))
            }
            Check::ModelRequest(c) => {
                if c.turn == 0 {
                    return Err(self.at(self.ticks_at, "model turns are numbered from 1".to_owned(), format!("`turn: 1` is the case's first model turn ({FORMAT_HELP})")));
                }
                if c.last_tool_result_contains.is_none() && c.user_contains.is_none() && c.system_contains.is_none() {
                    return Err(self.at(self.ticks_at, format!("`model_request` for turn {} checks nothing", c.turn), format!("give it `last_tool_result_contains`, `user_contains` or `system_contains` ({FORMAT_HELP})")));
                }
                Ok(())
            }
            Check::ModelRequests(c) => {
                if let Some(o) = &c.outcome
                    && !MODEL_OUTCOMES.contains(&o.value.as_str())
                {
                    let valid: Vec<String> = MODEL_OUTCOMES.iter().map(|s| (*s).to_owned()).collect();
                    return Err(unknown(self.path, o, "model request outcome", &valid, "the outcomes are"));
                }
                self.tick_ref(&c.tick)?;
                self.comparison(&c.is, None)
            }
            Check::ModelTotals(c) => {
                self.tick_ref(&c.tick)?;
                self.pointer(&c.pointer)?;
                self.comparison(&c.is, None)
            }
            Check::StatusLayout(c) => self.tick_ref(&c.tick),
            Check::SkillDocs(c) => match &c.plugin_root {
                Some(root) => self.relative(root, "the repository"),
                None => Ok(()),
            },
        }
    }
}

/// A driver as a case names it.
fn driver_name(driver: Driver) -> &'static str {
    match driver {
        Driver::Wrapper => "wrapper",
        Driver::Session => "session",
        Driver::Claude => "claude",
        Driver::Codex => "codex",
        Driver::RealClaude => "real-claude",
        Driver::RealCodex => "real-codex",
        Driver::RealGemini => "real-gemini",
        Driver::RealOpencode => "real-opencode",
        Driver::RealSession => "real-session",
        Driver::RealLoop => "real-loop",
        Driver::Hooks => "hooks",
    }
}

/// Checks a parsed case; the first problem, located.
pub fn case(case: &Case, fixtures: &Fixtures) -> Result<(), YamlError> {
    let world = &case.world;
    Checker {
        path: &case.path,
        fixtures,
        ticks: case.ticks.value.len(),
        ticks_at: case.ticks.referenced,
        driver: case.driver,
        live_lock: case
            .world
            .lock
            .as_ref()
            .is_some_and(|l| l.pid == PidSpec::Live),
        notify: world.notify.is_some(),
        seeded_history: world
            .history
            .iter()
            .flat_map(|line| line.keys().map(String::as_str))
            .collect(),
        seeded_budget: world
            .budget
            .iter()
            .flat_map(|b| b.keys().map(String::as_str))
            .collect(),
    }
    .case(case)
}
