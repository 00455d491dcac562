//! The agent adapter against the engine's seams: what it finds in the
//! world (PRs, comments, merges) by comparing it with the snapshot taken
//! before the agent ran, and how it runs an agent process — the prompt on
//! stdin, a nested-session guard removed from its environment, usage
//! journaled as the stream arrives, the result written from the stream's
//! final word, failures quoted from the agent. The agents here are small
//! shell scripts printing recorded stream shapes; `fake-claude` and
//! `fake-codex` (crate sdd-mocks) play them end to end in the eval cases.

#[expect(
    dead_code,
    reason = "the fakes are shared by several test binaries; this one needs only the tracker and git"
)]
mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sdd_loop::agent::world::{self, Before};
use sdd_loop::agent::{AgentKind, AgentRunner, AgentSettings};
use sdd_loop::rules::redact::Redactor;
use sdd_loop::skill::runner::{NoInterrupts, ProcessRunner, RunSpec, SkillRunner};
use sdd_loop::state::exchange::{Exchange, fold_events};
use sdd_loop::state::history::PrState;
use sdd_loop::state::paths::{Skill, StatePaths};
use sdd_loop::state::protocol::{
    Criteria, IssueAssignment, ModelUsage, PROTOCOL_VERSION, PrAssignment, SkillRequest,
};
use sdd_loop::world::tracker::ReviewComment;
use support::{FakeGit, FakeTracker, pull};

fn work_request() -> SkillRequest {
    SkillRequest {
        protocol: PROTOCOL_VERSION,
        skill: Skill::Work,
        iteration: 1,
        repository: Some("acme/app".into()),
        issues: vec![IssueAssignment {
            number: 1,
            title: "Add login".into(),
            criteria: Criteria::Clear,
        }],
        prs: vec![],
        max_new_prs: Some(1),
        no_chain: false,
        dry_run: false,
    }
}

fn review_request(number: u64, head: &str) -> SkillRequest {
    SkillRequest {
        skill: Skill::Review,
        issues: vec![],
        prs: vec![PrAssignment {
            number,
            branch: format!("feature/{number}"),
            head_sha: Some(head.into()),
            merge_allowed: true,
        }],
        max_new_prs: None,
        ..work_request()
    }
}

fn comment(id: u64, author: &str) -> ReviewComment {
    ReviewComment {
        id,
        author: author.into(),
        body: "x".into(),
        in_reply_to: None,
    }
}

