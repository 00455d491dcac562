//! `sdd-evals ARGS`: parse the arguments, find the workspace, and call
//! the command — each in its own file beside this one.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

use crate::loading::fixtures::Fixtures;
use crate::loading::schema;

use super::agents::agents_command;
use super::args::{Cli, Command};
use super::coverage::coverage_command;
use super::docs::docs_command;
use super::env::{Env, error, find_workspace};
use super::exit;
use super::plugin_evals::plugin_evals_command;
use super::review::review_command;
use super::run::run;
use super::scorecard::scorecard_command;
use super::{cases, scaffold};

/// Parses `args` (with the program name) and runs the command.
pub fn main_with(args: impl IntoIterator<Item = OsString>, env: &mut Env<'_>) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let sink: &mut dyn Write = if code == exit::OK {
                env.stdout
            } else {
                env.stderr
            };
            let _ = sink.write_all(err.render().to_string().as_bytes());
            return code;
        }
    };
    let Some(workspace) = find_workspace(&env.cwd).or_else(|| find_workspace(&env.exe)) else {
        return error(
            env,
            "not inside the workspace: no Cargo.toml with [workspace] above the current directory",
            "run sdd-evals from the repository (it reads fixtures/ and evals/ there)",
            exit::USAGE,
        );
    };
    let fixtures = Fixtures::new(workspace.join("fixtures"));
    let resolve = |paths: Vec<PathBuf>| -> Vec<PathBuf> {
        if paths.is_empty() {
            vec![workspace.join("evals")]
        } else {
            paths
        }
    };
    match cli.command {
        Command::Schema => {
            let _ = writeln!(env.stdout, "{}", schema::render());
            exit::OK
        }
        Command::New { name, dir } => {
            let dir = dir.map_or_else(|| workspace.join("evals").join("loop"), |d| env.cwd.join(d));
            match scaffold::new_case(&dir, &name, &fixtures) {
                Ok(path) => {
                    // `cargo nextest run` runs the cases under evals/ only.
                    let a_test = path.starts_with(workspace.join("evals"));
                    let path = path.strip_prefix(&env.cwd).unwrap_or(&path).to_path_buf();
                    let _ = writeln!(env.stdout, "created {}", path.display());
                    let again = if a_test {
                        "`cargo nextest run -p sdd-harness` runs it as a test".to_owned()
                    } else {
                        format!(
                            "`sdd-evals run {}` runs it again (outside evals/ it is no test of `cargo nextest run`)",
                            path.display()
                        )
                    };
                    let _ = writeln!(
                        env.stdout,
                        "next: edit it and `sdd-evals check {0}`; then `sdd-evals run {0} --accept` runs it and writes its snapshots (read them: they become the reference); {again}",
                        path.display()
                    );
                    exit::OK
                }
                Err(e) => error(env, &e.message, &e.help, e.code),
            }
        }
        Command::Check { paths } => {
            let paths = resolve(paths);
            cases::check(env, &paths, &fixtures)
        }
        Command::List { paths } => {
            let paths = resolve(paths);
            cases::list(env, &paths, &fixtures)
        }
        Command::Run(args) => {
            let paths = resolve(args.paths.clone());
            run(env, args, &paths, &workspace, fixtures)
        }
        Command::Docs(args) => docs_command(env, args, &workspace),
        Command::Review(args) => review_command(env, &args, &workspace),
        Command::Agents(args) => agents_command(env, args),
        Command::PluginEvals(args) => plugin_evals_command(env, args),
        Command::Scorecard(args) => scorecard_command(env, &args, &workspace),
        Command::Coverage(args) => {
            let paths = resolve(args.paths.clone());
            coverage_command(env, &args, &paths, &fixtures)
        }
    }
}
