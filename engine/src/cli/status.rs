//! `sdd-loop status work|review`: who holds the lock and whether it is
//! alive, budget used and remaining per dimension, the last tick, an
//! in-flight iteration, the stop cause if the run has ended — and the
//! claims on the shared remote (issue 32): who holds which issue or PR,
//! until when, this clone's own marked.
//!
//! Read-only and safe while a tick runs: the lock is peeked without the
//! guard (it is published by rename, so the read is whole), nothing is
//! repaired — a torn history line is only reported — and no file is
//! created (reading the claims fetches them into the clone's
//! `refs/sdd-loop/seen/`, as every tick does). It says only what is there: before the first tick there is no
//! run to be stopped or not, and no state file to point at.
//!
//! It reads the state as the next tick will (history wins):
//! budget.json with the values of history's last line where a tick killed
//! between the two writes left it behind — but as it is while a live
//! tick runs, which wrote it ahead of history at its commit (the time
//! since the last tick, nothing behind) — and a journal whose iteration
//! history already records shown as what it is, a leftover — so every
//! iteration it names is the one `--resume` names. [`glance`] gives
//! `doctor` the same sentences.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use crate::exit;
use crate::os::clock::{self, Clock};
use crate::os::liveness::{self, Liveness, ProcessProbe};
use crate::rules::stop::dollars;
use crate::state::budget::Budget;
use crate::state::history::{self, HistoryLine};
use crate::state::journal::Journal;
use crate::state::lock;
use crate::state::paths::{Skill, StatePaths};
use crate::state::pending::PendingGates;
use crate::state::reconcile::{self, State};
use crate::state::windows::{Window, WindowsState};
use crate::tick::report;

#[expect(
    clippy::too_many_arguments,
    reason = "the status command's inputs, gathered by the CLI"
)]
pub fn run(
    root: &Path,
    skill: Skill,
    budget_file: Option<&Path>,
    as_json: bool,
    clock: &dyn Clock,
    probe: &dyn ProcessProbe,
    claims: Option<Claims>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let paths = StatePaths::new(root, skill, budget_file);
    match gather(&paths, clock, probe) {
        Ok(mut s) => {
            let worked = s.worked_now();
            s.claims = claims.map(|c| c.as_of(clock.now(), &worked));
            let text = if as_json {
                format!("{}\n", s.json(root, &paths))
            } else {
                s.text(root, &paths)
            };
            match out.write_all(text.as_bytes()) {
                Ok(()) => exit::TICK_DONE,
                Err(_) => exit::CANT_WRITE,
            }
        }
        Err((code, message, help)) => {
            let _ = writeln!(err, "error: {message}");
            let _ = writeln!(err, "help: {help}");
            code
        }
    }
}

/// A loop's state in the sentences `status` prints, for `doctor`: who
/// holds the lock, how the run ended, whether history ends torn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glance {
    /// `held by pid 12 (alive), iteration 3, since …`; `None`: free.
    pub lock: Option<String>,
    /// `iteration_budget in iteration 5`; `None`: the run goes on.
    pub stopped: Option<String>,
    /// The history's last line is torn.
    pub torn: bool,
}

/// [`Glance`] at `skill`'s state in `root`, read-only as `status`; else
/// why it cannot be read, as `status` says it (`error: … help: …`).
pub fn glance(
    root: &Path,
    skill: Skill,
    clock: &dyn Clock,
    probe: &dyn ProcessProbe,
) -> Result<Glance, String> {
    let paths = StatePaths::new(root, skill, None);
    match gather(&paths, clock, probe) {
        Ok(s) => Ok(Glance {
            lock: s.lock_words(),
            stopped: s.stop_words(),
            torn: s.torn.is_some(),
        }),
        Err((_, message, help)) => Err(format!("error: {message} help: {help}")),
    }
}

