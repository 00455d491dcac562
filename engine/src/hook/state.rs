//! What the hooks remember between calls, beside the engine's own state:
//!
//! - [`Session`], `.sdd/loop/{skill}.sessions/{session}.json`, one file per
//!   Claude Code session: the last loop prompt the session sent (its
//!   `prompt_id`, and the iteration it began), so a tool call of that
//!   prompt made after its iteration ended is known for one; a gate
//!   question waiting for its answer in the session's next prompt; a turn
//!   that ended with that iteration open; and an ended run the session was
//!   told of. Each session writes only its own file, so another session's
//!   loop prompt in the same project (a second terminal, a peer skipped
//!   because this one holds the lock) never overwrites it. Records of
//!   other sessions unused for [`STALE_AFTER`] (beyond [`KEEP_AT_MOST`],
//!   the oldest) are removed when a record is written — never the one of
//!   the session whose iteration is open. The single record of earlier
//!   versions, `{skill}.hook.json`, is still read for the session it
//!   names, and removed once that session writes its own.
//! - [`Counts`], `hooks.json` in the iteration's exchange directory: the
//!   PRs and reviews the `PreToolUse` hook let through this iteration. It
//!   lives and dies with the iteration, and is read and written under an
//!   advisory lock (`hooks.lock` beside it), since Claude Code may run the
//!   hooks of several tool calls at once: two `gh pr create` racing for
//!   the last PR left cannot both be let through.
//!
//! Both are redacted like every state file before they are written.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::rules::redact::Redactor;
use crate::state::exchange::Exchange;
use crate::state::files::{self, FileError};
use crate::state::journal::Journal;
use crate::state::paths::StatePaths;

/// How long a session's record is kept unused (by its file's mtime):
/// longer than a `/loop` cron job lives (7 days), so each of its fires
/// after the run ended is still refused without `begin`.
pub const STALE_AFTER: Duration = Duration::from_secs(8 * 24 * 60 * 60);

/// How many sessions' records are kept at most, the newest: a project
/// whose ticks each run in a new `claude -p` session writes one a tick.
pub const KEEP_AT_MOST: usize = 64;

/// The longest file name (before `.json`) a session id is kept in.
const KEY_MAX: usize = 96;

/// A gate question asked through a blocked prompt, waiting for its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pending {
    pub gate: String,
    pub question: String,
    pub options: Vec<String>,
    /// The skill name the loop prompt used (`/sdd:work`).
    pub name: String,
    /// The loop prompt's flags, to run `begin` again with the answer.
    pub flags: Vec<String>,
}

/// The last loop prompt of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_id: Option<String>,
    /// The iteration the prompt began, if it began one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pending>,
    /// The session's turn ended (its Stop hook ran) with `iteration` still
    /// open: `end` failed. Its next loop prompt ends the iteration, from
    /// a new process too; without this the session died mid-turn, and the
    /// iteration is recovered as interrupted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// The session's turn ended on this model-API error (`StopFailure`)
    /// with `iteration` still open: `end` failed. The session's end tries
    /// again with the same cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<String>,
    /// The run this session's loop prompt found ended, and the final
    /// report it was shown: a later fire of the same loop (a `/loop` cron
    /// job keeps firing) is refused without running `begin` again, so it
    /// records nothing more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
    /// The prompt's tick was skipped, and the prompt went on to the model
    /// only to re-arm a self-paced `/loop`'s wakeup: in its turn every PR,
    /// merge, review and push is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
}

/// An ended run, as a session was told of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ended {
    /// The run's `started_at` in budget.json.
    pub started_at: String,
    /// Its stop cause's name.
    pub cause: String,
    /// The iteration its stop was recorded in.
    pub iteration: u64,
    /// The final report the session was shown.
    pub report: String,
}

/// A hook state file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("hook state file {path} is unreadable: {detail}")]
    Invalid { path: PathBuf, detail: String },
}

fn load<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, StateError> {
    match files::read_bytes(path)? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| StateError::Invalid {
                path: path.to_path_buf(),
                detail: e.to_string(),
            }),
    }
}

fn save<T: Serialize>(path: &Path, value: &T, redactor: &Redactor) -> Result<(), FileError> {
    let mut json = serde_json::to_value(value).expect("hook state serialises");
    redactor.redact_json(&mut json);
    let mut bytes = serde_json::to_vec_pretty(&json).expect("hook state serialises");
    bytes.push(b'\n');
    files::write_atomic(path, &bytes)
}

