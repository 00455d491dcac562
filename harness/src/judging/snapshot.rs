//! The three snapshots of a case — `{id}__history` (the history lines as a
//! JSON array), `{id}__budget` (budget.json) and `{id}__output` (every
//! tick's stdout under a tick header) — rendered once, redacted by
//! [`Redactor`], and stored as insta `.snap` files in `snapshots/` next to
//! the case.
//!
//! The test suite asserts them with insta (so `sdd-evals review`, and
//! `cargo insta review`, work);
//! `sdd-evals run` compares them with the stored files through insta's own
//! snapshot reader. It writes one only for `--accept`, and only where none
//! is stored (a new case): a changed snapshot is a diff to review, never
//! accepted in bulk. Both see the same text, because redaction happens
//! here, before either.

use std::path::{Path, PathBuf};

use insta::internals::SnapshotContents;
use insta::{Snapshot, TextSnapshotKind};
use serde_json::Value;

use crate::driving::record::RunRecord;
use crate::loading::case::Case;
use crate::world::redact::Redactor;

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

/// The `description:` of a case's snapshots (shown by `cargo insta review`).
pub fn description(case: &Case) -> String {
    format!("{} ({})", case.name, case.proves)
}

/// Where the case test asserts its snapshots, as insta records it.
const SOURCE: &str = "harness/tests/evals.rs";

/// A metadata value as insta's writer spells it: plain when YAML reads it
/// back as the same string, else double-quoted.
fn yaml_scalar(text: &str) -> String {
    let plain = !text.is_empty()
        && !text.starts_with([
            ' ', '&', '*', '?', '|', '-', '<', '>', '=', '!', '%', '@', '.',
        ])
        && !text.ends_with(' ')
        && !text.contains([
            ':', '{', '}', '[', ']', ',', '#', '`', '"', '\'', '\\', '\t', '\n', '\r',
        ])
        && !text.chars().any(char::is_control)
        && text.parse::<f64>().is_err()
        && ![
            "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False",
            "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL", "~",
        ]
        .contains(&text);
    if plain {
        text.to_owned()
    } else {
        serde_json::to_string(text).unwrap_or_default()
    }
}

/// Writes `dir/{name}.snap` for a case that has none (`sdd-evals run
/// --accept`), in the layout the case test writes; its path. An existing
/// file is never touched: `None`.
pub fn accept_new(
    dir: &Path,
    rendered: &Rendered,
    description: &str,
) -> std::io::Result<Option<PathBuf>> {
    let path = dir.join(format!("{}.snap", rendered.name));
    if path.exists() {
        return Ok(None);
    }
    std::fs::create_dir_all(dir)?;
    let text = format!(
        "---\nsource: {SOURCE}\ndescription: {}\n---\n{}\n",
        yaml_scalar(description),
        rendered.text
    );
    std::fs::write(&path, text)?;
    Ok(Some(path))
}

