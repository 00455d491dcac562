//! Step 7 of the tick: what the work reported becomes counters, contract
//! checks and exit stop conditions, and the tick is recorded (step 8).
//!
//! [`add`] folds a result into the budget (tokens and dollars per model,
//! deduplicated PRs, agents, comments, merges); [`finish`] is the whole
//! `end` half once the result is known: accounting, the ADR-0010 and chain
//! checks, the qmd counter (#11), the exit stops (#4 overshoot, #8, #11,
//! #12), the history line, budget.json, the status block and final report,
//! and the lock's release.

use std::collections::BTreeSet;

use super::ctx::{Ctx, Ending, list, plural, pr_ref};
use super::record::{self, Delta, Record};
use super::{Concluded, Failure};
use crate::exit;
use crate::os::clock;
use crate::rules::rates;
use crate::rules::stop::{self, Fired, StopCause};
use crate::skill::runner::{InterruptKind, NOT_STARTED, RunOutcome, STALLED};
use crate::state::budget::{Budget, round_dollars};
use crate::state::exchange::Exchange;
use crate::state::files;
use crate::state::history::{
    ActiveWorktree, Autofix, BudgetSnapshot, Chain, FailureRecord, Outcome, PrState, TrackedPr,
};
use crate::state::journal::Journal;
use crate::state::lock::HeldLock;
use crate::state::paths::Skill;
use crate::state::protocol::{PrReport, SkillResult};
use crate::world::tracker::TrackerError;

/// How the work between `begin` and `end` went, apart from its result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkReport {
    /// Why the work failed (a non-zero exit, a stall, `end --error`).
    pub failure: Option<String>,
    /// The qmd signal of condition #11, with the error it captured.
    pub qmd: Option<String>,
    /// An interrupt arrived while the work ran.
    pub interrupted: Option<InterruptKind>,
    /// Something outside the work ended its turn first (`end
    /// --turn-ended-by`): a model-API error or the session's end. The
    /// iteration is errored, but no target failed.
    pub turn_ended_by: Option<String>,
}

impl From<&RunOutcome> for WorkReport {
    fn from(run: &RunOutcome) -> Self {
        Self {
            failure: run.failure(),
            qmd: run.qmd_signal().then(|| {
                run.qmd_line
                    .clone()
                    .or_else(|| run.last_stderr().map(str::to_owned))
                    .unwrap_or_default()
            }),
            interrupted: run.interrupted,
            turn_ended_by: None,
        }
    }
}

/// Whom an errored iteration's error fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blame {
    /// Every target it dispatched that the work reported no failure for.
    Targets,
    /// No target: the work's own result said success and only how its
    /// process ended failed it ([`RunOutcome::result_succeeded`]). That
    /// result is authoritative for the work done — what reached the
    /// tracker stands — and the exit is the iteration's error.
    NoTarget,
}

impl Blame {
    /// A skill command that never ran did no work to blame: the setting
    /// is at fault, and the tick says so ([`RunOutcome::could_not_start`]).
    pub(crate) fn of(run: &RunOutcome) -> Self {
        if run.result_succeeded || run.could_not_start() {
            Blame::NoTarget
        } else {
            Blame::Targets
        }
    }
}

