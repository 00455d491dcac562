//! A real git world for the sandbox: a bare repository as
//! `origin` plus a working clone, so PR heads are real refs, `git
//! ls-remote` answers resume, and worktrees are real `git worktree`s.
//!
//! [`materialise`] turns a [`Backlog`] into [`GitWorld`]: the default
//! branch with one initial commit (a README and a `.gitignore` that keeps
//! `.sdd/` out of history) and one branch per pull request with one commit
//! on it. Every command runs through [`Git`], which pins author, committer
//! and dates and ignores the user's and the system's git configuration, so
//! the same backlog always yields the same SHAs on any machine. The branch
//! helpers ([`push_commits`], [`rewrite_branch`], [`worktree_add`]) are
//! what the fake skill and the harness use to move the world between ticks.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::fixture::Backlog;

/// Who commits, and when: fixed so SHAs are reproducible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitIdentity {
    pub name: String,
    pub email: String,
    /// A date git accepts, e.g. RFC 3339 `2026-05-09T14:00:00Z`.
    pub date: String,
}

impl Default for GitIdentity {
    fn default() -> Self {
        Self {
            name: "SDD Fixture".to_owned(),
            email: "fixture@sdd.invalid".to_owned(),
            date: "2026-05-09T14:00:00Z".to_owned(),
        }
    }
}

