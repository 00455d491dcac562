//! What the in-session halves take from the agent (DESIGN §11): `end`
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

use super::Failure;
use super::WorkReport;
use super::ctx::Ctx;
use super::handover;
use crate::config::TickConfig;
use crate::exchange::{Exchange, fold_events};
use crate::exit;
use crate::files;
use crate::journal::Journal;
use crate::paths::StatePaths;
use crate::protocol::{self, ModelUsage, PROTOCOL_VERSION, PrReport, SkillEvent, SkillResult};
use crate::tracker::TrackerError;
use crate::transcript::{self, ClaudeDirs, TranscriptChoice, Window};

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
    /// `$CLAUDE_CONFIG_DIR` and `$HOME`, gathered by the CLI.
    pub dirs: ClaudeDirs,
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
pub(crate) fn end_tick(
    ctx: &mut Ctx<'_, '_>,
    input: &EndInput,
) -> Result<super::Concluded, Failure> {
    let journal = Journal::load(&ctx.paths.inflight())?;
    let (journal, held) = handover::adopt(ctx, journal, input.iteration, input.caller)?;
    let Some(held) = handover::unless_recorded(ctx, &journal, held)? else {
        return handover::complete_recorded(ctx, &journal);
    };
    let exchange = Exchange::for_iteration(&ctx.paths, journal.iteration);
    let result = match assemble(ctx, &journal, &exchange, input) {
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
        .and_then(|()| files::write_atomic(&exchange.result_path(), &json));
    if let Err(e) = written {
        held.keep();
        return Err(e.into());
    }
    held.keep();
    super::finish_open(ctx, Some(journal.iteration), &input.work)
}

fn invalid(source: &str, detail: impl std::fmt::Display) -> Failure {
    Failure::new(
        exit::DATA,
        format!("{source}: not a skill result: {detail} — nothing was changed"),
        "the format is `sdd-loop schema skill-result` (every field optional here); fix it and run end again",
    )
}

/// The iteration's result from the session's reports.
fn assemble(
    ctx: &mut Ctx<'_, '_>,
    journal: &Journal,
    exchange: &Exchange,
    input: &EndInput,
) -> Result<SkillResult, Failure> {
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
        None => fold_events(&exchange.read_events().0),
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
    if let Some(source) = &input.transcript {
        let from = crate::clock::parse(&journal.started_at).unwrap_or(ctx.started);
        let window = Window {
            from,
            to: ctx.now(),
        };
        let spend = transcript::locate(&source.choice, &source.dirs, &ctx.cfg.root)
            .and_then(|path| transcript::read_spend(&path, window))
            .map_err(|e| {
                Failure::new(exit::DATA, format!("{e} — nothing was changed"), e.help())
            })?;
        if !result.usage.is_empty() {
            ctx.note(format!(
                "Usage reported for {} model(s) is replaced by the transcript's",
                result.usage.len()
            ));
        }
        let skipped = spend.skipped;
        let not_counted = skipped.malformed + skipped.foreign + skipped.incomplete;
        let file = spend
            .files
            .first()
            .map(|f| ctx.rel(&f.path))
            .unwrap_or_default();
        ctx.note(format!(
            "Spend from the session transcript {file}: {} API response(s) from {} to {} ({} file(s) read; {} line(s) that are not usable entries skipped)",
            spend.responses,
            crate::clock::format(window.from),
            crate::clock::format(window.to),
            spend.files.len(),
            not_counted,
        ));
        result.usage = spend.usage();
    }
    Ok(result)
}

/// A PR the session names, as the tracker has it.
fn lookup(ctx: &Ctx<'_, '_>, number: u64) -> Result<crate::tracker::Pull, Failure> {
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
    redactor: &crate::redact::Redactor,
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
