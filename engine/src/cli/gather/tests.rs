//! Unit tests of `gather.rs`: flags and variables in, the configuration
//! or every problem out — no process environment, no git, no `gh`.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use clap::Parser;

use super::*;
use crate::cli::{Cli, Command, Phase};
use crate::world::tracker::token::TokenSource;

/// The tick flags of `sdd-loop work LINE…`, `begin`'s included.
fn tick_args(line: &[&str]) -> TickArgs {
    let cli = Cli::try_parse_from(["sdd-loop", "work"].iter().chain(line)).unwrap();
    match cli.command {
        Command::Work(cmd) => match cmd.phase {
            None => cmd.tick,
            Some(Phase::Begin(b)) => b.tick,
            Some(_) => panic!("not a tick: {line:?}"),
        },
        _ => unreachable!(),
    }
}

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The outside world's answers, fixed; counts the questions.
#[derive(Default)]
struct Fake {
    remote: Option<&'static str>,
    gh: Option<&'static str>,
    remote_asked: Cell<u32>,
    /// The clone's remotes (none: not a clone, or a clone with no remote).
    remotes: Vec<&'static str>,
    /// The remotes' URLs, where the case gives them.
    urls: Vec<(&'static str, &'static str)>,
}

impl Lookups for Fake {
    fn remote_repository(&self, _remote: &str) -> Option<String> {
        self.remote_asked.set(self.remote_asked.get() + 1);
        self.remote.map(str::to_owned)
    }

    fn gh_token(&self, _tracker_url: &str) -> Result<Token, NoToken> {
        match self.gh {
            Some(value) => Ok(Token {
                value: value.to_owned(),
                source: TokenSource::Gh {
                    host: "github.com".into(),
                },
            }),
            _ => Err(NoToken::GhAbsent),
        }
    }

    fn remotes(&self) -> Vec<String> {
        self.remotes.iter().map(|r| (*r).to_owned()).collect()
    }

    fn hostname(&self) -> Option<String> {
        Some("box1".into())
    }

    fn remote_url(&self, remote: &str) -> Option<String> {
        self.urls
            .iter()
            .find(|(name, _)| *name == remote)
            .map(|(_, url)| (*url).to_owned())
    }
}

fn run(
    mode: Mode,
    args: Option<&TickArgs>,
    vars: &BTreeMap<String, String>,
    fake: &Fake,
) -> Result<Gathered, Refusal> {
    let plain = tick_args(&[]);
    let request = Request {
        skill: Skill::Work,
        pr: None,
        args,
        common: args.map_or(&plain.common, |a| &a.common),
        mode,
        cwd: Path::new("/home/me"),
        agent: None,
    };
    gather(&request, vars, fake)
}

fn wrapper(line: &[&str], pairs: &[(&str, &str)], fake: &Fake) -> Result<Gathered, Refusal> {
    run(Mode::Wrapper, Some(&tick_args(line)), &vars(pairs), fake)
}

fn messages(refusal: &Refusal) -> Vec<&str> {
    refusal
        .problems
        .iter()
        .map(|p| p.message.as_str())
        .collect()
}

#[test]
fn flags_and_variables_become_one_config() {
    let gathered = wrapper(
        &[
            "--loop",
            "--skill-cmd",
            "make work",
            "--repo",
            "acme/app",
            "--max-prs",
            "3",
            "--budget-file",
            "b.json",
            "--project",
            "app",
        ],
        &[
            ("SDD_LOOP_POLL_MS", "0"),
            ("SDD_LOOP_TRACKER_TOKEN", "t0k"),
            ("SDD_LOOP_TRACKER_TIMEOUT", " 7 "),
        ],
        &Fake::default(),
    )
    .unwrap();
    let cfg = &gathered.cfg;
    assert_eq!(cfg.skill_cmd, "make work");
    assert_eq!(cfg.root, Path::new("/home/me/app"));
    assert_eq!(cfg.claude_md, Path::new("/home/me/app/CLAUDE.md"));
    assert_eq!(
        cfg.budget_file.as_deref(),
        Some(Path::new("/home/me/b.json"))
    );
    assert_eq!(cfg.repository.as_deref(), Some("acme/app"));
    assert_eq!(cfg.ceilings.max_prs, Some(3));
    assert_eq!(cfg.lock_poll, Duration::from_millis(1), "at least 1 ms");
    assert_eq!(cfg.tracker_token.as_deref(), Some("t0k"));
    assert_eq!(cfg.environment.len(), 3);
    assert!(cfg.loop_mode);
    assert_eq!(cfg.guard, None, "the binary's path is the caller's to add");
    let tracker = gathered.tracker.unwrap();
    assert_eq!(tracker.repo, "acme/app");
    assert_eq!(tracker.base_url, config::DEFAULT_TRACKER_URL);
    assert_eq!(tracker.timeout, Duration::from_secs(7));
    assert_eq!(
        tracker.retry_budget,
        Duration::from_secs(config::DEFAULT_TRACKER_RETRY_BUDGET_SECS)
    );
    assert_eq!(tracker.now, None, "the caller's clock sets it");
    assert_eq!(gathered.note, None);
}

