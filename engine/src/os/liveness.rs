//! PID liveness: the sole authority on whether a lock's holder is still
//! running (ADR-0028, "Concurrency model").
//!
//! `kill(pid, 0)` decides: success or `EPERM` means the process exists
//! (alive — we merely lack permission to signal it), `ESRCH` means it is
//! gone (dead — reap), and any other error is *ambiguous*, which the
//! contract treats as alive with a one-line warning. Worktrees and team
//! membership are never consulted.
//!
//! Two refinements the contract's prose leaves open:
//! - a PID is recycled by the kernel; a lock records its holder's process
//!   start time, and a live process whose start time differs is a different
//!   process, so the recorded holder is dead ([`Liveness::Recycled`]);
//! - an exited but unreaped process (a zombie) still answers `kill(pid, 0)`;
//!   it can hold nothing, so it counts as dead.
//!
//! The OS is behind the [`ProcessProbe`] seam so every outcome is testable.

use std::fmt;

use rustix::io::Errno;
use rustix::process::{Pid, test_kill_process};

/// The raw answer of `kill(pid, 0)` (plus the zombie check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignalZero {
    /// The call succeeded: a process with this PID exists.
    Delivered,
    /// `EPERM`: the process exists but belongs to someone else.
    PermissionDenied,
    /// `ESRCH`: no such process.
    NoSuchProcess,
    /// The process has exited and waits to be reaped.
    Zombie,
    /// Any other failure, with its description.
    Failed(String),
}

/// The operating system's process table, as far as the lock needs it.
pub trait ProcessProbe: Send + Sync + fmt::Debug {
    /// `kill(pid, 0)`.
    fn signal_zero(&self, pid: u32) -> SignalZero;
    /// An opaque value that differs between two processes that had the
    /// same PID (on Linux, field 22 of `/proc/{pid}/stat`).
    fn start_time(&self, pid: u32) -> Option<u64>;
    /// The parent's PID and the process's command name, where the platform
    /// tells (Linux: `/proc/{pid}/stat`); `None` elsewhere.
    fn parent(&self, _pid: u32) -> Option<(u32, String)> {
        None
    }
    /// Whether any process of group `pgid` is still running.
    fn group_alive(&self, _pgid: u32) -> bool {
        false
    }
    /// Sends `signal` to process group `pgid` (never group 0 or 1).
    fn signal_group(&self, _pgid: u32, _signal: GroupSignal) {}
}

/// What [`ProcessProbe::signal_group`] sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupSignal {
    /// SIGTERM: finish up.
    Term,
    /// SIGKILL.
    Kill,
}

/// The verdict on a recorded holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    Dead,
    /// The PID is in use by a process that started at another time.
    Recycled {
        recorded: u64,
        actual: u64,
    },
    /// The probe could not tell; treated as alive.
    Ambiguous {
        detail: String,
    },
}

impl Liveness {
    /// Whether the lock may be reaped.
    pub fn is_dead(&self) -> bool {
        matches!(self, Liveness::Dead | Liveness::Recycled { .. })
    }
}

/// Classifies the holder `pid` (with its recorded start time, if the lock
/// carries one).
pub fn check(probe: &dyn ProcessProbe, pid: u32, recorded_start: Option<u64>) -> Liveness {
    // Never let a recorded 0 or a value that wraps negative reach kill(2):
    // kill(0, 0) and kill(-n, 0) address whole process groups.
    if pid == 0 || pid > i32::MAX as u32 {
        return Liveness::Ambiguous {
            detail: format!("pid {pid} is not a valid process id"),
        };
    }
    match probe.signal_zero(pid) {
        SignalZero::Delivered | SignalZero::PermissionDenied => {
            match (recorded_start, probe.start_time(pid)) {
                (Some(recorded), Some(actual)) if recorded != actual => {
                    Liveness::Recycled { recorded, actual }
                }
                _ => Liveness::Alive,
            }
        }
        SignalZero::NoSuchProcess | SignalZero::Zombie => Liveness::Dead,
        SignalZero::Failed(detail) => Liveness::Ambiguous { detail },
    }
}

