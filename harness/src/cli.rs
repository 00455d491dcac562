//! The command line of `sdd-evals`: run, check, scaffold, list and
//! describe scenario cases. The binary's `main` only captures the process
//! environment into [`Env`] and exits with what [`main_with`] returns.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use sdd_loop::paths::Skill;

use crate::benchmark::{self, Benchmark, Failing};
use crate::bins::{self, BUILD_HINT, Binaries};
use crate::case::{Case, FORMAT_HELP};
use crate::coverage::{self, Coverage};
use crate::parallel::{self, Update};
use crate::report::{self, CaseResult, Snapshots};
use crate::runner::{self, Options};
use crate::sandbox::Worlds;
use crate::validate::Fixtures;
use crate::{docs, sandbox, scaffold, schema, suite, viewer};

/// Exit statuses of `sdd-evals`.
pub mod exit {
    /// Every case passed (or: the command succeeded).
    pub const OK: u8 = 0;
    /// At least one case failed.
    pub const FAILED: u8 = 1;
    /// Usage error.
    pub const USAGE: u8 = 64;
    /// A case file (or the `--compare` benchmark) does not parse or validate.
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
  SDD_EVALS_TMPDIR       where sandboxes are made [default: /dev/shm when
                         there is one, else the system's temporary directory]

Exit status:
  0   every case passed
  1   a case failed (an assertion, an expectation or a snapshot), a
      Tier 1 skill's pass rate is under 80%, or `docs` found a
      difference between a SKILL.md and the engine
  64  usage error
  65  a case file (or the --compare benchmark) does not parse or validate
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
    /// snapshots; writes target/sdd-evals/{report.html, grading.json,
    /// benchmark.json, summary.md}.
    #[command(
        after_help = "Examples:\n  sdd-evals run\n  sdd-evals run evals/loop/c4-pr-budget.yaml --keep\n  sdd-evals run evals/loop/my-case.yaml --accept\n  sdd-evals run --compare evals/benchmarks/\n  sdd-evals run --engine './other-engine --verbose'"
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
    /// Compare a plugin's skills/work/SKILL.md and skills/review/SKILL.md
    /// with the engine: loop flags and defaults, gate questions and
    /// options, ADR-0010 and single-PR semantics, and every command, flag
    /// and exit status they name (ADR-0028 confirmations 1–2). Exits 1 on
    /// any difference.
    #[command(
        after_help = "Examples:\n  sdd-evals docs\n  sdd-evals docs --plugin-root ../claude-plugin-sdd --skill review"
    )]
    Docs(DocsArgs),
    /// Map every SPEC-0020 requirement and ADR-0028 confirmation to the
    /// cases that cover it (`covers:`) and their assertion counts; exits 1
    /// when any has no case, naming them.
    #[command(
        after_help = "Examples:\n  sdd-evals coverage\n  sdd-evals coverage --markdown --write evals/README.md"
    )]
    Coverage(CoverageArgs),
}

