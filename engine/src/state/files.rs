//! Secure, crash-safe file operations for the loop state directory.
//!
//! ADR-0028 classes everything under `.sdd/loop/` as treat-as-secret, in the
//! same class as `.env`: the directory is created `0700`, every file `0600`,
//! and no symlink at any of these paths is ever followed — a planted link
//! would redirect the engine's writes (or its reads of a "budget") somewhere
//! else. Every open here uses `O_NOFOLLOW`, and a link found where a state
//! file or directory should be is refused with [`FileError::Symlink`].
//!
//! Files that are replaced as a whole go through [`write_atomic`]: a unique
//! temp file in the same directory, `fsync`, `rename`, `fsync` of the
//! directory — a reader sees the old file or the new one, never a torn one,
//! and the rename survives power loss. Append-only files go through
//! [`append_line`], one `write` per line followed by `fsync`.
//!
//! Waiting for the disk is most of a tick's system time, so a write whose
//! loss in a power failure leaves a state the next tick already reads
//! waits less ([`Durability`]; each is a state a kill at that moment
//! leaves too):
//! the witness's check after an append (its announcement still names the
//! line), the journal's note of the skill's pid (meaningless once the
//! machine is off), the removal of a fully recorded tick's journal
//! (`after-budget`) and of the lock (`before-release`); the skill's
//! request, read only while its tick lives, is not synced at all.
//!
//! Append-only files are appended by processes that do not hold the loop
//! lock (a skipped tick writes its history line beside the holder), and a
//! `write(2)` to a regular file is not atomic against a concurrent
//! `read(2)`: a reader can see another process's line half-copied, which
//! looks exactly like a line torn by a crash. So every append holds an
//! exclusive advisory lock (`flock`) on the file for the write and its
//! `fsync` ([`LockedAppend`]), and readers that judge a tail hold a shared
//! one ([`open_read_shared`]). Under the lock, an unterminated last line
//! can only be the remnant of a process that died mid-write — the kernel
//! drops a dead process's locks — never a live append in flight.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::io::Errno;

/// Permissions of the state directory: owner only.
pub const DIR_MODE: u32 = 0o700;
/// Permissions of every state file: owner read/write only.
pub const FILE_MODE: u32 = 0o600;

/// A failure touching a state file; every variant names the path.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("refusing to follow a symlink at {path}")]
    Symlink { path: PathBuf },
    #[error("{path} exists but is not a {expected}")]
    WrongKind {
        path: PathBuf,
        expected: &'static str,
    },
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl FileError {
    /// The one-line fix shown under the error.
    pub fn help(&self) -> String {
        match self {
            FileError::Symlink { path } => format!(
                "loop state must be a real file or directory; remove the link ({}) and run again",
                path.display()
            ),
            FileError::WrongKind { path, .. } => format!(
                "move {} out of the way; the loop keeps its state there",
                path.display()
            ),
            FileError::Io { path, .. } => format!(
                "check that {} is on a writable filesystem and owned by you",
                path.display()
            ),
        }
    }

    fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        if source.raw_os_error() == Some(Errno::LOOP.raw_os_error()) {
            return FileError::Symlink {
                path: path.to_path_buf(),
            };
        }
        FileError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

fn nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

/// What is at a path, without following a final symlink.
fn kind(path: &Path) -> Result<Option<fs::FileType>, FileError> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(meta.file_type())),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(FileError::io("inspect", path, err)),
    }
}

/// Refuses a symlink (or a directory) where a regular state file belongs;
/// a missing file is fine.
pub fn check_regular_or_missing(path: &Path) -> Result<(), FileError> {
    match kind(path)? {
        None => Ok(()),
        Some(t) if t.is_symlink() => Err(FileError::Symlink {
            path: path.to_path_buf(),
        }),
        Some(t) if t.is_file() => Ok(()),
        Some(_) => Err(FileError::WrongKind {
            path: path.to_path_buf(),
            expected: "regular file",
        }),
    }
}

/// What the engine writes into a `.sdd/` it creates: its state stays out
/// of git without the project's own `.gitignore` having to say so.
pub const STATE_GITIGNORE: &str = "# Written by sdd-loop when it created .sdd/: loop state (history, budget,\n# lock, journal) can quote issue text and answers; keep it out of git.\n*\n";

