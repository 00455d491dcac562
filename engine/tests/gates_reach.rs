//! Gates that reach the person (issue 48), in-process: a gate asked where
//! the loop runs (exit 4) is told to the notification URLs once, however
//! often the loop asks it again, and again once a tick has got past it;
//! its notice is retried by the ticks that ask; and the dashboard issue's
//! body lists the claims this clone holds; the answer code reaches the
//! person only.

#[expect(dead_code, reason = "the tick tests use the rest of the fakes")]
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use sdd_loop::config::TickConfig;
use sdd_loop::exit;
use sdd_loop::state::journal::HeldClaim;
use sdd_loop::state::paths::Skill;
use sdd_loop::state::standing::{self, Standing};
use sdd_mocks::notify::{Answer, Receiver};
use support::*;

const SESSION: u32 = 777;
const AMBIGUOUS: &str =
    "Issue #7 has ambiguous criteria. Skip, escalate, or proceed with my best interpretation?";

fn notifying(s: &Sandbox, receiver: &Receiver) -> TickConfig {
    let mut cfg = s.cfg(Skill::Work);
    cfg.notify = vec![format!("{}/sdd-topic", receiver.uri())];
    cfg
}

/// `files` without `name` (a file under `.sdd/loop/`).
fn without(mut files: BTreeMap<PathBuf, Vec<u8>>, name: &str) -> BTreeMap<PathBuf, Vec<u8>> {
    files.retain(|p, _| !p.ends_with(name));
    files
}

#[test]
fn a_session_s_gate_is_told_once_however_often_it_is_asked() {
    let receiver = Receiver::start(Answer::Accept).unwrap();
    let mut s = Sandbox::new().with_issues(vec![issue(7, "make it better")]);
    s.procs.0 = vec![SESSION];
    let mut cfg = notifying(&s, &receiver);

    let first = s.begin(&cfg, SESSION);
    assert_eq!(first.code, exit::NEEDS_ANSWER, "{}{}", first.out, first.err);
    let got = receiver.received();
    assert_eq!(got.len(), 1, "one notification for the asked gate");
    assert_eq!(
        got[0].headers["title"],
        "sdd-loop work: a gate asks for your answer (ambiguous-criteria)"
    );
    assert_eq!(got[0].headers["tags"], "question,sdd-loop");
    assert_eq!(
        got[0].body,
        format!(
            "{AMBIGUOUS}\nOptions: skip | escalate | proceed | stop\nAnswer in the session that runs the loop: its question, or the loop prompt sent again with `--answer ambiguous-criteria=<skip|escalate|proceed|stop>`."
        )
    );
    assert!(!got[0].headers.contains_key("click"), "no link to follow");
    assert!(s.paths(Skill::Work).asked().exists());

    // The session's /loop fires again and asks the same gate: nobody is
    // told again, and nothing at all is written.
    let before = s.files();
    let second = s.begin(&cfg, SESSION);
    assert_eq!(second.code, exit::NEEDS_ANSWER);
    assert_eq!(receiver.received().len(), 1, "not one per fire");
    assert_eq!(s.files(), before, "asking again changed nothing");

    cfg.answers
        .push("ambiguous-criteria=proceed".parse().unwrap());
    let third = s.begin(&cfg, SESSION);
    assert_eq!(third.code, exit::TICK_DONE, "{}{}", third.out, third.err);
    assert_eq!(receiver.received().len(), 1);
    assert!(
        !s.paths(Skill::Work).asked().exists(),
        "past its gates, the tick forgets the gate it told"
    );
}