#[test]
fn a_flag_beats_its_variable() {
    let gathered = wrapper(
        &[
            "--skill-cmd",
            "flag",
            "--repo",
            "flag/repo",
            "--tracker-url",
            "https://flag.example",
        ],
        &[
            ("SDD_LOOP_SKILL_CMD", "var"),
            ("SDD_LOOP_REPO", "var/repo"),
            ("SDD_LOOP_TRACKER_URL", "https://var.example"),
        ],
        &Fake::default(),
    )
    .unwrap();
    assert_eq!(gathered.cfg.skill_cmd, "flag");
    assert_eq!(gathered.cfg.repository.as_deref(), Some("flag/repo"));
    assert_eq!(gathered.tracker.unwrap().base_url, "https://flag.example");
}

#[test]
fn the_variables_stand_in_for_missing_flags() {
    let gathered = wrapper(
        &["--loop"],
        &[
            ("SDD_LOOP_SKILL_CMD", "var"),
            ("SDD_LOOP_REPO", "var/repo"),
            ("SDD_LOOP_TRACKER_URL", "https://var.example"),
        ],
        &Fake::default(),
    )
    .unwrap();
    assert_eq!(gathered.cfg.skill_cmd, "var");
    assert_eq!(gathered.cfg.repository.as_deref(), Some("var/repo"));
    assert_eq!(gathered.tracker.unwrap().base_url, "https://var.example");
}

#[test]
fn the_git_remote_is_asked_only_when_no_flag_or_variable_names_the_repository() {
    let fake = Fake {
        remote: Some("git/repo"),
        ..Fake::default()
    };
    let named = wrapper(
        &["--skill-cmd", "x"],
        &[("SDD_LOOP_REPO", "var/repo")],
        &fake,
    );
    assert_eq!(named.unwrap().cfg.repository.as_deref(), Some("var/repo"));
    assert_eq!(fake.remote_asked.get(), 0);
    let found = wrapper(&["--skill-cmd", "x"], &[], &fake).unwrap();
    assert_eq!(found.cfg.repository.as_deref(), Some("git/repo"));
    assert_eq!(fake.remote_asked.get(), 1);
}

#[test]
fn gh_is_asked_for_a_token_only_when_there_is_a_repository() {
    let fake = Fake {
        gh: Some("gh-token"),
        ..Fake::default()
    };
    let with_repo = wrapper(&["--skill-cmd", "x", "--repo", "o/r"], &[], &fake).unwrap();
    assert_eq!(with_repo.cfg.tracker_token.as_deref(), Some("gh-token"));
    let without = wrapper(&["--skill-cmd", "x"], &[], &fake).unwrap();
    assert_eq!(without.cfg.tracker_token, None);
    assert!(without.tracker.is_none());
}

#[test]
fn a_loop_tick_without_a_token_is_noted_and_a_plain_one_is_not() {
    let looped = wrapper(
        &["--loop", "--skill-cmd", "x", "--repo", "o/r"],
        &[],
        &Fake::default(),
    );
    let note = looped.unwrap().note.unwrap();
    assert!(
        note.starts_with("note: no tracker token: ")
            && note.ends_with("which a private repository refuses"),
        "{note}"
    );
    let once = wrapper(
        &["--skill-cmd", "x", "--repo", "o/r"],
        &[],
        &Fake::default(),
    );
    assert_eq!(once.unwrap().note, None);
}

