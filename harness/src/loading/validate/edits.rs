//! The checks of a hand edit's before-actions (`edit:`, `truncate:`):
//! the file they name, the field an edit changes, and what it does there.

use sdd_mocks::yaml::YamlError;
use serde_saphyr::Spanned;

use super::{Checked, Checker};
use crate::loading::case::{self, FORMAT_HELP};
use crate::loading::diagnostics::unknown;
use crate::loading::reference::Doc;

impl Checker<'_> {
    /// The file an `edit` or `truncate` names: a state file's name, or a
    /// path in the project. Whether it holds JSON lines.
    pub(super) fn edited_file(&self, file: &Spanned<String>) -> Result<bool, YamlError> {
        if !case::names_state_file(&file.value) {
            self.relative(file, "the project")?;
            return Ok(file.value.ends_with(".jsonl"));
        }
        match case::state_file(&file.value) {
            Some((_, lines)) => Ok(lines),
            None => {
                let names: Vec<String> = case::STATE_FILES
                    .iter()
                    .map(|(n, _, _)| (*n).to_owned())
                    .collect();
                Err(unknown(
                    self.path,
                    file,
                    "state file",
                    &names,
                    "the skill's state files are named (`budget` is .sdd/loop/{skill}.budget.json), any other file by its path in the project (`docs/x.json`); the names are",
                ))
            }
        }
    }

    /// `edit`: a file, one field, and exactly one of `set` and `remove`.
    pub(super) fn edit(&self, edit: &case::Edit) -> Checked {
        let lines = self.edited_file(&edit.file)?;
        if let Some(line) = &edit.line {
            if !lines {
                return Err(self.at(
                    line.referenced,
                    format!("`line` picks a line of a JSON-lines file, and `{}` holds one JSON document", edit.file.value),
                    format!("drop `line` ({FORMAT_HELP})"),
                ));
            }
            if line.value == 0 {
                return Err(self.at(
                    line.referenced,
                    "lines are numbered from 1".to_owned(),
                    format!("leave `line` out to edit the last line ({FORMAT_HELP})"),
                ));
            }
        }
        if edit.pointer.value.is_empty() {
            return Err(self.at(
                edit.pointer.referenced,
                "an edit changes one field, and the empty pointer names the whole document".to_owned(),
                format!("name the field, e.g. `pointer: /max_iterations`; to replace a whole file use `file: {{ path, content }}` ({FORMAT_HELP})"),
            ));
        }
        match edit.file.value.as_str() {
            "budget" => self.field(&edit.pointer, Doc::Budget)?,
            "history" => self.field(&edit.pointer, Doc::History)?,
            _ => self.pointer(&edit.pointer)?,
        }
        match (&edit.set, &edit.remove) {
            (Some(_), Some(remove)) => Err(self.at(
                remove.referenced,
                "an edit either sets a field or removes it, and this one does both".to_owned(),
                format!("keep `set: VALUE` or `remove: true` ({FORMAT_HELP})"),
            )),
            (None, Some(remove)) if !remove.value => Err(self.at(
                remove.referenced,
                "`remove: false` changes nothing".to_owned(),
                format!("write `remove: true` to delete the field, or `set: VALUE` to change it ({FORMAT_HELP})"),
            )),
            (None, None) => Err(self.at(
                edit.pointer.referenced,
                format!("the edit of `{}` says neither what to set nor to remove it", edit.pointer.value),
                format!("add `set: VALUE` (any YAML value) or `remove: true` ({FORMAT_HELP})"),
            )),
            _ => Ok(()),
        }
    }
}
