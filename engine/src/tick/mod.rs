//! One tick of `sdd-loop work|review --loop`: the whole ADR-0028 contract,
//! cut at the work into two halves (`docs/src/architecture.md`, "The
//! tick's phases").
//!
//! ```text
//! begin: lock → state → resume → entry stops → gates → journal + request
//!        (acquire, load, entry, work | review, handover)
//! work:  the wrapped skill command (wrapper tick) — or the calling agent
//!        session itself (in-session tick), between `begin` and `end`
//! end:   result → account → exit stops → history → budget → report → unlock
//!        (handover, account, record)
//! ```
//!
//! 1. Acquire `{skill}.lock` ([`acquire`]); on contention record a
//!    `skipped_lock` line and stop there.
//! 2. Load state ([`load`]): history tail (a torn line is queued for
//!    repair), the interrupted-iteration journal (queued for recovery),
//!    `budget.json` (validated), reconciled against history (history wins).
//! 3. `--resume` only ([`resume`]): re-attach or drift-gate tracked PRs,
//!    report worktrees.
//! 4. Entry stop conditions ([`entry`], then [`work`] or [`review`]).
//! 5. Gates, in the fixed order of [`crate::rules::gates::GateName`]. Until every
//!    gate is answered nothing is written: a tick that cannot get an answer
//!    exits 4 having changed nothing.
//!    The plan is what was claimed ([`claims`]): the candidates are claimed
//!    on the shared remote before the request is written, and `end` keeps
//!    or releases them; what became of them is the history line's
//!    `claims` ([`claim_log`], a leaf the context holds).
//! 6. Commit what loading queued, write the journal and the request
//!    ([`handover`]); the work runs.
//! 7. Account ([`account`]): counters, deduplicated PRs, dollars from
//!    per-model usage; exit stop conditions.
//! 8. Append the history line, rewrite `budget.json` ([`record`]), print
//!    the status block (and the final report on a stop), release the lock.
//!
//! The halves share nothing in memory: `begin` ends with the journal, the
//! exchange directory and the lock on disk, and `end` starts from them.
//! [`run`] (the wrapper tick) is `begin`, the skill, `end` in one process;
//! [`begin`] and [`end`] are the in-session halves, with the calling
//! session as the lock holder — so both modes are the same code and crash
//! the same way. Every side effect goes through a seam in [`World`], and
//! crash points ([`crate::os::crash`]) sit between the steps.

mod account;
mod acquire;
mod ask;
mod asked;
mod awaiting;
mod away;
mod claim_log;
mod claims;
mod concluded;
mod ctx;
mod entry;
mod failure;
mod found;
mod handover;
mod load;
mod record;
pub mod report;
mod resume;
mod review;
mod session;
mod windows;
mod work;

use std::io::Write;

use serde_json::json;

use crate::config::TickConfig;
use crate::exit;
use crate::os::clock::Clock;
use crate::os::liveness::ProcessProbe;
use crate::rules::gates::{Answerer, Prompt, Script};
use crate::skill::runner::{Interrupts, NOT_STARTED, RunOutcome, RunSpec, SkillRunner};
use crate::state::budget::Budget;
use crate::state::exchange::Exchange;
use crate::state::files;
use crate::state::history::{GateRecord, Outcome};
use crate::state::journal::Driver;
use crate::state::lock::Identity;
use crate::state::paths::Skill;
use crate::state::protocol::{PROTOCOL_VERSION, PrAssignment, SkillRequest};
use crate::world::git::Git;
use crate::world::tracker::Tracker;

pub use account::{SESSION_END, WorkReport};
pub use concluded::Concluded;
use ctx::{Ctx, Inputs, Seams};
pub use failure::Failure;
pub use handover::{Begun, Opened};
pub use review::DO_NOT_MERGE;
pub use session::{EndFlags, EndInput, ResultInput, TranscriptSource, append_event};

