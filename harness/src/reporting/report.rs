//! The results of a suite run: one [`CaseResult`] per case, written as
//! SPEC-0017 `grading.json` (`{text, passed, evidence}` per assertion per
//! case, expectations and snapshot comparisons included), `benchmark.json`
//! (pass rate, wall time and tokens per case and per skill,
//! [`crate::reporting::benchmark`]) and the HTML viewer ([`crate::reporting::viewer`]), and
//! shown as a table.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use crate::driving::phases::Phases;
use crate::driving::runner::CaseRun;
use crate::judging::grade::{self, Grade};
use crate::judging::snapshot::{self, Stored};
use crate::loading::case::Case;
use crate::reporting::timeline::{self, TickView};

/// One case's result.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub name: String,
    pub proves: String,
    pub file: String,
    /// The wrapped skill: `work` or `review`.
    pub skill: String,
    pub prompt: Option<String>,
    pub passed: bool,
    /// Why the case did not run, when it was skipped (its real CLI is not
    /// installed): never passed, and left out of every pass rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub expectations: Vec<Grade>,
    pub ticks: usize,
    #[serde(serialize_with = "seconds")]
    pub wall: Duration,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// The sandbox, when it was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<PathBuf>,
    /// What each tick did (for the viewer).
    pub timeline: Vec<TickView>,
    /// The snapshots as rendered, and how each compared.
    pub snapshots: Vec<SnapshotView>,
    /// Where the wall time went (`--timings`; not in `grading.json`).
    #[serde(skip)]
    pub phases: Phases,
}

/// A rendered snapshot and how it compared with the stored one.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotView {
    pub name: String,
    pub text: String,
    pub state: SnapshotState,
}

/// How a snapshot compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotState {
    Matches,
    /// None was stored; `--accept` wrote this file.
    Accepted(PathBuf),
    /// None is stored.
    Missing,
    /// It differs from the stored one.
    Differs,
    /// The stored one cannot be read.
    Unreadable,
    /// Not compared (`--no-snapshots`).
    Skipped,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0).round() / 1000.0)
}

/// Whether stored snapshots are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snapshots {
    Compare,
    /// Compare, and write the snapshots a new case does not have yet
    /// (`--accept`); a changed one still fails.
    AcceptNew,
    Skip,
}

/// The `help:` for a snapshot that is not stored: how to write it.
pub const ACCEPT_HELP: &str = "`sdd-evals run CASE --accept` writes a new case's snapshots (read them: they become the reference)";

/// The `help:` for a snapshot that changed: how to review the diff.
pub const REVIEW_HELP: &str = "the run wrote each changed snapshot beside the stored one as a .snap.new: `sdd-evals review` (`cargo review-snapshots`) shows the diffs, `--accept` takes them, `--reject` drops them (`cargo insta review` works too, when installed)";

fn snapshot_grade(
    case: &Case,
    rendered: &snapshot::Rendered,
    snapshots: Snapshots,
) -> (Grade, SnapshotState) {
    let dir = snapshot::dir_for(&case.file);
    // Messages name the file as the case was named (relative, usually).
    let shown = |path: &Path| match path.file_name() {
        Some(name) => snapshot::dir_for(&case.path).join(name),
        None => path.to_path_buf(),
    };
    let mut stored = snapshot::compare(&dir, rendered);
    let mut accepted = None;
    if snapshots == Snapshots::AcceptNew && matches!(stored, Stored::Missing(_)) {
        match snapshot::accept_new(&dir, rendered, &snapshot::description(case)) {
            Ok(Some(path)) => {
                stored = snapshot::compare(&dir, rendered);
                accepted = Some(path);
            }
            Ok(None) => {}
            Err(e) => {
                stored = Stored::Unreadable {
                    path: dir.join(format!("{}.snap", rendered.name)),
                    detail: format!("--accept cannot write it: {e}"),
                }
            }
        }
    }
    let (passed, evidence, state) = match stored {
        Stored::Matches => match accepted {
            Some(path) => (
                true,
                format!(
                    "new: written to {} by --accept; read it, it is the reference now",
                    shown(&path).display()
                ),
                SnapshotState::Accepted(shown(&path)),
            ),
            None => (
                true,
                format!("matches {}.snap", rendered.name),
                SnapshotState::Matches,
            ),
        },
        Stored::Missing(path) => (
            false,
            format!(
                "no stored snapshot at {} (a new case?); {ACCEPT_HELP}",
                shown(&path).display()
            ),
            SnapshotState::Missing,
        ),
        Stored::Differs {
            path,
            line,
            stored,
            new,
        } => {
            let pending =
                match snapshot::write_pending(&dir, rendered, &snapshot::description(case)) {
                    Ok(written) => format!(
                        "the new one is {}: `sdd-evals review` shows the diff, `--accept` takes it",
                        shown(&written).display()
                    ),
                    Err(e) => format!("(its .snap.new could not be written: {e})"),
                };
            (
                false,
                format!(
                    "differs from {} at line {line}: stored {stored:?}, now {new:?}; {pending}",
                    shown(&path).display()
                ),
                SnapshotState::Differs,
            )
        }
        Stored::Unreadable { path, detail } => (
            false,
            format!("cannot read {}: {detail}", shown(&path).display()),
            SnapshotState::Unreadable,
        ),
    };
    (
        Grade::new(
            format!("snapshot {} matches the stored one", rendered.name),
            passed,
            evidence,
        ),
        state,
    )
}

