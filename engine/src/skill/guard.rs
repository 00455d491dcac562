//! The skill's guard: the process that runs a wrapped skill on behalf of
//! the engine, so the skill never outlives its tick unobserved (issue
//! "no orphaned skill").
//!
//! A killed engine cannot stop its child, and the skill runs in a process
//! group of its own (so Ctrl-C reaches the engine only, which forwards it),
//! so nothing else would. The engine therefore starts
//! `sdd-loop __guard -- CMD` as the group's leader (an agent's program as
//! `__guard --exec -- PROGRAM ARGS…`); the guard asks the kernel for a
//! parent-death signal (Linux `PR_SET_PDEATHSIG`, through rustix — no
//! unsafe code), runs `sh -c CMD` (or the program) in its group, passes its
//! exit on, and forwards SIGINT and SIGTERM to the whole group. When the
//! engine dies, the kernel sends the guard SIGTERM and the guard forwards
//! it: the skill gets the same chance to drain as on Ctrl-C. Where the
//! platform has no parent-death signal, the next tick's reaping of a dead
//! holder stops the recorded group instead ([`crate::state::journal`]).
//!
//! Some agents start their tools in process groups (even sessions) of
//! their own — the Gemini CLI runs each shell command detached — so a
//! signal to the guard's group misses them, and they outlived the tick
//! (measured: a `tail -f` started by the Gemini CLI's shell tool survived
//! the engine's death). On Linux the guard is therefore a child
//! subreaper (`PR_SET_CHILD_SUBREAPER`): whatever its child leaves behind
//! is re-parented to the guard, which, once its child has exited, kills
//! every process still below it before passing the exit on.

use std::io::Write;
use std::process::Command;

use rustix::process::Signal;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::SignalsInfo;
use signal_hook::iterator::exfiltrator::WithOrigin;

/// The hidden subcommand the engine runs the skill through.
pub const SUBCOMMAND: &str = "__guard";

/// How every line the guard prints begins: a root cause quotes the
/// guard's line before any other ([`crate::skill::runner::RunOutcome::last_stderr`]).
pub const SAYS: &str = "sdd-loop guard:";

/// Exit status when the skill command cannot be started.
const CANNOT_START: u8 = 127;

/// How long the child may take to end once the engine has died and the
/// guard has passed SIGTERM on; then it is killed (measured: the Gemini
/// CLI, SIGTERMed while its shell tool ran, sometimes never exited).
const ORPHAN_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether the guard has passed a signal on to its group, and which.
static FORWARDED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static FORWARDED_TERM: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static FORWARDED_INT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// [`forward`]s `sig` unless it was passed on before.
fn forward_once(sig: i32) {
    let flag = if sig == SIGTERM {
        &FORWARDED_TERM
    } else {
        &FORWARDED_INT
    };
    if !flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
        forward(sig);
    }
}

/// What the guard runs: a skill command line (`sh -c`) or an agent's
/// program and arguments, started as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guarded {
    Shell(String),
    Exec(Vec<std::ffi::OsString>),
}

impl Guarded {
    fn command(&self) -> Option<Command> {
        match self {
            Guarded::Shell(line) => {
                let mut c = Command::new("sh");
                c.arg("-c").arg(line);
                Some(c)
            }
            Guarded::Exec(argv) => {
                let (program, args) = argv.split_first()?;
                let mut c = Command::new(program);
                c.args(args);
                Some(c)
            }
        }
    }

    fn shown(&self) -> String {
        match self {
            Guarded::Shell(line) => format!("sh -c {line:?}"),
            Guarded::Exec(argv) => argv
                .first()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
        }
    }
}

/// The arguments that make `sdd-loop` guard `what` for the engine `parent`.
pub fn args(what: &Guarded, parent: u32) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        SUBCOMMAND.into(),
        "--parent".into(),
        parent.to_string().into(),
    ];
    match what {
        Guarded::Shell(line) => args.extend(["--".into(), line.into()]),
        Guarded::Exec(argv) => {
            args.extend(["--exec".into(), "--".into()]);
            args.extend(argv.iter().cloned());
        }
    }
    args
}

/// The inverse of [`args`]: what the guard is to run and for which
/// engine, read without building the whole command line's parser (the
/// guard starts on every tick). `None` for any other shape, which the
/// command line then reads as usual (and refuses with its help).
pub fn parse(args: &[std::ffi::OsString]) -> Option<(Guarded, Option<u32>)> {
    let [sub, flag, pid, rest @ ..] = args else {
        return None;
    };
    if sub != SUBCOMMAND || flag != "--parent" {
        return None;
    }
    let parent = pid.to_str()?.parse::<u32>().ok()?;
    match rest {
        [dashes, line] if dashes == "--" => {
            Some((Guarded::Shell(line.to_str()?.to_owned()), Some(parent)))
        }
        [exec, dashes, argv @ ..] if exec == "--exec" && dashes == "--" && !argv.is_empty() => {
            Some((Guarded::Exec(argv.to_vec()), Some(parent)))
        }
        _ => None,
    }
}

