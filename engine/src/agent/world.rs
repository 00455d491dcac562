//! What an agent did to the world, found without a protocol:
//! agents never say which PRs they opened, so the adapter looks.
//!
//! [`snapshot`] is taken before the agent runs — every branch head on the
//! remote (`git ls-remote --heads`), the tracker's open PRs, the comment
//! ids on the PRs the tick is about, and the login the tracker token acts
//! as — and kept in the exchange directory ([`SNAPSHOT_FILE`]), so a tick
//! killed mid-agent is recovered with the same comparison. [`discover`]
//! compares the world after with it:
//! - work: open PRs whose body closes an assigned issue, or whose head
//!   branch appeared or moved on the remote; and PRs open before that
//!   closed or merged during the tick and were about an assigned issue or
//!   had their branch moved;
//! - review: the assigned PRs whose head moved, state changed, or that got
//!   new comments by the login; plus PRs opened on a new branch;
//! - comments: new review comments, replies and conversation comments by
//!   the login on those PRs; merges: those PRs merged during the tick by
//!   the login (any author when the tracker cannot say who the login is).
//!
//! These feed the counters exactly as a skill's protocol reports do. What
//! the world does not show cannot be counted: a merge the tracker refused
//! leaves no trace, and a PR opened and merged within one tick with its
//! branch deleted is not found.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::state::exchange::Exchange;
use crate::state::files;
use crate::state::history::PrState;
use crate::state::paths::Skill;
use crate::state::protocol::{PrReport, SkillRequest};
use crate::world::git::Git;
use crate::world::tracker::{Pull, Tracker, TrackerError};

/// The snapshot's file in the exchange directory.
pub const SNAPSHOT_FILE: &str = "agent-before.json";

/// An open PR as it was before the agent ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeenPr {
    pub branch: String,
    pub head_sha: String,
    /// Issues its body closes.
    pub closes: Vec<u64>,
}

/// The world before the agent ran.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Before {
    /// Branch heads on the remote.
    pub heads: BTreeMap<String, String>,
    pub open: BTreeMap<u64, SeenPr>,
    /// Comment ids (review comments, replies, conversation comments) on
    /// the PRs the tick is about.
    pub comments: BTreeMap<u64, BTreeSet<u64>>,
    /// The login the tracker token acts as, when the tracker says.
    pub login: Option<String>,
}

/// What the comparison found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub prs: Vec<PrReport>,
    pub comments: u64,
    pub merges: u64,
    /// One line each: what could not be attributed, and why.
    pub notes: Vec<String>,
}

fn tracker_err(what: &str) -> impl FnOnce(TrackerError) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Every comment on PR `n`, review and conversation.
fn comments_on(
    tracker: &dyn Tracker,
    n: u64,
) -> Result<Vec<crate::world::tracker::ReviewComment>, String> {
    let mut all = tracker
        .review_comments(n)
        .map_err(tracker_err("list review comments"))?;
    all.extend(
        tracker
            .issue_comments(n)
            .map_err(tracker_err("list conversation comments"))?,
    );
    Ok(all)
}

/// The PRs whose comments the tick watches from the start.
fn watched(request: &SkillRequest, open: &BTreeMap<u64, SeenPr>) -> BTreeSet<u64> {
    let assigned: BTreeSet<u64> = request.issues.iter().map(|i| i.number).collect();
    match request.skill {
        Skill::Review => request.prs.iter().map(|p| p.number).collect(),
        Skill::Work => open
            .iter()
            .filter(|(_, p)| p.closes.iter().any(|i| assigned.contains(i)))
            .map(|(n, _)| *n)
            .collect(),
    }
}

/// The world before an agent runs for `request`.
pub fn snapshot(
    tracker: &dyn Tracker,
    git: &dyn Git,
    remote: &str,
    request: &SkillRequest,
) -> Result<Before, String> {
    let heads = git.heads(remote).map_err(|e| e.to_string())?;
    let open: BTreeMap<u64, SeenPr> = tracker
        .open_pulls()
        .map_err(tracker_err("list open pull requests"))?
        .into_iter()
        .map(|p| {
            let closes = p.closes().into_iter().collect();
            (
                p.number,
                SeenPr {
                    branch: p.head_ref,
                    head_sha: p.head_sha,
                    closes,
                },
            )
        })
        .collect();
    let mut comments = BTreeMap::new();
    for n in watched(request, &open) {
        let ids = comments_on(tracker, n)?.into_iter().map(|c| c.id).collect();
        comments.insert(n, ids);
    }
    Ok(Before {
        heads,
        open,
        comments,
        login: tracker.login().ok(),
    })
}

impl Before {
    /// Keeps the snapshot beside the request, for recovery.
    pub fn save(&self, exchange: &Exchange) -> Result<(), files::FileError> {
        let mut json = serde_json::to_vec_pretty(self).expect("snapshots serialise");
        json.push(b'\n');
        files::write_atomic(&exchange.dir.join(SNAPSHOT_FILE), &json)
    }

    /// The snapshot an agent tick left, if any.
    pub fn load(exchange: &Exchange) -> Option<Self> {
        let bytes = files::read_bytes(&exchange.dir.join(SNAPSHOT_FILE)).ok()??;
        serde_json::from_slice(&bytes).ok()
    }

