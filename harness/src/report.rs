//! The results of a suite run: one [`CaseResult`] per case, written as
//! SPEC-0017 `grading.json` (`{text, passed, evidence}` per assertion per
//! case, expectations and snapshot comparisons included) and
//! `benchmark.json` (pass rate, wall time and tokens per case), and shown
//! as a table.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::json;

use crate::case::Case;
use crate::grade::{self, Grade};
use crate::runner::CaseRun;
use crate::snapshot::{self, Stored};

/// One case's result.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub name: String,
    pub proves: String,
    pub file: String,
    pub passed: bool,
    pub expectations: Vec<Grade>,
    pub ticks: usize,
    #[serde(serialize_with = "seconds")]
    pub wall: Duration,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// The sandbox, when it was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<PathBuf>,
}

fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((d.as_secs_f64() * 1000.0).round() / 1000.0)
}

/// Whether stored snapshots are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snapshots {
    Compare,
    Skip,
}

fn snapshot_grade(case: &Case, rendered: &snapshot::Rendered) -> Grade {
    let dir = snapshot::dir_for(&case.file);
    let review = "run `cargo nextest run -p sdd-harness` and review with `cargo insta review`";
    let (passed, evidence) = match snapshot::compare(&dir, rendered) {
        Stored::Matches => (true, format!("matches {}.snap", rendered.name)),
        Stored::Missing(path) => (
            false,
            format!("no stored snapshot at {}; {review}", path.display()),
        ),
        Stored::Differs {
            path,
            line,
            stored,
            new,
        } => (
            false,
            format!(
                "differs from {} at line {line}: stored {stored:?}, now {new:?}; {review}",
                path.display()
            ),
        ),
        Stored::Unreadable { path, detail } => {
            (false, format!("cannot read {}: {detail}", path.display()))
        }
    };
    Grade::new(
        format!("snapshot {} matches the stored one", rendered.name),
        passed,
        evidence,
    )
}

/// Grades a finished run (and compares its snapshots, unless skipped).
/// Evidence quotes what the engine printed and recorded: its credentials
/// are redacted, whatever the engine did.
pub fn evaluate(case: &Case, run: &CaseRun, snapshots: Snapshots) -> CaseResult {
    let mut expectations = grade::grade(case, &run.record);
    if snapshots == Snapshots::Compare {
        for rendered in snapshot::render(case.id(), &run.record, &run.redactor) {
            expectations.push(snapshot_grade(case, &rendered));
        }
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
        passed: expectations.iter().all(Grade::ok),
        expectations,
        ticks: run.record.ticks.len(),
        wall: run.wall,
        tokens_in,
        tokens_out,
        sandbox: run.kept.clone(),
    }
}

/// A case that could not be loaded or run at all (the message, which may
/// quote the case or the engine, loses its credentials).
pub fn broken(id: &str, file: &Path, message: &str) -> CaseResult {
    let message = crate::redact::credentials().apply(message);
    CaseResult {
        id: id.to_owned(),
        name: String::new(),
        proves: String::new(),
        file: file.display().to_string(),
        passed: false,
        expectations: vec![Grade::new("the case loads and runs", false, message)],
        ticks: 0,
        wall: Duration::ZERO,
        tokens_in: 0,
        tokens_out: 0,
        sandbox: None,
    }
}

fn pass_rate(passed: usize, total: usize) -> f64 {
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
    json!({
        "cases": cases,
        "summary": {
            "passed": passed,
            "failed": results.len() - passed,
            "total": results.len(),
            "pass_rate": pass_rate(passed, results.len()),
        },
    })
}

/// Pass rate, time and tokens.
pub fn benchmark(results: &[CaseResult], wall: Duration) -> serde_json::Value {
    let passed = results.iter().filter(|r| r.passed).count();
    let tokens: u64 = results.iter().map(|r| r.tokens_in + r.tokens_out).sum();
    let cases: Vec<_> = results
        .iter()
        .map(|r| {
            let ok = r.expectations.iter().filter(|g| g.passed).count();
            json!({
                "id": r.id,
                "passed": r.passed,
                "pass_rate": pass_rate(ok, r.expectations.len()),
                "ticks": r.ticks,
                "wall_seconds": (r.wall.as_secs_f64() * 1000.0).round() / 1000.0,
                "tokens": { "in": r.tokens_in, "out": r.tokens_out, "total": r.tokens_in + r.tokens_out },
            })
        })
        .collect();
    json!({
        "run_summary": {
            "cases": results.len(),
            "passed": passed,
            "pass_rate": pass_rate(passed, results.len()),
            "wall_seconds": (wall.as_secs_f64() * 1000.0).round() / 1000.0,
            "tokens": tokens,
        },
        "cases": cases,
    })
}

/// Writes grading.json and benchmark.json into `dir`.
pub fn write_files(dir: &Path, results: &[CaseResult], wall: Duration) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let write = |name: &str, value: serde_json::Value| {
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        std::fs::write(dir.join(name), format!("{text}\n"))
    };
    write("grading.json", grading(results))?;
    write("benchmark.json", benchmark(results, wall))
}

/// The one-line progress note for a finished case.
pub fn progress(out: &mut dyn Write, index: usize, total: usize, r: &CaseResult) {
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
            if r.passed { "pass" } else { "FAIL" },
            r.ticks,
            r.wall.as_secs_f64(),
            r.tokens_in + r.tokens_out
        );
    }
    let passed = results.iter().filter(|r| r.passed).count();
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
        "{} cases: {passed} passed, {} failed{known} ({:.2}s)",
        results.len(),
        results.len() - passed,
        wall.as_secs_f64()
    );
}