/// An asking tick writes no loop state: with notification URLs it writes
/// what it told (`{skill}.asked.json`) and nothing else.
#[test]
fn an_asking_tick_writes_only_what_it_told() {
    let receiver = Receiver::start(Answer::Accept).unwrap();
    let mut quiet = Sandbox::new().with_issues(vec![issue(7, "make it better")]);
    let mut told = Sandbox::new().with_issues(vec![issue(7, "make it better")]);
    quiet.procs.0 = vec![SESSION];
    told.procs.0 = vec![SESSION];
    let plain = quiet.cfg(Skill::Work);
    let with_urls = notifying(&told, &receiver);
    assert_eq!(quiet.begin(&plain, SESSION).code, exit::NEEDS_ANSWER);
    assert_eq!(told.begin(&with_urls, SESSION).code, exit::NEEDS_ANSWER);
    assert!(
        !quiet.paths(Skill::Work).asked().exists(),
        "no URL, no file"
    );
    assert!(told.paths(Skill::Work).asked().exists());
    let strip = |s: &Sandbox| {
        let root = s.root().join(".sdd");
        without(s.files(), "work.asked.json")
            .into_iter()
            .map(|(p, b)| (p.strip_prefix(&root).unwrap().to_path_buf(), b))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(strip(&told), strip(&quiet));
    assert!(
        !told.paths(Skill::Work).history().exists(),
        "no history line"
    );
}

/// A shell tick's gate is told with the flag that answers it; once a
/// tick got past it, the same gate asked later (the same words: the
/// drift gate's never change) is told again.
#[test]
fn a_gate_got_past_is_told_again_when_it_is_asked_later() {
    let receiver = Receiver::start(Answer::Accept).unwrap();
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let mut cfg = notifying(&s, &receiver);
    cfg.max_agents = 1;
    assert_eq!(s.tick(&cfg).code, exit::TICK_DONE);
    s.tracker.issues.borrow_mut().push(issue(3, CLEAR));
    assert_eq!(s.tick(&cfg).code, exit::NEEDS_ANSWER);
    assert_eq!(s.tick(&cfg).code, exit::NEEDS_ANSWER);
    let got = receiver.received();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].body.ends_with(
            "Answer where the loop runs: the tick run again with `--answer backlog-drift=<re-propose|continue|stop>` (or an entry in an `--answers` file)."
        ),
        "{}",
        got[0].body
    );

    let mut answered = cfg.clone();
    answer(&mut answered, "backlog-drift=continue");
    let r = s.tick(&answered);
    assert_eq!(r.code, exit::TICK_DONE, "{}{}", r.out, r.err);
    s.tracker.issues.borrow_mut().push(issue(4, CLEAR));
    assert_eq!(s.tick(&cfg).code, exit::NEEDS_ANSWER);
    let got = receiver.received();
    assert_eq!(got.len(), 2, "a new drift, a new notification");
    assert!(
        got[1]
            .body
            .starts_with("Backlog changed since last iteration.")
    );
}

/// The gate's notification that failed is retried by the next tick that
/// asks the gate again — which sends no new one — so a gate nobody
/// answers is not left untold.
#[test]
fn an_undelivered_gate_notice_is_retried_by_the_ticks_that_ask() {
    let receiver = Receiver::start(Answer::Status(500)).unwrap();
    let mut s = Sandbox::new().with_issues(vec![issue(7, "make it better")]);
    let cfg = notifying(&s, &receiver);
    let first = s.tick(&cfg);
    assert_eq!(first.code, exit::NEEDS_ANSWER);
    assert!(
        first
            .out
            .contains("warning: the gate-asked notification to ntfy http://127.0.0.1:"),
        "{}",
        first.out
    );
    let kept = s.paths(Skill::Work).dir.join("work.notify.json");
    assert!(kept.exists(), "kept for the next tick");
    assert!(!first.out.contains("sdd-topic"), "the URL is never shown");

    let second = s.tick(&cfg);
    assert_eq!(second.code, exit::NEEDS_ANSWER);
    let got = receiver.received();
    assert_eq!(got.len(), 2, "the kept one, retried; no new one");
    assert_eq!(got[0].body, got[1].body);
    assert!(got[1].body.starts_with(AMBIGUOUS));
}

/// The question is redacted in the notification and in what is kept of
/// it, as everything the loop writes or sends.
#[test]
fn the_told_question_is_redacted_where_it_is_sent_and_kept() {
    let receiver = Receiver::start(Answer::Accept).unwrap();
    let mut s = Sandbox::new().with_issues(vec![issue(149, "none")]);
    std::fs::write(
        s.root().join("CLAUDE.md"),
        "### SDD Configuration\n#### Loop Logging\n| Pattern | Replacement |\n|---|---|\n| `#149` | #[ISSUE] |\n",
    )
    .unwrap();
    let cfg = notifying(&s, &receiver);
    assert_eq!(s.tick(&cfg).code, exit::NEEDS_ANSWER);
    let got = receiver.received();
    assert_eq!(got.len(), 1);
    assert!(
        got[0]
            .body
            .starts_with("Issue #[ISSUE] has ambiguous criteria."),
        "{}",
        got[0].body
    );
    let kept = std::fs::read_to_string(s.paths(Skill::Work).asked()).unwrap();
    assert!(kept.contains("Issue #[ISSUE] has"), "{kept}");
    assert!(!kept.contains("#149") && !got[0].text().contains("#149"));
}

fn claim(number: u64, expires_at: &str) -> HeldClaim {
    HeldClaim {
        number,
        commit: format!("c{number}"),
        expires_at: expires_at.into(),
    }
}