#[derive(Debug, Args)]
pub struct CoverageArgs {
    /// Case files or directories [default: evals/]
    pub paths: Vec<PathBuf>,
    /// Print the table as Markdown (the form evals/README.md holds).
    #[arg(long)]
    pub markdown: bool,
    /// Replace the Markdown table between the coverage markers of FILE
    /// (implies --markdown).
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DocsArgs {
    /// The plugin checkout holding skills/{work,review}/SKILL.md
    /// [default: this repository]
    #[arg(long, value_name = "DIR")]
    pub plugin_root: Option<PathBuf>,
    /// Check only this skill's document [default: both]
    #[arg(long, value_enum)]
    pub skill: Option<Skill>,
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
    /// Where the reports go [default: target/sdd-evals]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Under `cargo run` (`cargo evals`) the engine and mock binaries are
    /// rebuilt first, so the suite never runs stale ones; this skips that.
    #[arg(long)]
    pub no_build: bool,
    /// How many cases run at once [default: the number of cores]
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Write the snapshots of new cases (those with none stored). A
    /// snapshot that changed is never accepted here: review it with
    /// `cargo insta review`.
    #[arg(long)]
    pub accept: bool,
    /// Show per-skill deltas from an earlier benchmark.json, or from the
    /// newest one in a directory such as evals/benchmarks/.
    #[arg(long, value_name = "BENCHMARK")]
    pub compare: Option<PathBuf>,
    /// Add this run's benchmark to evals/benchmarks/ as
    /// <commit date>-<commit>.json (the committed history).
    #[arg(long)]
    pub record: bool,
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
    /// Whether stderr is a terminal (a live progress line is drawn there).
    pub stderr_is_terminal: bool,
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
                    let path = path.strip_prefix(&env.cwd).unwrap_or(&path).to_path_buf();
                    let _ = writeln!(env.stdout, "created {}", path.display());
                    let _ = writeln!(
                        env.stdout,
                        "next: edit it and `sdd-evals check {0}`; then `sdd-evals run {0} --accept` runs it and writes its snapshots (read them: they become the reference); `cargo nextest run -p sdd-harness` runs it as a test",
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
        Command::Docs(args) => docs_command(env, args, &workspace),
        Command::Coverage(args) => {
            let paths = resolve(args.paths.clone());
            coverage_command(env, &args, &paths, &fixtures)
        }
    }
}

fn docs_command(env: &mut Env<'_>, args: DocsArgs, workspace: &Path) -> u8 {
    let (root, shown) = match &args.plugin_root {
        Some(dir) => (env.cwd.join(dir), dir.clone()),
        None => (workspace.to_path_buf(), pathdiff(workspace, &env.cwd)),
    };
    let cli = docs::engine::Cli::read();
    let skills = match args.skill {
        Some(s) => vec![s],
        None => vec![Skill::Work, Skill::Review],
    };
    let mut differences = 0;
    for skill in skills {
        match docs::check(&root, &shown, skill, &cli) {
            Ok(report) => {
                differences += report.differences.len();
                let _ = env.stdout.write_all(report.render().as_bytes());
            }
            Err(e) => return error(env, &e.to_string(), &e.help(), exit::USAGE),
        }
    }
    if differences == 0 {
        exit::OK
    } else {
        let _ = writeln!(
            env.stderr,
            "{differences} difference(s) between the documents and the engine"
        );
        exit::FAILED
    }
}

fn coverage_command(
    env: &mut Env<'_>,
    args: &CoverageArgs,
    paths: &[PathBuf],
    fixtures: &Fixtures,
) -> u8 {
    let (cases, bad) = match load(env, paths, fixtures) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if bad > 0 {
        return error(
            env,
            &format!("{bad} case file(s) have errors; the map would be incomplete"),
            &format!("fix them (`sdd-evals check` shows the same errors; {FORMAT_HELP})"),
            exit::BAD_CASE,
        );
    }
    let map = Coverage::of(&cases);
    if let Some(file) = &args.write {
        let path = env.cwd.join(file);
        let written = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| coverage::splice(&text, &map.markdown()))
            .and_then(|text| std::fs::write(&path, text).map_err(|e| e.to_string()));
        if let Err(why) = written {
            return error(
                env,
                &format!("cannot update {}: {why}", file.display()),
                &format!(
                    "the file needs the lines `{}` and `{}` around the table",
                    coverage::BEGIN,
                    coverage::END
                ),
                exit::CANT_WRITE,
            );
        }
        let _ = writeln!(env.stdout, "updated {}", file.display());
    } else if args.markdown {
        let _ = env.stdout.write_all(map.markdown().as_bytes());
    } else {
        let _ = env.stdout.write_all(map.text().as_bytes());
    }
    let uncovered = map.uncovered();
    if uncovered.is_empty() {
        return exit::OK;
    }
    let _ = writeln!(
        env.stderr,
        "error: {} requirement(s) have no case: {}",
        uncovered.len(),
        uncovered.join("; ")
    );
    let _ = writeln!(
        env.stderr,
        "help: write a case that proves each and name it in the case's `covers:` ({FORMAT_HELP})"
    );
    exit::FAILED
}

