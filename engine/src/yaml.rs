//! YAML input files (the scripted user's answers, scenario cases) parsed
//! into typed structs, with errors that point at `file:line:column`.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// A YAML file that does not fit its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub path: PathBuf,
    pub line: u64,
    pub column: u64,
    pub message: String,
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path.display(),
            self.line,
            self.column,
            self.message
        )
    }
}

impl std::error::Error for YamlError {}

/// Parses `text` (read from `path`) as a `T`.
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, YamlError> {
    serde_saphyr::from_str::<T>(text).map_err(|err| {
        let (line, column) = err
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((1, 1));
        let mut message = err.without_snippet().to_string();
        // The location is already in front; drop the library's own suffix.
        if let Some(cut) = message.rfind(" at line ") {
            message.truncate(cut);
        }
        YamlError {
            path: path.to_path_buf(),
            line,
            column,
            message,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(dead_code, reason = "fields exist to be parsed")]
    struct Entry {
        gate: String,
    }

    #[test]
    fn unknown_key_points_at_file_line_column() {
        let err =
            parse::<Vec<Entry>>(Path::new("answers.yaml"), "- gate: a\n- gat: b\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert_eq!(err.column, 3);
        assert!(
            err.to_string()
                .starts_with("answers.yaml:2:3: unknown field `gat`"),
            "{err}"
        );
    }
}
