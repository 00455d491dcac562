//! What every family shares: the context it is given ([`Ctx`]), the row
//! it reports ([`Row`]), running its trials on the jobs, and saying its
//! problems.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The hidden flag lock-race workers are started with.
pub const LOCK_WORKER: &str = "--lock-worker";
/// The hidden flag the engine runs this program with as its skill.
pub const SKILL: &str = "--skill";

/// What every family is given.
#[derive(Debug)]
pub struct Ctx {
    pub short: bool,
    pub with_properties: bool,
    pub jobs: usize,
    /// The `sdd-loop` binary under test.
    pub engine: PathBuf,
    /// This program.
    pub exe: PathBuf,
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct Row {
    pub family: &'static str,
    pub what: String,
    pub trials: String,
    pub result: String,
    /// `None`: the family measured nothing it could judge (said in `result`).
    pub violations: Option<u64>,
    pub secs: f64,
}

/// Runs `each` over `items` on `jobs` threads.
pub fn parallel<T: Sync>(jobs: usize, items: &[T], each: impl Fn(&T) + Sync) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                    each(item);
                }
            });
        }
    });
}

/// Waits for one `ready` line on `fifo`, at most `bound` (a safety bound,
/// not a clock: the writer normally answers at once). On timeout the
/// waiting reader is released by opening the FIFO for writing.
pub fn wait_ready(fifo: &Path, bound: Duration) -> bool {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read_to_string(path).unwrap_or_default());
    });
    match rx.recv_timeout(bound) {
        Ok(line) => line.trim() == "ready",
        Err(_) => {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                .open(fifo);
            false
        }
    }
}

/// Prints a family's problems to stderr (the table stays one line each).
pub fn report_problems(family: &str, problems: &[String]) {
    let mut err = std::io::stderr().lock();
    for p in problems.iter().take(10) {
        let _ = writeln!(err, "[{family}] {p}");
    }
    if problems.len() > 10 {
        let _ = writeln!(err, "[{family}] … and {} more", problems.len() - 10);
    }
}
