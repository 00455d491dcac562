//! The plan is what was claimed (issue 32, `docs/src/claims.md`): before a tick
//! works an issue (a review tick a PR) it claims it on the shared remote
//! ([`crate::world::claim`]), so a loop in another clone — or on another
//! machine — never works the same one.
//!
//! - The candidates are taken in plan order, up to what the tick would
//!   plan, in one push, as if free (create-only; each ref under its own
//!   lease, so the remote answers for each): a clone alone on its backlog
//!   spends this one round trip. Only when one of them exists already is
//!   every claim of the skill read (one fetch) and the rest taken in
//!   order, in one more push; a take lost to another clone in the same
//!   instant sends the tick to the next candidate.
//! - A claim held by another clone is left alone until its lease is past
//!   its expiry by the skew margin ([`Timing::takeable`]); then it is
//!   taken over with a compare-and-swap against the commit that was read.
//!   A claim of this same clone (a tick of it that died, or finished work
//!   left standing) is taken back the same way at once: the checkout's
//!   lock says no other tick of this clone runs. Expired claims that are
//!   no candidate are swept in the same push. A clone remembers the claims
//!   it left standing ([`crate::state::standing`]): its first push takes
//!   one back against the commit it knows, and deletes those that lapsed
//!   — so a clone alone on its backlog, which never reads, leaves no refs
//!   behind.
//! - Nothing claimable: the tick is skipped like a lock skip (a
//!   `skipped_lock` line, no counter advanced, nothing spent), with a note
//!   naming who holds what until when.
//! - Failure is closed: a remote that cannot be reached, or that refuses
//!   refs under `refs/sdd-loop/` by a rule of its own, is exit 69 with
//!   nothing worked and nothing written on the tracker.
//! - `end` releases the claims of work that failed (a deletion under the
//!   same lease) and leaves those of work that succeeded standing until
//!   their lease runs out ([`release_at_end`]); a tick that halts or fails
//!   after claiming releases them before it returns. A release that
//!   cannot reach the remote leaves the claims to expire.
//!
//! The claims a tick holds travel to the work and to `end` in the journal
//! ([`Claims`]); the tick's history line says what it took, lost,
//! released and left standing (`claims`).

use std::collections::BTreeMap;

use jiff::Timestamp;

use super::Failure;
use super::ctx::Ctx;
use crate::exit;
use crate::os::clock;
use crate::state::journal::{Claims, HeldClaim};
use crate::state::paths::Skill;
use crate::state::standing::{self, Standing};
use crate::world::claim::{self, Change, ClaimError, Holder, Lease, Outcome, Remote, Seen, Timing};

/// The remote and lease a tick claims with.
pub(crate) struct Claimer {
    pub remote: Remote,
    pub timing: Timing,
    pub holder: Holder,
    pub skill: Skill,
}

impl Claimer {
    /// The claimer of this tick; `None` when claims are off.
    pub fn of(ctx: &Ctx<'_, '_>) -> Option<Self> {
        let settings = ctx.cfg.claims.as_ref()?;
        let clone_id = claim::clone_id(&ctx.cfg.root, &settings.host);
        Some(Self {
            remote: Remote {
                dir: ctx.cfg.root.clone(),
                remote: settings.remote.clone(),
                vars: ctx.cfg.environment.clone(),
                limit: settings.limit,
            },
            timing: Timing {
                lease: settings.lease,
                skew: settings.skew,
            },
            holder: Holder {
                host: settings.host.clone(),
                clone: claim::clone_name(&ctx.cfg.root),
                pid: ctx.me.pid,
                session: None,
                clone_id,
            },
            skill: ctx.cfg.skill,
        })
    }

    /// The claimer the journal's claims were taken by (for renewing and
    /// releasing them from another process).
    pub fn from_journal(
        claims: &Claims,
        skill: Skill,
        pid: u32,
        vars: BTreeMap<String, String>,
    ) -> Self {
        let (remote, timing, holder) = crate::skill::keeper::remote_of(claims, pid, vars);
        Self {
            remote,
            timing,
            holder,
            skill,
        }
    }

    /// An empty record of claims held through this claimer.
    fn journal(&self) -> Claims {
        Claims {
            remote: self.remote.remote.clone(),
            clone: self.remote.dir.clone(),
            host: self.holder.host.clone(),
            clone_id: self.holder.clone_id.clone(),
            lease_secs: self.timing.lease.as_secs(),
            skew_secs: self.timing.skew.as_secs(),
            limit_secs: self.remote.limit.as_secs(),
            held: Vec::new(),
            lost: Vec::new(),
            held_by_others: Vec::new(),
        }
    }
}

