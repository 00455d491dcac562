//! The command line of `sdd-loop`: parsing and dispatch. The binary's
//! `main` only gathers the process environment into [`Env`], calls [`run`]
//! and exits with the code it returns.

use std::io::Write;

use clap::{Parser, Subcommand};

use crate::exit;
use crate::schema::{self, SchemaKind};

const ABOUT: &str =
    "The loop engine: one tick of an autonomous coding loop under the ADR-0028 safety contract.";

const LONG_ABOUT: &str = "\
The loop engine: one tick of an autonomous coding loop under the ADR-0028
safety contract — an exclusive lockfile, four budgets, twelve stop
conditions, gates that ask the user, telemetry, and crash resume.

Loop state lives under .sdd/loop/ in the project: {skill}.lock,
{skill}.budget.json and {skill}.history.jsonl (treat-as-secret: 0700/0600).";

/// Command-line interface.
#[derive(Debug, Parser)]
#[command(name = "sdd-loop", version, about = ABOUT, long_about = LONG_ABOUT, after_help = exit::HELP_TABLE)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the JSON Schema of a loop state file or of the skill protocol.
    #[command(after_help = "Example:\n  sdd-loop schema budget > budget.schema.json")]
    Schema {
        /// Which document.
        #[arg(value_enum)]
        kind: SchemaKind,
    },
}

/// What the process gives the engine: output sinks and the environment
/// variables the engine honours, gathered once by the binary.
pub struct Env<'a> {
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env").finish_non_exhaustive()
    }
}

/// Parses `args` (including the program name) and runs the command.
pub fn main_with(args: impl IntoIterator<Item = std::ffi::OsString>, env: &mut Env<'_>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            let code = match err.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    exit::TICK_DONE
                }
                _ => exit::USAGE,
            };
            let rendered = err.render().ansi().to_string();
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
        Command::Schema { kind } => match env.stdout.write_all(schema::render(kind).as_bytes()) {
            Ok(()) => exit::TICK_DONE,
            Err(_) => exit::CANT_WRITE,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: &[&str]) -> (u8, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = {
            let mut env = Env {
                stdout: &mut out,
                stderr: &mut err,
            };
            main_with(
                std::iter::once("sdd-loop")
                    .chain(args.iter().copied())
                    .map(Into::into),
                &mut env,
            )
        };
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn schema_prints_json() {
        let (code, out, _) = call(&["schema", "lock"]);
        assert_eq!(code, 0);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(v["properties"]["pid"].is_object());
    }

    #[test]
    fn usage_errors_exit_64() {
        let (code, _, err) = call(&["schema", "nope"]);
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("nope"));
    }

    #[test]
    fn help_lists_exit_codes() {
        let (code, out, _) = call(&["--help"]);
        assert_eq!(code, 0);
        assert!(out.contains("Exit status:"));
        assert!(out.contains("73  cannot write loop state"));
    }
}
