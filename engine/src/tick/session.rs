//! What the in-session halves take from the agent: `end`
//! assembles the iteration's result from `--result FILE|-` (the
//! SkillResult schema, every field optional), the progress events the
//! session appended during the work (`sdd-loop work event JSON`), and
//! flags for the common cases — then writes it into the exchange directory
//! exactly as a wrapped skill would, and ends the tick through the same
//! code as the wrapper.
//!
//! PRs named by flags are looked up on the tracker (branch, head, state),
//! so an agent says only "I opened #12". Nothing is written until the
//! whole result is known: a bad `--result`, an unknown PR or an
//! unreachable tracker leaves the iteration open, and `end` can be run
//! again.
//!
//! `--transcript` takes the spend from the session's Claude Code
//! transcript by the rule of [`crate::transcript`]: the responses that
//! answer this tick's prompt, and those that answer an earlier tick's
//! prompt and were written after that tick's `end`. The loop's ledger of
//! counted responses is written after the result and before the history
//! line: an `end` that stops before the history line and is run again
//! replaces its own ledger line, and one that stops after it is not run
//! again (the iteration is already recorded), so no response is counted
//! twice. (A session killed in the instant between the result and the
//! ledger is recovered from that result, and the next `end` may count the
//! earlier ticks' leftovers it took a second time: an over-count of a
//! closing message, never a miss.)

use super::ctx::Ctx;
use super::{Concluded, Failure, WorkReport, account, handover};
use crate::config::TickConfig;
use crate::exit;
use crate::skill::runner::NOT_STARTED;
use crate::state::budget::Budget;
use crate::state::exchange::{Exchange, fold_events};
use crate::state::files;
use crate::state::journal::Journal;
use crate::state::paths::StatePaths;
use crate::state::protocol::{
    self, ModelUsage, PROTOCOL_VERSION, PrReport, SkillEvent, SkillResult,
};
use crate::transcript::{self, ClaudeDirs, Ledger, Settle, Settled, TickId, TranscriptChoice};
use crate::world::tracker::TrackerError;

/// `end --result FILE|-`: where it came from and what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultInput {
    /// The path, or `-` for standard input (for messages).
    pub source: String,
    pub bytes: Vec<u8>,
}

/// `end`'s flags for the common cases.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndFlags {
    /// `--opened N`: PRs the work opened.
    pub opened: Vec<u64>,
    /// `--updated N`: PRs the work pushed to, reviewed or merged.
    pub updated: Vec<u64>,
    /// `--comments N`: review comments and replies pushed (replaces the
    /// reported count).
    pub comments: Option<u64>,
    /// `--merges N`: merge attempts (replaces the reported count).
    pub merges: Option<u64>,
    /// `--agents N`: agents dispatched (replaces the reported count).
    pub agents: Option<u64>,
    /// `--failed '#N=root cause'`.
    pub failures: Vec<(String, String)>,
    /// `--usage MODEL:IN:OUT` (replaces reported usage).
    pub usage: Vec<ModelUsage>,
    /// `--summary TEXT`.
    pub summary: Option<String>,
}

/// Everything `end` is told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndInput {
    /// `--iteration N`: the iteration the caller means to end.
    pub iteration: Option<u64>,
    /// The session the caller runs in (`--holder-pid`, else detected), when
    /// known: without `--iteration`, only the session that began the
    /// iteration ends it.
    pub caller: Option<u32>,
    pub result: Option<ResultInput>,
    pub flags: EndFlags,
    /// `--error`, `--qmd-unreachable`: how the work went.
    pub work: WorkReport,
    /// `--transcript PATH|auto`: the session's spend, from its Claude Code
    /// transcript (replaces usage reported any other way).
    pub transcript: Option<TranscriptSource>,
}

/// Where `end --transcript` reads the session's spend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptSource {
    pub choice: TranscriptChoice,
    /// `$CLAUDE_CONFIG_DIR`, `$HOME` and `$CLAUDE_CODE_SESSION_ID`,
    /// gathered by the CLI.
    pub dirs: ClaudeDirs,
    /// Wait for Claude Code to write what it has queued first: set when
    /// `end` runs inside Claude Code (`$CLAUDECODE`).
    pub settle: Option<Settle>,
    /// `--prompt-id`: the tick's own prompt (its `promptId`); else the
    /// transcript's last prompt is taken for it.
    pub prompt_id: Option<String>,
    /// `--last-message`: the response that ended the turn, which the
    /// settle waits for ([`transcript::settle_until`]).
    pub last_message: Option<String>,
}