/// Grades a finished run (and compares its snapshots, unless skipped).
/// Evidence quotes what the engine printed and recorded: its credentials
/// are redacted, whatever the engine did.
pub fn evaluate(case: &Case, run: &CaseRun, snapshots: Snapshots) -> CaseResult {
    let started = Instant::now();
    let mut expectations = grade::grade(case, &run.record);
    // A failing case's snapshots would record the failure as the
    // reference: `--accept` writes them only once its checks pass.
    let refused = snapshots == Snapshots::AcceptNew && !expectations.iter().all(Grade::ok);
    let snapshots = if refused {
        Snapshots::Compare
    } else {
        snapshots
    };
    let mut views = Vec::new();
    for rendered in snapshot::render(case.id(), &run.record, &run.redactor) {
        let state = if snapshots == Snapshots::Skip {
            SnapshotState::Skipped
        } else {
            let (mut grade, state) = snapshot_grade(case, &rendered, snapshots);
            if refused && state == SnapshotState::Missing {
                grade.evidence = format!(
                    "no stored snapshot at {}.snap: --accept writes a new case's snapshots only once its other checks pass (they failed above)",
                    snapshot::dir_for(&case.path).join(&rendered.name).display()
                );
            }
            expectations.push(grade);
            state
        };
        views.push(SnapshotView {
            name: rendered.name,
            text: rendered.text,
            state,
        });
    }
    for g in &mut expectations {
        g.text = run.redactor.credentials(&g.text);
        g.evidence = run.redactor.credentials(&g.evidence);
    }
    let (tokens_in, tokens_out) = run.record.tokens();
    CaseResult {
        id: case.id().to_owned(),
        name: case.name.clone(),
        proves: case.proves.clone(),
        file: case.path.display().to_string(),
        skill: case.skill.as_str().to_owned(),
        prompt: case.prompt.clone(),
        passed: expectations.iter().all(Grade::ok),
        skipped: None,
        expectations,
        ticks: run.record.ticks.len(),
        wall: run.wall,
        tokens_in,
        tokens_out,
        sandbox: run.kept.clone(),
        timeline: timeline::timeline(&run.record),
        snapshots: views,
        phases: Phases {
            judging: started.elapsed(),
            ..run.phases.clone()
        },
    }
}

/// A case that could not be loaded or run at all (the message, which may
/// quote the case or the engine, loses its credentials).
pub fn broken(case: &Case, message: &str) -> CaseResult {
    let message = crate::world::redact::credentials().apply(message);
    CaseResult {
        id: case.id().to_owned(),
        name: case.name.clone(),
        proves: case.proves.clone(),
        file: case.path.display().to_string(),
        skill: case.skill.as_str().to_owned(),
        prompt: case.prompt.clone(),
        passed: false,
        skipped: None,
        expectations: vec![Grade::new("the case loads and runs", false, message)],
        ticks: 0,
        wall: Duration::ZERO,
        tokens_in: 0,
        tokens_out: 0,
        sandbox: None,
        timeline: Vec::new(),
        snapshots: Vec::new(),
        phases: Phases::default(),
    }
}

/// A case that did not run because its real CLI is not installed: `why`
/// names the CLI and the command that installs it.
pub fn skipped(case: &Case, why: &str) -> CaseResult {
    CaseResult {
        skipped: Some(why.to_owned()),
        expectations: Vec::new(),
        ..broken(case, why)
    }
}

/// The cases that ran: pass rates are theirs.
pub fn ran(results: &[CaseResult]) -> impl Iterator<Item = &CaseResult> {
    results.iter().filter(|r| r.skipped.is_none())
}

/// Whether a stored snapshot is missing or differs (so the snapshot
/// `help:` lines apply).
pub fn snapshot_trouble(results: &[CaseResult]) -> (bool, bool) {
    let states = || results.iter().flat_map(|r| &r.snapshots).map(|s| &s.state);
    // A failing case's missing snapshots wait for the case to pass.
    let missing = results
        .iter()
        .filter(|r| !failed_beyond_snapshots(r))
        .flat_map(|r| &r.snapshots)
        .any(|s| s.state == SnapshotState::Missing);
    (
        missing,
        states().any(|s| matches!(s, SnapshotState::Differs | SnapshotState::Unreadable)),
    )
}

