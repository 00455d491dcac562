//! One engine tick as a real subprocess: spawn it, capture stdout and
//! stderr, and wait for it to end — or kill it at the fake skill's barrier,
//! or when the case's time runs out. No sleeps anywhere.
//!
//! The barrier: the harness `mkfifo`s a path and opens it read-write (so
//! it never blocks and never sees end-of-file), then gives the path to the
//! fake skill's `barrier` action. The fake skill writes `ready <pid>` and
//! blocks; a reader thread hands the line over, and the harness SIGKILLs
//! the engine at exactly that point, then the fake skill's process group
//! (the engine made one for it). If the engine ends without reaching the
//! barrier, the harness writes a line into the FIFO itself to release its
//! reader. A waiter thread owns the child; the main thread waits on one
//! channel for whichever comes first: the barrier, the exit, the deadline.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::world::procs::Reaper;

/// What to run.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The whole environment (nothing is inherited).
    pub env: Vec<(String, OsString)>,
    pub cwd: PathBuf,
}

/// How the process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Exited(i32),
    Signaled(i32),
    /// Killed when the fake skill reached the barrier.
    KilledAtBarrier,
    /// Killed when the deadline passed.
    TimedOut,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct Ran {
    pub ended: Ended,
    pub stdout: String,
    pub stderr: String,
    pub wall: Duration,
    /// A barrier was planned but the process ended before the skill reached it.
    pub barrier_missed: bool,
}

enum Msg {
    Exited(std::io::Result<ExitStatus>),
    Barrier(String),
    /// The watched text appeared on stdout.
    Seen,
}

/// What the harness does when the fake skill reaches its barrier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AtBarrier {
    /// SIGKILL the process, then the skill's process group.
    #[default]
    Kill,
    /// SIGINT the process, as Ctrl-C would, and let it and the skill go on
    /// (the engine forwards the interrupt; the skill drains).
    Interrupt,
    /// SIGKILL the process only: what it started must end by itself (a
    /// real agent's guard stops it when its engine dies), and the caller
    /// checks that nothing is left ([`Reaper::wait_for_strays`]).
    KillOnly,
    /// Run [`Control::on_barrier`] (the world changes while the tick runs)
    /// and let the process go on: the skill stays blocked at its barrier
    /// until something stops it.
    Continue,
}

/// What the harness does to the world at the barrier (`AtBarrier::Continue`).
pub struct OnBarrier(pub Box<dyn FnOnce() + Send>);

impl std::fmt::Debug for OnBarrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnBarrier(..)")
    }
}

/// How a run is steered while it goes.
#[derive(Debug, Default)]
pub struct Control {
    /// The barrier FIFO, opened by [`make_fifo`].
    pub barrier: Option<std::fs::File>,
    pub at_barrier: AtBarrier,
    /// SIGKILL this pid as soon as the process prints this text on stdout.
    pub release: Option<(String, u32)>,
    /// Run at the barrier under `AtBarrier::Continue`.
    pub on_barrier: Option<OnBarrier>,
}

fn reader(
    pipe: impl Read + Send + 'static,
    watch: Option<(String, mpsc::Sender<Msg>)>,
) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        let mut watch = watch;
        loop {
            let start = buf.len();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if let Some((text, tx)) = &watch
                        && String::from_utf8_lossy(&buf[start..]).contains(text.as_str())
                    {
                        let _ = tx.send(Msg::Seen);
                        watch = None;
                    }
                }
            }
        }
        buf
    })
}

/// Makes the FIFO at `path` and opens it read-write.
pub fn make_fifo(path: &Path) -> std::io::Result<std::fs::File> {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )?;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
}

