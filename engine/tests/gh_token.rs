//! The tracker token from GitHub's CLI (issue 27): with neither
//! `SDD_LOOP_TRACKER_TOKEN` nor `GITHUB_TOKEN` set, the real `sdd-loop`
//! binary asks a `gh` on `PATH` (here a stub script) for the tracker host's
//! token; the mock tracker, which refuses any other bearer, must receive
//! it, and it must appear nowhere in the engine's output or under `.sdd/`.
//! With `gh` absent or logged out, the "no token" note says which.

#[path = "tree/mod.rs"]
mod tree;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use sdd_mocks::fixture::Backlog;
use sdd_mocks::tracker::{BlockingMockTracker, MockTracker};

const GH_TOKEN: &str = "gho_STUBxTOKENx9f3Kq2LmZ7pRw1VbN8cYd";

const BACKLOG: &str = "\
repository: acme/app
issues:
  - number: 1
    title: One
    body: \"### Acceptance Criteria\\n- one\"
";

struct World {
    tracker: BlockingMockTracker,
    dir: tempfile::TempDir,
}

impl World {
    fn new(token: Option<&str>) -> Self {
        let backlog = Backlog::parse(Path::new("gh.yaml"), BACKLOG).unwrap();
        let mut builder = MockTracker::builder().backlog(backlog);
        if let Some(token) = token {
            builder = builder.token(token);
        }
        let tracker = builder.start_blocking().unwrap();
        let dir = tempfile::tempdir().unwrap();
        for d in ["home", "bin", "tools"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        // Only the tools the skill script needs: no `gh` from the machine.
        for tool in ["sh", "cat", "git"] {
            if let Some(found) = ["/usr/bin", "/bin"]
                .iter()
                .map(|d| Path::new(d).join(tool))
                .find(|p| p.exists())
            {
                std::os::unix::fs::symlink(found, dir.path().join("tools").join(tool)).unwrap();
            }
        }
        std::fs::write(
            dir.path().join("skill.sh"),
            "#!/bin/sh\ncat > \"$SDD_LOOP_RESULT\" <<EOF\n{\"protocol\": 1, \"summary\": \"nothing\", \"usage\": []}\nEOF\n",
        )
        .unwrap();
        Self { tracker, dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Installs `bin/gh`, a shell script.
    fn gh(&self, script: &str) {
        let gh = self.root().join("bin/gh");
        std::fs::write(&gh, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// `sdd-loop work --loop` with no token variable; PATH is `bin/` (where
    /// a stub `gh` may be) and `tools/`.
    fn tick(&self) -> Output {
        let path = format!(
            "{}:{}",
            self.root().join("bin").display(),
            self.root().join("tools").display()
        );
        Command::new(env!("CARGO_BIN_EXE_sdd-loop"))
            .args(["work", "--loop"])
            .current_dir(self.root())
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.root().join("home"))
            .env("SDD_LOOP_TRACKER_URL", self.tracker.uri())
            .env("SDD_LOOP_REPO", "acme/app")
            .env("SDD_LOOP_TRACKER_RETRY_BUDGET", "1")
            .env("SDD_LOOP_SKILL_CMD", "sh ./skill.sh")
            .env("SDD_LOOP_NOW", "2026-05-09T14:00:00Z")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_logged_in_gh_supplies_the_bearer_token_and_it_leaks_nowhere() {
    let w = World::new(Some(GH_TOKEN));
    // The stub answers only the exact question the engine must ask.
    w.gh(&format!(
        "[ \"$*\" = \"auth token --hostname 127.0.0.1\" ] || {{ echo \"unexpected: $*\" >&2; exit 2; }}\necho {GH_TOKEN}"
    ));
    let out = w.tick();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let requests = w.tracker.requests();
    assert!(!requests.is_empty());
    assert!(
        requests.iter().all(|r| r.has_auth && r.status < 400),
        "every request carried the accepted bearer: {requests:?}"
    );
    assert!(!contains(&out.stdout, GH_TOKEN) && !contains(&out.stderr, GH_TOKEN));
    assert!(!stderr.contains("no tracker token"), "{stderr}");
    let seen = tree::files_under(&w.root().join(".sdd"));
    assert!(!seen.is_empty(), "the tick wrote its state");
    for (path, bytes) in &seen {
        assert!(
            !contains(bytes, GH_TOKEN),
            "the gh token is in {}",
            path.display()
        );
        // Half a token is still a leak.
        assert!(!contains(bytes, &GH_TOKEN[4..20]), "{}", path.display());
    }
}

#[test]
fn a_logged_out_gh_is_named_in_the_note() {
    let w = World::new(None);
    w.gh("echo 'no oauth token found for 127.0.0.1' >&2\nexit 1");
    let out = w.tick();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "note: no tracker token: SDD_LOOP_TRACKER_TOKEN and GITHUB_TOKEN are unset, and gh is not logged in to 127.0.0.1 (`gh auth login --hostname 127.0.0.1`)"
        ),
        "{stderr}"
    );
    assert!(w.tracker.requests().iter().all(|r| !r.has_auth));
}

#[test]
fn without_gh_the_note_says_it_is_not_installed() {
    let w = World::new(None);
    let out = w.tick();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "note: no tracker token: SDD_LOOP_TRACKER_TOKEN and GITHUB_TOKEN are unset, and gh is not installed (not on PATH)"
        ),
        "{stderr}"
    );
}

/// Regression: the skill got the engine's environment unchanged, so a
/// token lent by `gh` (or `GITHUB_TOKEN`), a repository read from the
/// clone's origin or the default tracker URL never reached it, and a
/// skill written to wrapped-skill.md failed on `SDD_LOOP_TRACKER_TOKEN`.
/// It gets the settings the tick resolved.
#[test]
fn the_skill_gets_the_tracker_settings_the_tick_resolved() {
    let w = World::new(Some(GH_TOKEN));
    w.gh(&format!("echo {GH_TOKEN}"));
    std::fs::write(
        w.root().join("skill.sh"),
        "#!/bin/sh\nprintf '%s\\n' \"$SDD_LOOP_TRACKER_URL\" \"$SDD_LOOP_REPO\" \"$SDD_LOOP_TRACKER_TOKEN\" > seen.txt\ncat > \"$SDD_LOOP_RESULT\" <<EOF\n{\"protocol\": 1, \"summary\": \"nothing\", \"usage\": []}\nEOF\n",
    )
    .unwrap();
    let out = w.tick();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = std::fs::read_to_string(w.root().join("seen.txt")).unwrap();
    assert_eq!(
        seen,
        format!("{}\nacme/app\n{GH_TOKEN}\n", w.tracker.uri()),
        "the URL, the repository and the token gh lent"
    );
}
