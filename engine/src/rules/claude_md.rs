//! Reading the project's `CLAUDE.md`: the `### SDD Configuration` block and
//! the sub-blocks the loop uses (`Loop Cost Rates`, `Loop Logging`, agent
//! logins).
//!
//! The seeds show the sub-block both nested one level deeper
//! (`### SDD Configuration` then `#### Loop Cost Rates`) and as a sibling at
//! the same depth (`### SDD Configuration` then `### Loop Cost Rates`), so a
//! sub-block is any heading with the wanted name, at the configuration
//! heading's depth or deeper, after it and before the next shallower
//! heading. Fenced code blocks are skipped, so an example in a code fence
//! is never taken for configuration. Line numbers are kept for errors.

use std::path::{Path, PathBuf};

/// A parsed `CLAUDE.md` (or an empty one when the file does not exist).
#[derive(Debug, Clone, Default)]
pub struct ClaudeMd {
    path: PathBuf,
    lines: Vec<String>,
}

/// A heading: depth (number of `#`), text, 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Heading {
    depth: usize,
    text: String,
    line: usize,
}

/// A block's lines with their 1-based numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section<'a> {
    pub heading_line: usize,
    pub lines: Vec<(usize, &'a str)>,
}

/// One row of a markdown pipe table, cells trimmed, backticks removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub line: usize,
    pub cells: Vec<String>,
}

/// A pipe table: its header and its body rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Row>,
}

impl Table {
    /// Index of the first header cell containing `word` (case-insensitive).
    pub fn column(&self, word: &str) -> Option<usize> {
        let word = word.to_ascii_lowercase();
        self.header
            .iter()
            .position(|h| h.to_ascii_lowercase().contains(&word))
    }
}

impl ClaudeMd {
    pub fn parse(path: &Path, text: &str) -> Self {
        Self {
            path: path.to_path_buf(),
            lines: text.lines().map(str::to_owned).collect(),
        }
    }

    /// Reads `path`; a missing file is an empty document.
    pub fn load(path: &Path) -> std::io::Result<Self> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Self::parse(path, &text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self {
                path: path.to_path_buf(),
                lines: Vec::new(),
            }),
            Err(e) => Err(e),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn headings(&self) -> Vec<Heading> {
        let mut out = Vec::new();
        let mut fence: Option<&str> = None;
        for (i, line) in self.lines.iter().enumerate() {
            let trimmed = line.trim_start();
            for marker in ["```", "~~~"] {
                if trimmed.starts_with(marker) {
                    fence = match fence {
                        Some(open) if open == marker => None,
                        None => Some(marker),
                        other => other,
                    };
                }
            }
            if fence.is_some() || trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                continue;
            }
            let depth = trimmed.bytes().take_while(|b| *b == b'#').count();
            if (1..=6).contains(&depth) && trimmed[depth..].starts_with([' ', '\t']) {
                let text = trimmed[depth..].trim().trim_end_matches('#').trim();
                out.push(Heading {
                    depth,
                    text: text.to_owned(),
                    line: i + 1,
                });
            }
        }
        out
    }

    /// The body of sub-block `name` of `### SDD Configuration`, if declared.
    pub fn sdd_section(&self, name: &str) -> Option<Section<'_>> {
        let headings = self.headings();
        let config = headings
            .iter()
            .position(|h| h.text.eq_ignore_ascii_case("SDD Configuration"))?;
        let config_depth = headings[config].depth;
        let mut found = None;
        for (i, h) in headings.iter().enumerate().skip(config + 1) {
            if h.depth < config_depth {
                break;
            }
            if h.text.eq_ignore_ascii_case(name) {
                found = Some(i);
                break;
            }
        }
        let idx = found?;
        let start = headings[idx].line; // 1-based line of the heading
        let end = headings[idx + 1..]
            .iter()
            .find(|h| h.depth <= headings[idx].depth)
            .map(|h| h.line - 1)
            .unwrap_or(self.lines.len());
        Some(Section {
            heading_line: start,
            lines: (start..end)
                .map(|i| (i + 1, self.lines[i].as_str()))
                .collect(),
        })
    }
}

impl ClaudeMd {
    /// Logins that belong to agents (the responder, workers), from an
    /// `Agent Logins` sub-block: a bullet list, or a table whose first
    /// column (or `Login` column) holds them. Anyone else is a human.
    pub fn agent_logins(&self) -> Vec<String> {
        let Some(section) = self.sdd_section("Agent Logins") else {
            return Vec::new();
        };
        let mut logins: Vec<String> = section.bullets().into_iter().map(|(_, l)| l).collect();
        if let Some(table) = section.table() {
            let col = table.column("login").unwrap_or(0);
            logins.extend(table.rows.iter().filter_map(|r| r.cells.get(col).cloned()));
        }
        logins.retain(|l| !l.is_empty());
        logins
    }
}

