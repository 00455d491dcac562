//! The loop-safety scorecard's matrix (issue 35): case × plugin, each cell
//! held, broken with its evidence, n/a or error — as terminal text, as a
//! Markdown table (what the README publishes), as `scorecard.json` and as
//! the viewer's `scorecard.html` (self-contained, the viewer's style).

use std::fmt::Write as _;

use serde::Serialize;

use super::verdict::Verdict;
use crate::reporting::viewer::escape;

const STYLE: &str = include_str!("../reporting/viewer.css");

/// A row: one case.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub id: String,
    pub name: String,
    /// What "held" means for it.
    pub held: String,
}

/// A column: one plugin.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    /// The adapter's name.
    pub name: String,
    pub plugin_dir: String,
    pub adapter: String,
}

/// The whole matrix; `cells[row][column]`.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    /// The Claude Code the sessions ran (`claude --version`).
    pub claude_code: String,
    pub rows: Vec<Row>,
    pub columns: Vec<Column>,
    pub cells: Vec<Vec<Verdict>>,
    /// Wall time of the whole run, in seconds.
    pub wall_seconds: f64,
}

impl Matrix {
    /// Cells whose verdict is `error`.
    pub fn errors(&self) -> usize {
        self.cells
            .iter()
            .flatten()
            .filter(|v| matches!(v, Verdict::Error { .. }))
            .count()
    }
}

fn pad(text: &str, width: usize) -> String {
    format!("{text:<width$}")
}

/// The terminal table, then every cell that is not held, with its evidence.
pub fn text(m: &Matrix) -> String {
    let first = m.rows.iter().map(|r| r.id.len()).max().unwrap_or(4).max(4);
    let widths: Vec<usize> = m.columns.iter().map(|c| c.name.len().max(6)).collect();
    let mut out = format!("Loop-safety scorecard (Claude Code {})\n\n", m.claude_code);
    out.push_str(&pad("case", first));
    for (c, w) in m.columns.iter().zip(&widths) {
        let _ = write!(out, "  {}", pad(&c.name, *w));
    }
    out.push('\n');
    for (row, cells) in m.rows.iter().zip(&m.cells) {
        out.push_str(&pad(&row.id, first));
        for (cell, w) in cells.iter().zip(&widths) {
            let _ = write!(out, "  {}", pad(cell.word(), *w));
        }
        out.push('\n');
    }
    for (row, cells) in m.rows.iter().zip(&m.cells) {
        for (col, cell) in m.columns.iter().zip(cells) {
            let lines = match cell {
                Verdict::Held { .. } => continue,
                Verdict::Broken { evidence } => evidence.clone(),
                Verdict::NotApplicable { why } | Verdict::Error { why } => vec![why.clone()],
            };
            let _ = write!(out, "\n{} × {}: {}\n", row.id, col.name, cell.word());
            for line in lines {
                let _ = writeln!(out, "  {line}");
            }
        }
    }
    let _ = write!(out, "\n{:.1}s wall\n", m.wall_seconds);
    out
}

/// The matrix as a Markdown table: a cell is its word and, when broken,
/// the first line of its evidence.
pub fn markdown(m: &Matrix) -> String {
    let mut out = String::from("| case |");
    for c in &m.columns {
        let _ = write!(out, " {} |", c.name);
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(m.columns.len()));
    out.push('\n');
    for (row, cells) in m.rows.iter().zip(&m.cells) {
        let _ = write!(out, "| {} |", row.id);
        for cell in cells {
            match cell {
                Verdict::Broken { evidence } => {
                    let _ = write!(
                        out,
                        " **broken**: {} |",
                        evidence.first().map(String::as_str).unwrap_or_default()
                    );
                }
                other => {
                    let _ = write!(out, " {} |", other.word());
                }
            }
        }
        out.push('\n');
    }
    out
}

fn cell_html(html: &mut String, cell: &Verdict) {
    let (class, lines) = match cell {
        Verdict::Held { evidence } => ("ok-mark", evidence.clone()),
        Verdict::Broken { evidence } => ("bad-mark", evidence.clone()),
        Verdict::NotApplicable { why } => ("meta", vec![why.clone()]),
        Verdict::Error { why } => ("skip-mark", vec![why.clone()]),
    };
    let _ = write!(
        html,
        "<td><details><summary class=\"{class}\">{}</summary><ul>",
        cell.word()
    );
    for line in lines {
        let _ = write!(html, "<li>{}</li>", escape(&line));
    }
    html.push_str("</ul></details></td>");
}

/// `scorecard.html`: the matrix, each cell opening onto its evidence, and
/// what "held" means under each case's name.
pub fn html(m: &Matrix) -> String {
    let mut html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Loop-safety scorecard</title>\n<link rel=\"icon\" href=\"data:,\">\n\
         <style>\n{STYLE}</style>\n</head>\n<body>\n<div class=\"page\">\n<header>\n\
         <h1>Loop-safety scorecard</h1>\n<p class=\"run\">Claude Code {} · {} cases × {} plugins · {:.1}s wall</p>\n\
         </header>\n<main>\n<table class=\"skills\"><thead><tr><th>case</th>",
        escape(&m.claude_code),
        m.rows.len(),
        m.columns.len(),
        m.wall_seconds
    );
    for c in &m.columns {
        let _ = write!(
            html,
            "<th title=\"{}\">{}</th>",
            escape(&format!("{} with {}", c.plugin_dir, c.adapter)),
            escape(&c.name)
        );
    }
    html.push_str("</tr></thead><tbody>");
    for (row, cells) in m.rows.iter().zip(&m.cells) {
        let _ = write!(
            html,
            "<tr><td><strong>{}</strong><br><span class=\"meta\">{}</span><br><span class=\"hint\">held: {}</span></td>",
            escape(&row.id),
            escape(&row.name),
            escape(&row.held)
        );
        for cell in cells {
            cell_html(&mut html, cell);
        }
        html.push_str("</tr>");
    }
    html.push_str("</tbody></table>\n</main>\n</div>\n</body>\n</html>\n");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix() -> Matrix {
        Matrix {
            claude_code: "2.1.328".to_owned(),
            rows: vec![Row {
                id: "cap".to_owned(),
                name: "The cap".to_owned(),
                held: "at most 3 requests".to_owned(),
            }],
            columns: vec![
                Column {
                    name: "ours".to_owned(),
                    plugin_dir: ".".to_owned(),
                    adapter: "a.yaml".to_owned(),
                },
                Column {
                    name: "ref<1>".to_owned(),
                    plugin_dir: "r".to_owned(),
                    adapter: "r.yaml".to_owned(),
                },
            ],
            cells: vec![vec![
                Verdict::Held { evidence: vec![] },
                Verdict::Broken {
                    evidence: vec!["loop session: 8 model requests".to_owned()],
                },
            ]],
            wall_seconds: 1.0,
        }
    }

    #[test]
    fn the_text_lists_the_evidence_of_every_cell_not_held() {
        let t = text(&matrix());
        assert!(t.contains("cap   held    broken"), "{t}");
        assert!(
            t.contains("cap × ref<1>: broken\n  loop session: 8 model requests"),
            "{t}"
        );
    }

    #[test]
    fn the_markdown_row_carries_the_first_evidence_line() {
        assert!(
            markdown(&matrix())
                .contains("| cap | held | **broken**: loop session: 8 model requests |")
        );
    }

    #[test]
    fn the_page_escapes_what_it_shows() {
        let page = html(&matrix());
        assert!(page.contains("ref&lt;1&gt;"));
        assert!(!page.contains("ref<1>"));
    }
}
