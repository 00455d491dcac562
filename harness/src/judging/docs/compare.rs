//! A skill's SKILL.md against the engine: ADR-0028 confirmations 1 and 2
//! as a reader rather than substring checks, plus issue 8's doc check.
//!
//! What each document must state is the contract's (SPEC-0020 "CLI Surface
//! for Loop Controls", the gates, ADR-0028's single-PR review semantics,
//! ADR-0010's one round per PR); what the values must be is the engine's
//! ([`super::engine`]). Every difference names its `file:line`: a missing
//! flag or gate, a wrong default, a question worded differently (with a
//! word diff), a missing option, and any command, subcommand, flag, value
//! or exit status the document names that the engine does not have — so
//! drift on either side fails.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::LazyLock;

use regex::Regex;
use sdd_loop::rules::gates::GateName;
use sdd_loop::state::paths::Skill;

use super::contract::{SINGLE_PR, contract};
use super::defaults::{default_differs, engine_default_note};
use super::engine::{Cli, Command, EngineDefault, Flag, GateTemplate};
use super::markdown::{Doc, Kind};
use super::question::{self, Found};
use super::reader::{self, CommandLine, Program, Read, flag_word, is_placeholder};

/// One way a document and the engine disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// 1-based line the difference is about (for something missing: where
    /// the document would say it).
    pub line: usize,
    /// What it is about: `flag --max-prs`, `gate backlog-drift`, …
    pub subject: String,
    pub message: String,
    /// Further lines (the two wordings and their diff).
    pub detail: Vec<String>,
}

/// The result of reading one SKILL.md.
#[derive(Debug, Clone)]
pub struct Report {
    pub skill: Skill,
    /// The document, as messages name it.
    pub file: PathBuf,
    pub differences: Vec<Difference>,
    /// How much was checked: flags documented, gates found, command lines
    /// and exit statuses named.
    pub flags: usize,
    pub gates: usize,
    pub commands: usize,
    pub exits: usize,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.differences.is_empty()
    }

    /// One line per difference (`file:line: subject: message`), its detail
    /// indented below; or one line saying what agreed.
    pub fn render(&self) -> String {
        let file = self.file.display();
        if self.passed() {
            let count = |n: usize, one: &str, many: &str| {
                format!("{n} {}", if n == 1 { one } else { many })
            };
            return format!(
                "{file}: as the engine has it — {}, {}, {}, {}\n",
                count(self.flags, "flag", "flags"),
                count(self.gates, "gate", "gates"),
                count(self.commands, "command line", "command lines"),
                count(self.exits, "exit status", "exit statuses")
            );
        }
        let mut out = String::new();
        for d in &self.differences {
            out.push_str(&format!(
                "{file}:{}: {}: {}\n",
                d.line, d.subject, d.message
            ));
            for line in &d.detail {
                out.push_str(&format!("    {line}\n"));
            }
        }
        out
    }
}

struct Checker<'a> {
    doc: &'a Doc,
    skill: Skill,
    cli: &'a Cli,
    out: Vec<Difference>,
    unknown_flags: BTreeSet<String>,
}

