//! What an in-session tick did to the world, found the way the agent
//! adapters find it (issue "the contract enforced
//! in-session"): a session's reports are not trusted to be complete.
//! Measured before this existed: a PR the model opened with `curl` and
//! never named to `end` was not counted, so `--max-prs 1` did not stop the
//! next tick.
//!
//! `begin` takes the adapters' snapshot ([`crate::agent::world::snapshot`])
//! of a session tick — remote branch heads, the tracker's open PRs, the
//! comments on the PRs the tick is about, the token's login — and keeps it
//! in the exchange directory; `end` compares the world with it
//! ([`crate::agent::world::discover`]) and adds every PR, comment and
//! merge found there to what the session reported (a reported PR keeps
//! its report; counts take the larger of the two). A tick recovered after
//! its session died is compared too (`load::recover` reads the same file).
//!
//! A project whose remote cannot be listed (no clone, no `origin`) is
//! snapshot without branch heads, and `end` then ignores the heads too —
//! otherwise every branch would look new at `end`. Without heads, a work
//! tick's PRs are found by the `Closes #N` of their body alone.

use std::collections::BTreeMap;
use std::path::Path;

use super::Failure;
use super::ctx::Ctx;
use crate::agent::world::{self, Before};
use crate::exit;
use crate::state::exchange::Exchange;
use crate::state::history::PrState;
use crate::state::journal::Journal;
use crate::state::protocol::{SkillRequest, SkillResult};
use crate::world::git::{Git, GitError, WorktreeState};

/// The remote's branch heads as already listed: none when it cannot be
/// listed, or the one listing `begin` made to find out that it can (a
/// second `git ls-remote` would be a second round trip to the remote).
#[derive(Debug)]
struct Listed<'g> {
    git: &'g dyn Git,
    heads: BTreeMap<String, String>,
}

impl Git for Listed<'_> {
    fn remote_heads(
        &self,
        remote: &str,
        branches: &[String],
    ) -> Result<BTreeMap<String, String>, GitError> {
        self.git.remote_heads(remote, branches)
    }
    fn worktree(&self, path: &Path) -> WorktreeState {
        self.git.worktree(path)
    }
    fn remote_url(&self, remote: &str) -> Option<String> {
        self.git.remote_url(remote)
    }
    fn heads(&self, _: &str) -> Result<BTreeMap<String, String>, GitError> {
        Ok(self.heads.clone())
    }
    fn has_commit(&self, sha: &str) -> bool {
        self.git.has_commit(sha)
    }
}

/// The world before a session tick's work, for `request`.
pub(crate) fn snapshot(ctx: &mut Ctx<'_, '_>, request: &SkillRequest) -> Result<Before, Failure> {
    let remote = ctx.cfg.remote.clone();
    let git = ctx.git;
    let heads = git.heads(&remote).unwrap_or_else(|e| {
        ctx.note(format!(
            "The remote {remote} cannot be listed ({e}): end finds this tick's PRs by the issues their body closes, not by new branches"
        ));
        BTreeMap::new()
    });
    let listed = Listed { git, heads };
    world::snapshot(ctx.tracker, &listed, &remote, request).map_err(|e| {
        Failure::new(
            exit::UNAVAILABLE,
            format!("cannot note the tracker's PRs before the work: {e} — nothing was changed"),
            "run begin again when the tracker answers",
        )
    })
}

/// Keeps the snapshot beside the request; a tick without it is ended
/// from the session's reports alone, which a note says.
pub(crate) fn keep(ctx: &mut Ctx<'_, '_>, before: &Before, exchange: &Exchange) {
    if let Err(e) = before.save(exchange) {
        ctx.note(format!(
            "The world before the work could not be kept ({e}): end counts only the PRs the session reports"
        ));
    }
}

/// Adds to `result` what the world shows this tick did, compared with
/// the snapshot `begin` kept (none: a tick begun before snapshots, or a
/// wrapper tick — nothing to add).
pub(crate) fn add(
    ctx: &mut Ctx<'_, '_>,
    exchange: &Exchange,
    request: &SkillRequest,
    result: &mut SkillResult,
) -> Result<(), Failure> {
    let Some(before) = Before::load(exchange) else {
        return Ok(());
    };
    let remote = ctx.cfg.remote.clone();
    let base = ctx.git;
    let no_heads = Listed {
        git: base,
        heads: BTreeMap::new(),
    };
    let git: &dyn Git = if before.heads.is_empty() {
        &no_heads
    } else {
        base
    };
    let found = world::discover(&before, ctx.tracker, git, &remote, request).map_err(|e| {
        Failure::new(
            exit::UNAVAILABLE,
            format!("cannot find this tick's PRs on the tracker: {e} — nothing was changed"),
            "run end again when the tracker answers; the iteration stays open",
        )
    })?;
    for n in &found.notes {
        ctx.note(format!("Found in the world: {n}"));
    }
    let mut unreported = Vec::new();
    for pr in found.prs {
        if !result.prs.iter().any(|p| p.number == pr.number) {
            unreported.push(format!(
                "#{}{}",
                pr.number,
                if pr.opened { " (opened)" } else { "" }
            ));
            result.prs.push(pr);
        }
    }
    if !unreported.is_empty() {
        ctx.note(format!(
            "Found on the tracker, not reported by the session: {}",
            unreported.join(", ")
        ));
    }
    result.comments_pushed = result.comments_pushed.max(found.comments);
    result.merges_attempted = result.merges_attempted.max(found.merges);
    Ok(())
}

/// The PRs a work iteration opened and never reported: one killed
/// between its skill opening a PR and reporting it (its `pr` event), or
/// whose skill opened it and then failed, left that PR on the tracker and
/// nowhere else. An open PR that closes an issue of the iteration's
/// request is its — the request held only issues no open PR closed, and
/// their claims kept other clones off them. Such PRs are added to
/// `result`; what to add to the recovery's note, if any.
pub(super) fn opened_unreported(
    ctx: &Ctx<'_, '_>,
    journal: &Journal,
    result: &mut crate::state::protocol::SkillResult,
) -> Result<Option<String>, Failure> {
    if journal.request.skill != crate::state::paths::Skill::Work
        || journal.request.issues.is_empty()
    {
        return Ok(None);
    }
    let asked: std::collections::BTreeSet<u64> =
        journal.request.issues.iter().map(|i| i.number).collect();
    let mut found = Vec::new();
    for pull in ctx.tracker.open_pulls()? {
        if result.prs.iter().any(|p| p.number == pull.number) || pull.closes().is_disjoint(&asked) {
            continue;
        }
        found.push(format!("#{}", pull.number));
        result.prs.push(crate::state::protocol::PrReport {
            number: pull.number,
            branch: pull.head_ref.clone(),
            head_sha_at_start: None,
            head_sha_at_end: Some(pull.head_sha.clone()),
            state: PrState::Open,
            opened: true,
        });
    }
    Ok((!found.is_empty()).then(|| {
        format!(
            " and the tracker, where {} closing an issue of its request had not been reported",
            found.join(", ")
        )
    }))
}
