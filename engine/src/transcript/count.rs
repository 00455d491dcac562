//! The rule: which responses an `end` counts ([`count_spend`]).
//!
//! The tick's prompt is the one whose `promptId` the hooks recorded when
//! they began the tick (`end --prompt-id`), else the last prompt in the
//! chosen transcript when `end` reads it: `end` runs inside the tick's own
//! turn (a command of one of its responses, or the hook at its stop), and
//! no later prompt is written while a turn runs. An iteration a session
//! left open is ended by its next loop prompt, whose entry may be in the
//! file by then: there the recorded id is what finds the tick's own
//! prompt. A response counts when it answers the
//! tick's prompt or the prompt of an earlier tick in the [`Ledger`], and
//! no tick in the ledger counted it — so a response written after its
//! tick's `end` (the closing message) is counted by the next `end` of the
//! loop, in this session's transcript or, after the session ended, in the
//! earlier transcript the ledger names. Chat before the loop's first
//! prompt, and chat answering any prompt that was no tick's own, answers
//! no such prompt and is never counted. A tick that never reached `end
//! --transcript` (a killed session recovered from its events, a tick that
//! ended at `begin`) has no line in the ledger, so its responses are not
//! counted later either: what it reported was counted when it was
//! recorded, and a second count could only be a double one.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use super::ledger::{Ledger, LedgerTick, TickId};
use super::locate::{sibling_agent_files, subagent_files};
use super::scan::{FileScan, Prompt, ResponseKey, Seen, Skipped, scan_file};
use super::{TokenTotals, TranscriptError};
use crate::state::protocol::ModelUsage;

/// A file read, and how many counted responses were taken from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    pub path: PathBuf,
    pub responses: u64,
}

/// What an `end` counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spend {
    /// Per model id, as the transcript names it (dated ids are resolved
    /// when priced).
    pub by_model: BTreeMap<String, TokenTotals>,
    /// Distinct API responses counted.
    pub responses: u64,
    /// Of those, the ones answering this tick's prompt; the rest answer
    /// earlier ticks' prompts (written after those ticks' `end`).
    pub this_tick: u64,
    /// The prompt taken as the tick's own, when the transcript holds one.
    pub prompt: Option<String>,
    pub skipped: Skipped,
    /// Every file read, the chosen one first.
    pub files: Vec<FileRead>,
    /// Transcripts the ledger names that no longer exist.
    pub missing: Vec<PathBuf>,
}

impl Spend {
    /// The engine's usage records, one per model.
    pub fn usage(&self) -> Vec<ModelUsage> {
        self.by_model
            .iter()
            .map(|(model, totals)| totals.to_usage(model))
            .collect()
    }

    /// Responses answering earlier ticks' prompts.
    pub fn leftover(&self) -> u64 {
        self.responses - self.this_tick
    }
}

/// What `end` counted, and the ledger to write once the result is on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    pub spend: Spend,
    pub ledger: Ledger,
}

/// A file read, and whose prompts its responses answer.
struct Read {
    path: PathBuf,
    scan: FileScan,
    /// A subagent's file: its responses answer the prompt its session
    /// (index into the files) had when they were written.
    parent: Option<usize>,
}