/// The tick configuration for `end`: the open iteration's budget file,
/// CLAUDE.md and mode, whatever this command line says.
pub(crate) fn config_for_end(cfg: &TickConfig) -> Result<TickConfig, Failure> {
    let paths = StatePaths::new(&cfg.root, cfg.skill, None);
    let mut adjusted = cfg.clone();
    if let Some(j) = Journal::load(&paths.inflight())? {
        if let Some(b) = j.budget_file {
            adjusted.budget_file = Some(b);
        }
        if let Some(m) = j.claude_md {
            adjusted.claude_md = m;
        }
        adjusted.pr = j.single_pr;
        adjusted.no_chain = j.request.no_chain;
        adjusted.dry_run = j.request.dry_run;
    }
    Ok(adjusted)
}

/// `end`: assemble the result, hand it over, end the tick.
pub(crate) fn end_tick(ctx: &mut Ctx<'_, '_>, input: &EndInput) -> Result<Concluded, Failure> {
    let journal = Journal::load(&ctx.paths.inflight())?;
    let (journal, held) = handover::adopt(ctx, journal, input.iteration, input.caller)?;
    let Some(held) = handover::unless_recorded(ctx, &journal, held)? else {
        return handover::complete_recorded(ctx, &journal);
    };
    let exchange = Exchange::for_iteration(&ctx.paths, journal.iteration);
    let (result, ledger) = match assemble(ctx, &journal, &exchange, input) {
        Ok(r) => r,
        Err(f) => {
            // The iteration stays open: fix the input and run `end` again.
            held.keep();
            return Err(f);
        }
    };
    let result = ctx.redacted(result);
    let mut json = serde_json::to_vec_pretty(&result).expect("results serialise");
    json.push(b'\n');
    let written = files::ensure_private_dir(&exchange.dir)
        .and_then(|()| files::write_atomic(&exchange.result_path(), &json))
        .and_then(|()| match &ledger {
            Some(ledger) => ledger.save(&ctx.paths.transcript_ledger()),
            None => Ok(()),
        });
    if let Err(e) = written {
        held.keep();
        return Err(e.into());
    }
    held.keep();
    finish_open(
        ctx,
        Some(journal.iteration),
        &input.work,
        account::Blame::Targets,
    )
}

/// `end` from what is on disk: the journal, the lock, the exchange.
pub(crate) fn finish_open(
    ctx: &mut Ctx<'_, '_>,
    iteration: Option<u64>,
    work: &WorkReport,
    blame: account::Blame,
) -> Result<Concluded, Failure> {
    let journal = Journal::load(&ctx.paths.inflight())?;
    let (journal, held) = handover::adopt(ctx, journal, iteration, None)?;
    let Some(held) = handover::unless_recorded(ctx, &journal, held)? else {
        return handover::complete_recorded(ctx, &journal);
    };
    let budget = Budget::load(ctx.paths.budget())?.ok_or_else(|| {
        Failure::new(
            exit::DATA,
            format!(
                "budget file {} is missing while iteration {} is open",
                ctx.rel(ctx.paths.budget()),
                journal.iteration
            ),
            "restore it to end the iteration; until then the next begin fails closed (it names the fix: restore, --resume from history, or --fresh for a new loop on purpose)",
        )
    })?;
    let exchange = Exchange::for_iteration(&ctx.paths, journal.iteration);
    let (result, error) = match exchange.read_result() {
        Ok(r) => (r, work.failure.clone()),
        Err(why) => {
            let events = ctx.read_events(&exchange);
            let folded = crate::state::exchange::fold_events(&events);
            let error = match &work.failure {
                // A command that never ran wrote no result: nothing to add.
                Some(f) if f.starts_with(NOT_STARTED) => f.clone(),
                Some(f) => format!("{f} ({why})"),
                None => format!("invalid skill result: {why}"),
            };
            (folded, Some(error))
        }
    };
    account::finish(
        ctx,
        account::Finishing {
            journal: &journal,
            held,
            budget,
            result,
            error,
            work,
            empty: false,
            blame,
        },
    )
}

