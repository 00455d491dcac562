//! Reliability: every claim the engine makes about surviving the real
//! world, turned into a measurement — one command, one table, exit status
//! 1 if any family saw a violation.
//!
//! ```text
//! cargo run --release -p sdd-loop --example reliability -- --with-properties  # docs/src/reliability.md
//! cargo run -p sdd-loop --example reliability -- --short                      # CI: under a minute
//! ```
//!
//! | family | what it does |
//! |---|---|
//! | lock | N processes released at once on one lock (`shared/lock_race.rs`) |
//! | race | N ticks started at once on one project: one history line each (`race.rs`) |
//! | crash sweep | every crash point × seeds × plain/`--resume` recovery (`crash.rs`) |
//! | orphans | the engine SIGKILLed mid-skill, the next tick started at once (`orphans.rs`) |
//! | torn tail | a history cut at every byte of its last line (`torn.rs`) |
//! | property tests | the proptest suites, run or counted (`properties.rs`) |
//! | secret leaks | secrets planted everywhere a tick reads, searched for everywhere it writes (`leaks.rs`) |
//! | faults | tracker and skill failures: outcome and the engine's peak memory (`faults.rs`) |
//!
//! Every tick is a real `sdd-loop` process (built by this program with
//! its own profile) against a loopback tracker, running a wrapped skill
//! that is this program re-executed with `--skill` (`skill.rs`). Processes
//! wait on FIFOs and exit statuses, never on sleeps; every process group
//! started is killed and reaped when its family ends, even on failure.
//! Flags: `--short`, `--with-properties`, `--only FAMILY` (repeatable),
//! `--jobs N` (worlds run at once, default 2), `--engine PATH`.

use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::time::Instant;

#[path = "../shared/lock_race.rs"]
mod lock_race;

mod common;
mod crash;
mod faults;
mod leaks;
mod lock;
mod orphans;
mod properties;
mod race;
mod skill;
mod torn;
mod world;

#[path = "../shared/split_mix.rs"]
mod split_mix;
pub use split_mix::SplitMix;

pub use common::{Ctx, LOCK_WORKER, Row, SKILL, parallel, report_problems, wait_ready};

/// A family: one row, timed whole, or several rows that carry their own
/// times.
#[derive(Clone, Copy)]
enum Family {
    One(fn(&Ctx) -> Row),
    Many(fn(&Ctx) -> Vec<Row>),
}

const FAMILIES: [(&str, Family); 8] = [
    ("lock", Family::One(lock::run)),
    ("race", Family::One(race::run)),
    ("crash", Family::One(crash::run)),
    ("orphans", Family::One(orphans::run)),
    ("torn", Family::One(torn::run)),
    ("properties", Family::One(properties::run)),
    ("leaks", Family::One(leaks::run)),
    ("faults", Family::Many(faults::run)),
];

struct Options {
    short: bool,
    with_properties: bool,
    only: Vec<String>,
    jobs: usize,
    engine: Option<PathBuf>,
}

const USAGE: &str = "usage: reliability [--short] [--with-properties] [--only FAMILY]... [--jobs N (2)] [--engine PATH]\n\
families: lock, race, crash, orphans, torn, properties, leaks, faults";

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        short: false,
        with_properties: false,
        only: Vec::new(),
        jobs: 2,
        engine: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--short" => opts.short = true,
            "--with-properties" => opts.with_properties = true,
            "--only" => {
                let name = value()?;
                if !FAMILIES.iter().any(|(n, _)| n == name) {
                    return Err(format!("--only: unknown family {name}\n{USAGE}"));
                }
                opts.only.push(name.clone());
            }
            "--jobs" => opts.jobs = value()?.parse().map_err(|e| format!("--jobs: {e}"))?,
            "--engine" => opts.engine = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(opts)
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| family | what | trials | result | violations | seconds |\n|---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.1} |\n",
            r.family,
            cell(&r.what),
            cell(&r.trials),
            cell(&r.result),
            r.violations
                .map_or_else(|| "not run".to_owned(), |v| v.to_string()),
            r.secs
        ));
    }
    out
}

/// Runs one family; a panic in it (the program's own failure) is a row
/// with one violation, so the table is still printed.
fn run_family(name: &'static str, family: Family, ctx: &Ctx) -> Vec<Row> {
    let began = Instant::now();
    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| match family {
        Family::One(f) => {
            let mut row = f(ctx);
            row.secs = began.elapsed().as_secs_f64();
            vec![row]
        }
        Family::Many(f) => f(ctx),
    }));
    ran.unwrap_or_else(|panic| {
        let msg = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "panic".into());
        vec![Row {
            family: name,
            what: "—".into(),
            trials: "—".into(),
            result: format!("this program itself failed: {msg}"),
            violations: Some(1),
            secs: began.elapsed().as_secs_f64(),
        }]
    })
}

fn parent(opts: Options) -> i32 {
    world::become_subreaper();
    let engine = match world::engine_binary(opts.engine) {
        Ok(e) => e,
        Err(msg) => {
            let _ = writeln!(std::io::stderr(), "error: {msg}");
            return 2;
        }
    };
    let ctx = Ctx {
        short: opts.short,
        with_properties: opts.with_properties,
        jobs: opts.jobs,
        engine,
        exe: world::this_program(),
    };
    let began = Instant::now();
    let mut rows = Vec::new();
    for (name, family) in FAMILIES {
        if opts.only.is_empty() || opts.only.iter().any(|o| o == name) {
            let _ = writeln!(std::io::stderr(), "reliability: running {name}…");
            rows.extend(run_family(name, family, &ctx));
            world::reap_all_exited();
        }
    }
    let violations: u64 = rows.iter().filter_map(|r| r.violations).sum();
    let families = |judged: bool| {
        let mut names: Vec<&str> = rows
            .iter()
            .filter(|r| r.violations.is_some() == judged)
            .map(|r| r.family)
            .collect();
        names.dedup();
        names
    };
    let (judged, not_run) = (families(true), families(false));
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{}", table(&rows));
    let _ = writeln!(
        out,
        "\n{} mode: {violations} violations in {} families{}; {:.0} s in all{}",
        if ctx.short { "short" } else { "full" },
        judged.len(),
        if not_run.is_empty() {
            String::new()
        } else {
            format!(" ({} not run)", not_run.join(", "))
        },
        began.elapsed().as_secs_f64(),
        if violations == 0 { "" } else { " — FAILED" }
    );
    i32::from(violations > 0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some(LOCK_WORKER) => lock_race::worker(&args[1..]),
        Some(SKILL) => skill::run(),
        _ => match parse_args(&args) {
            Ok(opts) => parent(opts),
            Err(msg) => {
                let _ = writeln!(std::io::stderr(), "reliability: {msg}");
                2
            }
        },
    };
    std::process::exit(code);
}
