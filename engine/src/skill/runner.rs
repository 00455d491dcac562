//! Running the wrapped skill behind the [`SkillRunner`]
//! seam.
//!
//! [`ProcessRunner`] starts the skill command with `sh -c` in its own
//! process group, with `SDD_LOOP_REQUEST`, `SDD_LOOP_RESULT` and
//! `SDD_LOOP_EVENTS` set, and watches it:
//! - its stdout and stderr are passed through (to the engine's stderr, so
//!   stdout stays the loop's report); stderr is scanned line by line for the
//!   `qmd-unreachable` sentinel and its tail is kept, bounded, for the
//!   root cause of a failure — redacted as it is read ([`RunSpec::redactor`]),
//!   before a line is cut to length, so neither a private key's body line
//!   (a secret only in the context of the lines before it) nor a token
//!   cut in two at the length limit reaches a root cause;
//! - a stall watchdog kills the group when neither output nor progress
//!   events have arrived for the stall timeout;
//! - on SIGINT/SIGTERM to the engine, or when the stop-request file
//!   appears, the interrupt is forwarded to the group and the skill gets the
//!   drain timeout to finish its iteration before the group is killed (ADR-
//!   0028 #8: stop after the current iteration drains, no half-states).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::state::exchange::Exchange;
use crate::state::protocol::{
    ENV_EVENTS, ENV_REQUEST, ENV_RESULT, EX_QMD_UNREACHABLE, QMD_SENTINEL,
};

/// Lines of stderr kept for error reports.
pub const STDERR_TAIL_LINES: usize = 40;
/// Longest stderr line kept (longer ones are cut).
pub const STDERR_LINE_MAX: usize = 2000;

/// Pending interrupts of the engine process.
pub trait Interrupts: std::fmt::Debug {
    /// The signal number received, if any.
    fn pending(&self) -> Option<i32>;
}

/// The real signal flags, set by handlers the binary installs.
#[derive(Debug, Clone, Default)]
pub struct SignalFlag(pub Arc<AtomicUsize>);

impl SignalFlag {
    /// Installs SIGINT and SIGTERM handlers that set the flag instead of
    /// killing the process.
    pub fn install() -> std::io::Result<Self> {
        let flag = Arc::new(AtomicUsize::new(0));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register_usize(sig, flag.clone(), sig as usize)?;
        }
        Ok(Self(flag))
    }
}

impl Interrupts for SignalFlag {
    fn pending(&self) -> Option<i32> {
        match self.0.load(Ordering::SeqCst) {
            0 => None,
            sig => Some(sig as i32),
        }
    }
}

/// No interrupts (tests).
#[derive(Debug, Default)]
pub struct NoInterrupts;

impl Interrupts for NoInterrupts {
    fn pending(&self) -> Option<i32> {
        None
    }
}

/// What to run and how to watch it.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// Shell command line (`sh -c`).
    pub command: String,
    pub cwd: PathBuf,
    /// Extra environment for the skill.
    pub env: Vec<(String, String)>,
    /// Variables removed from the environment the skill inherits: the
    /// person's notification URLs are never the work's to read
    /// (docs/src/notifications.md).
    pub env_removed: Vec<String>,
    pub stall_timeout: Duration,
    pub drain_timeout: Duration,
    /// `.sdd/loop/{skill}.stop`.
    pub stop_file: PathBuf,
    /// `after-spawn` is hit once the skill runs.
    pub crash: crate::os::crash::CrashPoints,
    /// The journal to record the skill's process group in once it runs.
    pub journal: Option<PathBuf>,
    /// The `sdd-loop` binary: run the skill under its guard
    /// ([`crate::skill::guard`]), which the kernel signals when the engine dies.
    /// `None` runs `sh -c` directly.
    pub guard: Option<PathBuf>,
    /// Dollars left in the run when the cost ceiling is on: an agent that
    /// can stop itself at a spend (Claude Code's `--max-budget-usd`) is
    /// told, so it does not overshoot within the tick.
    pub dollars_left: Option<f64>,
    /// What the kept stderr lines (tail, qmd line) and whatever a runner
    /// quotes from the work's own output (an agent's error message) are
    /// redacted with before they become a root cause.
    pub redactor: crate::rules::redact::Redactor,
}

