//! A program on a pseudo-terminal, the way a user runs an interactive
//! CLI: [`Terminal::spawn`] opens a pty pair (rustix's `openpt`,
//! `grantpt`, `unlockpt`), gives the program the secondary side as its
//! stdin, stdout and stderr — a terminal to it, 120 columns by 40 rows —
//! in a process group of its own, and keeps the primary side to type into
//! ([`Terminal::type_text`]).
//!
//! What the program draws is drained by a reader thread into a file
//! (`screen`): never read to decide anything (the caller watches files the
//! program writes instead), but kept for a failure's diagnosis — and
//! drained, because a program whose terminal output is not read blocks
//! once the pty's buffer is full.
//!
//! The program gets no controlling terminal (that would need code run
//! between fork and exec): measured, Claude Code 2.1.328 needs only a
//! terminal on its standard streams. Dropping the [`Terminal`] SIGKILLs
//! the program's process group and reaps it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{Winsize, tcsetwinsize};

use super::spawn::Invocation;

/// A program running on a pseudo-terminal.
#[derive(Debug)]
pub struct Terminal {
    child: Child,
    primary: File,
}

impl Terminal {
    /// Starts `invocation` on a new pseudo-terminal; what it draws is
    /// appended to `screen`.
    pub fn spawn(invocation: &Invocation, screen: &Path) -> std::io::Result<Self> {
        let primary = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
        grantpt(&primary)?;
        unlockpt(&primary)?;
        let name = ptsname(&primary, Vec::new())?;
        let secondary = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(Path::new(std::ffi::OsStr::from_bytes(name.as_bytes())))?;
        tcsetwinsize(
            &secondary,
            Winsize {
                ws_row: 40,
                ws_col: 120,
                ws_xpixel: 0,
                ws_ypixel: 0,
            },
        )?;
        let child = Command::new(&invocation.program)
            .args(&invocation.args)
            .env_clear()
            .envs(invocation.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&invocation.cwd)
            .stdin(Stdio::from(secondary.try_clone()?))
            .stdout(Stdio::from(secondary.try_clone()?))
            .stderr(Stdio::from(secondary))
            .process_group(0)
            .spawn()?;
        let primary = File::from(primary);
        let mut reader = primary.try_clone()?;
        let mut out = File::create(screen)?;
        std::thread::spawn(move || {
            let mut buf = [0u8; 16384];
            // Ends when the program's side closes (EIO) or the file fails.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || out.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        });
        Ok(Self { child, primary })
    }

    /// The program's process id (its process group's too).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Types `text` as keystrokes (`\r` is Enter).
    pub fn type_text(&mut self, text: &str) -> std::io::Result<()> {
        self.primary.write_all(text.as_bytes())?;
        self.primary.flush()
    }

    /// Whether the program has ended.
    pub fn ended(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // Not reaped yet, so its id (and its group's) is still its own.
        let _ = rustix::process::kill_process_group(
            rustix::process::Pid::from_child(&self.child),
            rustix::process::Signal::KILL,
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