/// A git command that failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run `git {args}` in {}: {source}", dir.display())]
    Spawn {
        args: String,
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("`git {args}` failed in {} ({status}): {stderr}", dir.display())]
    Failed {
        args: String,
        dir: PathBuf,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Runs the `git` CLI with a pinned identity and no ambient configuration.
#[derive(Debug, Clone, Default)]
pub struct Git {
    pub identity: GitIdentity,
}

impl Git {
    pub fn new(identity: GitIdentity) -> Self {
        Self { identity }
    }

    /// A `git` command in `dir` with the deterministic environment.
    pub fn command(&self, dir: &Path) -> Command {
        let mut cmd = Command::new("git");
        let id = &self.identity;
        cmd.current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            // No `git maintenance run --auto` after each commit, push and
            // fetch: a throwaway repository never needs it.
            .env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", "maintenance.auto")
            .env("GIT_CONFIG_VALUE_0", "false")
            .env("GIT_AUTHOR_NAME", &id.name)
            .env("GIT_AUTHOR_EMAIL", &id.email)
            .env("GIT_AUTHOR_DATE", &id.date)
            .env("GIT_COMMITTER_NAME", &id.name)
            .env("GIT_COMMITTER_EMAIL", &id.email)
            .env("GIT_COMMITTER_DATE", &id.date);
        // Set by git hooks and by some test runners; they would redirect
        // every command to another repository.
        for var in [
            "GIT_DIR",
            "GIT_WORK_TREE",
            "GIT_INDEX_FILE",
            "GIT_OBJECT_DIRECTORY",
            "GIT_COMMON_DIR",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// Runs `git args…` in `dir`; its trimmed stdout.
    pub fn run<I, S>(&self, dir: &Path, args: I) -> Result<String, GitError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<S> = args.into_iter().collect();
        let shown = args
            .iter()
            .map(|a| a.as_ref().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        let output = self
            .command(dir)
            .args(&args)
            .output()
            .map_err(|source| GitError::Spawn {
                args: shown.clone(),
                dir: dir.to_path_buf(),
                source,
            })?;
        if !output.status.success() {
            return Err(GitError::Failed {
                args: shown,
                dir: dir.to_path_buf(),
                status: output.status,
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }
}

/// The sandbox's repositories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitWorld {
    /// The bare repository, `origin` of the clone.
    pub origin: PathBuf,
    /// A working clone (the project the engine and the skill run in).
    pub clone: PathBuf,
    pub default_branch: String,
}

/// Creates `root/origin.git` and `root/work` from `backlog`.
pub fn materialise(git: &Git, backlog: &Backlog, root: &Path) -> Result<GitWorld, GitError> {
    let origin = root.join("origin.git");
    let clone = root.join("work");
    for dir in [&origin, &clone] {
        std::fs::create_dir_all(dir).map_err(|source| GitError::Io {
            path: dir.clone(),
            source,
        })?;
    }
    let main = backlog.default_branch.as_str();
    git.run(
        &origin,
        ["init", "--quiet", "--bare", "--initial-branch", main],
    )?;
    // A host answers a push without collecting garbage first; git's own
    // receiving end would run `git maintenance run --auto` on every one.
    append(&origin.join("config"), "[receive]\n\tautogc = false\n")?;
    git.run(&clone, ["init", "--quiet", "--initial-branch", main])?;
    write(
        &clone.join("README.md"),
        &format!("# {}\n", backlog.repository.value),
    )?;
    write(&clone.join(".gitignore"), ".sdd/\n")?;
    git.run(&clone, ["add", "README.md", ".gitignore"])?;
    git.run(&clone, ["commit", "--quiet", "-m", "Initial commit"])?;
    git.run(
        &clone,
        [
            OsStr::new("remote"),
            "add".as_ref(),
            "origin".as_ref(),
            origin.as_os_str(),
        ],
    )?;
    git.run(&clone, ["push", "--quiet", "origin", main])?;

    for pr in &backlog.pull_requests {
        let base = pr.base.as_deref().unwrap_or(main);
        let base_ref = if base == main {
            main.to_owned()
        } else {
            format!("origin/{base}")
        };
        git.run(&clone, ["checkout", "--quiet", "-B", &pr.branch, &base_ref])?;
        commit_change(git, &clone, &pr.branch, &pr.title)?;
        git.run(
            &clone,
            [
                "push",
                "--quiet",
                "origin",
                &format!("HEAD:refs/heads/{}", pr.branch),
            ],
        )?;
    }
    git.run(&clone, ["checkout", "--quiet", main])?;
    git.run(&clone, ["fetch", "--quiet", "origin"])?;
    Ok(GitWorld {
        origin,
        clone,
        default_branch: main.to_owned(),
    })
}

/// Copies `world` (made by [`materialise`]) into `root`: the same
/// repositories — objects, refs, SHAs, the checked-out branch — with the
/// clone's `origin` pointing at the copy's own origin. A few dozen file
/// copies instead of the dozen git processes (and a push per pull request)
/// that [`materialise`] runs, so a run that needs one backlog many times
/// builds it once. Git notices the copied index's file stamps differ and
/// refreshes them on its next command; nothing it reports changes.
pub fn copy_world(world: &GitWorld, root: &Path) -> Result<GitWorld, GitError> {
    let origin = root.join("origin.git");
    let clone = root.join("work");
    copy_tree(&world.origin, &origin)?;
    copy_tree(&world.clone, &clone)?;
    let config = clone.join(".git").join("config");
    let text = std::fs::read_to_string(&config).map_err(|source| GitError::Io {
        path: config.clone(),
        source,
    })?;
    let old = format!("\turl = {}\n", world.origin.display());
    let new = format!("\turl = {}\n", origin.display());
    if text.contains(&old) {
        write(&config, &text.replacen(&old, &new, 1))?;
    } else {
        // Written some other way (an older or newer git): let git say.
        Git::default().run(
            &clone,
            [
                OsStr::new("remote"),
                "set-url".as_ref(),
                "origin".as_ref(),
                origin.as_os_str(),
            ],
        )?;
    }
    Ok(GitWorld {
        origin,
        clone,
        default_branch: world.default_branch.clone(),
    })
}

/// `cp -r from to`, keeping file modes (git's hooks are executable).
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), GitError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| GitError::Io { path, source }
    };
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(io(&src))?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&src).map_err(io(&src))?;
            std::os::unix::fs::symlink(target, &dst).map_err(io(&dst))?;
        } else {
            std::fs::copy(&src, &dst).map_err(io(&dst))?;
        }
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), GitError> {
    std::fs::write(path, text).map_err(|source| GitError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn append(path: &Path, text: &str) -> Result<(), GitError> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|source| GitError::Io {
            path: path.to_path_buf(),
            source,
        })
}