/// The file name (before `.json`) of session `id`'s record. Claude Code's
/// session ids are UUIDs, kept as they are; any other byte than
/// `[A-Za-z0-9_-]` is written `%XX`, so two ids never share a name, and a
/// name longer than [`KEY_MAX`] is cut and ends `~` and the id's FNV-1a
/// hash (`~` is never otherwise in a name). The record names its session
/// too: a record found under another session's name is not that
/// session's.
pub fn key(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.is_empty() {
        return "%".into();
    }
    if out.len() > KEY_MAX {
        let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        // All ASCII: any cut is a character boundary.
        out.truncate(KEY_MAX - 17);
        out.push_str(&format!("~{hash:016x}"));
    }
    out
}

impl Session {
    /// The directory of this skill's session records.
    pub fn dir(paths: &StatePaths) -> PathBuf {
        paths.dir.join(format!("{}.sessions", paths.skill))
    }

    /// Session `session_id`'s record file.
    pub fn path(paths: &StatePaths, session_id: &str) -> PathBuf {
        Self::dir(paths).join(format!("{}.json", key(session_id)))
    }

    /// The one record every session shared before (`{skill}.hook.json`):
    /// read for the session it names, never written.
    pub fn legacy_path(paths: &StatePaths) -> PathBuf {
        paths.dir.join(format!("{}.hook.json", paths.skill))
    }

    /// Session `session_id`'s record: its own file, else the legacy
    /// record if that names it.
    pub fn load(paths: &StatePaths, session_id: &str) -> Result<Option<Self>, StateError> {
        let own = load::<Self>(&Self::path(paths, session_id))?;
        let found = match own {
            Some(record) => Some(record),
            None => load::<Self>(&Self::legacy_path(paths))?,
        };
        Ok(found.filter(|s| s.session_id == session_id))
    }

    /// Writes this session's record (its own file, `0600` in a `0700`
    /// directory), then removes what was left over: the legacy record if
    /// it names this session, and stale records of other sessions.
    pub fn save(&self, paths: &StatePaths, redactor: &Redactor) -> Result<(), FileError> {
        files::ensure_state_dir(&paths.dir)?;
        files::ensure_private_dir(&Self::dir(paths))?;
        let path = Self::path(paths, &self.session_id);
        save(&path, self, redactor)?;
        let legacy = Self::legacy_path(paths);
        if load::<Self>(&legacy)
            .ok()
            .flatten()
            .is_some_and(|s| s.session_id == self.session_id)
        {
            let _ = files::remove_if_present(&legacy);
        }
        let open = Journal::load(&paths.inflight())
            .ok()
            .flatten()
            .map(|j| j.iteration);
        prune(paths, &path, open, SystemTime::now());
        Ok(())
    }

    /// Session `session_id`'s record, when it says the session began
    /// `iteration` with its last loop prompt.
    pub fn began(paths: &StatePaths, session_id: &str, iteration: u64) -> Option<Self> {
        Self::load(paths, session_id)
            .ok()
            .flatten()
            .filter(|s| s.iteration == Some(iteration))
    }
}

/// Removes the records of other sessions than `keep`'s that are stale at
/// `now` (unused for [`STALE_AFTER`], or beyond the newest
/// [`KEEP_AT_MOST`]), a stale legacy record, and temporary files a
/// killed writer left ([`files::sweep_temporaries`]); never the record of the session that began the
/// `open` iteration (it ends that iteration), never anything not a
/// regular file. Best effort: what cannot be read or removed stays.
fn prune(paths: &StatePaths, keep: &Path, open: Option<u64>, now: SystemTime) {
    let dir = Session::dir(paths);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let in_use = |path: &Path| {
        open.is_some()
            && load::<Session>(path)
                .ok()
                .flatten()
                .is_some_and(|s| s.iteration == open)
    };
    let stale = |modified: SystemTime| {
        now.duration_since(modified)
            .is_ok_and(|age| age > STALE_AFTER)
    };
    let mut records: Vec<(SystemTime, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_file() || path == keep {
            continue;
        }
        let modified = meta.modified().unwrap_or(now);
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.starts_with('.') && name.ends_with(".json") {
            records.push((modified, path));
        }
    }
    // A write's temporary file, left by a process killed mid-way.
    let probe = crate::os::liveness::OsProbe;
    files::sweep_temporaries(&dir, |pid| {
        !matches!(
            crate::os::liveness::ProcessProbe::signal_zero(&probe, pid),
            crate::os::liveness::SignalZero::NoSuchProcess
        )
    });
    // Newest first: the oldest beyond the cap go, as do the stale.
    records.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut kept = 1; // `keep`'s own
    // Not if its session wrote it again since it was listed.
    let unchanged = |path: &Path, modified: SystemTime| {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.modified().ok() == Some(modified))
    };
    for (modified, path) in records {
        if (kept >= KEEP_AT_MOST || stale(modified)) && !in_use(&path) && unchanged(&path, modified)
        {
            let _ = files::remove_if_present(&path);
        } else {
            kept += 1;
        }
    }
    let legacy = Session::legacy_path(paths);
    if let Ok(meta) = std::fs::symlink_metadata(&legacy)
        && meta.is_file()
        && stale(meta.modified().unwrap_or(now))
        && !in_use(&legacy)
    {
        let _ = files::remove_if_present(&legacy);
    }
}

