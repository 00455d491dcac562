//! Claims on the shared remote (issue 32): a loop in one clone and a loop
//! in another — or on another machine — never work the same issue, because
//! before a tick works issue `N` it claims it on the remote every clone
//! already shares, with a compare-and-swap the remote itself performs.
//!
//! A claim is a ref, `refs/sdd-loop/claims/{skill}/{N}`, pointing at a
//! commit whose message is the [`Lease`] (JSON): who holds it and until
//! when. Every change is one `git push --porcelain` with a lease per ref
//! (`--force-with-lease=REF:EXPECTED`), which the receiving end checks
//! against the ref's current value inside its ref transaction:
//!
//! - **take** a free claim: `EXPECTED` empty — the ref must not exist, so
//!   of two clones pushing the same ref at once exactly one succeeds and
//!   the other reads `!` (`[remote rejected]` or `[rejected] (stale
//!   info)`) for that ref in the porcelain output;
//! - **renew**, or **take over** an expired claim: `EXPECTED` the commit
//!   that was read, so a claim renewed or taken by someone else in the
//!   meantime is not overwritten;
//! - **release**: delete the ref, with the same lease.
//!
//! Why a push and not GitHub's Git refs API (`POST /git/refs`, 422 when
//! the ref exists): a push uses the clone's own push credentials, which
//! the skill needs anyway for its PR branches; it costs no REST quota (the
//! REST route spends GitHub's secondary limit on content-creating
//! requests, which PRs and comments share) and needs no write access to
//! contents for the engine's token; and the server compares every update
//! with the expected old value, where the REST update is only
//! fast-forward-or-force, not a compare. The namespace is outside the ones
//! GitHub hides or refuses (`refs/pull/`; hosts hide their bookkeeping refs
//! with `transfer.hideRefs`, and a push to a hidden ref is rejected), and
//! clones never fetch it by default (`refs/heads/*` and `refs/tags/*` only).
//!
//! Nothing here may hang: git runs with `GIT_TERMINAL_PROMPT=0`, ssh in
//! batch mode (unless `GIT_SSH_COMMAND` is already set), no hooks, and a
//! time limit ([`Remote::limit`]); a remote that cannot be reached is a
//! [`ClaimError`], never a claim.
//!
//! **The clock assumption.** A lease's `expires_at` is written by its
//! holder's clock; another clone's clock may disagree by up to a margin
//! ([`Timing::skew`], 5 minutes by default). The holder stops working
//! when its own clock reaches `expires_at` ([`Timing::must_stop`]) and
//! renews well before; another clone takes the claim over only when *its*
//! clock reads `expires_at + skew` ([`Timing::takeable`]). With the true
//! skew below the margin the two intervals never overlap
//! (the unit test `no_two_holders_while_the_skew_is_within_the_margin`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};

use crate::state::paths::Skill;
use crate::world::program;

/// Where claims live on the remote.
pub const NAMESPACE: &str = "refs/sdd-loop/claims";

/// The claim ref of `number` for `skill`.
pub fn ref_name(skill: Skill, number: u64) -> String {
    format!("{NAMESPACE}/{skill}/{number}")
}

/// A ref of `skill`'s claims no issue has, unique to the caller:
/// `doctor`'s probe (two at once never refuse each other's). A read by a
/// tick skips it: its last part is no number.
pub fn probe_ref(skill: Skill) -> String {
    let unique = identity::random_id().unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{}-{nanos}", std::process::id())
    });
    format!("{NAMESPACE}/{skill}/probe-{unique}")
}

/// Who holds a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Holder {
    /// The machine's name.
    pub host: String,
    /// The clone's directory on that machine.
    pub clone: String,
    /// The process that took or last renewed it.
    pub pid: u32,
    /// The Claude Code session, for an in-session tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The clone's identity ([`clone_id`]): what tells two clones apart
    /// when their host and path are the same. Absent in leases written
    /// before clones had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone_id: Option<String>,
}

impl Holder {
    /// Whether `other` is this same holder: the same clone (a new process
    /// of the same clone, as after `--resume`, holds what its predecessor
    /// held). Two holders with identities are the same clone only when
    /// the identities are; a lease written before clones had one is told
    /// by its host and path.
    pub fn same_clone(&self, other: &Holder) -> bool {
        match (&self.clone_id, &other.clone_id) {
            (Some(a), Some(b)) => a == b,
            _ => self.host == other.host && self.clone == other.clone,
        }
    }
}