/// One commit on the checked-out branch: a line appended to
/// `.fixture/{branch}.log`, so every commit has content of its own.
fn commit_change(git: &Git, clone: &Path, branch: &str, message: &str) -> Result<String, GitError> {
    let log = clone
        .join(".fixture")
        .join(format!("{}.log", branch.replace('/', "-")));
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(|source| GitError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let mut text = std::fs::read_to_string(&log).unwrap_or_default();
    text.push_str(message);
    text.push('\n');
    write(&log, &text)?;
    git.run(clone, [OsStr::new("add"), log.as_os_str()])?;
    git.run(clone, ["commit", "--quiet", "-m", message])?;
    head_sha(git, clone)
}

/// The SHA of `refs/heads/{branch}` in `repo` (bare or not), if it exists.
///
/// The mock tracker asks this for every pull request it renders, hundreds
/// of times a suite, so the ref store is read directly — a loose ref file,
/// else `packed-refs` — and `git rev-parse` runs only when the store is one
/// this does not read (a symbolic ref, reftable, a worktree's `.git` file).
pub fn ref_sha(git: &Git, repo: &Path, branch: &str) -> Result<Option<String>, GitError> {
    if let Some(found) = read_ref(repo, &format!("refs/heads/{branch}")) {
        return Ok(found);
    }
    match git.run(
        repo,
        [
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}^{{commit}}"),
        ],
    ) {
        Ok(sha) => Ok(Some(sha)),
        Err(GitError::Failed { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The commit checked out in `clone`: its `HEAD` read from the files when
/// it names a branch there (the fake skill asks after every commit), else
/// `git rev-parse HEAD`.
pub fn head_sha(git: &Git, clone: &Path) -> Result<String, GitError> {
    let head = std::fs::read_to_string(clone.join(".git").join("HEAD")).unwrap_or_default();
    if let Some(name) = head.trim().strip_prefix("ref: ")
        && let Some(Some(sha)) = read_ref(clone, name)
    {
        return Ok(sha);
    }
    git.run(clone, ["rev-parse", "HEAD"])
}

/// `Some(sha)` or `Some(None)` (no such ref) when `repo`'s ref store
/// answers for `name` by its files; `None` when only git can tell.
fn read_ref(repo: &Path, name: &str) -> Option<Option<String>> {
    let dir = if repo.join("objects").is_dir() && repo.join("refs").is_dir() {
        repo.to_path_buf()
    } else {
        let dot = repo.join(".git");
        dot.is_dir().then_some(dot)?
    };
    if dir.join("reftable").exists() || dir.join("commondir").exists() {
        return None;
    }
    let hex = |s: &str| s.len() >= 40 && s.bytes().all(|b| b.is_ascii_hexdigit());
    match std::fs::read_to_string(dir.join(name)) {
        Ok(text) => {
            let sha = text.trim();
            return hex(sha).then(|| Some(sha.to_owned()));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(_) => return None,
    }
    let packed = match std::fs::read_to_string(dir.join("packed-refs")) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(None),
        Err(_) => return None,
    };
    let found = packed
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('^'))
        .filter_map(|l| l.split_once(' '))
        .find(|(_, r)| *r == name)
        .map(|(sha, _)| sha.to_owned());
    match found {
        Some(sha) if hex(&sha) => Some(Some(sha)),
        Some(_) => None,
        None => Some(None),
    }
}

/// Checks out `branch` in `clone` as it is on origin, or — when origin has
/// no such branch — as a new branch from `origin/{base}`.
pub fn checkout_from_origin(
    git: &Git,
    clone: &Path,
    branch: &str,
    base: &str,
) -> Result<(), GitError> {
    git.run(clone, ["fetch", "--quiet", "origin"])?;
    let remote = format!("refs/remotes/origin/{branch}");
    let start = if git
        .run(clone, ["rev-parse", "--verify", "--quiet", &remote])
        .is_ok()
    {
        remote
    } else {
        format!("refs/remotes/origin/{base}")
    };
    git.run(clone, ["checkout", "--quiet", "-B", branch, &start])?;
    Ok(())
}

/// Adds `count` commits to `branch` (from its origin state, or from
/// `base` when new) and pushes it; the new head SHA.
pub fn push_commits(
    git: &Git,
    clone: &Path,
    branch: &str,
    base: &str,
    count: u32,
    message: &str,
) -> Result<String, GitError> {
    checkout_from_origin(git, clone, branch, base)?;
    let mut sha = head_sha(git, clone)?;
    for i in 1..=count {
        let text = if count == 1 {
            message.to_owned()
        } else {
            format!("{message} ({i}/{count})")
        };
        sha = commit_change(git, clone, branch, &text)?;
    }
    git.run(
        clone,
        [
            "push",
            "--quiet",
            "origin",
            &format!("HEAD:refs/heads/{branch}"),
        ],
    )?;
    Ok(sha)
}

/// Rewrites the last commit of `branch` and force-pushes it, as a rebase or
/// an amend would; the new head SHA (never the old one).
pub fn rewrite_branch(
    git: &Git,
    clone: &Path,
    branch: &str,
    message: &str,
) -> Result<String, GitError> {
    checkout_from_origin(git, clone, branch, branch)?;
    let log = clone
        .join(".fixture")
        .join(format!("{}.log", branch.replace('/', "-")));
    let mut text = std::fs::read_to_string(&log).unwrap_or_default();
    text.push_str(&format!("rewritten: {message}\n"));
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(|source| GitError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    write(&log, &text)?;
    git.run(clone, [OsStr::new("add"), log.as_os_str()])?;
    git.run(clone, ["commit", "--quiet", "--amend", "-m", message])?;
    git.run(
        clone,
        [
            "push",
            "--quiet",
            "--force",
            "origin",
            &format!("HEAD:refs/heads/{branch}"),
        ],
    )?;
    head_sha(git, clone)
}

/// `git worktree add -B branch path start`: a real worktree; its head SHA.
pub fn worktree_add(
    git: &Git,
    clone: &Path,
    path: &Path,
    branch: &str,
    start: &str,
) -> Result<String, GitError> {
    git.run(clone, ["fetch", "--quiet", "origin"])?;
    git.run(
        clone,
        [
            OsStr::new("worktree"),
            "add".as_ref(),
            "--quiet".as_ref(),
            "-B".as_ref(),
            branch.as_ref(),
            path.as_os_str(),
            start.as_ref(),
        ],
    )?;
    git.run(path, ["rev-parse", "HEAD"])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backlog() -> Backlog {
        Backlog::parse(
            Path::new("t.yaml"),
            "repository: acme/app\npull_requests:\n  - { number: 10, title: Login, branch: feature/1-login }\n  - { number: 11, title: Logout, branch: feature/2-logout, state: closed, merged: true }\n",
        )
        .unwrap()
    }

    #[test]
    fn same_backlog_same_shas() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let git = Git::default();
        let wa = materialise(&git, &backlog(), a.path()).unwrap();
        let wb = materialise(&git, &backlog(), b.path()).unwrap();
        for branch in ["main", "feature/1-login", "feature/2-logout"] {
            let sa = ref_sha(&git, &wa.origin, branch).unwrap().unwrap();
            let sb = ref_sha(&git, &wb.origin, branch).unwrap().unwrap();
            assert_eq!(sa, sb, "{branch}");
            assert_eq!(sa.len(), 40);
        }
        assert_eq!(ref_sha(&git, &wa.origin, "nope").unwrap(), None);
        assert_eq!(
            git.run(&wa.clone, ["branch", "--show-current"]).unwrap(),
            "main"
        );
    }

    /// The ref store read by its files answers as `git rev-parse` does,
    /// loose or packed, in the bare origin and in the clone, and so does
    /// the clone's `HEAD`.
    #[test]
    fn ref_sha_reads_loose_and_packed_refs_as_git_does() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::default();
        let world = materialise(&git, &backlog(), dir.path()).unwrap();
        let by_git = |repo: &Path, branch: &str| {
            git.run(
                repo,
                [
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    &format!("refs/heads/{branch}"),
                ],
            )
            .ok()
        };
        let branches = ["main", "feature/1-login", "feature/2-logout", "nope"];
        for pack in [false, true] {
            for repo in [&world.origin, &world.clone] {
                if pack {
                    git.run(repo, ["pack-refs", "--all"]).unwrap();
                }
                if repo == &world.clone {
                    assert_eq!(
                        head_sha(&git, repo).unwrap(),
                        git.run(repo, ["rev-parse", "HEAD"]).unwrap(),
                        "HEAD (packed: {pack})"
                    );
                }
                for branch in branches {
                    let read = read_ref(repo, &format!("refs/heads/{branch}"));
                    assert_eq!(
                        read,
                        Some(by_git(repo, branch)),
                        "{branch} (packed: {pack})"
                    );
                }
            }
        }
        // Packed, then moved: the loose ref wins, as it does for git.
        let pushed = push_commits(&git, &world.clone, "feature/1-login", "main", 1, "fix").unwrap();
        assert_eq!(
            ref_sha(&git, &world.origin, "feature/1-login").unwrap(),
            Some(pushed)
        );
    }

    #[test]
    fn a_copied_world_is_the_same_world_on_its_own_origin() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let git = Git::default();
        let built = materialise(&git, &backlog(), a.path()).unwrap();
        let copy = copy_world(&built, b.path()).unwrap();
        assert_eq!(copy.origin, b.path().join("origin.git"));
        assert_eq!(copy.clone, b.path().join("work"));
        for branch in ["main", "feature/1-login", "feature/2-logout"] {
            assert_eq!(
                ref_sha(&git, &copy.origin, branch).unwrap(),
                ref_sha(&git, &built.origin, branch).unwrap(),
                "{branch}"
            );
        }
        assert_eq!(
            git.run(&copy.clone, ["remote", "get-url", "origin"])
                .unwrap(),
            copy.origin.display().to_string()
        );
        assert_eq!(git.run(&copy.clone, ["status", "--porcelain"]).unwrap(), "");
        assert_eq!(
            git.run(&copy.clone, ["branch", "--show-current"]).unwrap(),
            "main"
        );
        // A push from the copy moves the copy's origin, not the template's.
        let before = ref_sha(&git, &built.origin, "feature/1-login").unwrap();
        let pushed = push_commits(&git, &copy.clone, "feature/1-login", "main", 1, "fix").unwrap();
        assert_eq!(
            ref_sha(&git, &copy.origin, "feature/1-login").unwrap(),
            Some(pushed)
        );
        assert_eq!(
            ref_sha(&git, &built.origin, "feature/1-login").unwrap(),
            before
        );
    }

    #[test]
    fn push_and_rewrite_move_the_origin_ref() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::default();
        let world = materialise(&git, &backlog(), dir.path()).unwrap();
        let before = ref_sha(&git, &world.origin, "feature/1-login")
            .unwrap()
            .unwrap();
        let pushed = push_commits(&git, &world.clone, "feature/1-login", "main", 2, "fix").unwrap();
        assert_ne!(pushed, before);
        assert_eq!(
            ref_sha(&git, &world.origin, "feature/1-login")
                .unwrap()
                .unwrap(),
            pushed
        );
        let parent = git.run(&world.clone, ["rev-parse", "HEAD~2"]).unwrap();
        assert_eq!(parent, before, "two commits on top of the old head");

        let rewritten = rewrite_branch(&git, &world.clone, "feature/1-login", "rebased").unwrap();
        assert_ne!(rewritten, pushed);
        assert_eq!(
            ref_sha(&git, &world.origin, "feature/1-login")
                .unwrap()
                .unwrap(),
            rewritten
        );
        let ancestor = git
            .command(&world.clone)
            .args(["merge-base", "--is-ancestor", &pushed, &rewritten])
            .status()
            .unwrap();
        assert!(!ancestor.success(), "a force-push is not a fast-forward");

        let fresh = push_commits(&git, &world.clone, "feature/9-new", "main", 1, "new").unwrap();
        assert_eq!(
            ref_sha(&git, &world.origin, "feature/9-new")
                .unwrap()
                .unwrap(),
            fresh
        );
    }

    #[test]
    fn worktree_is_real() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::default();
        let world = materialise(&git, &backlog(), dir.path()).unwrap();
        let wt = dir.path().join("wt-10");
        let sha = worktree_add(&git, &world.clone, &wt, "wt/10", "origin/feature/1-login").unwrap();
        assert_eq!(
            sha,
            ref_sha(&git, &world.origin, "feature/1-login")
                .unwrap()
                .unwrap()
        );
        let list = git
            .run(&world.clone, ["worktree", "list", "--porcelain"])
            .unwrap();
        assert!(list.contains("wt-10"), "{list}");
    }
}