/// [`ensure_private_dir`] for the loop's state directory (`.sdd/loop`):
/// when this call creates its parent `.sdd/`, it also writes
/// `.sdd/.gitignore` ([`STATE_GITIGNORE`]), so a fresh repository's
/// `git status` does not offer the state for a commit. A `.sdd/` that
/// already existed is the project's: left as it is.
pub fn ensure_state_dir(loop_dir: &Path) -> Result<(), FileError> {
    let sdd = loop_dir.parent().filter(|p| !p.as_os_str().is_empty());
    let created = match sdd {
        Some(sdd) => kind(sdd)?.is_none(),
        None => false,
    };
    ensure_private_dir(loop_dir)?;
    if let Some(sdd) = sdd.filter(|_| created) {
        let path = sdd.join(".gitignore");
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&path)
        {
            Ok(mut file) => {
                file.write_all(STATE_GITIGNORE.as_bytes())
                    .map_err(|e| FileError::io("write", &path, e))?;
            }
            // A racing tick created `.sdd/` too and wrote it first.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(FileError::io("create", &path, err)),
        }
    }
    Ok(())
}

/// Creates `dir` (and missing parents) so that `dir` itself is a real
/// directory with mode `0700`. An existing directory is tightened to `0700`;
/// a symlink at `dir` is refused.
pub fn ensure_private_dir(dir: &Path) -> Result<(), FileError> {
    match kind(dir)? {
        Some(t) if t.is_symlink() => {
            return Err(FileError::Symlink {
                path: dir.to_path_buf(),
            });
        }
        Some(t) if t.is_dir() => {
            let meta = fs::symlink_metadata(dir).map_err(|e| FileError::io("inspect", dir, e))?;
            if meta.permissions().mode() & 0o777 != DIR_MODE {
                fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))
                    .map_err(|e| FileError::io("set permissions on", dir, e))?;
            }
            return Ok(());
        }
        Some(_) => {
            return Err(FileError::WrongKind {
                path: dir.to_path_buf(),
                expected: "directory",
            });
        }
        None => {}
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Some(t) = kind(parent)? {
            if t.is_symlink() {
                return Err(FileError::Symlink {
                    path: parent.to_path_buf(),
                });
            }
        } else {
            fs::create_dir_all(parent).map_err(|e| FileError::io("create", parent, e))?;
        }
    }
    match DirBuilder::new().mode(DIR_MODE).create(dir) {
        Ok(()) => {}
        // Another tick created it between our check and our mkdir.
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(FileError::io("create", dir, err)),
    }
    // The umask may have narrowed the mode further than asked; widen back to
    // exactly 0700 so the owner can always use it.
    fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))
        .map_err(|e| FileError::io("set permissions on", dir, e))?;
    check_dir(dir)
}

fn check_dir(dir: &Path) -> Result<(), FileError> {
    match kind(dir)? {
        Some(t) if t.is_dir() => Ok(()),
        Some(t) if t.is_symlink() => Err(FileError::Symlink {
            path: dir.to_path_buf(),
        }),
        _ => Err(FileError::WrongKind {
            path: dir.to_path_buf(),
            expected: "directory",
        }),
    }
}

