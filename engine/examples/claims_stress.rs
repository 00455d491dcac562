//! Claims on the shared remote under stress (issue 32): M machines, each
//! a clone of one real bare origin with a clock of its own, grind one
//! backlog by the claim protocol of `sdd_loop::world::claim` — take a free
//! claim (or an expired one, or their own clone's after a restart), renew
//! it as the work goes on, stop at its stop time by their own clock, leave
//! it standing with the PR — while machines are SIGKILLed (their claims
//! left behind), cut off from the remote and the tracker for a while, meet
//! a remote that hangs on a renewal's push (the holder stops at its stop
//! time all the same), and open a PR then fail without reporting it (the
//! tick finds the PR and leaves the claim standing). `--renewal-before-push`
//! and `--release-failed-work` play the engine as it was before those two
//! were fixed: a hung holder works on past its lease, a failed tick's claim
//! is released under a clone whose backlog predates the PR.
//!
//! ```text
//! cargo run --release -p sdd-loop --example claims_stress -- --machines 8 --ticks 50 --issues 40
//! machines=8 ticks=50 issues=40 skew=300s margin=300s seed=1 rounds=… takes=… takeovers=… …
//! prs=40 duplicates=0 undone=0 double_held=0 secs=…
//! ```
//!
//! Time is simulated in rounds of one minute; within a round the machines
//! act at once on their own threads, so their pushes race for real on the
//! origin. Clocks: each machine's is the true time plus an offset drawn
//! from `0..=skew`, so two clocks disagree by up to `--skew`. A machine
//! takes over a lapsed claim only when its clock is `--margin` past the
//! expiry; with the margin at least the skew no issue is ever held by two
//! working machines, nor gets two PRs.
//!
//! `--scenario cut-off-holder` replaces the random faults with a fixed
//! schedule (a holder cut off, a second clock ahead by the skew) acted out
//! in a fixed order, so its counters are the same every run: with
//! `--margin 0` it reports the double holder (the fast clock takes the
//! claim while the holder, unable to renew, still works by its slower
//! clock) and exits 1, every time; with the default margin it exits 0.
//!
//! ```text
//! cargo run --release -p sdd-loop --example claims_stress -- --scenario cut-off-holder --margin 0
//! ```
//!
//! What it proves is the protocol; `world::claim`'s tests prove each
//! compare-and-swap on real git. Exit status 1 on any PR opened twice, any
//! minute an issue was worked by two machines, or an issue left undone.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use sdd_loop::state::paths::Skill;
use sdd_loop::world::claim::{Change, Holder, Lease, Outcome, Remote, Timing};

#[path = "shared/split_mix.rs"]
mod split_mix;
use split_mix::SplitMix;

const ROUND: i64 = 60;

#[derive(Debug, Clone)]
struct Options {
    machines: usize,
    ticks: u32,
    issues: u64,
    skew: u64,
    margin: u64,
    seed: u64,
    /// Judge a renewal by the clock read before its push, and wait on a
    /// hung push as long as it takes (the engine before its fix): a holder
    /// works on through a hang past its lease.
    renewal_before_push: bool,
    /// Release the claim of work that failed after its PR was opened (the
    /// engine before its fix): a clone whose backlog predates the PR works
    /// the issue again.
    release_failed_work: bool,
    /// A fixed schedule instead of random faults (`--scenario`).
    scenario: Option<Scenario>,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        machines: 8,
        ticks: 50,
        issues: 40,
        skew: 300,
        margin: 300,
        seed: 1,
        renewal_before_push: false,
        release_failed_work: false,
        scenario: None,
    };
    let mut fixed = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{flag} takes a whole number"))
        };
        match flag.as_str() {
            "--machines" => o.machines = usize::try_from(value()?).unwrap_or(8),
            "--ticks" => o.ticks = u32::try_from(value()?).unwrap_or(50),
            "--issues" => o.issues = value()?,
            "--skew" => o.skew = value()?,
            "--margin" => o.margin = value()?,
            "--seed" => o.seed = value()?,
            "--renewal-before-push" => o.renewal_before_push = true,
            "--release-failed-work" => o.release_failed_work = true,
            "--scenario" => {
                let name = it.next().map_or("", String::as_str);
                o.scenario = Some(Scenario::parse(name)?);
                continue;
            }
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
        if matches!(
            flag.as_str(),
            "--machines" | "--ticks" | "--issues" | "--seed"
        ) {
            fixed.push(flag.clone());
        }
    }
    if let Some(scenario) = o.scenario {
        if !fixed.is_empty() {
            return Err(format!(
                "--scenario {} fixes the machines, issues and faults: drop {}",
                scenario.name(),
                fixed.join(", ")
            ));
        }
        o.machines = scenario.schedules(&o).len();
        o.issues = 1;
    }
    Ok(o)
}

