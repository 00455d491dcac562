//! `sdd-loop hook pre-tool-use` against the mock tracker: what the open
//! iteration's contract forbids is refused with its reason — a PR beyond
//! `max_new_prs`, a PR for an issue not in the request, a merge where
//! merging is not allowed or under `hold`, a second review round, a new
//! branch when no PR is left, `begin` twice — and so is any PR or merge
//! once the session's tick is over. Everything else passes; what cannot
//! be decided fails closed.

#[expect(dead_code, reason = "each hook test binary uses part of the world")]
mod hooks;

use serde_json::json;

use hooks::*;

/// A world whose work iteration 1 is open for this session, `max_new_prs`
/// 1, the request holding issue #1 only.
fn work_tick() -> World {
    let w = World::new(TWO_STORIES);
    let a = w.hook(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --max-prs 1 --max-agents 1", "p-1"),
    );
    assert!(a.context().is_some(), "{:?}", a.json);
    w
}

#[test]
fn outside_a_loop_project_every_call_passes_and_nothing_is_written() {
    let w = World::new(TWO_STORIES);
    for command in [
        "gh pr create --title x --body 'Closes #9'",
        "gh pr merge 3",
        "ls",
    ] {
        let a = w.hook("pre-tool-use", &w.bash(command, "p-1"));
        assert!(a.passed(), "{command}: {:?}", a.json);
    }
    assert!(w.files().is_empty());
}

/// What the hook cannot read fails closed where a loop lives: commands
/// wrapped past what is read, substitutions nested a thousand deep (once
/// a stack overflow, no answer at all), an input holding an escape of a
/// lone surrogate or a byte that is not UTF-8 (once refused whole, and
/// passed).
#[test]
fn what_cannot_be_read_fails_closed() {
    let w = work_tick();
    let wrapped = format!(
        "{}gh pr create --title x --body 'Closes #5'",
        "env ".repeat(9)
    );
    let nested = format!(
        "echo {}rm -rf .sdd/loop{}",
        "$(echo ".repeat(1200),
        ")".repeat(1200)
    );
    for command in [wrapped.as_str(), nested.as_str()] {
        let a = w.hook("pre-tool-use", &w.bash(command, "p-1"));
        assert!(a.denied(), "{:?}", a.json);
        assert!(
            a.text().contains("cannot read") && a.text().contains("Write the command plainly"),
            "{}",
            a.text()
        );
    }
    let plain = w.hook("pre-tool-use", &w.bash(&"env ".repeat(8), "p-1"));
    assert!(plain.passed(), "eight wrappers are read: {:?}", plain.json);
    let over_budget = w
        .bash("gh pr create --title x --body 'Closes #5 \u{1f600}'", "p-1")
        .to_string();
    let lone = over_budget.replace("\u{1f600}", "\\ud83d");
    assert!(lone.contains("\\ud83d"), "{lone}");
    let a = w.hook_bytes("pre-tool-use", lone.as_bytes(), std::process::id());
    assert!(a.denied(), "{:?}", a.json);
    let invalid = over_budget
        .replace("\u{1f600}", "\u{fffd}")
        .replace('\u{fffd}', "\u{1}");
    let mut bytes = invalid.into_bytes();
    let at = bytes.iter().position(|b| *b == 1).unwrap();
    bytes[at] = 0xff;
    let a = w.hook_bytes("pre-tool-use", &bytes, std::process::id());
    assert!(a.denied(), "{:?}", a.json);
}

