//! What a SKILL.md says about the engine's command line, read from its
//! blocks whatever the layout: flag entries with their defaults (a table
//! with a default column in any position, a bullet, a sentence),
//! mentions of flags, `sdd-loop` command lines, and exit statuses the
//! document attributes to the engine.
//!
//! The reader only collects; [`super::compare`] judges what it collected
//! against the engine. It is deliberately tolerant of prose: a `--flag` in
//! a code span that runs another program (`git push --force`) is not the
//! skill's, and an exit status is the engine's only when its sentence names
//! `sdd-loop` or the engine, or it sits under an "exit status" heading.

use std::sync::LazyLock;

use regex::Regex;

use super::markdown::{Block, Doc, Kind};

/// A value as a document writes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `—`, `none`, `n/a`: no default.
    Unset,
    /// `off`, `false`, `no`.
    Off,
    /// `on`, `true`, `yes`.
    On,
    Number(f64),
    Text(String),
}

impl Value {
    /// Reads `5`, `` `5` ``, `5 iterations`, `$25`, `25 USD`, `skip`, `off`, `—`.
    pub fn parse(text: &str) -> Value {
        let t = text
            .trim()
            .trim_matches(|c: char| "`*\"'_[]".contains(c))
            .trim();
        let lower = t.to_lowercase();
        let first = lower
            .split(|c: char| c.is_whitespace() || ",;()".contains(c))
            .next()
            .unwrap_or("");
        match first {
            "" | "—" | "–" | "-" | "none" | "n/a" | "unset" => return Value::Unset,
            "off" | "false" | "no" | "disabled" => return Value::Off,
            "on" | "true" | "yes" | "enabled" => return Value::On,
            _ => {}
        }
        if lower.starts_with("not set") {
            return Value::Unset;
        }
        static NUMBER: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"^\$?\s*(\d+(?:\.\d+)?)\b").expect("a valid regex"));
        if let Some(n) = NUMBER.captures(t).and_then(|c| c[1].parse::<f64>().ok()) {
            return Value::Number(n);
        }
        let token = t
            .split(|c: char| c.is_whitespace() || ",;()".contains(c))
            .next()
            .unwrap_or("")
            .trim_matches('`');
        Value::Text(token.to_owned())
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Unset => f.write_str("none"),
            Value::Off => f.write_str("off"),
            Value::On => f.write_str("on"),
            Value::Number(n) => write!(f, "{n}"),
            Value::Text(t) => f.write_str(t),
        }
    }
}

/// A flag the document lists as such (a table row, a bullet or a sentence
/// giving its default).
#[derive(Debug, Clone)]
pub struct FlagEntry {
    /// Without `--`.
    pub flag: String,
    pub line: usize,
    /// The default it states, as written and as read.
    pub default: Option<(String, Value)>,
    /// The values it lists (`--lock skip|wait|force`).
    pub values: Vec<String>,
}

/// A flag named anywhere.
#[derive(Debug, Clone)]
pub struct FlagMention {
    pub flag: String,
    pub value: Option<String>,
    pub line: usize,
}

/// Which command a command line runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// `sdd-loop …`: the words are checked from the root command.
    Engine,
    /// `/sdd:work …`: the skill as the agent runs it, whose flags are the
    /// engine's `work` command's.
    Slash(String),
}

/// A command line in a code span or code block.
#[derive(Debug, Clone)]
pub struct CommandLine {
    pub program: Program,
    pub words: Vec<String>,
    pub line: usize,
}

/// An exit status attributed to the engine.
#[derive(Debug, Clone)]
pub struct ExitMention {
    pub code: u32,
    pub line: usize,
    /// The command line named in the same sentence, if any.
    pub command: Option<CommandLine>,
}

/// Everything the reader collected from one document.
#[derive(Debug, Clone, Default)]
pub struct Read {
    pub entries: Vec<FlagEntry>,
    pub mentions: Vec<FlagMention>,
    pub commands: Vec<CommandLine>,
    pub exits: Vec<ExitMention>,
}

static FLAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s(\[,/|])--([a-z][a-z0-9-]*)(?:=(\S+))?").expect("a valid regex")
});
static DEFAULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bdefaults?(?:\s+(?:is|to|of|value))?\s*[:=]?\s+(\$?[^\s,;)\]]+)")
        .expect("a valid regex")
});
static BY_DEFAULT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(\$?[^\s,;(]+)\s+(?:\w+\s+)?by default").expect("a valid regex")
});
static LEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[:—–=-]\s*(\$?\d+(?:\.\d+)?|off|on|none|—)(?:[\s:;,.)]|$)")
        .expect("a valid regex")
});
static EXIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bexit(?:s|ed)?(?:\s+(?:status|code))?(?:\s+(?:is|of|with|=))?\s+(\d+)\b")
        .expect("a valid regex")
});

/// Splits `text` into sentences (at `.`, `?`, `!` and `;` before a space).
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        if ".?!;".contains(c) && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace()) {
            out.push(text[start..=i].trim());
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push(text[start..].trim());
    }
    out.retain(|s| !s.is_empty());
    out
}

fn stated_default(text: &str) -> Option<String> {
    DEFAULT
        .captures(text)
        .or_else(|| BY_DEFAULT.captures(text))
        .map(|c| c[1].trim_end_matches(['.', ':']).to_owned())
}

/// The values an argument lists: `skip|wait|force`, `{skip|wait|force}`.
fn listed(arg: &str) -> Vec<String> {
    if !arg.contains('|') {
        return Vec::new();
    }
    arg.trim_end_matches([',', ';', '.', ':'])
        .trim_matches(|c: char| "{}[]<>()".contains(c))
        .split('|')
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect()
}

/// The flag at the start of `cell` (`--lock skip|wait|force`,
/// `--lock={skip|wait|force}`, `--max-prs N`), its argument as written,
/// and the text after them.
fn flag_at_start(cell: &str) -> Option<(String, String, String)> {
    let rest = cell.trim_start().strip_prefix("--")?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(rest.len());
    let name = rest[..end].to_owned();
    if name.is_empty() {
        return None;
    }
    let after = &rest[end..];
    let (arg, tail) = match after.strip_prefix('=') {
        Some(v) => v.split_once(char::is_whitespace).unwrap_or((v, "")),
        None => {
            let t = after.trim_start();
            if t.starts_with(|c: char| c.is_alphanumeric() || "{[<".contains(c)) {
                t.split_once(char::is_whitespace).unwrap_or((t, ""))
            } else {
                ("", after)
            }
        }
    };
    Some((name, arg.to_owned(), tail.to_owned()))
}

const SHELL_BREAKS: [&str; 8] = [";", "&&", "||", "|", "#", ">", "2>", "2>&1"];

/// The command lines in one line of code.
fn command_lines(code: &str, line: usize) -> Vec<CommandLine> {
    let tokens: Vec<&str> = code.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i].trim_start_matches(['(', '$']);
        let program = if t == "sdd-loop" || t.ends_with("/sdd-loop") {
            Some(Program::Engine)
        } else {
            t.strip_prefix("/sdd:")
                .map(|skill| Program::Slash(skill.trim_end_matches(['.', ',', ')']).to_owned()))
        };
        i += 1;
        let Some(program) = program else {
            continue;
        };
        let mut words = Vec::new();
        while i < tokens.len() && !SHELL_BREAKS.contains(&tokens[i]) {
            let w = tokens[i];
            i += 1;
            let ends = w.ends_with(';');
            let w = w.trim_end_matches([';', ',', ')']);
            if w == "sdd-loop" || w.starts_with("/sdd:") {
                i -= 1;
                break;
            }
            if !w.is_empty() {
                words.push(w.to_owned());
            }
            if ends {
                break;
            }
        }
        out.push(CommandLine {
            program,
            words,
            line,
        });
    }
    out
}

fn names_engine(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("sdd-loop") || lower.contains("the engine")
}