/// The seams a tick acts through.
pub struct World<'a> {
    pub clock: &'a dyn Clock,
    pub probe: &'a dyn ProcessProbe,
    /// The lock holder: this process (wrapper tick) or the calling session
    /// (`begin`).
    pub me: Identity,
    pub tracker: &'a dyn Tracker,
    pub git: &'a dyn Git,
    pub runner: &'a mut dyn SkillRunner,
    pub prompt: &'a mut dyn Prompt,
    pub interrupts: &'a dyn Interrupts,
    /// stdout: the loop's report (notes, status block, final report), or
    /// with `--json` only the summary line.
    pub out: &'a mut dyn Write,
    /// stderr: diagnostics (`error:` / `help:`), the skill's own output,
    /// and with `--json` the report.
    pub err: &'a mut dyn Write,
    /// The OS name for the ambiguous-liveness warning.
    pub platform: &'a str,
}

impl std::fmt::Debug for World<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("me", &self.me)
            .finish_non_exhaustive()
    }
}

/// A tick's answer: its exit code and the `--json` summary.
#[derive(Debug, Clone, PartialEq)]
pub struct TickResult {
    pub code: u8,
    pub summary: serde_json::Value,
}

/// Which command of a tick is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `sdd-loop work|review --loop`: begin, the skill, end.
    Wrapper,
    Begin,
    End,
}

/// Runs one wrapper tick: `begin`, the wrapped skill, `end`. Never panics
/// on bad state: every failure becomes an exit code with an `error:` and a
/// `help:` line on stderr.
pub fn run(cfg: &TickConfig, world: &mut World<'_>) -> TickResult {
    drive(cfg, world, Phase::Wrapper, None)
}

/// `sdd-loop work|review begin --loop`: everything up to the work, with
/// the calling session (`world.me`) as the lock holder.
pub fn begin(cfg: &TickConfig, world: &mut World<'_>) -> TickResult {
    drive(cfg, world, Phase::Begin, None)
}

/// `sdd-loop work|review end`: everything after the work of the open
/// iteration, from what the session reports in `input`.
pub fn end(cfg: &TickConfig, world: &mut World<'_>, input: &EndInput) -> TickResult {
    drive(cfg, world, Phase::End, Some(input))
}

/// What a phase produced, for its summary.
#[expect(
    clippy::large_enum_variant,
    reason = "one a tick, moved once: the journal's size costs nothing worth a box"
)]
enum Produced {
    Concluded(Concluded),
    Opened(Opened),
    /// Waiting for a usage window's reset: nothing was done.
    Waiting(windows::Waiting),
    /// Waiting for a person's answer to a gate posted on the tracker:
    /// nothing was done (docs/src/gates-away.md).
    AwaitingPerson(away::AwaitingPerson),
}

/// `go`, unless the loop waits for a usage window's reset or for a
/// person's answer to a posted gate.
fn unless_waiting(
    ctx: &mut Ctx<'_, '_>,
    driver: Driver,
    go: impl FnOnce(&mut Ctx<'_, '_>) -> Result<Produced, Failure>,
) -> Result<Produced, Failure> {
    if let Some(w) = windows::waiting(ctx, driver)? {
        return Ok(Produced::Waiting(w));
    }
    if let Some(a) = away::waiting(ctx)? {
        away::show(ctx, &a)?;
        return Ok(Produced::AwaitingPerson(a));
    }
    let produced = match go(ctx) {
        Err(f) if f.awaiting.is_some() => {
            let a = f.awaiting.expect("checked");
            away::show(ctx, &a)?;
            return Ok(Produced::AwaitingPerson(*a));
        }
        other => other?,
    };
    away::forget_unasked(ctx)?;
    Ok(produced)
}

