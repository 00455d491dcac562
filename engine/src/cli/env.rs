//! What the process gives the command line ([`Env`]), and what is read
//! from it before a tick has its settings: the clock the environment asks
//! for, the redactor for what is printed first, the usage error.

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crate::exit;
use crate::os::clock::{
    self, Clock, FileClock, FileWall, FixedClock, SimulatedClock, SystemClock, Wall,
};
use crate::skill::runner::Interrupts;

/// What the process gives the engine, gathered once by the binary.
pub struct Env<'a> {
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
    /// The environment variables (a snapshot; the library reads no others).
    pub vars: BTreeMap<String, String>,
    /// The current directory.
    pub cwd: PathBuf,
    /// Standard input, when it is a terminal a person can answer on.
    pub terminal: Option<Box<dyn BufRead + 'a>>,
    /// Standard input, when it is not a terminal (`end --result -`).
    pub stdin: Option<Box<dyn Read + 'a>>,
    /// Signal flags installed by the binary.
    pub interrupts: Option<&'a dyn Interrupts>,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

/// Prints a usage error, redacted: it quotes the flag it refuses.
pub(crate) fn usage(env: &mut Env<'_>, message: &str, help: &str) -> u8 {
    let redactor = env_redactor(&env.vars);
    let _ = writeln!(env.stderr, "error: {}", redactor.redact(message));
    let _ = writeln!(env.stderr, "help: {}", redactor.redact(help));
    exit::USAGE
}

/// The redactor for what is printed before a tick has read CLAUDE.md:
/// credential shapes, the tracker token and secret-named variables.
pub(crate) fn env_redactor(vars: &BTreeMap<String, String>) -> crate::rules::redact::Redactor {
    let mut builder = crate::rules::redact::Redactor::builder().env(vars);
    if let Some(token) = crate::world::tracker::token::from_vars(vars) {
        builder = builder.secret("tracker-token", &token.value);
    }
    if let Some(list) = vars.get(crate::world::notify::ENV_NOTIFY) {
        let urls: Vec<String> = list
            .split(|c: char| c.is_whitespace() || c == ',')
            .map(str::to_owned)
            .collect();
        builder = crate::world::notify::with_secrets(builder, &urls);
    }
    builder.build()
}

const NOW_HELP: &str = "SDD_LOOP_NOW takes an RFC 3339 instant such as 2026-05-09T14:50:00Z";

const NOW_FILE_HELP: &str = "SDD_LOOP_NOW_FILE names a file holding an RFC 3339 instant such as 2026-05-09T14:50:00Z (replace it by rename to move the clock)";

pub(crate) fn clock_from(env: &Env<'_>) -> Result<Arc<dyn Clock>, (String, &'static str)> {
    clock_from_vars(&env.vars)
}

/// The clock `SDD_LOOP_NOW`, `SDD_LOOP_NOW_FILE` and `SDD_LOOP_CLOCK` ask
/// for ([`crate::os::clock`]): real time unless told otherwise. The error
/// is the message and its help line.
pub(crate) fn clock_from_vars(
    vars: &BTreeMap<String, String>,
) -> Result<Arc<dyn Clock>, (String, &'static str)> {
    let var = |k: &str| vars.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let wall = match (var("SDD_LOOP_NOW"), var("SDD_LOOP_NOW_FILE")) {
        (None, None) => Wall::System,
        (Some(v), None) => Wall::Fixed(clock::parse(v).map_err(|e| {
            (
                format!("SDD_LOOP_NOW={v:?} is not an RFC 3339 instant: {e}"),
                NOW_HELP,
            )
        })?),
        (None, Some(path)) => Wall::File(
            FileWall::open(std::path::Path::new(path))
                .map_err(|e| (e.to_string(), NOW_FILE_HELP))?,
        ),
        (Some(_), Some(_)) => {
            return Err((
                "SDD_LOOP_NOW and SDD_LOOP_NOW_FILE are both set".to_owned(),
                "set one: SDD_LOOP_NOW fixes the instant for the whole process, SDD_LOOP_NOW_FILE reads it from a file on every reading",
            ));
        }
    };
    Ok(match (var("SDD_LOOP_CLOCK"), wall) {
        (None | Some("real"), Wall::System) => Arc::new(SystemClock),
        (None | Some("real"), Wall::Fixed(at)) => Arc::new(FixedClock(at)),
        (None | Some("real"), Wall::File(file)) => Arc::new(FileClock(file)),
        (Some("simulated"), wall) => Arc::new(SimulatedClock::reading(wall)),
        (Some(other), _) => {
            return Err((
                format!("SDD_LOOP_CLOCK={other:?} is not a clock"),
                "SDD_LOOP_CLOCK takes real (the default) or simulated (waits take at most 1 ms of real time)",
            ));
        }
    })
}
