//! Every file under a directory, with its bytes: what a test compares
//! before and after, or searches for a planted secret. Shared by the test
//! crates that include it (`#[path]`), as `support/` is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every regular file under `dir`, recursively, with its bytes; nothing
/// when `dir` does not exist. A file that cannot be read is left out.
pub fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&path, out);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.insert(path, bytes);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, &mut out);
    out
}
