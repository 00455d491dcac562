//! Family `torn tail`: a crash mid-append leaves a prefix of the last
//! history line. Three real ticks write a history; its last line is then
//! cut at every byte offset, from nothing to the whole line.
//!
//! Every offset goes through the library's readers (`read_all`,
//! `read_tail`, `repair_torn`): a cut line must be set aside byte-exact
//! and the file cut back to the line before; a whole line (with or without
//! its `\n`) must be kept. Offsets also go through a real tick — every one
//! in full mode, a spread in short mode — whose state is the cut history
//! and the budget checkpoint of the tick before (a crash mid-append
//! happens before `budget.json` is rewritten): it must exit 0, report the
//! torn line, keep its bytes in a sidecar, and continue the run from the
//! last complete line with every counter agreeing with history.

use std::path::Path;
use std::sync::Mutex;

use sdd_loop::state::files;
use sdd_loop::state::history::{self, Outcome};

use crate::world::{self, Project, Tracker};
use crate::{Ctx, Row};

/// The history the offsets are cut from.
struct Base {
    /// The complete lines before the last (each ending in `\n`).
    head: Vec<u8>,
    /// The last line, with its `\n`.
    last: Vec<u8>,
    /// `budget.json` as the tick before the last left it.
    budget_before: Vec<u8>,
}

fn base(ctx: &Ctx, tracker: &Tracker) -> Base {
    let p = Project::new(&ctx.engine, tracker);
    let mut budget_before = Vec::new();
    for tick in 0..3 {
        let ran = world::run(p.tick());
        assert_eq!(ran.code(), Some(0), "base tick {tick}: {}", ran.output());
        if tick == 1 {
            budget_before = std::fs::read(p.state().join("work.budget.json")).expect("budget");
        }
    }
    let bytes = std::fs::read(p.state().join("work.history.jsonl")).expect("history");
    let cut = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    Base {
        head: bytes[..cut].to_vec(),
        last: bytes[cut..].to_vec(),
        budget_before,
    }
}

/// Whether a cut at `k` leaves a torn line (not nothing, not whole JSON).
fn is_torn(base: &Base, k: usize) -> bool {
    k > 0 && k < base.last.len() - 1
}

fn kept_lines(base: &Base, k: usize) -> usize {
    2 + usize::from(!is_torn(base, k) && k > 0)
}

/// The readers at offset `k`; a problem, if any.
fn library(dir: &Path, base: &Base, k: usize) -> Option<String> {
    let path = dir.join(format!("h{k}.jsonl"));
    let mut bytes = base.head.clone();
    bytes.extend_from_slice(&base.last[..k]);
    std::fs::write(&path, &bytes).expect("write cut history");
    let torn = is_torn(base, k);
    let all = match history::read_all(&path) {
        Ok(t) => t,
        Err(e) => return Some(format!("offset {k}: read_all: {e}")),
    };
    let tail = match history::read_tail(&path, 3) {
        Ok(t) => t,
        Err(e) => return Some(format!("offset {k}: read_tail: {e}")),
    };
    let want = kept_lines(base, k);
    if all.lines.len() != want || tail.lines.len() != want {
        return Some(format!(
            "offset {k}: read_all kept {} lines, read_tail {}, expected {want}",
            all.lines.len(),
            tail.lines.len()
        ));
    }
    if all.torn != tail.torn || all.torn.is_some() != torn {
        return Some(format!(
            "offset {k}: torn tail {:?} / {:?}",
            all.torn, tail.torn
        ));
    }
    if let Some(t) = &all.torn {
        if t.bytes != base.last[..k] {
            return Some(format!("offset {k}: torn bytes differ from the cut"));
        }
        let sidecar = match history::repair_torn(&path, t, "test") {
            Ok(Some((_, s))) => s,
            Ok(None) => return Some(format!("offset {k}: repair_torn left a torn line alone")),
            Err(e) => return Some(format!("offset {k}: repair_torn: {e}")),
        };
        if std::fs::read(&sidecar).ok().as_deref() != Some(&base.last[..k])
            || std::fs::read(&path).ok().as_deref() != Some(&base.head[..])
        {
            return Some(format!("offset {k}: repair lost or changed bytes"));
        }
    }
    None
}