#[test]
fn work_finds_the_pr_that_closes_an_assigned_issue_and_the_branch_that_moved() {
    let tracker = FakeTracker::default();
    let git = FakeGit::default();
    let mut moved = pull(7, PrState::Open, &[], "a7");
    moved.body = "Unrelated work".into();
    tracker.pulls.borrow_mut().push(moved);
    tracker
        .pulls
        .borrow_mut()
        .push(pull(8, PrState::Open, &[], "a8"));
    git.heads.borrow_mut().extend([
        ("main".to_owned(), "m1".to_owned()),
        ("feature/7".to_owned(), "a7".to_owned()),
        ("feature/8".to_owned(), "a8".to_owned()),
    ]);
    let request = work_request();
    let before = world::snapshot(&tracker, &git, "origin", &request).unwrap();
    assert_eq!(before.login.as_deref(), Some("sdd-worker"));

    // The agent opens #9 for issue 1, pushes to #7, comments on #9.
    let mut opened = pull(9, PrState::Open, &[], "b9");
    opened.body = "Closes #1".into();
    tracker.pulls.borrow_mut().push(opened);
    tracker.pulls.borrow_mut()[0].head_sha = "a7-2".into();
    git.heads.borrow_mut().extend([
        ("feature/9".to_owned(), "b9".to_owned()),
        ("feature/7".to_owned(), "a7-2".to_owned()),
    ]);
    tracker
        .issue_comments
        .borrow_mut()
        .insert(9, vec![comment(100, "sdd-worker"), comment(101, "alice")]);

    let found = world::discover(&before, &tracker, &git, "origin", &request).unwrap();
    let shown: Vec<_> = found
        .prs
        .iter()
        .map(|p| {
            (
                p.number,
                p.opened,
                p.head_sha_at_start.as_deref(),
                p.head_sha_at_end.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            (7, false, Some("a7"), Some("a7-2")),
            (9, true, None, Some("b9"))
        ]
    );
    assert_eq!(
        (found.comments, found.merges),
        (1, 0),
        "alice's comment is not ours"
    );
}

/// Issue 32: with two clones of one repository working at once, a PR
/// the other clone opened on a branch of its own (closing the issue it
/// claimed) was counted as this tick's too: both ticks recorded both PRs.
#[test]
fn work_leaves_out_a_pr_another_clone_pushed() {
    let tracker = FakeTracker::default();
    let git = FakeGit::default();
    let request = work_request();
    let before = world::snapshot(&tracker, &git, "origin", &request).unwrap();
    let mut ours = pull(9, PrState::Open, &[], "b9");
    ours.body = "Closes #1".into();
    let mut theirs = pull(10, PrState::Open, &[], "c10");
    theirs.body = "Closes #2".into();
    let mut no_closes = pull(11, PrState::Open, &[], "d11");
    no_closes.body = "Tidy up".into();
    tracker.pulls.borrow_mut().extend([ours, theirs, no_closes]);
    git.heads.borrow_mut().extend([
        ("feature/9".to_owned(), "b9".to_owned()),
        ("feature/10".to_owned(), "c10".to_owned()),
        ("feature/11".to_owned(), "d11".to_owned()),
    ]);
    git.foreign.borrow_mut().push("c10".into());
    let found = world::discover(&before, &tracker, &git, "origin", &request).unwrap();
    let numbers: Vec<u64> = found.prs.iter().map(|p| p.number).collect();
    assert_eq!(
        numbers,
        [9, 11],
        "#10 was pushed from another clone; #11, pushed from here, is ours though it closes nothing"
    );
}

#[test]
fn review_counts_new_comments_and_the_merge_by_the_login() {
    let tracker = FakeTracker::default();
    let git = FakeGit::default();
    tracker
        .pulls
        .borrow_mut()
        .push(pull(5, PrState::Open, &[], "c1"));
    tracker
        .comments
        .borrow_mut()
        .insert(5, vec![comment(10, "alice")]);
    git.heads
        .borrow_mut()
        .insert("feature/5".to_owned(), "c1".to_owned());
    let request = review_request(5, "c1");
    let before = world::snapshot(&tracker, &git, "origin", &request).unwrap();

    tracker.comments.borrow_mut().get_mut(&5).unwrap().extend([
        ReviewComment {
            in_reply_to: Some(10),
            ..comment(11, "sdd-worker")
        },
        comment(12, "sdd-worker"),
        comment(13, "bob"),
    ]);
    {
        let mut pulls = tracker.pulls.borrow_mut();
        pulls[0].head_sha = "c2".into();
        pulls[0].state = PrState::Merged;
        pulls[0].merged_by = Some("sdd-worker".into());
    }
    git.heads
        .borrow_mut()
        .insert("feature/5".to_owned(), "c2".to_owned());

    let found = world::discover(&before, &tracker, &git, "origin", &request).unwrap();
    assert_eq!(found.prs.len(), 1);
    let pr = &found.prs[0];
    assert_eq!(
        (
            pr.number,
            pr.opened,
            pr.state,
            pr.head_sha_at_start.as_deref()
        ),
        (5, false, PrState::Merged, Some("c1"))
    );
    assert_eq!((found.comments, found.merges), (2, 1));

    // A PR nobody touched is not reported, and a merge by someone else is
    // not ours.
    let quiet = FakeTracker::default();
    quiet
        .pulls
        .borrow_mut()
        .push(pull(6, PrState::Open, &[], "d1"));
    let request = review_request(6, "d1");
    let before = world::snapshot(&quiet, &git, "origin", &request).unwrap();
    assert_eq!(
        world::discover(&before, &quiet, &git, "origin", &request).unwrap(),
        world::Found::default()
    );
    {
        let mut pulls = quiet.pulls.borrow_mut();
        pulls[0].state = PrState::Merged;
        pulls[0].merged_by = Some("octocat".into());
    }
    let found = world::discover(&before, &quiet, &git, "origin", &request).unwrap();
    assert_eq!((found.prs.len(), found.merges), (1, 0));
}

#[test]
fn the_snapshot_survives_in_the_exchange_for_recovery() {
    let tmp = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(tmp.path(), Skill::Work, None);
    let ex = Exchange::for_iteration(&paths, 1);
    ex.prepare(&work_request()).unwrap();
    assert_eq!(Before::load(&ex), None);
    let before = Before {
        login: Some("me".into()),
        ..Before::default()
    };
    before.save(&ex).unwrap();
    assert_eq!(Before::load(&ex), Some(before));
}

// ------------------------------------------------------------ the process

struct Agent {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    exchange: Exchange,
    spec: RunSpec,
}

/// A script agent printing `stream` (one line each) after saving its
/// prompt, arguments and whether it saw CLAUDECODE; then exiting `exit`.
fn agent(stream: &[&str], exit: i32) -> (Agent, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let paths = StatePaths::new(&dir, Skill::Work, None);
    let exchange = Exchange::for_iteration(&paths, 1);
    exchange.prepare(&work_request()).unwrap();
    let lines: String = stream
        .iter()
        .map(|l| format!("printf '%s\\n' '{}'\n", l.replace('\'', r"'\''")))
        .collect();
    let script = dir.join("agent.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat > '{d}/prompt.txt'\nprintf '%s\\n' \"$@\" > '{d}/argv.txt'\necho \"claudecode=${{CLAUDECODE:-unset}} entry=${{CLAUDE_CODE_ENTRYPOINT:-unset}} notify=${{SDD_LOOP_NOTIFY:-unset}}\" > '{d}/env.txt'\necho 'chatter on stderr' >&2\n{lines}exit {exit}\n",
            d = dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = RunSpec {
        command: String::new(),
        cwd: dir.clone(),
        env: vec![
            ("CLAUDECODE".into(), "1".into()),
            ("CLAUDE_CODE_ENTRYPOINT".into(), "cli".into()),
            ("SDD_LOOP_NOTIFY".into(), "https://ntfy.sh/topic".into()),
        ],
        env_removed: vec!["SDD_LOOP_NOTIFY".into()],
        stall_timeout: Duration::from_secs(60),
        drain_timeout: Duration::from_secs(60),
        stop_file: paths.stop_request(),
        crash: sdd_loop::os::crash::CrashPoints::none(),
        journal: None,
        guard: None,
        dollars_left: Some(12.345),
        redactor: Redactor::builder().secret("token", "s3cr3t-value").build(),
    };
    (
        Agent {
            _tmp: tmp,
            dir,
            exchange,
            spec,
        },
        script,
    )
}

fn run(a: &Agent, settings: AgentSettings) -> (sdd_loop::skill::runner::RunOutcome, String) {
    let tracker = FakeTracker::default();
    let git = FakeGit::default();
    let mut runner = AgentRunner {
        settings,
        process: ProcessRunner {
            interrupts: &NoInterrupts,
            tick: Duration::from_millis(10),
        },
        tracker: &tracker,
        git: &git,
        remote: "origin".into(),
    };
    let mut echo = Vec::new();
    let outcome = runner.run(&a.spec, &a.exchange, &mut echo);
    (outcome, String::from_utf8(echo).unwrap())
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

const INIT: &str =
    r#"{"type":"system","subtype":"init","model":"claude-sonnet-4-5-20250929","session_id":"s1"}"#;
const STEP: &str = r#"{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Working."}],"usage":{"input_tokens":100,"cache_read_input_tokens":900,"output_tokens":50}}}"#;
const RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Done.","total_cost_usd":0.0021,"modelUsage":{"claude-sonnet-4-5-20250929":{"inputTokens":100,"outputTokens":50,"cacheReadInputTokens":900,"cacheCreationInputTokens":0,"costUSD":0.0021}}}"#;

fn claude(script: &Path) -> AgentSettings {
    AgentSettings {
        command: Some(script.to_path_buf()),
        args: vec!["--permission-mode".into(), "acceptEdits".into()],
        model: Some("sonnet".into()),
        ..AgentSettings::new(AgentKind::Claude)
    }
}

#[test]
fn claude_gets_the_prompt_on_stdin_no_nested_session_marker_and_its_flags() {
    let (a, script) = agent(&[INIT, "not json", STEP, RESULT], 0);
    let (outcome, echo) = run(&a, claude(&script));
    assert_eq!(outcome.failure(), None, "{echo}");
    let prompt = read(&a.dir, "prompt.txt");
    assert!(
        prompt.contains("ONE iteration of `/sdd:work --loop` for acme/app"),
        "{prompt}"
    );
    assert!(prompt.contains("- #1 Add login"));
    assert_eq!(
        read(&a.dir, "argv.txt"),
        "-p\n--output-format\nstream-json\n--verbose\n--model\nsonnet\n--max-budget-usd\n12.34\n--permission-mode\nacceptEdits\n"
    );
    assert_eq!(
        read(&a.dir, "env.txt"),
        "claudecode=unset entry=unset notify=unset\n"
    );
    assert!(
        echo.contains("Working.") && echo.contains("chatter on stderr"),
        "{echo}"
    );

    let (events, skipped) = a.exchange.read_events();
    assert_eq!(skipped, 0);
    let streamed = fold_events(&events);
    let result = a.exchange.read_result().unwrap();
    assert_eq!(
        streamed.usage, result.usage,
        "the journal agrees with the result"
    );
    assert_eq!(
        result.usage,
        vec![ModelUsage {
            model: "claude-sonnet-4-5-20250929".into(),
            tokens_in: 1000,
            tokens_out: 50,
            cache_read_tokens: 900,
            ..ModelUsage::default()
        }]
    );
    assert_eq!(result.agent_cost_usd, Some(0.0021));
    assert_eq!(result.summary.as_deref(), Some("claude: Done."));
    assert!(
        world::Before::load(&a.exchange).is_some(),
        "the snapshot stays for recovery"
    );
}

/// A stream line longer than a skill's output line (64 KiB) is one event
/// still: a file the agent writes rides in its tool input, beside the
/// response's usage; a long final message in the result.
#[test]
fn a_stream_line_longer_than_a_skills_line_is_read_whole() {
    let file = "y".repeat(300 * 1024);
    let step = format!(
        r#"{{"type":"assistant","message":{{"id":"msg_1","model":"claude-sonnet-4-5-20250929","content":[{{"type":"tool_use","id":"t1","name":"Write","input":{{"file_path":"big.txt","content":"{file}"}}}}],"usage":{{"input_tokens":100,"cache_read_input_tokens":900,"output_tokens":50}}}}}}"#
    );
    let words = "done ".repeat(20 * 1024);
    let result = RESULT.replace(r#""result":"Done.""#, &format!(r#""result":"{words}""#));
    let (a, script) = agent(&[INIT, &step, &result], 0);
    let (outcome, echo) = run(&a, claude(&script));
    assert_eq!(outcome.failure(), None, "{echo}");
    assert!(!echo.contains("not JSON"), "{echo}");
    let result = a.exchange.read_result().unwrap();
    assert_eq!(result.usage[0].tokens_out, 50);
    assert_eq!(result.agent_cost_usd, Some(0.0021));
    assert!(
        echo.len() < 200 * 1024,
        "shown as a skill's line: {}",
        echo.len()
    );
}

#[test]
fn an_error_result_is_a_failure_quoted_redacted_and_bounded() {
    let long = "x".repeat(600);
    let error = format!(
        r#"{{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":2,"errors":["tool failed with s3cr3t-value {long}"],"total_cost_usd":0.001,"modelUsage":{{}}}}"#
    );
    let (a, script) = agent(&[INIT, STEP, &error], 1);
    let (outcome, _) = run(&a, claude(&script));
    let cause = outcome.failure().unwrap();
    assert!(
        cause.starts_with("claude: result error_during_execution, exited 1: tool failed with "),
        "{cause}"
    );
    assert!(!cause.contains("s3cr3t-value"), "{cause}");
    assert!(cause.chars().count() <= sdd_loop::agent::ROOT_CAUSE_MAX + 1);
    assert!(cause.ends_with('…'));
    // The streamed step still counts: the result's modelUsage is empty.
    assert_eq!(a.exchange.read_result().unwrap().usage[0].tokens_out, 50);
}

/// An exit of 1 after a successful result fails the run, quoting the
/// stderr (not the result's summary), and says the result said success,
/// so the tick fails no target; the result file keeps its work and spend.
#[test]
fn an_exit_after_a_successful_result_is_a_failure_that_keeps_the_work() {
    let (a, script) = agent(&[INIT, STEP, RESULT], 1);
    let (outcome, _) = run(&a, claude(&script));
    assert_eq!(
        outcome.failure().as_deref(),
        Some("claude: exited 1 after a successful result: chatter on stderr")
    );
    assert!(outcome.result_succeeded);
    let result = a.exchange.read_result().unwrap();
    assert_eq!(result.usage[0].tokens_in, 1000);
    assert_eq!(result.summary.as_deref(), Some("claude: Done."));
    let (a, script) = agent(&[INIT, STEP], 1);
    let (outcome, _) = run(&a, claude(&script));
    assert!(!outcome.result_succeeded, "no result: nothing said success");
}

#[test]
fn a_missing_agent_says_how_to_point_at_it() {
    let (a, _) = agent(&[], 0);
    let settings = AgentSettings {
        command: Some(a.dir.join("no-such-claude")),
        ..AgentSettings::new(AgentKind::Claude)
    };
    let (outcome, _) = run(&a, settings);
    let cause = outcome.failure().unwrap();
    assert!(cause.starts_with("claude: could not start "), "{cause}");
    assert!(
        cause.ends_with("install it, or pass --agent-cmd PATH"),
        "{cause}"
    );
}

#[test]
fn codex_reads_the_prompt_from_stdin_and_is_priced_by_its_configured_model() {
    let (a, script) = agent(
        &[
            r#"{"type":"thread.started","thread_id":"th"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":800,"cached_input_tokens":500,"output_tokens":70}}"#,
        ],
        0,
    );
    let config = a.dir.join("config.toml");
    std::fs::write(&config, "model = \"gpt-5-codex\"\n").unwrap();
    let settings = AgentSettings {
        command: Some(script),
        codex_config: Some(config),
        ..AgentSettings::new(AgentKind::Codex)
    };
    let (outcome, _) = run(&a, settings);
    assert_eq!(outcome.failure(), None);
    assert_eq!(read(&a.dir, "argv.txt"), "exec\n--json\n-\n");
    assert!(read(&a.dir, "prompt.txt").contains("/sdd:work --loop"));
    let result = a.exchange.read_result().unwrap();
    assert_eq!(
        result.usage,
        vec![ModelUsage {
            model: "gpt-5-codex".into(),
            tokens_in: 800,
            tokens_out: 70,
            cache_read_tokens: 500,
            ..ModelUsage::default()
        }]
    );
    assert_eq!(result.agent_cost_usd, None);
}