/// Writes `dir/{name}.snap.new` beside a stored snapshot that changed, in
/// the layout the case test writes, for `sdd-evals review` to show and
/// take or drop; its path.
pub fn write_pending(
    dir: &Path,
    rendered: &Rendered,
    description: &str,
) -> std::io::Result<PathBuf> {
    let path = dir.join(format!("{}.snap.new", rendered.name));
    let text = format!(
        "---\nsource: {SOURCE}\ndescription: {}\n---\n{}\n",
        yaml_scalar(description),
        rendered.text
    );
    std::fs::write(&path, text)?;
    Ok(path)
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// Renders the snapshots of a run.
///
/// A case with machines shows each machine's history and budget.json
/// under its name, and each tick's output under `==> tick N on NAME`.
/// Where machines ticked at once, which of them won a race varies from
/// run to run and is not what such a case is about: the machines are
/// then named by the order of what they hold (`machine 1`, `machine 2`),
/// and an at-once tick's outputs are shown in the order of their text,
/// the machine a claim's holder runs on as `[MACHINE]`.
pub fn render(id: &str, run: &RunRecord, redactor: &Redactor) -> Vec<Rendered> {
    let raced_redactor;
    let redactor = if raced(run) {
        let names: Vec<&str> = run.machines.iter().map(|m| m.name.as_str()).collect();
        raced_redactor = redactor.clone().raced_machines(&names);
        &raced_redactor
    } else {
        redactor
    };
    let (history, budget) = if run.machines.is_empty() {
        (
            pretty(&history_json(&run.history, redactor)),
            budget_text(run.budget.as_ref(), redactor),
        )
    } else {
        machines_state(run, redactor)
    };
    let output = output(run, redactor);
    vec![
        Rendered {
            name: format!("{id}__history"),
            text: history,
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

fn history_json(lines: &[Value], redactor: &Redactor) -> Value {
    Value::Array(lines.iter().map(|l| redactor.json(l)).collect())
}

fn budget_text(budget: Option<&Value>, redactor: &Redactor) -> String {
    match budget {
        Some(b) => pretty(&redactor.json(b)),
        None => "(no budget.json)".to_owned(),
    }
}

/// Whether some tick ran on several machines at once.
fn raced(run: &RunRecord) -> bool {
    run.ticks.windows(2).any(|w| w[0].number == w[1].number)
}

/// Each machine's history and budget.json, by name (or, after a race, by
/// the order of what they hold).
fn machines_state(run: &RunRecord, redactor: &Redactor) -> (String, String) {
    let mut states: Vec<(String, String, String)> = run
        .machines
        .iter()
        .map(|m| {
            (
                m.name.clone(),
                pretty(&history_json(&m.history, redactor)),
                budget_text(m.budget.as_ref(), redactor),
            )
        })
        .collect();
    if raced(run) {
        states.sort_by(|a, b| (&a.1, &a.2).cmp(&(&b.1, &b.2)));
        for (i, state) in states.iter_mut().enumerate() {
            state.0 = format!("machine {}", i + 1);
        }
    }
    let join = |pick: fn(&(String, String, String)) -> &String| {
        states
            .iter()
            .map(|s| format!("==> {}\n{}", s.0, pick(s)))
            .collect::<Vec<_>>()
            .join("\n\n")
    };
    (join(|s| &s.1), join(|s| &s.2))
}

/// Every tick's stdout under a header; an at-once tick's in the order of
/// their text.
fn output(run: &RunRecord, redactor: &Redactor) -> String {
    let raced = raced(run);
    let mut blocks: Vec<(usize, String, String)> = run
        .ticks
        .iter()
        .map(|tick| {
            let on = match &tick.machine {
                Some(m) if !raced => format!(" on {m}"),
                Some(_) => " on a machine".to_owned(),
                None => String::new(),
            };
            let stdout = redactor.text(&tick.stdout);
            let body = if stdout.trim().is_empty() {
                "(no output)".to_owned()
            } else {
                stdout.trim_end().to_owned()
            };
            (
                tick.number,
                format!("==> tick {}{on} ({})", tick.number, tick.end),
                body,
            )
        })
        .collect();
    if raced {
        blocks.sort_by(|a, b| (a.0, &a.2, &a.1).cmp(&(b.0, &b.2, &b.1)));
    }
    let mut text = String::new();
    for (_, header, body) in blocks {
        text.push_str(&format!("{header}\n{body}\n\n"));
    }
    text
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accepted_snapshot_reads_back_as_what_was_rendered() {
        let dir = tempfile::tempdir().unwrap();
        let rendered = Rendered {
            name: "new-case__output".to_owned(),
            text: "==> tick 1 (exit 3)\nBacklog empty — 0 iterations used".to_owned(),
        };
        let description = "An empty backlog ends the loop (ADR-0028 stop condition #1)";
        let path = accept_new(dir.path(), &rendered, description)
            .unwrap()
            .expect("written");
        assert_eq!(compare(dir.path(), &rendered), Stored::Matches);
        let stored = Snapshot::from_file(&path).unwrap();
        assert_eq!(stored.metadata().description(), Some(description));
        assert_eq!(stored.metadata().source(), Some(SOURCE));

        let changed = Rendered {
            text: "something else".to_owned(),
            ..rendered
        };
        assert_eq!(accept_new(dir.path(), &changed, description).unwrap(), None);
        assert!(
            matches!(
                compare(dir.path(), &changed),
                Stored::Differs { line: 1, .. }
            ),
            "a stored snapshot is never overwritten"
        );
    }

    #[test]
    fn metadata_is_quoted_only_when_yaml_needs_it() {
        assert_eq!(
            yaml_scalar("The PR-touch budget stops"),
            "The PR-touch budget stops"
        );
        assert_eq!(yaml_scalar("stop #1"), "\"stop #1\"");
        assert_eq!(yaml_scalar("a: b"), "\"a: b\"");
        assert_eq!(yaml_scalar("true"), "\"true\"");
    }
}
