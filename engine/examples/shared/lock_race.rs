//! The lock race shared by `lock_stress` and `reliability`: N real
//! processes released at once against one `.sdd/loop/work.lock`, M trials,
//! counting how many believed they held it at the same moment.
//!
//! Each worker is the calling program re-executed with a hidden flag
//! ([`worker`] is its body) using the library's `lock::acquire`. Workers
//! block on one shared FIFO and the parent writes N bytes into it, so all N
//! wake together. Winners hold the lock until every worker has tried (a
//! second FIFO releases them), so "holders" is exactly the number of
//! processes that held it together. No sleeps: the FIFOs are the clock.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Instant;

use sdd_loop::os::liveness::{self, Liveness, OsProbe};
use sdd_loop::state::files;
use sdd_loop::state::lock::{self, Identity, LockMode, LockRecord};
use sdd_loop::state::paths::{Skill, StatePaths};

/// What the lock file holds when the racers are released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// No lock file.
    Empty,
    /// A lock left by a dead holder, to be reaped.
    Dead,
}

impl Start {
    pub fn name(self) -> &'static str {
        match self {
            Start::Empty => "empty",
            Start::Dead => "dead",
        }
    }
}

/// One race: `procs` processes, `trials` releases, from `start`.
#[derive(Debug, Clone, Copy)]
pub struct Race {
    pub procs: usize,
    pub trials: usize,
    pub start: Start,
    /// Race the contract's unguarded read-then-rename recipe instead.
    pub naive: bool,
}

/// What a race measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outcome {
    /// Most processes holding the lock in one trial.
    pub holders_max: usize,
    /// Trials with two or more holders.
    pub double: usize,
    /// Trials nobody won.
    pub none: usize,
    /// Trials after which the lock file was left behind.
    pub leftover: usize,
    /// Workers that exited unsuccessfully.
    pub failed_workers: usize,
    pub secs: f64,
}

impl Outcome {
    pub fn violations(&self) -> usize {
        self.double + self.none + self.leftover + self.failed_workers
    }
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

/// One racing process (arguments: project root, go FIFO, release FIFO,
/// `naive`|`guarded`): wait for "go", try the lock, report, wait for
/// "release", drop the lock, report; until the FIFOs close.
pub fn worker(args: &[String]) -> i32 {
    let [root, go, release, mode] = args else {
        let _ = writeln!(std::io::stderr(), "[lock worker] expected 4 arguments");
        return 64;
    };
    let mut go = File::open(go).expect("open go fifo");
    let mut release = File::open(release).expect("open release fifo");
    let naive = mode == "naive";
    let paths = StatePaths::new(&PathBuf::from(root), Skill::Work, None);
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
                    let _ = writeln!(std::io::stderr(), "[lock worker] {e}");
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

pub fn mkfifo(path: &Path) {
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

/// The workers of one race; killed and reaped if the race ends early.
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

/// Runs one race with workers started as `exe worker_flag …`.
pub fn race(exe: &Path, worker_flag: &str, race: Race) -> Outcome {
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
    for _ in 0..race.procs {
        let mut child = Command::new(exe)
            .arg(worker_flag)
            .arg(&root)
            .arg(&go_path)
            .arg(&release_path)
            .arg(if race.naive { "naive" } else { "guarded" })
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

    let mut outcome = Outcome::default();
    let mut dead = dead_pid();
    let began = Instant::now();
    let burst = vec![b'g'; race.procs];
    for _ in 0..race.trials {
        if race.start == Start::Dead {
            plant_dead_lock(&paths, &mut dead);
        }
        go.write_all(&burst).expect("release workers");
        let holders = collect(&mut workers.outputs)
            .iter()
            .filter(|l| l.as_str() == "1")
            .count();
        outcome.holders_max = outcome.holders_max.max(holders);
        if holders > 1 {
            outcome.double += 1;
        }
        if holders == 0 {
            outcome.none += 1;
        }
        release.write_all(&burst).expect("release holders");
        collect(&mut workers.outputs);
        if paths.lock().exists() {
            outcome.leftover += 1;
            let _ = std::fs::remove_file(paths.lock());
        }
    }
    drop(go);
    drop(release);
    outcome.failed_workers = workers
        .children
        .iter_mut()
        .map(|c| c.wait().expect("wait worker"))
        .filter(|s| !s.success())
        .count();
    workers.children.clear();
    outcome.secs = began.elapsed().as_secs_f64();
    outcome
}