#[test]
fn one_pr_is_let_through_and_the_next_is_refused_at_max_new_prs() {
    let w = work_tick();
    let first = w.hook(
        "pre-tool-use",
        &w.bash(
            "git push -u origin feature/1 && gh pr create --title 'Login' --body 'Closes #1'",
            "p-1",
        ),
    );
    assert!(first.passed(), "{:?}", first.json);
    for (n, command) in [
        "gh pr create --title 'Login again' --body 'Closes #1'",
        "gh api repos/acme/app/pulls -f title=x -f head=feature/1b -f base=main -f 'body=Closes #1'",
    ]
    .iter()
    .enumerate()
    {
        let again = w.hook("pre-tool-use", &w.bash(command, &format!("p-1-{n}")));
        assert!(again.denied(), "{command}: {:?}", again.json);
        assert!(
            again
                .text()
                .contains("may open no more pull requests: max_new_prs is 1, and 1 PR(s) were opened this iteration"),
            "{}",
            again.text()
        );
    }
    let mcp = w.hook(
        "pre-tool-use",
        &w.tool(
            "mcp__github__create_pull_request",
            json!({"owner": "acme", "repo": "app", "title": "x", "head": "f", "base": "main", "body": "Closes #1"}),
            "p-1",
        ),
    );
    assert!(mcp.denied(), "{:?}", mcp.json);
    let log = w.log("work");
    let decisions: Vec<&str> = log
        .iter()
        .filter(|e| e["event"] == "pre-tool-use")
        .map(|e| e["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["allow", "deny", "deny", "deny"]);
    assert_eq!(
        log[1]["saw"],
        json!(["push feature/1 (git push)", "open a PR (gh pr create)"])
    );
}

#[test]
fn two_prs_racing_for_the_last_one_left_are_not_both_let_through() {
    let w = work_tick();
    let input = w.bash("gh pr create --title x --body 'Closes #1'", "p-1");
    let answers: Vec<Answered> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| w.hook("pre-tool-use", &input)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(answers.iter().filter(|a| a.passed()).count(), 1);
    assert_eq!(answers.iter().filter(|a| a.denied()).count(), 3);
}

#[test]
fn a_pr_must_close_an_issue_of_the_request() {
    let w = work_tick();
    let cases = [
        (
            "gh pr create --title x --body 'Closes #2'",
            "it closes #2, which this tick's request does not hold (the request: #1)",
        ),
        (
            "gh pr create --title x --body 'Some work'",
            "its body closes no issue",
        ),
        (
            "gh pr create --fill",
            "which issue it closes cannot be seen (--fill",
        ),
        (
            "gh pr create --title x --body-file missing.md",
            "which issue it closes cannot be seen",
        ),
    ];
    for (command, says) in cases {
        let a = w.hook("pre-tool-use", &w.bash(command, "p-1"));
        assert!(a.denied(), "{command}: {:?}", a.json);
        assert!(a.text().contains(says), "{command}: {}", a.text());
    }
    std::fs::write(
        w.project.join("pr.md"),
        "Implements the login page.\n\nCloses #1\n",
    )
    .unwrap();
    let from_file = w.hook(
        "pre-tool-use",
        &w.bash("gh pr create --title x --body-file pr.md", "p-1"),
    );
    assert!(from_file.passed(), "{:?}", from_file.json);
}

#[test]
fn a_work_tick_merges_nothing_and_begin_runs_once() {
    let w = work_tick();
    let merge = w.hook("pre-tool-use", &w.bash("gh pr merge 7 --squash", "p-1"));
    assert!(merge.denied());
    assert!(
        merge.text().contains("a /sdd:work tick merges nothing"),
        "{}",
        merge.text()
    );
    let begin = w.hook(
        "pre-tool-use",
        &w.bash("sdd-loop work begin --loop --max-prs 1 --json", "p-1"),
    );
    assert!(begin.denied());
    assert!(
        begin
            .text()
            .contains("already ran for this prompt: iteration 1"),
        "{}",
        begin.text()
    );
    for harmless in [
        "cargo test",
        "gh pr list",
        "sdd-loop work event '{}'",
        "git status",
    ] {
        assert!(
            w.hook("pre-tool-use", &w.bash(harmless, "p-1")).passed(),
            "{harmless}"
        );
    }
}

/// A review iteration whose post-feedback-merge gate on #142 was answered
/// `answer`.
fn review_tick(answer: &str) -> World {
    let w = World::new(HUMAN_FEEDBACK);
    std::fs::write(
        w.project.join("CLAUDE.md"),
        include_str!("../../fixtures/claude-md/agent-logins.md"),
    )
    .unwrap();
    let a = w.hook(
        "user-prompt-submit",
        &w.prompt(
            &format!("/sdd:review --loop --pr 142 --answer post-feedback-merge={answer}"),
            "p-1",
        ),
    );
    assert!(a.context().is_some(), "{:?}", a.json);
    w
}

#[test]
fn a_merge_under_hold_is_refused_with_the_gate_s_answer() {
    let w = review_tick("hold");
    for command in [
        "gh pr merge 142 --squash",
        "gh api -X PUT repos/acme/app/pulls/142/merge",
    ] {
        let a = w.hook("pre-tool-use", &w.bash(command, "p-1"));
        assert!(a.denied(), "{command}");
        assert!(
            a.text()
                .contains("the post-feedback-merge gate was answered `hold` for PR #142"),
            "{}",
            a.text()
        );
    }
    let other = w.hook("pre-tool-use", &w.bash("gh pr merge 7", "p-1"));
    assert!(other.denied());
    assert!(
        other.text().contains("PR #7 is not in this tick's request"),
        "{}",
        other.text()
    );
}

#[test]
fn a_merge_the_gate_allowed_passes_and_a_second_review_round_is_refused() {
    let w = review_tick("merge");
    let review = w.hook("pre-tool-use", &w.bash("gh pr review 142 --approve", "p-1"));
    assert!(review.passed(), "{:?}", review.json);
    let again = w.hook(
        "pre-tool-use",
        &w.bash(
            "gh api repos/acme/app/pulls/142/reviews -f event=COMMENT",
            "p-1",
        ),
    );
    assert!(again.denied());
    assert!(
        again
            .text()
            .contains("ADR-0010 allows one review-response round per PR per tick"),
        "{}",
        again.text()
    );
    let merge = w.hook("pre-tool-use", &w.bash("gh pr merge 142 --squash", "p-1"));
    assert!(merge.passed(), "{:?}", merge.json);
}

#[test]
fn once_the_prompt_s_iteration_ended_its_prs_are_refused() {
    let w = work_tick();
    let stop = w.hook("stop", &w.stop(false, "Done.", "p-1"));
    assert!(stop.passed(), "{:?}", stop.json);
    assert!(!w.is_open("work"));
    let late = w.hook(
        "pre-tool-use",
        &w.bash("gh pr create --title x --body 'Closes #1'", "p-1"),
    );
    assert!(late.denied(), "{:?}", late.json);
    assert!(
        late.text()
            .contains("iteration 1 of the work loop, which this prompt began, has ended"),
        "{}",
        late.text()
    );
    // A later chat prompt of the session is no tick: its calls pass.
    let chat = w.hook("pre-tool-use", &w.bash("gh pr merge 9", "p-2"));
    assert!(chat.passed(), "{:?}", chat.json);
}

#[test]
fn a_session_holding_the_lock_with_no_iteration_open_opens_nothing() {
    let w = World::new(TWO_STORIES);
    std::fs::create_dir_all(w.state("")).unwrap();
    std::fs::write(
        w.state("work.lock"),
        format!(
            "{{\"pid\":{},\"iteration\":3,\"started_at\":\"2026-05-09T14:00:00Z\",\"skill\":\"work\"}}\n",
            std::process::id()
        ),
    )
    .unwrap();
    let a = w.hook("pre-tool-use", &w.bash("gh pr merge 4", "p-9"));
    assert!(a.denied(), "{:?}", a.json);
    assert!(
        a.text().contains(
            "no iteration of the work loop is open, but this session holds its lock (iteration 3)"
        ),
        "{}",
        a.text()
    );
}

#[test]
fn another_session_s_tick_does_not_govern_this_one() {
    let w = World::new(TWO_STORIES);
    let other = OtherSession::start();
    let a = w.hook_as(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --max-prs 1", "o-1"),
        other.pid(),
    );
    assert!(a.context().is_some());
    let mine = w.hook("pre-tool-use", &w.bash("gh pr create --fill", "p-1"));
    assert!(mine.passed(), "{:?}", mine.json);
}

#[test]
fn unreadable_state_fails_closed_for_prs_only() {
    let w = work_tick();
    std::fs::write(w.state("work.inflight.json"), "{").unwrap();
    let pr = w.hook(
        "pre-tool-use",
        &w.bash("gh pr create --body 'Closes #1'", "p-1"),
    );
    assert!(pr.denied());
    assert!(
        pr.text().contains("the hook cannot decide"),
        "{}",
        pr.text()
    );
    assert!(pr.text().contains("fail closed"), "{}", pr.text());
    let ls = w.hook("pre-tool-use", &w.bash("ls -la", "p-1"));
    assert!(ls.passed());
}

#[test]
fn a_dry_run_opens_and_pushes_nothing() {
    let w = World::with_git(TWO_STORIES);
    let a = w.hook(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --dry-run --max-agents 1", "p-1"),
    );
    assert!(a.context().is_some(), "{:?}", a.json);
    let pr = w.hook(
        "pre-tool-use",
        &w.bash("gh pr create --body 'Closes #1'", "p-1"),
    );
    assert!(
        pr.denied() && pr.text().contains("dry run"),
        "{}",
        pr.text()
    );
    let push = w.hook(
        "pre-tool-use",
        &w.bash("git push -u origin feature/new", "p-1"),
    );
    assert!(push.denied(), "{:?}", push.json);
    assert!(
        push.text()
            .contains("feature/new is a new branch on origin"),
        "{}",
        push.text()
    );
    let existing = w.hook("pre-tool-use", &w.bash("git push origin main", "p-1"));
    assert!(existing.passed(), "{:?}", existing.json);
}

#[test]
fn a_new_branch_is_refused_once_no_pr_is_left() {
    let w = World::with_git(TWO_STORIES);
    let a = w.hook(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --max-prs 1 --max-agents 1", "p-1"),
    );
    assert!(a.context().is_some(), "{:?}", a.json);
    let first = w.hook(
        "pre-tool-use",
        &w.bash(
            "git push -u origin feature/1 && gh pr create --body 'Closes #1'",
            "p-1",
        ),
    );
    assert!(first.passed(), "{:?}", first.json);
    let second = w.hook(
        "pre-tool-use",
        &w.bash("git push -u origin feature/2", "p-1"),
    );
    assert!(second.denied(), "{:?}", second.json);
    assert!(
        second.text().contains("no new PR is left this tick"),
        "{}",
        second.text()
    );
}

#[test]
fn the_loops_own_files_are_refused_to_every_writer_and_left_to_readers() {
    let w = work_tick();
    let before = std::fs::read(w.state("work.history.jsonl")).ok();
    for command in [
        "rm -f .sdd/loop/work.history.jsonl .sdd/loop/work.budget.json",
        "rm -rf .sdd",
        "cd .sdd/loop && rm *",
        ": > .sdd/loop/work.budget.json",
        "echo '{\"iteration\":1}' >> .sdd/loop/work.history.jsonl",
        "echo x | tee -a .sdd/loop/work.history.jsonl",
        "sed -i 's/\"iterations_used\": 1/\"iterations_used\": 0/' .sdd/loop/work.budget.json",
        "truncate -s 0 .sdd/loop/work.history.jsonl",
        "mv .sdd/loop/work.budget.json /tmp/b.json",
        "cp /tmp/b.json .sdd/loop/work.budget.json",
        "git clean -fdx",
        "git checkout -- .sdd/loop/work.budget.json",
        "bash -c 'rm .sdd/loop/work.lock'",
        "find .sdd -name '*.json' -delete",
        "rm -f .sdd/loop-witness/work.json",
    ] {
        let a = w.hook("pre-tool-use", &w.bash(command, "p-1"));
        assert!(a.denied(), "{command}: {:?}", a.json);
        assert!(
            a.text().contains("which the sdd-loop engine owns"),
            "{command}: {}",
            a.text()
        );
    }
    for (tool, input) in [
        (
            "Write",
            json!({"file_path": w.state("work.lock"), "content": "{}"}),
        ),
        (
            "Edit",
            json!({"file_path": ".sdd/loop/work.budget.json", "old_string": "1", "new_string": "0"}),
        ),
        (
            "MultiEdit",
            json!({"file_path": w.state("work.history.jsonl"), "edits": []}),
        ),
        (
            "NotebookEdit",
            json!({"notebook_path": w.state("x.ipynb"), "new_source": ""}),
        ),
    ] {
        let a = w.hook("pre-tool-use", &w.tool(tool, input, "p-1"));
        assert!(a.denied(), "{tool}: {:?}", a.json);
    }
    for command in [
        "cat .sdd/loop/work.budget.json",
        "jq .iterations_used .sdd/loop/work.budget.json",
        "cp .sdd/loop/work.budget.json /tmp/copy.json",
        "rm -f *.json",
        "echo done > notes.md",
        "touch .sdd/loop/work.stop",
        "git clean -fd src",
    ] {
        let a = w.hook("pre-tool-use", &w.bash(command, "p-1"));
        assert!(a.passed(), "{command}: {:?}", a.json);
    }
    let a = w.hook(
        "pre-tool-use",
        &w.tool(
            "Write",
            json!({"file_path": "src/login.rs", "content": "fn main() {}"}),
            "p-1",
        ),
    );
    assert!(a.passed(), "{:?}", a.json);
    assert_eq!(std::fs::read(w.state("work.history.jsonl")).ok(), before);
    let log = w.log("work");
    assert!(
        log.iter().any(|e| e["decision"] == "deny"
            && e["input"].as_str().unwrap_or("").contains("rm -rf .sdd")),
        "{log:?}"
    );
}

#[test]
fn the_loops_files_are_refused_with_no_loop_running_too() {
    let w = World::new(TWO_STORIES);
    let a = w.hook(
        "pre-tool-use",
        &w.bash(
            "mkdir -p .sdd/loop && echo '{}' > .sdd/loop/work.lock",
            "p-1",
        ),
    );
    assert!(a.denied(), "{:?}", a.json);
    assert!(
        w.files().is_empty(),
        "a refusal outside a loop project writes nothing"
    );
}

fn skill_call(w: &World, skill: &str, args: &str, prompt_id: &str) -> serde_json::Value {
    w.tool("Skill", json!({"skill": skill, "args": args}), prompt_id)
}

// Issue 33: PreToolUse did not match `Skill`, so a model invoking
// `sdd:work` with `--loop` outside a tick ran the loop skill with no tick,
// no lock and no budget.
#[test]
fn a_loop_skill_with_loop_outside_a_tick_is_refused_with_the_prompt_to_type_and_nothing_recorded() {
    // No loop state at all.
    let w = World::new(TWO_STORIES);
    let a = w.hook(
        "pre-tool-use",
        &skill_call(&w, "sdd-loop:work", "--loop --max-iterations 2", "p-1"),
    );
    assert!(a.denied(), "{:?}", a.json);
    assert!(
        a.text()
            .contains("ask the user to type `/loop /sdd-loop:work --loop --max-iterations 2`"),
        "{}",
        a.text()
    );
    assert!(w.files().is_empty(), "{:?}", w.files().keys());
    assert!(w.tracker.requests().is_empty());

    // A loop whose iteration is over (its stop ended it).
    let w = work_tick();
    let stop = w.hook("stop", &w.stop(false, "Done.", "p-1"));
    assert!(stop.passed(), "{:?}", stop.json);
    assert!(!w.is_open("work"));
    let before = w.files();
    for (skill, args) in [("sdd:work", "--loop"), ("/sdd:review", "--loop --pr 3")] {
        let a = w.hook("pre-tool-use", &skill_call(&w, skill, args, "p-2"));
        assert!(a.denied(), "{skill}: {:?}", a.json);
    }
    assert_eq!(w.files(), before, "nothing recorded");

    // Another session's open iteration is not this session's.
    let w = World::new(TWO_STORIES);
    let other = OtherSession::start();
    let theirs = w.hook_as(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop", "o-1"),
        other.pid(),
    );
    assert!(theirs.context().is_some(), "{:?}", theirs.json);
    let before = w.files();
    let a = w.hook("pre-tool-use", &skill_call(&w, "sdd:work", "--loop", "p-1"));
    assert!(a.denied(), "{:?}", a.json);
    assert_eq!(w.files(), before, "nothing recorded");
}

#[test]
fn a_loop_skill_inside_the_open_tick_of_its_loop_is_allowed_and_the_other_loop_s_is_not() {
    let w = World::new(TWO_STORIES);
    let begun = w.hook(
        "user-prompt-submit",
        &w.prompt_from("/loop /sdd-loop:work --loop", "p-1", Some("user")),
    );
    assert!(begun.context().is_some(), "{:?}", begun.json);
    let a = w.hook(
        "pre-tool-use",
        &skill_call(&w, "sdd-loop:work", "--loop", "p-1"),
    );
    assert!(a.passed(), "{:?}", a.json);
    let other = w.hook(
        "pre-tool-use",
        &skill_call(&w, "sdd-loop:review", "--loop", "p-1"),
    );
    assert!(other.denied(), "{:?}", other.json);
    assert!(
        other.text().contains("iteration 1 of the work loop"),
        "{}",
        other.text()
    );
    let log = w.log("work");
    let decisions: Vec<&str> = log
        .iter()
        .filter(|e| e["event"] == "pre-tool-use")
        .map(|e| e["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["allow", "deny"], "{log:?}");
}

#[test]
fn a_skill_call_without_loop_is_not_the_loop_s_business() {
    let w = World::new(TWO_STORIES);
    for input in [
        json!({"skill": "sdd-loop:work"}),
        json!({"skill": "sdd:work", "args": "--max-prs 1"}),
        json!({"skill": "commit", "args": "--loop"}),
    ] {
        let a = w.hook("pre-tool-use", &w.tool("Skill", input.clone(), "p-1"));
        assert!(a.passed(), "{input}: {:?}", a.json);
    }
    assert!(w.files().is_empty());
}

/// Issue 32: the session's claim on #1 was taken over by another clone
/// (its lease had lapsed while the session ran); the next tool call's
/// renewal finds it gone, and the PR for #1 is refused.
#[test]
fn a_pr_for_an_issue_whose_claim_was_lost_is_refused() {
    use sdd_loop::state::journal::Journal;
    use sdd_loop::state::paths::Skill;
    use sdd_loop::world::claim::{Change, Holder, Outcome, Remote, Timing};

    let w = World::with_git(TWO_STORIES);
    let a = w.hook(
        "user-prompt-submit",
        &w.prompt("/sdd:work --loop --max-agents 1", "p-1"),
    );
    assert!(a.context().is_some(), "{:?}", a.json);
    let journal_path = w.project.join(".sdd/loop/work.inflight.json");
    let mut journal = Journal::load(&journal_path).unwrap().unwrap();
    let claims = journal.claims.as_mut().expect("the tick claimed #1");
    assert_eq!(claims.held[0].number, 1);
    // Another clone takes #1 over with a compare-and-swap on our commit.
    let other = tempfile::tempdir().unwrap();
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(other.path())
        .status()
        .unwrap();
    let remote = Remote {
        dir: other.path().to_path_buf(),
        remote: w.git.as_ref().unwrap().origin.display().to_string(),
        vars: std::env::vars().collect(),
        limit: std::time::Duration::from_secs(20),
    };
    let holder = Holder {
        host: "m2".into(),
        clone: "/elsewhere".into(),
        pid: 9,
        session: None,
        clone_id: None,
    };
    let lease = Timing::default().lease(Skill::Work, 1, &holder, jiff::Timestamp::now());
    let done = remote
        .push(&[Change::Take {
            lease,
            expected: Some(claims.held[0].commit.clone()),
        }])
        .unwrap();
    assert!(matches!(done[0], Outcome::Done { .. }), "{done:?}");
    // Our lease is near its end: the next call renews, and is refused.
    claims.held[0].expires_at =
        sdd_loop::os::clock::format(jiff::Timestamp::now() + jiff::SignedDuration::from_secs(60));
    journal.save(&journal_path).unwrap();
    let pr = w.hook(
        "pre-tool-use",
        &w.bash("gh pr create --title Login --body 'Closes #1'", "p-1"),
    );
    assert!(pr.denied(), "{:?}", pr.json);
    assert!(
        pr.text()
            .contains("this tick's claim on #1 is lost (taken by another clone"),
        "{}",
        pr.text()
    );
    let ls = w.hook("pre-tool-use", &w.bash("ls", "p-1"));
    assert!(ls.passed(), "{:?}", ls.json);
}