/// Runs `inv` until it ends, the barrier FIFO (if any) says `ready`, or
/// `deadline` passes.
pub fn run(
    inv: &Invocation,
    control: Control,
    deadline: Instant,
    reaper: &mut Reaper,
) -> std::io::Result<Ran> {
    let Control {
        barrier,
        at_barrier,
        release,
        mut on_barrier,
    } = control;
    let started = Instant::now();
    let mut child = Command::new(&inv.program)
        .args(&inv.args)
        .env_clear()
        .envs(inv.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&inv.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    let watched = release.as_ref().map(|(text, _)| (text.clone(), tx.clone()));
    let out = child.stdout.take().map(|p| reader(p, watched));
    let err = child.stderr.take().map(|p| reader(p, None));
    let waiter = {
        let tx = tx.clone();
        thread::spawn(move || {
            let _ = tx.send(Msg::Exited(child.wait()));
        })
    };
    let mut waker = None;
    let fifo_reader = match barrier {
        None => None,
        Some(fifo) => {
            waker = Some(fifo.try_clone()?);
            let tx = tx.clone();
            Some(thread::spawn(move || {
                let mut line = String::new();
                let _ = BufReader::new(fifo).read_line(&mut line);
                let _ = tx.send(Msg::Barrier(line));
            }))
        }
    };
    drop(tx);

    let at_barrier_do = at_barrier;
    let mut at_barrier = false;
    let mut reached = false;
    let mut timed_out = false;
    let status = loop {
        let msg = if timed_out {
            rx.recv().ok()
        } else {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(msg) => Some(msg),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    timed_out = true;
                    Reaper::kill(pid);
                    reaper.sweep();
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => None,
            }
        };
        match msg {
            Some(Msg::Barrier(line)) if !at_barrier && !reached && line.starts_with("ready") => {
                reached = true;
                match at_barrier_do {
                    AtBarrier::Kill => {
                        at_barrier = true;
                        // Freeze the skill first, so the engine's death
                        // (which its guard turns into a SIGTERM) cannot let
                        // it drain and finish: the crash is exactly here.
                        let skill = line
                            .split_whitespace()
                            .nth(1)
                            .and_then(|p| p.parse::<u32>().ok());
                        if let Some(skill) = skill {
                            Reaper::freeze_group_of(skill);
                        }
                        Reaper::kill(pid);
                        if let Some(skill) = skill {
                            reaper.kill_group_of(skill);
                        }
                        reaper.sweep();
                    }
                    AtBarrier::Interrupt => Reaper::interrupt(pid),
                    AtBarrier::KillOnly => {
                        at_barrier = true;
                        Reaper::kill(pid);
                    }
                    AtBarrier::Continue => {
                        if let Some(OnBarrier(change)) = on_barrier.take() {
                            change();
                        }
                    }
                }
            }
            Some(Msg::Barrier(_)) => {}
            Some(Msg::Seen) => {
                if let Some((_, holder)) = &release {
                    Reaper::kill(*holder);
                }
            }
            Some(Msg::Exited(status)) => break status?,
            None => {
                return Err(std::io::Error::other(
                    "the engine's waiter thread ended without a status",
                ));
            }
        }
    };
    let barrier_missed = waker.is_some() && !reached;
    if let Some(mut waker) = waker
        && !reached
    {
        let _ = waker.write_all(b"released: the engine ended first\n");
    }
    let _ = waiter.join();
    if let Some(h) = fifo_reader {
        let _ = h.join();
    }
    let text = |h: Option<thread::JoinHandle<Vec<u8>>>| {
        h.and_then(|h| h.join().ok())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    let ended = if timed_out {
        Ended::TimedOut
    } else if at_barrier {
        Ended::KilledAtBarrier
    } else if let Some(code) = status.code() {
        Ended::Exited(code)
    } else {
        Ended::Signaled(status.signal().unwrap_or(0))
    };
    Ok(Ran {
        ended,
        stdout: text(out),
        stderr: text(err),
        wall: started.elapsed(),
        barrier_missed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, dir: &Path) -> Invocation {
        Invocation {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            cwd: dir.to_path_buf(),
        }
    }

    /// A FIFO nobody writes to: opening it for reading blocks for good.
    fn blocker(dir: &Path) -> PathBuf {
        let path = dir.join("never.fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &path,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        path
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(30)
    }

    #[test]
    fn captures_output_and_status() {
        let dir = tempfile::tempdir().unwrap();
        let mut reaper = Reaper::new("spawn-test-status");
        let ran = run(
            &sh("echo out; echo err >&2; exit 3", dir.path()),
            Control::default(),
            far(),
            &mut reaper,
        )
        .unwrap();
        assert_eq!(ran.ended, Ended::Exited(3));
        assert_eq!(
            (ran.stdout.as_str(), ran.stderr.as_str()),
            ("out\n", "err\n")
        );
    }

    #[test]
    fn kills_at_the_barrier_without_sleeping() {
        let dir = tempfile::tempdir().unwrap();
        let fifo_path = dir.path().join("b.fifo");
        let fifo = make_fifo(&fifo_path).unwrap();
        let mut reaper = Reaper::new("spawn-test-barrier");
        // The "skill" announces itself, then blocks opening a FIFO that
        // never gets a writer.
        let script = format!(
            "echo before; echo \"ready $$\" > {}; read never < {}",
            fifo_path.display(),
            blocker(dir.path()).display()
        );
        let control = Control {
            barrier: Some(fifo),
            ..Control::default()
        };
        let ran = run(&sh(&script, dir.path()), control, far(), &mut reaper).unwrap();
        assert_eq!(ran.ended, Ended::KilledAtBarrier);
        assert_eq!(ran.stdout, "before\n");
        assert!(!ran.barrier_missed);
    }

    #[test]
    fn a_missed_barrier_releases_the_reader() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = make_fifo(&dir.path().join("b.fifo")).unwrap();
        let mut reaper = Reaper::new("spawn-test-missed");
        let control = Control {
            barrier: Some(fifo),
            ..Control::default()
        };
        let ran = run(&sh("exit 0", dir.path()), control, far(), &mut reaper).unwrap();
        assert_eq!(ran.ended, Ended::Exited(0));
        assert!(ran.barrier_missed);
    }

    #[test]
    fn the_deadline_kills() {
        let dir = tempfile::tempdir().unwrap();
        let mut reaper = Reaper::new("spawn-test-deadline");
        let script = format!("read never < {}", blocker(dir.path()).display());
        let ran = run(
            &sh(&script, dir.path()),
            Control::default(),
            Instant::now(),
            &mut reaper,
        )
        .unwrap();
        assert_eq!(ran.ended, Ended::TimedOut);
    }
}