/// How a run ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOutcome {
    pub exit_code: Option<i32>,
    /// The signal that ended the skill, if one did.
    pub signal: Option<i32>,
    /// The stall watchdog killed it.
    pub stalled: bool,
    /// An interrupt arrived while it ran.
    pub interrupted: Option<InterruptKind>,
    /// It had to be killed after the drain timeout.
    pub drain_expired: bool,
    /// The last stderr lines.
    pub stderr_tail: Vec<String>,
    /// The first stderr line carrying the qmd sentinel.
    pub qmd_line: Option<String>,
    /// The command could not be started.
    pub spawn_error: Option<String>,
    /// The shell refused the command line itself ([`RunOutcome::refused_by_shell`]).
    pub shell_refused: bool,
    /// Why the work failed when its exit status does not say (an agent
    /// that exited 0 with an error result): the root cause, quoted from
    /// the work and redacted. Read before the exit status.
    pub cause: Option<String>,
    /// The work's own final word was success, and only how its process
    /// ended failed the run (an agent exiting 1 after a successful
    /// result): that word is authoritative for the work done, so the
    /// iteration is errored but no target it dispatched failed.
    pub result_succeeded: bool,
}

/// What interrupted a running skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterruptKind {
    Signal(i32),
    StopFile,
}

impl RunOutcome {
    /// The qmd signal of condition #11: exit status 78 first; on another
    /// non-zero status, the stderr sentinel.
    pub fn qmd_signal(&self) -> bool {
        match self.exit_code {
            Some(EX_QMD_UNREACHABLE) => true,
            Some(0) => false,
            _ => self.qmd_line.is_some(),
        }
    }

    /// The line a root cause quotes: what the skill's guard said, when it
    /// said something (it stopped the skill, and a process of the skill
    /// still draining may print after it), else the last non-empty stderr
    /// line.
    pub fn last_stderr(&self) -> Option<&str> {
        let mut lines = self.stderr_tail.iter().rev().map(|l| l.trim());
        lines
            .clone()
            .find(|l| l.starts_with(crate::skill::guard::SAYS))
            .or_else(|| lines.find(|l| !l.is_empty()))
    }

    /// The skill command never ran: it could not be spawned, or the
    /// shell refused the command line itself. A setting to fix, not a
    /// failure of the work.
    pub fn could_not_start(&self) -> bool {
        self.spawn_error.is_some() || self.shell_refused
    }

    /// Whether `sh -c` itself refused the command line: it exited 127 (no
    /// such command), 126 (not executable) or 2 (a line it could not
    /// read, or a script `sh FILE` could not open), its own complaint
    /// (`sh: 1: ./run-work-skill: not found`) is the last thing said, and
    /// the skill appended no event and wrote no result. A program the
    /// line started that fails so names itself instead of `sh:` (`./work-
    /// skill.sh: 12: curl: not found`): that is the work's failure.
    fn refused_by_shell(&self, exchange: &Exchange) -> bool {
        self.signal.is_none()
            && matches!(self.exit_code, Some(2 | 126 | 127))
            && self.last_stderr().is_some_and(|l| l.starts_with("sh: "))
            && exchange.events_len() == 0
            && !exchange.result_path().exists()
    }

    /// The signal the engine forwarded on an interrupt, if it did.
    pub fn forwarded_signal(&self) -> Option<i32> {
        self.interrupted.map(|kind| match kind {
            InterruptKind::Signal(sig) if sig == signal_hook::consts::SIGTERM => sig,
            _ => signal_hook::consts::SIGINT,
        })
    }

    /// One line describing an unsuccessful run, or `None` if it exited 0 —
    /// or if it ended by the very interrupt the engine forwarded (a
    /// `sh -c` wrapper dies of it while the skill it runs drains): whether
    /// the iteration's work was reported is then the result's to say.
    pub fn failure(&self) -> Option<String> {
        if let Some(e) = &self.spawn_error {
            return Some(format!("{NOT_STARTED}: {e}"));
        }
        if self.shell_refused {
            let code = self.exit_code.unwrap_or_default();
            let line = self.last_stderr().unwrap_or_default();
            return Some(format!("{NOT_STARTED} (sh -c exited {code}): {line}"));
        }
        if let Some(cause) = &self.cause {
            return Some(cause.clone());
        }
        if self.stalled {
            return Some(format!(
                "{STALLED} no output or progress events within the stall timeout"
            ));
        }
        if !self.drain_expired && self.signal.is_some() && self.signal == self.forwarded_signal() {
            return None;
        }
        let how = match (self.exit_code, self.signal) {
            (Some(0), _) => return None,
            (Some(code), _) => format!("skill exited {code}"),
            (None, Some(sig)) => format!("skill killed by signal {sig}"),
            (None, None) => "skill ended without a status".into(),
        };
        Some(match self.last_stderr() {
            Some(line) => format!("{how}: {line}"),
            None => how,
        })
    }
}

/// How the root cause of a skill command that never ran begins: what the
/// tick keys its `--skill-cmd` hint on.
pub const NOT_STARTED: &str = "the skill command could not be started";

/// How the root cause of a run the stall watchdog killed begins (an
/// agent's runner words it so too): what the tick keys its
/// `--stall-timeout` hint on.
pub const STALLED: &str = "stalled:";

