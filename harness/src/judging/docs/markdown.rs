//! A SKILL.md as a list of blocks, each with its source line: headings,
//! paragraphs, list items, table rows (with their table's header) and code
//! blocks. The reader ([`super::reader`]) looks for what a document states
//! in these blocks, whatever their layout — a table, bullets or prose — so
//! the parsing of Markdown itself is left to `pulldown-cmark`.
//!
//! Each block keeps its prose (text outside code spans) apart from its
//! inline code spans, because a `--flag` inside `` `git push --force` ``
//! belongs to another program while one in prose belongs to the skill.

use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// What kind of block a [`Block`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A heading of this level (1–6).
    Heading(u8),
    Paragraph,
    /// A list item (its own text; a nested list's items are blocks of their own).
    Item,
    /// A table row: `header` for the table's first row; `table` indexes
    /// [`Doc::tables`].
    Row {
        header: bool,
        table: usize,
    },
    /// A fenced or indented code block.
    Code,
}

/// One block of the document.
#[derive(Debug, Clone)]
pub struct Block {
    pub kind: Kind,
    /// 1-based line where the block starts.
    pub line: usize,
    /// The block's text: prose and code spans, without Markdown markup,
    /// whitespace collapsed (a code block keeps its lines).
    pub text: String,
    /// Only the prose: the text outside code spans.
    pub prose: String,
    /// The inline code spans, in order.
    pub code: Vec<String>,
    /// A table row's cells (text of each, as in `text`).
    pub cells: Vec<String>,
    /// The index of the heading block this block sits under, if any.
    pub section: Option<usize>,
}

/// A parsed document.
#[derive(Debug, Clone)]
pub struct Doc {
    /// The path messages show.
    pub path: PathBuf,
    pub blocks: Vec<Block>,
    /// Each table's header cells.
    pub tables: Vec<Vec<String>>,
}

#[derive(Debug, Default)]
struct Builder {
    line: usize,
    text: String,
    prose: String,
    code: Vec<String>,
    cells: Vec<String>,
}

impl Builder {
    fn at(line: usize) -> Self {
        Self {
            line,
            ..Self::default()
        }
    }

    fn push_text(&mut self, s: &str) {
        self.text.push_str(s);
        self.prose.push_str(s);
    }
}

/// Collapses runs of whitespace to one space and trims.
pub fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Backslash escapes that survive inside code spans (`\|` in a table cell,
/// `\$`) read as the character they escape.
fn unescape(code: &str) -> String {
    code.replace("\\|", "|").replace("\\$", "$")
}

impl Doc {
    /// Reads and parses `file`, naming it `shown` in messages.
    pub fn load(file: &Path, shown: &Path) -> std::io::Result<Self> {
        Ok(Self::parse(shown, &std::fs::read_to_string(file)?))
    }

    /// Parses `text`, read from `path`.
    pub fn parse(path: &Path, text: &str) -> Self {
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let line_of = |offset: usize| line_starts.partition_point(|&s| s <= offset);
        let options = Options::ENABLE_TABLES
            | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
            | Options::ENABLE_STRIKETHROUGH;
        let mut parsing = Parsing::new(path);
        for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
            let line = line_of(range.start);
            match event {
                Event::Start(tag) => parsing.start(tag, line),
                Event::End(end) => parsing.end(end),
                Event::Text(t) if !parsing.in_metadata => parsing.push_text(&t),
                Event::Code(c) => parsing.push_code(unescape(&c)),
                // `<N>` or `<root cause>` parse as inline HTML; an author
                // writing them means the placeholder.
                Event::InlineHtml(html) if !html.starts_with("<!--") => parsing.push_text(&html),
                Event::SoftBreak | Event::HardBreak => parsing.push_text(" "),
                _ => {}
            }
        }
        parsing.doc
    }

    /// The header of the table a row belongs to.
    pub fn header_of(&self, block: &Block) -> Option<&[String]> {
        match block.kind {
            Kind::Row { table, .. } => self.tables.get(table).map(Vec::as_slice),
            _ => None,
        }
    }

    /// The heading `block` sits under (its text), if any.
    pub fn heading_of(&self, block: &Block) -> Option<&Block> {
        block.section.and_then(|i| self.blocks.get(i))
    }

    /// The blocks of the section headed by block `heading` (the heading
    /// itself, then everything up to the next heading of the same or a
    /// higher level).
    pub fn section(&self, heading: usize) -> &[Block] {
        let Some(Kind::Heading(level)) = self.blocks.get(heading).map(|b| &b.kind) else {
            return &[];
        };
        let end = self.blocks[heading + 1..]
            .iter()
            .position(|b| matches!(b.kind, Kind::Heading(l) if l <= *level))
            .map_or(self.blocks.len(), |p| heading + 1 + p);
        &self.blocks[heading..end]
    }

    /// Every block and the index of the headings above it, outermost first.
    pub fn headings_above(&self, index: usize) -> Vec<&Block> {
        let mut out = Vec::new();
        let mut level = u8::MAX;
        for b in self.blocks[..=index.min(self.blocks.len().saturating_sub(1))]
            .iter()
            .rev()
        {
            if let Kind::Heading(l) = b.kind
                && l < level
            {
                out.push(b);
                level = l;
            }
        }
        out.reverse();
        out
    }
}

