//! A clone's identity in its leases: a random id made once per clone and
//! kept in the clone's git directory (`.git/sdd-loop/clone-id.json`,
//! beside the claims it left standing), so that two clones are never one
//! whatever their host name and path — containers with host networking,
//! VMs made from one image, CI runners with a fixed workspace path.
//!
//! The file also records the host, the path and the machine's id
//! (`/etc/machine-id`) it was made for. A `.git` copied elsewhere — `cp
//! -r` to another path, or onto another machine — reads a record made
//! for somewhere else, so the copy makes an identity of its own at its
//! first tick: a copy is a new clone, and what the original claimed is
//! another clone's to it. Only a copy that keeps all three (the same
//! path, on a machine with the same host name and machine id, as a disk
//! image taken after a loop ran and booted twice unchanged) shares the
//! original's identity; such a copy must have `.git/sdd-loop/clone-id.json`
//! deleted (`docs/src/claims.md`, "Which clone holds a claim").

use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::state::files;
use crate::state::witness;

/// The file's name in the witness directory.
const FILE: &str = "clone-id.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    id: String,
    host: String,
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    machine: Option<String>,
}

/// How a lease names the clone at `dir`: its canonical path (symlinks and
/// `..` resolved), so `-C ../app`, a symlink and the plain path are one
/// clone; the absolute path if it cannot be resolved.
pub fn clone_name(dir: &std::path::Path) -> String {
    std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string()
}

/// The identity of the clone at `dir` on `host`: read from its git
/// directory, made there the first time (or when the record was made for
/// another host, path or machine). `None` only when no randomness can be
/// had; the caller then names the clone by host and path alone.
pub fn clone_id(dir: &Path, host: &str) -> Option<String> {
    let file = witness::dir(dir).join(FILE);
    let here = Record {
        id: String::new(),
        host: host.to_owned(),
        path: clone_name(dir),
        machine: machine_id(),
    };
    if let Some(found) = read(&file).filter(|r| made_here(r, &here)) {
        return Some(found.id);
    }
    let made = Record {
        id: random_id()?,
        ..here.clone()
    };
    if let Some(parent) = file.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let mut json = serde_json::to_vec_pretty(&made).ok()?;
    json.push(b'\n');
    // Two processes of one clone making it at once (a tick and `status`):
    // both write whole files by rename, and both read back the one that
    // stands, so they agree.
    if files::write_atomic(&file, &json).is_err() {
        return Some(made.id);
    }
    read(&file)
        .filter(|r| made_here(r, &here))
        .map(|r| r.id)
        .or(Some(made.id))
}

/// The identity of the clone at `dir` on `host` if one was made, without
/// making one (`status` and `doctor` create no file).
pub fn known_clone_id(dir: &Path, host: &str) -> Option<String> {
    let here = Record {
        id: String::new(),
        host: host.to_owned(),
        path: clone_name(dir),
        machine: machine_id(),
    };
    read(&witness::dir(dir).join(FILE))
        .filter(|r| made_here(r, &here))
        .map(|r| r.id)
}

fn made_here(found: &Record, here: &Record) -> bool {
    !found.id.is_empty()
        && found.host == here.host
        && found.path == here.path
        && (found.machine.is_none() || found.machine == here.machine)
}

fn read(file: &Path) -> Option<Record> {
    let bytes = files::read_bytes(file).ok().flatten()?;
    serde_json::from_slice(&bytes).ok()
}

/// The machine's id where the system keeps one.
fn machine_id() -> Option<String> {
    ["/etc/machine-id", "/var/lib/dbus/machine-id"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// 128 random bits, as 32 hex digits.
pub(super) fn random_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clone_at(dir: &Path) {
        std::fs::create_dir_all(dir.join(".git")).unwrap();
    }

    #[test]
    fn a_clone_keeps_its_identity_and_another_at_its_path_gets_its_own() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("app");
        clone_at(&dir);
        let first = clone_id(&dir, "m1").unwrap();
        assert_eq!(first.len(), 32);
        assert_eq!(clone_id(&dir, "m1").as_deref(), Some(first.as_str()));
        // Another clone at the same path on the same host (a twin machine,
        // or a new clone where the old one was): a git directory of its own.
        std::fs::rename(&dir, tmp.path().join("old")).unwrap();
        clone_at(&dir);
        let twin = clone_id(&dir, "m1").unwrap();
        assert_ne!(twin, first);
    }

    #[test]
    fn a_copied_git_directory_makes_an_identity_of_its_own() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("app");
        clone_at(&dir);
        let original = clone_id(&dir, "m1").unwrap();
        let copy = tmp.path().join("copy");
        clone_at(&copy);
        std::fs::create_dir_all(witness::dir(&copy)).unwrap();
        std::fs::copy(
            witness::dir(&dir).join(FILE),
            witness::dir(&copy).join(FILE),
        )
        .unwrap();
        let copied = clone_id(&copy, "m1").unwrap();
        assert_ne!(copied, original, "a copy at another path is another clone");
        assert_eq!(clone_id(&dir, "m1").as_deref(), Some(original.as_str()));
        let elsewhere = clone_id(&dir, "m2").unwrap();
        assert_ne!(elsewhere, original, "the same path on another host");
    }
}
