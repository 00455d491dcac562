//! `fake-gh` as a real agent's shell runs it: in a working clone of a real
//! origin, after a real `git push`, against the mock tracker — the PR it
//! opens, merges and comments on is the tracker's, and its refusals exit
//! like `gh`'s.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sdd_loop::state::history::PrState;
use sdd_mocks::fixture::Backlog;
use sdd_mocks::git::{self, Git, GitWorld};
use sdd_mocks::skill;
use sdd_mocks::tracker::{BlockingMockTracker, MockTracker};

const TOKEN: &str = "gh-token";

struct World {
    _dir: tempfile::TempDir,
    world: GitWorld,
    tracker: BlockingMockTracker,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let backlog =
            Backlog::load(&root.join("fixtures/backlogs/two-ready-stories.yaml")).unwrap();
        let world = git::materialise(&Git::default(), &backlog, dir.path()).unwrap();
        let tracker = MockTracker::builder()
            .backlog(backlog)
            .token(TOKEN)
            .origin(&world.origin)
            .start_blocking()
            .unwrap();
        Self {
            _dir: dir,
            world,
            tracker,
        }
    }

    fn clone_dir(&self) -> PathBuf {
        self.world.clone.clone()
    }

    fn gh(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_fake-gh"))
            .args(args)
            .current_dir(self.clone_dir())
            .env(skill::ENV_TRACKER_URL, self.tracker.uri())
            .env(skill::ENV_REPO, "acme/app")
            .env("GH_TOKEN", TOKEN)
            .output()
            .unwrap()
    }

    fn git(&self, args: &[&str]) {
        let out = Git::default()
            .command(&self.clone_dir())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn pr_create_opens_the_current_branch_merge_and_comment_act_on_it() {
    let w = World::new();
    w.git(&["checkout", "-q", "-b", "feature/1-login"]);
    w.git(&["commit", "-q", "--allow-empty", "-m", "Add login page"]);
    w.git(&["push", "-q", "-u", "origin", "feature/1-login"]);
    let out = w.gh(&[
        "pr",
        "create",
        "--title",
        "Add login page",
        "--body",
        "Closes #1",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "https://github.com/acme/app/pull/3");
    let pr = w.tracker.pull(3).unwrap();
    assert_eq!(
        (pr.branch.as_str(), pr.state),
        ("feature/1-login", PrState::Open)
    );

    let out = w.gh(&["pr", "comment", "3", "--body", "Ready for review"]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(
        w.tracker.count("POST", "/repos/acme/app/issues/3/comments"),
        1
    );

    let out = w.gh(&["pr", "merge", "3", "--squash"]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(w.tracker.pull(3).unwrap().state, PrState::Merged);
    // A second merge is refused by the tracker: gh's exit status 1.
    let out = w.gh(&["pr", "merge", "3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).1.starts_with("[fake-gh] "), "{}", text(&out).1);
}

#[test]
fn pr_create_reads_its_body_from_a_file() {
    let w = World::new();
    w.git(&["checkout", "-q", "-b", "feature/2-logout"]);
    w.git(&["commit", "-q", "--allow-empty", "-m", "Add logout"]);
    w.git(&["push", "-q", "-u", "origin", "feature/2-logout"]);
    std::fs::write(w.clone_dir().join("body.md"), "Closes #2\n").unwrap();
    let out = w.gh(&[
        "pr",
        "create",
        "--title",
        "Add logout",
        "--body-file",
        "body.md",
    ]);
    assert!(out.status.success(), "{}", text(&out).1);
    let pr = w.tracker.issue_json(3).unwrap();
    assert_eq!(pr["body"], "Closes #2\n");
    let out = w.gh(&["pr", "create", "-t", "x", "-F", "missing.md"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("read the body file missing.md"),
        "{}",
        text(&out).1
    );
}

#[test]
fn api_posts_when_fields_are_given_and_gets_otherwise() {
    let w = World::new();
    w.git(&["checkout", "-q", "-b", "feature/2-logout"]);
    w.git(&["commit", "-q", "--allow-empty", "-m", "Add logout"]);
    w.git(&["push", "-q", "-u", "origin", "feature/2-logout"]);
    let out = w.gh(&[
        "api",
        "repos/acme/app/pulls",
        "-f",
        "title=Add logout",
        "-f",
        "head=feature/2-logout",
        "-f",
        "base=main",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let pr: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(pr["number"], 3);
    assert_eq!(w.tracker.count("POST", "/repos/acme/app/pulls"), 1);
    let out = w.gh(&["api", "/repos/acme/app/pulls/3"]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(w.tracker.count("GET", "/repos/acme/app/pulls/3"), 1);
}

#[test]
fn usage_errors_exit_2_and_a_missing_world_is_named() {
    let w = World::new();
    let out = w.gh(&["pr", "create"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out).1);
    let out = Command::new(env!("CARGO_BIN_EXE_fake-gh"))
        .args(["pr", "merge", "3"])
        .env_remove(skill::ENV_TRACKER_URL)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("SDD_LOOP_TRACKER_URL is not set"),
        "{}",
        text(&out).1
    );
}