impl Checker<'_> {
    fn diff(&mut self, line: usize, subject: impl Into<String>, message: impl Into<String>) {
        self.out.push(Difference {
            line,
            subject: subject.into(),
            message: message.into(),
            detail: Vec::new(),
        });
    }

    /// The line of the first heading or block whose text holds one of
    /// `words` (case-insensitive): where something missing belongs.
    fn anchor(&self, words: &[&str]) -> usize {
        let find = |headings: bool| {
            self.doc.blocks.iter().find(|b| {
                matches!(b.kind, Kind::Heading(_)) == headings && {
                    let t = b.text.to_lowercase();
                    words.iter().any(|w| t.contains(w))
                }
            })
        };
        find(true)
            .or_else(|| find(false))
            .or_else(|| self.doc.blocks.first())
            .map_or(1, |b| b.line)
    }

    fn skill_command(&self) -> Option<&Command> {
        self.cli.root.subcommand(self.skill.as_str())
    }

    /// The flag on the skill's command or any command under it.
    fn skill_flag(&self, name: &str) -> Option<&Flag> {
        self.skill_command()?
            .walk()
            .into_iter()
            .find_map(|c| c.flag(name))
    }

    fn unknown_flag(&mut self, line: usize, flag: &str, on: &str) {
        if self.unknown_flags.insert(flag.to_owned()) {
            self.diff(
                line,
                format!("flag --{flag}"),
                format!("the document names it, but `{on}` has no such flag"),
            );
        }
    }

    fn values(&mut self, line: usize, flag: &Flag, value: &str) {
        let given: Vec<&str> = value
            .trim_end_matches([',', ';', '.', ':'])
            .trim_matches(|c: char| "{}[]<>()".contains(c))
            .split('|')
            .map(str::trim)
            .filter(|v| !is_placeholder(v))
            .collect();
        if flag.values.is_empty() {
            return;
        }
        let unknown: Vec<&str> = given
            .iter()
            .copied()
            .filter(|v| !flag.values.iter().any(|f| f == v))
            .collect();
        if !unknown.is_empty() {
            self.diff(
                line,
                format!("flag --{}", flag.long),
                format!(
                    "value {} is not one the engine accepts ({})",
                    unknown.join(", "),
                    flag.values.join(", ")
                ),
            );
        }
    }

    fn flags(&mut self, read: &Read) {
        let Some(command) = self.skill_command().cloned() else {
            let line = self.anchor(&["loop"]);
            self.diff(
                line,
                format!("command sdd-loop {}", self.skill.as_str()),
                "the engine has no such command",
            );
            return;
        };
        let on = command.display();
        let loop_named = read.mentions.iter().any(|m| m.flag == "loop")
            || read.entries.iter().any(|e| e.flag == "loop")
            || read
                .commands
                .iter()
                .any(|c| c.words.iter().any(|w| w == "--loop"));
        if !loop_named {
            let line = self.anchor(&["loop"]);
            self.diff(line, "flag --loop", "not documented");
        }
        if !self.doc.blocks.iter().any(|b| b.text.contains("ADR-0028")) {
            let line = self.anchor(&["loop"]);
            self.diff(
                line,
                "loop mode",
                "the document does not say it is governed by ADR-0028",
            );
        }
        for entry in &read.entries {
            let Some(flag) = self.skill_flag(&entry.flag).cloned() else {
                self.unknown_flag(entry.line, &entry.flag, &on);
                continue;
            };
            if !entry.values.is_empty() && !flag.values.is_empty() {
                let missing: Vec<&str> = flag
                    .values
                    .iter()
                    .filter(|v| !entry.values.contains(v))
                    .map(String::as_str)
                    .collect();
                if !missing.is_empty() {
                    self.diff(
                        entry.line,
                        format!("flag --{}", flag.long),
                        format!(
                            "lists {}; the engine's values are {} (missing: {})",
                            entry.values.join("|"),
                            flag.values.join("|"),
                            missing.join(", ")
                        ),
                    );
                }
            }
            if let Some((written, value)) = &entry.default
                && let Some(problem) = default_differs(value, &flag.default, self.skill)
            {
                let shown = value.to_string();
                self.out.push(Difference {
                    line: entry.line,
                    subject: format!("flag --{}", flag.long),
                    message: problem,
                    detail: Some(written.trim())
                        .filter(|w| *w != shown)
                        .map(|w| format!("documented as: {w}"))
                        .into_iter()
                        .collect(),
                });
            }
        }
        for flag_name in contract(self.skill).flags {
            let entries: Vec<_> = read
                .entries
                .iter()
                .filter(|e| e.flag == *flag_name)
                .collect();
            let first_mention = read.mentions.iter().find(|m| m.flag == *flag_name);
            let Some(flag) = self.skill_flag(flag_name).cloned() else {
                let line = entries
                    .first()
                    .map(|e| e.line)
                    .or(first_mention.map(|m| m.line))
                    .unwrap_or_else(|| self.anchor(&["flag", "budget"]));
                self.diff(
                    line,
                    format!("flag --{flag_name}"),
                    format!("the contract's flag is missing from `{on}`"),
                );
                continue;
            };
            let needs_default = matches!(flag.default, EngineDefault::Value(_));
            if entries.is_empty() && first_mention.is_none() {
                let line = self.anchor(&["flag", "budget"]);
                self.diff(
                    line,
                    format!("flag --{flag_name}"),
                    format!(
                        "not documented{}",
                        engine_default_note(&flag.default, self.skill)
                    ),
                );
            } else if needs_default && !entries.iter().any(|e| e.default.is_some()) {
                let line = entries
                    .first()
                    .map(|e| e.line)
                    .or(first_mention.map(|m| m.line))
                    .unwrap_or(1);
                self.diff(
                    line,
                    format!("flag --{flag_name}"),
                    format!(
                        "its default is not stated{}",
                        engine_default_note(&flag.default, self.skill)
                    ),
                );
            }
        }
        for m in &read.mentions {
            match self.skill_flag(&m.flag).cloned() {
                None => self.unknown_flag(m.line, &m.flag, &on),
                Some(flag) => {
                    if let Some(v) = &m.value {
                        self.values(m.line, &flag, v);
                    }
                }
            }
        }
    }

    fn commands(&mut self, read: &Read) {
        for line in &read.commands {
            match &line.program {
                Program::Engine => {
                    self.resolve(line);
                }
                Program::Slash(skill) => {
                    let Some(command) = self.cli.root.subcommand(skill).cloned() else {
                        continue;
                    };
                    let mut words = line.words.iter().peekable();
                    while let Some(w) = words.next() {
                        let w = w.trim_matches(|c| c == '[' || c == ']');
                        let Some((name, value)) = flag_word(w) else {
                            continue;
                        };
                        match command
                            .walk()
                            .into_iter()
                            .find_map(|c| c.flag(&name))
                            .cloned()
                        {
                            None => self.unknown_flag(line.line, &name, &command.display()),
                            Some(flag) => {
                                let value = value.or_else(|| {
                                    if flag.takes_value {
                                        words.next().cloned()
                                    } else {
                                        None
                                    }
                                });
                                if let Some(v) = value {
                                    self.values(line.line, &flag, &v);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Walks an `sdd-loop …` command line through the engine's command
    /// tree; the command it names, if every word resolved.
    fn resolve(&mut self, line: &CommandLine) -> Option<Vec<String>> {
        let cli = self.cli;
        let mut command = &cli.root;
        let mut positional = 0;
        let mut words = line.words.iter().peekable();
        let mut ok = true;
        while let Some(raw) = words.next() {
            let optional = raw.starts_with('[') || raw.ends_with(']');
            let w = raw.trim_matches(|c| c == '[' || c == ']');
            if let Some((name, value)) = flag_word(w) {
                let found = command
                    .flag(&name)
                    .or_else(|| {
                        (name.len() == 1)
                            .then(|| name.chars().next())
                            .flatten()
                            .and_then(|c| command.short(c))
                    })
                    .cloned();
                match found {
                    None => {
                        self.diff(
                            line.line,
                            format!("flag --{name}"),
                            format!(
                                "the document runs `{} --{name}`, which the engine does not accept",
                                command.display()
                            ),
                        );
                        // Whether it took a value is unknowable: the
                        // rest of the line cannot be read.
                        return None;
                    }
                    Some(flag) => {
                        let value = value.or_else(|| {
                            if flag.takes_value {
                                words
                                    .next()
                                    .map(|v| v.trim_matches(|c| c == '[' || c == ']').to_owned())
                            } else {
                                None
                            }
                        });
                        if let Some(v) = value {
                            self.values(line.line, &flag, &v);
                        }
                    }
                }
                continue;
            }
            let w = if w.contains('|') {
                w.trim_matches(|c| c == '{' || c == '}')
            } else {
                w
            };
            if optional || is_placeholder(w) {
                positional += 1;
                continue;
            }
            let alternatives: Vec<&str> = w.split('|').collect();
            if let Some(sub) = command.subcommand(alternatives[0]) {
                for alt in &alternatives[1..] {
                    if command.subcommand(alt).is_none() {
                        self.unknown_command(line.line, command, alt);
                        ok = false;
                    }
                }
                command = sub;
                positional = 0;
                continue;
            }
            if let Some(p) = command.positionals.get(positional) {
                positional += 1;
                let unknown: Vec<&&str> = alternatives
                    .iter()
                    .filter(|a| !p.values.is_empty() && !p.values.iter().any(|v| v == *a))
                    .collect();
                for a in unknown {
                    self.diff(
                        line.line,
                        format!("command {}", command.display()),
                        format!(
                            "`{a}` is not a value of its {} ({})",
                            p.name.to_uppercase(),
                            p.values.join(", ")
                        ),
                    );
                    ok = false;
                }
                continue;
            }
            self.unknown_command(line.line, command, w);
            ok = false;
            break;
        }
        ok.then(|| command.path.clone())
    }

    fn unknown_command(&mut self, line: usize, command: &Command, word: &str) {
        let subs: Vec<&str> = command
            .subcommands
            .iter()
            .map(|c| c.name.as_str())
            .filter(|n| *n != "help")
            .collect();
        let has = if subs.is_empty() {
            "it has no subcommands".to_owned()
        } else {
            format!("its subcommands are {}", subs.join(", "))
        };
        self.diff(
            line,
            format!("command {} {word}", command.display()),
            format!("the engine has no such command ({has})"),
        );
    }

    fn exits(&mut self, read: &Read) {
        for e in &read.exits {
            let path = e.command.as_ref().and_then(|c| self.cli.root_path_of(c));
            let (known, whose): (BTreeSet<u32>, String) = match &path {
                Some(p) => (
                    self.cli
                        .exit_statuses(p)
                        .into_iter()
                        .map(|(c, _)| c)
                        .collect(),
                    std::iter::once("sdd-loop".to_owned())
                        .chain(p.iter().cloned())
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                None => (self.cli.all_exit_statuses(), "sdd-loop".to_owned()),
            };
            if !known.contains(&e.code) {
                let list: Vec<String> = known.iter().map(u32::to_string).collect();
                self.diff(
                    e.line,
                    format!("exit status {}", e.code),
                    format!(
                        "`{whose}` has no such exit status (its statuses: {})",
                        list.join(", ")
                    ),
                );
            }
        }
    }

    fn gates(&mut self) -> usize {
        let contract = contract(self.skill);
        let templates = GateTemplate::all();
        let exact: Vec<Vec<Found>> = templates
            .iter()
            .map(|t| question::exact(self.doc, t))
            .collect();
        let taken: Vec<usize> = exact.iter().flatten().map(|f| f.block).collect();
        let mut documented = 0;
        for (template, found) in templates.iter().zip(exact) {
            let gate = template.gate;
            let subject = format!("gate {gate}");
            let pick = found
                .iter()
                .find(|f| {
                    question::options(self.doc, f, template.options())
                        .0
                        .is_empty()
                })
                .or(found.first())
                .cloned();
            let found = match pick {
                Some(f) => Some(f),
                None => question::near(self.doc, template, &taken),
            };
            let Some(found) = found else {
                if contract.stated.contains(&gate) {
                    let line = self.anchor(&["gate"]);
                    self.out.push(Difference {
                        line,
                        subject,
                        message: "not documented".to_owned(),
                        detail: vec![
                            format!("the engine asks: {}", template.display()),
                            format!("options: {}", template.options().join(", ")),
                        ],
                    });
                } else if contract.named.contains(&gate) && !self.names(gate) {
                    let line = self.anchor(&["gate"]);
                    self.diff(
                        line,
                        subject,
                        "neither stated nor named (a review tick asks it; name it, or state its question)",
                    );
                }
                continue;
            };
            documented += 1;
            if let Some(engine) = &found.expected {
                self.out.push(Difference {
                    line: found.line,
                    subject: subject.clone(),
                    message: "the question is worded differently".to_owned(),
                    detail: vec![
                        format!("document: {}", found.text),
                        format!("engine:   {engine}"),
                        format!("diff:     {}", question::word_diff(&found.text, engine)),
                    ],
                });
            }
            let (missing, extra) = question::options(self.doc, &found, template.options());
            if !missing.is_empty() {
                self.diff(
                    found.line,
                    subject.clone(),
                    format!(
                        "does not list the option(s) {} (the engine's: {})",
                        missing.join(", "),
                        template.options().join(", ")
                    ),
                );
            }
            if !extra.is_empty() {
                self.diff(
                    found.line,
                    subject.clone(),
                    format!(
                        "lists {} as option(s), which the engine does not accept (its options: {})",
                        extra.join(", "),
                        template.options().join(", ")
                    ),
                );
            }
            if gate == GateName::PostFeedbackMerge && self.skill == Skill::Review {
                self.adr_0010(&found);
            }
        }
        documented
    }

    fn names(&self, gate: GateName) -> bool {
        let name = gate.name();
        let spaced = name.replace('-', " ");
        self.doc.blocks.iter().any(|b| {
            let t = b.text.to_lowercase();
            t.contains(name) || t.contains(&spaced)
        })
    }

    /// Confirmation 2: the post-feedback-merge gate is cross-referenced to
    /// ADR-0010 — in its block, a heading above it, or its section.
    fn adr_0010(&mut self, found: &Found) {
        let doc = self.doc;
        let block = &doc.blocks[found.block];
        let in_section = block
            .section
            .map(|h| doc.section(h).iter().any(|b| b.text.contains("ADR-0010")))
            .unwrap_or(false);
        let above = doc
            .headings_above(found.block)
            .iter()
            .any(|h| h.text.contains("ADR-0010"));
        if !(block.text.contains("ADR-0010") || in_section || above) {
            self.diff(
                found.line,
                "gate post-feedback-merge",
                "not cross-referenced to ADR-0010's bounded-iteration rule (name ADR-0010 beside it)",
            );
        }
    }

    /// Confirmation 2: ADR-0010's one review-response round per PR per
    /// tick, and ADR-0028's single-PR review semantics.
    fn review_semantics(&mut self) {
        static ONE_ROUND: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(
                r"(?i)\b(?:one|1|a single|single)\s+(?:review[- ]response\s+|review\s+|response\s+)?rounds?\s+(?:per|on each|for each|on a|for a)\s+(?:pr|pull request)",
            )
            .expect("a valid regex")
        });
        let doc = self.doc;
        if !doc.blocks.iter().any(|b| ONE_ROUND.is_match(&b.text)) {
            let line = self.anchor(&["adr-0010", "round"]);
            self.diff(
                line,
                "ADR-0010",
                "the document does not say each tick runs at most one review-response round per PR",
            );
        }
        let single_pr: Vec<usize> = doc
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| {
                let t = b.text.to_lowercase();
                matches!(b.kind, Kind::Heading(_))
                    && (t.contains("single-pr") || t.contains("single pr") || t.contains("--pr"))
            })
            .map(|(i, _)| i)
            .collect();
        let anchor = single_pr
            .first()
            .map_or_else(|| self.anchor(&["--pr", "single"]), |&h| doc.blocks[h].line);
        for (what, patterns) in SINGLE_PR.iter() {
            let holds = doc
                .blocks
                .iter()
                .any(|b| patterns.iter().all(|p| p.is_match(&b.text)));
            if !holds {
                self.diff(
                    anchor,
                    "single-PR review (--pr N)",
                    format!("the document does not say {what}"),
                );
            }
        }
    }
}

impl Cli {
    /// The command an `sdd-loop` command line names, if it resolves.
    fn root_path_of(&self, line: &CommandLine) -> Option<Vec<String>> {
        let mut command = &self.root;
        for w in &line.words {
            if w.starts_with('-') {
                continue;
            }
            match command.subcommand(w) {
                Some(sub) => command = sub,
                None => break,
            }
        }
        Some(command.path.clone())
    }
}

/// Reads `doc` as `skill`'s SKILL.md and compares it with the engine.
pub fn compare(doc: &Doc, skill: Skill, cli: &Cli) -> Report {
    let read = reader::read(doc);
    let mut checker = Checker {
        doc,
        skill,
        cli,
        out: Vec::new(),
        unknown_flags: BTreeSet::new(),
    };
    checker.flags(&read);
    checker.commands(&read);
    checker.exits(&read);
    let gates = checker.gates();
    if skill == Skill::Review {
        checker.review_semantics();
    }
    let mut differences = checker.out;
    differences.sort_by(|a, b| (a.line, &a.subject).cmp(&(b.line, &b.subject)));
    differences.dedup();
    let flags: BTreeSet<&str> = read.entries.iter().map(|e| e.flag.as_str()).collect();
    Report {
        skill,
        file: doc.path.clone(),
        differences,
        flags: flags.len(),
        gates,
        commands: read.commands.len(),
        exits: read.exits.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternatives_in_braces_name_each_command() {
        let doc = Doc::parse(
            std::path::Path::new("SKILL.md"),
            "Run `sdd-loop {work|review} --loop`, `sdd-loop work|status --json` or `sdd-loop {work|nope} --loop`.\n",
        );
        let report = compare(&doc, Skill::Work, &Cli::read());
        let said = report.render();
        assert!(
            said.contains("command sdd-loop nope: the engine has no such command"),
            "{said}"
        );
        assert!(!said.contains("command sdd-loop work:"), "{said}");
        assert!(!said.contains("sdd-loop status"), "{said}");
    }
}
