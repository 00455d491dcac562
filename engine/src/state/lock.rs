//! The per-skill lockfile `.sdd/loop/{skill}.lock` (ADR-0028, "Concurrency
//! model"): one tick at a time per skill, stale holders reaped by PID
//! liveness alone.
//!
//! The contract's recipe — read the lock, check the PID, temp-write and
//! rename — is atomic but not *exclusive*: two ticks released together both
//! see "no lock" and both rename theirs into place, and two reapers of the
//! same dead holder can each delete the other's fresh lock. So the whole
//! read–check–reap–create sequence runs inside a short critical section
//! under an OS advisory lock (`flock`) on a companion guard file,
//! `{skill}.lock.guard`, which is never deleted (deleting it would let a new
//! guard inode race the old one). Inside the section the lock JSON is
//! published by unique temp file + rename, so readers that do not take the
//! guard (`sdd-loop status`) never see a partial file. The lock file keeps
//! its contract meaning: present while a tick runs, removed on graceful
//! exit, its PID checked when found.
//!
//! The main type is [`HeldLock`], obtained from [`acquire`] in one of the
//! three modes of [`LockMode`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::os::clock::Clock;
use crate::os::liveness::{self, Liveness, ProcessProbe};
use crate::state::files::{self, Durability, FileError};
use crate::state::paths::StatePaths;

/// The lockfile's content: the contract's four fields, plus the holder's
/// process start time (so a recycled PID is recognised) and any fields
/// another implementation added, which are preserved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LockRecord {
    /// The holder's process id.
    pub pid: u32,
    /// The iteration the holder is running.
    pub iteration: u64,
    /// When the holder acquired the lock (RFC 3339 UTC).
    pub started_at: String,
    /// `work` or `review`.
    pub skill: String,
    /// Opaque process start time of `pid` (Linux: `/proc/{pid}/stat`
    /// field 22). Absent when the writer could not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_start: Option<u64>,
    /// Fields written by other implementations; kept on rewrite.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl LockRecord {
    /// The lockfile's bytes: one JSON line.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).expect("a lock record always serialises");
        bytes.push(b'\n');
        bytes
    }

    /// A lockfile's bytes as a record.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }
}

/// Who is asking for the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub pid: u32,
    pub process_start: Option<u64>,
}

impl Identity {
    /// The current process.
    pub fn current(probe: &dyn ProcessProbe) -> Self {
        let (pid, process_start) = liveness::current_process(probe);
        Self { pid, process_start }
    }
}

/// The `--lock=force` confirmation, answered by the force-unlock gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForceDecision {
    /// Reap the holder's lock and proceed.
    Yes,
    /// Leave it; skip this tick.
    No,
    /// Halt the loop.
    Stop,
}

/// How to behave when the lock is held by a live (or unknowable) holder.
pub enum LockMode<'a> {
    /// `--lock=skip` (default): give up at once.
    Skip,
    /// `--lock=wait`: poll until the holder is gone, `deadline` (a reading
    /// of `clock`'s [`Clock::monotonic`]) passes, or `interrupted` says the
    /// user asked to stop. The polls are the clock's sleeps, so under a
    /// simulated clock the deadline comes without the real wait. `waiting`
    /// is told once, when the first attempt finds the lock held (so the
    /// user learns why the tick does not return).
    Wait {
        poll: Duration,
        deadline: Duration,
        clock: &'a dyn Clock,
        interrupted: &'a dyn Fn() -> bool,
        waiting: &'a mut dyn FnMut(&Holder),
    },
    /// `--lock=force`: ask `decide` (the force-unlock gate) about the
    /// holder; it is called outside the critical section, so it may block
    /// on a person.
    Force(&'a mut dyn FnMut(&Holder) -> ForceDecision),
}

impl std::fmt::Debug for LockMode<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockMode::Skip => f.write_str("Skip"),
            LockMode::Wait { poll, deadline, .. } => f
                .debug_struct("Wait")
                .field("poll", poll)
                .field("deadline", deadline)
                .finish(),
            LockMode::Force(_) => f.write_str("Force(..)"),
        }
    }
}

/// What was found in an existing lockfile that blocks acquisition.
#[derive(Debug, Clone, PartialEq)]
pub enum Holder {
    /// A live holder.
    Alive(LockRecord),
    /// The liveness probe could not decide; treated as alive.
    Ambiguous { record: LockRecord, detail: String },
    /// The file exists but is not a lock record; treated as alive.
    Unreadable { detail: String },
}

impl Holder {
    pub fn pid(&self) -> Option<u32> {
        match self {
            Holder::Alive(r) | Holder::Ambiguous { record: r, .. } => Some(r.pid),
            Holder::Unreadable { .. } => None,
        }
    }