/// A candidate, as the claims read say.
enum Seat {
    /// Free, ours, or expired: takeable with this expected old value.
    Open(Option<String>),
    /// Held by another clone's unexpired lease.
    Held(Lease),
    /// A ref in our namespace that is not a lease: never taken.
    Foreign,
}

fn seat(c: &Claimer, seen: Option<&Seen>, now: Timestamp) -> Seat {
    match seen {
        None => Seat::Open(None),
        Some(Seen { lease: None, .. }) => Seat::Foreign,
        Some(Seen {
            commit,
            lease: Some(lease),
        }) => {
            if lease.holder.same_clone(&c.holder) || c.timing.takeable(lease, now) {
                Seat::Open(Some(commit.clone()))
            } else {
                Seat::Held(lease.clone())
            }
        }
    }
}

/// What claiming the candidates gave.
#[derive(Debug, Default)]
pub(crate) struct Claimed {
    /// The numbers claimed, in plan order.
    pub won: Vec<u64>,
    /// Who holds the candidates this tick could not claim.
    pub others: Vec<String>,
}

/// A push refused because someone else changed the ref first (as opposed
/// to a rule of the remote, which refuses every claim alike). Two pushes
/// of one ref at the same moment: the loser's ref transaction finds the
/// ref locked or moved, and git says `[remote rejected] (failed to update
/// ref)` or `(cannot lock ref …)` — measured with two clones released
/// from one barrier (`evals/loop/machines-ticks-at-once.yaml`).
fn lost_a_race(reason: &str) -> bool {
    [
        "stale info",
        "already exists",
        "expected",
        "fetch first",
        "non-fast-forward",
        "failed to update ref",
        "cannot lock ref",
    ]
    .iter()
    .any(|w| reason.contains(w))
}

/// Why claiming stopped the tick.
enum Stop {
    /// The remote could not be reached.
    Unreachable(ClaimError),
    /// The remote refused claim `N` by a rule of its own.
    Refused(u64, String),
}

/// At most this many expired claims are swept (deleted) with one push.
const SWEEP: usize = 50;

/// Takes `batch` (number, expected old value) in one push, with the
/// `sweep` deletions after them; the won go to `claimed` and `journal`.
/// Returns the candidates another clone got first, with git's reason.
fn push_takes(
    c: &Claimer,
    claimed: &mut Claimed,
    journal: &mut Claims,
    batch: &[(u64, Option<String>)],
    sweep: Vec<Change>,
    now: Timestamp,
) -> Result<Vec<(u64, String)>, Stop> {
    let leases: Vec<Lease> = batch
        .iter()
        .map(|(n, _)| c.timing.lease(c.skill, *n, &c.holder, now))
        .collect();
    let mut changes: Vec<Change> = batch
        .iter()
        .zip(&leases)
        .map(|((_, expected), lease)| Change::Take {
            lease: lease.clone(),
            expected: expected.clone(),
        })
        .collect();
    changes.extend(sweep);
    let outcomes = c.remote.push(&changes).map_err(Stop::Unreachable)?;
    let mut lost = Vec::new();
    // The sweep's outcomes come after the takes' and are not looked at: a
    // deletion refused means someone renewed or took that claim first.
    for ((lease, outcome), (n, _)) in leases.iter().zip(outcomes).zip(batch) {
        match outcome {
            Outcome::Done { commit } => {
                claimed.won.push(*n);
                journal.held.push(HeldClaim {
                    number: *n,
                    commit: commit.unwrap_or_default(),
                    expires_at: clock::format(lease.expires_at),
                });
            }
            Outcome::Refused { reason } if lost_a_race(&reason) => lost.push((*n, reason)),
            Outcome::Refused { reason } => return Err(Stop::Refused(*n, reason)),
        }
    }
    Ok(lost)
}

/// Claims up to `want` of `candidates`, in their order, and keeps what it
/// holds in `ctx.claims`. `Ok(None)`: claims are off.
pub(crate) fn claim(
    ctx: &mut Ctx<'_, '_>,
    candidates: &[u64],
    want: usize,
) -> Result<Option<Claimed>, Failure> {
    let Some(c) = Claimer::of(ctx) else {
        return Ok(None);
    };
    let mut journal = ctx.claims.take().unwrap_or_else(|| c.journal());
    let mut claimed = Claimed::default();
    let went = take_candidates(&c, &mut claimed, &mut journal, candidates, want, ctx.now());
    ctx.claims = Some(journal);
    match went {
        Ok(()) => Ok(Some(claimed)),
        Err(Stop::Unreachable(e)) => Err(unreachable(ctx, &e)),
        Err(Stop::Refused(n, reason)) => Err(refused(ctx, n, &reason)),
    }
}