/// Adds a result to the counters; returns this iteration's deltas.
/// `single_pr`: in single-PR mode only that PR counts as touched.
pub(crate) fn add(
    ctx: &mut Ctx<'_, '_>,
    budget: &mut Budget,
    result: &SkillResult,
    single_pr: Option<u64>,
) -> Delta {
    let before = budget.dollars_estimate;
    let priced_before = ctx.inputs.rates.cost(&budget.tokens_by_model).dollars;
    let mut delta = Delta::default();
    for u in &result.usage {
        budget.add_model_tokens(&u.model, &u.tokens());
        // Counts are the work's word: absurd ones saturate rather than
        // overflow (a panic in a debug build, a wrap in a release one).
        delta.tokens_in = delta.tokens_in.saturating_add(u.tokens_in);
        delta.tokens_out = delta.tokens_out.saturating_add(u.tokens_out);
    }
    let cost = ctx.inputs.rates.cost(&budget.tokens_by_model);
    budget.rate_table_source = cost.rate_table_source();
    let this_tick: BTreeSet<&str> = result.usage.iter().map(|u| u.model.as_str()).collect();
    for model in cost
        .unknown_models
        .iter()
        .filter(|m| this_tick.contains(m.as_str()))
    {
        ctx.note(rates::unknown_model_warning(model));
    }
    // Real agents report dated ids and aliases: say which row priced each.
    for note in this_tick.iter().filter_map(|m| cost.family_note(m)) {
        ctx.note(note);
    }
    // Add this tick's spend to what was recorded, so dollars carried by a
    // checkpoint without per-model totals are never lost.
    budget.dollars_estimate = round_dollars(before + (cost.dollars - priced_before));
    delta.dollars = round_dollars(budget.dollars_estimate - before).max(0.0);
    delta.agent_cost = result.agent_cost_usd.map(round_dollars);
    for pr in &result.prs {
        let r = pr_ref(pr.number);
        if !delta.prs.contains(&r) {
            delta.prs.push(r.clone());
        }
        match single_pr {
            Some(n) => budget.prs_touched.insert(pr_ref(n)),
            None => budget.prs_touched.insert(r),
        };
    }
    budget.agents_dispatched = budget
        .agents_dispatched
        .saturating_add(result.agents_dispatched);
    budget.comments_pushed = budget
        .comments_pushed
        .saturating_add(result.comments_pushed);
    budget.merges_attempted = budget
        .merges_attempted
        .saturating_add(result.merges_attempted);
    delta.agents = result.agents_dispatched;
    delta.comments = result.comments_pushed;
    delta.merges = result.merges_attempted;
    delta
}

/// The reported PRs the tracker has: the result keeping only those, the
/// numbers of those it does not have, and the issues the kept PRs close.
pub(crate) struct Verified {
    pub result: SkillResult,
    pub unknown: Vec<u64>,
    pub closes: BTreeSet<u64>,
}

