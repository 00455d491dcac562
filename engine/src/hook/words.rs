//! Shell words: a command line as the simple commands a POSIX shell would
//! run, each as its words after quote removal — enough to see what a
//! `Bash` tool call does without running it ([`super::command`]) and to
//! read a loop prompt's flags ([`super::prompt`]).
//!
//! Quotes (`'…'`, `"…"`, `\x`) are removed; `;`, `&&`, `||`, `|`, `&`,
//! newlines and parentheses separate commands; the commands inside `$(…)`
//! and backquotes are listed too (after the command they appear in);
//! redirections and their targets are dropped; a here-document's body is
//! skipped, as it is data; `#` starts a comment at the start of a word.
//! Parameter expansion is not done: `$VAR` stays as written, so a command
//! hidden behind a variable is not recognised (docs/src/claude-code.md lists such
//! limits). Malformed input (an unclosed quote) is read to its end, never
//! refused: the caller decides on what it can see.

/// The simple commands of `text`, in order, each as its words.
pub fn commands(text: &str) -> Vec<Vec<String>> {
    parse(text).commands
}

/// A command line read as a shell would: its simple commands, and the
/// files its output redirections write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Line {
    /// The simple commands, in order, each as its words.
    pub commands: Vec<Vec<String>>,
    /// The targets of `>`, `>>`, `>|`, `&>`, `&>>` and `<>`, as written
    /// (quotes removed), in `$(…)` and backquotes too, each with the
    /// index in `commands` of the command it belongs to (so a `cd` before
    /// it can be taken into account).
    pub writes: Vec<(usize, String)>,
    /// Substitutions nest deeper than [`NESTING_MAX`]: the commands past
    /// that depth are not listed (read, a line of a few KB nested a
    /// thousand deep would exhaust the stack), and the caller cannot see
    /// everything the line runs.
    pub too_deep: bool,
}

/// How deep `$(…)` and backquotes are read inside one another.
pub const NESTING_MAX: usize = 16;

/// The simple commands of `text` and the files it redirects output to.
pub fn parse(text: &str) -> Line {
    parse_at(text, 0)
}

fn parse_at(text: &str, depth: usize) -> Line {
    let mut line = Line::default();
    let mut splitter = Splitter::new(text, depth);
    splitter.run(&mut line.commands);
    line.writes = splitter.writes;
    line.too_deep = splitter.too_deep;
    line
}

/// The words of `text` as one command line (a prompt's arguments):
/// quotes removed, separators kept as words.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = current.get_or_insert_with(String::new);
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    w.push(c);
                }
            }
            '"' => {
                let w = current.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            w.push(chars.next().unwrap_or('\\'));
                        }
                        other => w.push(other),
                    }
                }
            }
            '\\' => {
                if let Some(next) = chars.next() {
                    current.get_or_insert_with(String::new).push(next);
                }
            }
            c if c.is_whitespace() => {
                if let Some(w) = current.take() {
                    out.push(w);
                }
            }
            other => current.get_or_insert_with(String::new).push(other),
        }
    }
    if let Some(w) = current {
        out.push(w);
    }
    out
}

struct Splitter {
    chars: Vec<char>,
    at: usize,
    /// Here-document delimiters waiting for the end of the line
    /// (`true`: `<<-`, leading tabs stripped).
    heredocs: Vec<(String, bool)>,
    /// Output redirection targets seen so far.
    writes: Vec<(usize, String)>,
    /// How deep in substitutions this text is.
    depth: usize,
    /// A substitution deeper than [`NESTING_MAX`] was left unread.
    too_deep: bool,
}

/// The command being split: its words so far, the word being read, and
/// what it writes to and runs inside substitutions.
#[derive(Debug, Default)]
struct Pending {
    words: Vec<String>,
    word: Option<String>,
    /// `Some(output)`: the next word is a redirection's target.
    redirect_target: Option<bool>,
    /// Files written by redirections, with the index of their command.
    writes: Vec<(usize, String)>,
    /// `$(…)` and backquoted commands, split when this one ends.
    nested: Vec<String>,
}

impl Pending {
    /// Ends the word being read: a word of the command, or a
    /// redirection's target (kept when it is written to).
    fn end_word(&mut self, at: usize) {
        if let Some(w) = self.word.take() {
            match self.redirect_target.take() {
                Some(true) => self.writes.push((at, w)),
                Some(false) => {}
                None => self.words.push(w),
            }
        }
    }

    /// Ends the command: it goes to `out`, then the commands of its
    /// substitutions (their writes with their own indexes).
    fn end_command(&mut self, out: &mut Vec<Vec<String>>, depth: usize, too_deep: &mut bool) {
        if !self.words.is_empty() {
            out.push(std::mem::take(&mut self.words));
        }
        if depth >= NESTING_MAX && !self.nested.is_empty() {
            *too_deep = true;
            self.nested.clear();
        }
        for inner in self.nested.drain(..) {
            let line = parse_at(&inner, depth + 1);
            *too_deep |= line.too_deep;
            let base = out.len();
            out.extend(line.commands);
            self.writes
                .extend(line.writes.into_iter().map(|(i, w)| (base + i, w)));
        }
    }
}

