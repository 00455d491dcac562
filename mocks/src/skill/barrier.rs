//! Blocking on purpose, so a test can act at an exact moment with no
//! sleeps: `barrier` tells the test "ready <pid>" and then blocks until
//! killed — or until interrupted (SIGINT or SIGTERM, which the engine
//! forwards on Ctrl-C), after which the skill drains: it goes on with the
//! rest of its actions and finishes its iteration, as ADR-0028 #8 asks of a
//! real skill; `hang` blocks silently (to trip the engine's stall watchdog).
//!
//! A barrier path that is a FIFO is opened for writing — which itself
//! waits for the test to open the reading end — and gets the line; any
//! other path is written whole via a temp file and a rename, so a reader
//! never sees half a line.

use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// Writes `ready {pid}\n` to `path`.
pub fn signal_ready(path: &Path, pid: u32) -> std::io::Result<()> {
    let line = format!("ready {pid}\n");
    let is_fifo = std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    if is_fifo {
        let mut fifo = std::fs::OpenOptions::new().write(true).open(path)?;
        fifo.write_all(line.as_bytes())?;
        return fifo.flush();
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, line)?;
    std::fs::rename(tmp, path)
}

/// The interrupts a barrier waits for, caught from the moment this is
/// made: make it before saying `ready`, or an interrupt sent the instant
/// the test reads the line finds no handler and kills the skill before
/// it drains (seen under load: `sigint-interrupt` lost its drain).
pub struct Interrupts(signal_hook::iterator::Signals);

impl std::fmt::Debug for Interrupts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupts(SIGINT, SIGTERM)")
    }
}

impl Interrupts {
    /// Catches SIGINT and SIGTERM from now on.
    pub fn catch() -> std::io::Result<Self> {
        signal_hook::iterator::Signals::new([
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
        ])
        .map(Self)
    }

    /// Waits until the process is killed (SIGKILL) or interrupted (SIGINT
    /// or SIGTERM, caught since [`Interrupts::catch`]); returns on an
    /// interrupt.
    pub fn block_until_killed_or_interrupted(mut self) {
        let _ = self.0.forever().next();
    }
}

/// Never returns; the process waits to be killed.
pub fn block_until_killed() -> ! {
    loop {
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn plain_path_gets_the_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ready");
        super::signal_ready(&path, 4242).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "ready 4242\n");
        assert!(!path.with_extension("tmp").exists());
    }
}
