//! `sdd-loop hook pre-tool-use` (`PreToolUse`): a tool call that would
//! open a PR, merge, review, push or begin a tick ([`super::command`]) is
//! checked against the contract of the iteration this session holds, and
//! refused (`permissionDecision: deny`, with the contract's reason) when:
//!
//! - it opens a PR beyond what `max_new_prs` leaves (the PRs let through
//!   this iteration are counted in [`super::state::Counts`]), or, in a
//!   work tick, a PR whose body does not close an issue of the request;
//! - it merges in a work tick (merging is the review loop's, under its
//!   gates), or a PR that is not in the review request or whose
//!   `merge_allowed` is false — the post-feedback-merge gate said `hold`;
//! - it submits a second review of one PR in one tick (ADR-0010: one
//!   review-response round per PR), or reviews a PR not in the request;
//! - it pushes a new branch when no new PR is left;
//! - the request is a dry run and it changes anything of these;
//! - it runs `begin` while the iteration is open (the hook began it);
//! - it runs the other loop's skill with `--loop` (the `Skill` tool);
//! - no iteration is open but the session holds the loop's lock, or the
//!   prompt's own iteration has ended, or the prompt's tick was skipped
//!   and the prompt went on only to re-arm a self-paced `/loop`'s wakeup:
//!   then every PR, merge, review and push is refused.
//!
//! A loop skill run with `--loop` through the `Skill` tool is allowed only
//! inside this session's open iteration of that loop; anywhere else —
//! no loop state, no iteration open, another session's — it is refused
//! with the prompt that starts a loop, and nothing is written (issue 33:
//! it would run the loop skill with no tick, no lock and no budget).
//!
//! Everything else is allowed, and so is everything in a project with no
//! loop state or a session holding no loop. When the hook cannot decide
//! (state unreadable, the session's process unknown), it refuses PRs,
//! merges, reviews and pushes and allows everything else: fail closed.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::answer::Answer;
use super::command::{self, Action, Body};
use super::input::ToolInput;
use super::log::{self, Entry};
use super::seams::{Hook, both};
use super::state::{Counts, Session};
use crate::os::clock;
use crate::state::exchange::Exchange;
use crate::state::journal::Journal;
use crate::state::lock;
use crate::state::paths::{Skill, StatePaths};
use crate::state::protocol::SkillRequest;
use crate::world::git::WorktreeState;

/// Longest PR body file read to see which issues it closes.
const BODY_MAX: u64 = 1 << 20;

fn refused(why: impl std::fmt::Display) -> Answer {
    Answer::Deny(format!("sdd-loop refused this: {why}"))
}

/// Refuses `actions` if any changes PRs, else passes: the answer when
/// the hook cannot decide.
fn deny_if_prs(actions: &[Action], why: &str) -> Answer {
    if actions.iter().any(Action::changes_prs) {
        refused(format!(
            "{why}. Until it can decide, PRs, merges, reviews and pushes are refused (fail closed); everything else is allowed."
        ))
    } else {
        Answer::Pass
    }
}

/// The answer when the hook cannot decide on `bytes` (its input).
pub fn fail_closed(bytes: &[u8], why: &str) -> Answer {
    let actions = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => command::recognise(v["tool_name"].as_str().unwrap_or(""), &v["tool_input"]),
        Err(_) => Vec::new(),
    };
    // The loop's files stay refused, by their name alone.
    if let Some(a) = actions
        .iter()
        .find(|a| matches!(a, Action::Touch { path, .. } if path.contains(".sdd/loop")))
    {
        return refused(format!(
            "{} — {why}; the loop's state under .sdd/loop/ is the sdd-loop engine's, which owns and writes it itself: do not write, move, truncate or delete it.",
            a.describe()
        ));
    }
    deny_if_prs(&actions, why)
}

/// What was decided, and about which loop (none: not a loop's call, not
/// logged).
struct Decided {
    answer: Answer,
    skill: Option<Skill>,
    iteration: Option<u64>,
}

impl Decided {
    fn outside(answer: Answer) -> Self {
        Self {
            answer,
            skill: None,
            iteration: None,
        }
    }
}

