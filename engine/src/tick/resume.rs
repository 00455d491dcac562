//! Step 3, `--resume` only: the run's tracked PRs and worktrees, inspected
//! exactly once from the typed inputs of the last history line (SPEC-0020
//! "Resume Contract Reconciliation"): an open PR whose remote head still
//! equals `head_sha_at_iteration_end` is re-attached silently, a moved one
//! asks the resume-divergence gate, a merged or closed one gets its
//! one-line note; worktrees are reported, never cleaned.

use std::path::Path;

use super::Failure;
use super::ctx::{Ctx, short};
use crate::rules::gates::Question;
use crate::rules::stop::{Fired, StopCause};
use crate::state::history::{HistoryLine, PrState, TrackedPr};
use crate::world::git::{WorktreeState, same_commit};

/// The PRs to carry, or the stop a gate answered.
pub(crate) fn reconcile(
    ctx: &mut Ctx<'_, '_>,
    last: Option<&HistoryLine>,
) -> Result<Result<Vec<TrackedPr>, Fired>, Failure> {
    let mut reattached = Vec::new();
    let Some(last) = last else {
        return Ok(Ok(reattached));
    };
    let tracked = last.tracked_prs.clone().unwrap_or_default();
    let open: Vec<&TrackedPr> = tracked
        .iter()
        .filter(|p| p.state_at_end == PrState::Open)
        .collect();
    for pr in tracked.iter().filter(|p| p.state_at_end != PrState::Open) {
        ctx.note(format!(
            "PR #{} was already {} at prior iteration end — not re-attaching",
            pr.number,
            pr.state_at_end.as_str()
        ));
    }
    if !open.is_empty() {
        let branches: Vec<String> = open.iter().map(|p| p.branch.clone()).collect();
        let heads = ctx.git.remote_heads(&ctx.cfg.remote, &branches)?;
        for pr in open {
            let current = heads.get(&pr.branch).cloned();
            let recorded = pr.head_sha_at_iteration_end.clone().unwrap_or_default();
            let same = current
                .as_deref()
                .is_some_and(|c| same_commit(&recorded, c));
            let mut attach = pr.clone();
            attach.head_sha_at_iteration_start = current.clone();
            attach.head_sha_at_iteration_end = current.clone();
            if same {
                reattached.push(attach);
                continue;
            }
            let answer = ctx.ask(Question::resume_divergence(pr.number))?;
            match answer.option {
                "re-attach" => reattached.push(attach),
                "skip" => ctx.note(format!(
                    "PR #{} diverged (recorded {}, remote {}) — skipped, not re-attached",
                    pr.number,
                    short(&recorded),
                    current.as_deref().map_or("absent".to_owned(), short)
                )),
                _ => {
                    return Ok(Err(Fired::new(
                        StopCause::PriorGateStop,
                        "Gate resume-divergence answered stop",
                    )));
                }
            }
        }
    }
    for wt in last.active_worktrees.clone().unwrap_or_default() {
        let verdict = match ctx.git.worktree(Path::new(&wt.path)) {
            WorktreeState::Missing => Some("missing"),
            WorktreeState::At { branch, head }
                if branch != wt.branch || !same_commit(&wt.head_sha, &head) =>
            {
                Some("diverged")
            }
            WorktreeState::At { .. } => None,
        };
        if let Some(v) = verdict {
            ctx.note(format!(
                "Worktree {} {v} — leaving in place per worktree-preservation rule",
                wt.path
            ));
        }
    }
    Ok(Ok(reattached))
}
