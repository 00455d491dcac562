//! The engine as a real process: a shell `while` loop is a valid `/loop`,
//! and a tick killed at a crash point is recovered by the next one.

use std::path::Path;
use std::process::Command;

use sdd_loop::state::history::{self, Outcome};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// `GET /repos/acme/app/pulls/N`: the PR the stub skill opened (the engine
/// counts only PRs the tracker has).
struct OpenedPull;

impl Respond for OpenedPull {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let n: u64 = request
            .url
            .path()
            .rsplit('/')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "number": n, "title": format!("PR {n}"), "body": "", "state": "open",
            "merged": false, "labels": [], "user": {"login": "sdd-worker"},
            "head": {"ref": format!("feature/{n}"), "sha": format!("sha{n}")}
        }))
    }
}

const SKILL: &str = r#"#!/bin/sh
# A stub wrapped skill: one PR and some usage per iteration.
it=$(sed -n 's/.*"iteration": *\([0-9][0-9]*\).*/\1/p' "$SDD_LOOP_REQUEST" | head -n 1)
pr=$((100 + it))
echo "stub skill: iteration $it" >&2
printf '{"event":"usage","model":"claude-haiku-4-7","tokens_in":1000,"tokens_out":100}\n' >> "$SDD_LOOP_EVENTS"
cat > "$SDD_LOOP_RESULT" <<EOF
{"protocol": 1,
 "prs": [{"number": $pr, "branch": "feature/$pr", "head_sha_at_end": "sha$pr", "state": "open", "opened": true}],
 "usage": [{"model": "claude-haiku-4-7", "tokens_in": 1000, "tokens_out": 100}],
 "agents_dispatched": 1}
EOF
"#;

struct World {
    _rt: tokio::runtime::Runtime,
    server: MockServer,
    dir: tempfile::TempDir,
}

fn world() -> World {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(MockServer::builder().start());
    let issues = serde_json::json!([
        {"number": 1, "title": "One", "body": "### Acceptance Criteria\n- one", "labels": []},
        {"number": 2, "title": "Two", "body": "### Acceptance Criteria\n- two", "labels": []}
    ]);
    rt.block_on(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/issues"))
            .respond_with(ResponseTemplate::new(200).set_body_json(issues))
            .mount(&server),
    );
    rt.block_on(
        Mock::given(method("GET"))
            .and(path_regex(r"^/repos/acme/app/pulls/\d+$"))
            .respond_with(OpenedPull)
            .mount(&server),
    );
    rt.block_on(
        Mock::given(method("GET"))
            .and(path("/repos/acme/app/pulls"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!([])))
            .mount(&server),
    );
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("skill.sh");
    std::fs::write(&skill, SKILL).unwrap();
    std::fs::write(
        dir.path().join("user.yaml"),
        "- gate: budget-escalation\n  answer: continue\n",
    )
    .unwrap();
    World {
        _rt: rt,
        server,
        dir,
    }
}

fn engine(w: &World) -> Command {
    in_world(Command::new(env!("CARGO_BIN_EXE_sdd-loop")), w)
}

