//! `sdd-evals run`: build the binaries when asked, load the cases, run
//! them on N jobs with a live progress line, grade and compare them, and
//! write the reports (and the benchmark, when recording).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::driving::Options;
use crate::driving::parallel::{self, Update};
use crate::driving::{real, runner};
use crate::loading::case::{Case, Driver, FORMAT_HELP};
use crate::loading::fixtures::Fixtures;
use crate::reporting::benchmark::{self, Benchmark, Failing};
use crate::reporting::report::{self, CaseResult, Snapshots};
use crate::reporting::{timings, viewer};
use crate::world::bins::{self, BUILD_HINT, Binaries};
use crate::world::clis::{self, Clis, Places};
use crate::world::sandbox::Worlds;

use super::args::RunArgs;
use super::cases::load;
use super::env::{Env, error, sandbox_parent};
use super::exit;
use super::plugin_evals::Loaded;

/// Cases run at once per core, by default. A case spends most of its wall
/// time waiting — on the processes it starts, on a clock some cases wait
/// on by design (a tracker's retries, a lock's deadline) — so with one
/// job a core the cores sat idle half the run (`--timings`).
const JOBS_PER_CORE: usize = 4;

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
    first: &[usize],
) -> Vec<CaseResult> {
    let live = env.stderr_is_terminal;
    let stderr = &mut *env.stderr;
    let total = cases.len();
    let results = parallel::run_in_order(
        cases,
        jobs,
        first,
        |case| match (real::missing_cli(case, &opts.clis), opts.clis.is_required()) {
            (Some(why), false) => report::skipped(case, &why),
            (Some(why), true) => report::broken(
                case,
                &format!(
                    "{why}\nhelp: --require-agents (or SDD_EVALS_REQUIRE_AGENTS=1) makes a missing CLI a failure; drop it to skip such cases"
                ),
            ),
            (None, _) => match runner::run(case, opts) {
                Ok(run) => report::evaluate(case, &run, snapshots),
                Err(e) => report::broken(case, &format!("{e}\nhelp: {}", e.help())),
            },
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

/// What a run is set up with before its first case starts.
struct Setup {
    cases: Vec<Case>,
    opts: Options,
    snapshots: Snapshots,
    jobs: usize,
    out_dir: PathBuf,
    /// The benchmark `--compare` names, and how to show its path.
    compared: Option<(Benchmark, String)>,
    plugin: Loaded,
    load_took: Duration,
}

pub(super) fn run(
    env: &mut Env<'_>,
    args: RunArgs,
    paths: &[PathBuf],
    workspace: &Path,
    fixtures: Fixtures,
) -> u8 {
    let run_started = Instant::now();
    let setup = match set_up(env, &args, paths, workspace, fixtures) {
        Ok(setup) => setup,
        Err(code) => return code,
    };
    let first = slowest_first(&setup.cases, &setup.out_dir.join(report::BENCHMARK));
    let started = Instant::now();
    let mut results = run_cases(
        env,
        &setup.cases,
        &setup.opts,
        setup.snapshots,
        setup.jobs,
        &first,
    );
    let wall = started.elapsed();
    results.extend(setup.plugin.results.iter().cloned());
    let bench = match benchmark_of(env, &args, workspace, &setup, &results, wall) {
        Ok(bench) => bench,
        Err(code) => return code,
    };
    let old = setup
        .compared
        .as_ref()
        .map(|(b, shown)| (b, shown.as_str()));
    if args.json {
        let _ = writeln!(env.stdout, "{}", report::grading(&results));
    } else {
        report::table(env.stdout, &results, wall);
        let _ = writeln!(env.stdout);
        benchmark::table(env.stdout, &bench, old.map(|(b, _)| b));
    }
    let writing = Instant::now();
    if let Err(code) = write_reports(env, &setup, &results, &bench) {
        return code;
    }
    if args.timings {
        let suite = timings::Suite {
            jobs: setup.jobs,
            load: setup.load_took,
            cases: wall,
            reports: writing.elapsed(),
            total: run_started.elapsed(),
            cpu: process_cpu(),
        };
        let out: &mut dyn Write = if args.json { env.stderr } else { env.stdout };
        let _ = writeln!(out);
        timings::table(out, &results, &suite);
    }
    show_reports(env, &setup.out_dir);
    if args.record
        && let Err(code) = record(env, workspace, &bench)
    {
        return code;
    }
    outcome(env, &results, &bench, &setup.plugin)
}

/// Builds the binaries when asked, finds them, loads the benchmark to
/// compare with, the plugin's evals and the cases, and gathers the run's
/// options; the exit code when one of them fails.
fn set_up(
    env: &mut Env<'_>,
    args: &RunArgs,
    paths: &[PathBuf],
    workspace: &Path,
    fixtures: Fixtures,
) -> Result<Setup, u8> {
    if let Some(cargo) = env.vars.get("CARGO").filter(|_| !args.no_build).cloned()
        && let Err(why) = build_binaries(env, &cargo, workspace)
    {
        return Err(error(
            env,
            &why,
            "fix the build, or pass --no-build to use the binaries already built",
            exit::UNAVAILABLE,
        ));
    }
    let binaries = Binaries::find(&env.exe, &env.vars, args.engine.clone())
        .map_err(|e| error(env, &e.to_string(), &e.help(), exit::UNAVAILABLE))?;
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
            Err(e) => return Err(error(env, &e.to_string(), &e.help(), exit::BAD_CASE)),
        },
    };
    let plugin = Loaded::load(env, &args.plugin_evals)?;
    let loading = Instant::now();
    let (cases, bad) = load(env, paths, &fixtures)?;
    let load_took = loading.elapsed();
    if bad > 0 {
        return Err(error(
            env,
            &format!("{bad} case file(s) have errors; nothing was run"),
            &format!("fix them (`sdd-evals check` shows the same errors; {FORMAT_HELP})"),
            exit::BAD_CASE,
        ));
    }
    let cases = leave_out_real_loops(env, paths, cases);
    let places = Places::from_vars(&env.vars).map_err(|e| {
        error(
            env,
            &e.to_string(),
            &format!("fix {} or unset it to run the pins", clis::VERSIONS_VAR),
            exit::USAGE,
        )
    })?;
    let opts = options(
        env,
        args,
        workspace,
        fixtures,
        binaries,
        &places,
        cases.len(),
    );
    let snapshots = match (args.no_snapshots, args.accept) {
        (true, _) => Snapshots::Skip,
        (false, true) => Snapshots::AcceptNew,
        (false, false) => Snapshots::Compare,
    };
    let jobs = args.jobs.map_or_else(
        || JOBS_PER_CORE * std::thread::available_parallelism().map_or(1, usize::from),
        usize::from,
    );
    let out_dir = args
        .out
        .clone()
        .map(|p| env.cwd.join(p))
        .unwrap_or_else(|| workspace.join("target").join("sdd-evals"));
    Ok(Setup {
        cases,
        opts,
        snapshots,
        jobs,
        out_dir,
        compared,
        plugin,
        load_took,
    })
}

/// What every case of the run is given, from the flags and variables.
fn options(
    env: &Env<'_>,
    args: &RunArgs,
    workspace: &Path,
    fixtures: Fixtures,
    binaries: Binaries,
    places: &Places,
    cases: usize,
) -> Options {
    let sandbox_parent = sandbox_parent(&env.vars);
    Options {
        fixtures,
        workspace: workspace.to_path_buf(),
        binaries,
        path: env.vars.get("PATH").cloned().unwrap_or_default().into(),
        keep_sandbox: args.keep || env.vars.get("SDD_EVALS_KEEP").is_some_and(|v| v == "1"),
        // A case alone builds its own world; a suite builds each backlog
        // once (when the cache's directory cannot be made, the sandboxes
        // cannot either, and each case reports that itself).
        worlds: (cases > 1)
            .then(|| Worlds::new(sandbox_parent.as_deref()).ok())
            .flatten()
            .map(Arc::new),
        sandbox_parent,
        clis: Clis::find(places).required(
            args.require_agents
                || env
                    .vars
                    .get("SDD_EVALS_REQUIRE_AGENTS")
                    .is_some_and(|v| v == "1"),
        ),
    }
}

/// The cases a run of the suite or of a folder runs: all but the
/// `driver: real-loop` ones, each of which waits minutes on Claude Code's
/// own `/loop` timers — they run when named (ci/check names them, beside
/// its other steps). A note says which were left out.
fn leave_out_real_loops(env: &mut Env<'_>, paths: &[PathBuf], cases: Vec<Case>) -> Vec<Case> {
    if paths.iter().any(|p| !env.cwd.join(p).is_dir()) {
        return cases;
    }
    let (run, left): (Vec<Case>, Vec<Case>) = cases
        .into_iter()
        .partition(|c| c.driver != Driver::RealLoop);
    if !left.is_empty() {
        let ids: Vec<&str> = left.iter().map(Case::id).collect();
        let _ = writeln!(
            env.stderr,
            "note: {} real-loop case(s) not run ({}): each waits minutes on Claude Code's own /loop timers; name them to run them (`sdd-evals run evals/loop/*-real-loop.yaml`)",
            left.len(),
            ids.join(", ")
        );
    }
    run
}

/// The run's benchmark: its pass rates, the plugin's arms, and the
/// commit measured when recording.
fn benchmark_of(
    env: &mut Env<'_>,
    args: &RunArgs,
    workspace: &Path,
    setup: &Setup,
    results: &[CaseResult],
    wall: Duration,
) -> Result<Benchmark, u8> {
    let mut bench = Benchmark::new(results, wall);
    // SPEC-0017's threshold is the full suite's: a run of case files named
    // one by one (`cargo evals evals/loop/c4-pr-budget.yaml`) reports its
    // pass rates but is not failed on them — its failing cases fail it.
    let named = args
        .paths
        .iter()
        .filter(|p| !env.cwd.join(p).is_dir())
        .count();
    if named > 0 {
        bench.selected = Some(setup.cases.len());
    }
    crate::reporting::plugin_eval::add_arms(&mut bench, results, &setup.plugin.runs);
    if args.record {
        match benchmark::revision(workspace) {
            Ok(rev) => bench.recorded = Some(rev),
            Err(why) => {
                return Err(error(
                    env,
                    &format!("--record needs the commit being measured: {why}"),
                    "run it in a git checkout of the workspace",
                    exit::USAGE,
                ));
            }
        }
    }
    Ok(bench)
}

/// Writes the reports: each case's, the benchmark, the summary and the
/// viewer.
fn write_reports(
    env: &mut Env<'_>,
    setup: &Setup,
    results: &[CaseResult],
    bench: &Benchmark,
) -> Result<(), u8> {
    let old = setup
        .compared
        .as_ref()
        .map(|(b, shown)| (b, shown.as_str()));
    let mut summary = benchmark::summary(bench, old, &Failing::of(results));
    summary.push_str(&setup.plugin.catches_md());
    let page = viewer::render(
        results,
        viewer::Run {
            benchmark: bench,
            compared: old,
        },
    );
    let others = [
        (report::BENCHMARK, bench.to_json()),
        (report::SUMMARY, summary),
        (report::VIEWER, page),
    ];
    let others: Vec<(&str, &str)> = others.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let out_dir = &setup.out_dir;
    report::write_files(out_dir, results, &others).map_err(|e| {
        error(
            env,
            &format!("cannot write the reports to {}: {e}", out_dir.display()),
            "pass --out DIR with a writable directory",
            exit::CANT_WRITE,
        )
    })
}

/// Where the reports are.
fn show_reports(env: &mut Env<'_>, out_dir: &Path) {
    let shown = |name: &str| out_dir.join(name).display().to_string();
    let _ = writeln!(
        env.stderr,
        "reports: {} (open it in a browser), {}, {}, {}",
        shown(report::VIEWER),
        shown(report::GRADING),
        shown(report::BENCHMARK),
        shown(report::SUMMARY)
    );
}

/// `--record`: the benchmark joins the history.
fn record(env: &mut Env<'_>, workspace: &Path, bench: &Benchmark) -> Result<(), u8> {
    match benchmark::record(&workspace.join(benchmark::HISTORY_DIR), bench) {
        Ok(path) => {
            let _ = writeln!(
                env.stderr,
                "recorded: {} (commit it to keep the history)",
                path.display()
            );
            Ok(())
        }
        Err(e) => Err(error(
            env,
            &format!(
                "cannot record the benchmark in {}: {e}",
                benchmark::HISTORY_DIR
            ),
            "check that the directory is writable",
            exit::CANT_WRITE,
        )),
    }
}

/// The run's exit code, with what failed it and how to look into it.
fn outcome(env: &mut Env<'_>, results: &[CaseResult], bench: &Benchmark, plugin: &Loaded) -> u8 {
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
    if plugin.missed() > 0 {
        let _ = writeln!(
            env.stderr,
            "error: {} answer(s) scripted to break a plugin-evals case were not caught (summary.md lists them)",
            plugin.missed()
        );
    }
    if results.iter().all(|r| r.passed || r.skipped.is_some())
        && below.is_empty()
        && plugin.missed() == 0
    {
        return exit::OK;
    }
    let (missing, changed) = report::snapshot_trouble(results);
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
    // Past its snapshots a case failed on what the engine did: its
    // sandbox is where to look (unless kept already), and stale binaries
    // are one cause.
    let beyond_snapshots: Vec<&CaseResult> = results
        .iter()
        .filter(|r| r.skipped.is_none() && report::failed_beyond_snapshots(r))
        .collect();
    if !beyond_snapshots.is_empty() {
        let keep = if beyond_snapshots.iter().all(|r| r.sandbox.is_some()) {
            String::new()
        } else {
            "`--keep` keeps the sandboxes to look into; ".to_owned()
        };
        let _ = writeln!(
            env.stderr,
            "help: {keep}{BUILD_HINT} rebuilds the binaries (a run outside cargo, or with --no-build, runs them as they are)"
        );
    }
    exit::FAILED
}

/// This process's CPU time and its waited-for children's, from
/// `/proc/self/stat` (`utime stime cutime cstime`, in USER_HZ ticks, 100
/// a second on Linux); `None` elsewhere.
fn process_cpu() -> Option<timings::Cpu> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name, in parentheses, may hold spaces: count after it.
    let fields: Vec<u64> = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let ticks = |n: u64| Duration::from_millis(n * 10);
    match fields[..] {
        [utime, stime, cutime, cstime] => Some(timings::Cpu {
            harness: ticks(utime + stime),
            children: ticks(cutime + cstime),
        }),
        _ => None,
    }
}

/// The order to start `cases` in: the slowest of the last run first (from
/// its `benchmark.json`), so a case that waits on a clock is not left to
/// run alone at the end; a case the last run did not have before them
/// all, since nothing says it is quick. Without a last run: none.
fn slowest_first(cases: &[Case], last: &Path) -> Vec<usize> {
    let Ok((last, _)) = benchmark::load(last) else {
        return Vec::new();
    };
    let walls: HashMap<&str, f64> = last
        .cases
        .iter()
        .map(|c| (c.id.as_str(), c.wall_seconds))
        .collect();
    let mut order: Vec<(usize, Option<f64>)> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| (i, walls.get(c.id()).copied()))
        .collect();
    order.sort_by(|a, b| match (a.1, b.1) {
        (None, None) => a.0.cmp(&b.0),
        (None, Some(_)) => std::cmp::Ordering::Less,
        (Some(_), None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => y.total_cmp(&x).then(a.0.cmp(&b.0)),
    });
    order.into_iter().map(|(i, _)| i).collect()
}
