//! The command line of `sdd-evals`: run, check, scaffold, list and
//! describe scenario cases. The binary's `main` only captures the process
//! environment into [`Env`] and exits with what [`main_with`] returns.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, Parser, Subcommand};

use crate::bins::{self, BUILD_HINT, Binaries};
use crate::case::{Case, FORMAT_HELP};
use crate::report::{self, Snapshots};
use crate::runner::{self, Options};
use crate::validate::Fixtures;
use crate::{scaffold, schema, suite};

/// Exit statuses of `sdd-evals`.
pub mod exit {
    /// Every case passed (or: the command succeeded).
    pub const OK: u8 = 0;
    /// At least one case failed.
    pub const FAILED: u8 = 1;
    /// Usage error.
    pub const USAGE: u8 = 64;
    /// A case file does not parse or validate.
    pub const BAD_CASE: u8 = 65;
    /// A binary the harness needs is missing.
    pub const UNAVAILABLE: u8 = 69;
    /// A file cannot be written.
    pub const CANT_WRITE: u8 = 73;
}

const AFTER_HELP: &str = "\
Environment:
  SDD_EVALS_SDD_LOOP     the engine binary [default: next to sdd-evals]
  SDD_EVALS_FAKE_SKILL   the fake-skill binary [default: next to sdd-evals]
  SDD_EVALS_MOCK_QMD     the mock-qmd binary [default: next to sdd-evals]
  SDD_EVALS_KEEP=1       keep every sandbox (same as --keep)

Exit status:
  0   every case passed
  1   a case failed (an assertion, an expectation or a snapshot)
  64  usage error
  65  a case file does not parse or validate
  69  a binary is missing (build them with `cargo build --workspace --bins`)
  73  the reports cannot be written

The case format: evals/README.md";

/// Scenario evals for the loop engine.
#[derive(Debug, Parser)]
#[command(name = "sdd-evals", version, about, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run cases against the engine, grade them and compare their
    /// snapshots; writes target/sdd-evals/{grading,benchmark}.json.
    #[command(
        after_help = "Examples:\n  sdd-evals run\n  sdd-evals run evals/loop/c4-pr-budget.yaml --keep\n  sdd-evals run --engine './other-engine --verbose'"
    )]
    Run(RunArgs),
    /// Parse and validate cases without running them.
    Check {
        /// Case files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Scaffold a minimal case under evals/loop/.
    New {
        /// The case id (a-z, 0-9 and -); also the file name.
        name: String,
    },
    /// List the cases.
    List {
        /// Case files or directories [default: evals/]
        paths: Vec<PathBuf>,
    },
    /// Print the case format as JSON Schema (for editors).
    Schema,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Case files or directories [default: evals/]
    pub paths: Vec<PathBuf>,
    /// Run another implementation of the contract: a command line to which
    /// the harness appends `<skill> --loop …`.
    #[arg(long, value_name = "CMD")]
    pub engine: Option<String>,
    /// Print the grading as JSON on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Keep every sandbox directory (its path is printed).
    #[arg(long)]
    pub keep: bool,
    /// Do not compare snapshots (e.g. for an engine whose wording differs).
    #[arg(long)]
    pub no_snapshots: bool,
    /// Where grading.json and benchmark.json go [default: target/sdd-evals]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Under `cargo run` (`cargo evals`) the engine and mock binaries are
    /// rebuilt first, so the suite never runs stale ones; this skips that.
    #[arg(long)]
    pub no_build: bool,
}

/// What the process gives the CLI, gathered once by the binary.
pub struct Env<'a> {
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
    /// The environment variables (a snapshot; nothing else is read).
    pub vars: BTreeMap<String, String>,
    pub cwd: PathBuf,
    /// The running executable (binaries are looked for beside it).
    pub exe: PathBuf,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("cwd", &self.cwd)
            .field("exe", &self.exe)
            .finish_non_exhaustive()
    }
}

/// The nearest directory at or above `start` whose Cargo.toml declares a
/// `[workspace]`.
pub fn find_workspace(start: &Path) -> Option<PathBuf> {
    start.ancestors().find_map(|dir| {
        std::fs::read_to_string(dir.join("Cargo.toml"))
            .ok()
            .filter(|t| t.lines().any(|l| l.trim() == "[workspace]"))
            .map(|_| dir.to_path_buf())
    })
}

fn error(env: &mut Env<'_>, message: &str, help: &str, code: u8) -> u8 {
    let _ = writeln!(env.stderr, "error: {message}");
    let _ = writeln!(env.stderr, "help: {help}");
    code
}

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
        Command::New { name } => {
            match scaffold::new_case(&workspace.join("evals").join("loop"), &name, &fixtures) {
                Ok(path) => {
                    let _ = writeln!(env.stdout, "created {}", path.display());
                    let _ = writeln!(
                        env.stdout,
                        "next: edit it, `sdd-evals check {0}`, then `cargo nextest run -p sdd-harness` and `cargo insta review` to accept its snapshots",
                        path.display()
                    );
                    exit::OK
                }
                Err(e) => error(env, &e.message, &e.help, e.code),
            }
        }
        Command::Check { paths } => {
            let paths = resolve(paths);
            check(env, &paths, &fixtures)
        }
        Command::List { paths } => {
            let paths = resolve(paths);
            list(env, &paths, &fixtures)
        }
        Command::Run(args) => {
            let paths = resolve(args.paths.clone());
            run(env, args, &paths, &workspace, fixtures)
        }
    }
}