/// The claims on the shared remote, as `status` read them.
#[derive(Debug)]
pub struct Claims {
    pub remote: String,
    /// Each claim by number, or why they could not be read.
    pub read: Result<Vec<ClaimShown>, String>,
}

/// One claim: its holder, its expiry, whether it is this clone's, whether
/// this clone's running tick works it, and whether its lease has run out
/// by this clone's clock (a finished tick's claim stands until then;
/// another clone takes or sweeps it once the skew margin has passed too).
#[derive(Debug)]
pub struct ClaimShown {
    pub number: u64,
    pub holder: String,
    pub expires_at: String,
    pub ours: bool,
    /// This clone's running tick holds it in its journal: live work, not
    /// a claim left standing by a finished tick.
    pub worked: bool,
    pub lapsed: bool,
}

impl Claims {
    /// What `remote.read(skill)` says, with `me` for this clone.
    pub fn read(
        remote: &crate::world::claim::Remote,
        skill: Skill,
        me: &crate::world::claim::Holder,
    ) -> Self {
        let read = remote
            .read(skill)
            .map(|seen| {
                seen.into_iter()
                    .map(|(number, s)| match s.lease {
                        Some(l) => ClaimShown {
                            number,
                            holder: l.holder.to_string(),
                            expires_at: clock::format(l.expires_at),
                            ours: l.holder.same_clone(me),
                            worked: false,
                            lapsed: false,
                        },
                        None => ClaimShown {
                            number,
                            holder: format!("a ref that is not a lease ({})", s.commit),
                            expires_at: "never".into(),
                            ours: false,
                            worked: false,
                            lapsed: false,
                        },
                    })
                    .collect()
            })
            .map_err(|e| e.to_string());
        Self {
            remote: remote.remote.clone(),
            read,
        }
    }

    /// The claims with their leases judged at `now`, `worked` those this
    /// clone's running tick holds.
    #[must_use]
    pub fn as_of(mut self, now: jiff::Timestamp, worked: &[u64]) -> Self {
        if let Ok(claims) = &mut self.read {
            for c in claims {
                c.lapsed = clock::parse(&c.expires_at).is_ok_and(|at| at <= now);
                c.worked = c.ours && worked.contains(&c.number);
            }
        }
        self
    }

    fn text(&self) -> String {
        match &self.read {
            Err(e) => format!("Claims on {}: cannot be read ({e})\n", self.remote),
            Ok(c) if c.is_empty() => format!("Claims on {}: none\n", self.remote),
            Ok(c) => {
                let mut s = format!("Claims on {}:\n", self.remote);
                for claim in c {
                    let whose = match (claim.ours, claim.worked) {
                        (true, true) => " (this clone: its running tick works it)",
                        (true, false) => " (this clone: left standing by a finished tick)",
                        (false, _) => "",
                    };
                    s.push_str(&format!(
                        "  #{} held by {}{whose} until {}{}\n",
                        claim.number,
                        claim.holder,
                        claim.expires_at,
                        if claim.lapsed { " (lapsed)" } else { "" }
                    ));
                }
                s
            }
        }
    }

    fn json(&self) -> serde_json::Value {
        match &self.read {
            Err(e) => json!({"remote": self.remote, "error": e}),
            Ok(c) => json!({
                "remote": self.remote,
                "held": c.iter().map(|c| json!({
                    "number": c.number, "holder": c.holder,
                    "expires_at": c.expires_at, "this_clone": c.ours,
                    "worked_now": c.worked, "lapsed": c.lapsed,
                })).collect::<Vec<_>>(),
            }),
        }
    }
}

struct Status {
    claims: Option<Claims>,
    /// `windows.json` with the statusLine's figures, when the loop reads
    /// the usage windows.
    windows: Option<WindowsState>,
    now: jiff::Timestamp,
    skill: Skill,
    lock: Option<Result<(lock::LockRecord, Liveness), String>>,
    /// budget.json reconciled with history, as the next tick will find it.
    budget: Option<Budget>,
    /// What history restored in it (budget.json may lag it by a tick).
    restored: Option<Restored>,
    minutes_now: u64,
    last: Option<HistoryLine>,
    torn: Option<usize>,
    inflight: Option<InFlight>,
    /// The gates posted on the tracker that wait for a person.
    pending: PendingGates,
}