pub use identity::{clone_id, clone_name, known_clone_id};

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{} (pid {}", self.host, self.clone, self.pid)?;
        if let Some(s) = &self.session {
            write!(f, ", session {s}")?;
        }
        write!(f, ")")
    }
}

/// What a claim's commit says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lease {
    pub skill: Skill,
    pub number: u64,
    pub holder: Holder,
    /// When the holder took it, by its clock.
    pub taken_at: Timestamp,
    /// When it lapses, by the holder's clock.
    pub expires_at: Timestamp,
}

/// The lease's length and the clock margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How long a claim lasts from its last renewal.
    pub lease: Duration,
    /// How far two machines' clocks may disagree.
    pub skew: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            lease: Duration::from_secs(15 * 60),
            skew: Duration::from_secs(5 * 60),
        }
    }
}

/// The most a holder gives up of its lease's end to stop its work in
/// time ([`Timing::stop_margin`]).
pub const STOP_MARGIN: Duration = Duration::from_secs(10);

fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

impl Timing {
    /// A lease taken or renewed at `now`.
    pub fn lease(&self, skill: Skill, number: u64, holder: &Holder, now: Timestamp) -> Lease {
        Lease {
            skill,
            number,
            holder: holder.clone(),
            taken_at: now,
            expires_at: now.saturating_add(signed(self.lease)).unwrap_or(now),
        }
    }

    /// Whether another clone may take `lease` over at `now` (its own
    /// clock): only once its clock is past the expiry by the skew margin.
    pub fn takeable(&self, lease: &Lease, now: Timestamp) -> bool {
        let after = lease
            .expires_at
            .saturating_add(signed(self.skew))
            .unwrap_or(lease.expires_at);
        now >= after
    }

    /// Whether the holder must have stopped its work at `now` (its own
    /// clock): a lease it could not renew ends its work at the expiry.
    pub fn must_stop(&self, lease: &Lease, now: Timestamp) -> bool {
        now >= lease.expires_at
    }

    /// How long before its lease's expiry a holder that has not renewed
    /// gives its claim up: the time its guard needs to stop the work (a
    /// look every second, then the skill's grace before it is killed),
    /// with room to spare; a tenth of a short lease.
    pub fn stop_margin(&self) -> Duration {
        STOP_MARGIN.min(self.lease / 10)
    }

    /// When the holder of a lease expiring at `expires_at` gives it up
    /// unless renewed: [`Self::stop_margin`] before the expiry, by its own
    /// clock. A renewal's push is never waited for past it, so the work
    /// ends before the lease does whatever the remote does
    /// (`docs/src/claims.md`, "A lease ends the work before it ends").
    pub fn stop_at(&self, expires_at: Timestamp) -> Timestamp {
        expires_at
            .saturating_sub(signed(self.stop_margin()))
            .unwrap_or(expires_at)
    }

    /// When the holder renews: a third of the way into the lease (two
    /// thirds before it ends), so two failed renewals still leave time to
    /// stop.
    pub fn renew_at(&self, lease: &Lease) -> Timestamp {
        lease
            .expires_at
            .saturating_sub(signed(self.lease / 3 * 2))
            .unwrap_or(lease.taken_at)
    }
}

/// A claim as read from the remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The commit the ref points at (the expected value of the next
    /// compare-and-swap).
    pub commit: String,
    /// Its lease; `None` when the commit is not one (another tool's ref
    /// in our namespace, or a damaged one): never taken over, reported.
    pub lease: Option<Lease>,
}

/// One ref's change in a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Take a free claim, or take over `expected` (an expired one).
    Take {
        lease: Lease,
        expected: Option<String>,
    },
    /// Renew our claim, now at `expected`.
    Renew { lease: Lease, expected: String },
    /// Release our claim, now at `expected`.
    Release {
        skill: Skill,
        number: u64,
        expected: String,
    },
}

impl Change {
    fn target(&self) -> (Skill, u64) {
        match self {
            Change::Take { lease, .. } | Change::Renew { lease, .. } => (lease.skill, lease.number),
            Change::Release { skill, number, .. } => (*skill, *number),
        }
    }
}

/// What became of one ref's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Done; for a take or renewal, the commit the ref now points at.
    Done { commit: Option<String> },
    /// The remote refused: the ref was not what we expected (someone else
    /// took, renewed or released it first), or a rule of the remote's.
    Refused { reason: String },
}

