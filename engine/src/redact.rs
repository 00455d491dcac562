//! Redaction of gate questions and answers before they are persisted
//! (ADR-0028, "Sensitive content note").
//!
//! `gates[].question` may interpolate issue titles and branch names, and
//! `gates[].answer` may be free text, so both are passed through the
//! project's `### Loop Logging` patterns (under `### SDD Configuration` in
//! CLAUDE.md) before they reach history or a report. The block is either a
//! table with a `Pattern` column and an optional `Replacement` column, or a
//! bullet list of patterns; patterns are regular expressions and the default
//! replacement is `[REDACTED]`.
//!
//! ```markdown
//! ### Loop Logging
//! | Pattern | Replacement |
//! |---|---|
//! | `ghp_[A-Za-z0-9]{36}` | [GITHUB-TOKEN] |
//! | `(?i)customer-\d+` | |
//! ```

use std::path::PathBuf;

use regex::Regex;

use crate::claude_md::ClaudeMd;

pub const DEFAULT_REPLACEMENT: &str = "[REDACTED]";

/// A redaction pattern that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: redaction pattern `{pattern}` is not a valid regular expression: {detail}", path.display())]
pub struct RedactError {
    pub path: PathBuf,
    pub line: usize,
    pub pattern: String,
    pub detail: String,
}

impl RedactError {
    pub fn help(&self) -> &'static str {
        "patterns under `### Loop Logging` are regular expressions (Rust regex syntax); escape literal characters such as `.` or `(` with `\\`"
    }
}

/// The project's redaction rules; empty when none are declared.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    rules: Vec<(Regex, String)>,
}

impl Redactor {
    pub fn none() -> Self {
        Self::default()
    }

    pub fn from_claude_md(md: &ClaudeMd) -> Result<Self, RedactError> {
        let Some(section) = md.sdd_section("Loop Logging") else {
            return Ok(Self::none());
        };
        let mut raw: Vec<(usize, String, String)> = Vec::new();
        if let Some(table) = section.table() {
            let pattern_col = table.column("pattern").unwrap_or(0);
            let replacement_col = table.column("replace");
            for row in &table.rows {
                let Some(pattern) = row.cells.get(pattern_col).filter(|p| !p.is_empty()) else {
                    continue;
                };
                let replacement = replacement_col
                    .and_then(|c| row.cells.get(c))
                    .filter(|r| !r.is_empty())
                    .cloned()
                    .unwrap_or_else(|| DEFAULT_REPLACEMENT.to_owned());
                raw.push((row.line, pattern.clone(), replacement));
            }
        }
        for (line, pattern) in section.bullets() {
            raw.push((line, pattern, DEFAULT_REPLACEMENT.to_owned()));
        }
        let rules = raw
            .into_iter()
            .map(|(line, pattern, replacement)| {
                Regex::new(&pattern)
                    .map(|re| (re, replacement))
                    .map_err(|e| RedactError {
                        path: md.path().to_path_buf(),
                        line,
                        pattern: pattern.clone(),
                        detail: e.to_string().lines().last().unwrap_or("").trim().to_owned(),
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// `text` with every match of every pattern replaced.
    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (re, replacement) in &self.rules {
            out = re
                .replace_all(&out, regex::NoExpand(replacement))
                .into_owned();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn table_with_replacements() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "### SDD Configuration\n#### Loop Logging\n| Pattern | Replacement |\n|---|---|\n| `ghp_[A-Za-z0-9]+` | [TOKEN] |\n| `acme-\\d+` | |\n",
        );
        let r = Redactor::from_claude_md(&md).unwrap();
        assert_eq!(
            r.apply("Issue #4 from acme-991 uses ghp_abc123 and acme-2"),
            "Issue #4 from [REDACTED] uses [TOKEN] and [REDACTED]"
        );
    }

    #[test]
    fn bullet_list_patterns() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "### SDD Configuration\n### Loop Logging\n- `secret-[a-z]+`\n- hunter2\n",
        );
        let r = Redactor::from_claude_md(&md).unwrap();
        assert_eq!(r.apply("secret-foo hunter2 ok"), "[REDACTED] [REDACTED] ok");
    }

    #[test]
    fn replacement_is_literal() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "### SDD Configuration\n### Loop Logging\n| Pattern | Replacement |\n|---|---|\n| (x) | $1-gone |\n",
        );
        let r = Redactor::from_claude_md(&md).unwrap();
        assert_eq!(r.apply("x"), "$1-gone");
    }

    #[test]
    fn no_block_redacts_nothing() {
        let md = ClaudeMd::parse(Path::new("CLAUDE.md"), "# nothing\n");
        let r = Redactor::from_claude_md(&md).unwrap();
        assert!(r.is_empty());
        assert_eq!(r.apply("ghp_abc"), "ghp_abc");
    }

    #[test]
    fn bad_pattern_names_file_and_line() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "### SDD Configuration\n### Loop Logging\n- `unclosed(`\n",
        );
        let err = Redactor::from_claude_md(&md).unwrap_err();
        assert_eq!(err.line, 3);
        assert!(
            err.to_string()
                .starts_with("CLAUDE.md:3: redaction pattern `unclosed(`"),
            "{err}"
        );
    }
}