/// The fields of budget.json history restored, from its line of
/// `iteration`.
struct Restored {
    iteration: Option<u64>,
    fields: Vec<&'static str>,
}

/// The interrupted-iteration journal, and whether history records its
/// iteration already (a tick killed after its history line: the next
/// tick only removes the journal).
struct InFlight {
    journal: Journal,
    recorded: bool,
}

type Refusal = (u8, String, String);

fn gather(
    paths: &StatePaths,
    clock: &dyn Clock,
    probe: &dyn ProcessProbe,
) -> Result<Status, Refusal> {
    let lock = lock::peek(paths)
        .map_err(|e| (exit::DATA, e.to_string(), e.help()))?
        .map(|r| {
            r.map(|rec| {
                let verdict = liveness::check(probe, rec.pid, rec.process_start);
                (rec, verdict)
            })
        });
    let on_disk = Budget::load(paths.budget()).map_err(|e| {
        (
            exit::DATA,
            e.to_string(),
            "status never changes the file; fix or delete it, then look again".to_owned(),
        )
    })?;
    let tail = history::read_tail_held(&paths.history(), 1)
        .map_err(|e| (exit::DATA, e.to_string(), e.help()))?;
    let lines: Vec<HistoryLine> = tail.lines.iter().map(|l| l.line.clone()).collect();
    // History wins, as in every tick: budget.json may lag it
    // by a tick after a crash. A live tick's checkpoint is ahead of it.
    let live = matches!(&lock, Some(Ok((_, v))) if !v.is_dead());
    let recon = reconcile::reconcile(
        on_disk.clone(),
        lines.iter().rev().find(|l| l.authoritative()),
        false,
    );
    let restored = match &recon.state {
        State::Restored { iteration, fields } => Some(Restored {
            iteration: *iteration,
            fields: fields.clone(),
        }),
        _ => None,
    };
    let budget = match recon.state {
        State::Ahead { .. } if live => on_disk,
        _ => recon.budget,
    };
    let inflight = Journal::load(&paths.inflight())
        .ok()
        .flatten()
        .map(|journal| InFlight {
            recorded: lines.iter().any(|l| journal.recorded_by(l)),
            journal,
        });
    let now = clock.now();
    let minutes_now = budget.as_ref().map_or(0, |b| {
        let gap = b
            .last_tick_ended_at
            .as_deref()
            .and_then(|t| clock::parse(t).ok())
            .filter(|_| b.stopped.is_none() && lock.is_none())
            .map(|end| (now.as_second() - end.as_second()).max(0) as u64)
            .unwrap_or(0);
        (b.elapsed_seconds() + gap) / 60
    });
    let windows = WindowsState::load_with_statusline(&paths.windows(), &paths.statusline_windows())
        .ok()
        .filter(|w| *w != WindowsState::default());
    let pending =
        PendingGates::load(&paths.gates()).map_err(|e| (exit::DATA, e.to_string(), e.help()))?;
    Ok(Status {
        claims: None,
        windows,
        now,
        skill: paths.skill,
        lock,
        budget,
        restored,
        minutes_now,
        last: tail.last().cloned(),
        torn: tail.torn.map(|t| t.bytes.len()),
        inflight,
        pending,
    })
}

