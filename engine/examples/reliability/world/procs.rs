//! Processes: a tick runs as an engine in a process group of its own
//! ([`spawn`], [`Running`], [`Ran`]), killed as a group and reaped if it is
//! dropped early; its memory is sampled while it runs. Also the process
//! groups a killed engine's skill leaves, this program as their subreaper,
//! and finding this program (re-executed as the wrapped skill) and the engine
//! binary (building it).

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, WaitOptions};

/// Whether any process of group `pgid` still runs (zombies do not count).
pub fn group_alive(pgid: i32) -> bool {
    let Some(group) = Pid::from_raw(pgid).filter(|_| pgid > 1) else {
        return false;
    };
    if rustix::process::test_kill_process_group(group).is_err() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries.flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        fields.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid)
            && !matches!(fields.first(), Some(&"Z") | Some(&"X"))
    })
}

/// Reaps `pid` if it is an exited child of this program — an orphaned
/// skill process this program adopted as the subreaper. Never blocks.
pub fn reap_adopted(pid: i32) {
    if let Some(pid) = Pid::from_raw(pid).filter(|p| p.as_raw_nonzero().get() > 1) {
        let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
    }
}

/// Reaps every exited child of this program. Call only when no tick or
/// worker is running (between families): it would take their statuses.
/// Catches what [`reap_adopted`] cannot name — a guard killed before its
/// skill started leaves no ledger line.
pub fn reap_all_exited() {
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}

/// Makes this program the reaper of the orphans its ticks leave (a killed
/// engine's skill), so they are reaped here rather than left as zombies
/// of an init that may never reap them.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// How a tick ended, what it printed, and the engine's peak memory.
#[derive(Debug)]
pub struct Ran {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// The first [`STDERR_KEEP`] bytes of stderr.
    pub stderr: Vec<u8>,
    /// The engine's `VmHWM` in KiB, as last sampled while it ran.
    pub peak_kib: u64,
    pub secs: f64,
}

impl Ran {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// `exit 3`, `signal 6`.
    pub fn how(&self) -> String {
        match (self.status.code(), self.status.signal()) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("signal {s}"),
            _ => "?".into(),
        }
    }

    pub fn output(&self) -> String {
        format!(
            "{}{}",
            String::from_utf8_lossy(&self.stdout),
            String::from_utf8_lossy(&self.stderr)
        )
    }
}

/// A running tick: the engine leads a process group of its own, killed as
/// a group (and reaped) if the tick is dropped before it was waited for.
#[derive(Debug)]
pub struct Running {
    child: Option<Child>,
    started: Instant,
    peak_kib: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
    readers: Vec<std::thread::JoinHandle<(Vec<u8>, u64)>>,
}

/// Keep at most this much of a tick's stderr (a skill's 100 MB of output
/// is echoed there).
const STDERR_KEEP: usize = 4 << 20;

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn drain(
    mut from: impl Read + Send + 'static,
    keep: usize,
) -> std::thread::JoinHandle<(Vec<u8>, u64)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut dropped = 0u64;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = keep.saturating_sub(kept.len()).min(n);
                    kept.extend_from_slice(&buf[..room]);
                    dropped += (n - room) as u64;
                }
            }
        }
        (kept, dropped)
    })
}

/// Spawns `cmd` as a tick: own process group, stdout and stderr drained
/// by threads, `VmHWM` sampled every 2 ms while it runs.
pub fn spawn(mut cmd: Command) -> Running {
    cmd.process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn sdd-loop");
    let readers = vec![
        drain(child.stdout.take().expect("piped"), usize::MAX),
        drain(child.stderr.take().expect("piped"), STDERR_KEEP),
    ];
    let (peak_kib, done) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let pid = child.id();
    let watcher = {
        let (peak, done) = (Arc::clone(&peak_kib), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(kib) = vm_hwm_kib(pid) {
                    peak.fetch_max(kib, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    Running {
        child: Some(child),
        started: Instant::now(),
        peak_kib,
        done,
        watcher: Some(watcher),
        readers,
    }
}

impl Running {
    /// SIGKILL to the engine alone (its skill is left to the contract).
    pub fn kill_engine(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
        }
    }

    /// Waits for the engine to exit. Its memory is sampled until it has
    /// exited but before it is reaped, so its pid cannot be reused under
    /// the sampler.
    pub fn wait(mut self) -> Ran {
        let mut child = self.child.take().expect("running");
        let pid = Pid::from_raw(child.id() as i32).expect("pid");
        while let Err(e) = rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            if e != rustix::io::Errno::INTR {
                break;
            }
        }
        self.done.store(true, Ordering::Relaxed);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
        let status = child.wait().expect("wait sdd-loop");
        let secs = self.started.elapsed().as_secs_f64();
        let mut outputs = self
            .readers
            .drain(..)
            .map(|r| r.join().expect("output reader"));
        let (stdout, _) = outputs.next().expect("stdout");
        let (stderr, _) = outputs.next().expect("stderr");
        Ran {
            status,
            stdout,
            stderr,
            peak_kib: self.peak_kib.load(Ordering::Relaxed),
            secs,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(mut child) = self.child.take() {
            if let Some(group) = Pid::from_raw(child.id() as i32) {
                let _ = rustix::process::kill_process_group(group, Signal::KILL);
            }
            let _ = child.wait();
        }
    }
}

/// Runs `cmd` as a tick to the end.
pub fn run(cmd: Command) -> Ran {
    spawn(cmd).wait()
}

/// This program, the binary it re-executes as the wrapped skill.
pub fn this_program() -> PathBuf {
    std::env::current_exe().expect("current exe")
}

/// Finds (and builds, with the same profile as this program) the
/// `sdd-loop` binary: `target/<profile>/sdd-loop` next to `examples/`.
pub fn engine_binary(explicit: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(path) = explicit {
        // Ticks run in their project directories.
        return path
            .canonicalize()
            .map_err(|e| format!("--engine {}: {e}", path.display()));
    }
    let exe = this_program();
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot tell the target directory from this program's path")?;
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_owned(),
        Some(other) => other.to_owned(),
        None => return Err("cannot tell the build profile".into()),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    // `cargo run` gives this program the variables of the package it ran
    // (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, …). Passed on, they reach build
    // scripts that watch them (ring's does) and the binary is rebuilt on
    // every run, and again by the next build from a shell.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_MANIFEST_LINKS",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
                "OUT_DIR",
            ]
            .contains(&name.as_ref())
        {
            build.env_remove(name.as_ref());
        }
    }
    let status = build
        // Never this example: rebuilding it would replace the program
        // whose path the skill and the lock workers are started from.
        .args([
            "build",
            "--quiet",
            "-p",
            "sdd-loop",
            "--bin",
            "sdd-loop",
            "--profile",
        ])
        .arg(&profile)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run cargo to build sdd-loop: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build of sdd-loop failed ({status})"));
    }
    let bin = profile_dir.join("sdd-loop");
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!("{} was not built", bin.display()))
    }
}
