//! Loading YAML inputs — the scripted user's answers here; fixture
//! backlogs, fake-skill scripts and scenario cases in the crates that build
//! on this one — into typed structs, with errors that point at
//! `file:line:column`.
//!
//! Every format here is `deny_unknown_fields` and uses externally tagged
//! enums only, because serde-saphyr loses locations through `flatten` and
//! untagged or internally tagged enums. A [`YamlError`]
//! displays as `path:line:column: message`; [`YamlError::render`] adds the
//! source snippet and a `help:` line. Checks that run after parsing (a
//! duplicate number, an out-of-range exit code) use `Spanned` values so they
//! point at the offending key just the same.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_saphyr::{Location, MessageFormatter};

/// A YAML file that cannot be used, with where and why.
#[derive(Debug)]
pub struct YamlError {
    pub path: PathBuf,
    /// 1-based; 0 when unknown (an I/O error, a value built in code).
    pub line: u64,
    pub column: u64,
    pub message: String,
    pub help: String,
    /// The parser's snippet of the offending lines, when it has one.
    snippet: Option<String>,
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

impl YamlError {
    /// An error found after parsing, at a value's recorded location.
    pub fn at(
        path: &Path,
        location: Location,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> Self {
        Self {
            path: path.to_path_buf(),
            line: location.line(),
            column: location.column(),
            message: message.into(),
            help: help.into(),
            snippet: None,
        }
    }

    fn io(path: &Path, err: &std::io::Error, help: &str) -> Self {
        Self {
            path: path.to_path_buf(),
            line: 0,
            column: 0,
            message: format!("cannot read the file: {err}"),
            help: help.to_owned(),
            snippet: None,
        }
    }

    fn parse(path: &Path, err: &serde_saphyr::Error, format_help: &str) -> Self {
        let (line, column) = err
            .location()
            .map_or((0, 0), |loc| (loc.line(), loc.column()));
        let message = serde_saphyr::DefaultMessageFormatter
            .format_message(err.without_snippet())
            .into_owned();
        let path_text = path.display().to_string();
        let rendered = err.render_with_options(serde_saphyr::render_options! {
            source_name: Some(path_text.as_str()),
        });
        let snippet = rendered
            .split_once('\n')
            .map(|(_, rest)| rest.trim_end().to_owned())
            .filter(|rest| !rest.is_empty());
        Self {
            path: path.to_path_buf(),
            line,
            column,
            help: help_for(&message, format_help),
            message,
            snippet,
        }
    }

    /// The full diagnostic: `error: path:line:column: message`, the source
    /// snippet when known, then `help: …`.
    pub fn render(&self) -> String {
        let mut out = format!("error: {self}\n");
        if let Some(snippet) = &self.snippet {
            out.push_str(snippet);
            out.push('\n');
        }
        out.push_str("help: ");
        out.push_str(&self.help);
        out
    }
}

fn help_for(message: &str, format_help: &str) -> String {
    let hint = if message.contains("unknown field") {
        "remove the key or fix its spelling; the accepted keys are listed above"
    } else if message.contains("missing field") {
        "add the missing key"
    } else if message.contains("unknown variant") {
        "use one of the values listed above"
    } else if message.contains("invalid type") || message.contains("invalid value") {
        "give the value the type shown above"
    } else {
        "fix the YAML syntax at that position"
    };
    format!("{hint} ({format_help})")
}

/// Parses `text` (read from `path`) as a `T`. `format_help` names where
/// the format is documented; it ends every `help:` line.
pub fn parse<T: DeserializeOwned>(
    path: &Path,
    text: &str,
    format_help: &str,
) -> Result<T, YamlError> {
    serde_saphyr::from_str(text).map_err(|e| YamlError::parse(path, &e, format_help))
}

/// Reads and parses `path`.
pub fn load<T: DeserializeOwned>(path: &Path, format_help: &str) -> Result<T, YamlError> {
    let text = std::fs::read_to_string(path).map_err(|e| YamlError::io(path, &e, format_help))?;
    parse(path, &text, format_help)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(dead_code, reason = "only the parse outcome matters")]
    struct Doc {
        name: String,
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(dead_code, reason = "only the parse outcome matters")]
    struct Item {
        id: u64,
    }

    #[test]
    fn unknown_key_points_at_its_line_and_column() {
        let err = parse::<Doc>(
            Path::new("doc.yaml"),
            "name: x\nitems:\n  - id: 1\n  - idd: 2\n",
            "see README",
        )
        .unwrap_err();
        assert_eq!((err.line, err.column), (4, 5), "{}", err.render());
        assert!(
            err.to_string()
                .starts_with("doc.yaml:4:5: unknown field `idd`"),
            "{err}"
        );
        let rendered = err.render();
        assert!(
            rendered
                .lines()
                .last()
                .unwrap()
                .starts_with("help: remove the key"),
            "{rendered}"
        );
        assert!(rendered.contains("see README"), "{rendered}");
    }

    #[test]
    fn missing_file_names_the_path() {
        let err = load::<Doc>(Path::new("/nonexistent/x.yaml"), "h").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("/nonexistent/x.yaml:0:0: cannot read"),
            "{err}"
        );
    }
}
