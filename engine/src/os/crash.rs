//! Named crash points: `SDD_LOOP_CRASH_AT=<name>` makes the engine abort
//! (`std::process::abort`, no unwinding, no cleanup — as close to SIGKILL as
//! a process can do to itself) at that step of the tick, so the crash-sweep
//! tests can prove recovery exact from every step
//! (`docs/src/architecture.md`, "Recovery of a killed tick").
//! `sdd-loop crash-points` prints the list.
//!
//! Pause points hold the engine still instead of killing it, so a test
//! releases several engines from one barrier at the same step — two clones'
//! ticks that have both read the backlog (a review tick: its PRs) and
//! neither has claimed yet (issue 32). `SDD_LOOP_PAUSE_AT=<name>` with `SDD_LOOP_PAUSE_DIR=<dir>`:
//! at that step the engine writes `paused <pid>` into the FIFO `dir/ready`
//! and reads one byte from the FIFO `dir/release`, which the test writes
//! when it lets the engine go — one byte per engine, so one write of N
//! bytes releases N engines at once. The test makes both FIFOs and holds
//! each open for reading and writing, so neither open blocks the engine.
//! A pause whose FIFOs cannot be opened does not pause: it is no crash
//! point, and a tick must not hang on it. Nor does a paused engine outlive
//! SIGINT or SIGTERM: the signal ends the pause as it ends any wait of a
//! tick, and the tick then stops before dispatch, recorded like any
//! interrupted one.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::Duration;

/// How often a paused engine looks whether it was interrupted: its
/// signal handlers only set a flag (the read of its byte would restart
/// after one), so the byte is waited for without blocking.
const PAUSE_POLL: Duration = Duration::from_millis(20);

/// Every crash point, in tick order, with what has happened by then.
pub const POINTS: [(&str, &str); 11] = [
    (
        "after-lock",
        "the lock is held; nothing else has been read or written",
    ),
    (
        "after-gates",
        "state loaded and every gate answered; nothing written yet",
    ),
    (
        "after-commit",
        "repairs, recovered iterations and the first budget write are on disk",
    ),
    (
        "after-journal",
        "the interrupted-iteration journal is written; the skill has not started",
    ),
    ("after-spawn", "the skill is running"),
    (
        "after-agent-usage",
        "--agent: the agent's first streamed usage is journaled; the agent is still running",
    ),
    ("after-skill", "the skill has exited; nothing accounted yet"),
    (
        "after-history",
        "the history line is appended; budget.json not yet rewritten",
    ),
    (
        "after-budget",
        "budget.json is rewritten; the journal is still present",
    ),
    (
        "after-journal-removed",
        "the tick is fully recorded; the report is not yet printed",
    ),
    (
        "before-release",
        "the report is printed; the lock is still held",
    ),
];

/// Crash points inside the wrapper's run of the skill or agent, which an
/// in-session tick (`begin` … `end`) never reaches.
pub const WRAPPER_ONLY: [&str; 3] = ["after-spawn", "after-agent-usage", "after-skill"];

/// Crash points reached only while the engine drives an agent (`--agent`):
/// a tick that runs a skill command passes them by.
pub const AGENT_ONLY: [&str; 1] = ["after-agent-usage"];

/// Every pause point, in tick order, with what has happened by then.
pub const PAUSE_POINTS: [(&str, &str); 1] = [(
    "after-backlog",
    "the backlog (review: the PRs to review) is read; nothing is claimed or written yet",
)];

/// The armed crash point and pause point, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashPoints {
    armed: Option<&'static str>,
    pause: Option<(&'static str, PathBuf)>,
}

impl CrashPoints {
    pub fn none() -> Self {
        Self::default()
    }

