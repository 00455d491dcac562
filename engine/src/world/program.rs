//! Other programs the engine asks something of (`gh auth token`, git for
//! claims, and `sdd-loop doctor`'s `claude --version` and the plugin's
//! launcher): found on a given `PATH`, run with a given environment and no
//! input, and never waited for longer than a limit.
//!
//! Each runs as the leader of a process group of its own, and ends with
//! that whole group: git's transport (`sh -c ssh …`, `git-remote-http`)
//! runs as git's child, and a remote that accepts and never answers would
//! otherwise keep it alive long after git was killed — one set per tick.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// What one stream of a program may print before the rest is dropped.
const STREAM_MAX: u64 = 1024 * 1024;

/// `name` in the directories of `vars["PATH"]`: the first executable file.
pub fn on_path(vars: &BTreeMap<String, String>, name: &str) -> Option<PathBuf> {
    let path = vars.get("PATH")?;
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A program's end: its status and what it printed.
#[derive(Debug)]
pub struct Ended {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Why a program gave no answer.
#[derive(Debug)]
pub enum NoAnswer {
    /// It could not be started (or waited for).
    Run(std::io::Error),
    /// It ran past the limit and was killed.
    TimedOut(Duration),
}

impl std::fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoAnswer::Run(e) => write!(f, "{e}"),
            NoAnswer::TimedOut(limit) => write!(f, "no answer within {} s", limit.as_secs()),
        }
    }
}

/// Runs `program args` with exactly the environment `vars` and no
/// input, reading both streams as it runs (so a full pipe never stalls
/// it), and kills it once `limit` has passed. Whatever it started in its
/// process group ends with it: killed at the limit, and killed when the
/// program exits (a child that outlives its parent's answer is no longer
/// anybody's).
pub fn run_within(
    program: &Path,
    args: &[&str],
    vars: &BTreeMap<String, String>,
    limit: Duration,
) -> Result<Ended, NoAnswer> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(program)
        .args(args)
        .process_group(0)
        .env_clear()
        .envs(vars)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(NoAnswer::Run)?;
    let (tx, rx) = mpsc::channel();
    for (which, stream) in [
        (
            0,
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ),
        (
            1,
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(stream) = stream {
                let _ = stream.take(STREAM_MAX).read_to_end(&mut out);
            }
            let _ = tx.send((which, out));
        });
    }
    drop(tx);
    let deadline = std::time::Instant::now() + limit;
    let mut printed = [Vec::new(), Vec::new()];
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok((which, out)) => printed[which] = out,
            Err(_) => {
                // The leader is not reaped yet, so its id still names
                // this group and no other.
                kill_group(child.id());
                let _ = child.wait();
                return Err(NoAnswer::TimedOut(limit));
            }
        }
    }
    // Both streams are closed: the program has exited or is exiting. It is
    // waited for without being reaped, so that its group's id cannot be
    // anybody else's when what is left of the group is killed.
    if let Some(pid) = pid_of(child.id()) {
        let _ = rustix::process::waitid(
            rustix::process::WaitId::Pid(pid),
            rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
        );
    }
    kill_group(child.id());
    let status = child.wait().map_err(NoAnswer::Run)?;
    let [stdout, stderr] = printed;
    Ok(Ended {
        status,
        stdout,
        stderr,
    })
}

fn pid_of(id: u32) -> Option<rustix::process::Pid> {
    i32::try_from(id)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
}

/// Kills the process group `leader` leads (nothing left in it is fine).
fn kill_group(leader: u32) {
    if let Some(pid) = pid_of(leader) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())])
    }

    /// `sh -c script` with `vars()`, at most `limit`.
    fn sh(script: &str, limit: Duration) -> Result<Ended, NoAnswer> {
        let sh = on_path(&vars(), "sh").expect("sh on PATH");
        run_within(&sh, &["-c", script], &vars(), limit)
    }

    #[test]
    fn both_streams_and_the_status_come_back() {
        let ended = sh("echo out; echo err >&2; exit 3", Duration::from_secs(30)).unwrap();
        assert_eq!(ended.status.code(), Some(3));
        assert_eq!(ended.stdout, b"out\n");
        assert_eq!(ended.stderr, b"err\n");
    }

    #[test]
    fn a_program_past_its_limit_is_killed() {
        let err = sh("exec sleep 300", Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, NoAnswer::TimedOut(_)), "{err}");
    }

    #[test]
    fn the_environment_is_exactly_the_one_given() {
        let sh = on_path(&vars(), "sh").expect("sh on PATH");
        let mut v = vars();
        v.insert("ONLY_THIS".to_owned(), "yes".to_owned());
        let ended = run_within(&sh, &["-c", "env"], &v, Duration::from_secs(30)).unwrap();
        let env = String::from_utf8(ended.stdout).unwrap();
        assert!(env.contains("ONLY_THIS=yes"), "{env}");
        assert!(!env.contains("HOME="), "{env}");
    }

    /// Whether process `pid` has ended (gone, or a zombie nobody reaped
    /// yet), asked until `within` has passed: a SIGKILL is delivered
    /// asynchronously.
    fn ends(pid: u32, within: Duration) -> bool {
        let stat = format!("/proc/{pid}/stat");
        let until = std::time::Instant::now() + within;
        loop {
            let state = std::fs::read_to_string(&stat).ok().and_then(|s| {
                s[s.rfind(')')? + 1..]
                    .split_whitespace()
                    .next()
                    .map(str::to_owned)
            });
            if state.as_deref().is_none_or(|s| s == "Z" || s == "X") {
                return true;
            }
            if std::time::Instant::now() > until {
                return false;
            }
            std::thread::yield_now();
        }
    }

    /// A transport that outlives git (ssh, `git-remote-http` against a
    /// remote that never answers) ends with it at the limit.
    #[test]
    fn a_child_holding_the_streams_is_killed_with_the_program_at_the_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let pid_file = tmp.path().join("child.pid");
        let script = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
        let err = sh(&script, Duration::from_secs(2)).unwrap_err();
        assert!(matches!(err, NoAnswer::TimedOut(_)), "{err}");
        let child: u32 = std::fs::read_to_string(&pid_file)
            .expect("the child started before the limit")
            .trim()
            .parse()
            .unwrap();
        assert!(
            ends(child, Duration::from_secs(10)),
            "pid {child} outlived its program"
        );
    }

    /// A child left behind by a program that answered is no longer
    /// anybody's: it ends with the answer.
    #[test]
    fn a_child_left_behind_by_a_program_that_answered_is_killed() {
        let ended = sh(
            "sleep 300 >/dev/null 2>&1 & echo $!",
            Duration::from_secs(30),
        )
        .unwrap();
        assert!(ended.status.success());
        let child: u32 = String::from_utf8(ended.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            ends(child, Duration::from_secs(10)),
            "pid {child} outlived its program"
        );
    }
}
