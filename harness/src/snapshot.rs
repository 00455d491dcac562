//! The three snapshots of a case — `{id}__history` (the history lines as a
//! JSON array), `{id}__budget` (budget.json) and `{id}__output` (every
//! tick's stdout under a tick header) — rendered once, redacted by
//! [`Redactor`], and stored as insta `.snap` files in `snapshots/` next to
//! the case.
//!
//! The test suite asserts them with insta (so `cargo insta review` works);
//! `sdd-evals run` only compares them with the stored files through
//! insta's own snapshot reader and never writes one. Both see the same
//! text, because redaction happens here, before either.

use std::path::{Path, PathBuf};

use insta::internals::SnapshotContents;
use insta::{Snapshot, TextSnapshotKind};
use serde_json::Value;

use crate::record::RunRecord;
use crate::redact::Redactor;

/// One rendered snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// `{case_id}__{kind}`, the `.snap` file's stem.
    pub name: String,
    pub text: String,
}

/// The snapshot directory of a case file: `snapshots/` beside it.
pub fn dir_for(case_path: &Path) -> PathBuf {
    case_path
        .parent()
        .unwrap_or(Path::new("."))
        .join("snapshots")
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// Renders the snapshots of a run.
pub fn render(id: &str, run: &RunRecord, redactor: &Redactor) -> Vec<Rendered> {
    let history = Value::Array(run.history.iter().map(|l| redactor.json(l)).collect());
    let budget = match &run.budget {
        Some(b) => pretty(&redactor.json(b)),
        None => "(no budget.json)".to_owned(),
    };
    let mut output = String::new();
    for tick in &run.ticks {
        output.push_str(&format!("==> tick {} ({})\n", tick.number, tick.end));
        let stdout = redactor.text(&tick.stdout);
        if stdout.trim().is_empty() {
            output.push_str("(no output)\n");
        } else {
            output.push_str(stdout.trim_end());
            output.push('\n');
        }
        output.push('\n');
    }
    vec![
        Rendered {
            name: format!("{id}__history"),
            text: pretty(&history),
        },
        Rendered {
            name: format!("{id}__budget"),
            text: budget,
        },
        Rendered {
            name: format!("{id}__output"),
            text: output.trim_end().to_owned(),
        },
    ]
}

/// How a rendered snapshot compares with the stored one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    Matches,
    Missing(PathBuf),
    /// The first line that differs (stored, then new).
    Differs {
        path: PathBuf,
        line: usize,
        stored: String,
        new: String,
    },
    Unreadable {
        path: PathBuf,
        detail: String,
    },
}

/// Compares `rendered` with `dir/{name}.snap`, writing nothing.
pub fn compare(dir: &Path, rendered: &Rendered) -> Stored {
    let path = dir.join(format!("{}.snap", rendered.name));
    if !path.is_file() {
        return Stored::Missing(path);
    }
    let stored = match Snapshot::from_file(&path) {
        Ok(s) => s,
        Err(e) => {
            return Stored::Unreadable {
                path,
                detail: e.to_string(),
            };
        }
    };
    let SnapshotContents::Text(old) = stored.contents() else {
        return Stored::Unreadable {
            path,
            detail: "a binary snapshot".to_owned(),
        };
    };
    let new =
        insta::internals::TextSnapshotContents::new(rendered.text.clone(), TextSnapshotKind::File);
    if old.matches_latest(&new) {
        return Stored::Matches;
    }
    let (old_text, new_text) = (old.to_string(), new.to_string());
    let mut old_lines = old_text.lines();
    let mut new_lines = new_text.lines();
    let mut line = 1;
    loop {
        match (old_lines.next(), new_lines.next()) {
            (Some(a), Some(b)) if a == b => line += 1,
            (a, b) => {
                return Stored::Differs {
                    path,
                    line,
                    stored: a.unwrap_or("(end)").to_owned(),
                    new: b.unwrap_or("(end)").to_owned(),
                };
            }
        }
    }
}
