//! What claims cost a single clone (issue 32): `sdd-loop work --loop`
//! ticks in a clone of a local bare origin, with claims off
//! (`SDD_LOOP_CLAIM_REMOTE=off`) and on, against an in-process mock
//! tracker (`fixtures/backlogs/two-ready-stories.yaml` to begin with).
//! Each tick plans two issues (`--max-agents 2`, or `--planned 1`); after
//! it, as the skill's PRs would, its issues are marked `in-progress` and
//! two new ready ones filed, so every tick claims work no tick claimed
//! before — a loop grinding a backlog. A `git` on the ticks' PATH logs
//! each command before running the real one, so the round trips to the
//! remote (fetches and pushes) are counted, not assumed. Prints the round
//! trips and the median wall time per tick for each, and fails when claims
//! add more than one round trip per planned issue.
//!
//! ```text
//! cargo run --release -p sdd-loop --example claims_cost -- [--ticks N] [--planned N] [--binary PATH]
//! claims=off ticks=20 planned_per_tick=2 round_trips_per_tick=0.0 wall_ms_median=…
//! claims=on  ticks=20 planned_per_tick=2 round_trips_per_tick=1.0 (fetch 0.0, push 1.0) wall_ms_median=… ok
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use sdd_mocks::fixture::Backlog;
use sdd_mocks::tracker::{BlockingMockTracker, MockTracker, NewIssue};

const BACKLOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../fixtures/backlogs/two-ready-stories.yaml"
);

/// A skill that reports it did nothing.
const SKILL: &str =
    r#"printf '{"protocol": 1, "summary": "nothing", "usage": []}' > "$SDD_LOOP_RESULT""#;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

/// A `git` that appends its subcommand to `log`, then runs the real one.
fn logging_git(bin: &Path, log: &Path) {
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .expect("sh")
            .stdout,
    )
    .expect("utf-8");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in fetch|push|ls-remote) echo \"$a\" >> '{}'; break;; esac; done\nexec '{}' \"$@\"\n",
        log.display(),
        real.trim()
    );
    let path = bin.join("git");
    std::fs::write(&path, script).expect("write git");
    let mut perms = std::fs::metadata(&path).expect("git").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&path, perms).expect("chmod");
}

struct Run {
    fetches: usize,
    pushes: usize,
    wall_ms: Vec<f64>,
}

/// The world a run of ticks works in.
struct Bench<'a> {
    engine: &'a Path,
    project: &'a Path,
    bin: &'a Path,
    log: &'a Path,
    tracker: &'a BlockingMockTracker,
    planned: u64,
}

