//! Other programs the engine asks something of (`gh auth token`, and
//! `sdd-loop doctor`'s `claude --version` and the plugin's launcher):
//! found on a given `PATH`, run with a given environment and no input,
//! and never waited for longer than a limit.

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
/// it), and kills it once `limit` has passed.
pub fn run_within(
    program: &Path,
    args: &[&str],
    vars: &BTreeMap<String, String>,
    limit: Duration,
) -> Result<Ended, NoAnswer> {
    let mut child = Command::new(program)
        .args(args)
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
                let _ = child.kill();
                let _ = child.wait();
                return Err(NoAnswer::TimedOut(limit));
            }
        }
    }
    let status = child.wait().map_err(NoAnswer::Run)?;
    let [stdout, stderr] = printed;
    Ok(Ended {
        status,
        stdout,
        stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())])
    }

    #[test]
    fn both_streams_and_the_status_come_back() {
        let sh = on_path(&vars(), "sh").expect("sh on PATH");
        let ended = run_within(
            &sh,
            &["-c", "echo out; echo err >&2; exit 3"],
            &vars(),
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(ended.status.code(), Some(3));
        assert_eq!(ended.stdout, b"out\n");
        assert_eq!(ended.stderr, b"err\n");
    }

    #[test]
    fn a_program_past_its_limit_is_killed() {
        let sh = on_path(&vars(), "sh").expect("sh on PATH");
        let err = run_within(
            &sh,
            &["-c", "exec sleep 300"],
            &vars(),
            Duration::from_millis(200),
        )
        .unwrap_err();
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
}