/// What a machine is doing.
#[derive(Debug, Clone)]
enum Doing {
    Idle,
    Working {
        issue: u64,
        commit: String,
        lease: Lease,
        left: u32,
    },
    /// SIGKILLed; restarts (a new process of the same clone) at `until`.
    Dead {
        until: u64,
    },
}

#[derive(Debug)]
struct Machine {
    remote: Remote,
    holder: Holder,
    /// Seconds this machine's clock is ahead of the true time.
    offset: i64,
    doing: Doing,
    ticks: u32,
    /// Cut off from the remote and the tracker until this round.
    cut_until: u64,
    /// Its remote accepts and never answers until this round: a renewal's
    /// push hangs.
    hung_until: u64,
    rng: SplitMix,
    /// A scenario's fixed faults, which replace the random ones.
    schedule: Option<Schedule>,
}

/// The shared tracker: the backlog, the PRs opened, and what the run
/// counted.
#[derive(Debug, Default)]
struct World {
    issues: u64,
    prs: BTreeMap<u64, Vec<(usize, u64)>>,
    counts: BTreeMap<&'static str, u64>,
    /// (round, issue) → machines working it that round.
    working: BTreeMap<(u64, u64), BTreeSet<usize>>,
}

impl World {
    fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_default() += 1;
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "stress")
        .env("GIT_AUTHOR_EMAIL", "stress@localhost")
        .env("GIT_COMMITTER_NAME", "stress")
        .env("GIT_COMMITTER_EMAIL", "stress@localhost")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn setup(root: &Path, o: &Options) -> Vec<Machine> {
    git(root, &["init", "--quiet", "--bare", "origin.git"]);
    git(root, &["init", "--quiet", "seed"]);
    let seed = root.join("seed");
    std::fs::write(seed.join("README.md"), "backlog\n").expect("write");
    git(&seed, &["add", "README.md"]);
    git(&seed, &["commit", "--quiet", "-m", "first"]);
    git(
        &seed,
        &["push", "--quiet", "../origin.git", "HEAD:refs/heads/main"],
    );
    let mut rng = SplitMix::new(o.seed);
    let schedules = o.scenario.map(|s| s.schedules(o));
    (0..o.machines)
        .map(|i| {
            let schedule = schedules.as_ref().map(|all| all[i]);
            let name = format!("machine-{i}");
            git(root, &["clone", "--quiet", "origin.git", &name]);
            let dir = root.join(&name);
            Machine {
                holder: Holder {
                    host: name.clone(),
                    clone: dir.display().to_string(),
                    pid: 1000 + u32::try_from(i).unwrap_or(0),
                    session: None,
                    clone_id: None,
                },
                remote: Remote {
                    dir,
                    remote: "origin".into(),
                    vars: std::env::vars().collect(),
                    limit: Duration::from_secs(30),
                },
                offset: schedule.map_or_else(
                    || i64::try_from(rng.below(o.skew + 1)).unwrap_or(0),
                    |s| s.offset,
                ),
                doing: Doing::Idle,
                ticks: 0,
                cut_until: 0,
                hung_until: 0,
                rng: SplitMix::new(o.seed.wrapping_mul(31).wrapping_add(i as u64)),
                schedule,
            }
        })
        .collect()
}

fn clock(start: Timestamp, round: u64, offset: i64) -> Timestamp {
    let secs = i64::try_from(round).unwrap_or(i64::MAX / 2) * ROUND + offset;
    start + SignedDuration::from_secs(secs)
}

