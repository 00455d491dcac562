//! What a run needs from its caller — fixtures, binaries, where sandboxes
//! go, the shared git worlds — gathered from flags and the environment by
//! the binary or the test harness, so nothing below reads the process's
//! environment.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use crate::loading::fixtures::Fixtures;
use crate::world::bins::Binaries;
use crate::world::clis::Clis;
use crate::world::sandbox::Worlds;

/// What the runner needs from its caller (gathered from flags and the
/// environment by the binary or the test harness).
#[derive(Debug, Clone)]
pub struct Options {
    pub fixtures: Fixtures,
    /// The workspace root (for `repo_file_contains` and redaction).
    pub workspace: PathBuf,
    pub binaries: Binaries,
    /// PATH for the engine and its children, after the sandbox's `bin/`.
    pub path: OsString,
    /// Keep the sandbox directory after the run.
    pub keep_sandbox: bool,
    /// Where sandboxes are made (default: the system's temporary
    /// directory; [`crate::world::sandbox::ram_dir`] is faster).
    pub sandbox_parent: Option<PathBuf>,
    /// Git worlds to copy rather than build, shared by the cases of a run
    /// (`None`: each case builds its own).
    pub worlds: Option<Arc<Worlds>>,
    /// The pinned real CLIs found (`sdd-evals agents`): a real-CLI case
    /// whose CLI is missing is skipped before it runs.
    pub clis: Clis,
}