fn invalid(source: &str, detail: impl std::fmt::Display) -> Failure {
    Failure::new(
        exit::DATA,
        format!("{source}: not a skill result: {detail} — nothing was changed"),
        "the format is `sdd-loop schema skill-result` (every field optional here); fix it and run end again",
    )
}

/// The iteration's result from the session's reports, and with
/// `--transcript` the loop's ledger to write once the result is on disk.
fn assemble(
    ctx: &mut Ctx<'_, '_>,
    journal: &Journal,
    exchange: &Exchange,
    input: &EndInput,
) -> Result<(SkillResult, Option<Ledger>), Failure> {
    let mut result = match &input.result {
        Some(r) => {
            let mut value: serde_json::Value =
                serde_json::from_slice(&r.bytes).map_err(|e| invalid(&r.source, e))?;
            let Some(object) = value.as_object_mut() else {
                return Err(invalid(&r.source, "expected a JSON object"));
            };
            object
                .entry("protocol")
                .or_insert(serde_json::json!(PROTOCOL_VERSION));
            let parsed: SkillResult =
                serde_json::from_value(value).map_err(|e| invalid(&r.source, e))?;
            if parsed.protocol != PROTOCOL_VERSION {
                return Err(invalid(
                    &r.source,
                    format!(
                        "it speaks protocol {}, the engine speaks {PROTOCOL_VERSION}",
                        parsed.protocol
                    ),
                ));
            }
            parsed
        }
        None => fold_events(&ctx.read_events(exchange)),
    };
    let flags = &input.flags;
    let reported = flags
        .opened
        .iter()
        .map(|n| (*n, true))
        .chain(flags.updated.iter().map(|n| (*n, false)));
    for (number, opened) in reported {
        let pr = lookup(ctx, number)?;
        let at_start = journal
            .tracked_prs
            .iter()
            .find(|t| t.number == number)
            .and_then(|t| t.head_sha_at_iteration_start.clone());
        let report = PrReport {
            number,
            branch: pr.head_ref,
            head_sha_at_start: if opened { None } else { at_start },
            head_sha_at_end: Some(pr.head_sha),
            state: pr.state,
            opened,
        };
        match result.prs.iter_mut().find(|p| p.number == number) {
            Some(p) => *p = report,
            None => result.prs.push(report),
        }
    }
    if let Some(n) = flags.comments {
        result.comments_pushed = n;
    }
    if let Some(n) = flags.merges {
        result.merges_attempted = n;
    }
    if let Some(n) = flags.agents {
        result.agents_dispatched = n;
    }
    for (target, root_cause) in &flags.failures {
        result.failures.push(protocol::Failure {
            target: target.clone(),
            root_cause: root_cause.clone(),
        });
    }
    if !flags.usage.is_empty() {
        result.usage = flags.usage.clone();
    }
    if let Some(s) = &flags.summary {
        result.summary = Some(s.clone());
    }
    super::found::add(ctx, exchange, &journal.request, &mut result)?;
    let mut ledger = None;
    if let Some(source) = &input.transcript {
        let (counted, limit) = spend_from_transcript(ctx, journal, source, result.usage.len())?;
        result.usage = counted.spend.usage();
        ledger = Some(counted.ledger);
        if let Some(limit) = limit {
            let windows = result.usage_windows.get_or_insert_with(Default::default);
            windows.limited.get_or_insert(limit);
        }
    }
    Ok((result, ledger))
}

fn transcript_failure(e: impl std::fmt::Display, help: String) -> Failure {
    Failure::new(exit::DATA, format!("{e} — nothing was changed"), help)
}

