//! The fake skill as the engine runs it: a subprocess with the protocol's
//! environment, in a working clone of a real origin, talking to the mock
//! tracker and to `mock-qmd` installed as `qmd` on PATH. No sleeps: tests
//! synchronise on FIFOs and pipes.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use sdd_loop::state::history::PrState;
use sdd_loop::state::paths::Skill;
use sdd_loop::state::protocol::{PROTOCOL_VERSION, SkillEvent, SkillRequest, SkillResult};
use sdd_mocks::fixture::Backlog;
use sdd_mocks::git::{self, Git, GitWorld};
use sdd_mocks::qmd::{self, QmdState};
use sdd_mocks::skill;
use sdd_mocks::tracker::{BlockingMockTracker, Fault, MockTracker};

const TOKEN: &str = "skill-token";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A sandbox: origin + clone, tracker, qmd on PATH, request and script.
struct Sandbox {
    dir: tempfile::TempDir,
    world: GitWorld,
    tracker: BlockingMockTracker,
    bin: PathBuf,
}

impl Sandbox {
    fn new(backlog: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let backlog = Backlog::load(&repo_root().join("fixtures/backlogs").join(backlog)).unwrap();
        let world = git::materialise(&Git::default(), &backlog, dir.path()).unwrap();
        let tracker = MockTracker::builder()
            .backlog(backlog)
            .token(TOKEN)
            .origin(&world.origin)
            .start_blocking()
            .unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_mock-qmd"), bin.join("qmd")).unwrap();
        let sandbox = Self {
            dir,
            world,
            tracker,
            bin,
        };
        sandbox.request(1);
        sandbox
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn request(&self, iteration: u64) {
        let request = SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill: Skill::Work,
            iteration,
            repository: Some("acme/app".into()),
            issues: vec![],
            prs: vec![],
            max_new_prs: Some(1),
            no_chain: false,
            dry_run: false,
        };
        std::fs::write(
            self.path("request.json"),
            serde_json::to_string(&request).unwrap(),
        )
        .unwrap();
    }

    fn script(&self, text: &str) {
        std::fs::write(self.path("script.yaml"), text).unwrap();
    }

    fn qmd(&self, state: QmdState) {
        qmd::state::write(&self.path("qmd.state"), state).unwrap();
    }

    fn command(&self) -> Command {
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fake-skill"));
        cmd.current_dir(&self.world.clone)
            .env("PATH", path)
            .env(
                sdd_loop::state::protocol::ENV_REQUEST,
                self.path("request.json"),
            )
            .env(
                sdd_loop::state::protocol::ENV_RESULT,
                self.path("result.json"),
            )
            .env(
                sdd_loop::state::protocol::ENV_EVENTS,
                self.path("events.jsonl"),
            )
            .env(skill::ENV_SCRIPT, self.path("script.yaml"))
            .env(skill::ENV_TRACKER_URL, self.tracker.uri())
            .env(skill::ENV_TRACKER_TOKEN, TOKEN)
            .env_remove(skill::ENV_REPO)
            .env_remove(skill::ENV_COUNTER)
            .env(qmd::ENV_FIXTURES, repo_root().join("fixtures/qmd"))
            .env(qmd::ENV_STATE, self.path("qmd.state"));
        cmd
    }

    fn run(&self) -> Output {
        self.command().output().unwrap()
    }

    fn result(&self) -> Option<SkillResult> {
        let text = std::fs::read_to_string(self.path("result.json")).ok()?;
        Some(serde_json::from_str(&text).unwrap())
    }

