//! Lock exclusivity stress: releases N processes at once against one
//! `.sdd/loop/work.lock`, M trials, and counts how many hold it together.
//!
//! The contract's read-then-rename recipe let two or more of 8 racing ticks
//! "win" in 100 of 100 trials; the guarded acquisition must give exactly one
//! holder every time, from an empty start and from a dead holder's lock.
//!
//! ```text
//! cargo run --release -p sdd-loop --example lock_stress -- --procs 8 --trials 1000
//! start=empty procs=8 trials=1000 holders_max=1 double=0 none=0 secs=4.1
//! start=dead procs=8 trials=1000 holders_max=1 double=0 none=0 secs=4.3
//! ```
//!
//! Each worker is a real process (this program re-executed with `--worker`)
//! using the library's `lock::acquire`; how the race is run is in
//! `shared/lock_race.rs`, which `reliability` shares. Exit status 1 if any
//! trial had a double holder.

use std::io::Write;

#[path = "shared/lock_race.rs"]
mod lock_race;

use lock_race::{Race, Start};

struct Options {
    procs: usize,
    trials: usize,
    starts: Vec<Start>,
    naive: bool,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        procs: 8,
        trials: 1000,
        starts: vec![Start::Empty, Start::Dead],
        naive: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--procs" => opts.procs = value()?.parse().map_err(|e| format!("--procs: {e}"))?,
            "--trials" => opts.trials = value()?.parse().map_err(|e| format!("--trials: {e}"))?,
            "--start" => {
                opts.starts = match value()?.as_str() {
                    "empty" => vec![Start::Empty],
                    "dead" => vec![Start::Dead],
                    "both" => vec![Start::Empty, Start::Dead],
                    other => return Err(format!("--start: expected empty|dead|both, got {other}")),
                }
            }
            "--naive" => opts.naive = true,
            "-h" | "--help" => {
                return Err(
                    "usage: lock_stress [--procs N (8)] [--trials M (1000)] [--start empty|dead|both] [--naive]\n\
                     --naive races the contract's unguarded read-then-rename recipe instead, to show what the guard prevents"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if opts.procs < 2 {
        return Err("--procs must be at least 2".into());
    }
    Ok(opts)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = if args.first().map(String::as_str) == Some("--worker") {
        lock_race::worker(&args[1..])
    } else {
        match parse_args(&args) {
            Ok(opts) => parent(opts),
            Err(msg) => {
                let _ = writeln!(std::io::stderr(), "lock_stress: {msg}");
                2
            }
        }
    };
    std::process::exit(code);
}

fn parent(opts: Options) -> i32 {
    let exe = std::env::current_exe().expect("current exe");
    let mut failed = false;
    for start in opts.starts {
        let out = lock_race::race(
            &exe,
            "--worker",
            Race {
                procs: opts.procs,
                trials: opts.trials,
                start,
                naive: opts.naive,
            },
        );
        let _ = writeln!(
            std::io::stdout(),
            "{}start={} procs={} trials={} holders_max={} double={} none={} leftover={} secs={:.1}",
            if opts.naive { "naive " } else { "" },
            start.name(),
            opts.procs,
            opts.trials,
            out.holders_max,
            out.double,
            out.none,
            out.leftover,
            out.secs
        );
        failed |= out.violations() > 0;
    }
    i32::from(failed)
}