fn drive(
    cfg: &TickConfig,
    world: &mut World<'_>,
    phase: Phase,
    input: Option<&EndInput>,
) -> TickResult {
    // `end` prices and redacts with what the open iteration began with.
    let adjusted;
    let cfg = match phase {
        Phase::End => match session::config_for_end(cfg) {
            Ok(c) => {
                adjusted = c;
                &adjusted
            }
            Err(f) => return report_failure(cfg, &mut *world.out, &mut *world.err, phase, f),
        },
        _ => cfg,
    };
    let prepared = match &cfg.answers_file {
        None => Ok(Script::default()),
        Some(path) => Script::load(path).map_err(|e| {
            Failure::new(
                exit::DATA,
                e.to_string(),
                "each entry is `- gate: NAME` and `answer: OPTION`, optionally with `match: TEXT` and `iteration: N`",
            )
        }),
    }
    .and_then(|script| Ok((script, Inputs::load(cfg)?)));
    let (script, inputs) = match prepared {
        Ok(p) => p,
        Err(f) => return report_failure(cfg, &mut *world.out, &mut *world.err, phase, f),
    };
    let World {
        clock,
        probe,
        me,
        tracker,
        git,
        runner,
        prompt,
        interrupts,
        out,
        err,
        platform,
    } = world;
    let seams = Seams {
        clock: *clock,
        probe: *probe,
        me: *me,
        tracker: *tracker,
        git: *git,
        interrupts: *interrupts,
        platform,
    };
    let (report, diag): (&mut dyn Write, &mut dyn Write) = if cfg.json {
        (&mut **err, &mut **out)
    } else {
        (&mut **out, &mut **err)
    };
    let answerer = Answerer::new(cfg.answers.clone(), script, &mut **prompt, 0);
    let mut ctx = Ctx::new(cfg, seams, report, diag, answerer, inputs);
    let produced = match phase {
        Phase::Wrapper if cfg.loop_mode => unless_waiting(&mut ctx, Driver::Wrapper, |ctx| {
            wrapper(ctx, &mut **runner).map(Produced::Concluded)
        }),
        Phase::Wrapper => wrapper(&mut ctx, &mut **runner).map(Produced::Concluded),
        Phase::Begin => unless_waiting(&mut ctx, Driver::Session, |ctx| {
            begin_tick(ctx, Driver::Session).map(|b| match b {
                Begun::Work(o) => Produced::Opened(o),
                Begun::Concluded(c) => Produced::Concluded(c),
            })
        }),
        Phase::End => {
            let input = input.expect("end has its input");
            session::end_tick(&mut ctx, input).map(Produced::Concluded)
        }
    };
    keep_asked(&mut ctx, &produced, phase);
    // A queued notice is an event that happened: told even when the tick
    // then failed (a gate posted, and the tick waits for its answer).
    if !ctx.notices.is_empty() || retries_notices(&produced) {
        ctx.deliver();
    }
    let notes = std::mem::take(&mut ctx.notes);
    let gates = std::mem::take(&mut ctx.gates);
    drop(ctx);
    match produced {
        Ok(p) => {
            let (code, mut summary) = summarise(cfg, phase, &p, notes, &gates);
            Inputs::base_redactor(cfg).redact_json(&mut summary);
            if cfg.json {
                let _ = writeln!(out, "{summary}");
            }
            let _ = out.flush();
            TickResult { code, summary }
        }
        Err(f) => report_failure(cfg, &mut **out, &mut **err, phase, f),
    }
}

/// A gate this tick asked and nobody answered is told to the person once
/// (`asked`); a tick that got past its gates forgets the gate it told.
fn keep_asked(ctx: &mut Ctx<'_, '_>, produced: &Result<Produced, Failure>, phase: Phase) {
    match produced {
        Err(f) if f.code == exit::NEEDS_ANSWER => {
            if let Some(question) = &f.unanswered {
                let asked_in = match phase {
                    Phase::Wrapper => asked::AskedIn::Shell,
                    Phase::Begin | Phase::End => asked::AskedIn::Session,
                };
                asked::tell(ctx, question, asked_in);
            }
        }
        Ok(p) if past_gates(p) => asked::passed(ctx),
        _ => {}
    }
}