    fn same_as(&self, found: &Found) -> bool {
        match (self, found) {
            (Holder::Alive(a) | Holder::Ambiguous { record: a, .. }, Found::Record(b)) => {
                a.pid == b.pid && a.process_start == b.process_start && a.started_at == b.started_at
            }
            (Holder::Unreadable { .. }, Found::Unreadable(_)) => true,
            _ => false,
        }
    }

    /// Who holds the lock, for a tick that waits for it (`--lock wait`):
    /// the skip note's facts without its "skipping this tick".
    pub fn held_by(&self, platform: &str) -> String {
        match self {
            Holder::Alive(r) => format!(
                "previous iteration {} still active, pid {}",
                r.iteration, r.pid
            ),
            Holder::Ambiguous { record, .. } => format!(
                "pid {}, whose liveness on {platform} is ambiguous, treated as alive",
                record.pid
            ),
            Holder::Unreadable { detail } => {
                format!("the lockfile is unreadable ({detail}), treated as held")
            }
        }
    }

    /// The contract's one-line note for a tick that does not get the lock.
    pub fn skip_note(&self, platform: &str) -> String {
        match self {
            Holder::Alive(r) => format!(
                "Previous iteration {} still active (pid {}) — skipping this tick",
                r.iteration, r.pid
            ),
            Holder::Ambiguous { record, .. } => format!(
                "Lockfile staleness check ambiguous for pid {} on {platform} — treating as alive (skipping this tick).",
                record.pid
            ),
            Holder::Unreadable { detail } => format!(
                "Lockfile is unreadable ({detail}) — treating as held (skipping this tick). Delete it if no loop is running, or pass --lock=force."
            ),
        }
    }
}

/// How the lock was obtained.
#[derive(Debug, Clone, PartialEq)]
pub enum Acquisition {
    /// No lock was present.
    Fresh,
    /// A dead (or recycled-PID) holder's lock was replaced.
    Reaped { pid: u32, verdict: Liveness },
    /// A live or unknowable holder's lock was replaced after confirmation.
    Forced { pid: Option<u32> },
}

impl Acquisition {
    /// The contract's one-line note, if this acquisition warrants one.
    pub fn note(&self) -> Option<String> {
        match self {
            Acquisition::Fresh => None,
            Acquisition::Reaped { pid, .. } => Some(format!("Reaped stale lock for pid {pid}")),
            Acquisition::Forced { pid: Some(pid) } => Some(format!(
                "Force-unlocked previous iteration (was pid {pid}) — proceeding"
            )),
            Acquisition::Forced { pid: None } => Some(
                "Force-unlocked previous iteration (unreadable lockfile) — proceeding".to_owned(),
            ),
        }
    }
}

/// Why the lock was not obtained.
#[derive(Debug, Clone, PartialEq)]
pub enum Denied {
    /// `skip` mode met a holder.
    Held(Holder),
    /// `wait` mode's deadline passed with the holder still there.
    WaitExpired(Holder),
    /// `wait` mode was interrupted (SIGINT/SIGTERM) while waiting.
    WaitInterrupted(Holder),
    /// The force-unlock gate answered `no`.
    ForceDeclined(Holder),
    /// The force-unlock gate answered `stop`.
    ForceStopped(Holder),
}

