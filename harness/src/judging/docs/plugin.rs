//! A plugin checkout as the doc check sees it: `skills/{skill}/SKILL.md`
//! under a root, read and compared with the engine ([`check`]).

use std::path::{Path, PathBuf};

use sdd_loop::state::paths::Skill;

use super::compare::{Report, compare};
use super::engine::Cli;
use super::markdown::Doc;

/// A SKILL.md that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {source}", shown.display())]
pub struct DocsError {
    pub shown: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl DocsError {
    pub fn help(&self) -> String {
        "a plugin checkout holds skills/work/SKILL.md and skills/review/SKILL.md; pass its directory with --plugin-root DIR".to_owned()
    }
}

/// Where `skill`'s document is, relative to a plugin root.
pub fn skill_doc(skill: Skill) -> PathBuf {
    Path::new("skills").join(skill.as_str()).join("SKILL.md")
}

/// Reads `root/skills/{skill}/SKILL.md` and compares it with the engine;
/// messages name the file under `shown` (the root as the user gave it).
pub fn check(root: &Path, shown: &Path, skill: Skill, cli: &Cli) -> Result<Report, DocsError> {
    let rel = skill_doc(skill);
    let shown = shown.join(&rel);
    let shown = shown
        .strip_prefix(".")
        .map(Path::to_path_buf)
        .unwrap_or(shown);
    let doc = Doc::load(&root.join(&rel), &shown).map_err(|source| DocsError {
        shown: shown.clone(),
        source,
    })?;
    Ok(compare(&doc, skill, cli))
}