impl ClaudeMd {
    /// The environment variables a `Loop Notify` sub-block names, one a
    /// bullet, with their line numbers: each holds notification URLs
    /// (docs/src/notifications.md). The URLs themselves never go in
    /// CLAUDE.md, which the work reads.
    pub fn notify_vars(&self) -> Vec<(usize, String)> {
        self.sdd_section("Loop Notify")
            .map(|s| s.bullets())
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .collect()
    }
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner
        .split('|')
        .map(|c| c.trim().trim_matches('`').trim().to_owned())
        .collect()
}

fn is_separator(cells: &[String]) -> bool {
    !cells.is_empty()
        && cells
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
}

impl Section<'_> {
    /// The first pipe table in the section.
    pub fn table(&self) -> Option<Table> {
        let mut rows = self
            .lines
            .iter()
            .skip_while(|(_, l)| !l.trim_start().starts_with('|'))
            .take_while(|(_, l)| l.trim_start().starts_with('|'))
            .map(|(n, l)| Row {
                line: *n,
                cells: cells(l),
            });
        let header = rows.next()?.cells;
        let rows = rows.filter(|r| !is_separator(&r.cells)).collect();
        Some(Table { header, rows })
    }

    /// Items of bullet lists (`- x`, `* x`), backticks removed.
    pub fn bullets(&self) -> Vec<(usize, String)> {
        self.lines
            .iter()
            .filter_map(|(n, l)| {
                let t = l.trim_start();
                let item = t.strip_prefix("- ").or_else(|| t.strip_prefix("* "))?;
                let item = item.trim();
                let item = item
                    .strip_prefix('`')
                    .and_then(|s| s.strip_suffix('`'))
                    .unwrap_or(item);
                Some((*n, item.to_owned()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NESTED: &str = "# Project\n\n### SDD Configuration\n\nsome: value\n\n#### Loop Cost Rates\n\n| Model | Input ($/Mtok) | Output ($/Mtok) |\n|---|---|---|\n| `claude-opus-4-7` | 15.00 | 75.00 |\n\n## Other\n| not | this |\n";
    const SIBLING: &str = "### SDD Configuration\n\n### Loop Cost Rates\n| Model | Input | Output |\n| --- | ---: | ---: |\n| claude-x | 1 | 2 |\n### Next\n";

    #[test]
    fn nested_layout() {
        let md = ClaudeMd::parse(Path::new("CLAUDE.md"), NESTED);
        let section = md.sdd_section("Loop Cost Rates").unwrap();
        assert_eq!(section.heading_line, 7);
        let table = section.table().unwrap();
        assert_eq!(table.header[0], "Model");
        assert_eq!(table.rows.len(), 1);
        assert_eq!(
            table.rows[0].cells,
            vec!["claude-opus-4-7", "15.00", "75.00"]
        );
        assert_eq!(table.rows[0].line, 11);
    }

    #[test]
    fn sibling_layout() {
        let md = ClaudeMd::parse(Path::new("CLAUDE.md"), SIBLING);
        let table = md.sdd_section("loop cost rates").unwrap().table().unwrap();
        assert_eq!(table.rows[0].cells, vec!["claude-x", "1", "2"]);
        assert_eq!(table.column("output"), Some(2));
    }

    #[test]
    fn section_outside_sdd_configuration_is_ignored() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "## Loop Cost Rates\n| a | b | c |\n## SDD Configuration\n# Top\n### Loop Cost Rates\n",
        );
        assert!(md.sdd_section("Loop Cost Rates").is_none());
    }

    #[test]
    fn headings_in_code_fences_are_ignored() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "```md\n### SDD Configuration\n### Loop Cost Rates\n| m | 1 | 2 |\n```\n",
        );
        assert!(md.sdd_section("Loop Cost Rates").is_none());
    }

    #[test]
    fn agent_logins_from_bullets_or_table() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "### SDD Configuration\n#### Agent Logins\n- `sdd-responder`\n- sdd-worker\n",
        );
        assert_eq!(md.agent_logins(), vec!["sdd-responder", "sdd-worker"]);
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "### SDD Configuration\n### Agent Logins\n| Login | Role |\n|---|---|\n| bot-1 | responder |\n",
        );
        assert_eq!(md.agent_logins(), vec!["bot-1"]);
        assert!(ClaudeMd::default().agent_logins().is_empty());
    }

    #[test]
    fn notify_vars_are_the_bullets_of_loop_notify() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "### SDD Configuration\n#### Loop Notify\n- `NTFY_PHONE`\n- SLACK_HOOK\n#### Loop Logging\n- x\n",
        );
        assert_eq!(
            md.notify_vars(),
            vec![(3, "NTFY_PHONE".to_owned()), (4, "SLACK_HOOK".to_owned())]
        );
        assert!(ClaudeMd::default().notify_vars().is_empty());
    }

    #[test]
    fn bullets_strip_markers_and_backticks() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "### SDD Configuration\n#### Loop Logging\n- `ghp_[A-Za-z0-9]+`\n* secret\n",
        );
        let b = md.sdd_section("Loop Logging").unwrap().bullets();
        assert_eq!(
            b,
            vec![(3, "ghp_[A-Za-z0-9]+".to_owned()), (4, "secret".to_owned())]
        );
    }
}