/// Why the remote gave no answer about claims.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    #[error("git {args} gave no answer from {remote}: {detail}")]
    Unreachable {
        remote: String,
        args: String,
        detail: String,
    },
    /// The remote said nothing within the limit; git and its transport
    /// were killed.
    #[error("git {verb} got no answer from `{remote}` within {} s", limit.as_secs_f64().ceil())]
    TimedOut {
        remote: String,
        /// `fetch` or `push`.
        verb: &'static str,
        limit: Duration,
    },
    #[error("git {args} failed in {}: {detail}", dir.display())]
    Local {
        dir: PathBuf,
        args: String,
        detail: String,
    },
}

/// The shared remote, through the `git` of one clone.
#[derive(Debug, Clone)]
pub struct Remote {
    /// The clone's directory.
    pub dir: PathBuf,
    /// The remote's name (or URL) in that clone.
    pub remote: String,
    /// The environment git runs with (the tick's variables).
    pub vars: BTreeMap<String, String>,
    /// The longest any one git command may take.
    pub limit: Duration,
}

/// The identity of the commits a claim is written as: never the user's,
/// never prompted for.
const IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "sdd-loop"),
    ("GIT_AUTHOR_EMAIL", "sdd-loop@localhost"),
    ("GIT_COMMITTER_NAME", "sdd-loop"),
    ("GIT_COMMITTER_EMAIL", "sdd-loop@localhost"),
];

impl Remote {
    fn env(&self) -> BTreeMap<String, String> {
        let mut vars = self.vars.clone();
        vars.insert("GIT_TERMINAL_PROMPT".into(), "0".into());
        vars.entry("GIT_SSH_COMMAND".into())
            .or_insert_with(|| "ssh -o BatchMode=yes".into());
        for (k, v) in IDENTITY {
            vars.insert(k.into(), v.into());
        }
        vars
    }

    fn git(&self, args: &[&str], remote: bool) -> Result<program::Ended, ClaimError> {
        let git = program::on_path(&self.vars, "git").unwrap_or_else(|| PathBuf::from("git"));
        let mut full = vec!["-C", self.dir.to_str().unwrap_or(".")];
        full.extend_from_slice(args);
        let shown = args.join(" ");
        program::run_within(&git, &full, &self.env(), self.limit).map_err(|e| {
            if let (true, program::NoAnswer::TimedOut(limit)) = (remote, &e) {
                return ClaimError::TimedOut {
                    remote: self.remote.clone(),
                    verb: verb_of(args),
                    limit: *limit,
                };
            }
            let detail = e.to_string();
            if remote {
                ClaimError::Unreachable {
                    remote: self.remote.clone(),
                    args: shown,
                    detail,
                }
            } else {
                ClaimError::Local {
                    dir: self.dir.clone(),
                    args: shown,
                    detail,
                }
            }
        })
    }

