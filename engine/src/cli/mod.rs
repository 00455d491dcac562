//! The command line of `sdd-loop`: parsing, the environment variables the
//! engine honours, and dispatch to the library. The binary's `main` only
//! captures the process environment into [`Env`], calls [`main_with`] and
//! exits with the code it returns; everything here is testable in-process.

mod args;
mod commands;
pub mod doctor;
mod gather;
mod hook;
pub mod status;
pub mod statusline;

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;

use crate::exit;
use crate::os::clock::{
    self, Clock, FileClock, FileWall, FixedClock, SimulatedClock, SystemClock, Wall,
};
use crate::os::crash::CrashPoints;
use crate::os::liveness::OsProbe;
use crate::skill::runner::Interrupts;
use crate::state::paths::Skill;
use crate::state::schema;
pub use args::*;
use commands::{begin_command, end_command, event_command, tick_command};

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

/// Parses `args` (including the program name) and runs the command.
pub fn main_with(args: impl IntoIterator<Item = std::ffi::OsString>, env: &mut Env<'_>) -> u8 {
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    // The skill's guard, started by the engine on every tick, is read
    // without the whole parser.
    if let Some((what, parent)) = args.get(1..).and_then(crate::skill::guard::parse) {
        return crate::skill::guard::run(&what, parent, keeping(env));
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            let code = match err.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    exit::TICK_DONE
                }
                _ => exit::USAGE,
            };
            // clap quotes the value it refused, which may be a secret
            // typed in the wrong place (`--answer GATE=<token>`).
            let rendered = env_redactor(&env.vars).apply(&err.render().to_string());
            let sink: &mut dyn Write = if code == exit::TICK_DONE {
                env.stdout
            } else {
                env.stderr
            };
            let _ = sink.write_all(rendered.as_bytes());
            return code;
        }
    };
    run(cli, env)
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
    builder.build()
}

/// Runs a parsed command.
pub fn run(cli: Cli, env: &mut Env<'_>) -> u8 {
    match cli.command {
        Command::Schema { kind } => write_or(env, &schema::render(kind)),
        Command::CrashPoints => write_or(env, &CrashPoints::listing()),
        Command::Statusline { command } => {
            let command = if command.is_empty() {
                env.vars.get(statusline::ENV_CMD).cloned()
            } else {
                Some(command.join(" "))
            };
            let now = clock_from(env).map_or_else(|_| jiff::Timestamp::now(), |c| c.now());
            let mut stdin = env.stdin.take();
            statusline::run(
                command,
                &env.cwd,
                stdin.as_mut().map(|s| s as &mut dyn Read),
                now,
                env.stdout,
                env.stderr,
            )
        }
        Command::Doctor(args) => {
            let project = if args.project == std::path::Path::new(".") {
                env.cwd.clone()
            } else {
                env.cwd.join(&args.project)
            };
            let inputs = crate::cli::doctor::Inputs {
                vars: &env.vars,
                project: project.clone(),
                exe: std::env::current_exe().ok(),
            };
            let checks = crate::cli::doctor::checks(&inputs);
            crate::cli::doctor::report(&checks, &project, args.json, env.stdout)
        }
        Command::Hook(args) => hook::hook_command(args, env),
        Command::Guard {
            parent,
            exec,
            command,
        } => {
            let what = if exec {
                crate::skill::guard::Guarded::Exec(command)
            } else {
                let line: Vec<String> = command
                    .iter()
                    .map(|c| c.to_string_lossy().into_owned())
                    .collect();
                crate::skill::guard::Guarded::Shell(line.join(" "))
            };
            crate::skill::guard::run(&what, parent, keeping(env))
        }
        Command::Status(args) => {
            let root = env.cwd.join(&args.project);
            let clock = match clock_from(env) {
                Ok(c) => c,
                Err((msg, help)) => return usage(env, &msg, help),
            };
            status::run(
                &root,
                args.skill,
                args.budget_file.as_deref(),
                args.json,
                clock.as_ref(),
                &OsProbe,
                status_claims(env, &root, args.skill),
                env.stdout,
                env.stderr,
            )
        }
        Command::Work(cmd) => match cmd.phase {
            None => tick_command(Skill::Work, None, cmd.tick, env),
            Some(Phase::Begin(b)) => begin_command(Skill::Work, None, b.holder, b.tick, env),
            Some(Phase::End(e)) => end_command(Skill::Work, *e, env),
            Some(Phase::Event(e)) => event_command(Skill::Work, e, env),
        },
        Command::Review(cmd) => match cmd.phase {
            None => tick_command(Skill::Review, cmd.pr, cmd.tick, env),
            Some(Phase::Begin(b)) => begin_command(Skill::Review, b.pr, b.holder, b.tick, env),
            Some(Phase::End(e)) => end_command(Skill::Review, *e, env),
            Some(Phase::Event(e)) => event_command(Skill::Review, e, env),
        },
    }
}

fn write_or(env: &mut Env<'_>, text: &str) -> u8 {
    match env.stdout.write_all(text.as_bytes()) {
        Ok(()) => exit::TICK_DONE,
        Err(_) => exit::CANT_WRITE,
    }
}

const NOW_HELP: &str = "SDD_LOOP_NOW takes an RFC 3339 instant such as 2026-05-09T14:50:00Z";

const NOW_FILE_HELP: &str = "SDD_LOOP_NOW_FILE names a file holding an RFC 3339 instant such as 2026-05-09T14:50:00Z (replace it by rename to move the clock)";

pub(crate) fn clock_from(env: &Env<'_>) -> Result<Arc<dyn Clock>, (String, &'static str)> {
    clock_from_vars(&env.vars)
}

/// The claims `status` shows: on the remote ticks claim on (see
/// [`gather::claim_remote`]); none when claims are off.
fn status_claims(env: &Env<'_>, root: &std::path::Path, skill: Skill) -> Option<status::Claims> {
    let git = crate::world::git::GitCli {
        dir: root.to_path_buf(),
    };
    let remote = gather::claim_remote(&env.vars, "origin", &git.remotes())?;
    let me = crate::world::claim::Holder {
        host: gather::host(&env.vars),
        clone: crate::world::claim::clone_name(root),
        pid: std::process::id(),
        session: None,
    };
    let remote = crate::world::claim::Remote {
        dir: root.to_path_buf(),
        remote,
        vars: env.vars.clone(),
        limit: gather::claim_timeout(&env.vars),
    };
    Some(status::Claims::read(&remote, skill, &me))
}

/// What the guard keeps: the tick's claims, when the engine named its
/// journal, on the tick's clock.
fn keeping(env: &Env<'_>) -> Option<crate::skill::guard::Keeping> {
    let keeper = crate::skill::keeper::from_vars(&env.vars)?;
    let clock = clock_from_vars(&env.vars).ok()?;
    Some((keeper, clock))
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

#[cfg(test)]
mod tests;