/// A document being parsed: the blocks so far and the ones still open.
struct Parsing {
    doc: Doc,
    /// Open blocks, innermost last; a paragraph inside a list item adds
    /// to the item, so only blocks that become a `Block` are here.
    open: Vec<(Kind, Builder)>,
    cell: Option<Builder>,
    /// The last heading's block.
    section: Option<usize>,
    in_metadata: bool,
}

impl Parsing {
    fn new(path: &Path) -> Self {
        Self {
            doc: Doc {
                path: path.to_path_buf(),
                blocks: Vec::new(),
                tables: Vec::new(),
            },
            open: Vec::new(),
            cell: None,
            section: None,
            in_metadata: false,
        }
    }

    /// A block starts at `line`.
    fn start(&mut self, tag: Tag<'_>, line: usize) {
        let row = |header: bool, tables: &[Vec<String>]| Kind::Row {
            header,
            table: tables.len() - 1,
        };
        match tag {
            Tag::MetadataBlock(_) => self.in_metadata = true,
            Tag::Heading { level, .. } => {
                self.open
                    .push((Kind::Heading(level as u8), Builder::at(line)));
            }
            Tag::Paragraph if !matches!(self.open.last(), Some((Kind::Item, _))) => {
                self.open.push((Kind::Paragraph, Builder::at(line)));
            }
            Tag::List(_) => self.end_item_text(line),
            Tag::Item => self.open.push((Kind::Item, Builder::at(line))),
            Tag::CodeBlock(_) => self.open.push((Kind::Code, Builder::at(line))),
            Tag::Table(_) => self.doc.tables.push(Vec::new()),
            Tag::TableHead => self
                .open
                .push((row(true, &self.doc.tables), Builder::at(line))),
            Tag::TableRow => self
                .open
                .push((row(false, &self.doc.tables), Builder::at(line))),
            Tag::TableCell => self.cell = Some(Builder::at(line)),
            _ => {}
        }
    }

    /// A nested list ends its item's own text: emit it now, so blocks
    /// stay in document order.
    fn end_item_text(&mut self, line: usize) {
        if let Some((Kind::Item, b)) = self.open.last_mut()
            && !b.text.trim().is_empty()
        {
            let done = std::mem::replace(b, Builder::at(line));
            self.doc.blocks.push(Block {
                kind: Kind::Item,
                line: done.line,
                text: squeeze(&done.text),
                prose: squeeze(&done.prose),
                code: done.code,
                cells: Vec::new(),
                section: self.section,
            });
        }
    }

    /// A block ends.
    fn end(&mut self, end: TagEnd) {
        match end {
            TagEnd::MetadataBlock(_) => self.in_metadata = false,
            TagEnd::TableCell => self.end_cell(),
            TagEnd::Paragraph if !matches!(self.open.last(), Some((Kind::Paragraph, _))) => {}
            TagEnd::Heading(_)
            | TagEnd::Paragraph
            | TagEnd::Item
            | TagEnd::CodeBlock
            | TagEnd::TableHead
            | TagEnd::TableRow => self.close(),
            _ => {}
        }
    }