impl Denied {
    pub fn holder(&self) -> &Holder {
        match self {
            Denied::Held(h)
            | Denied::WaitExpired(h)
            | Denied::WaitInterrupted(h)
            | Denied::ForceDeclined(h)
            | Denied::ForceStopped(h) => h,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("cannot take the advisory lock on {path}: {source}")]
    Guard {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What the critical section read at the lock path.
#[derive(Debug)]
enum Found {
    Nothing,
    Record(LockRecord),
    Unreadable(String),
}

fn read_found(path: &Path) -> Result<Found, FileError> {
    Ok(match files::read_bytes(path)? {
        None => Found::Nothing,
        Some(bytes) => match LockRecord::from_slice(&bytes) {
            Ok(record) => Found::Record(record),
            Err(err) => Found::Unreadable(format!("{}: {err}", path.display())),
        },
    })
}

/// Reads the lockfile without taking the guard; for read-only inspection
/// (`sdd-loop status`). Publication is by rename, so the read is whole.
pub fn peek(paths: &StatePaths) -> Result<Option<Result<LockRecord, String>>, FileError> {
    Ok(match read_found(&paths.lock())? {
        Found::Nothing => None,
        Found::Record(r) => Some(Ok(r)),
        Found::Unreadable(d) => Some(Err(d)),
    })
}

/// Runs `f` while holding the guard's advisory lock. The lock is released
/// when the file handle closes, including when this process dies.
fn with_guard<T>(guard: &Path, f: impl FnOnce() -> Result<T, LockError>) -> Result<T, LockError> {
    let file = files::open_persistent(guard)?;
    file.lock().map_err(|source| LockError::Guard {
        path: guard.to_path_buf(),
        source,
    })?;
    let result = f();
    drop(file);
    result
}

/// One pass of the critical section.
enum Step {
    Got(Acquisition),
    Blocked(Holder),
}

struct Acquirer<'a> {
    paths: &'a StatePaths,
    probe: &'a dyn ProcessProbe,
    me: Identity,
    record: LockRecord,
}

impl Acquirer<'_> {
    fn classify(&self, found: Found) -> Result<Holder, Acquisition> {
        match found {
            Found::Nothing => Err(Acquisition::Fresh),
            Found::Unreadable(detail) => Ok(Holder::Unreadable { detail }),
            Found::Record(record) => {
                let verdict = if record.pid == self.me.pid {
                    if record.process_start == self.me.process_start {
                        // Our own live lock: a lock is not re-entrant.
                        Liveness::Alive
                    } else {
                        // We are this PID now, so the recorded process is gone.
                        Liveness::Recycled {
                            recorded: record.process_start.unwrap_or(0),
                            actual: self.me.process_start.unwrap_or(0),
                        }
                    }
                } else {
                    liveness::check(self.probe, record.pid, record.process_start)
                };
                match verdict {
                    Liveness::Alive => Ok(Holder::Alive(record)),
                    Liveness::Ambiguous { detail } => Ok(Holder::Ambiguous { record, detail }),
                    dead => Err(Acquisition::Reaped {
                        pid: record.pid,
                        verdict: dead,
                    }),
                }
            }
        }
    }

    fn publish(&self) -> Result<(), FileError> {
        files::write_atomic(&self.paths.lock(), &self.record.to_bytes())
    }

    /// Read, check, reap-or-create: the critical section.
    fn attempt(&self) -> Result<Step, LockError> {
        with_guard(&self.paths.lock_guard(), || {
            let found = read_found(&self.paths.lock())?;
            match self.classify(found) {
                Err(acquisition) => {
                    // Rename replaces a dead holder's file in one step: there
                    // is no moment with no lock for a third tick to take.
                    self.publish()?;
                    Ok(Step::Got(acquisition))
                }
                Ok(holder) => Ok(Step::Blocked(holder)),
            }
        })
    }

    /// Replaces `holder`'s lock if it is still the one there.
    fn force(&self, holder: &Holder) -> Result<Option<Acquisition>, LockError> {
        with_guard(&self.paths.lock_guard(), || {
            let found = read_found(&self.paths.lock())?;
            if matches!(found, Found::Nothing) {
                self.publish()?;
                return Ok(Some(Acquisition::Fresh));
            }
            if !holder.same_as(&found) {
                return Ok(None);
            }
            self.publish()?;
            Ok(Some(Acquisition::Forced { pid: holder.pid() }))
        })
    }

    fn hold(self, how: Acquisition) -> (HeldLock, Acquisition) {
        (
            HeldLock {
                path: self.paths.lock(),
                guard: self.paths.lock_guard(),
                record: self.record,
                released: false,
            },
            how,
        )
    }
}

/// Takes `paths.lock()` for `me`, recording `iteration` and `started_at`.
///
/// `Ok(Err(denied))` is the normal "someone else holds it" answer;
/// `Err` is a filesystem failure.
pub fn acquire(
    paths: &StatePaths,
    probe: &dyn ProcessProbe,
    me: Identity,
    iteration: u64,
    started_at: &str,
    mut mode: LockMode<'_>,
) -> Result<Result<(HeldLock, Acquisition), Denied>, LockError> {
    files::ensure_state_dir(&paths.dir)?;
    let acquirer = Acquirer {
        paths,
        probe,
        me,
        record: LockRecord {
            pid: me.pid,
            iteration,
            started_at: started_at.to_owned(),
            skill: paths.skill.to_string(),
            process_start: me.process_start,
            extra: Map::new(),
        },
    };
    let mut told = false;
    loop {
        let holder = match acquirer.attempt()? {
            Step::Got(how) => return Ok(Ok(acquirer.hold(how))),
            Step::Blocked(holder) => holder,
        };
        match &mut mode {
            LockMode::Skip => return Ok(Err(Denied::Held(holder))),
            LockMode::Wait {
                poll,
                deadline,
                clock,
                interrupted,
                waiting,
            } => {
                if !told {
                    told = true;
                    waiting(&holder);
                }
                if interrupted() {
                    return Ok(Err(Denied::WaitInterrupted(holder)));
                }
                let now = clock.monotonic();
                if now >= *deadline {
                    return Ok(Err(Denied::WaitExpired(holder)));
                }
                clock.sleep((*poll).min(*deadline - now));
            }
            LockMode::Force(decide) => match decide(&holder) {
                ForceDecision::No => return Ok(Err(Denied::ForceDeclined(holder))),
                ForceDecision::Stop => return Ok(Err(Denied::ForceStopped(holder))),
                ForceDecision::Yes => {
                    if let Some(how) = acquirer.force(&holder)? {
                        return Ok(Ok(acquirer.hold(how)));
                    }
                    // The lock changed hands while the question was open:
                    // the answer was about another holder, so ask again.
                }
            },
        }
    }
}

/// What [`HeldLock::release`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Release {
    /// Our lock was removed.
    Released,
    /// The lock was gone already.
    AlreadyGone,
    /// Another tick force-unlocked us; its lock was left in place.
    TakenOver { by_pid: Option<u32> },
}