/// Opens a state file for reading without following a symlink.
/// `Ok(None)` when the file does not exist.
pub fn open_read(path: &Path) -> Result<Option<File>, FileError> {
    match OpenOptions::new()
        .read(true)
        .custom_flags(nofollow())
        .open(path)
    {
        Ok(file) => Ok(Some(file)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(FileError::io("open", path, err)),
    }
}

/// Opens an append-only state file for reading under a shared advisory
/// lock (see the module doc): appends by live processes are whole while it
/// is held. The lock is released when the file is dropped. `Ok(None)` when
/// the file does not exist.
pub fn open_read_shared(path: &Path) -> Result<Option<File>, FileError> {
    let Some(file) = open_read(path)? else {
        return Ok(None);
    };
    file.lock_shared()
        .map_err(|e| FileError::io("lock (shared)", path, e))?;
    Ok(Some(file))
}

/// Reads a whole append-only state file under a shared advisory lock, so
/// no line appended by a live process is seen half-written.
pub fn read_bytes_shared(path: &Path) -> Result<Option<Vec<u8>>, FileError> {
    let Some(mut file) = open_read_shared(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| FileError::io("read", path, e))?;
    Ok(Some(bytes))
}

/// Reads a whole state file as bytes; `Ok(None)` when it does not exist.
pub fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, FileError> {
    let Some(mut file) = open_read(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| FileError::io("read", path, e))?;
    Ok(Some(bytes))
}

/// Opens (creating if needed, `0600`) a file that must never be deleted,
/// such as a lock guard. Does not follow symlinks.
pub fn open_persistent(path: &Path) -> Result<File, FileError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .custom_flags(nofollow())
        .open(path)
        .map_err(|e| FileError::io("open", path, e))
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Removes from `dir` the temporary files of [`write_atomic`] whose writer
/// is gone (`alive(pid)` false): a process killed between writing one and
/// renaming it over its target leaves it behind, and nothing else would
/// ever remove it. Only names of that exact shape are touched; what was
/// removed is returned.
pub fn sweep_temporaries(dir: &Path, alive: impl Fn(u32) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let Some(rest) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
            continue;
        };
        // `{target}.{pid}.{nanos}.{n}`, the target's name holding dots too.
        let fields: Vec<&str> = rest.rsplitn(4, '.').collect();
        let [n, nanos, pid, target] = fields.as_slice() else {
            continue;
        };
        let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if target.is_empty() || !numeric(n) || !numeric(nanos) {
            continue;
        }
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && !alive(pid) && fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

/// A temp-file name unique across processes (pid) and within one (counter),
/// hidden, in the same directory as `target` so `rename` stays atomic.
fn temp_path(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "state".to_owned());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    target.with_file_name(format!(".{name}.{}.{nanos}.{n}.tmp", std::process::id()))
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `fsync` a directory so a rename or a create inside it is durable.
pub fn sync_dir(dir: &Path) -> Result<(), FileError> {
    let handle = OpenOptions::new()
        .read(true)
        .custom_flags(nofollow() | rustix::fs::OFlags::DIRECTORY.bits() as i32)
        .open(dir)
        .map_err(|e| FileError::io("open directory", dir, e))?;
    handle
        .sync_all()
        .map_err(|e| FileError::io("sync directory", dir, e))
}

/// How much of a whole-file write must survive a power failure. Every
/// level replaces the file atomically: a reader, or a process killed
/// midway, sees the old file or the new one, never a torn one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The new file, under its name: its contents and the rename are
    /// synced ([`write_atomic`]).
    Durable,
    /// The old file or the whole new one: the contents are synced, the
    /// rename is not waited for. For a file whose previous version the
    /// next tick reads correctly.
    OldOrNew,
    /// Nothing is synced: a file read only while the process that wrote
    /// it lives, and replaced before it is read again — or one whose loss
    /// or damage costs nothing, its reader taking a damaged one as none
    /// (the statusLine's figures, written again at the next refresh).
    Transient,
}

/// Replaces `path` with `bytes` atomically and durably, mode `0600`.
///
/// A symlink at `path` is refused rather than replaced: its presence means
/// something other than the engine put it there.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    write_atomic_with(path, bytes, Durability::Durable)
}