fn in_world(mut cmd: Command, w: &World) -> Command {
    cmd.current_dir(w.dir.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("SDD_LOOP_TRACKER_URL", w.server.uri())
        .env("SDD_LOOP_REPO", "acme/app")
        .env("SDD_LOOP_SKILL_CMD", "sh ./skill.sh")
        .env("SDD_LOOP_NOW", "2026-05-09T14:00:00Z");
    cmd
}

fn lines(root: &Path) -> Vec<history::HistoryLine> {
    history::read_all(&root.join(".sdd/loop/work.history.jsonl"))
        .unwrap()
        .lines
        .into_iter()
        .map(|l| l.line)
        .collect()
}

#[test]
fn a_shell_while_loop_runs_to_a_clean_stop() {
    let w = world();
    let bin = env!("CARGO_BIN_EXE_sdd-loop");
    let script = format!(
        "n=0; while '{bin}' work --loop --max-iterations 3 --answers user.yaml; do n=$((n+1)); [ $n -lt 20 ] || exit 99; done; echo ticks=$n"
    );
    let out = in_world(Command::new("sh"), &w)
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ticks=3"), "{stdout}");
    assert!(stdout.contains("## Loop Ended — /sdd:work --loop"));
    assert!(stdout.contains("Stop cause: iteration_budget"));

    let history = lines(w.dir.path());
    let outcomes: Vec<_> = history
        .iter()
        .map(|l| (l.iteration.unwrap(), l.outcome.unwrap()))
        .collect();
    assert_eq!(
        outcomes,
        [
            (1, Outcome::Ok),
            (2, Outcome::Ok),
            (3, Outcome::Ok),
            (4, Outcome::Halted)
        ]
    );
    let last = history.last().unwrap();
    assert_eq!(
        last.stop_conditions_fired.as_deref().unwrap(),
        ["iteration_budget"]
    );
    let snap = last.budget_snapshot.as_ref().unwrap();
    assert_eq!(snap.iterations_used, Some(3));
    assert_eq!(snap.prs_touched_total, Some(3));
    assert_eq!(snap.tokens_in, Some(3000));
    // Iteration 3 of 3 reaches the ceiling: the stop wins, no gate asked.
    assert_eq!(history[2].gates.as_deref(), Some(&[][..]));
    assert!(!w.dir.path().join(".sdd/loop/work.lock").exists());

    // Ticks after the end keep reporting it (exit 3) without dispatching.
    let again = engine(&w).args(["work", "--loop"]).output().unwrap();
    assert_eq!(again.status.code(), Some(3));
    assert_eq!(lines(w.dir.path()).len(), 5);
}

#[test]
fn a_tick_killed_at_a_crash_point_is_recovered_by_the_next() {
    let w = world();
    // Tokens on record afterwards: the crashed tick's own spend counts once
    // if its skill ran (from its result), never twice.
    for (point, tokens) in [
        ("after-lock", 1000),
        ("after-gates", 1000),
        ("after-commit", 1000),
        ("after-journal", 1000),
        ("after-skill", 2000),
        ("after-history", 2000),
        ("after-budget", 2000),
        ("after-journal-removed", 2000),
        ("before-release", 2000),
    ] {
        let _ = std::fs::remove_dir_all(w.dir.path().join(".sdd"));
        let crashed = engine(&w)
            .args(["work", "--loop"])
            .env("SDD_LOOP_CRASH_AT", point)
            .output()
            .unwrap();
        assert_eq!(crashed.status.code(), None, "{point}: aborted by a signal");
        assert!(
            w.dir.path().join(".sdd/loop/work.lock").exists(),
            "{point}: lock left behind"
        );

        let next = engine(&w).args(["work", "--loop"]).output().unwrap();
        let out = String::from_utf8_lossy(&next.stdout);
        assert_eq!(
            next.status.code(),
            Some(0),
            "{point}: {out}{}",
            String::from_utf8_lossy(&next.stderr)
        );
        assert!(out.contains("Reaped stale lock for pid"), "{point}: {out}");
        let history = lines(w.dir.path());
        let iterations: Vec<u64> = history.iter().map(|l| l.iteration.unwrap()).collect();
        let expected: &[u64] = if tokens == 1000 && point != "after-journal" {
            &[1]
        } else {
            &[1, 2]
        };
        assert_eq!(
            iterations, expected,
            "{point}: one line per iteration, none lost or doubled"
        );
        let budget: serde_json::Value = serde_json::from_slice(
            &std::fs::read(w.dir.path().join(".sdd/loop/work.budget.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(budget["iterations_used"], expected.len(), "{point}");
        assert_eq!(
            budget["tokens_in"], tokens,
            "{point}: no spend lost or doubled"
        );
        assert!(
            !w.dir.path().join(".sdd/loop/work.inflight.json").exists(),
            "{point}"
        );
    }
}

// Regression: a tick killed after its history line but before budget.json
// left the checkpoint one iteration behind; the next tick, killed before it
// loaded the state, had taken its lock naming the iteration from
// budget.json alone, so `status` called the killed tick iteration 2 (and
// showed iteration 2, already recorded, as in flight, and 1 used) while
// `--resume` and the next tick ran iteration 3.
#[test]
fn status_names_a_killed_tick_s_iteration_as_resume_runs_it() {
    let w = world();
    let tick = |crash: Option<&str>, extra: &[&str]| {
        let mut cmd = engine(&w);
        cmd.args(["work", "--loop", "--answers", "user.yaml"])
            .args(extra);
        if let Some(point) = crash {
            cmd.env("SDD_LOOP_CRASH_AT", point);
        }
        cmd.output().unwrap()
    };
    assert_eq!(tick(None, &[]).status.code(), Some(0));
    for point in ["after-history", "after-lock"] {
        let crashed = tick(Some(point), &[]);
        assert_eq!(crashed.status.code(), None, "{point}: aborted");
    }

    let status = engine(&w).args(["status", "work"]).output().unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("(dead — stale, the next tick reaps it), iteration 3, since"),
        "the killed tick is iteration 3: {text}"
    );
    assert!(
        text.contains("In flight: none — iteration 2 (pid ")
            && text.contains(") is recorded in history; the next tick removes its journal"),
        "{text}"
    );
    assert!(
        text.contains("Used: 2/5 iterations"),
        "history wins: {text}"
    );
    assert!(
        text.contains("Checkpoint: .sdd/loop/work.budget.json is behind history"),
        "{text}"
    );
    let json = engine(&w)
        .args(["status", "work", "--json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["lock"]["iteration"], 3, "{json}");
    assert_eq!(json["in_flight"]["recorded"], true, "{json}");
    assert_eq!(json["budget"]["iterations"]["used"], 2, "{json}");

    // The next tick (`--resume` loads the state the same way; here it
    // would also ask git for the PRs' heads, and this world has no remote).
    let next = tick(None, &[]);
    let out = String::from_utf8_lossy(&next.stdout);
    assert_eq!(next.status.code(), Some(0), "{out}");
    assert!(out.contains("## Loop Iteration 3/5"), "{out}");
    let iterations: Vec<u64> = lines(w.dir.path())
        .iter()
        .map(|l| l.iteration.unwrap())
        .collect();
    assert_eq!(iterations, [1, 2, 3]);

    // An interrupted iteration not yet recovered counts the same way: the
    // next tick recovers 2 first and runs 3, so its killed forerunner's
    // lock says 3 (it said 2, as budget.json alone did).
    std::fs::remove_dir_all(w.dir.path().join(".sdd")).unwrap();
    assert_eq!(tick(None, &[]).status.code(), Some(0));
    for point in ["after-journal", "after-lock"] {
        assert_eq!(tick(Some(point), &[]).status.code(), None, "{point}");
    }
    let json = engine(&w)
        .args(["status", "work", "--json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["lock"]["iteration"], 3, "{json}");
    assert_eq!(
        (
            &json["in_flight"]["iteration"],
            &json["in_flight"]["recorded"]
        ),
        (&serde_json::json!(2), &serde_json::json!(false)),
        "{json}"
    );
    let next = tick(None, &[]);
    let out = String::from_utf8_lossy(&next.stdout);
    assert!(out.contains("Recovered interrupted iteration 2"), "{out}");
    assert!(out.contains("## Loop Iteration 3/5"), "{out}");
}

/// A stub skill that says `ready` into one FIFO, then waits on another;
/// on SIGINT it finishes its iteration (writes its result) and exits 0.
const BLOCKING_SKILL: &str = r#"#!/bin/sh
trap 'printf "{\"protocol\": 1, \"summary\": \"drained\"}" > "$SDD_LOOP_RESULT"; exit 0' INT
printf '{"protocol": 1}' > "$SDD_LOOP_RESULT"
echo ready > ready.fifo
read -r _ < go.fifo &
wait $!
"#;

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
}

/// Starts a tick whose skill blocks, and returns once the skill says
/// `ready` (no sleeps: a FIFO read).
fn start_blocked_tick(w: &World) -> std::process::Child {
    std::fs::write(w.dir.path().join("block.sh"), BLOCKING_SKILL).unwrap();
    mkfifo(&w.dir.path().join("ready.fifo"));
    mkfifo(&w.dir.path().join("go.fifo"));
    let tick = engine(w)
        .args(["work", "--loop"])
        .env("SDD_LOOP_SKILL_CMD", "sh ./block.sh")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let line = std::fs::read_to_string(w.dir.path().join("ready.fifo")).unwrap();
    assert_eq!(line.trim(), "ready");
    tick
}

#[test]
fn a_second_tick_skips_while_the_first_runs() {
    let w = world();
    let first = start_blocked_tick(&w);

    let second = engine(&w).args(["work", "--loop"]).output().unwrap();
    let out = String::from_utf8_lossy(&second.stdout);
    assert_eq!(second.status.code(), Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "Previous iteration 1 still active (pid {}) — skipping this tick",
            first.id()
        )),
        "{out}"
    );
    // The block is the skipped tick's own: the iteration after the holder's.
    assert!(
        out.contains("## Loop Iteration 2/5 — /sdd:work --loop"),
        "{out}"
    );

    std::fs::write(w.dir.path().join("go.fifo"), "go\n").unwrap();
    let first = first.wait_with_output().unwrap();
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stdout)
    );
    let outcomes: Vec<_> = lines(w.dir.path())
        .iter()
        .map(|l| (l.iteration.unwrap(), l.outcome.unwrap()))
        .collect();
    assert_eq!(outcomes, [(1, Outcome::SkippedLock), (1, Outcome::Ok)]);
    assert!(!w.dir.path().join(".sdd/loop/work.lock").exists());
}

#[test]
fn a_forced_tick_stops_the_live_tick_s_skill_and_the_live_tick_leaves_it_the_iteration() {
    let w = world();
    let first = start_blocked_tick(&w);

    let forced = engine(&w)
        .args([
            "work",
            "--loop",
            "--lock",
            "force",
            "--answer",
            "force-unlock=yes",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&forced.stdout);
    assert_eq!(forced.status.code(), Some(0), "{out}");
    // Its tick was alive, not killed: the note says whose lock was taken.
    assert!(
        out.contains(&format!(
            "still running under its tick (pid {}), whose lock this tick took",
            first.id()
        )),
        "{out}"
    );

    // The first tick's skill was stopped; its tick finds the lock gone and
    // leaves the iteration to the tick that recorded it.
    let first = first.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&first.stderr);
    assert_eq!(first.status.code(), Some(66), "{said}");
    assert!(
        said.contains("records iteration 1 as interrupted")
            || said.contains("iteration 1 was recovered as interrupted by another tick"),
        "{said}"
    );
    let outcomes: Vec<_> = lines(w.dir.path())
        .iter()
        .map(|l| (l.iteration.unwrap(), l.outcome.unwrap()))
        .collect();
    assert_eq!(outcomes, [(1, Outcome::Errored), (2, Outcome::Ok)]);
}

#[test]
fn events_lines_that_are_no_event_are_said_not_dropped() {
    let w = world();
    std::fs::write(
        w.dir.path().join("events.sh"),
        r#"printf '%s\n' '{"event": "usage", "model": "claude-haiku-4-7", "tokens_in": 1000, "tokens_out": 100}' 'tokens: lots' '{"event": "usage", "model": "m", "tokens_in": "x"}' >> "$SDD_LOOP_EVENTS"
exit 1
"#,
    )
    .unwrap();
    let tick = engine(&w)
        .args(["work", "--loop"])
        .env("SDD_LOOP_SKILL_CMD", "sh ./events.sh")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&tick.stdout);
    assert_eq!(tick.status.code(), Some(0), "{out}");
    assert!(
        out.contains("2 line(s) of .sdd/loop/work.exchange/1/events.jsonl are not progress events and were not counted"),
        "{out}"
    );
    let line = lines(w.dir.path()).pop().unwrap();
    assert_eq!(line.outcome, Some(Outcome::Errored));
    assert_eq!(line.tokens_in_this_iter, Some(1000), "the good line counts");
}

// Regression: a mistyped skill command (sh exits 127) was recorded as the
// work's failure with a `help:` about the result file, and the next tick
// ran it again before the repeated-failure gate said anything.
#[test]
fn a_skill_command_that_cannot_start_names_the_setting_and_ends_the_shell_loop() {
    let w = world();
    let bin = env!("CARGO_BIN_EXE_sdd-loop");
    let script = format!(
        "n=0; while :; do '{bin}' work --loop; s=$?; [ $s -eq 0 ] || break; n=$((n+1)); [ $n -lt 5 ] || exit 99; done; echo \"ticks=$n status=$s\""
    );
    let out = in_world(Command::new("sh"), &w)
        .env("SDD_LOOP_SKILL_CMD", "./run-work-skil")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ticks=0 status=64"), "{stdout}\n{said}");
    assert!(
        said.contains("error: the skill command could not be started (sh -c exited 127): sh: 1: ./run-work-skil: not found"),
        "{said}"
    );
    assert!(
        said.contains(
            "help: the skill command is \"./run-work-skil\" (--skill-cmd or SDD_LOOP_SKILL_CMD)"
        ),
        "{said}"
    );
    assert!(
        !said.contains("skill-result"),
        "no result-file hint: {said}"
    );
    let history = lines(w.dir.path());
    assert_eq!(history.len(), 1, "one iteration spent");
    assert_eq!(history[0].outcome, Some(Outcome::Errored));
    assert_eq!(
        history[0].failures_this_iter.as_deref(),
        Some(&[][..]),
        "no issue blamed"
    );

    // Fixed, the loop goes on: no repeated-failure gate on the issues.
    let fixed = engine(&w).args(["work", "--loop"]).output().unwrap();
    let out = String::from_utf8_lossy(&fixed.stdout);
    assert_eq!(fixed.status.code(), Some(0), "{out}");
    let history = lines(w.dir.path());
    assert_eq!(history[1].outcome, Some(Outcome::Ok), "{out}");
    assert_eq!(history[1].gates.as_deref(), Some(&[][..]), "{out}");
}

#[test]
fn sigint_drains_the_iteration_and_stops_the_loop() {
    let w = world();
    let tick = start_blocked_tick(&w);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(tick.id() as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let out = tick.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(
        stdout.contains("Interrupted (signal 2) — the iteration drained and was recorded"),
        "{stdout}"
    );
    assert!(
        stdout.contains("drained"),
        "the skill's own result was recorded: {stdout}"
    );
    let last = lines(w.dir.path()).pop().unwrap();
    assert_eq!(last.outcome, Some(Outcome::Halted));
    assert_eq!(
        last.stop_conditions_fired.as_deref().unwrap(),
        ["user_interrupt"]
    );
    assert!(
        !w.dir.path().join(".sdd/loop/work.lock").exists(),
        "lock released"
    );
    release_stragglers(w.dir.path());
}

/// A background `read` of the stub skill ignores SIGINT (as background jobs
/// of a non-interactive shell do) and would outlive the test: let it go.
fn release_stragglers(dir: &Path) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Ok(mut fifo) = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(dir.join("go.fifo"))
    {
        let _ = fifo.write_all(b"go\n");
    }
}

/// A stub skill that says `ready`, then waits on a background reader; on
/// SIGTERM it says `stopped` into a second FIFO and exits. The reader is
/// started with SIGTERM ignored, so it does not die of the signal too —
/// its death would interrupt the trap's FIFO open.
const TERM_SKILL: &str = r#"#!/bin/sh
trap '' TERM
read -r _ < go.fifo &
reader=$!
trap 'echo stopped > stopped.fifo; exit 0' TERM
echo ready > ready.fifo
wait $reader
"#;

// A SIGKILLed engine could not stop its skill: it ran on, orphaned, beside
// the next tick's. The skill now runs under a guard the kernel signals when
// the engine dies, so it is told to stop at once.
#[test]
fn a_killed_engine_s_skill_is_told_to_stop() {
    let w = world();
    std::fs::write(w.dir.path().join("term.sh"), TERM_SKILL).unwrap();
    for fifo in ["ready.fifo", "go.fifo", "stopped.fifo"] {
        mkfifo(&w.dir.path().join(fifo));
    }
    let mut tick = engine(&w)
        .args(["work", "--loop"])
        .env("SDD_LOOP_SKILL_CMD", "sh ./term.sh")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let line = std::fs::read_to_string(w.dir.path().join("ready.fifo")).unwrap();
    assert_eq!(line.trim(), "ready");
    tick.kill().unwrap();
    tick.wait().unwrap();
    // The skill's answer, bounded so a regression fails instead of hanging.
    let (tx, rx) = std::sync::mpsc::channel();
    let path = w.dir.path().join("stopped.fifo");
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read_to_string(path).unwrap_or_default());
    });
    let said = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the orphaned skill was never told to stop");
    assert_eq!(said.trim(), "stopped");
    release_stragglers(w.dir.path());
}