/// Runs a wrapped skill.
pub trait SkillRunner: std::fmt::Debug {
    /// Runs the skill for `exchange`, echoing its output to `echo`.
    fn run(&mut self, spec: &RunSpec, exchange: &Exchange, echo: &mut dyn Write) -> RunOutcome;
}

/// The real runner: a child process group.
#[derive(Debug)]
pub struct ProcessRunner<'a> {
    pub interrupts: &'a dyn Interrupts,
    /// How often the watchdog looks at the clock, the stop file and the
    /// events file while no output arrives.
    pub tick: Duration,
}

enum Line {
    Out(String),
    Err(String),
}

/// Longest output line passed on whole; the rest of a longer one is not
/// shown. With [`LINES_IN_FLIGHT`] and [`BYTES_IN_FLIGHT`] this bounds
/// what a skill's output costs the engine, however much it prints (a 100
/// MB line once took 300 MB).
pub const LINE_MAX: usize = 64 * 1024;
/// Longest stdout line an agent's stream reader gets whole. Its lines are
/// JSON events, and an event holding a large tool input (a file the agent
/// writes) or final message runs past [`LINE_MAX`] while carrying the
/// response's usage: cut, it would not parse, and its spend would be lost.
pub const STREAM_LINE_MAX: usize = 16 * 1024 * 1024;
/// Lines read ahead of the echo: a skill printing faster than the engine
/// redacts waits for it (the pipe fills) instead of queueing in memory.
const LINES_IN_FLIGHT: usize = 256;
/// Bytes of lines read ahead of the echo, besides the one line that may
/// always go (however long): long agent lines wait as many short ones do.
const BYTES_IN_FLIGHT: usize = 16 * 1024 * 1024;

/// The bytes of the lines read but not yet handled, shared by the pumps
/// (which wait while too many are) and the loop that handles them.
#[derive(Default)]
struct InFlight {
    state: std::sync::Mutex<(usize, bool)>,
    freed: std::sync::Condvar,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, bool)> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits until `n` more bytes fit (at once when none are in flight);
    /// `false` once the handling side has gone.
    fn take(&self, n: usize) -> bool {
        let mut state = self.lock();
        while !state.1 && state.0 > 0 && state.0 + n > BYTES_IN_FLIGHT {
            state = self
                .freed
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        state.0 += n;
        !state.1
    }

    fn give(&self, n: usize) {
        let mut state = self.lock();
        state.0 = state.0.saturating_sub(n);
        self.freed.notify_all();
    }

    /// The handling side is gone: no pump waits any longer.
    fn close(&self) {
        self.lock().1 = true;
        self.freed.notify_all();
    }
}

/// Closes `InFlight` when the handling loop ends, however it ends.
struct Closing(Arc<InFlight>);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Bytes that end a token in every credential shape the redactor knows
/// (and start none).
fn ends_token(b: u8) -> bool {
    b.is_ascii_whitespace() || b"\"'=:,;()<>".contains(&b)
}

/// Reads and drops the rest of a line, its `\n` included; how many bytes
/// of text that was.
fn skip_rest_of_line(reader: &mut impl BufRead) -> u64 {
    let mut skipped = 0u64;
    loop {
        let (text, newline) = match reader.fill_buf() {
            Ok([]) | Err(_) => return skipped,
            Ok(buf) => match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (i, true),
                None => (buf.len(), false),
            },
        };
        reader.consume(text + usize::from(newline));
        skipped += text as u64;
        if newline {
            return skipped;
        }
    }
}

/// Where `bytes` end on a UTF-8 character boundary: before a character
/// whose last bytes they do not hold.
fn char_boundary(bytes: &[u8]) -> usize {
    let n = bytes.len();
    let tail = n.saturating_sub(4);
    let Some(lead) = bytes[tail..]
        .iter()
        .rposition(|b| b & 0xC0 != 0x80)
        .map(|i| tail + i)
    else {
        return n;
    };
    let width = match bytes[lead] {
        b if b >= 0xF0 => 4,
        b if b >= 0xE0 => 3,
        b if b >= 0xC0 => 2,
        _ => 1,
    };
    if lead + width > n { lead } else { n }
}

/// One line of output, at most `max` bytes of it: a longer line is cut at
/// its last token boundary, so no credential is shown in part where the
/// redactor could no longer recognise it, and says what it left out. A
/// line with no boundary in its first `max` bytes is cut at `max` (on a
/// character boundary): what it starts with is still shown.
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<usize> {
    buf.clear();
    let n = Read::take(&mut *reader, max as u64).read_until(b'\n', buf)?;
    if n == max && buf.last() != Some(&b'\n') {
        let keep = buf
            .iter()
            .rposition(|b| ends_token(*b))
            .map_or_else(|| char_boundary(buf), |i| i + 1);
        let hidden = (n - keep) as u64 + skip_rest_of_line(reader);
        buf.truncate(keep);
        buf.extend_from_slice(format!("[… {hidden} more bytes of this line not shown]").as_bytes());
    }
    Ok(n)
}