    fn moved(&self, branch: &str, after: &BTreeMap<String, String>) -> bool {
        after.contains_key(branch) && self.heads.get(branch) != after.get(branch)
    }
}

/// What the agent did, from the world now compared with `before`.
pub fn discover(
    before: &Before,
    tracker: &dyn Tracker,
    git: &dyn Git,
    remote: &str,
    request: &SkillRequest,
) -> Result<Found, String> {
    let after = git.heads(remote).map_err(|e| e.to_string())?;
    let open_now = tracker
        .open_pulls()
        .map_err(tracker_err("list open pull requests"))?;
    let assigned: BTreeSet<u64> = request.issues.iter().map(|i| i.number).collect();
    let mut candidates: BTreeMap<u64, Pull> = BTreeMap::new();
    let is_new_branch = |b: &str| after.contains_key(b) && !before.heads.contains_key(b);
    for p in &open_now {
        let about_assigned = p.closes().iter().any(|i| assigned.contains(i));
        let opened_on_new_branch =
            !before.open.contains_key(&p.number) && is_new_branch(&p.head_ref);
        // A PR on a branch that moved during the tick is the tick's even
        // when it closes no issue of the request (opened with `curl`,
        // say) — unless its head commit was never in this clone: then
        // another clone of the repository pushed it (issue 32).
        let moved_from_here = || before.moved(&p.head_ref, &after) && git.has_commit(&p.head_sha);
        let relevant = match request.skill {
            Skill::Work => about_assigned || moved_from_here(),
            Skill::Review => opened_on_new_branch,
        };
        if relevant {
            candidates.insert(p.number, p.clone());
        }
    }
    let open_numbers: BTreeSet<u64> = open_now.iter().map(|p| p.number).collect();
    let mut look_up: BTreeSet<u64> = match request.skill {
        Skill::Work => before
            .open
            .iter()
            .filter(|(n, seen)| {
                !open_numbers.contains(n)
                    && (seen.closes.iter().any(|i| assigned.contains(i))
                        || after.get(&seen.branch) != Some(&seen.head_sha))
            })
            .map(|(n, _)| *n)
            .collect(),
        Skill::Review => request.prs.iter().map(|p| p.number).collect(),
    };
    look_up.retain(|n| !candidates.contains_key(n));
    let mut looked: BTreeMap<u64, Pull> = BTreeMap::new();
    for n in look_up {
        let p = tracker
            .pull(n)
            .map_err(tracker_err(&format!("look up PR #{n}")))?;
        looked.insert(n, p);
    }

    let mut found = Found::default();
    if before.login.is_none() {
        found.notes.push(
            "the tracker did not say which login its token acts as: every new comment and merge on this tick's PRs is counted".to_owned(),
        );
    }
    let by_login = |author: &str| {
        before
            .login
            .as_deref()
            .is_none_or(|l| l.eq_ignore_ascii_case(author))
    };
    let mut comment_scope: BTreeSet<u64> = before.comments.keys().copied().collect();
    comment_scope.extend(candidates.keys());
    comment_scope.extend(looked.keys());
    let mut commented: BTreeMap<u64, u64> = BTreeMap::new();
    for n in comment_scope {
        let seen = before.comments.get(&n);
        let new = comments_on(tracker, n)?
            .into_iter()
            .filter(|c| by_login(&c.author) && seen.is_none_or(|s| !s.contains(&c.id)))
            .count() as u64;
        if new > 0 {
            commented.insert(n, new);
        }
    }
    for (n, p) in looked {
        let seen = before.open.get(&n);
        let assignment = request.prs.iter().find(|a| a.number == n);
        let head_before = seen
            .map(|s| s.head_sha.as_str())
            .or(assignment.and_then(|a| a.head_sha.as_deref()));
        let changed = (p.state != PrState::Open && (seen.is_some() || assignment.is_some()))
            || head_before.is_some_and(|h| !crate::world::git::same_commit(h, &p.head_sha))
            || commented.contains_key(&n);
        let relevant = match request.skill {
            Skill::Work => true,
            Skill::Review => changed,
        };
        if relevant {
            candidates.insert(n, p);
        }
    }
    for (n, p) in &candidates {
        let seen = before.open.get(n);
        let opened = seen.is_none() && !request.prs.iter().any(|a| a.number == *n);
        found.comments += commented.get(n).copied().unwrap_or(0);
        if p.state == PrState::Merged && p.merged_by.as_deref().is_none_or(&by_login) {
            found.merges += 1;
        }
        found.prs.push(PrReport {
            number: *n,
            branch: p.head_ref.clone(),
            head_sha_at_start: if opened {
                None
            } else {
                seen.map(|s| s.head_sha.clone()).or_else(|| {
                    request
                        .prs
                        .iter()
                        .find(|a| a.number == *n)
                        .and_then(|a| a.head_sha.clone())
                })
            },
            head_sha_at_end: Some(p.head_sha.clone()).filter(|s| !s.is_empty()),
            state: p.state,
            opened,
        });
    }
    Ok(found)
}