    fn local(&self, args: &[&str]) -> Result<String, ClaimError> {
        let out = self.git(args, false)?;
        if !out.status.success() {
            return Err(ClaimError::Local {
                dir: self.dir.clone(),
                args: args.join(" "),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Every claim of `skill` on the remote, by number: one fetch (the
    /// claims' commits land under `refs/sdd-loop/seen/` in this clone).
    pub fn read(&self, skill: Skill) -> Result<BTreeMap<u64, Seen>, ClaimError> {
        let seen = format!("refs/sdd-loop/seen/{skill}");
        let spec = format!("+{NAMESPACE}/{skill}/*:{seen}/*");
        let args = [
            // Our fetch of a few tiny commits never warrants the clone's
            // housekeeping (`git maintenance run --auto` after a fetch).
            "-c",
            "maintenance.auto=false",
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            "--prune",
            self.remote.as_str(),
            spec.as_str(),
        ];
        let out = self.git(&args, true)?;
        if !out.status.success() {
            return Err(ClaimError::Unreachable {
                remote: self.remote.clone(),
                args: args.join(" "),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        let listed = self.local(&[
            "for-each-ref",
            "--format=%(refname)%00%(objectname)%00%(contents)%00%00",
            &seen,
        ])?;
        let mut claims = BTreeMap::new();
        for record in listed.split("\0\0").filter(|r| !r.trim().is_empty()) {
            let mut fields = record.trim_start_matches('\n').splitn(3, '\0');
            let (Some(name), Some(commit)) = (fields.next(), fields.next()) else {
                continue;
            };
            let Some(number) = name.rsplit('/').next().and_then(|n| n.parse::<u64>().ok()) else {
                continue;
            };
            let lease = fields
                .next()
                .and_then(|m| serde_json::from_str::<Lease>(m.trim()).ok())
                .filter(|l| l.skill == skill && l.number == number);
            claims.insert(
                number,
                Seen {
                    commit: commit.to_owned(),
                    lease,
                },
            );
        }
        Ok(claims)
    }

    /// The commit a lease is written as (in this clone's object store), on
    /// the empty tree `tree`.
    fn commit(&self, tree: &str, lease: &Lease) -> Result<String, ClaimError> {
        let message = serde_json::to_string(lease).unwrap_or_default();
        self.local(&["commit-tree", tree, "-m", &message])
    }

    /// Makes `changes` in one push, each ref under its own lease, and says
    /// what became of each (in the order given).
    pub fn push(&self, changes: &[Change]) -> Result<Vec<Outcome>, ClaimError> {
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        let writes: Vec<RefWrite> = changes
            .iter()
            .map(|change| {
                let (skill, number) = change.target();
                let (lease, expected) = match change {
                    Change::Take { lease, expected } => {
                        (Some(lease), expected.clone().unwrap_or_default())
                    }
                    Change::Renew { lease, expected } => (Some(lease), expected.clone()),
                    Change::Release { expected, .. } => (None, expected.clone()),
                };
                RefWrite {
                    name: ref_name(skill, number),
                    lease: lease.cloned(),
                    expected,
                }
            })
            .collect();
        self.push_refs(&writes)
    }

    /// Makes `writes` in one push, each ref under its own lease (the ref
    /// named as it is: `doctor`'s probe is no issue's claim).
    pub fn push_refs(&self, writes: &[RefWrite]) -> Result<Vec<Outcome>, ClaimError> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        // The empty tree every lease's commit is on, written only when a
        // change writes a commit (a release deletes a ref, nothing more).
        let tree = if writes.iter().any(|w| w.lease.is_some()) {
            self.local(&["hash-object", "-t", "tree", "-w", "/dev/null"])?
        } else {
            String::new()
        };
        let mut leases = Vec::new();
        let mut specs = Vec::new();
        let mut commits = Vec::new();
        for write in writes {
            let source = match &write.lease {
                Some(lease) => Some(self.commit(&tree, lease)?),
                None => None,
            };
            leases.push(format!(
                "--force-with-lease={}:{}",
                write.name, write.expected
            ));
            specs.push(format!(
                "{}:{}",
                source.clone().unwrap_or_default(),
                write.name
            ));
            commits.push(source);
        }
        let mut args: Vec<&str> = vec!["push", "--porcelain", "--no-verify"];
        args.extend(leases.iter().map(String::as_str));
        args.push(&self.remote);
        args.extend(specs.iter().map(String::as_str));
        let out = self.git(&args, true)?;
        let printed = String::from_utf8_lossy(&out.stdout);
        let results = porcelain(&printed);
        let mut outcomes = Vec::new();
        for (write, commit) in writes.iter().zip(commits) {
            match results.get(&write.name) {
                Some((true, _)) => outcomes.push(Outcome::Done { commit }),
                Some((false, reason)) => outcomes.push(Outcome::Refused {
                    reason: reason.clone(),
                }),
                None => {
                    return Err(ClaimError::Unreachable {
                        remote: self.remote.clone(),
                        args: "push".into(),
                        detail: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
                    });
                }
            }
        }
        Ok(outcomes)
    }
}

/// One ref's change, by name: written as `lease`'s commit (deleted when
/// `None`) if the ref is now `expected` (empty: the ref must not exist).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefWrite {
    pub name: String,
    pub lease: Option<Lease>,
    pub expected: String,
}

/// The git verb of `args` (after any `-c` settings), for an error.
fn verb_of(args: &[&str]) -> &'static str {
    if args.contains(&"push") {
        "push"
    } else {
        "fetch"
    }
}

/// `git push --porcelain`'s per-ref lines: ref → (accepted, summary).
/// A line is `FLAG \t FROM:TO \t SUMMARY`; `!` is a rejection.
fn porcelain(printed: &str) -> BTreeMap<String, (bool, String)> {
    printed
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, '\t');
            let flag = parts.next()?;
            let refs = parts.next()?;
            let summary = parts.next().unwrap_or("").trim().to_owned();
            let to = refs.rsplit(':').next()?.to_owned();
            let flag = flag.chars().next()?;
            Some((to, (flag != '!', summary)))
        })
        .collect()
}

mod identity;

#[cfg(test)]
mod tests;