/// How often the guard looks at the tick's claims (each look reads the
/// tick's clock; a renewal is due minutes apart).
const KEEP_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// The claims the guard keeps while the skill runs, and the tick's clock.
pub type Keeping = (
    crate::skill::keeper::Keeper,
    std::sync::Arc<dyn crate::os::clock::Clock>,
);

/// Runs `what` as the guard; its exit status, or its death by the same
/// signal. With `keeping`, the tick's claims are renewed while it runs,
/// and the skill's group is stopped when every one of them is lost.
pub fn run(what: &Guarded, parent: Option<u32>, keeping: Option<Keeping>) -> u8 {
    // The guard signals its whole group: it must be that group's leader,
    // never a guest in its caller's (the engine starts it as one; a guard
    // started by hand makes its own).
    if rustix::process::getpgrp() != rustix::process::getpid()
        && rustix::process::setpgid(None, None).is_err()
    {
        let _ = writeln!(
            std::io::stderr().lock(),
            "{SAYS} cannot lead a process group of its own"
        );
        return CANNOT_START;
    }
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_parent_process_death_signal(Some(Signal::TERM));
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    // The engine may have died between starting us and the call above:
    // then no signal will come, so act as if it had.
    let orphaned = move || {
        parent.is_some_and(|p| {
            rustix::process::getppid().map(|pp| pp.as_raw_nonzero().get()) != i32::try_from(p).ok()
        })
    };
    let signals = match SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM]) {
        Ok(s) => s,
        Err(_) => return CANNOT_START,
    };
    let spawned = match what.command() {
        Some(mut command) => command.spawn(),
        None => Err(std::io::Error::other("nothing to run")),
    };
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "{SAYS} could not start {}: {e}",
                what.shown()
            );
            return CANNOT_START;
        }
    };
    let handle = signals.handle();
    let me = std::process::id();
    let child_pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Once the engine is gone nobody drains the child: after the grace
    // period it is killed, so the guard can clean up below it and end.
    let deadline = {
        let done = std::sync::Arc::clone(&done);
        move || {
            let done = std::sync::Arc::clone(&done);
            std::thread::spawn(move || {
                std::thread::park_timeout(ORPHAN_GRACE);
                if !done.load(std::sync::atomic::Ordering::SeqCst)
                    && let Some(p) = i32::try_from(child_pid)
                        .ok()
                        .and_then(rustix::process::Pid::from_raw)
                {
                    let _ = rustix::process::kill_process(p, Signal::KILL);
                }
            });
        }
    };
    let on_orphan = deadline.clone();
    let forwarder = std::thread::spawn(move || {
        let mut signals = signals;
        for origin in signals.forever() {
            // The guard is in the group it signals: what it sent itself
            // comes back, and forwarding that again would never end.
            let from_self = origin
                .process
                .is_some_and(|p| u32::try_from(p.pid).ok() == Some(me));
            if !from_self {
                // Passed on once: a signal the engine sent its guard's
                // whole group has reached the skill already, and a dying
                // engine's death signal comes once per thread that exits.
                // Twice, a skill's handler would be interrupted and run
                // again; the engine and the orphan deadline escalate with
                // SIGKILL, never with a second SIGTERM.
                forward_once(origin.signal);
                if origin.signal == SIGTERM && orphaned() {
                    on_orphan();
                }
            }
        }
    });
    if orphaned() {
        forward_once(SIGTERM);
        deadline();
    }
    let keeper = keeping.map(|k| keep_claims(k, std::sync::Arc::clone(&done), deadline.clone()));
    let status = child.wait();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    if let Some(keeper) = keeper {
        keeper.thread().unpark();
        // Said here: the process's stderr is locked by the main thread.
        // One write(2), line and newline together: a process of the skill
        // still draining shares the pipe, and `writeln!` writes the text
        // and its newline apart — its line could land between them
        // (seen under load: "…the skill was stoppedinterrupted at …").
        if let Ok(Some(said)) = keeper.join() {
            let _ = std::io::stderr()
                .lock()
                .write_all(format!("{said}\n").as_bytes());
        }
    }
    #[cfg(target_os = "linux")]
    stop_descendants(FORWARDED.load(std::sync::atomic::Ordering::SeqCst));
    handle.close();
    let _ = forwarder.join();
    match status {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            if let Some(code) = status.code() {
                return u8::try_from(code).unwrap_or(1);
            }
            if let Some(sig) = status.signal() {
                // End the way the skill ended, so the engine sees its signal.
                let _ = signal_hook::low_level::emulate_default_handler(sig);
                return 128u8.saturating_add(u8::try_from(sig).unwrap_or(0));
            }
            1
        }
        Err(_) => 1,
    }
}