/// What the skill's PRs would do: the issues the tick planned are marked
/// `in-progress`, and as many new ready ones are filed.
fn work_done(tracker: &BlockingMockTracker, stdout: &str) {
    let planned: Vec<u64> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Iteration plan: implement "))
        .map(|rest| {
            rest.split([',', ' '])
                .filter_map(|w| w.strip_prefix('#')?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    assert!(!planned.is_empty(), "the tick planned nothing:\n{stdout}");
    for n in planned {
        tracker
            .set_labels(n, &["story", "in-progress"])
            .expect("label the worked issue");
        tracker
            .add_issue(&NewIssue {
                number: None,
                title: format!("Follow-up of #{n}"),
                body: "### Acceptance Criteria\n- it works\n".into(),
                labels: vec!["story".into()],
                author: "octocat".into(),
            })
            .expect("file a new issue");
    }
}

fn ticks(b: &Bench<'_>, n: usize, claims: bool) -> Run {
    let _ = std::fs::remove_file(b.log);
    let path = format!(
        "{}:{}",
        b.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut wall_ms = Vec::new();
    for _ in 0..n {
        // Every tick the first of a run: the state and its witness go.
        let _ = std::fs::remove_dir_all(b.project.join(".sdd"));
        let _ = std::fs::remove_dir_all(b.project.join(".git/sdd-loop"));
        let started = Instant::now();
        let mut cmd = Command::new(b.engine);
        cmd.args(["work", "--loop", "--max-agents", &b.planned.to_string()])
            .current_dir(b.project)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", b.project.join("home"))
            .env("SDD_LOOP_TRACKER_URL", b.tracker.uri())
            .env("SDD_LOOP_REPO", "acme/app")
            .env("SDD_LOOP_TRACKER_TOKEN", "bench-token")
            .env("SDD_LOOP_SKILL_CMD", SKILL)
            .env("SDD_LOOP_NOW", "2026-05-09T14:00:00Z")
            .stdin(Stdio::null());
        if !claims {
            cmd.env("SDD_LOOP_CLAIM_REMOTE", "off");
        }
        let out = cmd.output().expect("run the engine");
        wall_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(
            out.status.success(),
            "the tick failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        work_done(b.tracker, &String::from_utf8_lossy(&out.stdout));
    }
    let logged = std::fs::read_to_string(b.log).unwrap_or_default();
    Run {
        fetches: logged.lines().filter(|l| *l == "fetch").count(),
        pushes: logged.lines().filter(|l| *l == "push").count(),
        wall_ms,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[expect(clippy::print_stdout, reason = "the figures are the program's output")]
#[expect(clippy::print_stderr, reason = "usage errors")]
fn main() {
    let mut n = 20usize;
    let mut planned = 2u64;
    let mut binary: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--ticks", Some(v)) => n = v.parse().unwrap_or(20).max(1),
            ("--planned", Some(v)) => planned = v.parse().unwrap_or(2).max(1),
            ("--binary", Some(v)) => binary = Some(PathBuf::from(v)),
            _ => {
                eprintln!("usage: claims_cost [--ticks N (20)] [--planned N (2)] [--binary PATH]");
                std::process::exit(2);
            }
        }
    }
    let exe = std::env::current_exe().expect("current_exe");
    let engine = binary
        .unwrap_or_else(|| exe.parent().unwrap().parent().unwrap().join("sdd-loop"))
        .canonicalize()
        .expect("no engine built beside this example (build it, or pass --binary)");
    let backlog = Backlog::load(Path::new(BACKLOG)).expect("the fixture backlog");
    let tracker = MockTracker::builder()
        .backlog(backlog)
        .token("bench-token")
        .start_blocking()
        .expect("mock tracker");
    let dir = tempfile::Builder::new()
        .prefix("claims-cost-")
        .tempdir()
        .expect("temp dir");
    git(dir.path(), &["init", "-q", "--bare", "origin.git"]);
    let project = dir.path().join("clone");
    std::fs::create_dir_all(project.join("home")).expect("clone");
    git(&project, &["init", "-q"]);
    git(&project, &["remote", "add", "origin", "../origin.git"]);
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    let log = dir.path().join("git.log");
    logging_git(&bin, &log);
    let bench = Bench {
        engine: &engine,
        project: &project,
        bin: &bin,
        log: &log,
        tracker: &tracker,
        planned,
    };
    // Warm up once each way, unmeasured.
    ticks(&bench, 1, false);
    ticks(&bench, 1, true);
    let off = ticks(&bench, n, false);
    let on = ticks(&bench, n, true);
    let per = |x: usize| x as f64 / n as f64;
    let extra = per(on.fetches + on.pushes) - per(off.fetches + off.pushes);
    // At most one round trip per planned issue.
    let ok = extra <= planned as f64;
    println!(
        "claims=off ticks={n} planned_per_tick={planned} round_trips_per_tick={:.1} wall_ms_median={:.1}",
        per(off.fetches + off.pushes),
        median(off.wall_ms)
    );
    println!(
        "claims=on  ticks={n} planned_per_tick={planned} round_trips_per_tick={:.1} (fetch {:.1}, push {:.1}) wall_ms_median={:.1} {}",
        per(on.fetches + on.pushes),
        per(on.fetches),
        per(on.pushes),
        median(on.wall_ms),
        if ok { "ok" } else { "OVER" }
    );
    if !ok {
        std::process::exit(1);
    }
}