/// `Usage windows: 5-hour 55% (resets 19:00 UTC) · weekly 10% (…)`, and
/// the wait when the loop waits.
fn windows_text(w: &WindowsState, now: jiff::Timestamp) -> String {
    use crate::rules::windows::{percent, remaining, reset_time};
    let figures: Vec<String> = Window::ALL
        .into_iter()
        .filter_map(|win| {
            let r = w.recorded(win)?;
            let reset = r.reset()?;
            Some(if reset <= now {
                format!("{} 0% (reset at {})", win.noun(), reset_time(now, reset))
            } else {
                format!(
                    "{} {} (resets at {}, in {})",
                    win.noun(),
                    percent(r.used_percent),
                    reset_time(now, reset),
                    remaining(now, reset)
                )
            })
        })
        .collect();
    let mut s = if figures.is_empty() {
        "Usage windows: no figure read yet\n".to_owned()
    } else {
        format!("Usage windows: {}\n", figures.join(" · "))
    };
    if let Some(wait) = w.wait.as_ref().filter(|x| x.holds_at(now)) {
        let until = wait.until().unwrap_or(now);
        s.push_str(&format!(
            "Waiting: for the {} window to reset at {} ({}) — {}; ticks before then do nothing\n",
            wait.window.noun(),
            reset_time(now, until),
            remaining(now, until),
            wait.reason
        ));
    }
    s
}

fn liveness_word(v: &Liveness) -> &'static str {
    match v {
        Liveness::Alive => "alive",
        Liveness::Dead => "dead — stale, the next tick reaps it",
        Liveness::Recycled { .. } => {
            "dead (PID reused by another process) — stale, the next tick reaps it"
        }
        Liveness::Ambiguous { .. } => "unknown (treated as alive)",
    }
}