/// The claiming itself: first the leading `want` candidates as if free
/// (create-only, no read: a clone alone on its backlog spends this one
/// push); only when one of them exists already is every claim read, and
/// the rest taken in order — claims of this clone taken back, expired ones
/// taken over, expired ones that are no candidate swept.
fn take_candidates(
    c: &Claimer,
    claimed: &mut Claimed,
    journal: &mut Claims,
    candidates: &[u64],
    want: usize,
    now: Timestamp,
) -> Result<(), Stop> {
    // This clone's own standing claims: one among the first candidates is
    // taken back against the commit it was left at; one that lapsed and is
    // no candidate is deleted in the same push.
    let file = standing::path(&c.remote.dir, c.skill);
    let mut own = Standing::load(&file);
    let first: Vec<(u64, Option<String>)> = candidates
        .iter()
        .take(want)
        .map(|n| (*n, own.commit_of(*n).map(str::to_owned)))
        .collect();
    let lapsed: Vec<HeldClaim> = own
        .claims
        .iter()
        .filter(|h| !candidates.contains(&h.number))
        .filter(|h| clock::parse(&h.expires_at).is_ok_and(|at| at <= now))
        .take(SWEEP)
        .cloned()
        .collect();
    let sweep = releases(c.skill, &lapsed);
    let lost = push_takes(c, claimed, journal, &first, sweep, now)?;
    // Whatever became of them, these are no longer standing here: taken
    // back, swept, or changed by someone else (a refusal).
    let tried: Vec<u64> = first
        .iter()
        .map(|(n, _)| *n)
        .chain(lapsed.iter().map(|h| h.number))
        .collect();
    own.forget(&tried);
    own.save(&file);
    if lost.is_empty() {
        return Ok(());
    }
    let seen = c.remote.read(c.skill).map_err(Stop::Unreachable)?;
    let mut open = Vec::new();
    for n in candidates.iter().filter(|n| !claimed.won.contains(n)) {
        match seat(c, seen.get(n), now) {
            Seat::Open(expected) => open.push((*n, expected)),
            Seat::Held(lease) => claimed.others.push(held_by(*n, &lease)),
            Seat::Foreign => claimed.others.push(format!(
                "#{n} by a ref that is not a lease ({})",
                claim::ref_name(c.skill, *n)
            )),
        }
    }
    let mut sweep: Vec<Change> = seen
        .iter()
        .filter(|(n, _)| !candidates.contains(n))
        .filter_map(|(n, s)| {
            let lease = s.lease.as_ref()?;
            let expired = if lease.holder.same_clone(&c.holder) {
                c.timing.must_stop(lease, now)
            } else {
                c.timing.takeable(lease, now)
            };
            expired.then(|| Change::Release {
                skill: c.skill,
                number: *n,
                expected: s.commit.clone(),
            })
        })
        .take(SWEEP)
        .collect();
    let mut next = open.into_iter();
    while claimed.won.len() < want {
        let batch: Vec<(u64, Option<String>)> =
            next.by_ref().take(want - claimed.won.len()).collect();
        if batch.is_empty() {
            break;
        }
        for (n, reason) in push_takes(c, claimed, journal, &batch, std::mem::take(&mut sweep), now)?
        {
            claimed.others.push(format!(
                "#{n} by another clone that took it first ({reason})"
            ));
        }
    }
    Ok(())
}

/// `#N by host:clone (pid P) until T`.
fn held_by(n: u64, lease: &Lease) -> String {
    format!(
        "#{n} by {} until {}",
        lease.holder,
        clock::format(lease.expires_at)
    )
}

fn unreachable(ctx: &Ctx<'_, '_>, e: &ClaimError) -> Failure {
    let remote = ctx
        .cfg
        .claims
        .as_ref()
        .map_or("origin", |s| s.remote.as_str());
    Failure::new(
        exit::UNAVAILABLE,
        format!("cannot claim work on the shared remote `{remote}`: {e}"),
        "nothing was worked and nothing was written on the tracker: a tick works only what it claimed. Make the remote reachable without a prompt (`sdd-loop doctor` checks it), or set SDD_LOOP_CLAIM_REMOTE=off when no other clone works this backlog",
    )
}