/// Reads what `doc` states.
pub fn read(doc: &Doc) -> Read {
    let mut out = Read::default();
    for (i, block) in doc.blocks.iter().enumerate() {
        if block.kind == Kind::Code {
            for (n, code) in block.text.lines().enumerate() {
                out.commands.extend(command_lines(code, block.line + 1 + n));
            }
            continue;
        }
        read_code_spans(block, &mut out);
        for cap in FLAG.captures_iter(&block.prose) {
            out.mentions.push(FlagMention {
                flag: cap[1].to_owned(),
                value: cap.get(2).map(|v| v.as_str().to_owned()),
                line: block.line,
            });
        }
        read_entry(doc, block, &mut out);
        read_exits(doc, i, block, &mut out);
    }
    out
}

fn read_code_spans(block: &Block, out: &mut Read) {
    for code in &block.code {
        let lines = command_lines(code, block.line);
        if !lines.is_empty() {
            out.commands.extend(lines);
        } else if let Some((flag, arg, _)) = flag_at_start(code) {
            out.mentions.push(FlagMention {
                flag,
                value: Some(arg).filter(|a| !a.is_empty()),
                line: block.line,
            });
        }
    }
}

fn read_entry(doc: &Doc, block: &Block, out: &mut Read) {
    match block.kind {
        Kind::Row { header: false, .. } => {
            let Some((col, (flag, arg, _))) = block
                .cells
                .iter()
                .enumerate()
                .find_map(|(i, c)| flag_at_start(c).map(|f| (i, f)))
            else {
                return;
            };
            let header = doc.header_of(block).unwrap_or(&[]);
            let default = match header
                .iter()
                .position(|h| h.to_lowercase().contains("default"))
            {
                Some(d) => block.cells.get(d).filter(|c| !c.trim().is_empty()).cloned(),
                None => block
                    .cells
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != col)
                    .find_map(|(_, c)| stated_default(c)),
            };
            out.entries.push(FlagEntry {
                flag,
                line: block.line,
                default: default.map(|d| (d.clone(), Value::parse(&d))),
                values: listed(&arg),
            });
        }
        Kind::Item => {
            if let Some((flag, arg, tail)) = flag_at_start(&block.text) {
                let default = stated_default(&tail)
                    .or_else(|| LEADING.captures(&tail).map(|c| c[1].to_owned()));
                out.entries.push(FlagEntry {
                    flag,
                    line: block.line,
                    default: default.map(|d| (d.clone(), Value::parse(&d))),
                    values: listed(&arg),
                });
            }
        }
        Kind::Paragraph => {
            for sentence in sentences(&block.text) {
                let flags: Vec<_> = FLAG.captures_iter(sentence).collect();
                if let ([one], Some(d)) = (flags.as_slice(), stated_default(sentence)) {
                    out.entries.push(FlagEntry {
                        flag: one[1].to_owned(),
                        line: block.line,
                        default: Some((d.clone(), Value::parse(&d))),
                        values: Vec::new(),
                    });
                }
            }
        }
        _ => {}
    }
}

fn read_exits(doc: &Doc, index: usize, block: &Block, out: &mut Read) {
    let under_exit_heading = doc
        .headings_above(index)
        .iter()
        .any(|h| h.text.to_lowercase().contains("exit"));
    if let Kind::Row { header: false, .. } = block.kind
        && under_exit_heading
        && let Some(code) = block.cells.first().and_then(|c| c.trim().parse().ok())
    {
        out.exits.push(ExitMention {
            code,
            line: block.line,
            command: None,
        });
        return;
    }
    for sentence in sentences(&block.text) {
        if !(under_exit_heading || names_engine(sentence)) {
            continue;
        }
        let command = block
            .code
            .iter()
            .filter(|c| sentence.contains(c.as_str()))
            .flat_map(|c| command_lines(c, block.line))
            .find(|c| c.program == Program::Engine);
        for cap in EXIT.captures_iter(sentence) {
            if let Ok(code) = cap[1].parse() {
                out.exits.push(ExitMention {
                    code,
                    line: block.line,
                    command: command.clone(),
                });
            }
        }
    }
}