/// One machine's minute.
fn act(
    m: &mut Machine,
    i: usize,
    round: u64,
    now: Timestamp,
    (t, o): (&Timing, &Options),
    world: &Mutex<World>,
) {
    let cut = round < m.cut_until;
    match m.doing.clone() {
        Doing::Dead { until } => {
            if round >= until {
                m.doing = Doing::Idle;
            }
        }
        Doing::Working {
            issue,
            commit,
            lease,
            left,
        } => {
            let hung = round < m.hung_until;
            // A holder stops at its stop time whatever its renewal's push
            // is doing (the engine's keeper); judged before a push it waits
            // on, it works on until the push returns.
            let stop = if o.renewal_before_push {
                !hung && t.must_stop(&lease, now)
            } else {
                now >= t.stop_at(lease.expires_at)
            };
            if stop {
                world.lock().expect("world").count(if hung {
                    "lost_to_hang"
                } else {
                    "stopped_at_expiry"
                });
                m.doing = Doing::Idle;
                return;
            }
            if let Some(until) = m.killed(round) {
                world.lock().expect("world").count("kills");
                m.doing = Doing::Dead { until };
                return;
            }
            if let Some(until) = m.cut_off(round) {
                world.lock().expect("world").count("cuts");
                m.cut_until = until;
            }
            let cut = cut || round < m.cut_until;
            {
                let mut w = world.lock().expect("world");
                w.working.entry((round, issue)).or_default().insert(i);
            }
            let left = if cut { left } else { left.saturating_sub(1) };
            if left == 0 {
                let mut w = world.lock().expect("world");
                w.prs.entry(issue).or_default().push((i, round));
                // The skill opened its PR, then failed without reporting it.
                let failed = m.fails_unreported();
                if failed {
                    w.count("unreported_prs");
                }
                drop(w);
                // Finished work leaves its claim standing until the lease
                // ends (a clone whose backlog predates the PR must not
                // take it); so does failed work whose PR the tick found.
                if failed && o.release_failed_work && !hung {
                    let _ = m.remote.push(&[Change::Release {
                        skill: Skill::Work,
                        number: issue,
                        expected: commit,
                    }]);
                }
                m.doing = Doing::Idle;
                return;
            }
            if !hung
                && now >= t.renew_at(&lease)
                && !cut
                && let Some(until) = m.hangs(round)
            {
                // The renewal's push meets a remote that never answers.
                world.lock().expect("world").count("hangs");
                m.hung_until = until;
            }
            if round < m.hung_until {
                m.doing = Doing::Working {
                    issue,
                    commit,
                    lease,
                    left,
                };
                return;
            }
            if now >= t.renew_at(&lease) && !cut {
                let renewed = t.lease(Skill::Work, issue, &m.holder, now);
                if let Ok(outcomes) = m.remote.push(&[Change::Renew {
                    lease: renewed.clone(),
                    expected: commit.clone(),
                }]) {
                    if let Some(Outcome::Done { commit: Some(c) }) = outcomes.into_iter().next() {
                        world.lock().expect("world").count("renewals");
                        m.doing = Doing::Working {
                            issue,
                            commit: c,
                            lease: renewed,
                            left,
                        };
                    } else {
                        world.lock().expect("world").count("lost_at_renewal");
                        m.doing = Doing::Idle;
                    }
                    return;
                }
            }
            m.doing = Doing::Working {
                issue,
                commit,
                lease,
                left,
            };
        }
        Doing::Idle => {
            if !cut && round >= m.hung_until {
                take_next(m, now, t, world);
            }
        }
    }
}

/// An idle machine's tick: the first issue without a PR that is free,
/// lapsed past the margin, or its own clone's; claimed by one push.
fn take_next(m: &mut Machine, now: Timestamp, t: &Timing, world: &Mutex<World>) {
    // The backlog first, then the claims, as a tick reads them: a PR
    // opened in between is not in this backlog.
    let done: BTreeSet<u64> = world.lock().expect("world").prs.keys().copied().collect();
    let Ok(claims) = m.remote.read(Skill::Work) else {
        return;
    };
    let issues = world.lock().expect("world").issues;
    for issue in 1..=issues {
        if done.contains(&issue) {
            continue;
        }
        let expected = match claims.get(&issue) {
            None => None,
            Some(seen) => match &seen.lease {
                Some(l) if l.holder.same_clone(&m.holder) || t.takeable(l, now) => {
                    Some(seen.commit.clone())
                }
                _ => continue,
            },
        };
        let takeover = expected.is_some();
        let lease = t.lease(Skill::Work, issue, &m.holder, now);
        m.ticks += 1;
        if let Ok(outcomes) = m.remote.push(&[Change::Take {
            lease: lease.clone(),
            expected,
        }]) && let Some(Outcome::Done { commit: Some(c) }) = outcomes.into_iter().next()
        {
            let mut w = world.lock().expect("world");
            w.count(if takeover { "takeovers" } else { "takes" });
            m.doing = Doing::Working {
                issue,
                commit: c,
                lease,
                left: m.work_length(),
            };
            return;
        }
        world.lock().expect("world").count("refused");
        return;
    }
}