    /// Arms `name`; an unknown name is an error listing the known ones.
    pub fn arm(name: &str) -> Result<Self, String> {
        POINTS
            .iter()
            .find(|(p, _)| *p == name)
            .map(|(p, _)| Self {
                armed: Some(p),
                pause: None,
            })
            .ok_or_else(|| {
                format!(
                    "unknown crash point `{name}` (known: {})",
                    POINTS
                        .iter()
                        .map(|(p, _)| *p)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }

    /// Also pauses at `name`, with the FIFOs in `dir`; an unknown name is
    /// an error listing the known ones.
    pub fn pause_at(mut self, name: &str, dir: PathBuf) -> Result<Self, String> {
        let (point, _) = PAUSE_POINTS
            .iter()
            .find(|(p, _)| *p == name)
            .ok_or_else(|| {
                format!(
                    "unknown pause point `{name}` (known: {})",
                    PAUSE_POINTS
                        .iter()
                        .map(|(p, _)| *p)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
        self.pause = Some((point, dir));
        Ok(self)
    }

    /// Waits at `name` until released, if the pause is armed there — or
    /// until `interrupted` says a signal came.
    pub fn pause(&self, name: &'static str, interrupted: &dyn Fn() -> bool) {
        debug_assert!(
            PAUSE_POINTS.iter().any(|(p, _)| *p == name),
            "unlisted pause point {name}"
        );
        let Some((point, dir)) = &self.pause else {
            return;
        };
        if *point != name {
            return;
        }
        let open = |file: &str, write: bool| {
            std::fs::OpenOptions::new()
                .read(!write)
                .write(write)
                .custom_flags(if write {
                    0
                } else {
                    rustix::fs::OFlags::NONBLOCK.bits() as i32
                })
                .open(dir.join(file))
        };
        let (Ok(mut ready), Ok(mut release)) = (open("ready", true), open("release", false)) else {
            return;
        };
        // One write, shorter than PIPE_BUF: engines paused together never
        // interleave their lines.
        let _ = ready.write_all(format!("paused {}\n", std::process::id()).as_bytes());
        loop {
            match release.read(&mut [0u8; 1]) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // The byte, or no writer left to send one.
                Ok(_) | Err(_) => return,
            }
            if interrupted() {
                return;
            }
            std::thread::sleep(PAUSE_POLL);
        }
    }

    /// Aborts the process if `name` is armed.
    pub fn hit(&self, name: &'static str) {
        debug_assert!(
            POINTS.iter().any(|(p, _)| *p == name),
            "unlisted crash point {name}"
        );
        if self.armed == Some(name) {
            std::process::abort();
        }
    }

    /// The listing printed by `sdd-loop crash-points`.
    pub fn listing() -> String {
        let mut text: String = POINTS
            .iter()
            .map(|(p, what)| format!("{p:<22} {what}\n"))
            .collect();
        text.push_str("\nPause points (SDD_LOOP_PAUSE_AT, with SDD_LOOP_PAUSE_DIR):\n");
        for (p, what) in PAUSE_POINTS {
            text.push_str(&format!("{p:<22} {what}\n"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_point_lists_the_known_ones() {
        let err = CrashPoints::arm("after-lunch").unwrap_err();
        assert!(
            err.contains("after-lock") && err.contains("before-release"),
            "{err}"
        );
    }

    #[test]
    fn unarmed_points_do_nothing() {
        let c = CrashPoints::arm("before-release").unwrap();
        c.hit("after-lock");
        CrashPoints::none().hit("before-release");
        assert_eq!(
            CrashPoints::listing().lines().count(),
            POINTS.len() + 2 + PAUSE_POINTS.len()
        );
    }

    /// A pause directory's two FIFOs, `ready` and `release`, each open for
    /// reading and writing (so neither open waits for the other side).
    fn pause_fifos(dir: &std::path::Path) -> (std::fs::File, std::fs::File) {
        let open = |f: &str| {
            let path = dir.join(f);
            rustix::fs::mkfifoat(
                rustix::fs::CWD,
                &path,
                rustix::fs::Mode::from_raw_mode(0o600),
            )
            .unwrap();
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .unwrap()
        };
        (open("ready"), open("release"))
    }

    #[test]
    fn a_paused_engine_says_so_and_waits_for_its_byte() {
        let dir = tempfile::tempdir().unwrap();
        let (mut ready, mut release) = pause_fifos(dir.path());
        let points = CrashPoints::none()
            .pause_at("after-backlog", dir.path().to_path_buf())
            .unwrap();
        let paused = std::thread::spawn(move || points.pause("after-backlog", &|| false));
        let mut line = [0u8; 64];
        let n = ready.read(&mut line).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&line[..n]).trim(),
            format!("paused {}", std::process::id())
        );
        assert!(!paused.is_finished(), "held until its byte comes");
        release.write_all(b"g").unwrap();
        paused.join().unwrap();
        assert!(
            CrashPoints::none()
                .pause_at("lunch", PathBuf::new())
                .is_err()
        );
    }

    #[test]
    fn a_signal_ends_a_pause_and_leaves_the_byte_for_another_engine() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};

        let dir = tempfile::tempdir().unwrap();
        let (mut ready, mut release) = pause_fifos(dir.path());
        let points = CrashPoints::none()
            .pause_at("after-backlog", dir.path().to_path_buf())
            .unwrap();
        let signalled = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&signalled);
        let paused = std::thread::spawn(move || {
            points.pause("after-backlog", &|| flag.load(Ordering::SeqCst));
        });
        let n = ready.read(&mut [0u8; 64]).unwrap();
        assert!(n > 0, "it said it paused");
        signalled.store(true, Ordering::SeqCst);
        paused.join().unwrap();
        release.write_all(b"g").unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(release.read(&mut byte).unwrap(), 1, "no byte taken");
    }
}