/// `--name` or `--name=value` (or `-x`).
pub fn flag_word(w: &str) -> Option<(String, Option<String>)> {
    if let Some(rest) = w.strip_prefix("--") {
        let (name, value) = match rest.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (rest, None),
        };
        return (!name.is_empty()).then(|| (name.to_owned(), value));
    }
    let rest = w.strip_prefix('-')?;
    (rest.len() == 1 && rest.chars().all(|c| c.is_ascii_alphabetic()))
        .then(|| (rest.to_owned(), None))
}

/// A word standing for a value rather than naming one: `N`, `PATH`,
/// `GATE=ANSWER`, `{skill}`, `<n>`, `'CMD'`, `…`.
pub fn is_placeholder(w: &str) -> bool {
    static CAPS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^[A-Z][A-Z0-9_=/.|-]*$").expect("a valid regex"));
    w.is_empty()
        || CAPS.is_match(w)
        || w.contains(['{', '}', '<', '>', '$', '\'', '"', '…'])
        || w.contains("...")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn values_are_read_however_written() {
        for (text, want) in [
            ("5", Value::Number(5.0)),
            ("`5`", Value::Number(5.0)),
            ("5 iterations", Value::Number(5.0)),
            ("$25", Value::Number(25.0)),
            ("25 USD (0 disables)", Value::Number(25.0)),
            ("`skip`", Value::Text("skip".into())),
            (
                "`.sdd/loop/{skill}.budget.json`",
                Value::Text(".sdd/loop/{skill}.budget.json".into()),
            ),
            ("off", Value::Off),
            ("—", Value::Unset),
            ("", Value::Unset),
        ] {
            assert_eq!(Value::parse(text), want, "{text}");
        }
    }

    #[test]
    fn entries_come_from_tables_bullets_and_sentences() {
        let doc = Doc::parse(
            Path::new("d.md"),
            "| Default | Option |\n|---|---|\n| `20` | `--max-prs N` |\n| skip | `--lock={skip\\|wait\\|force}` |\n\n- `--max-minutes N` — 60: the wall clock\n- `--resume`: recover (off by default)\n\nThe iteration budget, `--max-iterations N`, defaults to 5 iterations. Run `sdd-loop work --loop --max-prs 3` or `git push --force`.\n",
        );
        let read = read(&doc);
        let entries: Vec<(String, Option<Value>, Vec<String>)> = read
            .entries
            .iter()
            .map(|e| {
                (
                    e.flag.clone(),
                    e.default.clone().map(|d| d.1),
                    e.values.clone(),
                )
            })
            .collect();
        assert_eq!(
            entries,
            [
                ("max-prs".into(), Some(Value::Number(20.0)), vec![]),
                (
                    "lock".into(),
                    Some(Value::Text("skip".into())),
                    vec!["skip".into(), "wait".into(), "force".into()]
                ),
                ("max-minutes".into(), Some(Value::Number(60.0)), vec![]),
                ("resume".into(), Some(Value::Off), vec![]),
                ("max-iterations".into(), Some(Value::Number(5.0)), vec![]),
            ]
        );
        assert_eq!(read.commands.len(), 1);
        assert_eq!(read.commands[0].words, ["work", "--loop", "--max-prs", "3"]);
        assert!(!read.mentions.iter().any(|m| m.flag == "force"));
    }

    #[test]
    fn exit_statuses_are_the_engines_only_when_said_so() {
        let doc = Doc::parse(
            Path::new("d.md"),
            "On an outage the skill exits 78.\n\nWhen `sdd-loop work begin` exits 4, ask the user.\n\n## Exit status\n\n| status | meaning |\n|---|---|\n| 3 | ended |\n",
        );
        let exits: Vec<u32> = read(&doc).exits.iter().map(|e| e.code).collect();
        assert_eq!(exits, [4, 3]);
    }

    #[test]
    fn placeholders_are_not_names() {
        for w in [
            "N",
            "PATH",
            "GATE=ANSWER",
            "{skill}",
            "<n>",
            "'CMD'",
            "…",
            "JSON",
        ] {
            assert!(is_placeholder(w), "{w}");
        }
        for w in ["work", "begin", "skip"] {
            assert!(!is_placeholder(w), "{w}");
        }
    }
}