/// A pipe that counts the bytes read from it: the stall watchdog sees
/// output arrive within a line that has no end yet (a progress bar
/// redrawn with `\r`, one huge line being skipped past `LINE_MAX`), not
/// only when a whole line is handed over.
struct Counted<R> {
    inner: R,
    read: Arc<AtomicUsize>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n, Ordering::Relaxed);
        Ok(n)
    }
}

/// Where a pump reads and how long its lines may be.
struct Pipe<R> {
    reader: R,
    max: usize,
    err: bool,
}

fn pump(
    pipe: Pipe<impl Read + Send + 'static>,
    read: Arc<AtomicUsize>,
    tx: mpsc::SyncSender<Line>,
    in_flight: Arc<InFlight>,
) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(Counted {
            inner: pipe.reader,
            read,
        });
        let mut buf = Vec::new();
        loop {
            match read_line(&mut reader, &mut buf, pipe.max) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf)
                        .trim_end_matches(['\n', '\r'])
                        .to_owned();
                    if !in_flight.take(line.len()) {
                        break;
                    }
                    let msg = if pipe.err {
                        Line::Err(line)
                    } else {
                        Line::Out(line)
                    };
                    if tx.send(msg).is_err() {
                        break;
                    }
                }
            }
        }
    });
}

fn signal_group(pgid: u32, sig: rustix::process::Signal) {
    if let Some(pid) = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, sig);
    }
}

fn to_signal(sig: i32) -> rustix::process::Signal {
    if sig == signal_hook::consts::SIGTERM {
        rustix::process::Signal::TERM
    } else {
        rustix::process::Signal::INT
    }
}

impl SkillRunner for ProcessRunner<'_> {
    fn run(&mut self, spec: &RunSpec, exchange: &Exchange, echo: &mut dyn Write) -> RunOutcome {
        let mut outcome = RunOutcome::default();
        let mut command = match &spec.guard {
            Some(binary) => {
                let mut c = Command::new(binary);
                c.args(crate::skill::guard::args(
                    &crate::skill::guard::Guarded::Shell(spec.command.clone()),
                    std::process::id(),
                ));
                c
            }
            None => {
                let mut c = Command::new("sh");
                c.arg("-c").arg(&spec.command);
                c
            }
        };
        command
            .current_dir(&spec.cwd)
            .env(ENV_REQUEST, exchange.request_path())
            .env(ENV_RESULT, exchange.result_path())
            .env(ENV_EVENTS, exchange.events_path())
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .envs(
                spec.journal
                    .iter()
                    .filter(|_| spec.guard.is_some())
                    .map(|j| (crate::skill::keeper::ENV_JOURNAL, j)),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for name in &spec.env_removed {
            command.env_remove(name);
        }
        // Its own group: terminal Ctrl-C reaches the engine only, which
        // forwards it; and the watchdog can kill the skill's whole tree.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                outcome.spawn_error = Some(format!("sh -c {:?}: {e}", spec.command));
                return outcome;
            }
        };
        let mut outcome =
            self.supervise(child, spec, exchange, echo, LINE_MAX, &mut |line, echo| {
                let _ = writeln!(echo, "{line}");
            });
        outcome.shell_refused = outcome.refused_by_shell(exchange);
        outcome
    }
}

