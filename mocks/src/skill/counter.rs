//! The invocation counter: which in-order tick runs next. A small file
//! holding a number, read and advanced under an advisory lock, so two
//! fake skills started together still take different ticks.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Advances the counter in `path` (missing = 0); the new value, from 1.
pub fn advance(path: &Path) -> std::io::Result<u64> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    file.lock()?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let next = text.trim().parse::<u64>().unwrap_or(0) + 1;
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    writeln!(file, "{next}")?;
    file.sync_all()?;
    file.unlock()?;
    Ok(next)
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_from_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n");
        assert_eq!(super::advance(&path).unwrap(), 1);
        assert_eq!(super::advance(&path).unwrap(), 2);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "2\n");
    }
}