fn load(
    env: &mut Env<'_>,
    paths: &[PathBuf],
    fixtures: &Fixtures,
) -> Result<(Vec<Case>, usize), u8> {
    let files = match suite::case_files(&env.cwd, paths) {
        Ok(f) => f,
        Err(e) => {
            return Err(error(
                env,
                &e,
                "give case files or directories that hold them",
                exit::USAGE,
            ));
        }
    };
    let (cases, errors) = suite::load(&files, fixtures);
    for e in &errors {
        let _ = writeln!(env.stderr, "{e}");
    }
    Ok((cases, errors.len()))
}

fn check(env: &mut Env<'_>, paths: &[PathBuf], fixtures: &Fixtures) -> u8 {
    let (cases, bad) = match load(env, paths, fixtures) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    for case in &cases {
        let _ = writeln!(env.stdout, "ok {} ({})", case.path.display(), case.id());
    }
    if bad > 0 {
        let _ = writeln!(env.stderr, "{bad} case file(s) have errors ({FORMAT_HELP})");
        exit::BAD_CASE
    } else {
        exit::OK
    }
}

fn list(env: &mut Env<'_>, paths: &[PathBuf], fixtures: &Fixtures) -> u8 {
    let (cases, bad) = match load(env, paths, fixtures) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let width = cases.iter().map(|c| c.id().len()).max().unwrap_or(2).max(2);
    let _ = writeln!(env.stdout, "{:<width$}  {:>5}  proves", "id", "ticks");
    for case in &cases {
        let _ = writeln!(
            env.stdout,
            "{:<width$}  {:>5}  {} — {}",
            case.id(),
            case.ticks().len(),
            case.proves,
            case.name
        );
    }
    if bad > 0 { exit::BAD_CASE } else { exit::OK }
}

/// `cargo build --workspace --bins` with the profile of the running
/// executable: `cargo run` builds only this package, and a suite run
/// against a stale engine would grade the wrong code. Cargo's own progress
/// is shown; what `cargo run` set for this program is not passed on
/// ([`bins::set_by_cargo_run`]).
fn build_binaries(env: &mut Env<'_>, cargo: &str, workspace: &Path) -> Result<(), String> {
    let release = env.exe.components().any(|c| c.as_os_str() == "release");
    let _ = writeln!(
        env.stderr,
        "building the engine and the mocks ({BUILD_HINT})…"
    );
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--workspace", "--bins"])
        .current_dir(workspace);
    for var in bins::set_by_cargo_run(&env.vars) {
        cmd.env_remove(var);
    }
    if release {
        cmd.arg("--release");
    }
    match cmd.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("`{BUILD_HINT}` failed ({status})")),
        Err(e) => Err(format!("cannot run {cargo}: {e}")),
    }
}

fn run(
    env: &mut Env<'_>,
    args: RunArgs,
    paths: &[PathBuf],
    workspace: &Path,
    fixtures: Fixtures,
) -> u8 {
    if let Some(cargo) = env.vars.get("CARGO").filter(|_| !args.no_build).cloned()
        && let Err(why) = build_binaries(env, &cargo, workspace)
    {
        return error(
            env,
            &why,
            "fix the build, or pass --no-build to use the binaries already built",
            exit::UNAVAILABLE,
        );
    }
    let binaries = match Binaries::find(&env.exe, &env.vars, args.engine.clone()) {
        Ok(b) => b,
        Err(e) => return error(env, &e.to_string(), &e.help(), exit::UNAVAILABLE),
    };
    let (cases, bad) = match load(env, paths, &fixtures) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if bad > 0 {
        return error(
            env,
            &format!("{bad} case file(s) have errors; nothing was run"),
            &format!("fix them (`sdd-evals check` shows the same errors; {FORMAT_HELP})"),
            exit::BAD_CASE,
        );
    }
    let opts = Options {
        fixtures,
        workspace: workspace.to_path_buf(),
        binaries,
        path: env.vars.get("PATH").cloned().unwrap_or_default().into(),
        keep_sandbox: args.keep || env.vars.get("SDD_EVALS_KEEP").is_some_and(|v| v == "1"),
    };
    let snapshots = if args.no_snapshots {
        Snapshots::Skip
    } else {
        Snapshots::Compare
    };
    let started = Instant::now();
    let mut results = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let result = match runner::run(case, &opts) {
            Ok(run) => report::evaluate(case, &run, snapshots),
            Err(e) => report::broken(case.id(), &case.path, &format!("{e}\nhelp: {}", e.help())),
        };
        report::progress(env.stderr, i + 1, cases.len(), &result);
        results.push(result);
    }
    let wall = started.elapsed();
    let out_dir = args
        .out
        .map(|p| env.cwd.join(p))
        .unwrap_or_else(|| workspace.join("target").join("sdd-evals"));
    if args.json {
        let _ = writeln!(env.stdout, "{}", report::grading(&results));
    } else {
        report::table(env.stdout, &results, wall);
    }
    if let Err(e) = report::write_files(&out_dir, &results, wall) {
        return error(
            env,
            &format!("cannot write the reports to {}: {e}", out_dir.display()),
            "pass --out DIR with a writable directory",
            exit::CANT_WRITE,
        );
    }
    let _ = writeln!(
        env.stderr,
        "reports: {} and {}",
        out_dir.join("grading.json").display(),
        out_dir.join("benchmark.json").display()
    );
    if results.iter().all(|r| r.passed) {
        exit::OK
    } else {
        let _ = writeln!(
            env.stderr,
            "help: a snapshot mismatch is reviewed with `cargo nextest run -p sdd-harness` then `cargo insta review`; `--keep` keeps the sandboxes ({BUILD_HINT} rebuilds the binaries)"
        );
        exit::FAILED
    }
}