/// `end --transcript`: what the session spent, by the rule of
/// [`crate::transcript`], with notes saying what was read and counted
/// (`replaced`: how many models' usage the transcript's replaces); and the
/// usage window's limit the tick's turn ended on, if it did.
fn spend_from_transcript(
    ctx: &mut Ctx<'_, '_>,
    journal: &Journal,
    source: &TranscriptSource,
    replaced: usize,
) -> Result<(transcript::Counted, Option<crate::state::windows::Limited>), Failure> {
    let path = transcript::locate(&source.choice, &source.dirs, &ctx.cfg.root)
        .map_err(|e| transcript_failure(&e, e.help()))?;
    let settled = match source.settle {
        Some(limits) => Some(
            transcript::settle_until(
                &path,
                limits,
                source
                    .last_message
                    .as_deref()
                    .and_then(transcript::awaited_words)
                    .as_deref(),
                &mut std::thread::sleep,
            )
            .map_err(|e| transcript_failure(&e, e.help()))?,
        ),
        None => None,
    };
    let ledger_path = ctx.paths.transcript_ledger();
    let ledger = Ledger::load(&ledger_path).map_err(|e| transcript_failure(&e, e.help()))?;
    let tick = TickId {
        iteration: journal.iteration,
        began_at: journal.started_at.clone(),
    };
    let counted = transcript::count_spend(&path, &ledger, &tick, source.prompt_id.as_deref())
        .map_err(|e| transcript_failure(&e, e.help()))?;
    if replaced > 0 {
        ctx.note(format!(
            "Usage reported for {replaced} model(s) is replaced by the transcript's"
        ));
    }
    if settled == Some(Settled::GaveUp) {
        ctx.note(format!(
            "The session transcript {} was still being written when end stopped waiting; what is not in it yet is counted by the next end",
            ctx.rel(&path)
        ));
    }
    let spend = &counted.spend;
    let skipped = spend.skipped;
    let not_usable = skipped.malformed + skipped.foreign + skipped.incomplete;
    ctx.note(format!(
        "Spend from the session transcript {}: {} API response(s), {} answering this tick's prompt and {} left from earlier ticks ({} file(s) read; {} line(s) that are not usable entries skipped)",
        ctx.rel(&path),
        spend.responses,
        spend.this_tick,
        spend.leftover(),
        spend.files.len(),
        not_usable,
    ));
    if spend.prompt.is_none() {
        ctx.note(format!(
            "The session transcript {} holds no prompt: only earlier ticks' leftovers were counted — pass the session's own file with --transcript PATH",
            ctx.rel(&path)
        ));
    }
    for gone in &spend.missing {
        ctx.note(format!(
            "The transcript {} of an earlier tick is gone; what it held after that tick's end is not counted",
            ctx.rel(gone)
        ));
    }
    Ok((counted, transcript::limit_hit(&path)))
}

/// A PR the session names, as the tracker has it.
fn lookup(ctx: &Ctx<'_, '_>, number: u64) -> Result<crate::world::tracker::Pull, Failure> {
    ctx.tracker.pull(number).map_err(|e| match e {
        TrackerError::Status { status: 404, .. } => Failure::new(
            exit::DATA,
            format!(
                "PR #{number} is not on the tracker ({}) — nothing was changed",
                ctx.cfg.repository.as_deref().unwrap_or("no repository")
            ),
            "name only PRs the work opened or touched (--opened N, --updated N); check --repo",
        ),
        other => other.into(),
    })
}

/// `sdd-loop work|review event JSON`: appends one progress event to the
/// open iteration's events file.
pub fn append_event(
    paths: &StatePaths,
    text: &str,
    redactor: &crate::rules::redact::Redactor,
) -> Result<u64, Failure> {
    let Some(journal) = Journal::load(&paths.inflight())? else {
        return Err(Failure::new(
            exit::NOT_OPEN,
            "no iteration is open to take the event — nothing was changed",
            format!(
                "run `sdd-loop {} begin --loop` first; events belong to the iteration it opens",
                paths.skill
            ),
        ));
    };
    let event: SkillEvent = serde_json::from_str(text).map_err(|e| {
        Failure::new(
            exit::DATA,
            format!("not a progress event: {e} — nothing was changed"),
            "the format is `sdd-loop schema skill-event`, e.g. {\"event\":\"pr\",\"number\":12,\"branch\":\"feature/12-x\",\"state\":\"open\",\"opened\":true}",
        )
    })?;
    let exchange = Exchange::for_iteration(paths, journal.iteration);
    let mut value = serde_json::to_value(&event).expect("events serialise");
    redactor.redact_json(&mut value);
    let line = value.to_string();
    files::append_line(&exchange.events_path(), &line, false)?;
    Ok(journal.iteration)
}