impl Status {
    /// The claims a live tick's open iteration holds: the work going on
    /// now (a standing claim of a finished tick is in no open journal).
    fn worked_now(&self) -> Vec<u64> {
        let live = matches!(&self.lock, Some(Ok((_, v))) if !v.is_dead());
        match &self.inflight {
            Some(f) if live && !f.recorded => f
                .journal
                .claims
                .iter()
                .flat_map(|c| c.held.iter().map(|h| h.number))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Who holds the lock, in words: `held by pid 12 (alive), iteration
    /// 3, since …` (`None`: free).
    fn lock_words(&self) -> Option<String> {
        self.lock.as_ref().map(|lock| match lock {
            Ok((r, v)) => format!(
                "held by pid {} ({}), iteration {}, since {}",
                r.pid,
                liveness_word(v),
                r.iteration,
                r.started_at
            ),
            Err(detail) => format!("unreadable ({detail})"),
        })
    }

    /// How the run ended, in words: `prior_gate_stop in iteration 2 (gate
    /// backlog-drift)` (`None`: it goes on, or there is none).
    fn stop_words(&self) -> Option<String> {
        let stop = self.budget.as_ref()?.stopped.as_ref()?;
        Some(format!(
            "{} in iteration {}{}",
            stop.cause,
            stop.iteration,
            stop.gate
                .as_ref()
                .map_or(String::new(), |g| format!(" (gate {g})"))
        ))
    }

    fn text(&self, root: &Path, paths: &StatePaths) -> String {
        let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
        let mut s = format!("## Loop Status — /sdd:{} --loop\n\n", self.skill);
        s.push_str(&format!(
            "Lock: {}\n",
            self.lock_words().unwrap_or_else(|| "free".to_owned())
        ));
        match &self.inflight {
            Some(InFlight {
                journal: j,
                recorded: false,
            }) => s.push_str(&format!(
                "In flight: iteration {} (pid {}), started {}\n",
                j.iteration, j.pid, j.started_at
            )),
            Some(InFlight {
                journal: j,
                recorded: true,
            }) => s.push_str(&format!(
                "In flight: none — iteration {} (pid {}) is recorded in history; the next tick removes its journal\n",
                j.iteration, j.pid
            )),
            None => {}
        }
        match &self.budget {
            None => s.push_str("Run: none recorded yet\n"),
            Some(b) => {
                s.push_str(&format!(
                    "Run: started {}, rates from {}\n",
                    b.started_at, b.rate_table_source
                ));
                s.push_str(&format!(
                    "Used: {}/{} iterations, {}/{} PRs, {}/{} minutes, {}/{}\n",
                    b.iterations_used,
                    b.max_iterations,
                    b.prs_touched.len(),
                    b.max_prs,
                    self.minutes_now,
                    b.max_minutes,
                    dollars(b.dollars_estimate),
                    if b.max_dollars > 0.0 {
                        dollars(b.max_dollars)
                    } else {
                        "no ceiling".into()
                    }
                ));
                s.push_str(&report::remaining(b, self.minutes_now, false));
                s.push('\n');
                s.push_str(&format!(
                    "Comments pushed: {} · Merges attempted: {} · Agents dispatched: {} · qmd failures in a row: {}\n",
                    b.comments_pushed, b.merges_attempted, b.agents_dispatched, b.qmd_failures_consecutive
                ));
                if let Some(r) = &self.restored {
                    s.push_str(&format!(
                        "Checkpoint: {} is behind history; shown with {} as history's iteration {} recorded them (history wins; the next tick rewrites the file)\n",
                        rel(paths.budget()),
                        r.fields.join(", "),
                        r.iteration.map_or("?".to_owned(), |i| i.to_string())
                    ));
                }
            }
        }
        match &self.last {
            None => s.push_str("Last tick: none\n"),
            Some(l) => s.push_str(&format!(
                "Last tick: iteration {}, {}, ended {}{}\n",
                l.iteration.map_or("?".into(), |i| i.to_string()),
                l.outcome.map_or("?", |o| o.as_str()),
                l.ended_at.as_deref().unwrap_or("?"),
                match l.stop_conditions_fired.as_deref() {
                    Some([]) | None => String::new(),
                    Some(f) => format!(" — stop: {}", f.join(", ")),
                }
            )),
        }
        if let Some(n) = self.torn {
            s.push_str(&format!(
                "History: the last line is torn ({n} byte{}); the next tick moves it aside\n",
                if n == 1 { "" } else { "s" }
            ));
        }
        s.push_str(&match (&self.budget, &self.last) {
            (Some(_), _) => match self.stop_words() {
                Some(stop) => format!(
                    "Stopped: {stop} — `--resume` reopens the run, `--fresh` starts a new one\n"
                ),
                None => "Stopped: no — the loop continues\n".to_owned(),
            },
            (None, Some(_)) => {
                "Stopped: unknown — there is history but no budget.json\n".to_owned()
            }
            (None, None) => format!(
                "Stopped: no run yet — `sdd-loop {} --loop` starts one\n",
                self.skill
            ),
        });
        if let Some(c) = &self.claims {
            s.push_str(&c.text());
        }
        if let Some(w) = &self.windows {
            s.push_str(&windows_text(w, self.now));
        }
        for g in &self.pending.gates {
            s.push_str(&format!(
                "Waiting for a person: gate {} ({}) — {} — posted at {}; reply `{}`, by {}\n",
                g.gate,
                g.id,
                g.question,
                g.url,
                crate::rules::replies::answer_text(
                    &g.id,
                    &format!(
                        "<{}>",
                        crate::rules::gates::GateName::from_name(&g.gate)
                            .map_or_else(|| "option".to_owned(), |n| n.options().join("|"))
                    )
                ),
                clock::format(g.deadline)
            ));
        }
        let files: Vec<String> = [paths.budget().to_path_buf(), paths.history()]
            .into_iter()
            .filter(|p| p.exists())
            .map(|p| rel(&p))
            .collect();
        if files.is_empty() {
            s.push_str(&format!(
                "Files: none yet — the first tick writes them under {}\n",
                rel(&paths.dir)
            ));
        } else {
            s.push_str(&format!("Files: {}\n", files.join(" · ")));
        }
        s
    }

    fn json(&self, root: &Path, paths: &StatePaths) -> serde_json::Value {
        let mut v = self.json_without_windows(root, paths);
        if !self.pending.gates.is_empty() {
            v["waiting_for_person"] = json!(
                self.pending
                    .gates
                    .iter()
                    .map(|g| json!({
                        "gate": g.gate, "id": g.id, "question": g.question, "url": g.url,
                        "posted_on": g.posted_on, "deadline": clock::format(g.deadline),
                    }))
                    .collect::<Vec<_>>()
            );
        }
        if let Some(w) = &self.windows {
            v["usage_windows"] = json!({
                "five_hour": w.five_hour.as_ref().map(|r| json!({"used_percent": r.used_at(self.now), "resets_at": r.resets_at, "read_at": r.read_at})),
                "seven_day": w.seven_day.as_ref().map(|r| json!({"used_percent": r.used_at(self.now), "resets_at": r.resets_at, "read_at": r.read_at})),
                "waiting": w.wait.as_ref().filter(|x| x.holds_at(self.now)),
            });
        }
        v
    }

    fn json_without_windows(&self, root: &Path, paths: &StatePaths) -> serde_json::Value {
        let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
        json!({
            "skill": self.skill.as_str(),
            "lock": match &self.lock {
                None => json!(null),
                Some(Ok((r, v))) => json!({
                    "pid": r.pid, "iteration": r.iteration, "started_at": r.started_at,
                    "alive": !v.is_dead(), "liveness": liveness_word(v),
                }),
                Some(Err(d)) => json!({"unreadable": d}),
            },
            "in_flight": self.inflight.as_ref().map(|f| json!({"iteration": f.journal.iteration, "pid": f.journal.pid, "started_at": f.journal.started_at, "recorded": f.recorded})),
            "checkpoint_restored": self.restored.as_ref().map(|r| json!({"from_iteration": r.iteration, "fields": r.fields})),
            "budget": self.budget.as_ref().map(|b| json!({
                "iterations": {"used": b.iterations_used, "max": b.max_iterations, "remaining": b.max_iterations.saturating_sub(b.iterations_used)},
                "prs": {"used": b.prs_touched.len(), "max": b.max_prs, "remaining": b.max_prs.saturating_sub(b.prs_touched.len() as u64), "touched": b.prs_touched},
                "minutes": {"used": self.minutes_now, "max": b.max_minutes, "remaining": b.max_minutes.saturating_sub(self.minutes_now)},
                "dollars": {"used": b.dollars_estimate, "max": b.max_dollars, "remaining": if b.max_dollars > 0.0 { json!((b.max_dollars - b.dollars_estimate).max(0.0)) } else { json!(null) }},
                "comments_pushed": b.comments_pushed,
                "merges_attempted": b.merges_attempted,
                "qmd_failures_consecutive": b.qmd_failures_consecutive,
                "rate_table_source": b.rate_table_source,
                "started_at": b.started_at,
            })),
            "last_tick": self.last.as_ref().map(|l| json!({
                "iteration": l.iteration, "outcome": l.outcome.map(|o| o.as_str()),
                "ended_at": l.ended_at, "stop_conditions_fired": l.stop_conditions_fired,
            })),
            "torn_last_line_bytes": self.torn,
            "stopped": self.budget.as_ref().and_then(|b| b.stopped.as_ref()).map(|s| json!({"cause": s.cause, "iteration": s.iteration, "gate": s.gate})),
            "files": {"budget": rel(paths.budget()), "history": rel(&paths.history())},
            "claims": self.claims.as_ref().map(Claims::json),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::clock::ManualClock;
    use crate::os::liveness::OsProbe;
    use crate::state::budget::Ceilings;

    fn status(root: &Path, as_json: bool) -> (u8, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let clock = ManualClock::at_str("2026-05-09T15:00:00Z");
        let code = run(
            root,
            Skill::Work,
            None,
            as_json,
            &clock,
            &OsProbe,
            None,
            &mut out,
            &mut err,
        );
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn the_usage_windows_and_a_wait_are_shown() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(tmp.path(), Skill::Work, None);
        std::fs::create_dir_all(&paths.dir).unwrap();
        std::fs::write(
            paths.windows(),
            r#"{"five_hour":{"used_percent":80.0,"resets_at":"2026-05-09T19:00:00Z","read_at":"2026-05-09T14:20:00Z","source":"claude-stream"},
               "wait":{"window":"five_hour","until":"2026-05-09T19:00:00Z","reason":"5-hour window at 80% (ceiling 75%)","since":"2026-05-09T14:20:00Z"}}"#,
        )
        .unwrap();
        let (code, out, _) = status(tmp.path(), false);
        assert_eq!(code, 0);
        assert!(
            out.contains("Usage windows: 5-hour 80% (resets at 19:00 UTC, in 4 h)\n"),
            "{out}"
        );
        assert!(
            out.contains("Waiting: for the 5-hour window to reset at 19:00 UTC (4 h) — 5-hour window at 80% (ceiling 75%)"),
            "{out}"
        );
        let (_, json, _) = status(tmp.path(), true);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["usage_windows"]["five_hour"]["used_percent"], 80.0);
        assert_eq!(
            v["usage_windows"]["waiting"]["until"],
            "2026-05-09T19:00:00Z"
        );
    }

    #[test]
    fn gates_posted_on_the_tracker_are_listed_with_their_links() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(tmp.path(), Skill::Work, None);
        std::fs::create_dir_all(&paths.dir).unwrap();
        std::fs::write(
            paths.gates(),
            r#"{"gates":[{"id":"g-0000abcd","gate":"budget-escalation","question":"Approaching minutes (16/20). Continue, raise ceiling, or stop?","subject":null,"posted_on":6,"comment_id":9,"url":"https://github.com/acme/app/issues/6#issuecomment-9","posted_at":"2026-05-09T14:16:00Z","deadline":"2026-05-10T14:16:00Z"}]}"#,
        )
        .unwrap();
        let (code, out, _) = status(tmp.path(), false);
        assert_eq!(code, 0);
        assert!(
            out.contains("Waiting for a person: gate budget-escalation (g-0000abcd) — Approaching minutes (16/20). Continue, raise ceiling, or stop? — posted at https://github.com/acme/app/issues/6#issuecomment-9; reply `/answer g-0000abcd <continue|raise|stop>`, by 2026-05-10T14:16:00Z"),
            "{out}"
        );
        let (_, json, _) = status(tmp.path(), true);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            v["waiting_for_person"][0]["url"],
            "https://github.com/acme/app/issues/6#issuecomment-9"
        );
    }

    #[test]
    fn empty_project_reports_nothing_and_creates_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let (code, out, _) = status(tmp.path(), false);
        assert_eq!(code, 0);
        assert!(out.contains("Lock: free"));
        assert!(out.contains("Run: none recorded yet"));
        // Regression: a project with no run was told "Stopped: no — the
        // loop continues" and pointed at two files that did not exist.
        assert!(
            out.contains("Stopped: no run yet — `sdd-loop work --loop` starts one"),
            "{out}"
        );
        assert!(
            out.contains("Files: none yet — the first tick writes them under .sdd/loop"),
            "{out}"
        );
        assert!(!out.contains("the loop continues"), "{out}");
        assert!(!tmp.path().join(".sdd").exists());
    }

