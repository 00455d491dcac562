//! git, as far as the loop needs it, behind the [`Git`] seam: remote branch
//! heads (`git ls-remote`, for resume reconciliation and the review loop's
//! "no new commits" check) and the state of a worktree (for the
//! worktree-preservation report on resume). The loop never changes a
//! worktree.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why git could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("git {args} failed in {}: {detail}", dir.display())]
pub struct GitError {
    pub args: String,
    pub dir: PathBuf,
    pub detail: String,
}

/// What is at a recorded worktree path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorktreeState {
    Missing,
    At { branch: String, head: String },
}

pub trait Git: std::fmt::Debug {
    /// Current heads of `branches` on `remote`; absent branches are left out.
    fn remote_heads(
        &self,
        remote: &str,
        branches: &[String],
    ) -> Result<BTreeMap<String, String>, GitError>;
    /// The branch and commit checked out at `path`.
    fn worktree(&self, path: &Path) -> WorktreeState;
    /// The URL of `remote`, if configured.
    fn remote_url(&self, remote: &str) -> Option<String>;
    /// Every branch head on `remote` (`git ls-remote --heads`): what an
    /// agent adapter compares before and after the agent runs.
    fn heads(&self, remote: &str) -> Result<BTreeMap<String, String>, GitError>;
    /// Whether this clone holds commit `sha`: a branch pushed from it
    /// does; one another clone pushed, and never fetched here, does not.
    /// `true` when it cannot be told.
    fn has_commit(&self, sha: &str) -> bool {
        let _ = sha;
        true
    }
}

/// The `git` command line, run in the project directory.
#[derive(Debug, Clone)]
pub struct GitCli {
    pub dir: PathBuf,
}

impl GitCli {
    fn run(&self, dir: &Path, args: &[&str]) -> Result<String, GitError> {
        let err = |detail: String| GitError {
            args: args.join(" "),
            dir: dir.to_path_buf(),
            detail,
        };
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
            .map_err(|e| err(e.to_string()))?;
        if !out.status.success() {
            return Err(err(String::from_utf8_lossy(&out.stderr).trim().to_owned()));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl GitCli {
    /// The names of the clone's remotes; none outside a clone — told
    /// without starting git when no directory up from here holds a `.git`
    /// (every tick asks, and most projects of a first try are no clone).
    pub fn remotes(&self) -> Vec<String> {
        if !maybe_a_repository(&self.dir) {
            return Vec::new();
        }
        self.run(&self.dir, &["remote"])
            .map(|out| out.lines().map(|l| l.trim().to_owned()).collect())
            .unwrap_or_default()
    }
}

/// Whether git could find a repository from `dir`: `GIT_DIR` is set, or
/// `dir` or a directory above it holds `.git` (a directory, or the file of
/// a worktree or submodule), or `dir` is a bare repository itself. `false`
/// only when git would say "not a git repository".
fn maybe_a_repository(dir: &Path) -> bool {
    if std::env::var_os("GIT_DIR").is_some() {
        return true;
    }
    let bare = |d: &Path| d.join("HEAD").is_file() && d.join("objects").is_dir();
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    bare(&absolute) || absolute.ancestors().any(|d| d.join(".git").exists())
}

impl Git for GitCli {
    fn remote_heads(
        &self,
        remote: &str,
        branches: &[String],
    ) -> Result<BTreeMap<String, String>, GitError> {
        if branches.is_empty() {
            return Ok(BTreeMap::new());
        }
        let refs: Vec<String> = branches.iter().map(|b| format!("refs/heads/{b}")).collect();
        let mut args = vec!["ls-remote", remote];
        args.extend(refs.iter().map(String::as_str));
        let out = self.run(&self.dir, &args)?;
        Ok(parse_ls_remote(&out))
    }

    fn worktree(&self, path: &Path) -> WorktreeState {
        let dir = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.dir.join(path)
        };
        if !dir.is_dir() {
            return WorktreeState::Missing;
        }
        let branch = self.run(&dir, &["rev-parse", "--abbrev-ref", "HEAD"]);
        let head = self.run(&dir, &["rev-parse", "HEAD"]);
        match (branch, head) {
            (Ok(b), Ok(h)) => WorktreeState::At {
                branch: b.trim().to_owned(),
                head: h.trim().to_owned(),
            },
            _ => WorktreeState::Missing,
        }
    }

    fn remote_url(&self, remote: &str) -> Option<String> {
        self.run(&self.dir, &["remote", "get-url", remote])
            .ok()
            .map(|s| s.trim().to_owned())
    }

    fn has_commit(&self, sha: &str) -> bool {
        let hex = !sha.is_empty() && sha.chars().all(|c| c.is_ascii_hexdigit());
        !hex || self
            .run(&self.dir, &["cat-file", "-e", &format!("{sha}^{{commit}}")])
            .is_ok()
    }

    fn heads(&self, remote: &str) -> Result<BTreeMap<String, String>, GitError> {
        let out = self.run(&self.dir, &["ls-remote", "--heads", remote])?;
        Ok(parse_ls_remote(&out))
    }
}

/// `sha<TAB>refs/heads/name` lines into `name → sha`.
pub fn parse_ls_remote(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| {
            let (sha, name) = l.split_once('\t')?;
            Some((name.strip_prefix("refs/heads/")?.to_owned(), sha.to_owned()))
        })
        .collect()
}

/// Whether a recorded SHA (possibly abbreviated) names `full`.
pub fn same_commit(recorded: &str, full: &str) -> bool {
    !recorded.is_empty() && (full.starts_with(recorded) || recorded.starts_with(full))
}

/// `git ARGS` in `dir` for the crate's own tests: the integration tests'
/// helper (`engine/tests/git/mod.rs`), one file for both.
#[cfg(test)]
#[path = "../../tests/git/mod.rs"]
mod test_support;
#[cfg(test)]
pub(crate) use test_support::git as test_git;

#[cfg(test)]
mod tests {
    use super::test_git as git;
    use super::*;