    /// A table cell ends: its text joins its row's.
    fn end_cell(&mut self) {
        if let (Some(c), Some((_, row))) = (self.cell.take(), self.open.last_mut()) {
            let text = squeeze(&c.text);
            if !row.text.is_empty() {
                row.text.push_str(" | ");
                row.prose.push_str(" | ");
            }
            row.text.push_str(&text);
            row.prose.push_str(&squeeze(&c.prose));
            row.code.extend(c.code);
            row.cells.push(text);
        }
    }

    /// The innermost open block ends and becomes a `Block` (an empty one
    /// is dropped); a heading starts a section, a header row its table.
    fn close(&mut self) {
        let Some((kind, b)) = self.open.pop() else {
            return;
        };
        if let Kind::Row {
            header: true,
            table,
        } = kind
        {
            self.doc.tables[table] = b.cells.clone();
        }
        let is_heading = matches!(kind, Kind::Heading(_));
        let (text, prose) = if kind == Kind::Code {
            (b.text.clone(), b.prose.clone())
        } else {
            (squeeze(&b.text), squeeze(&b.prose))
        };
        if text.is_empty() && b.cells.is_empty() {
            return;
        }
        self.doc.blocks.push(Block {
            kind,
            line: b.line,
            text,
            prose,
            code: b.code,
            cells: b.cells,
            section: self.section,
        });
        if is_heading {
            self.section = Some(self.doc.blocks.len() - 1);
        }
    }

    /// Where text goes: the open cell, else the innermost open block.
    fn target(&mut self) -> Option<&mut Builder> {
        self.cell.as_mut().or(self.open.last_mut().map(|(_, b)| b))
    }

    fn push_text(&mut self, text: &str) {
        if let Some(b) = self.target() {
            b.push_text(text);
        }
    }

    fn push_code(&mut self, code: String) {
        if let Some(b) = self.target() {
            b.text.push_str(&code);
            b.prose.push(' ');
            b.code.push(code);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "---\nname: work\n---\n\n# Title\n\nSome *prose* with `--loop`\nwrapped.\n\n## Flags\n\n| flag | default |\n|---|---|\n| `--lock skip\\|wait\\|force` | skip |\n\n- an item with `code`\n  - nested item\n\n```sh\nsdd-loop work --loop\n```\n";

    #[test]
    fn blocks_keep_lines_prose_code_and_cells() {
        let doc = Doc::parse(Path::new("SKILL.md"), TEXT);
        let summary: Vec<(Kind, usize, &str)> = doc
            .blocks
            .iter()
            .map(|b| (b.kind.clone(), b.line, b.text.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                (Kind::Heading(1), 5, "Title"),
                (Kind::Paragraph, 7, "Some prose with --loop wrapped."),
                (Kind::Heading(2), 10, "Flags"),
                (
                    Kind::Row {
                        header: true,
                        table: 0
                    },
                    12,
                    "flag | default"
                ),
                (
                    Kind::Row {
                        header: false,
                        table: 0
                    },
                    14,
                    "--lock skip|wait|force | skip"
                ),
                (Kind::Item, 16, "an item with code"),
                (Kind::Item, 17, "nested item"),
                (Kind::Code, 19, "sdd-loop work --loop\n"),
            ]
        );
        let row = &doc.blocks[4];
        assert_eq!(row.cells, ["--lock skip|wait|force", "skip"]);
        assert_eq!(doc.header_of(row).unwrap(), ["flag", "default"]);
        assert_eq!(doc.blocks[1].code, ["--loop"]);
        assert_eq!(doc.blocks[1].prose, "Some prose with wrapped.");
        assert_eq!(doc.heading_of(row).unwrap().text, "Flags");
        assert_eq!(doc.section(2).len(), 6);
        assert_eq!(
            doc.headings_above(4)
                .iter()
                .map(|b| b.text.as_str())
                .collect::<Vec<_>>(),
            ["Title", "Flags"]
        );
    }
}
