//! Loading a case file: read it, parse it into a [`Case`] (every error at
//! `file:line:column`, serde's own messages given a `help:` by
//! [`diagnostics::explain`]), refuse a key hidden in a comment, then hold the
//! result to the rules its types cannot say ([`validate::case`]).

use std::path::Path;

use sdd_mocks::yaml::{self, YamlError};

use super::case::{Case, FORMAT_HELP};
use super::fixtures::Fixtures;
use super::{diagnostics, validate};

impl Case {
    /// Reads, parses and checks a case file.
    pub fn load(path: &Path, fixtures: &Fixtures) -> Result<Self, YamlError> {
        Self::load_shown(path, path, fixtures)
    }

    /// Reads `file`, naming it `shown` in messages.
    pub fn load_shown(file: &Path, shown: &Path, fixtures: &Fixtures) -> Result<Self, YamlError> {
        let text = std::fs::read_to_string(file).map_err(|e| {
            YamlError::at(
                shown,
                serde_saphyr::Location::UNKNOWN,
                format!("cannot read the case: {e}"),
                "check the path",
            )
        })?;
        let mut case = Self::parse(shown, &text, fixtures)?;
        case.file = file.to_path_buf();
        Ok(case)
    }

    /// Parses and checks `text`, read from `path`.
    pub fn parse(path: &Path, text: &str, fixtures: &Fixtures) -> Result<Self, YamlError> {
        let mut case: Case = yaml::parse(path, text, FORMAT_HELP).map_err(diagnostics::explain)?;
        diagnostics::comment_trap(path, text)?;
        case.path = path.to_path_buf();
        case.file = path.to_path_buf();
        validate::case(&case, fixtures)?;
        Ok(case)
    }
}