/// The thread that renews the tick's claims while the skill runs, and
/// stops the skill's group (then, after the grace, kills it) once every
/// claim is lost — taken by another clone, or not renewed before its
/// lease ended by the tick's clock. It ends with what the guard says.
fn keep_claims(
    (keeper, clock): Keeping,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    on_lost: impl Fn() + Send + 'static,
) -> std::thread::JoinHandle<Option<String>> {
    std::thread::spawn(move || {
        if !crate::skill::keeper::holds_claims(&keeper.journal) {
            return None;
        }
        loop {
            std::thread::park_timeout(KEEP_POLL);
            if done.load(std::sync::atomic::Ordering::SeqCst) {
                return None;
            }
            let tended = keeper.tend(clock.as_ref());
            if tended.stop {
                forward_once(SIGTERM);
                on_lost();
                let lost: Vec<String> =
                    tended.lost_so_far.iter().map(|n| format!("#{n}")).collect();
                return Some(format!(
                    "{SAYS} every claim of this tick is lost ({}) — the skill was stopped",
                    lost.join(", ")
                ));
            }
        }
    })
}

/// The processes whose parent is `parent`, from `/proc/*/stat`.
#[cfg(target_os = "linux")]
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // `pid (comm) state ppid …`: comm may hold spaces and parens.
            let after = &stat[stat.rfind(')')? + 1..];
            let ppid = after.split_whitespace().nth(1)?.parse::<u32>().ok()?;
            (ppid == parent).then_some(pid)
        })
        .collect()
}

/// Stops every process left below the guard once its child has exited.
/// As a subreaper it inherits them. They are asked first (SIGTERM) and
/// given [`ORPHAN_GRACE`] to drain — a skill run as `sh -c CMD` whose
/// shell died of the signal leaves the command itself below the guard,
/// still finishing its SIGTERM handler; one of the guard's group is not
/// asked twice when a signal was passed on to the group — and what is
/// left then is
/// killed: each round kills the guard's children and reaps them, and
/// their own children come up to it for the next round.
#[cfg(target_os = "linux")]
fn stop_descendants(group_signalled: bool) {
    let me = std::process::id();
    let group = rustix::process::getpgrp();
    let signal_all = |sig: Signal, skip_group: bool| {
        let left = children_of(me);
        for pid in &left {
            let Some(p) = i32::try_from(*pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            else {
                continue;
            };
            // Asked once already: a second SIGTERM would interrupt the
            // handler it is running (and run it again).
            if skip_group && rustix::process::getpgid(Some(p)).ok() == Some(group) {
                continue;
            }
            let _ = rustix::process::kill_process(p, sig);
        }
        !left.is_empty()
    };
    let reap =
        || while let Ok(Some(_)) = rustix::process::wait(rustix::process::WaitOptions::NOHANG) {};
    reap();
    // No child at all (`ECHILD`), the usual end: nothing is below, and
    // the kernel says so without a read of every process's stat.
    if matches!(
        rustix::process::wait(rustix::process::WaitOptions::NOHANG),
        Err(rustix::io::Errno::CHILD)
    ) {
        return;
    }
    if !signal_all(Signal::TERM, group_signalled) {
        return;
    }
    let asked = std::time::Instant::now();
    while asked.elapsed() < ORPHAN_GRACE {
        reap();
        if children_of(me).is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for _ in 0..100 {
        if !signal_all(Signal::KILL, false) {
            return;
        }
        // Reap whatever has died (the killed ones, and zombies that were
        // re-parented here): blocking for one, then without waiting.
        let _ = rustix::process::wait(rustix::process::WaitOptions::empty());
        reap();
    }
}

/// Sends `sig` to the guard's own process group (the skill and its
/// children); the guard itself has a handler, so it lives on to pass the
/// skill's exit on.
fn forward(sig: i32) {
    FORWARDED.store(true, std::sync::atomic::Ordering::SeqCst);
    let signal = if sig == SIGTERM {
        Signal::TERM
    } else {
        Signal::INT
    };
    if let Ok(group) = rustix::process::getpgid(None) {
        let _ = rustix::process::kill_process_group(group, signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_s_arguments_read_back_without_the_parser() {
        for what in [
            Guarded::Shell("fake-skill --tick 'a b'".into()),
            Guarded::Exec(vec!["claude".into(), "-p".into(), "--".into()]),
        ] {
            assert_eq!(parse(&args(&what, 4242)), Some((what, Some(4242))));
        }
    }

    #[test]
    fn any_other_shape_is_left_to_the_command_line() {
        let os = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        for shape in [
            os(&["__guard", "--", "cmd"]),
            os(&["__guard", "--parent", "x", "--", "cmd"]),
            os(&["__guard", "--parent", "1", "--", "a", "b"]),
            os(&["__guard", "--parent", "1", "--exec", "--"]),
            os(&["__guard", "--parent", "1"]),
            os(&["work", "--parent", "1", "--", "cmd"]),
        ] {
            assert_eq!(parse(&shape), None, "{shape:?}");
        }
    }
}