/// `target` relative to `base` when it is under it, else `target`.
fn pathdiff(target: &Path, base: &Path) -> PathBuf {
    match target.strip_prefix(base) {
        Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
        Ok(rel) => rel.to_path_buf(),
        Err(_) => target.to_path_buf(),
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

/// Where sandboxes go: `SDD_EVALS_TMPDIR`, else a RAM file system when
/// there is one ([`sandbox::ram_dir`]).
pub fn sandbox_parent(vars: &BTreeMap<String, String>) -> Option<PathBuf> {
    match vars.get("SDD_EVALS_TMPDIR").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => sandbox::ram_dir(),
    }
}

/// The live progress line (a terminal only): cases done, and the running.
fn progress_line(done: usize, total: usize, running: &[&str]) -> String {
    let mut line = format!("[{done}/{total}] running: {}", running.join(", "));
    if line.chars().count() > 100 {
        line = line.chars().take(99).collect::<String>() + "…";
    }
    format!("\r\x1b[2K{line}")
}

/// Runs the cases, `jobs` at a time, printing each case's lines in suite
/// order as soon as it and every case before it are done.
fn run_cases(
    env: &mut Env<'_>,
    cases: &[Case],
    opts: &Options,
    snapshots: Snapshots,
    jobs: usize,
) -> Vec<CaseResult> {
    let live = env.stderr_is_terminal;
    let stderr = &mut *env.stderr;
    let total = cases.len();
    let results = parallel::run_in_order(
        cases,
        jobs,
        |case| match runner::run(case, opts) {
            Ok(run) => report::evaluate(case, &run, snapshots),
            Err(e) => report::broken(case, &format!("{e}\nhelp: {}", e.help())),
        },
        |update| match update {
            Update::Ready(i, result) => {
                if live {
                    let _ = write!(stderr, "\r\x1b[2K");
                }
                report::progress(stderr, i + 1, total, result);
            }
            Update::Progress {
                done,
                total,
                running,
            } if live && !running.is_empty() => {
                let ids: Vec<&str> = running.iter().map(|i| cases[*i].id()).collect();
                let _ = write!(stderr, "{}", progress_line(done, total, &ids));
                let _ = stderr.flush();
            }
            Update::Progress { .. } => {}
        },
    );
    if live {
        let _ = write!(env.stderr, "\r\x1b[2K");
    }
    results
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
    let compared = match &args.compare {
        None => None,
        Some(path) => match benchmark::load(&env.cwd.join(path)) {
            Ok((old, file)) => {
                let shown = file
                    .strip_prefix(&env.cwd)
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                Some((old, shown))
            }
            Err(e) => return error(env, &e.to_string(), &e.help(), exit::BAD_CASE),
        },
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
        sandbox_parent: sandbox_parent(&env.vars),
        worlds: None,
    };
    // A case alone builds its own world; a suite builds each backlog once
    // (when the cache's directory cannot be made, the sandboxes cannot
    // either, and each case reports that itself).
    let opts = Options {
        worlds: (cases.len() > 1)
            .then(|| Worlds::new(opts.sandbox_parent.as_deref()).ok())
            .flatten()
            .map(Arc::new),
        ..opts
    };
    let snapshots = match (args.no_snapshots, args.accept) {
        (true, _) => Snapshots::Skip,
        (false, true) => Snapshots::AcceptNew,
        (false, false) => Snapshots::Compare,
    };
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        usize::from,
    );
    let started = Instant::now();
    let results = run_cases(env, &cases, &opts, snapshots, jobs);
    let wall = started.elapsed();

    let mut bench = Benchmark::new(&results, wall);
    if args.record {
        match benchmark::revision(workspace) {
            Ok(rev) => bench.recorded = Some(rev),
            Err(why) => {
                return error(
                    env,
                    &format!("--record needs the commit being measured: {why}"),
                    "run it in a git checkout of the workspace",
                    exit::USAGE,
                );
            }
        }
    }
    let old = compared.as_ref().map(|(b, shown)| (b, shown.as_str()));
    if args.json {
        let _ = writeln!(env.stdout, "{}", report::grading(&results));
    } else {
        report::table(env.stdout, &results, wall);
        let _ = writeln!(env.stdout);
        benchmark::table(env.stdout, &bench, old.map(|(b, _)| b));
    }
    let out_dir = args
        .out
        .map(|p| env.cwd.join(p))
        .unwrap_or_else(|| workspace.join("target").join("sdd-evals"));
    let summary = benchmark::summary(&bench, old, &Failing::of(&results));
    let page = viewer::render(
        &results,
        viewer::Run {
            benchmark: &bench,
            compared: old,
        },
    );
    let others = [
        (report::BENCHMARK, bench.to_json()),
        (report::SUMMARY, summary),
        (report::VIEWER, page),
    ];
    let others: Vec<(&str, &str)> = others.iter().map(|(n, t)| (*n, t.as_str())).collect();
    if let Err(e) = report::write_files(&out_dir, &results, &others) {
        return error(
            env,
            &format!("cannot write the reports to {}: {e}", out_dir.display()),
            "pass --out DIR with a writable directory",
            exit::CANT_WRITE,
        );
    }
    let shown = |name: &str| out_dir.join(name).display().to_string();
    let _ = writeln!(
        env.stderr,
        "reports: {} (open it in a browser), {}, {}, {}",
        shown(report::VIEWER),
        shown(report::GRADING),
        shown(report::BENCHMARK),
        shown(report::SUMMARY)
    );
    if args.record {
        match benchmark::record(&workspace.join(benchmark::HISTORY_DIR), &bench) {
            Ok(path) => {
                let _ = writeln!(
                    env.stderr,
                    "recorded: {} (commit it to keep the history)",
                    path.display()
                );
            }
            Err(e) => {
                return error(
                    env,
                    &format!(
                        "cannot record the benchmark in {}: {e}",
                        benchmark::HISTORY_DIR
                    ),
                    "check that the directory is writable",
                    exit::CANT_WRITE,
                );
            }
        }
    }
    let below = bench.below_threshold();
    for line in &below {
        let _ = writeln!(env.stderr, "error: {line}");
    }
    if !below.is_empty() {
        let _ = writeln!(
            env.stderr,
            "help: SPEC-0017 fails the run when a Tier 1 skill's pass rate drops under {}; the failing cases are listed above",
            benchmark::percent(benchmark::THRESHOLD)
        );
    }
    if results.iter().all(|r| r.passed) && below.is_empty() {
        return exit::OK;
    }
    let (missing, changed) = report::snapshot_trouble(&results);
    if missing {
        let _ = writeln!(env.stderr, "help: {}", report::ACCEPT_HELP);
    }
    if changed {
        let _ = writeln!(
            env.stderr,
            "help: a changed snapshot: {}",
            report::REVIEW_HELP
        );
    }
    let _ = writeln!(
        env.stderr,
        "help: `--keep` keeps the sandboxes to look into; {BUILD_HINT} rebuilds the binaries"
    );
    exit::FAILED
}
