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
//! using the library's `lock::acquire`. Workers block on one shared FIFO and
//! the parent writes N bytes into it, so all N wake together. Winners hold
//! the lock until every worker has tried (a second FIFO releases them), so
//! "holders" is exactly the number of processes that believed they held it
//! at the same moment. Exit status 1 if any trial had a double holder.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Instant;

use sdd_loop::files;
use sdd_loop::liveness::{self, Liveness, OsProbe};
use sdd_loop::lock::{self, Identity, LockMode, LockRecord};
use sdd_loop::paths::{Skill, StatePaths};

struct Options {
    procs: usize,
    trials: usize,
    starts: Vec<&'static str>,
    naive: bool,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        procs: 8,
        trials: 1000,
        starts: vec!["empty", "dead"],
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
                    "empty" => vec!["empty"],
                    "dead" => vec!["dead"],
                    "both" => vec!["empty", "dead"],
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
        worker(&args[1..])
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

fn read_byte(fifo: &mut File) -> bool {
    let mut b = [0u8; 1];
    matches!(fifo.read(&mut b), Ok(1))
}

/// The contract's recipe taken literally: read, check the PID, temp-write
/// and rename — atomic, but not exclusive.
fn naive_acquire(paths: &StatePaths, me: Identity) -> bool {
    let free = match std::fs::read(paths.lock()) {
        Err(_) => true,
        Ok(bytes) => match serde_json::from_slice::<LockRecord>(&bytes) {
            Ok(r) => liveness::check(&OsProbe, r.pid, None).is_dead(),
            Err(_) => false,
        },
    };
    if free {
        let record = LockRecord {
            pid: me.pid,
            iteration: 1,
            started_at: "2026-05-09T14:50:00Z".into(),
            skill: "work".into(),
            process_start: me.process_start,
            extra: Default::default(),
        };
        files::write_atomic(
            &paths.lock(),
            serde_json::to_string(&record).unwrap().as_bytes(),
        )
        .expect("naive write");
    }
    free
}

/// One racing process: wait for "go", try the lock, report, wait for
/// "release", drop the lock, report; until the FIFOs close.
fn worker(args: &[String]) -> i32 {
    let root = PathBuf::from(&args[0]);
    let mut go = File::open(&args[1]).expect("open go fifo");
    let mut release = File::open(&args[2]).expect("open release fifo");
    let naive = args.get(3).map(String::as_str) == Some("naive");
    let paths = StatePaths::new(&root, Skill::Work, None);
    let me = Identity::current(&OsProbe);
    let mut out = std::io::stdout().lock();
    while read_byte(&mut go) {
        let (held, naive_held) = if naive {
            (None, naive_acquire(&paths, me))
        } else {
            match lock::acquire(
                &paths,
                &OsProbe,
                me,
                1,
                "2026-05-09T14:50:00Z",
                LockMode::Skip,
            ) {
                Ok(Ok((held, _))) => (Some(held), false),
                Ok(Err(_)) => (None, false),
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "[lock_stress worker] {e}");
                    return 70;
                }
            }
        };
        let _ = writeln!(out, "{}", u8::from(held.is_some() || naive_held));
        let _ = out.flush();
        if !read_byte(&mut release) {
            break;
        }
        if let Some(held) = held {
            held.release().expect("release");
        }
        if naive_held {
            let _ = std::fs::remove_file(paths.lock());
        }
        let _ = writeln!(out, "r");
        let _ = out.flush();
    }
    0
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
}

/// A PID that is certainly dead: a child we spawned and reaped.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("spawn true");
    let pid = child.id();
    child.wait().expect("reap");
    pid
}

fn plant_dead_lock(paths: &StatePaths, pid: &mut u32) {
    if liveness::check(&OsProbe, *pid, None) != Liveness::Dead {
        *pid = dead_pid();
    }
    let record = LockRecord {
        pid: *pid,
        iteration: 1,
        started_at: "2026-05-09T14:00:00Z".into(),
        skill: "work".into(),
        process_start: None,
        extra: Default::default(),
    };
    files::write_atomic(
        &paths.lock(),
        serde_json::to_string(&record).unwrap().as_bytes(),
    )
    .expect("plant lock");
}

struct Workers {
    children: Vec<Child>,
    outputs: Vec<BufReader<ChildStdout>>,
}

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn collect(outputs: &mut [BufReader<ChildStdout>]) -> Vec<String> {
    outputs
        .iter_mut()
        .map(|o| {
            let mut line = String::new();
            o.read_line(&mut line).expect("worker output");
            line.trim().to_owned()
        })
        .collect()
}

fn parent(opts: Options) -> i32 {
    let exe = std::env::current_exe().expect("current exe");
    let mut failed = false;
    for start in &opts.starts {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = tmp.path().join("project");
        let paths = StatePaths::new(&root, Skill::Work, None);
        files::ensure_private_dir(&paths.dir).expect("state dir");
        let (go_path, release_path) = (tmp.path().join("go"), tmp.path().join("release"));
        mkfifo(&go_path);
        mkfifo(&release_path);

        let mut workers = Workers {
            children: Vec::new(),
            outputs: Vec::new(),
        };
        for _ in 0..opts.procs {
            let mut child = Command::new(&exe)
                .arg("--worker")
                .arg(&root)
                .arg(&go_path)
                .arg(&release_path)
                .arg(if opts.naive { "naive" } else { "guarded" })
                .stdout(Stdio::piped())
                .stdin(Stdio::null())
                .spawn()
                .expect("spawn worker");
            workers
                .outputs
                .push(BufReader::new(child.stdout.take().expect("piped")));
            workers.children.push(child);
        }
        let mut go = OpenOptions::new().write(true).open(&go_path).expect("go");
        let mut release = OpenOptions::new()
            .write(true)
            .open(&release_path)
            .expect("release");

        let (mut holders_max, mut double, mut none, mut leftover) =
            (0usize, 0usize, 0usize, 0usize);
        let mut dead = dead_pid();
        let began = Instant::now();
        let burst = vec![b'g'; opts.procs];
        for _ in 0..opts.trials {
            if *start == "dead" {
                plant_dead_lock(&paths, &mut dead);
            }
            go.write_all(&burst).expect("release workers");
            let holders = collect(&mut workers.outputs)
                .iter()
                .filter(|l| l.as_str() == "1")
                .count();
            holders_max = holders_max.max(holders);
            if holders > 1 {
                double += 1;
            }
            if holders == 0 {
                none += 1;
            }
            release.write_all(&burst).expect("release holders");
            collect(&mut workers.outputs);
            if paths.lock().exists() {
                leftover += 1;
                let _ = std::fs::remove_file(paths.lock());
            }
        }
        drop(go);
        drop(release);
        let statuses: Vec<_> = workers
            .children
            .iter_mut()
            .map(|c| c.wait().expect("wait worker"))
            .collect();
        workers.children.clear();
        let _ = writeln!(
            std::io::stdout(),
            "{}start={start} procs={} trials={} holders_max={holders_max} double={double} none={none} leftover={leftover} secs={:.1}",
            if opts.naive { "naive " } else { "" },
            opts.procs,
            opts.trials,
            began.elapsed().as_secs_f64()
        );
        if double > 0 || none > 0 || leftover > 0 || statuses.iter().any(|s| !s.success()) {
            failed = true;
        }
    }
    i32::from(failed)
}