/// How a machine's faults are decided: drawn from its generator in the
/// random run, read from its schedule in a scenario. The draws keep their
/// order, so a seed's random run is the same as before there were
/// scenarios.
impl Machine {
    /// Whether it is SIGKILLed this minute, and the minute it restarts.
    fn killed(&mut self, round: u64) -> Option<u64> {
        if self.schedule.is_some() {
            return None;
        }
        (self.rng.below(100) < 2).then(|| round + 1 + self.rng.below(10))
    }

    /// Whether it is cut off from the remote and the tracker this minute,
    /// and until which.
    fn cut_off(&mut self, round: u64) -> Option<u64> {
        match self.schedule {
            Some(s) => s.cut.filter(|(at, _)| *at == round).map(|(at, r)| at + r),
            None => (self.rng.below(100) < 5).then(|| round + 10 + self.rng.below(20)),
        }
    }

    /// Whether its renewal's push meets a remote that never answers, and
    /// until which minute it hangs.
    fn hangs(&mut self, round: u64) -> Option<u64> {
        if self.schedule.is_some() {
            return None;
        }
        (self.rng.below(100) < 10).then(|| round + 10 + self.rng.below(20))
    }

    /// Whether its skill, having opened its PR, fails without reporting it.
    fn fails_unreported(&mut self) -> bool {
        self.schedule.is_none() && self.rng.below(100) < 5
    }

    /// How many connected minutes an issue it takes needs.
    fn work_length(&mut self) -> u32 {
        match self.schedule {
            Some(s) => s.work,
            None => 2 + u32::try_from(self.rng.below(19)).unwrap_or(0),
        }
    }
}

/// A run with a fixed schedule, in which the margin alone decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// Two machines, one issue. machine-0 (the true clock) takes issue #1
    /// at minute 0 and is cut off from minute 1 for 40 minutes: it can
    /// neither renew nor finish, and stops when the lease (15 minutes)
    /// ends by its own clock, at minute 15. machine-1's clock runs the
    /// skew ahead: it takes the claim over once its clock is the margin
    /// past the expiry — with the margin at the skew at minute 15, as
    /// machine-0 stops; with margin 0 at minute 15 − skew, while machine-0
    /// still works, and the issue is double-held every run.
    CutOffHolder,
}

/// One machine's part in a scenario.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    /// Seconds its clock is ahead of the true time.
    offset: i64,
    /// Cut off at this minute for this many.
    cut: Option<(u64, u64)>,
    /// Connected minutes an issue it takes needs.
    work: u32,
}

impl Scenario {
    const ALL: [Scenario; 1] = [Scenario::CutOffHolder];

    fn name(self) -> &'static str {
        match self {
            Scenario::CutOffHolder => "cut-off-holder",
        }
    }

    fn parse(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|s| s.name()).collect();
                format!(
                    "no scenario is named {name:?}; the scenarios: {}",
                    names.join(", ")
                )
            })
    }

    fn schedules(self, o: &Options) -> Vec<Schedule> {
        match self {
            Scenario::CutOffHolder => vec![
                Schedule {
                    offset: 0,
                    cut: Some((1, 40)),
                    work: 30,
                },
                Schedule {
                    offset: i64::try_from(o.skew).unwrap_or(0),
                    cut: None,
                    work: 5,
                },
            ],
        }
    }
}

