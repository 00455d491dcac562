//! The guard leaves nothing behind (DESIGN §11): an agent may start its
//! tools detached — in a session and process group of their own, as the
//! Gemini CLI runs every shell command — where the guard's signal to its
//! group never reaches them. Once its child has exited, the guard (a
//! child subreaper on Linux) kills whatever is left below it.

#![cfg(target_os = "linux")]

use std::process::Command;

#[test]
fn a_detached_grandchild_does_not_outlive_the_guard() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("detached.pid");
    // The child starts a detached grandchild that would run forever, waits
    // until it has written its pid (a file, no sleep), and exits.
    let script = format!(
        "setsid sh -c 'echo $$ > {p}.tmp && mv {p}.tmp {p} && exec tail -f /dev/null' & until [ -s {p} ]; do :; done; exit 0",
        p = pidfile.display()
    );
    let status = Command::new(env!("CARGO_BIN_EXE_sdd-loop"))
        .args(["__guard", "--exec", "--", "sh", "-c", &script])
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let pid = pid.trim();
    assert!(
        !std::path::Path::new("/proc").join(pid).exists(),
        "the detached process {pid} outlived its guard"
    );
}