fn refused(ctx: &Ctx<'_, '_>, n: u64, reason: &str) -> Failure {
    let skill = ctx.cfg.skill;
    let remote = ctx
        .cfg
        .claims
        .as_ref()
        .map_or("origin", |s| s.remote.as_str());
    Failure::new(
        exit::UNAVAILABLE,
        format!(
            "the shared remote `{remote}` refused the claim {} ({reason})",
            claim::ref_name(skill, n)
        ),
        format!(
            "nothing was worked and nothing was written on the tracker: this clone must be allowed to push refs under {}/ (`sdd-loop doctor` checks it), or set SDD_LOOP_CLAIM_REMOTE=off when no other clone works this backlog",
            claim::NAMESPACE
        ),
    )
}

/// Releases the claims in `claims` except `keep`, in one push; what was
/// released goes to the tick's record. A remote that cannot be reached
/// leaves them to expire (said in a note).
pub(crate) fn release(ctx: &mut Ctx<'_, '_>, claims: &mut Claims, keep: &[u64], pid: u32) {
    let going: Vec<HeldClaim> = claims
        .held
        .iter()
        .filter(|h| !keep.contains(&h.number))
        .cloned()
        .collect();
    if going.is_empty() {
        return;
    }
    let c = Claimer::from_journal(claims, ctx.cfg.skill, pid, ctx.cfg.environment.clone());
    let changes = releases(c.skill, &going);
    match c.remote.push(&changes) {
        Ok(outcomes) => {
            for (h, outcome) in going.iter().zip(outcomes) {
                match outcome {
                    Outcome::Done { .. } => ctx.claim_log.released.push(h.number),
                    Outcome::Refused { reason } => ctx.note(format!(
                        "Claim on #{} was not released: it changed on the remote ({reason}) — another clone holds it now",
                        h.number
                    )),
                }
            }
        }
        Err(e) => ctx.note(format!(
            "Claims on {} not released ({e}): they expire by themselves at the lease's end",
            super::ctx::list(&going.iter().map(|h| h.number).collect::<Vec<_>>())
        )),
    }
    claims.held.retain(|h| keep.contains(&h.number));
}

/// Releases whatever this tick claimed and still holds in `ctx.claims`
/// (a tick that halted, asked, or failed after claiming).
pub(crate) fn release_unused(ctx: &mut Ctx<'_, '_>) {
    if let Some(mut claims) = ctx.claims.take() {
        let pid = ctx.me.pid;
        release(ctx, &mut claims, &[], pid);
    }
}

/// What claiming makes of a tick's candidates.
pub(crate) enum Planned {
    /// Claims are off, or there is nothing to claim: plan as before.
    Unclaimed,
    /// These were claimed, in plan order.
    Won(Vec<u64>),
    /// Nothing could be claimed: the note naming who holds what.
    Nothing(String),
}

/// Claims up to `want` of `candidates` (issues for `work`, PRs for
/// `review`) and says what the tick may plan.
pub(crate) fn plan(
    ctx: &mut Ctx<'_, '_>,
    candidates: &[u64],
    want: usize,
) -> Result<Planned, Failure> {
    if want == 0 || candidates.is_empty() {
        return Ok(Planned::Unclaimed);
    }
    let Some(claimed) = claim(ctx, candidates, want)? else {
        return Ok(Planned::Unclaimed);
    };
    let what = match ctx.cfg.skill {
        Skill::Work => "issue",
        Skill::Review => "PR",
    };
    ctx.claim_log.remote = ctx.cfg.claims.as_ref().map(|s| s.remote.clone());
    ctx.claim_log.taken.extend(&claimed.won);
    ctx.claim_log.others.extend(claimed.others.iter().cloned());
    if let Some(journal) = ctx.claims.as_mut() {
        // For `end` in another process (a session's): its history line
        // names them too.
        journal
            .held_by_others
            .extend(claimed.others.iter().cloned());
    }
    if claimed.won.is_empty() {
        return Ok(Planned::Nothing(format!(
            "No {what} claimable — other clones hold {}",
            claimed.others.join("; ")
        )));
    }
    if !claimed.others.is_empty() {
        ctx.note(format!(
            "Claimed {}; passed over {what}s other clones hold: {}",
            super::ctx::list(&claimed.won),
            claimed.others.join("; ")
        ));
    }
    Ok(Planned::Won(claimed.won))
}