/// What the `PreToolUse` hook let through in one iteration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    /// PR creations let through (an attempt that then failed counts: the
    /// hook cannot see the outcome).
    pub prs_opened: u64,
    /// Reviews let through, per PR (`"?"`: a PR the call did not name).
    #[serde(default)]
    pub reviews: BTreeMap<String, u64>,
}

impl Counts {
    fn path(exchange: &Exchange) -> PathBuf {
        exchange.dir.join("hooks.json")
    }

    /// Reads the counts under the lock, lets `decide` change them, and
    /// writes them back if it says so (`Ok((true, _))`).
    pub fn update<T>(
        exchange: &Exchange,
        redactor: &Redactor,
        decide: impl FnOnce(&mut Counts) -> (bool, T),
    ) -> Result<T, StateError> {
        files::ensure_private_dir(&exchange.dir)?;
        let lock_path = exchange.dir.join("hooks.lock");
        let guard = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|source| FileError::Io {
                action: "open",
                path: lock_path.clone(),
                source,
            })?;
        guard.lock().map_err(|source| FileError::Io {
            action: "lock",
            path: lock_path.clone(),
            source,
        })?;
        let path = Self::path(exchange);
        let mut counts: Counts = load(&path)?.unwrap_or_default();
        let (changed, out) = decide(&mut counts);
        if changed {
            save(&path, &counts, redactor)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::paths::Skill;
    use std::os::unix::fs::PermissionsExt;

    fn record(id: &str, iteration: Option<u64>) -> Session {
        Session {
            session_id: id.into(),
            iteration,
            ..Session::default()
        }
    }

    fn world() -> (tempfile::TempDir, StatePaths) {
        let dir = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(dir.path(), Skill::Work, None);
        (dir, paths)
    }

    fn age(path: &Path, by: Duration) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - by).unwrap();
    }

    #[test]
    fn a_uuid_is_its_own_name_and_any_other_id_a_distinct_safe_one() {
        let uuid = "80e0210c-fc40-4791-971c-34d9a14abae1";
        assert_eq!(key(uuid), uuid);
        let odd = [
            "",
            "%",
            "a/b",
            "a%2Fb",
            "../../etc/passwd",
            ".hidden",
            "a b",
            "é",
            "x~y",
            "\0",
        ];
        let keys: Vec<String> = odd.iter().map(|id| key(id)).collect();
        for (id, k) in odd.iter().zip(&keys) {
            assert!(!k.is_empty() && !k.starts_with('.'), "{id:?}: {k}");
            assert!(
                k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_%~".contains(&b)),
                "{id:?}: {k}"
            );
        }
        let distinct: std::collections::BTreeSet<&String> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len(), "{keys:?}");
        let long_a = "a".repeat(10_000);
        let long_b = format!("{}b", "a".repeat(9_999));
        assert_eq!(key(&long_a).len(), KEY_MAX);
        assert_ne!(key(&long_a), key(&long_b));
        assert_eq!(key(&"/".repeat(10_000)).len(), KEY_MAX);
    }

    #[test]
    fn each_session_reads_and_writes_its_own_file_only() {
        let (_d, paths) = world();
        let redactor = Redactor::default();
        let mut a = record("a", Some(1));
        a.stopped = true;
        a.save(&paths, &redactor).unwrap();
        record("b", None).save(&paths, &redactor).unwrap();
        assert_eq!(Session::load(&paths, "a").unwrap(), Some(a));
        assert_eq!(Session::load(&paths, "b").unwrap(), Some(record("b", None)));
        assert_eq!(Session::load(&paths, "c").unwrap(), None);
        assert!(Session::began(&paths, "a", 1).is_some());
        assert!(Session::began(&paths, "b", 1).is_none());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&Session::dir(&paths)), 0o700);
        assert_eq!(mode(&Session::path(&paths, "a")), 0o600);
        assert!(!Session::legacy_path(&paths).exists());
    }

    #[test]
    fn a_record_under_another_session_s_name_is_not_that_session_s() {
        let (_d, paths) = world();
        record("a", Some(1))
            .save(&paths, &Redactor::default())
            .unwrap();
        std::fs::rename(Session::path(&paths, "a"), Session::path(&paths, "b")).unwrap();
        assert_eq!(Session::load(&paths, "b").unwrap(), None);
    }

    // An upgrade mid-loop: the session the old shared record names still
    // finds it (its stop left iteration 1 open); once it writes its own,
    // the old one is gone.
    #[test]
    fn the_legacy_record_is_read_for_the_session_it_names_until_it_writes_its_own() {
        let (_d, paths) = world();
        std::fs::create_dir_all(&paths.dir).unwrap();
        let mut old = record("a", Some(1));
        old.stopped = true;
        old.prompt_id = Some("p-1".into());
        save(&Session::legacy_path(&paths), &old, &Redactor::default()).unwrap();
        assert_eq!(Session::load(&paths, "a").unwrap(), Some(old.clone()));
        assert_eq!(Session::began(&paths, "a", 1), Some(old));
        assert_eq!(Session::load(&paths, "b").unwrap(), None);
        record("b", None)
            .save(&paths, &Redactor::default())
            .unwrap();
        assert!(Session::legacy_path(&paths).exists(), "still a's");
        record("a", Some(2))
            .save(&paths, &Redactor::default())
            .unwrap();
        assert!(!Session::legacy_path(&paths).exists());
        assert_eq!(
            Session::load(&paths, "a").unwrap(),
            Some(record("a", Some(2)))
        );
    }

    #[test]
    fn stale_records_of_other_sessions_go_but_never_the_open_iteration_s() {
        let (_d, paths) = world();
        let redactor = Redactor::default();
        for (id, iteration) in [("old", Some(3)), ("holder", Some(4)), ("fresh", None)] {
            record(id, iteration).save(&paths, &redactor).unwrap();
        }
        let long = STALE_AFTER + Duration::from_secs(60);
        age(&Session::path(&paths, "old"), long);
        age(&Session::path(&paths, "holder"), long);
        let temp = Session::dir(&paths).join(".x.json.999999999.2.3.tmp"); // a writer that is gone
        std::fs::write(&temp, b"{").unwrap();
        age(&temp, long);
        save(&Session::legacy_path(&paths), &record("z", None), &redactor).unwrap();
        age(&Session::legacy_path(&paths), long);
        let me = Session::path(&paths, "me");
        prune(&paths, &me, Some(4), SystemTime::now());
        assert!(!Session::path(&paths, "old").exists());
        assert!(
            Session::path(&paths, "holder").exists(),
            "its iteration is open"
        );
        assert!(Session::path(&paths, "fresh").exists());
        assert!(!temp.exists());
        assert!(!Session::legacy_path(&paths).exists());
    }

    #[test]
    fn at_most_the_newest_records_are_kept() {
        let (_d, paths) = world();
        let redactor = Redactor::default();
        let n = KEEP_AT_MOST + 10;
        std::fs::create_dir_all(Session::dir(&paths)).unwrap();
        for i in 0..n {
            let id = format!("s{i}");
            let path = Session::path(&paths, &id);
            save(&path, &record(&id, Some(i as u64)), &redactor).unwrap();
            // s0 the oldest.
            age(
                &Session::path(&paths, &id),
                Duration::from_secs((n - i) as u64 * 60),
            );
        }
        prune(
            &paths,
            &Session::path(&paths, "s5"),
            Some(0),
            SystemTime::now(),
        );
        let left = std::fs::read_dir(Session::dir(&paths)).unwrap().count();
        assert_eq!(left, KEEP_AT_MOST + 1, "the cap, and the open iteration's");
        assert!(
            Session::path(&paths, "s0").exists(),
            "its iteration is open"
        );
        assert!(Session::path(&paths, "s5").exists(), "the writer's own");
        assert!(!Session::path(&paths, "s1").exists());
        assert!(Session::path(&paths, &format!("s{}", n - 1)).exists());
    }
}