/// A real tick over the history cut at `k`; a problem, if any.
fn through_a_tick(ctx: &Ctx, tracker: &Tracker, base: &Base, k: usize) -> Option<String> {
    let p = Project::new(&ctx.engine, tracker);
    files::ensure_private_dir(&p.state()).expect("state dir");
    let mut bytes = base.head.clone();
    bytes.extend_from_slice(&base.last[..k]);
    files::write_atomic(&p.state().join("work.history.jsonl"), &bytes).expect("history");
    files::write_atomic(&p.state().join("work.budget.json"), &base.budget_before).expect("budget");
    let ran = world::run(p.tick());
    let out = ran.output();
    if ran.code() != Some(0) {
        return Some(format!("offset {k}: tick {}: {out}", ran.how()));
    }
    let torn = is_torn(base, k);
    if out.contains("torn last line") != torn {
        return Some(format!("offset {k}: torn line reported: {}", !torn));
    }
    let sidecars: Vec<_> = std::fs::read_dir(p.state())
        .expect("state dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".torn-"))
        .map(|e| std::fs::read(e.path()).expect("sidecar"))
        .collect();
    let want_sidecars: Vec<Vec<u8>> = if torn {
        vec![base.last[..k].to_vec()]
    } else {
        Vec::new()
    };
    if sidecars != want_sidecars {
        return Some(format!(
            "offset {k}: sidecars hold {} files, not the torn bytes",
            sidecars.len()
        ));
    }
    let lines = match p.history() {
        Ok(l) => l,
        Err(e) => return Some(format!("offset {k}: {e}")),
    };
    let want = kept_lines(base, k) + 1;
    let iterations: Vec<u64> = lines.iter().filter_map(|l| l.iteration).collect();
    if lines.len() != want
        || iterations != (1..=want as u64).collect::<Vec<_>>()
        || lines.iter().any(|l| l.outcome != Some(Outcome::Ok))
    {
        return Some(format!(
            "offset {k}: history iterations {iterations:?}, expected 1..={want}"
        ));
    }
    let budget = match p.budget() {
        Ok(b) => b,
        Err(e) => return Some(format!("offset {k}: {e}")),
    };
    let history_in: u64 = lines.iter().filter_map(|l| l.tokens_in_this_iter).sum();
    if budget["iterations_used"].as_u64() != Some(want as u64)
        || budget["tokens_in"].as_u64() != Some(history_in)
    {
        return Some(format!(
            "offset {k}: budget.json says {} iterations, {} tokens in; history {want}, {history_in}",
            budget["iterations_used"], budget["tokens_in"]
        ));
    }
    None
}

pub fn run(ctx: &Ctx) -> Row {
    let tracker = Tracker::start();
    let base = base(ctx, &tracker);
    let offsets: Vec<usize> = (0..=base.last.len()).collect();
    // The readers' offsets need no durable disk, and each repair syncs
    // three times: on tmpfs where there is one.
    let shm = Path::new("/dev/shm");
    let scratch = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .expect("temp dir");
    let mut problems: Vec<String> = offsets
        .iter()
        .filter_map(|&k| library(scratch.path(), &base, k))
        .collect();
    let library_failed = problems.len();
    let stride = if ctx.short { 37 } else { 1 };
    let ticked: Vec<usize> = offsets
        .iter()
        .copied()
        .filter(|k| k % stride == 0 || *k + 2 >= base.last.len())
        .collect();
    let tick_problems = Mutex::new(Vec::new());
    crate::parallel(ctx.jobs, &ticked, |&k| {
        if let Some(p) = through_a_tick(ctx, &tracker, &base, k) {
            tick_problems.lock().expect("problems").push(p);
        }
    });
    let tick_problems = tick_problems.into_inner().expect("problems");
    let tick_failed = tick_problems.len();
    problems.extend(tick_problems);
    crate::report_problems("torn tail", &problems);
    let torn = offsets.iter().filter(|&&k| is_torn(&base, k)).count();
    Row {
        family: "torn tail",
        what: format!(
            "history's last line ({} bytes) cut at every offset: readers, and a real tick on the cut file",
            base.last.len()
        ),
        trials: format!("{} offsets; {} through a tick", offsets.len(), ticked.len()),
        result: format!(
            "recovered {} of {} offsets ({torn} torn set aside byte-exact, the rest kept whole); ticks continued from the last complete line {} of {}",
            offsets.len() - library_failed,
            offsets.len(),
            ticked.len() - tick_failed,
            ticked.len()
        ),
        violations: Some(problems.len() as u64),
        secs: 0.0,
    }
}