/// A lock this process holds. Release it with [`HeldLock::release`]; if it
/// is dropped instead (an early return, a panic) it is released then.
#[derive(Debug)]
pub struct HeldLock {
    path: PathBuf,
    guard: PathBuf,
    record: LockRecord,
    released: bool,
}

impl HeldLock {
    pub fn record(&self) -> &LockRecord {
        &self.record
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn still_ours(&self, found: &Found) -> bool {
        matches!(found, Found::Record(r)
            if r.pid == self.record.pid
                && r.process_start == self.record.process_start
                && r.started_at == self.record.started_at)
    }

    /// Rewrites the lock with the iteration number, once the tick knows it.
    /// The lock already naming it (the acquiring tick's guess was right,
    /// as it is unless a crash is being recovered) is left as it is.
    /// `false`: the lock on disk is no longer this tick's (looked at only
    /// when it is rewritten).
    pub fn set_iteration(&mut self, iteration: u64) -> Result<bool, LockError> {
        if self.record.iteration == iteration {
            return Ok(true);
        }
        let mut record = self.record.clone();
        record.iteration = iteration;
        let ours = with_guard(&self.guard, || {
            let found = read_found(&self.path)?;
            if !self.still_ours(&found) {
                return Ok(false);
            }
            files::write_atomic(&self.path, &record.to_bytes())?;
            Ok(true)
        })?;
        if ours {
            self.record = record;
        }
        Ok(ours)
    }

    /// Leaves the lock in place for the other half of the tick: `begin`
    /// ends with the lock held for the session, and `end` adopts it.
    pub fn keep(mut self) -> LockRecord {
        self.released = true;
        self.record.clone()
    }

    /// Adopts the lock `record` names if it is still the one on disk (same
    /// holder pid, start time and acquisition time); otherwise says what is
    /// there instead (`None`: no lock at all).
    pub fn adopt(
        paths: &StatePaths,
        record: LockRecord,
    ) -> Result<Result<HeldLock, Option<Result<LockRecord, String>>>, LockError> {
        let mut held = HeldLock {
            path: paths.lock(),
            guard: paths.lock_guard(),
            record,
            released: true,
        };
        let found = with_guard(&held.guard, || Ok(read_found(&held.path)?))?;
        if held.still_ours(&found) {
            held.released = false;
            return Ok(Ok(held));
        }
        Ok(Err(match found {
            Found::Nothing => None,
            Found::Record(r) => Some(Ok(r)),
            Found::Unreadable(d) => Some(Err(d)),
        }))
    }

    /// Removes the lock if it is still ours (graceful exit).
    pub fn release(mut self) -> Result<Release, LockError> {
        self.released = true;
        self.release_inner()
    }

    fn release_inner(&self) -> Result<Release, LockError> {
        with_guard(&self.guard, || {
            let found = read_found(&self.path)?;
            match &found {
                Found::Nothing => Ok(Release::AlreadyGone),
                _ if self.still_ours(&found) => {
                    // Not waited for on disk: a lock back after a power
                    // failure names a process that is gone, which the
                    // next tick reaps (crash point `before-release`).
                    files::remove_if_present_with(&self.path, Durability::OldOrNew)?;
                    Ok(Release::Released)
                }
                Found::Record(r) => Ok(Release::TakenOver {
                    by_pid: Some(r.pid),
                }),
                Found::Unreadable(_) => Ok(Release::TakenOver { by_pid: None }),
            }
        })
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        if !self.released {
            let _ = self.release_inner();
        }
    }
}

#[cfg(test)]
mod tests;
