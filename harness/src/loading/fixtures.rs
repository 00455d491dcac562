//! The fixtures a case names by file stem (`fixtures/` in the workspace):
//! backlogs, CLAUDE.md variants and mock-qmd's collections. [`Fixtures`]
//! is where they are; validation lists the names found there.

use std::path::{Path, PathBuf};

/// Where named fixtures live (`fixtures/` in the workspace).
#[derive(Debug, Clone)]
pub struct Fixtures {
    pub dir: PathBuf,
}

impl Fixtures {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    pub fn backlog(&self, name: &str) -> PathBuf {
        self.dir.join("backlogs").join(format!("{name}.yaml"))
    }

    pub fn claude_md(&self, name: &str) -> PathBuf {
        self.dir.join("claude-md").join(format!("{name}.md"))
    }

    /// mock-qmd's collections.
    pub fn qmd(&self) -> PathBuf {
        self.dir.join("qmd")
    }

    pub fn backlogs(&self) -> Vec<String> {
        stems(&self.dir.join("backlogs"), "yaml")
    }

    pub fn claude_mds(&self) -> Vec<String> {
        stems(&self.dir.join("claude-md"), "md")
    }
}

fn stems(dir: &Path, ext: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names
}