    #[test]
    fn live_lock_budget_and_stop_are_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(tmp.path(), Skill::Work, None);
        crate::state::files::ensure_private_dir(&paths.dir).unwrap();
        let me = std::process::id();
        std::fs::write(
            paths.lock(),
            format!("{{\"pid\":{me},\"iteration\":3,\"started_at\":\"2026-05-09T14:50:00Z\",\"skill\":\"work\"}}"),
        )
        .unwrap();
        let mut b = Budget::start(
            "2026-05-09T14:00:00Z",
            Ceilings::default(),
            "built-in default",
        );
        b.iterations_used = 2;
        b.prs_touched.insert("#1");
        b.set_elapsed_seconds(20 * 60);
        b.stopped = Some(crate::state::budget::RunStop {
            cause: "prior_gate_stop".into(),
            iteration: 2,
            gate: Some("backlog-drift".into()),
        });
        b.save(paths.budget()).unwrap();
        let before = std::fs::read(paths.budget()).unwrap();
        let (code, out, _) = status(tmp.path(), false);
        assert_eq!(code, 0);
        assert!(
            out.contains(&format!("Lock: held by pid {me} (alive), iteration 3")),
            "{out}"
        );
        assert!(
            out.contains("Used: 2/5 iterations, 1/20 PRs, 20/60 minutes"),
            "{out}"
        );
        assert!(
            out.contains("Stopped: prior_gate_stop in iteration 2 (gate backlog-drift)"),
            "{out}"
        );
        assert!(
            out.contains("Files: .sdd/loop/work.budget.json\n"),
            "only the files that exist: {out}"
        );
        let (_, json, _) = status(tmp.path(), true);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["lock"]["alive"], true);
        assert_eq!(v["budget"]["iterations"]["remaining"], 3);
        assert_eq!(std::fs::read(paths.budget()).unwrap(), before, "read-only");
    }

    // Regression: while an ordinary tick ran, status said its budget.json
    // was "behind history" and showed history's minutes, though the tick
    // had only added the time since the last tick at its commit.
    #[test]
    fn a_live_tick_s_checkpoint_ahead_of_history_is_not_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(tmp.path(), Skill::Work, None);
        crate::state::files::ensure_private_dir(&paths.dir).unwrap();
        let mut recorded = Budget::start(
            "2026-05-09T14:00:00Z",
            Ceilings::default(),
            "built-in default",
        );
        recorded.iterations_used = 1;
        recorded.last_tick_ended_at = Some("2026-05-09T14:10:00Z".into());
        let line = HistoryLine {
            iteration: Some(1),
            outcome: Some(history::Outcome::Ok),
            budget_snapshot: Some(history::BudgetSnapshot::from(&recorded)),
            ..Default::default()
        };
        let text = serde_json::to_string(&line).unwrap();
        std::fs::write(paths.history(), format!("{text}\n")).unwrap();
        let mut committed = recorded.clone();
        committed.set_elapsed_seconds(20 * 60);
        committed.save(paths.budget()).unwrap();
        let me = std::process::id();
        std::fs::write(
            paths.lock(),
            format!("{{\"pid\":{me},\"iteration\":2,\"started_at\":\"2026-05-09T14:30:00Z\",\"skill\":\"work\"}}"),
        )
        .unwrap();
        let (code, out, _) = status(tmp.path(), false);
        assert_eq!(code, 0);
        assert!(!out.contains("Checkpoint:"), "{out}");
        assert!(
            out.contains("Used: 1/5 iterations, 0/20 PRs, 20/60 minutes"),
            "the live tick's checkpoint: {out}"
        );
        let (_, json, _) = status(tmp.path(), true);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["checkpoint_restored"], serde_json::Value::Null);
    }

    #[test]
    fn broken_budget_is_refused_without_touching_it() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(tmp.path(), Skill::Work, None);
        crate::state::files::ensure_private_dir(&paths.dir).unwrap();
        std::fs::write(paths.budget(), "{}").unwrap();
        let (code, _, err) = status(tmp.path(), false);
        assert_eq!(code, exit::DATA);
        assert!(err.contains("missing required field started_at"), "{err}");
        assert_eq!(std::fs::read_to_string(paths.budget()).unwrap(), "{}");
    }
}