    fn events(&self) -> Vec<SkillEvent> {
        std::fs::read_to_string(self.path("events.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn origin_sha(&self, branch: &str) -> String {
        git::ref_sha(&Git::default(), &self.world.origin, branch)
            .unwrap()
            .unwrap()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn work_tick_opens_a_pr_and_reports_every_kind_of_spend() {
    let s = Sandbox::new("two-ready-stories.yaml");
    s.script(
        "ticks:\n  - actions:\n\
         \x20     - qmd: status\n\
         \x20     - qmd: { search: login }\n\
         \x20     - usage: { model: claude-opus-4-7, tokens_in: 1000, tokens_out: 200 }\n\
         \x20     - agents: 2\n\
         \x20     - add_labels: { on: 1, labels: [in-progress] }\n\
         \x20     - open_pr: { branch: feature/1-login, title: Add login page, body: 'Closes #1', commits: 2 }\n\
         \x20     - comment: { on: 1, body: Opened a PR. }\n\
         \x20     - remove_label: { on: 1, label: in-progress }\n\
         \x20     - worktree: { path: ../wt-2, branch: wt/2 }\n\
         \x20     - failure: { target: \"#2\", root_cause: tests failed }\n\
         \x20     - chain: { invoked: true, review_outcome: approved, autofix_pr: { invoked: false } }\n\
         \x20     - progress: done\n\
         \x20     - usage: { model: claude-opus-4-7, tokens_in: 1, tokens_out: 1 }\n\
         \x20     - stderr: 'note: all good'\n\
         \x20   summary: 'Opened #3'\n",
    );
    let out = s.run();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "note: all good\n");

    let result = s.result().unwrap();
    let head = s.origin_sha("feature/1-login");
    assert_eq!(result.prs.len(), 1);
    let pr = &result.prs[0];
    assert_eq!((pr.number, pr.opened, pr.state), (3, true, PrState::Open));
    assert_eq!(pr.head_sha_at_end.as_deref(), Some(head.as_str()));
    assert_eq!(result.usage[0].tokens_in, 1001);
    assert_eq!(result.agents_dispatched, 2);
    assert_eq!(result.comments_pushed, 1);
    assert_eq!(result.failures[0].root_cause, "tests failed");
    assert_eq!(
        result.chain.as_ref().unwrap().review_outcome.as_deref(),
        Some("approved")
    );
    assert_eq!(result.summary.as_deref(), Some("Opened #3"));
    let wt = &result.worktrees[0];
    assert!(
        Path::new(&wt.path).join(".git").exists(),
        "a real worktree at {}",
        wt.path
    );

    let kinds: Vec<&str> = s
        .events()
        .iter()
        .map(|e| match e {
            SkillEvent::Usage { .. } => "usage",
            SkillEvent::AgentDispatched { .. } => "agents",
            SkillEvent::Pr { .. } => "pr",
            SkillEvent::CommentPushed { .. } => "comment",
            SkillEvent::Worktree { .. } => "worktree",
            SkillEvent::Failure { .. } => "failure",
            SkillEvent::Progress { .. } => "progress",
            SkillEvent::MergeAttempted { .. } => "merge",
            SkillEvent::ClaimLost { .. } => "claim_lost",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "usage", "agents", "pr", "comment", "worktree", "failure", "progress", "usage"
        ]
    );

    let t = &s.tracker;
    assert_eq!(
        t.pull(3).unwrap().head_sha,
        head,
        "the PR's head is the pushed branch"
    );
    assert_eq!(
        t.labels(1).unwrap(),
        vec!["story"],
        "label added, then removed"
    );
    assert_eq!(
        t.read(|w| w.issue_comments(1)).unwrap()[0]["body"],
        "Opened a PR."
    );
    assert!(
        t.requests().iter().all(|r| r.has_auth),
        "every call authenticated"
    );
    assert_eq!(t.count("POST", "**/pulls"), 1);
}

#[test]
fn review_tick_pushes_replies_force_pushes_and_merges() {
    let s = Sandbox::new("pr-with-human-feedback.yaml");
    let before = s.origin_sha("feature/141-login");
    s.script(
        "ticks:\n  - actions:\n\
         \x20     - push: { pr: 142, commits: 2 }\n\
         \x20     - reply: { pr: 142, to: 1001, body: Renamed. }\n\
         \x20     - force_push: { pr: 142 }\n\
         \x20     - review_round: { pr: 142 }\n\
         \x20     - merge: { pr: 142 }\n\
         \x20     - merge: { pr: 142 }\n",
    );
    let out = s.run();
    assert!(out.status.success(), "{}", stderr(&out));
    let after = s.origin_sha("feature/141-login");
    assert_ne!(after, before);

    let result = s.result().unwrap();
    let pr = &result.prs[0];
    assert_eq!(pr.head_sha_at_start.as_deref(), Some(before.as_str()));
    assert_eq!(pr.head_sha_at_end.as_deref(), Some(after.as_str()));
    assert_eq!(pr.state, PrState::Merged);
    assert_eq!((result.comments_pushed, result.merges_attempted), (1, 2));
    assert_eq!(result.review_rounds[0].rounds, 1);
    assert_eq!(result.failures.len(), 1, "the second merge is refused");
    assert_eq!(result.failures[0].target, "#142");
    assert!(
        result.failures[0].root_cause.starts_with("merge refused"),
        "{:?}",
        result.failures
    );

    let thread = s.tracker.read(|w| w.review_comments(142)).unwrap();
    let last = thread.last().unwrap();
    assert_eq!(
        (last["in_reply_to_id"].as_u64(), last["body"].as_str()),
        (Some(1001), Some("Renamed."))
    );
    assert_eq!(s.tracker.pull(142).unwrap().state, PrState::Merged);
}

#[test]
fn qmd_down_prints_the_sentinel_and_exits_78_keeping_spend() {
    let s = Sandbox::new("two-ready-stories.yaml");
    s.qmd(QmdState::Down);
    s.script("ticks:\n  - actions:\n      - usage: { model: m, tokens_in: 5, tokens_out: 1 }\n      - qmd: status\n      - agents: 1\n");
    let out = s.run();
    assert_eq!(out.status.code(), Some(78));
    let err = stderr(&out);
    let sentinel = err
        .lines()
        .find(|l| l.contains("qmd-unreachable"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        sentinel.contains("cannot reach the qmd index"),
        "the captured error: {sentinel}"
    );
    let result = s.result().unwrap();
    assert_eq!(result.usage[0].tokens_in, 5);
    assert_eq!(result.agents_dispatched, 0, "nothing after the failed call");

    s.qmd(QmdState::Up);
    s.script(
        "ticks:\n  - actions:\n      - qmd: { query: review round }\n      - qmd: update\n      - qmd: embed\n      - report_pr: { number: 9, branch: old/9, state: closed, head_sha_at_end: abc }\n",
    );
    std::fs::remove_file(s.path("script.yaml.count")).unwrap();
    let out = s.run();
    assert!(out.status.success(), "{}", stderr(&out));
    let result = s.result().unwrap();
    assert_eq!(
        (result.prs[0].number, result.prs[0].state),
        (9, PrState::Closed),
        "report_pr"
    );
    assert!(
        s.events()
            .iter()
            .any(|e| matches!(e, SkillEvent::Pr { number: 9, .. }))
    );
}

#[test]
fn ticks_by_iteration_and_by_order_with_exit_and_result_modes() {
    let s = Sandbox::new("empty.yaml");
    s.script(
        "ticks:\n\
         \x20 - iteration: 7\n    actions: [{ stderr: seventh }]\n    exit: 3\n\
         \x20 - actions: [{ stderr: first }]\n    result: malformed\n\
         \x20 - actions: [{ stderr: second }]\n    result: missing\n    exit: 1\n\
         default:\n  actions: [{ stderr: fallback }]\n",
    );
    let out = s.run();
    assert_eq!(
        (out.status.code(), stderr(&out).as_str()),
        (Some(0), "first\n")
    );
    let text = std::fs::read_to_string(s.path("result.json")).unwrap();
    assert!(
        serde_json::from_str::<SkillResult>(&text).is_err(),
        "malformed: {text}"
    );

    s.request(7);
    let out = s.run();
    assert_eq!(
        (out.status.code(), stderr(&out).as_str()),
        (Some(3), "seventh\n")
    );

    s.request(2);
    std::fs::remove_file(s.path("result.json")).unwrap();
    let out = s.run();
    assert_eq!(
        (out.status.code(), stderr(&out).as_str()),
        (Some(1), "second\n")
    );
    assert!(s.result().is_none(), "result: missing");

    let out = s.run();
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).ends_with("fallback\n"), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("[fake-skill] no tick left"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn barrier_on_a_fifo_lets_the_test_kill_at_that_exact_moment() {
    let s = Sandbox::new("two-ready-stories.yaml");
    let fifo = s.path("ready.fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    s.script(&format!(
        "ticks:\n  - actions:\n      - usage: {{ model: m, tokens_in: 7, tokens_out: 1 }}\n      - open_pr: {{ branch: feature/2-logout, title: Logout }}\n      - barrier: {}\n      - agents: 9\n",
        fifo.display()
    ));
    let mut child = s.command().stderr(Stdio::null()).spawn().unwrap();

    let mut line = String::new();
    BufReader::new(std::fs::File::open(&fifo).unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, format!("ready {}\n", child.id()));

    let events = s.events();
    assert!(matches!(events[0], SkillEvent::Usage { tokens_in: 7, .. }));
    assert!(
        matches!(
            &events[1],
            SkillEvent::Pr {
                number: 3,
                opened: true,
                ..
            }
        ),
        "{events:?}"
    );
    assert_eq!(events.len(), 2, "nothing after the barrier");

    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9));
    assert!(s.result().is_none(), "killed before writing a result");
    assert_eq!(
        s.tracker.pull(3).unwrap().state,
        PrState::Open,
        "the PR survives the kill"
    );
}

#[test]
fn hang_blocks_silently_until_killed() {
    let s = Sandbox::new("empty.yaml");
    s.script("ticks:\n  - actions: [{ progress: started }, { stderr: about to hang }, hang, { agents: 1 }]\n");
    let mut child = s.command().stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert_eq!(line, "about to hang\n");
    child.kill().unwrap();
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "no output after the hang");
    assert_eq!(s.events().len(), 1);
    assert!(s.result().is_none());
}

#[test]
fn own_failures_have_their_own_exit_codes() {
    let s = Sandbox::new("two-ready-stories.yaml");

    s.script("ticks:\n  - actions:\n      - explode: 1\n");
    let out = s.run();
    assert_eq!(out.status.code(), Some(skill::exit::BAD_SCRIPT.into()));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "[fake-skill] error: {}:3:9: unknown variant",
            s.path("script.yaml").display()
        )),
        "{err}"
    );

    s.script("ticks:\n  - actions: []\n    exit: 93\n");
    assert_eq!(
        s.run().status.code(),
        Some(90),
        "reserved exit codes are refused"
    );

    s.script("ticks: []\n");
    let out = s.run();
    assert_eq!(out.status.code(), Some(90));
    assert!(
        stderr(&out).contains("has no tick for iteration 1"),
        "{}",
        stderr(&out)
    );

    s.script("ticks:\n  - actions: []\n");
    let out = s
        .command()
        .env_remove(sdd_loop::state::protocol::ENV_REQUEST)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(91));
    assert!(stderr(&out).starts_with("[fake-skill] error: SDD_LOOP_REQUEST is not set"));

    s.script("default:\n  actions: [{ comment: { on: 1, body: hi } }]\n");
    let out = s
        .command()
        .env_remove(skill::ENV_TRACKER_URL)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(92), "{}", stderr(&out));
    s.tracker.inject(Fault::status("POST", "**/comments", 503));
    assert_eq!(s.run().status.code(), Some(92));
    s.tracker.clear_faults();

    s.script("default:\n  actions: [{ push: { pr: 1 } }]\n");
    assert_eq!(s.run().status.code(), Some(92), "#1 is an issue: 404");

    s.script(
        "default:\n  actions: [{ worktree: { path: ../wt, branch: x, start: no-such-ref } }]\n",
    );
    let out = s.run();
    assert_eq!(out.status.code(), Some(93), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("[fake-skill] error: "),
        "{}",
        stderr(&out)
    );
}
