//! Which driver runs a case's ticks, chosen once per case from its
//! `driver:` ([`TickDriver::for_case`]); the in-session drivers carry
//! their session from one tick to the next.

use sdd_mocks::agent::script::Kind;

use super::real_loop::RealLoop;
use super::real_session::RealSession;
use super::session::Agent;
use super::tick::{Tick, Ticked};
use super::{agent, hooks, real, wrapper};
use crate::loading::case::{Case, Driver};
use crate::world::error::HarnessError;

/// A case's driver, with what it keeps across ticks.
#[derive(Debug)]
pub enum TickDriver {
    /// The engine runs the fake skill ([`wrapper`]).
    Wrapper,
    /// The engine drives a fake agent ([`agent`]).
    Agent(Kind),
    /// The harness plays an in-session agent ([`super::session`]).
    Session(Agent),
    /// The engine drives a pinned real CLI ([`real`]).
    Real,
    /// A real Claude Code session runs `begin`/`end` ([`super::real_session`]).
    RealSession(RealSession),
    /// The real interactive Claude Code runs `/loop` ([`super::real_loop`]).
    RealLoop(RealLoop),
    /// The harness plays Claude Code's side of the hooks ([`hooks`]).
    Hooks,
}

impl TickDriver {
    /// The driver of `case`'s ticks.
    pub fn for_case(case: &Case) -> Self {
        match (case.driver, case.driver.agent()) {
            (Driver::Session, _) => Self::Session(Agent::default()),
            (Driver::RealSession, _) => Self::RealSession(RealSession::default()),
            (Driver::RealLoop, _) => Self::RealLoop(RealLoop::default()),
            (Driver::Hooks, _) => Self::Hooks,
            (
                Driver::RealClaude | Driver::RealCodex | Driver::RealGemini | Driver::RealOpencode,
                _,
            ) => Self::Real,
            (_, Some(kind)) => Self::Agent(kind),
            (_, None) => Self::Wrapper,
        }
    }

    /// Runs `tick`.
    pub fn run(&mut self, tick: Tick<'_>) -> Result<Ticked, HarnessError> {
        match self {
            Self::Wrapper => wrapper::run(tick),
            Self::Agent(kind) => agent::run(tick, *kind),
            Self::Session(session) => session.run_tick(tick),
            Self::Real => real::run(tick),
            Self::RealSession(session) => session.run_tick(tick),
            Self::RealLoop(session) => session.run_tick(tick),
            Self::Hooks => hooks::run_tick(tick),
        }
    }
}
