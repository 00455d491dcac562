//! Who holds an in-session tick's lock (`docs/src/in-session.md`, "The
//! lock belongs to the session").
//!
//! `sdd-loop work begin` is a short-lived process; the lock must outlive
//! it for as long as the session doing the work is alive, and die with
//! that session so the next tick can reap it (PID liveness stays the only
//! staleness signal). So the lock names the *session*: `--holder-pid PID`,
//! or by default the nearest ancestor of `begin` that is neither a shell
//! nor a short-lived launcher — the agent process whose tool ran the
//! command (in Claude Code, the `claude` process that spawned the Bash
//! tool's shell). Its start time is recorded too, so a recycled PID is
//! recognised as a dead holder.

use crate::os::liveness::{ProcessProbe, SignalZero};
use crate::state::lock::Identity;

/// Command names skipped on the way up: shells, and launchers that exit
/// with the command they run (the kernel's 15-character `comm`) — among
/// them the plugin's hook launcher (`hooks/sdd-loop-hook`, a script the
/// kernel names after its file) and the npm package's `sdd-loop` shim
/// (which names its node process `sdd-loop`).
pub const TRANSIENT: [&str; 20] = [
    "sh",
    "bash",
    "dash",
    "zsh",
    "fish",
    "ksh",
    "mksh",
    "ash",
    "busybox",
    "tcsh",
    "csh",
    "env",
    "nohup",
    "timeout",
    "nice",
    "stdbuf",
    "setsid",
    "cargo",
    "sdd-loop",
    "sdd-loop-hook",
];

/// How far up the process tree to look before giving up.
const MAX_DEPTH: usize = 64;

/// The holder named by `--holder-pid`, which must be running.
pub fn explicit(probe: &dyn ProcessProbe, pid: u32) -> Result<Identity, String> {
    if pid == 0 || pid > i32::MAX as u32 {
        return Err(format!("--holder-pid {pid} is not a process id"));
    }
    match probe.signal_zero(pid) {
        SignalZero::Delivered | SignalZero::PermissionDenied => Ok(Identity {
            pid,
            process_start: probe.start_time(pid),
        }),
        _ => Err(format!("--holder-pid {pid}: no such running process")),
    }
}

/// The nearest ancestor of `start` that is not transient.
pub fn session(probe: &dyn ProcessProbe, start: u32) -> Result<Identity, String> {
    let help = "pass --holder-pid PID: the process of the session doing the work (it must stay alive until `end`)";
    let mut pid = start;
    for _ in 0..MAX_DEPTH {
        let Some((parent, _)) = probe.parent(pid) else {
            return Err(format!(
                "cannot read the process tree above pid {pid} on this platform; {help}"
            ));
        };
        if parent <= 1 {
            return Err(format!(
                "every ancestor of pid {start} up to init is a shell or launcher; {help}"
            ));
        }
        let Some((_, name)) = probe.parent(parent) else {
            return Err(format!("cannot read process {parent}; {help}"));
        };
        if !TRANSIENT.contains(&name.as_str()) {
            return Ok(Identity {
                pid: parent,
                process_start: probe.start_time(parent),
            });
        }
        pid = parent;
    }
    Err(format!(
        "the process tree above pid {start} is too deep; {help}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// pid → (ppid, name).
    #[derive(Debug)]
    struct Tree(HashMap<u32, (u32, &'static str)>);

    impl ProcessProbe for Tree {
        fn signal_zero(&self, pid: u32) -> SignalZero {
            if self.0.contains_key(&pid) {
                SignalZero::Delivered
            } else {
                SignalZero::NoSuchProcess
            }
        }
        fn start_time(&self, pid: u32) -> Option<u64> {
            Some(u64::from(pid) * 10)
        }
        fn parent(&self, pid: u32) -> Option<(u32, String)> {
            self.0.get(&pid).map(|(p, n)| (*p, (*n).to_owned()))
        }
    }

    fn tree(entries: &[(u32, u32, &'static str)]) -> Tree {
        Tree(entries.iter().map(|(p, pp, n)| (*p, (*pp, *n))).collect())
    }

    #[test]
    fn skips_shells_and_launchers_up_to_the_session() {
        // claude (500) → bash -c (600) → timeout (700) → sdd-loop (800)
        let t = tree(&[
            (1, 0, "init"),
            (500, 1, "claude"),
            (600, 500, "bash"),
            (700, 600, "timeout"),
            (800, 700, "sdd-loop"),
        ]);
        assert_eq!(
            session(&t, 800).unwrap(),
            Identity {
                pid: 500,
                process_start: Some(5000)
            }
        );
    }

    #[test]
    fn only_shells_up_to_init_is_an_error_naming_the_flag() {
        let t = tree(&[(1, 0, "init"), (600, 1, "bash"), (800, 600, "sdd-loop")]);
        let err = session(&t, 800).unwrap_err();
        assert!(err.contains("--holder-pid"), "{err}");
    }

    #[test]
    fn explicit_holder_must_be_running() {
        let t = tree(&[(1, 0, "init"), (500, 1, "claude")]);
        assert_eq!(explicit(&t, 500).unwrap().pid, 500);
        assert!(
            explicit(&t, 501)
                .unwrap_err()
                .contains("no such running process")
        );
        assert!(explicit(&t, 0).is_err());
    }

    #[test]
    fn the_real_tree_has_a_non_shell_ancestor() {
        // This test process runs under the test runner, which is no shell.
        let probe = crate::os::liveness::OsProbe;
        let me = std::process::id();
        let found = session(&probe, me).unwrap();
        assert_ne!(found.pid, me);
        assert!(found.process_start.is_some());
    }
}
