//! `sdd-loop hook EVENT`: one Claude Code hook of this repository's
//! plugin (`hooks/hooks.json`). Reads the hook's JSON on standard input,
//! finds the session (the nearest ancestor that is no shell or launcher:
//! the `claude` process that ran the hook), runs [`crate::hook`] with the
//! command line's own `begin` and `end` as its engine, and prints only
//! what Claude Code accepts — always exiting 0, since a hook's other exit
//! statuses mean something else to Claude Code.
//!
//! The hook answers within its time limit whatever the engine does: the
//! work runs on a thread, and when [`crate::hook::MARGIN_SECS`] before the
//! limit it has not answered, the event's fallback answer is printed
//! instead ([`crate::hook::fallback`]: the prompt blocked, a PR or merge
//! refused, a stop let through), logged like any decision
//! ([`crate::hook::in_time`]), and the process exits.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use super::args::HookArgs;
use super::env::Env;
use crate::exit;
use crate::hook::in_time::{self, Waiting};
use crate::hook::{self, Engine, Hook, Ran};
use crate::os::clock::{Clock, SystemClock};
use crate::os::liveness::OsProbe;
use crate::state::holder;
use crate::world::git::GitCli;

/// The command line's own entry ([`super::main_with`]), handed down by
/// the command line so that a hook runs its commands without reaching
/// back up to it.
pub(super) type Main = fn(Vec<OsString>, &mut Env<'_>) -> u8;

/// The engine a hook runs: `sdd-loop ARGS` in-process, with the hook's
/// environment, its output captured.
#[derive(Debug)]
struct InProcess {
    vars: BTreeMap<String, String>,
    main: Main,
}

impl Engine for InProcess {
    fn run(&mut self, project: &Path, args: &[String]) -> Ran {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = {
            let mut env = Env {
                stdout: &mut out,
                stderr: &mut err,
                vars: self.vars.clone(),
                cwd: project.to_path_buf(),
                terminal: None,
                stdin: None,
                interrupts: None,
            };
            let argv = std::iter::once(OsString::from("sdd-loop"))
                .chain(args.iter().map(OsString::from))
                .collect::<Vec<_>>();
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.main)(argv, &mut env)))
                .unwrap_or(exit::INTERNAL)
        };
        Ran {
            code,
            stdout: String::from_utf8_lossy(&out).into_owned(),
            stderr: String::from_utf8_lossy(&err).into_owned(),
        }
    }
}

/// The hook's clock: the one the variables ask for, as a tick's; a hook
/// must answer whatever they hold, so a clock they do not describe is the
/// system's (the tick the hook starts refuses them with the reason).
fn clock(vars: &BTreeMap<String, String>) -> Arc<dyn Clock> {
    super::env::clock_from_vars(vars).unwrap_or_else(|_| Arc::new(SystemClock))
}

pub(super) fn hook_command(args: HookArgs, env: &mut Env<'_>, main: Main) -> u8 {
    let Some(event) = args.event.filter(|_| !args.protocol) else {
        return match writeln!(env.stdout, "{}", hook::handshake()) {
            Ok(()) => exit::TICK_DONE,
            Err(_) => exit::CANT_WRITE,
        };
    };
    let mut bytes = Vec::new();
    if let Some(stdin) = env.stdin.as_mut() {
        let _ = stdin.read_to_end(&mut bytes);
    }
    let bytes = crate::hook::input::tolerant(&bytes);
    let vars = env.vars.clone();
    let project: Option<PathBuf> = args.project.map(|p| env.cwd.join(p)).or_else(|| {
        vars.get("CLAUDE_PROJECT_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let session = match args.holder_pid {
        Some(pid) => holder::explicit(&OsProbe, pid),
        None => holder::session(&OsProbe, std::process::id()),
    }
    .map(|identity| identity.pid);
    let git_dir = project.clone().unwrap_or_else(|| env.cwd.clone());
    let waiting_clock = clock(&vars);
    let waiting = Waiting {
        vars: &env.vars,
        project: project.clone(),
        session: session.clone(),
        clock: waiting_clock.as_ref(),
    };
    let (tx, rx) = mpsc::channel();
    let input = bytes.clone();
    std::thread::spawn(move || {
        let mut engine = InProcess {
            vars: vars.clone(),
            main,
        };
        let clock = clock(&vars);
        let git = GitCli { dir: git_dir };
        let mut hook = Hook {
            vars: &vars,
            project,
            session,
            clock: clock.as_ref(),
            engine: &mut engine,
            git: &git,
        };
        let answer = hook::run(event, &input, &mut hook);
        let _ = tx.send(answer);
    });
    let budget = Duration::from_secs(event.timeout_secs().saturating_sub(hook::MARGIN_SECS));
    // A panicking hook drops its sender: the fallback answers at once.
    let answer = in_time::within(event, &bytes, &rx, budget, &waiting);
    if let Some(json) = answer.json() {
        let _ = writeln!(env.stdout, "{json}");
    }
    exit::TICK_DONE
}