#[test]
fn every_problem_is_reported_at_once_in_the_order_of_the_flags() {
    let refusal = wrapper(
        &["--loop", "--max-dollars=-1", "--tracker-retry-budget", "0"],
        &[
            ("SDD_LOOP_NOW", "yesterday"),
            ("SDD_LOOP_CRASH_AT", "lunch"),
            ("SDD_LOOP_POLL_MS", "soon"),
            ("SDD_LOOP_TRACKER_TIMEOUT", "-3"),
        ],
        &Fake::default(),
    )
    .err()
    .unwrap();
    let got = messages(&refusal);
    assert_eq!(got.len(), 8, "{got:#?}");
    assert_eq!(
        got[0],
        "no skill command: the engine wraps a skill and needs to know how to run it"
    );
    assert!(got[1].starts_with("SDD_LOOP_NOW=\"yesterday\" is not an RFC 3339 instant"));
    assert!(got[2].contains("lunch"), "{}", got[2]);
    assert_eq!(
        got[3],
        "SDD_LOOP_POLL_MS must be a whole number of milliseconds"
    );
    assert_eq!(got[4], "--max-dollars -1 is not a non-negative amount");
    assert_eq!(
        got[5],
        "no tracker repository configured: a loop tick reads its backlog from the tracker"
    );
    assert_eq!(
        got[6],
        "--tracker-timeout (or SDD_LOOP_TRACKER_TIMEOUT) must be a whole number of seconds above 0"
    );
    assert_eq!(
        got[7],
        "--tracker-retry-budget (or SDD_LOOP_TRACKER_RETRY_BUDGET) must be a whole number of seconds above 0"
    );
    let missing: Vec<bool> = refusal.problems.iter().map(|p| p.missing).collect();
    assert_eq!(
        missing,
        [true, false, false, false, false, true, false, false]
    );
    assert_eq!(
        refusal.problems[0].help,
        "pass --skill-cmd 'CMD' or set SDD_LOOP_SKILL_CMD, or drive an agent with --agent claude|codex|gemini|opencode — or, inside an agent session, bracket the work with `sdd-loop work begin --loop` and `sdd-loop work end`"
    );
}

#[test]
fn missing_settings_are_counted_and_a_missing_token_noted() {
    let refusal = wrapper(&["--loop"], &[], &Fake::default()).err().unwrap();
    assert_eq!(refusal.problems.len(), 2);
    assert_eq!(
        refusal.trailer(),
        [
            "note: no tracker token either (SDD_LOOP_TRACKER_TOKEN, else GITHUB_TOKEN, else `gh auth token`): the tracker is asked anonymously, which a private repository refuses",
            "2 settings are missing; nothing was changed",
        ]
    );
    let one = wrapper(
        &["--loop", "--repo", "o/r"],
        &[("GITHUB_TOKEN", "t0k")],
        &Fake::default(),
    )
    .err()
    .unwrap();
    assert_eq!(messages(&one).len(), 1);
    assert!(one.trailer().is_empty(), "{:?}", one.trailer());
}

#[test]
fn a_value_given_wrong_has_no_trailer() {
    let refusal = wrapper(
        &["--loop", "--skill-cmd", "x", "--repo", "o/r"],
        &[("SDD_LOOP_POLL_MS", "soon")],
        &Fake::default(),
    )
    .err()
    .unwrap();
    assert_eq!(refusal.problems.len(), 1);
    assert!(!refusal.anonymous);
    assert!(refusal.trailer().is_empty());
}

#[test]
fn an_agent_needs_no_skill_command() {
    let args = tick_args(&["--loop", "--repo", "o/r"]);
    let request = Request {
        skill: Skill::Review,
        pr: Some(9),
        args: Some(&args),
        common: &args.common,
        mode: Mode::Wrapper,
        cwd: Path::new("/home/me"),
        agent: Some(crate::agent::AgentKind::Claude),
    };
    let gathered = gather(&request, &vars(&[]), &Fake::default()).unwrap();
    assert_eq!(gathered.cfg.skill_cmd, "");
    assert_eq!(gathered.cfg.pr, Some(9));
    assert!(gathered.cfg.single_pr());
}

#[test]
fn begin_needs_loop_and_takes_no_skill_command() {
    let args = tick_args(&["begin", "--skill-cmd", "x", "--holder-pid", "1"]);
    let refusal = run(Mode::Begin, Some(&args), &vars(&[]), &Fake::default())
        .err()
        .unwrap();
    assert_eq!(
        messages(&refusal),
        [
            "--skill-cmd does not apply to begin: the calling session does the work",
            "begin needs --loop: the in-session halves exist only in loop mode",
        ]
    );
    let args = tick_args(&["begin", "--loop", "--repo", "o/r", "--holder-pid", "1"]);
    let gathered = run(Mode::Begin, Some(&args), &vars(&[]), &Fake::default()).unwrap();
    assert_eq!(gathered.cfg.skill_cmd, "");
}

