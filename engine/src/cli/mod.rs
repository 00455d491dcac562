//! The command line of `sdd-loop`: parsing, the environment variables the
//! engine honours, and dispatch to the library. The binary's `main` only
//! captures the process environment into [`Env`], calls [`main_with`] and
//! exits with the code it returns; everything here is testable in-process.

mod args;
mod commands;
pub mod doctor;
mod env;
mod gather;
mod hook;
pub mod status;
pub mod statusline;

use std::io::{Read, Write};

use clap::Parser;

use crate::exit;
use crate::os::crash::CrashPoints;
use crate::os::liveness::OsProbe;
use crate::state::paths::Skill;
use crate::state::schema;
pub use args::*;
use commands::{begin_command, end_command, event_command, tick_command};
pub use env::Env;
use env::{clock_from, clock_from_vars, env_redactor, usage};

/// Parses `args` (including the program name) and runs the command.
pub fn main_with(args: impl IntoIterator<Item = std::ffi::OsString>, env: &mut Env<'_>) -> u8 {
    let args: Vec<std::ffi::OsString> = args.into_iter().collect();
    // The skill's guard, started by the engine on every tick, is read
    // without the whole parser.
    if let Some((what, parent)) = args.get(1..).and_then(crate::skill::guard::parse) {
        return crate::skill::guard::run(&what, parent, keeping(env));
    }
    // `sdd-loop statusline -- CMD` skips building the whole parser (what
    // it would parse is the same); `--help` and the rest go through it.
    // The binary itself takes this call earlier, its process replaced by
    // the user's command (`statusline::main_in_place`).
    if args.get(1).is_some_and(|a| a == "statusline") && args.get(2).is_some_and(|a| a == "--") {
        let command = args[3..]
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>();
        return run(
            Cli {
                command: Command::Statusline {
                    command: command.into_iter().map(|c| c.into_owned()).collect(),
                },
            },
            env,
        );
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
                notify_test: args.notify_test,
            };
            let checks = crate::cli::doctor::checks(&inputs);
            crate::cli::doctor::report(&checks, &project, args.json, env.stdout)
        }
        Command::Hook(args) => hook::hook_command(args, env, main_with),
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

/// The claims `status` shows: on the remote ticks claim on (see
/// [`gather::claim_remote`]); none when claims are off.
fn status_claims(env: &Env<'_>, root: &std::path::Path, skill: Skill) -> Option<status::Claims> {
    let repository = gather::repository_at(&env.vars, root);
    let remote = match gather::claim_remote_at(&env.vars, root, "origin", repository.as_deref()) {
        Ok(remote) => remote?,
        Err((message, _)) => {
            return Some(status::Claims {
                remote: "origin".into(),
                read: Err(message),
            });
        }
    };
    let host = gather::host(&env.vars);
    let me = crate::world::claim::Holder {
        clone_id: crate::world::claim::known_clone_id(root, &host),
        host,
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

#[cfg(test)]
mod tests;