/// Whether a tick that delivered nothing yet retries the notifications
/// kept from earlier ticks: not one that skipped for the lock (the holder
/// delivers), nor one that failed — but one that asks a gate does, or a
/// gate's undelivered notice would wait for an answer it asks for.
fn retries_notices(produced: &Result<Produced, Failure>) -> bool {
    match produced {
        Ok(Produced::Concluded(c)) => c.outcome != Outcome::SkippedLock || c.skipped_for_claims,
        Ok(Produced::Opened(_) | Produced::Waiting(_) | Produced::AwaitingPerson(_)) => true,
        Err(f) => f.code == exit::NEEDS_ANSWER,
    }
}

/// Whether a tick got past its gates: it worked, or concluded without
/// work (a stop, `end`) — not one that skipped for the lock, nor one that
/// waits (for a window's reset, or a person's reply on the tracker).
fn past_gates(produced: &Produced) -> bool {
    match produced {
        Produced::Concluded(c) => c.outcome != Outcome::SkippedLock || c.skipped_for_claims,
        Produced::Opened(_) => true,
        Produced::Waiting(_) | Produced::AwaitingPerson(_) => false,
    }
}

fn report_failure(
    cfg: &TickConfig,
    out: &mut dyn Write,
    err: &mut dyn Write,
    phase: Phase,
    f: Failure,
) -> TickResult {
    // An error can quote what a tracker or a skill said, and a gate's
    // question a root cause: redacted like everything else printed.
    let redactor = Inputs::base_redactor(cfg);
    let f = Failure {
        message: redactor.apply(&f.message),
        help: redactor.apply(&f.help),
        ..f
    };
    let _ = writeln!(err, "error: {}", f.message);
    if !f.help.is_empty() {
        let _ = writeln!(err, "help: {}", f.help);
    }
    let mut summary = json!({
        "skill": cfg.skill.as_str(),
        "exit_code": f.code,
        "error": f.message,
        "help": f.help,
    });
    if phase != Phase::Wrapper {
        summary["phase"] = json!(phase_name(phase));
        summary["outcome"] = json!("error");
    }
    if let Some(q) = &f.unanswered {
        summary["gate"] = json!(q.gate.name());
        summary["question"] = json!(redactor.apply(&q.text));
        summary["options"] = json!(q.options());
        summary["answer_with"] = json!(format!("--answer {}=<{}>", q.gate, q.options().join("|")));
        if phase == Phase::Begin {
            summary["outcome"] = json!("ask");
        }
    }
    if cfg.json {
        let _ = writeln!(out, "{summary}");
    }
    let _ = out.flush();
    TickResult {
        code: f.code,
        summary,
    }
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Wrapper => "tick",
        Phase::Begin => "begin",
        Phase::End => "end",
    }
}