/// The real process table.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsProbe;

impl OsProbe {
    /// Whether every member of group `pgid` that /proc shows is a zombie
    /// (an exited process its parent has not reaped yet).
    fn group_zombie(pgid: u32) -> bool {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return false;
        };
        let mut members = 0;
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Some(stat) = Self::stat(pid) else {
                continue;
            };
            let fields = Self::fields(&stat);
            if fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) {
                members += 1;
                if !matches!(fields.first(), Some(&"Z") | Some(&"X")) {
                    return false;
                }
            }
        }
        members > 0
    }

    fn stat(pid: u32) -> Option<String> {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()
    }

    /// Fields after the command name, which may itself contain spaces and
    /// parentheses; the last `)` ends it. Index 0 is the state (field 3).
    fn fields(stat: &str) -> Vec<&str> {
        stat.rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default()
    }
}

impl ProcessProbe for OsProbe {
    fn signal_zero(&self, pid: u32) -> SignalZero {
        let Some(target) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            return SignalZero::Failed(format!("pid {pid} is out of range"));
        };
        match test_kill_process(target) {
            Ok(()) => {
                let zombie = Self::stat(pid)
                    .map(|s| matches!(Self::fields(&s).first(), Some(&"Z") | Some(&"X")))
                    .unwrap_or(false);
                if zombie {
                    SignalZero::Zombie
                } else {
                    SignalZero::Delivered
                }
            }
            Err(Errno::PERM) => SignalZero::PermissionDenied,
            Err(Errno::SRCH) => SignalZero::NoSuchProcess,
            Err(other) => SignalZero::Failed(other.to_string()),
        }
    }

    fn start_time(&self, pid: u32) -> Option<u64> {
        let stat = Self::stat(pid)?;
        Self::fields(&stat).get(19)?.parse().ok()
    }

    fn group_alive(&self, pgid: u32) -> bool {
        let Some(group) = i32::try_from(pgid)
            .ok()
            .filter(|g| *g > 1)
            .and_then(Pid::from_raw)
        else {
            return false;
        };
        // Zombies answer too, but a group of zombies is gone in all that
        // matters; they are reaped by their parents. Reaped between the
        // two looks (no member left in /proc), it answers no more: asked
        // again, so a group that just went is never taken for a live one.
        let answers = || rustix::process::test_kill_process_group(group).is_ok();
        answers() && !Self::group_zombie(pgid) && answers()
    }

    fn signal_group(&self, pgid: u32, signal: GroupSignal) {
        if let Some(group) = i32::try_from(pgid)
            .ok()
            .filter(|g| *g > 1)
            .and_then(Pid::from_raw)
        {
            let sig = match signal {
                GroupSignal::Term => rustix::process::Signal::TERM,
                GroupSignal::Kill => rustix::process::Signal::KILL,
            };
            let _ = rustix::process::kill_process_group(group, sig);
        }
    }

    fn parent(&self, pid: u32) -> Option<(u32, String)> {
        let stat = Self::stat(pid)?;
        let name = stat.split_once('(')?.1.rsplit_once(')')?.0.to_owned();
        let ppid = Self::fields(&stat).get(1)?.parse().ok()?;
        Some((ppid, name))
    }
}

