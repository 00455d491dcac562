//! The CPU one wrapper tick costs: `sdd-loop work --loop` with a skill
//! that does nothing (a shell builtin writes its result), against an
//! in-process mock tracker with a two-issue backlog
//! (`fixtures/backlogs/two-ready-stories.yaml`), the first tick of a
//! run each time (`.sdd/` is removed between ticks, so every tick does the
//! same work). Prints the median user+sys CPU per tick and fails when it
//! is above `--max-ms`.
//!
//! ```text
//! cargo run --release -p sdd-loop --example tick_cpu -- [--ticks N] [--batch B] [--max-ms MS] [--binary PATH]
//! ticks=100 batch=20 cpu_ms_median=12.0 cpu_ms_min=11.5 cpu_ms_max=12.5 wall_ms_median=18.0 max_ms=12 ok
//! ```
//!
//! The figure is the engine's and everything it starts (the skill's guard,
//! `sh`): the children's CPU from `/proc/self/stat` (`cutime` + `cstime`).
//! Those counters are in clock ticks (10 ms), so the CPU is read around
//! batches of `--batch` ticks and the median is over the batches' means —
//! a batch of 10 reads to 1 ms per tick, 20 to 0.5 ms. The binary defaults to
//! the `sdd-loop` built beside this example (the same profile).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sdd_mocks::fixture::Backlog;
use sdd_mocks::tracker::MockTracker;

/// The backlog every tick plans from: two ready stories.
const BACKLOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../fixtures/backlogs/two-ready-stories.yaml"
);

/// A skill that reports it did nothing, without starting a process.
const SKILL: &str =
    r#"printf '{"protocol": 1, "summary": "nothing", "usage": []}' > "$SDD_LOOP_RESULT""#;

struct Options {
    ticks: usize,
    batch: usize,
    max_ms: f64,
    binary: Option<PathBuf>,
}

fn parse_args() -> Result<Options, String> {
    let mut opts = Options {
        ticks: 200,
        batch: 10,
        max_ms: 12.0,
        binary: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--ticks" => opts.ticks = value()?.parse().map_err(|e| format!("--ticks: {e}"))?,
            "--batch" => opts.batch = value()?.parse().map_err(|e| format!("--batch: {e}"))?,
            "--max-ms" => opts.max_ms = value()?.parse().map_err(|e| format!("--max-ms: {e}"))?,
            "--binary" => opts.binary = Some(PathBuf::from(value()?)),
            _ => {
                return Err(
                    "usage: tick_cpu [--ticks N (200)] [--batch B (10)] [--max-ms MS (12)] [--binary PATH]"
                        .into(),
                );
            }
        }
    }
    if opts.batch == 0 || opts.ticks < opts.batch {
        return Err("--ticks must be at least --batch, and --batch above 0".into());
    }
    Ok(opts)
}

/// The CPU this process's waited-for children have used, in clock ticks:
/// `cutime` + `cstime`, fields 16 and 17 of `/proc/self/stat`.
fn children_cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The command name (field 2) may hold spaces; fields after it are plain.
    let after_name = &stat[stat.rfind(')').expect("stat has a command name") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `after_name` starts at field 3.
    let field = |n: usize| fields[n - 3].parse::<u64>().expect("a number");
    field(16) + field(17)
}

/// Clock ticks per second (`getconf CLK_TCK`); 100 on Linux unless told.
fn clock_ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn tick(engine: &Path, project: &Path, tracker: &str) -> Duration {
    let _ = std::fs::remove_dir_all(project.join(".sdd"));
    let started = Instant::now();
    let out = Command::new(engine)
        .args(["work", "--loop"])
        .current_dir(project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", project.join("home"))
        .env("SDD_LOOP_TRACKER_URL", tracker)
        .env("SDD_LOOP_REPO", "acme/app")
        .env("SDD_LOOP_TRACKER_TOKEN", "bench-token")
        .env("SDD_LOOP_SKILL_CMD", SKILL)
        .env("SDD_LOOP_NOW", "2026-05-09T14:00:00Z")
        .stdin(Stdio::null())
        .output()
        .expect("run the engine");
    let wall = started.elapsed();
    assert!(
        out.status.success(),
        "the tick failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    wall
}

#[expect(clippy::print_stdout, reason = "the figures are the program's output")]
#[expect(clippy::print_stderr, reason = "usage errors")]
fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let exe = std::env::current_exe().expect("current_exe");
    let engine = opts
        .binary
        .clone()
        .unwrap_or_else(|| exe.parent().unwrap().parent().unwrap().join("sdd-loop"));
    assert!(
        engine.is_file(),
        "no engine at {} (build it, or pass --binary)",
        engine.display()
    );
    // The ticks run in the project, where a relative path means nothing.
    let engine = engine.canonicalize().expect("the engine's path");
    let backlog = Backlog::load(Path::new(BACKLOG)).expect("the fixture backlog");
    let tracker = MockTracker::builder()
        .backlog(backlog)
        .token("bench-token")
        .start_blocking()
        .expect("mock tracker");
    let project = tempfile::Builder::new()
        .prefix("tick-cpu-")
        .tempdir()
        .expect("temp dir");
    std::fs::create_dir(project.path().join("home")).expect("home");
    let hz = clock_ticks_per_second();
    // One tick first, unmeasured: the page cache and the tracker warm up.
    tick(&engine, project.path(), &tracker.uri());
    let mut cpu = Vec::new();
    let mut wall = Vec::new();
    for _ in 0..opts.ticks / opts.batch {
        let before = children_cpu_ticks();
        for _ in 0..opts.batch {
            wall.push(tick(&engine, project.path(), &tracker.uri()).as_secs_f64() * 1000.0);
        }
        let used = (children_cpu_ticks() - before) as f64 / hz;
        cpu.push(used * 1000.0 / opts.batch as f64);
    }
    let min = cpu.iter().copied().fold(f64::INFINITY, f64::min);
    let max = cpu.iter().copied().fold(0.0, f64::max);
    let cpu_median = median(cpu);
    let ok = cpu_median <= opts.max_ms;
    println!(
        "ticks={} batch={} cpu_ms_median={cpu_median:.1} cpu_ms_min={min:.1} cpu_ms_max={max:.1} wall_ms_median={:.1} max_ms={} {}",
        opts.ticks / opts.batch * opts.batch,
        opts.batch,
        median(wall),
        opts.max_ms,
        if ok { "ok" } else { "OVER" }
    );
    if !ok {
        std::process::exit(1);
    }
}