/// A scenario's minute: the machines act one after another in a fixed
/// order, so no push races and every run is the same.
fn act_in_turn(
    machines: &mut [Machine],
    round: u64,
    start: Timestamp,
    settings: (&Timing, &Options),
    world: &Mutex<World>,
) {
    for (i, m) in machines.iter_mut().enumerate() {
        let now = clock(start, round, m.offset);
        act(m, i, round, now, settings, world);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                let _ = writeln!(std::io::stderr(), "error: {e}");
            }
            let _ = writeln!(
                std::io::stderr(),
                "usage: claims_stress [--machines 8] [--ticks 50] [--issues 40] [--skew 300] [--margin 300] [--seed 1] [--renewal-before-push] [--release-failed-work]\n       claims_stress --scenario cut-off-holder [--skew 300] [--margin 300]"
            );
            std::process::exit(if e.is_empty() { 0 } else { 64 });
        }
    };
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut machines = setup(dir.path(), &o);
    let timing = Timing {
        skew: Duration::from_secs(o.margin),
        ..Timing::default()
    };
    let world = Mutex::new(World {
        issues: o.issues,
        ..World::default()
    });
    let start: Timestamp = "2026-11-26T10:00:00Z".parse().expect("a timestamp");
    let mut round = 0u64;
    loop {
        let all_done = world.lock().expect("world").prs.len() as u64 >= o.issues;
        let out_of_ticks = machines.iter().all(|m| m.ticks >= o.ticks);
        if all_done || out_of_ticks || round > 10_000 {
            break;
        }
        if o.scenario.is_some() {
            act_in_turn(&mut machines, round, start, (&timing, &o), &world);
        } else {
            std::thread::scope(|s| {
                for (i, m) in machines.iter_mut().enumerate() {
                    let (world, timing, o) = (&world, &timing, &o);
                    let now = clock(start, round, m.offset);
                    if m.ticks >= o.ticks && matches!(m.doing, Doing::Idle) {
                        continue;
                    }
                    s.spawn(move || act(m, i, round, now, (timing, o), world));
                }
            });
        }
        round += 1;
    }
    let w = world.into_inner().expect("world");
    let duplicates = w.prs.values().filter(|v| v.len() > 1).count();
    let undone = o.issues - w.prs.len() as u64;
    let double_held = w.working.values().filter(|m| m.len() > 1).count();
    let c = |k: &str| w.counts.get(k).copied().unwrap_or(0);
    let mut out = std::io::stdout();
    let run = o
        .scenario
        .map_or_else(String::new, |s| format!("scenario={} ", s.name()));
    let _ = writeln!(
        out,
        "{run}machines={} ticks={} issues={} skew={}s margin={}s seed={} rounds={round} takes={} takeovers={} renewals={} refused={} kills={} cuts={} hangs={} unreported_prs={} stopped_at_expiry={} lost_to_hang={} lost_at_renewal={}",
        o.machines,
        o.ticks,
        o.issues,
        o.skew,
        o.margin,
        o.seed,
        c("takes"),
        c("takeovers"),
        c("renewals"),
        c("refused"),
        c("kills"),
        c("cuts"),
        c("hangs"),
        c("unreported_prs"),
        c("stopped_at_expiry"),
        c("lost_to_hang"),
        c("lost_at_renewal"),
    );
    let _ = writeln!(
        out,
        "prs={} duplicates={duplicates} undone={undone} double_held={double_held} secs={:.1}",
        w.prs.values().map(Vec::len).sum::<usize>(),
        started.elapsed().as_secs_f64()
    );
    for (issue, prs) in w.prs.iter().filter(|(_, v)| v.len() > 1) {
        let by: Vec<String> = prs
            .iter()
            .map(|(m, r)| format!("machine-{m} at minute {r}"))
            .collect();
        let _ = writeln!(
            out,
            "duplicate: issue #{issue} got {} PRs: {}",
            prs.len(),
            by.join(", ")
        );
    }
    for ((minute, issue), by) in w.working.iter().filter(|(_, m)| m.len() > 1) {
        let by: Vec<String> = by.iter().map(|m| format!("machine-{m}")).collect();
        let _ = writeln!(
            out,
            "double-held: issue #{issue} worked at minute {minute} by {}",
            by.join(" and ")
        );
    }
    if duplicates > 0 || undone > 0 || double_held > 0 {
        std::process::exit(1);
    }
}