/// Whether `result` failed on more than its snapshots: a check of what the
/// engine did, or the case stopped.
pub fn failed_beyond_snapshots(result: &CaseResult) -> bool {
    let failed = result.expectations.iter().filter(|g| !g.ok()).count();
    let snapshots = result
        .snapshots
        .iter()
        .filter(|s| {
            matches!(
                s.state,
                SnapshotState::Missing | SnapshotState::Differs | SnapshotState::Unreadable
            )
        })
        .count();
    failed > snapshots
}

/// A share, rounded to four places.
pub fn pass_rate(passed: usize, total: usize) -> f64 {
    if total == 0 {
        0.0
    } else {
        ((passed as f64 / total as f64) * 10000.0).round() / 10000.0
    }
}

/// SPEC-0017 grading.
pub fn grading(results: &[CaseResult]) -> serde_json::Value {
    let cases: Vec<_> = results
        .iter()
        .map(|r| {
            let passed = r.expectations.iter().filter(|g| g.passed).count();
            json!({
                "id": r.id,
                "name": r.name,
                "proves": r.proves,
                "file": r.file,
                "passed": r.passed,
                "skipped": r.skipped,
                "expectations": r.expectations,
                "summary": {
                    "passed": passed,
                    "failed": r.expectations.len() - passed,
                    "total": r.expectations.len(),
                    "pass_rate": pass_rate(passed, r.expectations.len()),
                },
            })
        })
        .collect();
    let passed = results.iter().filter(|r| r.passed).count();
    let total = ran(results).count();
    json!({
        "cases": cases,
        "summary": {
            "passed": passed,
            "failed": total - passed,
            "skipped": results.len() - total,
            "total": total,
            "pass_rate": pass_rate(passed, total),
        },
    })
}

/// The files a run writes into its report directory.
pub const GRADING: &str = "grading.json";
pub const BENCHMARK: &str = "benchmark.json";
pub const SUMMARY: &str = "summary.md";
pub const VIEWER: &str = "report.html";

/// Writes grading.json into `dir`, and beside it the run's other reports,
/// given as (file name, text).
pub fn write_files(
    dir: &Path,
    results: &[CaseResult],
    others: &[(&str, &str)],
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let grading = serde_json::to_string_pretty(&grading(results)).unwrap_or_default();
    std::fs::write(dir.join(GRADING), format!("{grading}\n"))?;
    for (name, text) in others {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// The one-line progress note for a finished case.
pub fn progress(out: &mut dyn Write, index: usize, total: usize, r: &CaseResult) {
    if let Some(why) = &r.skipped {
        let _ = writeln!(out, "[{index}/{total}] {} ... skipped: {why}", r.id);
        return;
    }
    let _ = writeln!(
        out,
        "[{index}/{total}] {} ... {} ({:.2}s)",
        r.id,
        if r.passed { "ok" } else { "FAILED" },
        r.wall.as_secs_f64()
    );
    for g in &r.expectations {
        let mark = match (&g.known_failure, g.ok()) {
            (_, false) => "✗",
            (Some(_), true) => "! known failure:",
            (None, true) => continue,
        };
        let _ = writeln!(out, "    {mark} {}", g.text);
        for line in g.evidence.lines().chain(g.known_failure.as_deref()) {
            let _ = writeln!(out, "      {line}");
        }
    }
    for s in &r.snapshots {
        if let SnapshotState::Accepted(path) = &s.state {
            let _ = writeln!(
                out,
                "    new: written to {} by --accept; read it, it is the reference now",
                path.display()
            );
        }
    }
    if let Some(dir) = &r.sandbox {
        let _ = writeln!(out, "    sandbox kept at {}", dir.display());
    }
}

/// The summary table.
pub fn table(out: &mut dyn Write, results: &[CaseResult], wall: Duration) {
    let width = results.iter().map(|r| r.id.len()).max().unwrap_or(4).max(4);
    let _ = writeln!(
        out,
        "{:<width$}  {:<6}  {:>5}  {:>8}  {:>9}",
        "case", "result", "ticks", "wall", "tokens"
    );
    for r in results {
        let _ = writeln!(
            out,
            "{:<width$}  {:<6}  {:>5}  {:>7.2}s  {:>9}",
            r.id,
            match (r.passed, &r.skipped) {
                (_, Some(_)) => "skip",
                (true, None) => "pass",
                (false, None) => "FAIL",
            },
            r.ticks,
            r.wall.as_secs_f64(),
            r.tokens_in + r.tokens_out
        );
    }
    let passed = results.iter().filter(|r| r.passed).count();
    let ran = ran(results).count();
    let skipped = match results.len() - ran {
        0 => String::new(),
        n => format!(", {n} skipped (their CLI is not installed: `sdd-evals agents install`)"),
    };
    let known = results
        .iter()
        .flat_map(|r| &r.expectations)
        .filter(|g| g.known_failure.is_some() && g.ok())
        .count();
    let known = if known > 0 {
        format!(", {known} known failure(s) still failing as documented")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{} case{}: {passed} passed, {} failed{skipped}{known} ({:.2}s)",
        results.len(),
        if results.len() == 1 { "" } else { "s" },
        ran - passed,
        wall.as_secs_f64()
    );
}