pub fn run(hook: &mut Hook<'_>, bytes: &[u8]) -> Answer {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(_) => return Answer::Pass,
    };
    let actions = command::recognise(
        value["tool_name"].as_str().unwrap_or(""),
        &value["tool_input"],
    );
    if actions.is_empty() {
        return Answer::Pass;
    }
    let input = match ToolInput::parse(bytes) {
        Ok(i) => i,
        Err(e) => {
            let answer = deny_if_prs(&actions, &format!("its input cannot be read ({e})"));
            if answer != Answer::Pass {
                return answer;
            }
            // The loop's files stay refused when the input half-reads.
            return match value["cwd"].as_str() {
                Some(cwd) => {
                    let cwd = Path::new(cwd);
                    owned_answer(hook, &hook.project_for(cwd), cwd, &actions)
                        .map_or(Answer::Pass, |(a, _)| a)
                }
                None => Answer::Pass,
            };
        }
    };
    let project = hook.project_for(&input.common.cwd);
    let loop_dir = project.join(".sdd").join("loop");
    // The loop's own files, whoever asks and whether or not a loop runs.
    if let Some((answer, skill)) = owned_answer(hook, &project, &input.common.cwd, &actions) {
        if loop_dir.is_dir() {
            let redactor = log::redactor(&project, hook.vars);
            let entry = Entry {
                at: clock::format(hook.clock.now()),
                event: "pre-tool-use".into(),
                session_id: input.common.session_id.clone(),
                prompt_id: input.common.prompt_id.clone(),
                iteration: None,
                decision: answer.decision().into(),
                reason: answer.text().map(str::to_owned),
                saw: actions.iter().map(Action::describe).collect(),
                input: Some(log::quote(&describe_input(&input))),
            };
            let _ = log::append(&project, skill, &entry, &redactor);
        }
        return answer;
    }
    let actions: Vec<Action> = actions
        .into_iter()
        .filter(|a| !matches!(a, Action::Touch { .. }))
        .collect();
    if actions.is_empty() {
        return Answer::Pass;
    }
    if !loop_dir.is_dir() {
        return outside_a_tick(&actions).unwrap_or(Answer::Pass);
    }
    let redactor = log::redactor(&project, hook.vars);
    let decided = match decide(hook, &input, &project, &actions, &redactor) {
        Ok(d) => d,
        Err(why) => Decided {
            answer: deny_if_prs(&actions, &format!("the hook cannot decide: {why}")),
            skill: Some(Skill::Work),
            iteration: None,
        },
    };
    if let Some(skill) = decided.skill {
        let entry = Entry {
            at: clock::format(hook.clock.now()),
            event: "pre-tool-use".into(),
            session_id: input.common.session_id.clone(),
            prompt_id: input.common.prompt_id.clone(),
            iteration: decided.iteration,
            decision: match decided.answer {
                Answer::Pass => "allow".into(),
                ref a => a.decision().into(),
            },
            reason: decided.answer.text().map(str::to_owned),
            saw: actions.iter().map(Action::describe).collect(),
            input: Some(log::quote(&describe_input(&input))),
        };
        let _ = log::append(&project, skill, &entry, &redactor);
    }
    decided.answer
}

fn describe_input(input: &ToolInput) -> String {
    input
        .bash_command()
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{} {}", input.tool_name, input.tool_input))
}

/// The refusal of a call that would write, move, truncate or delete the
/// loop's own files ([`super::owned`]), and the loop it concerns.
fn owned_answer(
    hook: &Hook<'_>,
    project: &Path,
    cwd: &Path,
    actions: &[Action],
) -> Option<(Answer, Skill)> {
    // What cannot be read may be anything, the loop's files included.
    if let Some(a) = actions
        .iter()
        .find(|a| matches!(a, Action::Unreadable { .. }))
        && project.join(".sdd").join("loop").is_dir()
    {
        return Some((refused(unreadable(a)), Skill::Work));
    }
    if !actions.iter().any(|a| matches!(a, Action::Touch { .. })) {
        return None;
    }
    let owned = super::owned::owned(project);
    let home = hook.vars.get("HOME").map(Path::new);
    for a in actions {
        let Some(root) = super::owned::touched(a, cwd, home, &owned) else {
            continue;
        };
        let Action::Touch { path, .. } = a else {
            continue;
        };
        let skill = if path.contains("review.") {
            Skill::Review
        } else {
            Skill::Work
        };
        let what = if root.ends_with(".sdd/loop") || root == owned[0] {
            "the loop's state under .sdd/loop/".to_owned()
        } else {
            format!("the loop's own file {}", root.display())
        };
        return Some((
            refused(format!(
                "{} — {path} is {what}, which the sdd-loop engine owns and writes itself (lock, budget, history line, journal, ledger). Do not write, move, truncate or delete it: the loop's bookkeeping is done for you, and its budgets are what they record. Reading it is fine. To stop the loop, create .sdd/loop/{skill}.stop or ask the user; to start a new loop on purpose, the user sends the loop prompt with --fresh.",
                a.describe()
            )),
            skill,
        ));
    }
    None
}

