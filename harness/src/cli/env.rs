//! What the process gives the command line ([`Env`]: its output streams,
//! environment variables, directory and executable), gathered once by the
//! binary, and what is read from it: the workspace, where sandboxes go,
//! and the `error:`/`help:` pair every failure prints.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::world::sandbox;

/// What the process gives the CLI, gathered once by the binary.
pub struct Env<'a> {
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
    /// The environment variables (a snapshot; nothing else is read).
    pub vars: BTreeMap<String, String>,
    pub cwd: PathBuf,
    /// The running executable (binaries are looked for beside it).
    pub exe: PathBuf,
    /// Whether stderr is a terminal (a live progress line is drawn there).
    pub stderr_is_terminal: bool,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("cwd", &self.cwd)
            .field("exe", &self.exe)
            .finish_non_exhaustive()
    }
}

/// The nearest directory at or above `start` whose Cargo.toml declares a
/// `[workspace]`.
pub fn find_workspace(start: &Path) -> Option<PathBuf> {
    start.ancestors().find_map(|dir| {
        std::fs::read_to_string(dir.join("Cargo.toml"))
            .ok()
            .filter(|t| t.lines().any(|l| l.trim() == "[workspace]"))
            .map(|_| dir.to_path_buf())
    })
}

pub(super) fn error(env: &mut Env<'_>, message: &str, help: &str, code: u8) -> u8 {
    let _ = writeln!(env.stderr, "error: {message}");
    let _ = writeln!(env.stderr, "help: {help}");
    code
}

/// Where sandboxes go: `SDD_EVALS_TMPDIR`, else a RAM file system when
/// there is one ([`sandbox::ram_dir`]).
pub fn sandbox_parent(vars: &BTreeMap<String, String>) -> Option<PathBuf> {
    match vars.get("SDD_EVALS_TMPDIR").filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => sandbox::ram_dir(),
    }
}