#[test]
fn end_needs_neither_a_skill_command_nor_a_repository() {
    let gathered = run(Mode::End, None, &vars(&[]), &Fake::default()).unwrap();
    assert_eq!(gathered.cfg.skill_cmd, "");
    assert_eq!(gathered.cfg.repository, None);
    assert_eq!(gathered.note, None);
}

// ---------------------------------------------------------------- claims

const LOOP: &[&str] = &["--loop", "--repo", "o/r", "--skill-cmd", "x"];

#[test]
fn claims_are_on_for_the_clones_origin_with_the_machines_name() {
    let fake = Fake {
        remotes: vec!["origin"],
        ..Fake::default()
    };
    let claims = wrapper(LOOP, &[], &fake).unwrap().cfg.claims.unwrap();
    assert_eq!(claims.remote, "origin");
    assert_eq!(claims.host, "box1");
    assert_eq!(claims.lease, Duration::from_secs(900));
    assert_eq!(claims.skew, Duration::from_secs(300));
    assert_eq!(claims.limit, Duration::from_secs(20));
    let named = wrapper(
        LOOP,
        &[
            ("SDD_LOOP_HOST", "ci-7"),
            ("SDD_LOOP_CLAIM_TIMEOUT", "5"),
            ("SDD_LOOP_CLAIM_REMOTE", "shared"),
        ],
        &fake,
    )
    .unwrap()
    .cfg
    .claims
    .unwrap();
    assert_eq!(
        (named.remote.as_str(), named.host.as_str(), named.limit),
        ("shared", "ci-7", Duration::from_secs(5))
    );
}

#[test]
fn claims_are_off_without_a_remote_or_when_asked_and_outside_loop_mode() {
    assert_eq!(
        wrapper(LOOP, &[], &Fake::default()).unwrap().cfg.claims,
        None
    );
    let fake = Fake {
        remotes: vec!["origin"],
        ..Fake::default()
    };
    let off = wrapper(LOOP, &[("SDD_LOOP_CLAIM_REMOTE", "off")], &fake).unwrap();
    assert_eq!(off.cfg.claims, None);
    let once = wrapper(&["--repo", "o/r", "--skill-cmd", "x"], &[], &fake).unwrap();
    assert_eq!(once.cfg.claims, None);
}

/// A clone whose remotes do not include the one claims default to would
/// otherwise claim nowhere and work as if alone: refused, with the fix.
#[test]
fn a_clone_without_the_claims_remote_is_refused_with_the_variable_to_set() {
    let fake = Fake {
        remotes: vec!["upstream", "fork"],
        ..Fake::default()
    };
    let refusal = wrapper(LOOP, &[], &fake).err().unwrap();
    assert_eq!(
        messages(&refusal),
        [
            "this clone has no remote named `origin` to claim issues on (its remotes: upstream, fork)"
        ]
    );
    assert!(
        refusal.problems[0]
            .help
            .contains("SDD_LOOP_CLAIM_REMOTE=NAME")
    );
}