/// This process's PID and start time, as a lock records them.
pub fn current_process(probe: &dyn ProcessProbe) -> (u32, Option<u64>) {
    let pid = std::process::id();
    (pid, probe.start_time(pid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[derive(Debug)]
    struct Fake(SignalZero, Option<u64>);

    impl ProcessProbe for Fake {
        fn signal_zero(&self, _: u32) -> SignalZero {
            self.0.clone()
        }
        fn start_time(&self, _: u32) -> Option<u64> {
            self.1
        }
    }

    #[test]
    fn delivered_is_alive() {
        assert_eq!(
            check(&Fake(SignalZero::Delivered, Some(7)), 42, Some(7)),
            Liveness::Alive
        );
    }

    #[test]
    fn eperm_is_alive() {
        assert_eq!(
            check(&Fake(SignalZero::PermissionDenied, None), 42, None),
            Liveness::Alive
        );
    }

    #[test]
    fn esrch_is_dead() {
        let verdict = check(&Fake(SignalZero::NoSuchProcess, None), 42, Some(7));
        assert_eq!(verdict, Liveness::Dead);
        assert!(verdict.is_dead());
    }

    #[test]
    fn zombie_is_dead() {
        assert_eq!(
            check(&Fake(SignalZero::Zombie, Some(7)), 42, Some(7)),
            Liveness::Dead
        );
    }

    #[test]
    fn other_errno_is_ambiguous_and_not_reapable() {
        let verdict = check(&Fake(SignalZero::Failed("EINVAL".into()), None), 42, None);
        assert_eq!(
            verdict,
            Liveness::Ambiguous {
                detail: "EINVAL".into()
            }
        );
        assert!(!verdict.is_dead());
    }

    #[test]
    fn recycled_pid_is_a_dead_holder() {
        let verdict = check(&Fake(SignalZero::Delivered, Some(900)), 42, Some(7));
        assert_eq!(
            verdict,
            Liveness::Recycled {
                recorded: 7,
                actual: 900
            }
        );
        assert!(verdict.is_dead());
        // EPERM on a recycled PID: still a different process.
        assert!(check(&Fake(SignalZero::PermissionDenied, Some(900)), 42, Some(7)).is_dead());
    }

    #[test]
    fn unknown_start_time_falls_back_to_signal_only() {
        assert_eq!(
            check(&Fake(SignalZero::Delivered, None), 42, Some(7)),
            Liveness::Alive
        );
    }

    // pid 0 would address our own process group.
    #[test]
    fn pid_zero_is_never_probed() {
        #[derive(Debug)]
        struct Panics;
        impl ProcessProbe for Panics {
            fn signal_zero(&self, pid: u32) -> SignalZero {
                panic!("probed pid {pid}")
            }
            fn start_time(&self, _: u32) -> Option<u64> {
                None
            }
        }
        assert!(matches!(
            check(&Panics, 0, None),
            Liveness::Ambiguous { .. }
        ));
        assert!(matches!(
            check(&Panics, u32::MAX, None),
            Liveness::Ambiguous { .. }
        ));
    }

    #[test]
    fn os_probe_sees_self_alive_and_reaped_child_dead() {
        let (me, start) = current_process(&OsProbe);
        assert_eq!(check(&OsProbe, me, start), Liveness::Alive);
        assert!(start.is_some(), "linux exposes /proc start time");

        let mut child = Command::new("true").stdout(Stdio::null()).spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert_eq!(check(&OsProbe, pid, None), Liveness::Dead);
    }

    #[test]
    fn os_probe_sees_unreaped_child_as_zombie() {
        let mut child = Command::new("true").stdout(Stdio::null()).spawn().unwrap();
        let pid = child.id();
        // Wait for exit without reaping: waitid with WNOWAIT.
        rustix::process::waitid(
            rustix::process::WaitId::Pid(Pid::from_raw(pid as i32).unwrap()),
            rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
        )
        .unwrap();
        assert_eq!(OsProbe.signal_zero(pid), SignalZero::Zombie);
        child.wait().unwrap();
    }

    #[test]
    fn os_probe_detects_start_time_mismatch_as_recycled() {
        let (me, start) = current_process(&OsProbe);
        let verdict = check(&OsProbe, me, Some(start.unwrap() + 1));
        assert!(matches!(verdict, Liveness::Recycled { .. }));
    }
}
