//! Kill-on-drop for every process a case starts: nextest
//! kills a timed-out test's process group, but the engine puts the wrapped
//! skill in a group of its own, which would survive — so the harness kills
//! its own children.
//!
//! [`Reaper`] owns the long-lived children (a live lock holder) and a
//! marker: every process started for a case carries
//! `SDD_EVALS_SANDBOX=<sandbox path>` in its environment, inherited by the
//! engine, the skill and their children, so [`Reaper::sweep`] finds
//! stragglers even after their parent died. On drop it kills both. A
//! process group (the fake skill's, from its barrier line) is signalled
//! only at once, while its leader is known alive: remembered for later,
//! its id could by then name another test's group (pids are recycled).
//! It never signals pid 0, its own pid or its own process group.

use std::process::Child;

use rustix::process::{Pid, Signal};

/// The environment variable that marks a case's processes.
pub const MARKER: &str = "SDD_EVALS_SANDBOX";

/// Kills a case's processes when dropped.
#[derive(Debug)]
pub struct Reaper {
    marker: String,
    children: Vec<Child>,
}

fn pid(raw: u32) -> Option<Pid> {
    i32::try_from(raw).ok().and_then(Pid::from_raw)
}

/// Whether signalling `target` (a pid or a group id) could hit the
/// harness itself.
fn is_self(target: Pid) -> bool {
    target == rustix::process::getpid() || target == rustix::process::getpgrp()
}

impl Reaper {
    /// `marker` is the value of [`MARKER`] the case's processes carry.
    pub fn new(marker: impl Into<String>) -> Self {
        Self {
            marker: marker.into(),
            children: Vec::new(),
        }
    }

    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// Keeps `child` until the case ends, then kills and reaps it.
    pub fn adopt(&mut self, child: Child) {
        self.children.push(child);
    }

    /// SIGKILLs one process (never the harness itself).
    pub fn kill(raw: u32) {
        if let Some(target) = pid(raw).filter(|p| !is_self(*p)) {
            let _ = rustix::process::kill_process(target, Signal::KILL);
        }
    }

    /// SIGINTs one process, as Ctrl-C would (never the harness itself).
    pub fn interrupt(raw: u32) {
        if let Some(target) = pid(raw).filter(|p| !is_self(*p)) {
            let _ = rustix::process::kill_process(target, Signal::INT);
        }
    }

    /// SIGSTOPs the process group `raw` belongs to: frozen, it can neither
    /// react to its engine's death (the guard's parent-death SIGTERM stays
    /// pending) nor go on with its script until [`Reaper::kill_group_of`].
    pub fn freeze_group_of(raw: u32) {
        if let Some(group) = pid(raw)
            .and_then(|p| rustix::process::getpgid(Some(p)).ok())
            .filter(|g| !is_self(*g))
        {
            let _ = rustix::process::kill_process_group(group, Signal::STOP);
        }
    }

    /// SIGKILLs the process group `raw` belongs to.
    pub fn kill_group_of(&mut self, raw: u32) {
        let Some(group) = pid(raw).and_then(|p| rustix::process::getpgid(Some(p)).ok()) else {
            return;
        };
        if is_self(group) {
            return;
        }
        let _ = rustix::process::kill_process_group(group, Signal::KILL);
    }

    /// The processes that carry this case's marker and are not the
    /// reaper's own children (a live lock holder): `(pid, command line)`.
    /// A zombie has no environment left, so it is not one.
    pub fn strays(&self) -> Vec<(u32, String)> {
        let needle = format!("{MARKER}={}", self.marker);
        let own: Vec<u32> = self.children.iter().map(Child::id).collect();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let raw = entry.file_name().to_str()?.parse::<u32>().ok()?;
                let environ = std::fs::read(entry.path().join("environ")).ok()?;
                let marked = environ
                    .split(|b| *b == 0)
                    .any(|var| var == needle.as_bytes());
                (marked && !own.contains(&raw)).then(|| {
                    let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                    (raw, cmdline.trim().to_owned())
                })
            })
            .collect()
    }

    /// Waits until no process of the case but the reaper's own children is
    /// left, up to `within`; the ones still there then.
    pub fn wait_for_strays(&self, within: std::time::Duration) -> Vec<(u32, String)> {
        let until = std::time::Instant::now() + within;
        loop {
            let strays = self.strays();
            if strays.is_empty() || std::time::Instant::now() >= until {
                return strays;
            }
            // The processes end on their own (a guard's SIGTERM, then its
            // SIGKILL): /proc is read again until they are gone.
            std::thread::park_timeout(std::time::Duration::from_millis(20));
        }
    }

    /// SIGKILLs every process that carries this case's marker, and waits
    /// (up to 5 s) until they have ended: a SIGKILLed process takes a
    /// while to exit (a large CLI under load, tens of milliseconds), and
    /// the next tick's engine, probing the interrupted tick's process
    /// group, must find it gone — else it stops it itself and says so,
    /// and the tick's output differs from run to run.
    ///
    /// /proc is read again after each round: a process forked while it was
    /// read (a guard's last signal, a shell's child) can be missing from
    /// that reading, and is killed in the next.
    pub fn sweep(&self) {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let killed = self.kill_marked();
            while killed.iter().any(|pid| running(*pid)) && std::time::Instant::now() < until {
                std::thread::park_timeout(std::time::Duration::from_millis(10));
            }
            if killed.is_empty() || std::time::Instant::now() >= until {
                return;
            }
        }
    }

    /// SIGKILLs every process that carries this case's marker; their pids.
    fn kill_marked(&self) -> Vec<u32> {
        let mut killed = Vec::new();
        let needle = format!("{MARKER}={}", self.marker);
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return killed;
        };
        for entry in entries.flatten() {
            let Some(raw) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            if environ
                .split(|b| *b == 0)
                .any(|var| var == needle.as_bytes())
            {
                Self::kill(raw);
                killed.push(raw);
            }
        }
        killed
    }
}

/// Whether `pid` still runs: present in /proc and neither a zombie nor
/// dead.
fn running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, None | Some("Z") | Some("X"))
}

impl Drop for Reaper {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.sweep();
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::process::{Command, Stdio};

    use super::*;

    #[test]
    fn sweep_kills_marked_processes_only() {
        let marker = format!("procs-test-{}", std::process::id());
        let mut marked = Command::new("cat")
            .env(MARKER, &marker)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut unmarked = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        Reaper::new(&marker).sweep();
        let status = marked.wait().unwrap();
        assert!(!status.success(), "the marked process was killed");
        let mut out = String::new();
        marked
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(
            unmarked.try_wait().unwrap().is_none(),
            "the other one lives"
        );
        let mut reaper = Reaper::new("unused");
        reaper.adopt(unmarked);
        drop(reaper);
    }

    #[test]
    fn never_signals_its_own_group() {
        let mut reaper = Reaper::new("unused");
        reaper.kill_group_of(std::process::id());
        Reaper::kill(std::process::id());
        // Still here: neither call reached this process or its group.
    }
}