/// The exit code and `--json` summary of a phase that produced something.
fn summarise(
    cfg: &TickConfig,
    phase: Phase,
    produced: &Produced,
    notes: Vec<String>,
    gates: &[GateRecord],
) -> (u8, serde_json::Value) {
    let gates_json: Vec<_> = gates
        .iter()
        .map(|g| json!({"name": g.name, "question": g.question, "answer": g.answer}))
        .collect();
    match produced {
        Produced::AwaitingPerson(_) | Produced::Waiting(_) => {
            // A tick that waits (for a person's answer, or a usage
            // window's reset): exit 0, or `begin`'s "nothing to do".
            let (key, what, reason) = match &produced {
                Produced::AwaitingPerson(a) => (
                    "waiting_for_person",
                    json!({"gate": a.gate.name(), "id": a.id, "url": a.url}),
                    json!("a gate posted on the tracker waits for a person's answer"),
                ),
                Produced::Waiting(w) => (
                    "wait",
                    json!({"window": w.wait.window, "until": w.wait.until, "reason": w.wait.reason}),
                    json!(w.note),
                ),
                _ => unreachable!("matched above"),
            };
            let code = if phase == Phase::Begin {
                exit::NOTHING_TO_DO
            } else {
                exit::TICK_DONE
            };
            let mut summary = json!({
                "skill": cfg.skill.as_str(),
                "outcome": "wait",
                "exit_code": code,
            });
            summary[key] = what;
            summary["gates"] = json!(gates_json);
            summary["notes"] = json!(notes);
            if phase == Phase::Begin {
                summary["phase"] = json!("begin");
                summary["outcome"] = json!("skip");
                summary["reason"] = reason;
            }
            (code, summary)
        }
        Produced::Opened(o) => {
            let j = &o.journal;
            let skill = cfg.skill;
            (
                exit::TICK_DONE,
                json!({
                    "skill": skill.as_str(),
                    "phase": "begin",
                    "outcome": "work",
                    "exit_code": exit::TICK_DONE,
                    "iteration": j.iteration,
                    "request": j.request,
                    "request_file": o.exchange.request_path(),
                    "events_file": o.exchange.events_path(),
                    "result_file": o.exchange.result_path(),
                    "holder_pid": j.pid,
                    "gates": gates_json,
                    "notes": notes,
                    "next": format!("do the work in the request, then run `sdd-loop {skill} end --iteration {} --transcript auto`", j.iteration),
                }),
            )
        }
        Produced::Concluded(c) => {
            let mut code = c.code;
            let mut summary = json!({
                "skill": cfg.skill.as_str(),
                "iteration": c.iteration,
                "outcome": c.outcome.as_str(),
                "exit_code": code,
                "stop_cause": c.fired.first().map(|f| f.cause.name()),
                "stop_conditions_fired": c.fired.iter().map(|f| f.cause.name()).collect::<Vec<_>>(),
                "gates": gates_json,
                "notes": notes,
                "budget": c.budget.as_ref().map(|b| serde_json::to_value(b).unwrap_or_default()),
            });
            match phase {
                Phase::Wrapper => {}
                Phase::Begin => {
                    let (outcome, reason) = match (c.code, c.outcome) {
                        (exit::TICK_DONE, Outcome::SkippedLock) if c.skipped_for_claims => {
                            ("skip", Some("other clones hold the claims on the work"))
                        }
                        (exit::TICK_DONE, Outcome::SkippedLock) => {
                            ("skip", Some("another tick holds the lock"))
                        }
                        (exit::TICK_DONE, _) => ("skip", Some("nothing was selected this tick")),
                        _ => ("stop", None),
                    };
                    if outcome == "skip" {
                        code = exit::NOTHING_TO_DO;
                    }
                    summary["phase"] = json!("begin");
                    summary["recorded"] = summary["outcome"].take();
                    summary["outcome"] = json!(outcome);
                    summary["exit_code"] = json!(code);
                    if let Some(r) = reason {
                        summary["reason"] = json!(r);
                    }
                }
                Phase::End => {
                    summary["phase"] = json!("end");
                    summary["loop"] = json!(if c.fired.is_empty() {
                        "continues"
                    } else {
                        "ended"
                    });
                }
            }
            (code, summary)
        }
    }
}

/// `begin`: the lock, state, entry checks, gates — then the journal and
/// request (or the tick's record when it ends there).
fn begin_tick(ctx: &mut Ctx<'_, '_>, driver: Driver) -> Result<Begun, Failure> {
    files::ensure_state_dir(&ctx.paths.dir)?;
    for path in [
        ctx.paths.budget().to_path_buf(),
        ctx.paths.history(),
        ctx.paths.inflight(),
    ] {
        files::check_regular_or_missing(&path)?;
    }
    let acquired = match acquire::acquire(ctx)? {
        Ok(a) => a,
        Err(concluded) => return Ok(Begun::Concluded(concluded)),
    };
    // From here a failure drops the held lock, which releases it; the
    // state on disk is whatever the last completed step left, which the
    // next tick reconciles.
    let mut run = load::load(ctx, acquired)?;
    if let Some(halt) = entry::check(ctx, &mut run)? {
        return entry::halt(ctx, run, halt).map(Begun::Concluded);
    }
    let planned = match ctx.cfg.skill {
        Skill::Work => work::plan(ctx, &mut run),
        Skill::Review => review::plan(ctx, &mut run),
    };
    // A tick that asks, or fails, after claiming leaves no claim behind.
    let planned = planned.inspect_err(|_| claims::release_unused(ctx))?;
    match planned {
        Err(halt) => entry::halt(ctx, run, halt).map(Begun::Concluded),
        Ok(dispatch) => {
            // A session reports what it did, but not always all of it:
            // `end` compares the world with this snapshot (`found`).
            let request = &dispatch.request;
            let before = if driver == Driver::Session
                && !(request.issues.is_empty() && request.prs.is_empty())
            {
                Some(found::snapshot(ctx, request).inspect_err(|_| claims::release_unused(ctx))?)
            } else {
                None
            };
            let begun = handover::open(ctx, run, dispatch, driver)
                .inspect_err(|_| claims::release_unused(ctx))?;
            if let (Some(before), Begun::Work(opened)) = (&before, &begun) {
                found::keep(ctx, before, &opened.exchange);
            }
            Ok(begun)
        }
    }
}