// Regression: an engine held at a pause point (`SDD_LOOP_PAUSE_AT`) ignored
// SIGTERM — its handler only sets a flag, and the blocking read of its
// release byte restarted — so it waited for a byte that never came. It now
// ends as a tick interrupted before dispatch: halted, recorded, unlocked.
#[test]
fn a_paused_tick_ends_on_sigterm_as_an_interrupted_one() {
    use std::io::{BufRead, BufReader};

    let w = world();
    let pause = w.dir.path().join("pause");
    std::fs::create_dir(&pause).unwrap();
    let rw = |f: &str| {
        mkfifo(&pause.join(f));
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(pause.join(f))
            .unwrap()
    };
    // Held open both ways, so neither of the engine's opens blocks; no
    // byte is ever written to `release`.
    let (ready, _release) = (rw("ready"), rw("release"));
    let mut tick = engine(&w)
        .args(["work", "--loop"])
        .env("SDD_LOOP_PAUSE_AT", "after-backlog")
        .env("SDD_LOOP_PAUSE_DIR", &pause)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(ready).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), format!("paused {}", tick.id()));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(tick.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    // Its end, bounded so a regression fails instead of hanging.
    let stdout = tick.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stdout), &mut text);
        let _ = tx.send(text);
    });
    let Ok(stdout) = rx.recv_timeout(std::time::Duration::from_secs(30)) else {
        let _ = tick.kill();
        let _ = tick.wait();
        panic!("the paused engine did not end on SIGTERM");
    };
    let status = tick.wait().unwrap();
    assert_eq!(status.code(), Some(3), "{stdout}");
    assert!(
        stdout.contains("Interrupted (signal 15) — stopping before dispatch"),
        "{stdout}"
    );
    let history = lines(w.dir.path());
    assert_eq!(history.len(), 1, "one halted line");
    let last = &history[0];
    assert_eq!(last.outcome, Some(Outcome::Halted));
    assert_eq!(
        last.stop_conditions_fired.as_deref().unwrap(),
        ["user_interrupt"]
    );
    assert!(
        !w.dir
            .path()
            .join(".sdd/loop/work.exchange/1/request.json")
            .exists(),
        "nothing dispatched"
    );
    assert!(
        !w.dir.path().join(".sdd/loop/work.lock").exists(),
        "lock released"
    );
}