/// One file's copy of a response.
struct Copy {
    file: usize,
    seen: Seen,
    answers: Option<String>,
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

/// Scans `path`; `None` when it does not exist (any more).
fn scan_if_present(path: &Path) -> Result<Option<FileScan>, TranscriptError> {
    match scan_file(path) {
        Ok(scan) => Ok(Some(scan)),
        Err(TranscriptError::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Counts what `tick`'s `end` owes, reading `chosen`, the transcripts the
/// ledger names, and their subagents' transcripts; returns the spend and
/// the ledger with this tick's line. `own` is the tick's prompt's
/// `promptId` when known: the last prompt of `chosen` carrying it is the
/// tick's prompt (a prompt entry without it, or none carrying it: the
/// last prompt of `chosen`).
pub fn count_spend(
    chosen: &Path,
    ledger: &Ledger,
    tick: &TickId,
    own: Option<&str>,
) -> Result<Counted, TranscriptError> {
    let earlier: Vec<&LedgerTick> = ledger.earlier(tick).collect();
    let (mut reads, missing) = read_sessions(chosen, &earlier)?;
    let sessions = reads.len();
    read_subagents(&mut reads, sessions)?;
    read_sibling_agents(&mut reads, sessions)?;
    let current = tick_prompt(&reads[0].scan.prompts, own);
    let mut loop_prompts: HashSet<&str> =
        earlier.iter().filter_map(|t| t.prompt.as_deref()).collect();
    if let Some(id) = &current {
        loop_prompts.insert(id);
    }
    let counted_before: HashSet<&ResponseKey> =
        earlier.iter().flat_map(|t| t.counted.iter()).collect();
    let mut spend = Spend {
        prompt: current.clone(),
        missing,
        ..Spend::default()
    };
    let mut copies = copies_of_responses(&mut reads, &mut spend);
    answer_subagent_prompts(&reads, &mut copies);
    let mut counted: BTreeSet<ResponseKey> = BTreeSet::new();
    for (key, list) in copies {
        let entries: u64 = list.iter().map(|c| c.seen.entries).sum();
        if counted_before.contains(&key) {
            spend.skipped.counted_before += entries;
            continue;
        }
        let answers = |id: &str| list.iter().any(|c| c.answers.as_deref() == Some(id));
        if !loop_prompts.iter().any(|id| answers(id)) {
            spend.skipped.not_loop += entries;
            continue;
        }
        count_response(&mut spend, &list, current.as_deref().is_some_and(answers));
        counted.insert(key);
    }
    let ledger = ledger.with(LedgerTick {
        iteration: tick.iteration,
        began_at: tick.began_at.clone(),
        transcript: chosen.to_path_buf(),
        prompt: current,
        counted: counted.into_iter().collect(),
    });
    Ok(Counted { spend, ledger })
}

/// `chosen` and the transcripts earlier ticks of the loop read, once
/// each; those gone are named, not read.
fn read_sessions(
    chosen: &Path,
    earlier: &[&LedgerTick],
) -> Result<(Vec<Read>, Vec<PathBuf>), TranscriptError> {
    let mut reads = vec![Read {
        path: chosen.to_path_buf(),
        scan: scan_file(chosen)?,
        parent: None,
    }];
    let mut missing: Vec<PathBuf> = Vec::new();
    for t in earlier {
        if reads.iter().any(|r| same_file(&r.path, &t.transcript))
            || missing.contains(&t.transcript)
        {
            continue;
        }
        match scan_if_present(&t.transcript)? {
            Some(scan) => reads.push(Read {
                path: t.transcript.clone(),
                scan,
                parent: None,
            }),
            None => missing.push(t.transcript.clone()),
        }
    }
    Ok((reads, missing))
}

/// The transcripts in each of the first `sessions` reads' `subagents/`
/// folder.
fn read_subagents(reads: &mut Vec<Read>, sessions: usize) -> Result<(), TranscriptError> {
    for index in 0..sessions {
        let session = reads[index].path.clone();
        for sub in subagent_files(&session)? {
            if let Some(scan) = scan_if_present(&sub)? {
                reads.push(Read {
                    path: sub,
                    scan,
                    parent: Some(index),
                });
            }
        }
    }
    Ok(())
}

/// Builds before the `subagents/` folder wrote them beside the session,
/// named `agent-*`, with the session's id in every entry: each is read
/// as the subagent of the session it names.
fn read_sibling_agents(reads: &mut Vec<Read>, sessions: usize) -> Result<(), TranscriptError> {
    let mut agent_files: Vec<PathBuf> = Vec::new();
    for index in 0..sessions {
        for file in sibling_agent_files(&reads[index].path)? {
            if !agent_files.contains(&file) && !reads.iter().any(|r| same_file(&r.path, &file)) {
                agent_files.push(file);
            }
        }
    }
    for file in agent_files {
        let Some(scan) = scan_if_present(&file)? else {
            continue;
        };
        let parent = scan.session.as_deref().and_then(|id| {
            (0..sessions).find(|&i| reads[i].path.file_stem().and_then(|s| s.to_str()) == Some(id))
        });
        if let Some(parent) = parent {
            reads.push(Read {
                path: file,
                scan,
                parent: Some(parent),
            });
        }
    }
    Ok(())
}

/// The tick's prompt: the last of `prompts` carrying `own`, else the last.
fn tick_prompt(prompts: &[Prompt], own: Option<&str>) -> Option<String> {
    own.and_then(|own| {
        prompts
            .iter()
            .rfind(|p| p.prompt_id.as_deref() == Some(own))
    })
    .or_else(|| prompts.last())
    .map(|p| p.id.clone())
}

/// Every response's copies across the files read, each file listed in
/// `spend`; a session's copy answers the prompt it was written under.
fn copies_of_responses(reads: &mut [Read], spend: &mut Spend) -> HashMap<ResponseKey, Vec<Copy>> {
    let mut copies: HashMap<ResponseKey, Vec<Copy>> = HashMap::new();
    for (index, read) in reads.iter_mut().enumerate() {
        spend.skipped.add(&read.scan.skipped);
        spend.files.push(FileRead {
            path: read.path.clone(),
            responses: 0,
        });
        let responses = std::mem::take(&mut read.scan.responses);
        for (key, seen) in responses {
            let answers = match read.parent {
                None => seen.prompt.map(|i| read.scan.prompts[i].id.clone()),
                Some(_) => None,
            };
            copies.entry(key).or_default().push(Copy {
                file: index,
                seen,
                answers,
            });
        }
    }
    copies
}

/// A subagent's response answers the prompt its session had at the
/// time: the session's last prompt written at or before it.
fn answer_subagent_prompts(reads: &[Read], copies: &mut HashMap<ResponseKey, Vec<Copy>>) {
    for list in copies.values_mut() {
        for copy in list.iter_mut() {
            if let Some(parent) = reads[copy.file].parent {
                copy.answers = reads[parent]
                    .scan
                    .prompts
                    .iter()
                    .rfind(|p| p.at.is_some_and(|at| at <= copy.seen.first_at))
                    .map(|p| p.id.clone());
            }
        }
    }
}

/// Counts one response of the loop's from its copies.
fn count_response(spend: &mut Spend, list: &[Copy], this_tick: bool) {
    let entries: u64 = list.iter().map(|c| c.seen.entries).sum();
    // The copy written first carries the response's usage; on a tie the
    // file read first (the chosen one) keeps it.
    let home = list
        .iter()
        .min_by(|a, b| {
            a.seen
                .first_at
                .cmp(&b.seen.first_at)
                .then(a.file.cmp(&b.file))
        })
        .expect("a response has a copy");
    spend.responses += 1;
    if this_tick {
        spend.this_tick += 1;
    }
    spend.files[home.file].responses += 1;
    spend.skipped.streamed += home.seen.entries - 1;
    spend.skipped.replayed += entries - home.seen.entries;
    spend
        .by_model
        .entry(home.seen.model.clone())
        .or_default()
        .add(&home.seen.last);
}