/// The wrapper tick: begin, the skill, end.
fn wrapper(ctx: &mut Ctx<'_, '_>, runner: &mut dyn SkillRunner) -> Result<Concluded, Failure> {
    if !ctx.cfg.loop_mode {
        return run_once(ctx, runner);
    }
    match begin_tick(ctx, Driver::Wrapper)? {
        Begun::Concluded(c) => Ok(c),
        Begun::Work(opened) => {
            // A budget that cannot be read here fails `end` with its own
            // error; the work just runs without a spend limit of its own.
            let budget = Budget::load(ctx.paths.budget()).ok().flatten();
            let dollars_left = budget
                .filter(|b| b.max_dollars > 0.0)
                .map(|b| (b.max_dollars - b.dollars_estimate).max(0.0));
            let spec = run_spec(ctx, dollars_left);
            // The skill's own output is passed through, redacted line by line.
            let outcome = {
                let mut echo = RedactingWriter::new(&mut *ctx.diag, &ctx.inputs.redactor);
                runner.run(&spec, &opened.exchange, &mut echo)
            };
            ctx.cfg.crash.hit("after-skill");
            let concluded = session::finish_open(
                ctx,
                Some(opened.journal.iteration),
                &WorkReport::from(&outcome),
                account::Blame::of(&outcome),
            )?;
            if outcome.could_not_start() {
                return Err(not_started(ctx, &outcome, Some(concluded.iteration)));
            }
            Ok(concluded)
        }
    }
}

/// A skill command that never ran is the setting's fault, not the work's:
/// in a loop the iteration is recorded errored with no issue blamed
/// (`recorded`), and the tick exits 64 naming the setting, so a shell loop
/// stops at once instead of running the same command line again
/// (docs/src/wrapped-skill.md, "Exit status and output").
fn not_started(ctx: &Ctx<'_, '_>, outcome: &RunOutcome, recorded: Option<u64>) -> Failure {
    let after = recorded.map_or_else(String::new, |n| {
        format!(". Iteration {n} is recorded errored, with no issue blamed for it; the loop goes on from the next")
    });
    Failure::new(
        exit::USAGE,
        outcome.failure().unwrap_or_else(|| NOT_STARTED.to_owned()),
        format!(
            "the skill command is {:?} (--skill-cmd or SDD_LOOP_SKILL_CMD), run with `sh -c` in {}: fix the setting and run the tick again{after}",
            ctx.cfg.skill_cmd,
            ctx.cfg.root.display()
        ),
    )
}

/// Writes whole lines, redacted; a partial last line is written when the
/// writer is dropped.
struct RedactingWriter<'w, 'r> {
    inner: &'w mut dyn Write,
    lines: crate::rules::redact::LineRedactor<'r>,
    pending: Vec<u8>,
}

impl<'w, 'r> RedactingWriter<'w, 'r> {
    fn new(inner: &'w mut dyn Write, redactor: &'r crate::rules::redact::Redactor) -> Self {
        Self {
            inner,
            lines: redactor.lines(),
            pending: Vec::new(),
        }
    }