impl ProcessRunner<'_> {
    /// Watches a started child — the leader of its own process group —
    /// until it ends: its stderr echoed and kept (bounded) for root causes
    /// and scanned for the qmd sentinel, each stdout line handed to
    /// `on_stdout` (with the echo sink), the stall watchdog fed by every
    /// line and by growth of the exchange's events file, interrupts and
    /// the stop file forwarded to the group with the drain timeout. A
    /// stdout line longer than `stdout_max` bytes is cut (stderr's at
    /// [`LINE_MAX`]).
    pub fn supervise(
        &self,
        mut child: std::process::Child,
        spec: &RunSpec,
        exchange: &Exchange,
        echo: &mut dyn Write,
        stdout_max: usize,
        on_stdout: &mut dyn FnMut(&str, &mut dyn Write),
    ) -> RunOutcome {
        let mut outcome = RunOutcome::default();
        let pgid = child.id();
        if let Some(journal) = &spec.journal {
            let start =
                crate::os::liveness::ProcessProbe::start_time(&crate::os::liveness::OsProbe, pgid);
            let _ = crate::state::journal::Journal::record_skill_process(
                journal,
                crate::state::journal::SkillProcess { pgid, start },
            );
        }
        spec.crash.hit("after-spawn");
        let (tx, rx) = mpsc::sync_channel(LINES_IN_FLIGHT);
        // Bytes read from both pipes: any growth is output, for the stall
        // watchdog, though no line has ended.
        let output = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(InFlight::default());
        let _closing = Closing(Arc::clone(&in_flight));
        if let Some(out) = child.stdout.take() {
            let pipe = Pipe {
                reader: out,
                max: stdout_max,
                err: false,
            };
            pump(
                pipe,
                Arc::clone(&output),
                tx.clone(),
                Arc::clone(&in_flight),
            );
        }
        if let Some(err) = child.stderr.take() {
            let pipe = Pipe {
                reader: err,
                max: LINE_MAX,
                err: true,
            };
            pump(
                pipe,
                Arc::clone(&output),
                tx.clone(),
                Arc::clone(&in_flight),
            );
        }
        drop(tx);
        let mut output_seen = 0;

        let mut tail: VecDeque<String> = VecDeque::new();
        let mut stderr_lines = spec.redactor.lines();
        let mut last_progress = Instant::now();
        let mut events_len = exchange.events_len();
        let mut interrupt_at: Option<Instant> = None;
        let mut killed = false;
        let mut pipes_open = true;
        let mut exited_at: Option<Instant> = None;
        loop {
            let wait = if pipes_open {
                self.tick
            } else {
                Duration::ZERO
            };
            match rx.recv_timeout(wait) {
                Ok(line) => {
                    last_progress = Instant::now();
                    let (text, is_err) = match line {
                        Line::Out(t) => (t, false),
                        Line::Err(t) => (t, true),
                    };
                    in_flight.give(text.len());
                    if is_err {
                        let _ = writeln!(echo, "{text}");
                    } else {
                        on_stdout(&text, echo);
                    }
                    if is_err {
                        let kept =
                            crate::rules::redact::cut(&stderr_lines.line(&text), STDERR_LINE_MAX);
                        if outcome.qmd_line.is_none() && text.contains(QMD_SENTINEL) {
                            outcome.qmd_line = Some(kept.clone());
                        }
                        tail.push_back(kept);
                        if tail.len() > STDERR_TAIL_LINES {
                            tail.pop_front();
                        }
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => pipes_open = false,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if exited_at.is_none()
                && let Ok(Some(status)) = child.try_wait()
            {
                outcome.exit_code = status.code();
                outcome.signal = status.signal();
                exited_at = Some(Instant::now());
            }
            if let Some(at) = exited_at {
                // Output still buffered in the pipes is read to the end, but
                // a background process that inherited them must not hold the
                // tick: give it a moment, then stop reading.
                if !pipes_open || at.elapsed() > Duration::from_secs(2) {
                    break;
                }
                continue;
            }
            if killed {
                continue;
            }
            let len = exchange.events_len();
            let read = output.load(Ordering::Relaxed);
            if len != events_len || read != output_seen {
                events_len = len;
                output_seen = read;
                last_progress = Instant::now();
            }
            match interrupt_at {
                None => {
                    let trigger = match self.interrupts.pending() {
                        Some(sig) => Some(InterruptKind::Signal(sig)),
                        None if spec.stop_file.exists() => Some(InterruptKind::StopFile),
                        None => None,
                    };
                    if let Some(kind) = trigger {
                        outcome.interrupted = Some(kind);
                        interrupt_at = Some(Instant::now());
                        let sig = match kind {
                            InterruptKind::Signal(s) => to_signal(s),
                            InterruptKind::StopFile => rustix::process::Signal::INT,
                        };
                        signal_group(pgid, sig);
                    }
                }
                Some(at) if at.elapsed() > spec.drain_timeout => {
                    outcome.drain_expired = true;
                    signal_group(pgid, rustix::process::Signal::KILL);
                    killed = true;
                }
                Some(_) => {}
            }
            if !killed && interrupt_at.is_none() && last_progress.elapsed() > spec.stall_timeout {
                outcome.stalled = true;
                signal_group(pgid, rustix::process::Signal::KILL);
                killed = true;
            }
        }
        if exited_at.is_none()
            && let Ok(status) = child.wait()
        {
            outcome.exit_code = status.code();
            outcome.signal = status.signal();
        }
        outcome.stderr_tail = tail.into_iter().collect();
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::paths::{Skill, StatePaths};

    #[test]
    fn lines_in_flight_are_bounded_in_bytes_but_one_always_goes() {
        let f = Arc::new(InFlight::default());
        assert!(f.take(BYTES_IN_FLIGHT + 5), "one line, however long");
        let g = Arc::clone(&f);
        let waiting = std::thread::spawn(move || g.take(1));
        f.give(BYTES_IN_FLIGHT + 5);
        assert!(waiting.join().unwrap(), "goes once the first is handled");

        let f = Arc::new(InFlight::default());
        assert!(f.take(BYTES_IN_FLIGHT));
        let g = Arc::clone(&f);
        let waiting = std::thread::spawn(move || g.take(1));
        drop(Closing(Arc::clone(&f)));
        assert!(!waiting.join().unwrap(), "the handling side is gone");
    }

    fn setup() -> (tempfile::TempDir, Exchange, RunSpec) {
        let tmp = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(tmp.path(), Skill::Work, None);
        let ex = Exchange::for_iteration(&paths, 1);
        ex.prepare(&crate::state::protocol::SkillRequest {
            protocol: 1,
            skill: Skill::Work,
            iteration: 1,
            repository: None,
            issues: vec![],
            prs: vec![],
            max_new_prs: None,
            no_chain: false,
            dry_run: false,
        })
        .unwrap();
        let spec = RunSpec {
            command: String::new(),
            cwd: tmp.path().to_path_buf(),
            env: vec![("EXTRA".into(), "x".into())],
            env_removed: Vec::new(),
            stall_timeout: Duration::from_secs(60),
            drain_timeout: Duration::from_secs(60),
            stop_file: paths.stop_request(),
            crash: crate::os::crash::CrashPoints::none(),
            journal: None,
            guard: None,
            dollars_left: None,
            redactor: crate::rules::redact::Redactor::default(),
        };
        (tmp, ex, spec)
    }

    fn run(spec: &RunSpec, ex: &Exchange, interrupts: &dyn Interrupts) -> (RunOutcome, String) {
        let mut echo = Vec::new();
        let mut runner = ProcessRunner {
            interrupts,
            tick: Duration::from_millis(10),
        };
        let outcome = runner.run(spec, ex, &mut echo);
        (outcome, String::from_utf8(echo).unwrap())
    }

    #[test]
    fn passes_protocol_env_and_echoes_output() {
        let (_tmp, ex, mut spec) = setup();
        spec.command = "echo \"req=$SDD_LOOP_REQUEST\"; echo \"$EXTRA\" >&2; echo '{\"protocol\":1}' > \"$SDD_LOOP_RESULT\"".into();
        let (outcome, echo) = run(&spec, &ex, &NoInterrupts);
        assert_eq!(outcome.exit_code, Some(0));
        assert!(echo.contains(&format!("req={}", ex.request_path().display())));
        assert_eq!(outcome.stderr_tail, vec!["x".to_owned()]);
        assert!(ex.read_result().is_ok());
        assert_eq!(outcome.failure(), None);
    }

    #[test]
    fn a_removed_variable_does_not_reach_the_skill() {
        let (_tmp, ex, mut spec) = setup();
        spec.env_removed = vec!["EXTRA".into()];
        spec.command =
            "echo \"extra=${EXTRA-unset}\"; echo '{\"protocol\":1}' > \"$SDD_LOOP_RESULT\"".into();
        let (outcome, echo) = run(&spec, &ex, &NoInterrupts);
        assert_eq!(outcome.exit_code, Some(0));
        assert!(echo.contains("extra=unset"), "{echo}");
    }

    // A skill that died while printing a private key left the key's last
    // body line — which looks like nothing on its own — as the root cause
    // of its failure, verbatim; and a token at the length limit was cut in
    // two, half of it kept. The tail is now redacted as it is read.
    #[test]
    fn the_stderr_tail_is_redacted_in_context_before_it_is_cut() {
        let (_tmp, ex, mut spec) = setup();
        spec.command = "printf '%s\\n' '-----BEGIN PRIVATE KEY-----' 'MIIEvAIBADANBgkqhkiG9w0BAQEFAASC' >&2; exit 1".into();
        let (o, echo) = run(&spec, &ex, &NoInterrupts);
        assert_eq!(
            o.failure().as_deref(),
            Some("skill exited 1: [REDACTED:private-key]")
        );
        assert!(
            echo.contains("MIIEvAIBADAN"),
            "the echo is redacted by the tick"
        );

        let token = format!("ghp_{}", "A".repeat(36));
        let padding = "x".repeat(STDERR_LINE_MAX - 10);
        spec.command = format!("echo '{padding}{token}' >&2; exit 1");
        let (o, _) = run(&spec, &ex, &NoInterrupts);
        let kept = o.last_stderr().unwrap();
        // The cut fell inside the marker: it moves back before it, so no
        // half marker is kept (it was `…[REDACTED:`).
        assert!(kept.ends_with("x…"), "{}", &kept[kept.len() - 20..]);
        assert!(!kept.contains("[REDACTED"));
        assert!(!kept.contains("ghp_"));
    }

    #[test]
    fn qmd_signal_by_exit_status_first_then_sentinel() {
        let (_tmp, ex, mut spec) = setup();
        spec.command = "exit 78".into();
        assert!(run(&spec, &ex, &NoInterrupts).0.qmd_signal());
        spec.command = "echo 'error: qmd-unreachable: connection refused' >&2; exit 1".into();
        let (o, _) = run(&spec, &ex, &NoInterrupts);
        assert!(o.qmd_signal());
        assert_eq!(
            o.qmd_line.as_deref(),
            Some("error: qmd-unreachable: connection refused")
        );
        assert_eq!(
            o.failure().unwrap(),
            "skill exited 1: error: qmd-unreachable: connection refused"
        );
        spec.command = "echo 'warning: qmd-unreachable earlier' >&2; exit 0".into();
        assert!(!run(&spec, &ex, &NoInterrupts).0.qmd_signal());
    }

    // A skill's 100 MB line was held whole in the engine's memory (three
    // times over); lines are now cut, at a token boundary.
    #[test]
    fn a_long_line_is_cut_at_a_token_boundary_and_the_next_line_follows() {
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let mut text = "a ".repeat((LINE_MAX - 10) / 2);
        text.push_str(token);
        text.push_str(&"y".repeat(3 * LINE_MAX));
        text.push_str("\nnext line\n");
        let mut reader = std::io::Cursor::new(text.into_bytes());
        let mut buf = Vec::new();
        assert_eq!(
            read_line(&mut reader, &mut buf, LINE_MAX).unwrap(),
            LINE_MAX
        );
        let line = String::from_utf8(buf.clone()).unwrap();
        assert!(!line.contains("ghp_"), "a token shown in part");
        assert!(line.starts_with("a a "));
        assert!(
            line.ends_with(&format!(
                "[… {} more bytes of this line not shown]",
                3 * LINE_MAX + 40
            )),
            "{}",
            &line[line.len() - 60..]
        );
        read_line(&mut reader, &mut buf, LINE_MAX).unwrap();
        assert_eq!(buf, b"next line\n");
        assert_eq!(read_line(&mut reader, &mut buf, LINE_MAX).unwrap(), 0);
    }

    // A 200 KiB line with no token boundary was echoed as nothing but the
    // note of how much of it was not shown.
    #[test]
    fn a_long_line_with_no_token_boundary_is_cut_at_the_limit_on_a_char_boundary() {
        for fill in ["L", "é", "€", "😀"] {
            let head = "x".repeat(LINE_MAX - 1);
            let rest = fill.repeat(2 * LINE_MAX / fill.len());
            let text = format!("{head}{rest}\nnext line\n");
            let mut reader = std::io::Cursor::new(text.into_bytes());
            let mut buf = Vec::new();
            read_line(&mut reader, &mut buf, LINE_MAX).unwrap();
            let line = String::from_utf8(buf.clone()).expect("cut on a char boundary");
            // The fill's first character fits in the last byte only when it
            // is one byte long.
            let shown = if fill.len() == 1 {
                format!("{head}{fill}")
            } else {
                head.clone()
            };
            let hidden = head.len() + rest.len() - shown.len();
            assert_eq!(
                line,
                format!("{shown}[… {hidden} more bytes of this line not shown]"),
                "fill {fill:?}"
            );
            read_line(&mut reader, &mut buf, LINE_MAX).unwrap();
            assert_eq!(buf, b"next line\n");
        }
    }

    #[test]
    fn stderr_tail_is_bounded() {
        let (_tmp, ex, mut spec) = setup();
        spec.command =
            "i=0; while [ $i -lt 100 ]; do echo line$i >&2; i=$((i+1)); done; exit 3".into();
        let (o, _) = run(&spec, &ex, &NoInterrupts);
        assert_eq!(o.stderr_tail.len(), STDERR_TAIL_LINES);
        assert_eq!(o.stderr_tail.last().unwrap(), "line99");
        assert_eq!(o.failure().unwrap(), "skill exited 3: line99");
    }

    #[test]
    fn stall_watchdog_kills_a_silent_skill() {
        let (_tmp, ex, mut spec) = setup();
        spec.command = "exec sleep 600".into();
        spec.stall_timeout = Duration::from_millis(200);
        let (o, _) = run(&spec, &ex, &NoInterrupts);
        assert!(o.stalled);
        assert_eq!(o.signal, Some(9));
        assert!(o.failure().unwrap().starts_with("stalled"));
    }

    // A line still being written is output: the watchdog must not kill a
    // skill that writes for longer than the stall timeout before its
    // first newline (the reliability program's 32 MiB line was killed so
    // under load, while it was being read).
    #[test]
    fn output_within_an_unended_line_feeds_the_stall_watchdog() {
        let (_tmp, ex, mut spec) = setup();
        spec.command =
            "i=0; while [ $i -lt 12 ]; do printf x; sleep 0.1; i=$((i+1)); done; echo; exit 0"
                .into();
        spec.stall_timeout = Duration::from_millis(400);
        let (o, _) = run(&spec, &ex, &NoInterrupts);
        assert!(!o.stalled, "{:?}", o.failure());
        assert_eq!(o.exit_code, Some(0));
    }

    /// An interrupt pending once the skill has written `ready` — after it
    /// set its trap: an interrupt sent before the shell had read its
    /// `trap` would end it by the signal's default action.
    #[derive(Debug)]
    struct Pending {
        signal: i32,
        ready: std::path::PathBuf,
    }
    impl Interrupts for Pending {
        fn pending(&self) -> Option<i32> {
            self.ready.exists().then_some(self.signal)
        }
    }

    /// `Pending` for a skill whose command writes `$READY`.
    fn pending_when_ready(spec: &mut RunSpec, signal: i32) -> Pending {
        let ready = spec.cwd.join("ready");
        spec.env.push(("READY".into(), ready.display().to_string()));
        Pending { signal, ready }
    }

    #[test]
    fn interrupt_is_forwarded_and_the_skill_drains() {
        let (_tmp, ex, mut spec) = setup();
        // The skill records the interrupt and finishes its iteration.
        spec.command = "trap 'echo drained >&2; echo \"{\\\"protocol\\\":1}\" > \"$SDD_LOOP_RESULT\"; exit 0' INT; : > \"$READY\"; while :; do sleep 0.05; done".into();
        let pending = pending_when_ready(&mut spec, 2);
        let (o, _) = run(&spec, &ex, &pending);
        assert_eq!(o.interrupted, Some(InterruptKind::Signal(2)));
        assert!(!o.drain_expired);
        assert_eq!(o.exit_code, Some(0));
        assert!(o.stderr_tail.contains(&"drained".to_owned()));
        assert!(ex.read_result().is_ok());
    }

    #[test]
    fn drain_timeout_kills_a_skill_that_ignores_the_interrupt() {
        let (_tmp, ex, mut spec) = setup();
        spec.command = "trap '' INT TERM; : > \"$READY\"; while :; do sleep 0.05; done".into();
        spec.drain_timeout = Duration::from_millis(200);
        let pending = pending_when_ready(&mut spec, 15);
        let (o, _) = run(&spec, &ex, &pending);
        assert!(o.drain_expired);
        assert_eq!(o.signal, Some(9));
    }

    #[test]
    fn stop_file_interrupts_like_a_signal() {
        let (_tmp, ex, mut spec) = setup();
        // The skill writes the stop file itself once its trap is set: a
        // stop file there before the shell had read its trap would end it
        // by the signal's default action (seen under load).
        let stop = spec.stop_file.display().to_string();
        spec.env.push(("STOP_FILE".into(), stop));
        spec.command = "trap 'exit 0' INT; : > \"$STOP_FILE\"; while :; do sleep 0.05; done".into();
        let (o, _) = run(&spec, &ex, &NoInterrupts);
        assert_eq!(o.interrupted, Some(InterruptKind::StopFile));
        assert_eq!(o.exit_code, Some(0));
    }

    #[test]
    fn missing_command_is_a_clear_failure() {
        let (_tmp, ex, mut spec) = setup();
        spec.command = "definitely-not-a-command-xyz".into();
        let (o, _) = run(&spec, &ex, &NoInterrupts);
        assert_eq!(o.exit_code, Some(127));
        assert!(o.could_not_start(), "{o:?}");
        let why = o.failure().unwrap();
        assert!(
            why.starts_with(NOT_STARTED) && why.contains("definitely-not-a-command-xyz: not found"),
            "{why}"
        );
    }

    // Regression: a mistyped skill command was the work's failure (exit
    // 127 blamed on the issues), so a second iteration ran it again.
    #[test]
    fn a_script_that_cannot_open_is_not_started_but_a_script_that_fails_so_is_the_work() {
        let (tmp, ex, mut spec) = setup();
        spec.command = "sh ./no-such-skill.sh".into();
        let (o, _) = run(&spec, &ex, &NoInterrupts);
        assert!(o.could_not_start(), "{o:?}");
        std::fs::write(
            tmp.path().join("skill.sh"),
            "echo working >&2\nmissing-tool-xyz\n",
        )
        .unwrap();
        spec.command = "sh ./skill.sh".into();
        let (o, _) = run(&spec, &ex, &NoInterrupts);
        assert_eq!(o.exit_code, Some(127));
        assert!(!o.could_not_start(), "the script ran: {o:?}");
        assert!(o.failure().unwrap().starts_with("skill exited 127"));
    }
}