impl Splitter {
    fn new(text: &str, depth: usize) -> Self {
        Self {
            chars: text.chars().collect(),
            at: 0,
            heredocs: Vec::new(),
            writes: Vec::new(),
            depth,
            too_deep: false,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.at + n).copied()
    }

    fn run(&mut self, out: &mut Vec<Vec<String>>) {
        let mut p = Pending::default();
        while let Some(c) = self.peek() {
            match c {
                '\'' => {
                    self.at += 1;
                    let w = p.word.get_or_insert_with(String::new);
                    while let Some(c) = self.peek() {
                        self.at += 1;
                        if c == '\'' {
                            break;
                        }
                        w.push(c);
                    }
                }
                '"' => {
                    self.at += 1;
                    let w = p.word.get_or_insert_with(String::new);
                    while let Some(c) = self.peek() {
                        self.at += 1;
                        match c {
                            '"' => break,
                            '\\' => {
                                if let Some(n) = self.peek() {
                                    self.at += 1;
                                    if !matches!(n, '"' | '\\' | '$' | '`' | '\n') {
                                        w.push('\\');
                                    }
                                    if n != '\n' {
                                        w.push(n);
                                    }
                                }
                            }
                            '$' if self.peek() == Some('(') => {
                                let inner = self.substitution();
                                w.push_str("$(");
                                w.push_str(&inner);
                                w.push(')');
                                p.nested.push(inner);
                            }
                            '`' => {
                                let inner = self.backquoted();
                                w.push_str(&inner);
                                p.nested.push(inner);
                            }
                            other => w.push(other),
                        }
                    }
                }
                '\\' => {
                    self.at += 1;
                    if let Some(n) = self.peek() {
                        self.at += 1;
                        if n != '\n' {
                            p.word.get_or_insert_with(String::new).push(n);
                        }
                    }
                }
                '$' if self.peek_at(1) == Some('(') => {
                    self.at += 1;
                    let inner = self.substitution();
                    let w = p.word.get_or_insert_with(String::new);
                    w.push_str("$(");
                    w.push_str(&inner);
                    w.push(')');
                    p.nested.push(inner);
                }
                '`' => {
                    self.at += 1;
                    let inner = self.backquoted();
                    p.word.get_or_insert_with(String::new).push_str(&inner);
                    p.nested.push(inner);
                }
                '#' if p.word.is_none() => {
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.at += 1;
                    }
                }
                '\n' => {
                    self.at += 1;
                    p.end_word(out.len());
                    p.end_command(out, self.depth, &mut self.too_deep);
                    self.skip_heredocs();
                }
                ';' | '&' | '|' | '(' | ')' => {
                    self.at += 1;
                    p.end_word(out.len());
                    p.end_command(out, self.depth, &mut self.too_deep);
                }
                '<' | '>' => {
                    // A redirection: `N>` / `&>` glue to it; its target is
                    // the next word, dropped with it.
                    if p.word.as_deref().is_some_and(|w| {
                        !w.is_empty() && w.chars().all(|c| c.is_ascii_digit() || c == '&')
                    }) {
                        p.word = None;
                    } else {
                        p.end_word(out.len());
                    }
                    self.at += 1;
                    let output = c == '>' || self.peek() == Some('>');
                    let heredoc =
                        c == '<' && self.peek() == Some('<') && self.peek_at(1) != Some('<');
                    while matches!(self.peek(), Some('<' | '>' | '&' | '|')) {
                        self.at += 1;
                    }
                    if heredoc {
                        let strip = self.peek() == Some('-');
                        if strip {
                            self.at += 1;
                        }
                        while matches!(self.peek(), Some(' ' | '\t')) {
                            self.at += 1;
                        }
                        let delimiter = self.bare_word();
                        self.heredocs.push((delimiter, strip));
                    } else if self.peek().is_some_and(|c| c.is_ascii_digit() || c == '-') {
                        // `2>&1`, `>&-`: a descriptor, not a file word.
                        while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '-') {
                            self.at += 1;
                        }
                    } else {
                        p.redirect_target = Some(output);
                    }
                }
                c if c.is_whitespace() => {
                    self.at += 1;
                    p.end_word(out.len());
                }
                other => {
                    self.at += 1;
                    p.word.get_or_insert_with(String::new).push(other);
                }
            }
        }
        p.end_word(out.len());
        p.end_command(out, self.depth, &mut self.too_deep);
        self.writes.extend(p.writes);
    }

    /// A here-document delimiter, its quotes removed.
    fn bare_word(&mut self) -> String {
        let mut w = String::new();
        while let Some(c) = self.peek() {
            match c {
                '\'' | '"' => self.at += 1,
                c if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '<' | '>' | '(' | ')') => {
                    break;
                }
                other => {
                    self.at += 1;
                    w.push(other);
                }
            }
        }
        w
    }

    /// After a newline: skips the bodies of pending here-documents.
    fn skip_heredocs(&mut self) {
        for (delimiter, strip) in std::mem::take(&mut self.heredocs) {
            loop {
                let start = self.at;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.at += 1;
                }
                let line: String = self.chars[start..self.at].iter().collect();
                if self.peek().is_some() {
                    self.at += 1;
                }
                let line = if strip {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if line == delimiter || self.peek().is_none() {
                    break;
                }
            }
        }
    }

    /// The text of `$( … )`, the cursor on its `(`; nested parentheses
    /// and quotes are balanced.
    fn substitution(&mut self) -> String {
        self.at += 1;
        let start = self.at;
        let mut depth = 1;
        while let Some(c) = self.peek() {
            self.at += 1;
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return self.chars[start..self.at - 1].iter().collect();
                    }
                }
                '\'' => {
                    while self.peek().is_some_and(|c| c != '\'') {
                        self.at += 1;
                    }
                    self.at += 1;
                }
                '\\' => self.at += 1,
                _ => {}
            }
        }
        self.chars[start..self.at.min(self.chars.len())]
            .iter()
            .collect()
    }

    /// The text of `` `…` ``, the cursor after its opening quote.
    fn backquoted(&mut self) -> String {
        let mut inner = String::new();
        while let Some(c) = self.peek() {
            self.at += 1;
            match c {
                '`' => break,
                '\\' => {
                    if let Some(n) = self.peek() {
                        self.at += 1;
                        inner.push(n);
                    }
                }
                other => inner.push(other),
            }
        }
        inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmds(text: &str) -> Vec<Vec<&'static str>> {
        commands(text)
            .into_iter()
            .map(|c| {
                c.into_iter()
                    .map(|w| &*Box::leak(w.into_boxed_str()))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn separators_split_commands_and_quotes_are_removed() {
        assert_eq!(
            cmds(
                "cd wt && git push -u origin feature/1 && gh pr create --title 'Add login' --body \"Closes #1\"; echo done | cat"
            ),
            vec![
                vec!["cd", "wt"],
                vec!["git", "push", "-u", "origin", "feature/1"],
                vec![
                    "gh",
                    "pr",
                    "create",
                    "--title",
                    "Add login",
                    "--body",
                    "Closes #1"
                ],
                vec!["echo", "done"],
                vec!["cat"],
            ]
        );
    }

    #[test]
    fn substitutions_are_commands_too() {
        assert_eq!(
            cmds("url=$(gh pr create --fill) && echo \"$(gh pr merge 3)\" `gh pr view`"),
            vec![
                vec!["url=$(gh pr create --fill)"],
                vec!["gh", "pr", "create", "--fill"],
                vec!["echo", "$(gh pr merge 3)", "gh pr view"],
                vec!["gh", "pr", "merge", "3"],
                vec!["gh", "pr", "view"],
            ]
        );
    }

    #[test]
    fn redirections_and_heredoc_bodies_are_not_words() {
        assert_eq!(
            cmds("cat > notes.md <<'EOF'\ngh pr create --title x\nEOF\ngh pr list 2>&1 >/dev/null"),
            vec![vec!["cat"], vec!["gh", "pr", "list"]]
        );
    }

    #[test]
    fn output_redirections_are_writes() {
        let line = parse(
            "echo x >> .sdd/loop/work.history.jsonl; : > '.sdd/loop/a b' 2>&1; cat < in.txt &>out.log; echo \"$(echo y >| inner)\"",
        );
        let targets: Vec<&str> = line.writes.iter().map(|(_, w)| w.as_str()).collect();
        assert_eq!(
            targets,
            vec![
                ".sdd/loop/work.history.jsonl",
                ".sdd/loop/a b",
                "out.log",
                "inner"
            ]
        );
        assert_eq!(line.writes[0].0, 0);
        assert_eq!(line.writes[1].0, 1);
        assert_eq!(
            parse("cd .sdd/loop && cat <in.txt 2>/dev/null").writes,
            vec![(1, "/dev/null".to_owned())]
        );
        assert!(
            parse("cat <<EOF\n> not a redirect\nEOF\n")
                .writes
                .is_empty()
        );
    }

    #[test]
    fn comments_and_escapes() {
        assert_eq!(
            cmds("# gh pr create\ngh pr merge \\\n 12 # merge it"),
            vec![vec!["gh", "pr", "merge", "12"]]
        );
    }

    #[test]
    fn an_unclosed_quote_is_read_to_the_end() {
        assert_eq!(
            cmds("gh pr create --body 'Closes #1"),
            vec![vec!["gh", "pr", "create", "--body", "Closes #1"]]
        );
    }

    #[test]
    fn prompt_words_keep_quoted_spaces() {
        assert_eq!(
            words("/sdd:work --loop --answer 'budget-escalation=raise max_iterations=10'"),
            vec![
                "/sdd:work",
                "--loop",
                "--answer",
                "budget-escalation=raise max_iterations=10"
            ]
        );
    }
}