    fn emit(&mut self, line: &[u8], newline: bool) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(line);
        let redacted = self.lines.line(&text);
        self.inner.write_all(redacted.as_bytes())?;
        if newline {
            self.inner.write_all(b"\n")?;
        }
        Ok(())
    }
}

impl Write for RedactingWriter<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        while let Some(at) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=at).collect();
            self.emit(&line[..line.len() - 1], true)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl Drop for RedactingWriter<'_, '_> {
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            let _ = self.emit(&rest, false);
        }
        let _ = self.inner.flush();
    }
}

fn run_spec(ctx: &Ctx<'_, '_>, dollars_left: Option<f64>) -> RunSpec {
    RunSpec {
        command: ctx.cfg.skill_cmd.clone(),
        cwd: ctx.cfg.root.clone(),
        env: tracker_env(ctx.cfg),
        env_removed: ctx.cfg.notify_vars.clone(),
        stall_timeout: ctx.cfg.stall_timeout,
        drain_timeout: ctx.cfg.drain_timeout,
        stop_file: ctx.paths.stop_request(),
        crash: ctx.cfg.crash.clone(),
        journal: ctx.cfg.loop_mode.then(|| ctx.paths.inflight()),
        guard: ctx.cfg.guard.clone(),
        dollars_left,
        redactor: ctx.inputs.redactor.clone(),
    }
}

/// The tracker settings the tick resolved, for the skill: a repository
/// taken from the clone's origin, a token lent by `gh` or `GITHUB_TOKEN`,
/// the default URL — what the engine reads the tracker with, the skill
/// opens its PRs with (wrapped-skill.md).
fn tracker_env(cfg: &TickConfig) -> Vec<(String, String)> {
    [
        ("SDD_LOOP_TRACKER_URL", &cfg.tracker_url),
        ("SDD_LOOP_REPO", &cfg.repository),
        ("SDD_LOOP_TRACKER_TOKEN", &cfg.tracker_token),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.clone().map(|v| (k.to_owned(), v)))
    .collect()
}

/// Without `--loop`: run the skill once, no loop state.
fn run_once(ctx: &mut Ctx<'_, '_>, runner: &mut dyn SkillRunner) -> Result<Concluded, Failure> {
    let tmp = std::env::temp_dir().join(format!(
        "sdd-loop-once-{}-{}",
        std::process::id(),
        ctx.started.as_millisecond()
    ));
    let exchange = Exchange { dir: tmp };
    let request = SkillRequest {
        protocol: PROTOCOL_VERSION,
        skill: ctx.cfg.skill,
        iteration: 1,
        repository: ctx.cfg.repository.clone(),
        issues: Vec::new(),
        prs: ctx
            .cfg
            .pr
            .map(|n| PrAssignment {
                number: n,
                branch: String::new(),
                head_sha: None,
                merge_allowed: true,
            })
            .into_iter()
            .collect(),
        max_new_prs: None,
        no_chain: ctx.cfg.no_chain,
        dry_run: ctx.cfg.dry_run,
    };
    // On disk while the skill runs: redacted from the start, like history.
    let request = ctx.redacted(request);
    exchange.prepare(&request)?;
    let spec = run_spec(ctx, None);
    let outcome = {
        let mut echo = RedactingWriter::new(&mut *ctx.diag, &ctx.inputs.redactor);
        runner.run(&spec, &exchange, &mut echo)
    };
    let _ = exchange.remove();
    if outcome.could_not_start() {
        return Err(not_started(ctx, &outcome, None));
    }
    match outcome.failure() {
        None => Ok(Concluded {
            code: exit::TICK_DONE,
            iteration: 0,
            outcome: Outcome::Ok,
            fired: Vec::new(),
            budget: None,
            skipped_for_claims: false,
        }),
        Some(why) => Err(Failure::new(
            outcome
                .exit_code
                .and_then(|c| u8::try_from(c).ok())
                .filter(|c| *c != 0)
                .unwrap_or(exit::INTERNAL),
            why,
            "without --loop the skill runs once and its exit status is passed on",
        )),
    }
}