    #[test]
    fn ls_remote_parsing() {
        let m = parse_ls_remote(
            "abc\trefs/heads/main\ndef\trefs/heads/feature/1-x\nzzz\trefs/tags/v1\n",
        );
        assert_eq!(m["main"], "abc");
        assert_eq!(m["feature/1-x"], "def");
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn abbreviated_shas_match() {
        assert!(same_commit("def5678", "def5678aaaa"));
        assert!(!same_commit("def5678", "abc"));
        assert!(!same_commit("", "abc"));
    }

    #[test]
    fn real_repository_heads_and_worktrees() {
        let tmp = tempfile::tempdir().unwrap();
        let origin = tmp.path().join("origin.git");
        let work = tmp.path().join("work");
        std::fs::create_dir(&work).unwrap();
        git(
            tmp.path(),
            &[
                "init",
                "-q",
                "--bare",
                "-b",
                "main",
                origin.to_str().unwrap(),
            ],
        );
        git(&work, &["init", "-q", "-b", "main"]);
        git(&work, &["commit", "-q", "--allow-empty", "-m", "init"]);
        git(
            &work,
            &["remote", "add", "origin", origin.to_str().unwrap()],
        );
        git(&work, &["push", "-q", "origin", "main"]);
        let cli = GitCli { dir: work.clone() };
        let heads = cli
            .remote_heads("origin", &["main".into(), "gone".into()])
            .unwrap();
        assert_eq!(heads.len(), 1);
        assert_eq!(cli.heads("origin").unwrap(), heads);
        let WorktreeState::At { branch, head } = cli.worktree(&work) else {
            panic!("worktree missing")
        };
        assert_eq!(branch, "main");
        assert_eq!(head, heads["main"]);
        assert_eq!(cli.worktree(Path::new("nope")), WorktreeState::Missing);
        assert_eq!(cli.remote_url("origin").unwrap(), origin.to_str().unwrap());
        assert!(cli.remote_heads("nowhere", &["main".into()]).is_err());
        // remotes: from the clone, from a folder in it, none outside one.
        assert_eq!(cli.remotes(), ["origin"]);
        let inner = work.join("src/deep");
        std::fs::create_dir_all(&inner).unwrap();
        assert_eq!(GitCli { dir: inner.clone() }.remotes(), ["origin"]);
        assert!(maybe_a_repository(&inner));
        assert!(maybe_a_repository(&origin));
        let plain = tmp.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        assert!(!maybe_a_repository(&plain));
        assert!(GitCli { dir: plain }.remotes().is_empty());
    }
}