/// Releases the claims the tick took but will not work (skipped or
/// escalated at a gate, or past the PR budget), keeping `keep`.
pub(crate) fn keep_only(ctx: &mut Ctx<'_, '_>, keep: &[u64]) {
    if let Some(mut claims) = ctx.claims.take() {
        let pid = ctx.me.pid;
        release(ctx, &mut claims, keep, pid);
        ctx.claims = Some(claims);
    }
}

/// `end`: the tick's record says what was taken, lost and released. When
/// the work went wrong the claims the journal holds are released (those
/// lost while the work ran are not ours to release), so another clone may
/// take the work up at once — but for those in `reached`, work that got
/// to the tracker before it failed (an issue a PR of the tick closes, a
/// PR it touched), which stand as after success. When it succeeded they are left **standing**
/// until their lease runs out, and no push is made: a clone whose backlog
/// was read before this tick's PR existed would otherwise take the issue
/// the moment it was released and work it a second time. A standing claim
/// is this clone's to take back at once, another's once it expires; this
/// clone remembers it ([`crate::state::standing`]) and deletes it in a
/// later push once lapsed, and any clone that reads the claims sweeps it.
pub(crate) fn release_at_end(
    ctx: &mut Ctx<'_, '_>,
    journal: &crate::state::journal::Journal,
    succeeded: bool,
    reached: &[u64],
) {
    let Some(mut claims) = journal.claims.clone() else {
        return;
    };
    ctx.claim_log.remote = Some(claims.remote.clone());
    if ctx.claim_log.taken.is_empty() {
        ctx.claim_log.taken = claims
            .held
            .iter()
            .map(|h| h.number)
            .chain(claims.lost.iter().map(|l| l.number))
            .collect();
    }
    if ctx.claim_log.others.is_empty() {
        ctx.claim_log.others.clone_from(&claims.held_by_others);
    }
    // A claim whose lease ran out before the tick ended (by this clone's
    // clock, less the stop margin) was never renewed in time: another
    // clone may hold it now. It is lost, not left standing.
    let timing = claim::Timing {
        lease: std::time::Duration::from_secs(claims.lease_secs),
        skew: std::time::Duration::from_secs(claims.skew_secs),
    };
    let now = ctx.now();
    let (over, held): (Vec<HeldClaim>, Vec<HeldClaim>) = std::mem::take(&mut claims.held)
        .into_iter()
        .partition(|h| clock::parse(&h.expires_at).is_ok_and(|at| now >= timing.stop_at(at)));
    claims.held = held;
    claims
        .lost
        .extend(over.into_iter().map(|h| crate::state::journal::LostClaim {
            number: h.number,
            reason: format!(
                "its lease ran out at {} before the tick ended",
                h.expires_at
            ),
            at: clock::format(now),
        }));
    for lost in &claims.lost {
        ctx.note(format!(
            "Claim on #{} was lost while the work ran ({}, at {}): another clone may work it",
            lost.number, lost.reason, lost.at
        ));
        ctx.claim_log.lost.push(lost.number);
    }
    // What failed is released; work that succeeded, or reached the
    // tracker though the tick failed (a PR opened, then an error), stands.
    let keep: Vec<u64> = claims
        .held
        .iter()
        .map(|h| h.number)
        .filter(|n| succeeded || reached.contains(n))
        .collect();
    release(ctx, &mut claims, &keep, journal.pid);
    if !claims.held.is_empty() {
        ctx.claim_log.standing = claims.held.iter().map(|h| h.number).collect();
        let file = standing::path(&claims.clone, ctx.cfg.skill);
        let mut own = Standing::load(&file);
        own.add(&claims.held);
        own.save(&file);
    }
}

/// The pushes that release `held`, each against the commit this clone
/// knows it by.
fn releases(skill: Skill, held: &[HeldClaim]) -> Vec<Change> {
    held.iter()
        .map(|h| Change::Release {
            skill,
            number: h.number,
            expected: h.commit.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::lost_a_race;

    /// Regression: the loser of a true race (two clones' pushes at once)
    /// read `[remote rejected] (failed to update ref)` and stopped its
    /// tick with exit 69, as if the remote refused claims by a rule.
    #[test]
    fn a_ref_transaction_lost_to_another_push_is_a_lost_race() {
        assert!(lost_a_race("[remote rejected] (failed to update ref)"));
        assert!(lost_a_race(
            "[remote rejected] (cannot lock ref 'refs/sdd-loop/claims/work/1': reference already exists)"
        ));
        assert!(!lost_a_race(
            "[remote rejected] (pre-receive hook declined)"
        ));
    }
}