/// [`write_atomic`], waiting for the disk only as far as `durability` asks.
pub fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    durability: Durability,
) -> Result<(), FileError> {
    check_regular_or_missing(path)?;
    let temp = temp_path(path);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .custom_flags(nofollow())
            .open(&temp)
            .map_err(|e| FileError::io("create", &temp, e))?;
        file.write_all(bytes)
            .map_err(|e| FileError::io("write", &temp, e))?;
        if durability != Durability::Transient {
            file.sync_all()
                .map_err(|e| FileError::io("sync", &temp, e))?;
        }
        fs::rename(&temp, path).map_err(|e| FileError::io("rename into place", path, e))?;
        match durability {
            Durability::Durable => sync_dir(parent_dir(path)),
            Durability::OldOrNew | Durability::Transient => Ok(()),
        }
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// An append-only state file opened for reading and appending, held under
/// an exclusive advisory lock until dropped (see the module doc). While it
/// is held no other process appends, so the file's tail can be read,
/// judged and repaired, and a line appended after it, as one step.
#[derive(Debug)]
pub struct LockedAppend {
    file: File,
    path: PathBuf,
    created: bool,
    dir_synced: bool,
}

/// Opens `path` for appending (creating it `0600` if needed, never through
/// a symlink) and takes its exclusive advisory lock, waiting for any other
/// appender to finish its line.
pub fn open_append_locked(path: &Path) -> Result<LockedAppend, FileError> {
    check_regular_or_missing(path)?;
    let (file, created) = match OpenOptions::new()
        .read(true)
        .append(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(nofollow())
        .open(path)
    {
        Ok(file) => (file, true),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => (
            OpenOptions::new()
                .read(true)
                .append(true)
                .custom_flags(nofollow())
                .open(path)
                .map_err(|e| FileError::io("open", path, e))?,
            false,
        ),
        Err(err) => return Err(FileError::io("create", path, err)),
    };
    file.lock().map_err(|e| FileError::io("lock", path, e))?;
    Ok(LockedAppend {
        file,
        path: path.to_path_buf(),
        created,
        dir_synced: false,
    })
}

impl LockedAppend {
    /// Whether opening it created the file.
    pub fn created(&self) -> bool {
        self.created
    }

    /// The file, for reading its tail (its offset is irrelevant to appends).
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Appends one line (a `\n` is added) and `fsync`s it; `separate`
    /// prefixes a `\n` first, for a last line that is complete JSON written
    /// without its terminator. The directory is synced too when the file
    /// was created.
    pub fn append_line(&mut self, line: &str, separate: bool) -> Result<(), FileError> {
        let mut buf = String::with_capacity(line.len() + 2);
        if separate {
            buf.push('\n');
        }
        buf.push_str(line);
        buf.push('\n');
        // One write call per line: a crash leaves either nothing or a
        // prefix of this line, which the history reader moves aside as torn.
        self.file
            .write_all(buf.as_bytes())
            .map_err(|e| FileError::io("append to", &self.path, e))?;
        self.file
            .sync_data()
            .map_err(|e| FileError::io("sync", &self.path, e))?;
        if self.created && !self.dir_synced {
            sync_dir(parent_dir(&self.path))?;
            self.dir_synced = true;
        }
        Ok(())
    }

    /// Appends `bytes` as they are, in one write, and syncs them.
    pub fn append_bytes(&mut self, bytes: &[u8]) -> Result<(), FileError> {
        self.file
            .write_all(bytes)
            .map_err(|e| FileError::io("append to", &self.path, e))?;
        self.file
            .sync_data()
            .map_err(|e| FileError::io("sync", &self.path, e))
    }

    /// Cuts the file to `len` bytes and syncs it.
    pub fn truncate(&mut self, len: u64) -> Result<(), FileError> {
        self.file
            .set_len(len)
            .map_err(|e| FileError::io("truncate", &self.path, e))?;
        self.file
            .sync_all()
            .map_err(|e| FileError::io("sync", &self.path, e))
    }
}

/// Appends one line (a `\n` is added) under the file's exclusive advisory
/// lock and `fsync`s it. Creates the file `0600` if needed. Returns `true`
/// when this call created the file.
///
/// `separate` prefixes a `\n` first: used when the file's last line was
/// complete JSON written without its terminator.
pub fn append_line(path: &Path, line: &str, separate: bool) -> Result<bool, FileError> {
    let mut file = open_append_locked(path)?;
    file.append_line(line, separate)?;
    Ok(file.created())
}

/// Creates a new file with exactly `bytes` (mode `0600`), failing if it
/// exists; synced, and its directory synced.
pub fn create_new_durable(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(nofollow())
        .open(path)
        .map_err(|e| FileError::io("create", path, e))?;
    file.write_all(bytes)
        .map_err(|e| FileError::io("write", path, e))?;
    file.sync_all()
        .map_err(|e| FileError::io("sync", path, e))?;
    sync_dir(parent_dir(path))
}

/// Removes a state file if present (never follows a link: `unlink` removes
/// the link itself, so a planted one is refused before), durably.
pub fn remove_if_present(path: &Path) -> Result<bool, FileError> {
    remove_if_present_with(path, Durability::Durable)
}

/// [`remove_if_present`]; with any level but [`Durability::Durable`] the
/// removal is not waited for, for a file whose return after a power
/// failure the next tick reads correctly.
pub fn remove_if_present_with(path: &Path, durability: Durability) -> Result<bool, FileError> {
    check_regular_or_missing(path)?;
    match fs::remove_file(path) {
        Ok(()) => {
            if durability == Durability::Durable {
                sync_dir(parent_dir(path))?;
            }
            Ok(true)
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(FileError::io("remove", path, err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporaries_of_dead_writers_are_swept_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        for name in [
            ".work.lock.5236.655236392.0.tmp",
            ".work.inflight.json.32160.116967791.6.tmp",
            ".work.budget.json.777.1.2.tmp",
            ".notes.tmp",
            "work.lock",
            ".work.lock.x.1.2.tmp",
        ] {
            fs::write(d.join(name), "x").unwrap();
        }
        let mut removed: Vec<String> = sweep_temporaries(d, |pid| pid == 777)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        removed.sort();
        assert_eq!(
            removed,
            [
                ".work.inflight.json.32160.116967791.6.tmp",
                ".work.lock.5236.655236392.0.tmp"
            ]
        );
        for kept in [
            ".work.budget.json.777.1.2.tmp",
            ".notes.tmp",
            "work.lock",
            ".work.lock.x.1.2.tmp",
        ] {
            assert!(d.join(kept).exists(), "{kept}");
        }
    }
    use std::os::unix::fs::symlink;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn private_dir_is_created_0700_with_parents() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".sdd/loop");
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_state_dir_the_engine_creates_ignores_itself() {
        let tmp = tempfile::tempdir().unwrap();
        ensure_state_dir(&tmp.path().join(".sdd/loop")).unwrap();
        let ignore = fs::read_to_string(tmp.path().join(".sdd/.gitignore")).unwrap();
        assert_eq!(ignore.lines().last(), Some("*"));
        // A second tick finds it there and leaves it be.
        fs::write(tmp.path().join(".sdd/.gitignore"), "edited\n").unwrap();
        ensure_state_dir(&tmp.path().join(".sdd/loop")).unwrap();
        assert_eq!(
            fs::read_to_string(tmp.path().join(".sdd/.gitignore")).unwrap(),
            "edited\n"
        );
    }

    #[test]
    fn a_project_s_own_sdd_dir_gets_no_gitignore() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join(".sdd")).unwrap();
        ensure_state_dir(&tmp.path().join(".sdd/loop")).unwrap();
        assert!(tmp.path().join(".sdd/loop").is_dir());
        assert!(!tmp.path().join(".sdd/.gitignore").exists());
    }

    #[test]
    fn existing_loose_dir_is_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("loop");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn symlinked_dir_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("elsewhere");
        fs::create_dir(&real).unwrap();
        let link = tmp.path().join("loop");
        symlink(&real, &link).unwrap();
        let err = ensure_private_dir(&link).unwrap_err();
        assert!(matches!(err, FileError::Symlink { .. }), "{err}");
    }

    #[test]
    fn atomic_write_creates_0600_and_replaces() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("budget.json");
        write_atomic(&path, b"one").unwrap();
        assert_eq!(mode(&path), 0o600);
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let leftovers: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn atomic_write_refuses_symlink_target_and_leaves_link_target_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let path = tmp.path().join("budget.json");
        symlink(&victim, &path).unwrap();
        let err = write_atomic(&path, b"x").unwrap_err();
        assert!(matches!(err, FileError::Symlink { .. }), "{err}");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn reads_refuse_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        fs::write(&victim, "{}").unwrap();
        let path = tmp.path().join("work.lock");
        symlink(&victim, &path).unwrap();
        let err = read_bytes(&path).unwrap_err();
        assert!(matches!(err, FileError::Symlink { .. }), "{err}");
        assert!(read_bytes(&tmp.path().join("missing")).unwrap().is_none());
    }

    #[test]
    fn append_reports_creation_and_refuses_links() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("h.jsonl");
        assert!(append_line(&path, "{\"a\":1}", false).unwrap());
        assert!(!append_line(&path, "{\"a\":2}", false).unwrap());
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\":1}\n{\"a\":2}\n");
        assert_eq!(mode(&path), 0o600);
        let link = tmp.path().join("link.jsonl");
        symlink(&path, &link).unwrap();
        assert!(matches!(
            append_line(&link, "x", false).unwrap_err(),
            FileError::Symlink { .. }
        ));
    }
}