/// The run-wide gate posted on the dashboard: `drift` for the work loop
/// of `s` after one tick, unattended; the tick that posted it.
fn post_drift(s: &mut Sandbox, mut cfg: TickConfig) -> Ran {
    cfg.max_agents = 1;
    assert_eq!(s.tick(&cfg).code, exit::TICK_DONE);
    s.tracker.issues.borrow_mut().push(issue(3, CLEAR));
    cfg.unattended = true;
    let r = s.tick(&cfg);
    assert_eq!(r.code, exit::TICK_DONE, "{}{}", r.out, r.err);
    assert!(
        r.out.contains("Gate backlog-drift posted on #900"),
        "{}",
        r.out
    );
    r
}

/// The dashboard's body as last written.
fn dashboard(s: &Sandbox) -> String {
    let edited = s.tracker.edited_bodies.borrow();
    edited.last().expect("the dashboard's body").1.clone()
}

#[test]
fn the_dashboard_lists_the_claims_this_clone_holds_with_their_lease() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    Standing {
        claims: vec![
            claim(2, "2026-05-09T15:00:00Z"),
            claim(5, "2026-05-09T13:59:00Z"),
        ],
    }
    .save(&standing::path(s.root(), Skill::Work));
    let cfg = s.cfg(Skill::Work);
    post_drift(&mut s, cfg);
    let body = dashboard(&s);
    assert!(
        body.contains(
            "\n## Claims\n\n- issue #2 — lease until 2026-05-09T15:00:00Z\n\n## Last ticks\n"
        ),
        "a lapsed lease is no claim held: {body}"
    );
    let order: Vec<usize> = ["## Waiting", "## Budgets", "## Claims", "## Last ticks"]
        .iter()
        .map(|h| body.find(h).unwrap_or_else(|| panic!("{h}: {body}")))
        .collect();
    assert!(order.is_sorted(), "{body}");
}

#[test]
fn a_dashboard_with_no_claim_says_so() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let cfg = s.cfg(Skill::Work);
    post_drift(&mut s, cfg);
    let body = dashboard(&s);
    assert!(body.contains("\n## Claims\n\nNone held.\n"), "{body}");
}

#[test]
fn a_posted_gate_answered_here_leaves_the_dashboard_waiting_for_nothing() {
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let cfg = s.cfg(Skill::Work);
    post_drift(&mut s, cfg);
    let posted = dashboard(&s);
    assert!(posted.contains("backlog-drift — "), "{posted}");
    let mut cfg = s.cfg(Skill::Work);
    cfg.max_agents = 1;
    cfg.unattended = true;
    answer(&mut cfg, "backlog-drift=continue");
    let r = s.tick(&cfg);
    assert_eq!(r.code, exit::TICK_DONE, "{}{}", r.out, r.err);
    assert!(r.out.contains("was answered here"), "{}", r.out);
    let edited = s.tracker.edited_bodies.borrow();
    let (number, body) = edited.last().expect("the dashboard rewritten");
    assert_eq!(*number, 900);
    assert!(
        body.contains("## Waiting for a person\n\nNothing waits.\n"),
        "{body}"
    );
}

/// The answer code a gate's notification carried, and where else it went:
/// nowhere — not the post, the dashboard, the tick's output or any file of
/// the loop's state (only its SHA-1 is kept).
#[test]
fn the_answer_code_goes_to_the_person_only() {
    let receiver = Receiver::start(Answer::Accept).unwrap();
    let mut s = Sandbox::new().with_issues(vec![issue(1, CLEAR), issue(2, CLEAR)]);
    let cfg = notifying(&s, &receiver);
    let r = post_drift(&mut s, cfg);
    let told = receiver.received();
    assert_eq!(told.len(), 1, "{told:?}");
    let code = told[0]
        .body
        .lines()
        .find_map(|l| l.strip_prefix("Answer code (yours only): "))
        .expect("the notification carries the answer code")
        .to_owned();
    assert_eq!(code.len(), 16, "{code}");
    let posted = s.tracker.posted.borrow();
    assert!(!posted.is_empty(), "the gate was posted");
    for (number, body) in posted.iter() {
        assert!(
            !body.contains(&code),
            "the post on #{number} carries the code"
        );
    }
    for (number, body) in s.tracker.edited_bodies.borrow().iter() {
        assert!(!body.contains(&code), "#{number}'s body carries the code");
    }
    for (title, body) in s.tracker.opened_issues.borrow().iter() {
        assert!(!body.contains(&code), "{title} carries the code");
    }
    assert!(!r.out.contains(&code) && !r.err.contains(&code));
    for (path, bytes) in s.files() {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&code),
            "{} keeps the code",
            path.display()
        );
    }
    let pending = std::fs::read_to_string(s.paths(Skill::Work).gates()).unwrap();
    assert!(
        pending.contains(&sdd_loop::rules::replies::code_hash(&code)),
        "only its SHA-1 is kept: {pending}"
    );
}
