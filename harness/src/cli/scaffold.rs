//! `sdd-evals new NAME`: a minimal case under `evals/loop/` that passes
//! `sdd-evals check` as written, for an author to edit.

use std::path::{Path, PathBuf};

use super::exit;
use crate::loading::case::{Case, FORMAT_HELP};
use crate::loading::fixtures::Fixtures;

/// Why a case could not be scaffolded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaffoldError {
    pub message: String,
    pub help: String,
    pub code: u8,
}

/// The case text for `id`.
pub fn template(id: &str) -> String {
    format!(
        "\
# {id}: say what this case shows, and why it matters. Format: docs/src/case-format.md.
id: {id}
name: An empty backlog ends the loop on the first tick
proves: \"ADR-0028 stop condition #1\"
covers: [\"Backlog-Empty Stop (Condition #1)\"]
prompt: /loop /sdd:work --loop
skill: work
world:
  backlog: empty
ticks:
  - expect: {{ exit: 3, outcome: halted }}
expect:
  stop_cause: backlog_empty
  final_iteration: 1
  printed: [\"Backlog empty\"]
"
    )
}

/// Writes `dir/{id}.yaml`; its path.
pub fn new_case(dir: &Path, id: &str, fixtures: &Fixtures) -> Result<PathBuf, ScaffoldError> {
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(ScaffoldError {
            message: format!("`{id}` is not a case id"),
            help: format!("use a-z, 0-9 and -, e.g. `c6-backlog-drift` ({FORMAT_HELP})"),
            code: exit::USAGE,
        });
    }
    let path = dir.join(format!("{id}.yaml"));
    if path.exists() {
        return Err(ScaffoldError {
            message: format!("{} already exists", path.display()),
            help: "pick another name, or edit the existing case".to_owned(),
            code: exit::USAGE,
        });
    }
    let text = template(id);
    Case::parse(&path, &text, fixtures).map_err(|e| ScaffoldError {
        message: format!("the template does not validate: {e}"),
        help: "this is a bug in sdd-evals".to_owned(),
        code: exit::BAD_CASE,
    })?;
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|e| ScaffoldError {
            message: format!("cannot write {}: {e}", path.display()),
            help: "check that evals/loop/ is writable".to_owned(),
            code: exit::CANT_WRITE,
        })?;
    Ok(path)
}