/// Keeps the reported PRs the tracker has. A PR that exists only in a
/// report is not counted (SPEC-0020 budgets count real PRs): it is a
/// failure of the skill.
pub(crate) fn verify_prs(ctx: &Ctx<'_, '_>, mut result: SkillResult) -> Result<Verified, Failure> {
    let mut unknown = Vec::new();
    let mut known = Vec::new();
    let mut closes = BTreeSet::new();
    for pr in std::mem::take(&mut result.prs) {
        if known.contains(&pr.number) || unknown.contains(&pr.number) {
            if known.contains(&pr.number) {
                result.prs.push(pr);
            }
            continue;
        }
        match ctx.tracker.pull(pr.number) {
            Ok(pull) => {
                closes.extend(pull.closes());
                known.push(pr.number);
                result.prs.push(pr);
            }
            Err(TrackerError::Status { status: 404, .. }) => unknown.push(pr.number),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Verified {
        result,
        unknown,
        closes,
    })
}

/// PRs tracked at the start of a tick, updated by what the work reported.
pub(crate) fn merge_tracked(start: &[TrackedPr], reports: &[PrReport]) -> Vec<TrackedPr> {
    let mut out: Vec<TrackedPr> = start.to_vec();
    for r in reports {
        match out.iter_mut().find(|t| t.number == r.number) {
            Some(t) => {
                if let Some(end) = &r.head_sha_at_end {
                    t.head_sha_at_iteration_end = Some(end.clone());
                }
                if t.head_sha_at_iteration_start.is_none() {
                    t.head_sha_at_iteration_start = r.head_sha_at_start.clone();
                }
                t.state_at_end = r.state;
            }
            None => out.push(TrackedPr {
                number: r.number,
                branch: r.branch.clone(),
                head_sha_at_iteration_start: r
                    .head_sha_at_start
                    .clone()
                    .or_else(|| r.head_sha_at_end.clone()),
                head_sha_at_iteration_end: r.head_sha_at_end.clone(),
                state_at_end: r.state,
                extra: Default::default(),
            }),
        }
    }
    out
}

/// `review_outcome`'s values (SPEC-0020 "Chain Outcome Telemetry").
const REVIEW_OUTCOMES: [&str; 4] = ["approve", "changes-requested", "needs-human", "errored"];
/// `autofix_pr_invocation_status`'s values (the same requirement).
const AUTOFIX_STATUSES: [&str; 3] = ["accepted", "unavailable", "errored"];

/// The chain telemetry a work result reports, and the contract violations
/// in how it reports it: a value outside the telemetry's enumerations,
/// `/autofix-pr` after `/sdd:review` errored. What the skill said is
/// recorded as it said it; the violation makes the tick `errored`.
fn chain_of(
    skill: Skill,
    no_chain: bool,
    result: &SkillResult,
    violations: &mut Vec<String>,
) -> Chain {
    let c = match (skill, &result.chain) {
        (Skill::Review, _) => return Chain::NotApplicable,
        (Skill::Work, None) => return Chain::NotInvoked,
        (Skill::Work, Some(c)) if !c.invoked => return Chain::NotInvoked,
        (Skill::Work, Some(c)) => c,
    };
    if no_chain {
        violations
            .push("contract violation: the skill chained into review under --no-chain".into());
    }
    let Some(outcome) = &c.review_outcome else {
        violations.push("contract violation: chain.invoked without chain.review_outcome".into());
        return Chain::NotInvoked;
    };
    if !REVIEW_OUTCOMES.contains(&outcome.as_str()) {
        violations.push(format!(
            "contract violation: chain.review_outcome {outcome:?} is none of {}",
            REVIEW_OUTCOMES.join(", ")
        ));
    }
    let autofix = match &c.autofix_pr {
        Some(a) if a.invoked && outcome == "errored" => {
            violations.push(
                "contract violation: /autofix-pr invoked after /sdd:review errored (SPEC-0020 \"Post-PR Chain Invocation\")"
                    .into(),
            );
            match &a.status {
                Some(s) => Autofix::Invoked { status: s.clone() },
                None => Autofix::NotInvoked,
            }
        }
        Some(a) if a.invoked => match &a.status {
            Some(s) => {
                if !AUTOFIX_STATUSES.contains(&s.as_str()) {
                    violations.push(format!(
                        "contract violation: chain.autofix_pr.status {s:?} is none of {}",
                        AUTOFIX_STATUSES.join(", ")
                    ));
                }
                Autofix::Invoked { status: s.clone() }
            }
            None => {
                violations.push(
                    "contract violation: autofix_pr.invoked without autofix_pr.status".into(),
                );
                Autofix::NotInvoked
            }
        },
        _ => Autofix::NotInvoked,
    };
    Chain::Invoked {
        review_outcome: outcome.clone(),
        autofix,
    }
}

/// The `Outcome:` line of a tick that ran its work.
fn outcome_line(
    result: &SkillResult,
    gate_outcomes: &[String],
    error: Option<&str>,
    empty: bool,
) -> String {
    let mut parts = Vec::new();
    let opened: Vec<u64> = result
        .prs
        .iter()
        .filter(|p| p.opened)
        .map(|p| p.number)
        .collect();
    let touched: Vec<u64> = result
        .prs
        .iter()
        .filter(|p| !p.opened)
        .map(|p| p.number)
        .collect();
    if !opened.is_empty() {
        parts.push(format!(
            "{} opened ({}).",
            plural(opened.len(), "PR", "PRs"),
            list(&opened)
        ));
    }
    if !touched.is_empty() {
        parts.push(format!(
            "{} updated ({}).",
            plural(touched.len(), "PR", "PRs"),
            list(&touched)
        ));
    }
    if result.comments_pushed > 0 || result.merges_attempted > 0 {
        parts.push(format!(
            "{} pushed, {} attempted.",
            plural(result.comments_pushed as usize, "comment", "comments"),
            plural(result.merges_attempted as usize, "merge", "merges")
        ));
    }
    parts.extend(gate_outcomes.iter().cloned());
    if !result.failures.is_empty() {
        parts.push(format!(
            "Failed: {}.",
            result
                .failures
                .iter()
                .map(|f| format!("{} ({})", f.target, f.root_cause))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(s) = &result.summary {
        parts.push(s.clone());
    }
    if let Some(e) = error {
        parts.push(format!("Errored — {}.", e.trim_end_matches('.')));
    }
    if parts.is_empty() {
        parts.push(if empty {
            "nothing dispatched.".into()
        } else {
            "no changes reported.".into()
        });
    }
    // The skill's summary may end without a full stop: a sentence after it
    // must not run on from it ("Tests failed on #1 Errored — …").
    let last = parts.len() - 1;
    for part in &mut parts[..last] {
        if !part.ends_with(['.', '!', '?']) {
            part.push('.');
        }
    }
    parts.join(" ")
}

/// What the `end` half accounts: the iteration `journal` opened, the lock
/// held for it, the budget as it stood, and what the work reported.
pub(crate) struct Finishing<'a> {
    pub journal: &'a Journal,
    pub held: HeldLock,
    pub budget: Budget,
    pub result: SkillResult,
    /// Why the work failed, if it did.
    pub error: Option<String>,
    pub work: &'a WorkReport,
    /// Nothing was dispatched (no journal or exchange exists for this tick).
    pub empty: bool,
    /// Whom the error, if any, fails.
    pub blame: Blame,
}

/// A failed work tick that holds claims asks the tracker, before they are
/// released, for open PRs closing an issue of its request that its skill
/// never reported (opened, then failed): such a PR is the tick's, counted
/// as recovery counts one after a kill, and its issue's claim stands — a
/// clone that read its backlog before the PR existed would otherwise work
/// the issue a second time. `true` when the tracker could not be asked:
/// then every claim stands until its lease ends.
fn failed_but_reached(
    ctx: &mut Ctx<'_, '_>,
    journal: &Journal,
    mut result: SkillResult,
    failed: bool,
) -> (SkillResult, bool) {
    let holds = journal.claims.as_ref().is_some_and(|c| !c.held.is_empty());
    if !failed || !holds {
        return (result, false);
    }
    let before: Vec<u64> = result.prs.iter().map(|p| p.number).collect();
    match super::found::opened_unreported(ctx, journal, &mut result) {
        Ok(None) => (result, false),
        Ok(Some(_)) => {
            let found: Vec<u64> = result
                .prs
                .iter()
                .map(|p| p.number)
                .filter(|n| !before.contains(n))
                .collect();
            let found = list(&found);
            ctx.note(format!(
                "Found on the tracker: {found} closing an issue of this tick's request, opened but not reported before the tick failed; the claims of the issues it closes stand"
            ));
            ctx.claim_log.standing_why = Some(format!(
                "the tick failed after opening {found}, which its skill did not report"
            ));
            (result, false)
        }
        Err(e) => {
            ctx.note(format!(
                "Claims left standing until their lease ends: the tracker could not be asked whether this failed tick opened a PR ({})",
                e.message
            ));
            ctx.claim_log.standing_why = Some(
                "the tick failed and the tracker could not be asked whether it opened a PR".into(),
            );
            (result, true)
        }
    }
}

/// The `end` half: accounts the result for the iteration the journal
/// opened, records it, reports it and releases the lock.
pub(crate) fn finish(ctx: &mut Ctx<'_, '_>, done: Finishing<'_>) -> Result<Concluded, Failure> {
    let Finishing {
        journal,
        held,
        mut budget,
        result,
        error,
        work,
        empty,
        blame,
    } = done;
    let mut error = explain_error(ctx, journal, error);
    let started = clock::parse(&journal.started_at).unwrap_or(ctx.started);
    let (result, tracker_unasked) = failed_but_reached(ctx, journal, result, error.is_some());
    let Verified {
        result,
        unknown,
        closes,
    } = verify_prs(ctx, result)?;
    let delta = count_iteration(ctx, &mut budget, &result, journal);
    let chain = check_contract(ctx.cfg.skill, journal, &result, &mut error);
    merged_on_hold(ctx, journal, &result, &mut error);
    count_qmd(&mut budget, work, error.is_none());
    let tracked = merge_tracked(&journal.tracked_prs, &result.prs);
    let worktrees = worktrees_after(journal, &result);
    let windows = super::windows::after_work(ctx, journal, &result, error.as_deref())?;
    let mut failures = reported_failures(&result);
    refuse_unknown(ctx, &unknown, &mut failures, &mut error);
    if let Some(by) = &work.turn_ended_by {
        error.get_or_insert_with(|| turn_ended(by));
    } else if let Some(limit) = &windows.limited {
        // A window's limit fails no target: the work never got to try.
        failures.clear();
        error.get_or_insert_with(|| limit.clone());
    } else if let Some(why) = &error
        && blame == Blame::Targets
    {
        blame_targets(journal, work, why, &mut failures);
    }
    let mut fired = exit_stops(ctx, &budget, work, journal.single_pr.is_some())?;
    fired.extend(windows.fired);
    // Work that reached the tracker keeps its claim even when the tick
    // failed: the issues its PRs close (reported or found), the PRs it
    // touched — and every claim when the tracker could not be asked.
    let reached: Vec<u64> = if tracker_unasked {
        journal
            .claims
            .iter()
            .flat_map(|c| c.held.iter().map(|h| h.number))
            .collect()
    } else {
        closes
            .iter()
            .copied()
            .chain(result.prs.iter().map(|p| p.number))
            .collect()
    };
    super::claims::release_at_end(ctx, journal, error.is_none(), &reached);
    let outcome = if !fired.is_empty() {
        Outcome::Halted
    } else if error.is_some() {
        Outcome::Errored
    } else {
        Outcome::Ok
    };
    record::finish_budget(
        ctx,
        &mut budget,
        journal.iteration,
        started,
        &fired,
        &journal.gates,
    );
    ctx.tick_cost = (result.agent_cost_usd).map(|agent| crate::tick::report::TickCost {
        engine: delta.dollars,
        agent,
    });
    let mut shown = journal.shown.clone();
    shown.outcome = outcome_line(&result, &journal.gate_outcomes, error.as_deref(), empty);
    let mut line = Record::of_journal(ctx, journal, outcome, BudgetSnapshot::from(&budget));
    line.started_at = clock::format(started);
    line.fired = &fired;
    line.delta = delta;
    line.tracked = tracked;
    line.worktrees = worktrees;
    line.failures = failures;
    line.chain = chain;
    line.error = error;
    line.turn_ended_by = work.turn_ended_by.clone();
    record::append(ctx, line)?;
    record::save_budget(ctx, &budget)?;
    close_iteration(ctx, journal, empty)?;
    ctx.show(
        &shown,
        &Ending {
            iteration: journal.iteration,
            started,
            budget: Some(&budget),
            fired: &fired,
        },
    )?;
    ctx.release(Some(held));
    Ok(Concluded {
        code: if fired.is_empty() {
            exit::TICK_DONE
        } else {
            exit::LOOP_ENDED
        },
        iteration: journal.iteration,
        outcome,
        fired,
        budget: Some(budget),
        skipped_for_claims: false,
    })
}

/// The variable that names the result file to the skill: how a root cause
/// names that file.
const RESULT_VAR: &str = "SDD_LOOP_RESULT";

/// The iteration's error as recorded, and a `help:` line on stderr for a
/// failure the engine detected. A missing or invalid result is reported
/// with this iteration's result path, which differs every iteration and
/// is gone once the tick ends: it is named [`RESULT_VAR`] instead, so the
/// same failure twice is the same root cause and the repeated-failure gate
/// fires (wrapped-skill.md "Exit status and output").
fn explain_error(
    ctx: &mut Ctx<'_, '_>,
    journal: &Journal,
    error: Option<String>,
) -> Option<String> {
    let error = error?;
    let path = Exchange::for_iteration(&ctx.paths, journal.iteration).result_path();
    let path = path.display().to_string();
    let help = if error.starts_with(NOT_STARTED) {
        // The tick ends on this error, with the setting to fix.
        None
    } else if error.starts_with(STALLED) {
        let secs = ctx.cfg.stall_timeout.as_secs();
        Some(format!(
            "the skill printed no line and appended no event for {secs} s (--stall-timeout {secs}): have it print progress or append a `progress` event to SDD_LOOP_EVENTS while it works, or raise --stall-timeout"
        ))
    } else if error.contains(&path) {
        Some(format!(
            "the skill writes its result to the file {RESULT_VAR} names before it exits (removed when the tick ends); the format is `sdd-loop schema skill-result`"
        ))
    } else {
        None
    };
    if let Some(help) = help {
        let _ = writeln!(ctx.diag, "help: {}", ctx.inputs.redactor.apply(&help));
    }
    Some(error.replace(&path, RESULT_VAR))
}

/// Folds the result into the budget and counts the iteration; returns
/// its deltas.
fn count_iteration(
    ctx: &mut Ctx<'_, '_>,
    budget: &mut Budget,
    result: &SkillResult,
    journal: &Journal,
) -> Delta {
    let delta = add(ctx, budget, result, journal.single_pr);
    budget.iterations_used = budget.iterations_used.saturating_add(1);
    if let Some(n) = journal.single_pr {
        // Single-PR mode: the watched PR is the only one ever touched.
        budget.prs_touched.insert(pr_ref(n));
    }
    delta
}

/// The contract checks on what the work reported (ADR-0010's one review
/// round, the chain): a violation is the iteration's error unless it
/// already has one. Returns the chain.
fn check_contract(
    skill: Skill,
    journal: &Journal,
    result: &SkillResult,
    error: &mut Option<String>,
) -> Chain {
    let mut violations = Vec::new();
    for r in &result.review_rounds {
        if r.rounds > 1 {
            violations.push(format!(
                "contract violation: {} review rounds on PR #{} in one tick (ADR-0010 allows one)",
                r.rounds, r.pr
            ));
        }
    }
    let chain = chain_of(skill, journal.request.no_chain, result, &mut violations);
    if error.is_none() && !violations.is_empty() {
        *error = Some(violations.join("; "));
    }
    chain
}

/// A PR the post-feedback-merge gate held (`hold`: `merge_allowed` false
/// in the request) that is merged all the same — reported so, or merged on
/// the tracker now (a skill need not say what it did): the skill overrode
/// the user's answer, a contract violation on the iteration's error.
fn merged_on_hold(
    ctx: &Ctx<'_, '_>,
    journal: &Journal,
    result: &SkillResult,
    error: &mut Option<String>,
) {
    let merged: Vec<String> = journal
        .request
        .prs
        .iter()
        .filter(|p| !p.merge_allowed)
        .filter(|p| {
            let reported = result
                .prs
                .iter()
                .any(|r| r.number == p.number && r.state == PrState::Merged);
            reported
                || ctx
                    .tracker
                    .pull(p.number)
                    .is_ok_and(|pull| pull.state == PrState::Merged)
        })
        .map(|p| format!("#{}", p.number))
        .collect();
    if merged.is_empty() {
        return;
    }
    let violation = format!(
        "contract violation: PR {} merged although the post-feedback-merge gate answered hold (merge_allowed was false)",
        merged.join(", ")
    );
    *error = Some(match error.take() {
        Some(e) => format!("{e}; {violation}"),
        None => violation,
    });
}

/// The qmd counter (#11): up on a qmd signal, reset by a clean iteration.
fn count_qmd(budget: &mut Budget, work: &WorkReport, clean: bool) {
    if work.qmd.is_some() {
        budget.qmd_failures_consecutive = budget.qmd_failures_consecutive.saturating_add(1);
    } else if clean {
        budget.qmd_failures_consecutive = 0;
    }
}

/// The journal's worktrees, updated by those the work reported.
fn worktrees_after(journal: &Journal, result: &SkillResult) -> Vec<ActiveWorktree> {
    let mut worktrees = journal.worktrees.clone();
    for w in &result.worktrees {
        worktrees.retain(|x| x.path != w.path);
        worktrees.push(ActiveWorktree {
            path: w.path.clone(),
            branch: w.branch.clone(),
            head_sha: w.head_sha.clone(),
            extra: Default::default(),
        });
    }
    worktrees
}

/// The failures the work reported itself.
fn reported_failures(result: &SkillResult) -> Vec<FailureRecord> {
    result
        .failures
        .iter()
        .map(|f| FailureRecord {
            target: f.target.clone(),
            root_cause: f.root_cause.clone(),
        })
        .collect()
}

/// PRs the work reported that the tracker does not have: each a failure,
/// and together the iteration's error unless it already has one.
fn refuse_unknown(
    ctx: &mut Ctx<'_, '_>,
    unknown: &[u64],
    failures: &mut Vec<FailureRecord>,
    error: &mut Option<String>,
) {
    if unknown.is_empty() {
        return;
    }
    let why = format!(
        "the skill reported {} the tracker does not have",
        list(unknown)
    );
    for n in unknown {
        failures.push(FailureRecord {
            target: pr_ref(*n),
            root_cause: format!("reported PR #{n} does not exist on the tracker"),
        });
    }
    ctx.note(format!("{why} — not counted"));
    if error.is_none() {
        *error = Some(why);
    }
}

/// The error of an iteration whose turn `by` ended (no detail given).
fn turn_ended(by: &str) -> String {
    if by == SESSION_END {
        "the session ended before its turn did".to_owned()
    } else {
        format!("the turn ended on a model API error ({by}), not on a failure of the work")
    }
}

/// `end --turn-ended-by`'s value for a session that ended mid-turn.
pub const SESSION_END: &str = "session_end";

/// An errored iteration fails every target it dispatched that the work
/// did not report a failure for, with the error as the root cause (or
/// qmd, when that was the signal).
fn blame_targets(
    journal: &Journal,
    work: &WorkReport,
    why: &str,
    failures: &mut Vec<FailureRecord>,
) {
    let cause = if work.qmd.is_some() {
        "qmd unreachable".to_owned()
    } else {
        why.to_owned()
    };
    let request = &journal.request;
    let targets = request
        .issues
        .iter()
        .map(|i| pr_ref(i.number))
        .chain(request.prs.iter().map(|p| pr_ref(p.number)));
    for t in targets {
        if !failures.iter().any(|f| f.target == t) {
            failures.push(FailureRecord {
                target: t,
                root_cause: cause.clone(),
            });
        }
    }
}

/// The exit stop conditions (#4 overshoot, #8, #11, #12), each noted;
/// a stop request is consumed.
fn exit_stops(
    ctx: &mut Ctx<'_, '_>,
    budget: &Budget,
    work: &WorkReport,
    single_pr: bool,
) -> Result<Vec<Fired>, Failure> {
    let mut fired = Vec::new();
    let stop_file = ctx.paths.stop_request();
    if let Some(kind) = work.interrupted {
        let message = match kind {
            InterruptKind::Signal(sig) => {
                format!("Interrupted (signal {sig}) — the iteration drained and was recorded")
            }
            InterruptKind::StopFile => format!(
                "Stop requested ({} present) — the iteration drained and was recorded",
                ctx.rel(&stop_file)
            ),
        };
        if kind == InterruptKind::StopFile {
            files::remove_if_present(&stop_file)?;
        }
        fired.push(Fired::new(StopCause::UserInterrupt, message));
    } else if stop_file.exists() {
        files::remove_if_present(&stop_file)?;
        fired.push(Fired::new(
            StopCause::UserInterrupt,
            "Stop requested during the iteration — stopping after it",
        ));
    }
    fired.extend(stop::budget_on_exit(budget, single_pr));
    if budget.qmd_failures_consecutive >= 2 {
        let captured = work.qmd.clone().unwrap_or_default();
        fired.push(Fired::new(
            StopCause::QmdUnreachable,
            stop::qmd_message(&captured),
        ));
    }
    for f in &fired {
        ctx.note(f.message.clone());
    }
    Ok(fired)
}

/// The recorded iteration's journal and exchange go.
fn close_iteration(ctx: &Ctx<'_, '_>, journal: &Journal, empty: bool) -> Result<(), Failure> {
    if !empty {
        Journal::remove_recorded(&ctx.paths.inflight())?;
        let _ = Exchange::for_iteration(&ctx.paths, journal.iteration).remove();
    }
    ctx.cfg.crash.hit("after-journal-removed");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_without_a_full_stop_ends_before_the_next_sentence() {
        let result = SkillResult {
            summary: Some("Tests failed on #1".into()),
            ..SkillResult::default()
        };
        assert_eq!(
            outcome_line(&result, &[], Some("skill exited 1: boom"), false),
            "Tests failed on #1. Errored — skill exited 1: boom."
        );
        assert_eq!(
            outcome_line(&result, &[], None, false),
            "Tests failed on #1",
            "the last part is the skill's own words"
        );
    }
}