/// Why a command line nested past reading is refused where a loop lives.
fn unreadable(a: &Action) -> String {
    format!(
        "{} — it could write the loop's state under .sdd/loop/ or open, merge or review a PR, and the hook cannot tell which. Write the command plainly: fewer wrappers, no deeply nested $(…)",
        a.describe()
    )
}

fn decide(
    hook: &mut Hook<'_>,
    input: &ToolInput,
    project: &Path,
    actions: &[Action],
    redactor: &crate::rules::redact::Redactor,
) -> Result<Decided, String> {
    let pid = hook
        .session
        .clone()
        .map_err(|why| format!("the session's process is unknown ({why})"))?;
    for paths in both(project) {
        match Journal::load(&paths.inflight()) {
            Ok(Some(j)) if j.pid == pid => {
                return in_tick(hook, input, &paths, &j, actions, redactor);
            }
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    if let Some(refusal) = outside_a_tick(actions) {
        return Ok(Decided::outside(refusal));
    }
    let changes: Vec<&Action> = actions.iter().filter(|a| a.changes_prs()).collect();
    if changes.is_empty() {
        return Ok(Decided::outside(Answer::Pass));
    }
    let what = changes
        .iter()
        .map(|a| a.describe())
        .collect::<Vec<_>>()
        .join(", ");
    for paths in both(project) {
        if let Ok(Some(Ok(record))) = lock::peek(&paths)
            && record.pid == pid
        {
            let skill = paths.skill;
            return Ok(Decided {
                answer: refused(format!(
                    "no iteration of the {skill} loop is open, but this session holds its lock (iteration {}): {what} now would be counted by no tick. Finish the tick (`sdd-loop {skill} end`) or wait for the next loop prompt.",
                    record.iteration
                )),
                skill: Some(skill),
                iteration: Some(record.iteration),
            });
        }
    }
    for paths in both(project) {
        if let Ok(Some(session)) = Session::load(&paths, &input.common.session_id)
            && session.prompt_id.is_some()
            && session.prompt_id == input.common.prompt_id
            && session.skipped
        {
            let skill = paths.skill;
            return Ok(Decided {
                answer: refused(format!(
                    "this prompt's tick of the {skill} loop was skipped (nothing to do this tick), and the prompt went on only so that its self-paced /loop re-arms its wakeup: {what} now is outside any tick and would be counted by none. Re-arm the wakeup and end the turn; the next fire tries the tick again."
                )),
                skill: Some(skill),
                iteration: None,
            });
        }
        if let Ok(Some(session)) = Session::load(&paths, &input.common.session_id)
            && session.prompt_id.is_some()
            && session.prompt_id == input.common.prompt_id
            && let Some(n) = session.iteration
        {
            let skill = paths.skill;
            return Ok(Decided {
                answer: refused(format!(
                    "iteration {n} of the {skill} loop, which this prompt began, has ended (its `end` ran): {what} now is outside any tick and would be counted by none. Stop here; the next tick begins with the next loop prompt."
                )),
                skill: Some(skill),
                iteration: Some(n),
            });
        }
    }
    Ok(Decided::outside(Answer::Pass))
}

/// The refusal of a loop skill run with `--loop` where this session has
/// no open iteration: it would run with no tick, no lock and no budget.
fn outside_a_tick(actions: &[Action]) -> Option<Answer> {
    actions.iter().find_map(|a| {
        let Action::LoopSkill { skill, name, args } = a else {
            return None;
        };
        Some(refused(format!(
            "{} — no iteration of the {skill} loop is open in this session, so the skill would run with no lock, no budget and no telemetry. A loop's ticks begin when the user sends the loop prompt: ask the user to type `/loop /{name} {args}` (each tick then begins before you are called, and running this skill inside it is allowed). To run the skill once, outside any loop, call it without --loop.",
            a.describe()
        )))
    })
}

/// The issues a new PR's body closes (`None`: the body cannot be seen).
fn closes(body: &Body, cwd: &Path) -> Result<BTreeSet<u64>, String> {
    let read = |file: &str| -> Result<String, String> {
        let path = cwd.join(file);
        let f = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::Read::take(f, BODY_MAX), &mut text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(text)
    };
    let text = match body {
        Body::Text(t) => t.clone(),
        Body::File(f) => read(f)?,
        Body::JsonFile(f) => {
            let json: Value =
                serde_json::from_str(&read(f)?).map_err(|e| format!("{f}: not JSON: {e}"))?;
            json["body"]
                .as_str()
                .ok_or_else(|| format!("{f} has no body"))?
                .to_owned()
        }
        Body::Unknown(why) => return Err(why.clone()),
    };
    Ok(crate::world::backlog::closes(&text))
}

/// Whether `text` names PR `n` (`#n` not followed by a digit).
fn mentions(text: &str, n: u64) -> bool {
    let needle = format!("#{n}");
    text.match_indices(&needle).any(|(at, _)| {
        !text[at + needle.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

fn list(numbers: impl IntoIterator<Item = u64>) -> String {
    let all: Vec<String> = numbers.into_iter().map(|n| format!("#{n}")).collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}

/// A push of a branch the remote does not have, when no new PR is left.
fn new_branch(
    hook: &Hook<'_>,
    cwd: &Path,
    dir: Option<&str>,
    remote: Option<&str>,
    branches: Option<&[String]>,
) -> Option<String> {
    let Some(branches) = branches else {
        return Some("the branches it pushes cannot be told (--all, --mirror)".into());
    };
    let at = dir.map_or_else(|| cwd.to_path_buf(), |d| cwd.join(d));
    let mut names = Vec::new();
    for b in branches {
        if b == "HEAD" {
            match hook.git.worktree(&at) {
                WorktreeState::At { branch, .. } => names.push(branch),
                WorktreeState::Missing => {
                    return Some("its branch cannot be told".into());
                }
            }
        } else {
            names.push(b.clone());
        }
    }
    if names.is_empty() {
        match hook.git.worktree(&at) {
            WorktreeState::At { branch, .. } => names.push(branch),
            WorktreeState::Missing => return Some("its branch cannot be told".into()),
        }
    }
    let remote = remote.unwrap_or("origin");
    let git = crate::world::git::GitCli { dir: at };
    let on_remote = match crate::world::git::Git::remote_heads(&git, remote, &names) {
        Ok(heads) => heads,
        Err(e) => return Some(format!("the remote cannot be read ({e})")),
    };
    names
        .iter()
        .find(|n| !on_remote.contains_key(*n))
        .map(|n| format!("{n} is a new branch on {remote}"))
}

/// The calls of `actions` checked against the open iteration `journal`
/// records: a push of a new branch first, then each call in turn against
/// the PRs and reviews this iteration let through.
fn in_tick(
    hook: &mut Hook<'_>,
    input: &ToolInput,
    paths: &StatePaths,
    journal: &Journal,
    actions: &[Action],
    redactor: &crate::rules::redact::Redactor,
) -> Result<Decided, String> {
    let contract = Contract::of(paths.skill, journal);
    let decided = |answer| Decided {
        answer,
        skill: Some(contract.skill),
        iteration: Some(journal.iteration),
    };
    let cwd = &input.common.cwd;
    let exchange = Exchange::for_iteration(paths, journal.iteration);
    // The bodies are read before the counts are locked.
    let bodies: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            Action::OpenPr { body, .. } => Some(closes(body, cwd)),
            _ => None,
        })
        .collect();
    let lost = keep_claims(hook, paths, journal);
    let seen = Counts::update(&exchange, redactor, |c| (false, c.prs_opened))
        .map_err(|e| e.to_string())?;
    if let Some(why) = contract.new_branch_push(hook, cwd, actions, seen) {
        return Ok(decided(refused(why)));
    }
    let answer = Counts::update(&exchange, redactor, |counts| {
        let mut opened = counts.prs_opened;
        let mut reviews = counts.reviews.clone();
        let mut bodies = bodies.into_iter();
        for a in actions {
            let deny = match a {
                Action::Begin { .. } => Some(contract.begun()),
                Action::LoopSkill { skill, .. } => contract.loop_skill(a, *skill),
                Action::Push { .. } | Action::Touch { .. } => None,
                Action::Unreadable { .. } => Some(unreadable(a)),
                Action::OpenPr { .. } => {
                    let closed = bodies.next().unwrap_or_else(|| Err("no body".into()));
                    let unclaimed = closed.as_ref().ok().and_then(|issues| {
                        issues.iter().find_map(|n| lost.get(n).map(|why| (*n, why)))
                    });
                    let why = match unclaimed {
                        Some((n, why)) => Some(claim_lost(a, n, why)),
                        None => contract.open_pr(a, closed, opened),
                    };
                    if why.is_none() {
                        opened += 1;
                    }
                    why
                }
                Action::Merge { pr, .. } => match pr.and_then(|n| lost.get(&n).map(|w| (n, w))) {
                    Some((n, why)) => Some(claim_lost(a, n, why)),
                    None => contract.merge(a, *pr),
                },
                Action::Review { pr, .. } => contract.review(a, *pr, &mut reviews),
            };
            if let Some(why) = deny {
                return (false, refused(why));
            }
        }
        let changed = opened != counts.prs_opened || reviews != counts.reviews;
        counts.prs_opened = opened;
        counts.reviews = reviews;
        (changed, Answer::Pass)
    })
    .map_err(|e| e.to_string())?;
    Ok(decided(answer))
}

/// The longest a hook's renewal may wait on the remote: well under the
/// hook's own time limit, so a remote that hangs cannot make the hook
/// time out (which Claude Code treats as no answer, failing open).
const HOOK_GIT_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Renews the tick's claims that are due, by the hook's clock (issue 32),
/// and returns the issues or PRs whose claim is lost, with why.
fn keep_claims(
    hook: &Hook<'_>,
    paths: &StatePaths,
    journal: &Journal,
) -> std::collections::BTreeMap<u64, String> {
    let Some(mut claims) = journal.claims.clone() else {
        return Default::default();
    };
    let limit = claims.limit_secs.min(HOOK_GIT_LIMIT.as_secs());
    let before = claims.clone();
    claims.limit_secs = limit;
    let tended = crate::skill::keeper::renew_due(
        &mut claims,
        journal.request.skill,
        journal.pid,
        hook.vars,
        hook.clock,
    );
    claims.limit_secs = before.limit_secs;
    if !tended.renewed.is_empty() || !tended.lost.is_empty() {
        let _ = Journal::record_claims(&paths.inflight(), &claims);
    }
    claims
        .lost
        .into_iter()
        .map(|l| (l.number, l.reason))
        .collect()
}

/// Why a PR or merge for `n` is refused: its claim is lost.
fn claim_lost(a: &Action, n: u64, why: &str) -> String {
    format!(
        "{} — this tick's claim on #{n} is lost ({why}): another clone may be working it now. Leave #{n} alone this tick; end records the loss.",
        a.describe()
    )
}

/// The open iteration's contract, as the hook checks a call against it;
/// each check returns why the call is refused, if it is.
struct Contract<'a> {
    skill: Skill,
    journal: &'a Journal,
    request: &'a SkillRequest,
    /// The issues of the request.
    requested: BTreeSet<u64>,
}

impl<'a> Contract<'a> {
    fn of(skill: Skill, journal: &'a Journal) -> Self {
        let request = &journal.request;
        Self {
            skill,
            journal,
            request,
            requested: request.issues.iter().map(|i| i.number).collect(),
        }
    }

    /// `max_new_prs`, and how many PRs were opened against it.
    fn limit(&self, opened: u64) -> String {
        match self.request.max_new_prs {
            Some(max) => {
                format!("max_new_prs is {max}, and {opened} PR(s) were opened this iteration")
            }
            None => String::new(),
        }
    }

    /// A push of a new branch, in a dry run or when no new PR is left
    /// (`seen` PRs opened so far).
    fn new_branch_push(
        &self,
        hook: &mut Hook<'_>,
        cwd: &Path,
        actions: &[Action],
        seen: u64,
    ) -> Option<String> {
        let dry = self.request.dry_run;
        let left_before = self.request.max_new_prs.map(|m| m.saturating_sub(seen));
        if !(dry || left_before == Some(0)) {
            return None;
        }
        actions.iter().find_map(|a| {
            let Action::Push {
                dir,
                remote,
                branches,
            } = a
            else {
                return None;
            };
            let why = new_branch(
                hook,
                cwd,
                dir.as_deref(),
                remote.as_deref(),
                branches.as_deref(),
            )?;
            let because = if dry {
                "this tick is a dry run".to_owned()
            } else {
                format!("no new PR is left this tick ({})", self.limit(seen))
            };
            Some(format!(
                "{} — {why}, and {because}. Push only to the branches of PRs you already opened.",
                a.describe()
            ))
        })
    }

    /// `begin` while the iteration is open.
    fn begun(&self) -> String {
        let (skill, n) = (self.skill, self.journal.iteration);
        format!(
            "`sdd-loop {skill} begin` already ran for this prompt: iteration {n} of the {skill} loop is open, held by this session. Do the work in the request; `end` runs when you stop."
        )
    }

    /// The other loop's skill with `--loop`: this iteration is not its.
    fn loop_skill(&self, a: &Action, skill: Skill) -> Option<String> {
        (skill != self.skill).then(|| {
            let (own, n) = (self.skill, self.journal.iteration);
            format!(
                "{} — the iteration open in this session is iteration {n} of the {own} loop, not the {skill} loop's: run the {own} skill here. The {skill} loop's ticks begin with its own loop prompt, sent by the user."
            ,
                a.describe()
            )
        })
    }

    /// A PR opened in a dry run, beyond `max_new_prs` (`opened` so far),
    /// or — in a work tick — closing no issue of the request.
    fn open_pr(
        &self,
        a: &Action,
        closed: Result<BTreeSet<u64>, String>,
        opened: u64,
    ) -> Option<String> {
        let requested = &self.requested;
        if self.request.dry_run {
            Some(format!(
                "{} — this tick is a dry run: plan and report, open nothing.",
                a.describe()
            ))
        } else if self.request.max_new_prs.is_some_and(|max| opened >= max) {
            Some(format!(
                "{} — this tick may open no more pull requests: {}. Do not open more; finish and stop (end records what you did).",
                a.describe(),
                self.limit(opened)
            ))
        } else if self.skill == Skill::Work {
            match closed {
                Ok(issues) if issues.is_empty() => Some(format!(
                    "{} — its body closes no issue; a PR in this tick implements one issue of the request and says so: put `Closes #N` in the body, for one of {}.",
                    a.describe(),
                    list(requested.iter().copied())
                )),
                Ok(issues) if !issues.is_subset(requested) => Some(format!(
                    "{} — it closes {}, which this tick's request does not hold (the request: {}). Open PRs only for the issues of the request.",
                    a.describe(),
                    list(issues.difference(requested).copied()),
                    list(requested.iter().copied())
                )),
                Ok(_) => None,
                Err(why) => Some(format!(
                    "{} — which issue it closes cannot be seen ({why}); open it with `--body 'Closes #N'` for one of {}.",
                    a.describe(),
                    list(requested.iter().copied())
                )),
            }
        } else {
            None
        }
    }

    /// A merge in a dry run or a work tick, of a PR not named, not in the
    /// request, or not allowed to merge.
    fn merge(&self, a: &Action, pr: Option<u64>) -> Option<String> {
        let request = self.request;
        if request.dry_run {
            return Some(format!(
                "{} — this tick is a dry run: merge nothing.",
                a.describe()
            ));
        }
        if self.skill == Skill::Work {
            return Some(format!(
                "{} — a /sdd:work tick merges nothing: merging is the review loop's, under its post-feedback-merge gate.",
                a.describe()
            ));
        }
        let Some(number) = pr else {
            return Some(format!(
                "{} — name the PR by its number, so the hook can check that merging it is allowed this tick (the request: {}).",
                a.describe(),
                list(request.prs.iter().map(|p| p.number))
            ));
        };
        match request.prs.iter().find(|p| p.number == number) {
            None => Some(format!(
                "{} — PR #{number} is not in this tick's request (the request: {}).",
                a.describe(),
                list(request.prs.iter().map(|p| p.number))
            )),
            Some(p) if !p.merge_allowed => {
                let held = self.journal.gates.iter().any(|g| {
                    g.name == "post-feedback-merge"
                        && g.answer.starts_with("hold")
                        && mentions(&g.question, number)
                });
                Some(if held {
                    format!(
                        "{} — the post-feedback-merge gate was answered `hold` for PR #{number} this tick: it waits for a human re-review. Do not merge it.",
                        a.describe()
                    )
                } else {
                    format!(
                        "{} — merging PR #{number} is not allowed this tick (merge_allowed is false in the request).",
                        a.describe()
                    )
                })
            }
            Some(_) => None,
        }
    }

    /// A review of a PR not in a review tick's request, or a second one
    /// (ADR-0010); a review let through is counted in `reviews`.
    fn review(
        &self,
        a: &Action,
        pr: Option<u64>,
        reviews: &mut std::collections::BTreeMap<String, u64>,
    ) -> Option<String> {
        let request = self.request;
        let key = pr.map_or_else(|| "?".to_owned(), |p| p.to_string());
        if self.skill == Skill::Review
            && let Some(number) = pr
            && !request.prs.iter().any(|p| p.number == number)
        {
            Some(format!(
                "{} — PR #{number} is not in this tick's request (the request: {}).",
                a.describe(),
                list(request.prs.iter().map(|p| p.number))
            ))
        } else if reviews.get(&key).copied().unwrap_or(0) >= 1 {
            Some(format!(
                "{} — it was already reviewed in this tick, and ADR-0010 allows one review-response round per PR per tick. Reply in the threads, push fixes, and stop; the next tick may review it again.",
                a.describe()
            ))
        } else {
            *reviews.entry(key).or_insert(0) += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_time_the_loops_files_stay_refused() {
        let input = |command: &str| {
            serde_json::json!({"tool_name": "Bash", "tool_input": {"command": command}}).to_string()
        };
        assert!(matches!(
            fail_closed(
                input("rm -f .sdd/loop/work.budget.json").as_bytes(),
                "out of time"
            ),
            Answer::Deny(_)
        ));
        assert_eq!(
            fail_closed(
                input("cat .sdd/loop/work.budget.json").as_bytes(),
                "out of time"
            ),
            Answer::Pass
        );
    }

    #[test]
    fn a_pr_is_mentioned_by_its_whole_number() {
        let q =
            "Responder addressed human feedback on PR #142. Merge now or hold for human re-review?";
        assert!(mentions(q, 142));
        assert!(!mentions(q, 14));
        assert!(!mentions(q, 1420));
    }

    #[test]
    fn bodies_from_text_and_files() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("pr.md"), "Fixes #3 and closes #4").unwrap();
        std::fs::write(
            tmp.path().join("pr.json"),
            r#"{"title":"x","body":"Resolves #5"}"#,
        )
        .unwrap();
        let c = |b: Body| closes(&b, tmp.path());
        assert_eq!(
            c(Body::Text("Closes #1".into())).unwrap(),
            BTreeSet::from([1])
        );
        assert_eq!(
            c(Body::File("pr.md".into())).unwrap(),
            BTreeSet::from([3, 4])
        );
        assert_eq!(
            c(Body::JsonFile("pr.json".into())).unwrap(),
            BTreeSet::from([5])
        );
        assert!(c(Body::File("missing.md".into())).is_err());
        assert!(c(Body::Unknown("--fill".into())).is_err());
    }
}