/// A fork workflow: `origin` is the user's fork, the tracker's repository
/// another. Claiming on the fork would put this clone's claims where no
/// clone of the tracker's repository looks, and both would work #1.
#[test]
fn claims_live_on_the_remote_that_is_the_trackers_repository() {
    let fork = Fake {
        remotes: vec!["origin", "upstream"],
        urls: vec![
            ("origin", "git@github.com:me/r.git"),
            ("upstream", "https://github.com/O/R"),
        ],
        ..Fake::default()
    };
    let picked = wrapper(LOOP, &[], &fork).unwrap().cfg.claims.unwrap();
    assert_eq!(picked.remote, "upstream", "the tracker's o/r, in any case");
    let alone = Fake {
        remotes: vec!["origin"],
        urls: vec![("origin", "git@github.com:me/r.git")],
        ..Fake::default()
    };
    let refusal = wrapper(LOOP, &[], &alone).err().unwrap();
    assert_eq!(
        messages(&refusal),
        [
            "the claims remote `origin` is me/r, not the tracker's repository o/r: its claims would not be seen by loops in clones of o/r"
        ]
    );
    assert!(
        refusal.problems[0]
            .help
            .contains("SDD_LOOP_CLAIM_REMOTE=NAME")
    );
    assert!(
        refusal.problems[0]
            .help
            .contains("SDD_LOOP_CLAIM_REMOTE=off")
    );
    // Named on purpose, it is used as named.
    let named = wrapper(LOOP, &[("SDD_LOOP_CLAIM_REMOTE", "origin")], &alone).unwrap();
    assert_eq!(named.cfg.claims.unwrap().remote, "origin");
    // A remote whose URL names no repository on a host (a path, `file://`)
    // is taken as it is: nothing says it is another repository.
    let local = Fake {
        remotes: vec!["origin"],
        urls: vec![("origin", "file:///srv/git/app.git")],
        ..Fake::default()
    };
    assert_eq!(
        wrapper(LOOP, &[], &local)
            .unwrap()
            .cfg
            .claims
            .unwrap()
            .remote,
        "origin"
    );
}

#[test]
fn status_and_doctor_wait_on_claims_as_long_as_a_tick_would() {
    let vars = |v: &str| BTreeMap::from([("SDD_LOOP_CLAIM_TIMEOUT".to_owned(), v.to_owned())]);
    assert_eq!(claim_timeout(&vars("3")), Duration::from_secs(3));
    let default = Duration::from_secs(config::DEFAULT_CLAIM_TIMEOUT_SECS);
    assert_eq!(claim_timeout(&vars("0")), default);
    assert_eq!(claim_timeout(&vars("soon")), default);
    assert_eq!(claim_timeout(&BTreeMap::new()), default);
}

fn agent_tick(
    kind: crate::agent::AgentKind,
    line: &[&str],
    pairs: &[(&str, &str)],
) -> Result<Gathered, Refusal> {
    let args = tick_args(line);
    let request = Request {
        skill: Skill::Work,
        pr: None,
        args: Some(&args),
        common: &args.common,
        mode: Mode::Wrapper,
        cwd: Path::new("/home/me"),
        agent: Some(kind),
    };
    gather(&request, &vars(pairs), &Fake::default())
}

#[test]
fn a_window_budget_where_no_window_can_be_read_is_refused() {
    use crate::agent::AgentKind;
    let budgeted = ["--loop", "--repo", "o/r", "--max-5h-percent", "75"];
    // Unknown is not zero: an API key has no windows, nor has Codex.
    let refusal = agent_tick(
        AgentKind::Claude,
        &budgeted,
        &[("ANTHROPIC_API_KEY", "sk-x")],
    )
    .err()
    .unwrap();
    assert_eq!(
        messages(&refusal),
        [
            "--max-5h-percent needs Claude Code's usage windows, but ANTHROPIC_API_KEY is set: an API-key session has no 5-hour or weekly window, and Claude Code reports none"
        ]
    );
    let refusal = agent_tick(AgentKind::Codex, &budgeted, &[]).err().unwrap();
    assert_eq!(
        messages(&refusal),
        ["--max-5h-percent needs Claude Code's usage windows, but --agent codex reports none"]
    );
    // A subscriber's Claude Code reads them; the ceilings reach the tick.
    let gathered = agent_tick(
        AgentKind::Claude,
        &budgeted,
        &[("CLAUDE_CODE_OAUTH_TOKEN", "t")],
    )
    .unwrap();
    assert_eq!(gathered.cfg.windows.five_hour, Some(75.0));
    assert_eq!(gathered.cfg.windows.seven_day, None);
    // Without a window budget an API key is none of the loop's business.
    assert!(
        agent_tick(
            AgentKind::Claude,
            &["--loop", "--repo", "o/r"],
            &[("ANTHROPIC_API_KEY", "sk-x")]
        )
        .is_ok()
    );
}

#[test]
fn a_window_ceiling_is_a_share_of_the_window() {
    let refusal = wrapper(
        &[
            "--loop",
            "--skill-cmd",
            "x",
            "--repo",
            "o/r",
            "--max-week-percent",
            "120",
        ],
        &[],
        &Fake::default(),
    )
    .err()
    .unwrap();
    assert_eq!(
        messages(&refusal),
        ["--max-week-percent 120 is not a share of the window above 0 and at most 100"]
    );
}
