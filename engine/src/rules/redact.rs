//! Redaction of what the loop writes or prints (ADR-0028, "Sensitive
//! content note"), on by default.
//!
//! The contract asks that gate questions and answers pass through the
//! project's `### Loop Logging` patterns. That alone left a hole: with no
//! patterns declared nothing was redacted, so a failure's root cause that
//! quoted a `ghp_…` token reached history and the terminal verbatim. So a
//! [`Redactor`] always removes, whatever CLAUDE.md says:
//!
//! - exact secret values handed to it: the tracker token, and the value of
//!   every passed-on environment variable whose name ends in `TOKEN`, `KEY`,
//!   `SECRET` or `PASSWORD` (any case) — see [`RedactorBuilder::env`].
//!   Values shorter than [`MIN_SECRET_LEN`] characters are ignored, so
//!   `DEBUG_KEY=1` does not blank every `1`;
//! - well-known credential shapes ([`SHAPES`]): GitHub tokens (`ghp_`,
//!   `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), Anthropic and OpenAI
//!   keys, AWS access key ids, Slack tokens, Google API keys (`AIza…`, what
//!   the Gemini CLI takes as `GEMINI_API_KEY`), PEM private-key blocks;
//! - `Authorization:` header values, also as a JSON/YAML field.
//!
//! Each is replaced by a marker naming its kind — `[REDACTED:github-token]`,
//! `[REDACTED:secret-env:GITHUB_TOKEN]`, `[REDACTED:authorization]` — so a
//! reader knows what was there without seeing it. `### Loop Logging`
//! patterns (under `### SDD Configuration`) add to these and run after
//! them: a project pattern can widen redaction but never make a built-in
//! rule miss. The block is a table with a `Pattern` column and an optional
//! `Replacement` column, or a bullet list of patterns; patterns are regular
//! expressions, the replacement is literal and defaults to `[REDACTED]`.
//!
//! ```markdown
//! ### Loop Logging
//! | Pattern | Replacement |
//! |---|---|
//! | `(?i)customer-\d+` | [CUSTOMER] |
//! | `acme-internal\.example` | |
//! ```
//!
//! Redacting twice gives the same text as redacting once, provided the
//! project's patterns do not match their own replacements. Text with
//! nothing to redact costs a literal search for the shapes' prefixes and
//! the exact values, a look for two words (`authorization`, `://`), one
//! pass of a [`RegexSet`] for the project's patterns if it has any, and no
//! allocation; a pattern is compiled only when a text first needs it,
//! so a skill's whole output can go through [`Redactor::redact`] line by
//! line; [`Redactor::lines`] keeps a private-key block redacted across the
//! lines it spans. JSON summaries go through [`Redactor::redact_json`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;
use regex::{Captures, Regex, RegexSet};
use serde_json::Value;

use crate::rules::claude_md::ClaudeMd;

/// The replacement of a `### Loop Logging` pattern that names none.
pub const DEFAULT_REPLACEMENT: &str = "[REDACTED]";

/// Shortest secret value (in characters) redacted by exact match. Shorter
/// values are too likely to be ordinary text (`1`, `true`, `admin`) —
/// redacting them would garble every line without protecting anything a
/// guess could not find.
pub const MIN_SECRET_LEN: usize = 8;

/// Environment variable names ending in one of these (any case) hold
/// secrets.
pub const SECRET_NAME_SUFFIXES: [&str; 4] = ["TOKEN", "KEY", "SECRET", "PASSWORD"];

/// A built-in credential shape: its marker kind and its pattern.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub kind: &'static str,
    pub pattern: &'static str,
}

/// The credential shapes redacted by default, in the order they apply.
///
/// Distinctive prefixes match anywhere, even glued to other text; the
/// generic OpenAI `sk-` needs a word boundary before it (`task-…`, `disk-…`
/// must not match) and, without a `proj-`/`svcacct-`/`admin-` prefix, an
/// unbroken run of 20 letters and digits (so a kebab-case name such as
/// `sk-learn-compatible-wrapper` is left alone). It comes last: a marker
/// put just before `sk-` by an earlier rule creates a word boundary, and
/// that must happen in the same pass, or a second pass would redact more.
/// Lengths are minimums, and the match runs on greedily, so a longer token
/// is removed whole.
pub const SHAPES: &[Shape] = &[
    Shape {
        kind: "github-token",
        pattern: r"gh[pousr]_[A-Za-z0-9]{36,}",
    },
    Shape {
        kind: "github-pat",
        pattern: r"github_pat_[A-Za-z0-9_]{22,}",
    },
    Shape {
        kind: "anthropic-key",
        pattern: r"sk-ant-[A-Za-z0-9_-]{20,}",
    },
    Shape {
        kind: "aws-access-key-id",
        pattern: r"(?:AKIA|ASIA)[A-Z0-9]{16}",
    },
    Shape {
        kind: "slack-token",
        pattern: r"xox[abprs]-[A-Za-z0-9-]{10,}",
    },
    Shape {
        kind: "google-api-key",
        pattern: r"AIza[0-9A-Za-z_-]{35,}",
    },
    Shape {
        kind: "openai-key",
        pattern: r"(?-u:\b)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20,})",
    },
];

/// A PEM private-key block, `BEGIN` to `END` across lines. A `BEGIN`
/// without its `END` (output cut short) is redacted to the end of the text.
const PRIVATE_KEY: &str = r"(?s)-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)";
const PRIVATE_KEY_BEGIN: &str = r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----";
const PRIVATE_KEY_END: &str = r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----";

/// `Authorization: [scheme ]value` as a header or a YAML field. A value
/// that is already a marker is matched first, and kept, so redaction is
/// idempotent whichever rule removed the token.
const AUTHORIZATION_HEADER: &str = r#"(?i)(?-u:\b)(?P<lead>authorization[ \t]*:[ \t]*["']?)(?P<scheme>(?:bearer|token|basic|digest)[ \t]+)?(?P<value>\[REDACTED[^\]\s]*\]|[^\s"',;]+)"#;

/// `"authorization": "…"` in JSON (also escaped inside a JSON string, or
/// single-quoted): the whole string value goes.
const AUTHORIZATION_FIELD: &str =
    r#"(?i)(?P<lead>["']authorization\\?["'][ \t]*:[ \t]*\\?["'])(?P<value>[^"'\\\r\n]*)"#;

const AUTHORIZATION_MARKER: &str = "[REDACTED:authorization]";

/// Credentials in a URL's authority: `scheme://user:password@host` (the
/// user and the password go), or `scheme://TOKEN@host` with a user part
/// of 16 characters or more (how a token is put in a git or API URL);
/// `ssh://git@host` keeps its short user name. The scheme and the `@`
/// stay, so the URL is still readable.
const URL_CREDENTIALS: &str = r#"(?i)(?P<lead>\b[a-z][a-z0-9+.-]*://)(?P<value>[^\s/?#@:"'<>\[\]]+:[^\s/?#@"'<>]*|[^\s/?#@:"'<>\[\]]{16,})@"#;

const URL_CREDENTIALS_MARKER: &str = "[REDACTED:url-credentials]";

fn marker(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

fn is_marker(text: &str) -> bool {
    text.strip_prefix("[REDACTED")
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|mid| !mid.contains(']') && !mid.contains(char::is_whitespace))
}

/// A redaction pattern that does not compile, or would match everywhere.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: redaction pattern `{pattern}` cannot be used: {detail}", path.display())]
pub struct RedactError {
    pub path: PathBuf,
    pub line: usize,
    pub pattern: String,
    pub detail: String,
}

impl RedactError {
    pub fn help(&self) -> &'static str {
        "patterns under `### Loop Logging` are regular expressions (Rust regex syntax) that match some text; escape literal characters such as `.` or `(` with `\\`"
    }
}

/// How a rule turns a match into its replacement.
#[derive(Debug, Clone)]
enum Replace {
    Literal(String),
    /// Exact secret values: the matched value names its marker.
    Values(HashMap<String, String>),
    AuthorizationHeader,
    AuthorizationField,
    UrlCredentials,
}

#[derive(Debug, Clone)]
struct Rule {
    pattern: Box<str>,
    /// Compiled on first use: the rules run only on text in which
    /// [`BuiltIn::set`] found a secret, which most processes never see,
    /// and compiling all of them at every start was a third of the
    /// engine's start-up.
    re: OnceLock<Regex>,
    replace: Replace,
}

impl Rule {
    /// A rule compiled when it first applies.
    fn new(pattern: &str, replace: Replace) -> Self {
        Self {
            pattern: pattern.into(),
            re: OnceLock::new(),
            replace,
        }
    }

    /// A rule from a pattern already compiled.
    fn compiled(re: Regex, replace: Replace) -> Self {
        Self {
            pattern: re.as_str().into(),
            re: OnceLock::from(re),
            replace,
        }
    }

    fn re(&self) -> &Regex {
        self.re.get_or_init(|| {
            Regex::new(&self.pattern).expect("built-in patterns and escaped values compile")
        })
    }

    fn apply<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let re = self.re();
        match &self.replace {
            Replace::Literal(with) => re.replace_all(text, regex::NoExpand(with)),
            Replace::Values(markers) => re.replace_all(text, |caps: &Captures| {
                markers
                    .get(&caps[0])
                    .cloned()
                    .unwrap_or_else(|| marker("secret"))
            }),
            Replace::AuthorizationHeader => re.replace_all(text, |caps: &Captures| {
                if is_marker(&caps["value"]) {
                    caps[0].to_owned()
                } else {
                    let scheme = caps.name("scheme").map_or("", |m| m.as_str());
                    format!("{}{scheme}{AUTHORIZATION_MARKER}", &caps["lead"])
                }
            }),
            Replace::UrlCredentials => re.replace_all(text, |caps: &Captures| {
                format!("{}{URL_CREDENTIALS_MARKER}@", &caps["lead"])
            }),
            Replace::AuthorizationField => re.replace_all(text, |caps: &Captures| {
                let value = &caps["value"];
                if value.is_empty() || is_marker(value) {
                    caps[0].to_owned()
                } else {
                    format!("{}{AUTHORIZATION_MARKER}", &caps["lead"])
                }
            }),
        }
    }
}

/// The built-in rules, set up once per process: a tick builds its
/// redactor once, but tests and tools build many. Nothing is compiled
/// here: the set when a text first holds one of [`SET_WORDS`], each rule
/// when a text first needs it.
#[derive(Debug)]
struct BuiltIn {
    private_key: Rule,
    /// The shapes, then the two `Authorization` rules and URL credentials
    /// ([`NEEDLED`]).
    rest: Vec<Rule>,
    /// Whether a text holds a word of [`SET_WORDS`], in one pass.
    set_words: AhoCorasick,
    /// `private_key` then the shapes: which of them (and so from which
    /// rule on) a text needs any work, in one pass.
    set: OnceLock<RegexSet>,
    private_key_begin: OnceLock<Regex>,
    private_key_end: OnceLock<Regex>,
}

/// A literal every match of a rule in [`BuiltIn::set`] holds (in its
/// case: none of those rules ignores case): `-----BEGIN` for a private
/// key, then each shape's prefix. A text holding none matches none of
/// them, so the set is neither run nor compiled for it — most processes
/// never compile it (compiling it was a twentieth of a no-op tick's CPU).
const SET_WORDS: [&str; 16] = [
    "-----BEGIN",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "AKIA",
    "ASIA",
    "xoxa-",
    "xoxb-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "AIza",
    "sk-",
];

/// `pattern` from `cell` when `line` holds `word` (compiled on first use).
fn when_holding<'a>(
    cell: &'a OnceLock<Regex>,
    pattern: &str,
    word: &str,
    line: &str,
) -> Option<&'a Regex> {
    line.contains(word)
        .then(|| cell.get_or_init(|| Regex::new(pattern).expect("built-in pattern compiles")))
}

/// The built-in rules kept out of [`BuiltIn::set`], each with a word every
/// text it matches holds (ASCII case aside): a rule is tried, and
/// compiled, only on a text holding its word. In the set, the
/// `Authorization` rules' case-insensitive word made the set build a large
/// literal search, and URL credentials' Unicode classes kept it off its
/// fast engines; together they were a quarter of a no-op tick's
/// instructions in a debug build (issue 34).
const NEEDLED: [(&str, Replace, &str); 3] = [
    (
        AUTHORIZATION_HEADER,
        Replace::AuthorizationHeader,
        "authorization",
    ),
    (
        AUTHORIZATION_FIELD,
        Replace::AuthorizationField,
        "authorization",
    ),
    (URL_CREDENTIALS, Replace::UrlCredentials, "://"),
];

/// Whether `text` holds `needle`, ASCII case aside.
fn holds(text: &str, needle: &str) -> bool {
    text.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

static BUILT_IN: LazyLock<BuiltIn> = LazyLock::new(|| {
    let private_key = Rule::new(PRIVATE_KEY, Replace::Literal(marker("private-key")));
    let mut rest: Vec<Rule> = SHAPES
        .iter()
        .map(|s| Rule::new(s.pattern, Replace::Literal(marker(s.kind))))
        .collect();
    rest.extend(
        NEEDLED
            .into_iter()
            .map(|(pattern, replace, _)| Rule::new(pattern, replace)),
    );
    BuiltIn {
        private_key,
        rest,
        set_words: AhoCorasick::new(SET_WORDS).expect("built-in words build"),
        set: OnceLock::new(),
        private_key_begin: OnceLock::new(),
        private_key_end: OnceLock::new(),
    }
});

impl BuiltIn {
    /// `private_key` then the shapes, in one set (compiled on first use).
    fn set(&self) -> &RegexSet {
        self.set.get_or_init(|| {
            RegexSet::new(
                std::iter::once(&self.private_key)
                    .chain(&self.rest[..SHAPES.len()])
                    .map(|r| &*r.pattern),
            )
            .expect("built-in redaction patterns compile together")
        })
    }

    /// A private key's `BEGIN` line pattern, for a line that may hold one.
    fn pem_begin(&self, line: &str) -> Option<&Regex> {
        when_holding(
            &self.private_key_begin,
            PRIVATE_KEY_BEGIN,
            "-----BEGIN",
            line,
        )
    }

    /// A private key's `END` line pattern, for a line that may hold one.
    fn pem_end(&self, line: &str) -> Option<&Regex> {
        when_holding(&self.private_key_end, PRIVATE_KEY_END, "-----END", line)
    }

    /// The first rule of [`BuiltIn::set`] that matches `text`.
    fn first_in_set(&self, text: &str) -> Option<usize> {
        if !self.set_words.is_match(text) {
            return None;
        }
        self.set().matches(text).iter().next()
    }
}

/// The redaction rules of one tick. They apply in this order: private-key
/// blocks, exact secret values, credential shapes, `Authorization` values,
/// then the project's patterns.
#[derive(Debug, Clone)]
pub struct Redactor {
    built_in: &'static BuiltIn,
    /// One alternation of every exact value, longest first, compiled when
    /// a text first holds one ([`Redactor::value_words`] finds them).
    values: Option<Rule>,
    /// The exact values, to find in one pass whether a text holds any.
    value_words: Option<AhoCorasick>,
    project: Vec<Rule>,
    /// The project's patterns in one pass. `None` if together they exceed
    /// the regex size limit: each is then tried in turn, same result.
    project_set: Option<RegexSet>,
}

impl Default for Redactor {
    /// The built-in rules alone: credential shapes and `Authorization`
    /// values, no exact secret values, no project patterns.
    fn default() -> Self {
        RedactorBuilder::default().build()
    }
}

/// Collects the secret values and project patterns of a [`Redactor`].
#[derive(Debug, Clone, Default)]
pub struct RedactorBuilder {
    /// (marker kind, value), first added wins for a repeated value.
    secrets: Vec<(String, String)>,
    patterns: Vec<(Regex, String)>,
}

impl RedactorBuilder {
    /// Adds an exact secret value, replaced by `[REDACTED:{kind}]` (e.g.
    /// kind `tracker-token`). Ignored when shorter than [`MIN_SECRET_LEN`]
    /// characters after trimming. A multi-line value is also matched line
    /// by line (each line that is long enough), so text redacted one line
    /// at a time loses it too.
    pub fn secret(mut self, kind: &str, value: &str) -> Self {
        let kind = sanitize_kind(kind);
        let mut add = |v: &str| {
            let v = v.trim();
            if v.chars().count() >= MIN_SECRET_LEN {
                self.secrets.push((kind.clone(), v.to_owned()));
            }
        };
        add(value);
        if value.trim().contains('\n') {
            value.lines().for_each(&mut add);
        }
        self
    }

    /// Adds the value of every variable whose name ends in `TOKEN`, `KEY`,
    /// `SECRET` or `PASSWORD` (any case), as kind `secret-env:{NAME}`.
    pub fn env<K: AsRef<str>, V: AsRef<str>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        for (name, value) in vars {
            if is_secret_name(name.as_ref()) {
                self = self.secret(&format!("secret-env:{}", name.as_ref()), value.as_ref());
            }
        }
        self
    }

    /// Adds the `### Loop Logging` patterns of `md`, if any.
    pub fn claude_md(mut self, md: &ClaudeMd) -> Result<Self, RedactError> {
        self.patterns.extend(project_patterns(md)?);
        Ok(self)
    }

    pub fn build(self) -> Redactor {
        let mut markers: Vec<String> = SHAPES.iter().map(|s| marker(s.kind)).collect();
        markers.extend(["private-key", "authorization"].map(marker));
        markers.extend(self.secrets.iter().map(|(kind, _)| marker(kind)));
        markers.extend(self.patterns.iter().map(|(_, r)| r.clone()));
        // A value found inside a replacement would be redacted again on every
        // pass, and one containing a marker could only match after an
        // earlier pass; neither (`REDACTED`, `github-token`) is a secret.
        let mut values: HashMap<String, String> = HashMap::new();
        for (kind, value) in self.secrets {
            if !value.contains("[REDACTED") && !markers.iter().any(|m| m.contains(&value)) {
                values.entry(value).or_insert_with(|| marker(&kind));
            }
        }
        let value_words = (!values.is_empty())
            .then(|| AhoCorasick::new(values.keys()).expect("exact values build"));
        let values = (!values.is_empty()).then(|| {
            let mut ordered: Vec<&String> = values.keys().collect();
            // Longest first, so a value containing another goes whole.
            ordered.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
            let alternation = ordered
                .iter()
                .map(|v| regex::escape(v))
                .collect::<Vec<_>>()
                .join("|");
            Rule::new(&alternation, Replace::Values(values))
        });
        let project_set = (!self.patterns.is_empty())
            .then(|| RegexSet::new(self.patterns.iter().map(|(re, _)| re.as_str())).ok())
            .flatten();
        let project = self
            .patterns
            .into_iter()
            .map(|(re, with)| Rule::compiled(re, Replace::Literal(with)))
            .collect();
        Redactor {
            built_in: &BUILT_IN,
            values,
            value_words,
            project,
            project_set,
        }
    }
}

/// Whether an environment variable of this name holds a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

/// Marker kinds are shown between `[REDACTED:` and `]`: keep them to
/// characters that cannot end or split a marker.
fn sanitize_kind(kind: &str) -> String {
    kind.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn project_patterns(md: &ClaudeMd) -> Result<Vec<(Regex, String)>, RedactError> {
    let Some(section) = md.sdd_section("Loop Logging") else {
        return Ok(Vec::new());
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
    raw.into_iter()
        .map(|(line, pattern, replacement)| {
            let error = |detail: String| RedactError {
                path: md.path().to_path_buf(),
                line,
                pattern: pattern.clone(),
                detail,
            };
            let re = Regex::new(&pattern).map_err(|e| {
                let last = e.to_string().lines().last().unwrap_or("").trim().to_owned();
                error(format!("it is not a valid regular expression: {last}"))
            })?;
            // An empty match would put the replacement between every two
            // characters of everything the loop writes.
            if re.is_match("") {
                return Err(error(
                    "it matches the empty text, so every line would fill with replacements"
                        .to_owned(),
                ));
            }
            Ok((re, replacement))
        })
        .collect()
}

impl Redactor {
    pub fn builder() -> RedactorBuilder {
        RedactorBuilder::default()
    }

    /// The built-in rules plus the project's `### Loop Logging` patterns.
    /// Exact secret values are added with [`Redactor::builder`].
    pub fn from_claude_md(md: &ClaudeMd) -> Result<Self, RedactError> {
        Ok(Self::builder().claude_md(md)?.build())
    }

    /// How many `### Loop Logging` patterns the project added.
    pub fn project_patterns(&self) -> usize {
        self.project.len()
    }

    /// Every rule, in the order they apply.
    fn rules(&self) -> impl Iterator<Item = &Rule> {
        std::iter::once(&self.built_in.private_key)
            .chain(&self.values)
            .chain(&self.built_in.rest)
            .chain(&self.project)
    }

    /// The position (in [`Redactor::rules`]) of the first rule that
    /// matches `text`, or at most that; `None` if no rule does.
    fn first_match(&self, text: &str) -> Option<usize> {
        let after_values = 1 + usize::from(self.values.is_some());
        let project_start = after_values + self.built_in.rest.len();
        let needled = self.built_in.rest.len() - NEEDLED.len();
        let built_in = match self.built_in.first_in_set(text) {
            Some(0) => Some(0),
            Some(i) => Some(after_values + i - 1),
            None => NEEDLED
                .iter()
                .zip(&self.built_in.rest[needled..])
                .position(|((_, _, needle), rule)| holds(text, needle) && rule.re().is_match(text))
                .map(|j| after_values + needled + j),
        };
        let values = self
            .value_words
            .as_ref()
            .filter(|words| words.is_match(text))
            .map(|_| 1);
        let project = match &self.project_set {
            Some(set) => set.matches(text).iter().next().map(|i| project_start + i),
            None => (!self.project.is_empty()).then_some(project_start),
        };
        [built_in, values, project].into_iter().flatten().min()
    }

    /// `text` with every secret replaced; borrowed when there was nothing
    /// to replace.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.first_match(text) {
            Some(first) => self.redact_from(text, first),
            None => Cow::Borrowed(text),
        }
    }

    /// Runs the rules from position `first` on, each on the text as the
    /// previous one left it. Rules before the first that matches cannot
    /// change the text, so skipping them changes nothing.
    fn redact_from<'t>(&self, text: &'t str, first: usize) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for rule in self.rules().skip(first) {
            let replaced = match rule.apply(&out) {
                Cow::Borrowed(_) => None,
                Cow::Owned(s) => Some(s),
            };
            if let Some(s) = replaced {
                out = Cow::Owned(s);
            }
        }
        out
    }

    /// `text` with every secret replaced.
    pub fn apply(&self, text: &str) -> String {
        self.redact(text).into_owned()
    }

    /// Redacts every string in `value`, in place. Object keys are kept (a
    /// summary's shape must not change), but the whole string value of an
    /// `authorization` key (any case) is replaced.
    pub fn redact_json(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    match v {
                        Value::String(s)
                            if key.eq_ignore_ascii_case("authorization")
                                && !s.is_empty()
                                && !is_marker(s) =>
                        {
                            *s = AUTHORIZATION_MARKER.to_owned();
                        }
                        _ => self.redact_json(v),
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// A redactor for text that arrives one line at a time: it remembers an
    /// open private-key block, so the key's body lines — which look like
    /// nothing in particular on their own — are redacted too.
    pub fn lines(&self) -> LineRedactor<'_> {
        LineRedactor {
            redactor: self,
            in_private_key: false,
        }
    }

    fn private_key_left_open(&self, line: &str) -> bool {
        let built_in = self.built_in;
        built_in
            .pem_begin(line)
            .and_then(|begin| begin.find_iter(line).last())
            .is_some_and(|begin| {
                let rest = &line[begin.end()..];
                !built_in.pem_end(rest).is_some_and(|end| end.is_match(rest))
            })
    }
}

/// Whether `c` ends a token (what a credential shape cannot contain).
fn ends_token(c: char) -> bool {
    c.is_whitespace() || "\"'=:,;()<>".contains(c)
}

/// `text` cut to at most `max` characters (plus `…` when cut) without
/// splitting a redaction marker or a token: a cut inside
/// `[REDACTED:…]` or inside a word moves back before it, so what is kept
/// never holds part of a secret the redactor could no longer recognise,
/// nor half a marker. Redact before or after: both are safe.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let end = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    let mut keep = &text[..end];
    // Inside a marker: back to its `[`.
    if let Some(open) = keep.rfind("[REDACTED")
        && !keep[open..].contains(']')
    {
        keep = &keep[..open];
    } else if !text[end..].starts_with(ends_token) && !keep.ends_with(ends_token) {
        // Inside a token: back to its start.
        let start = keep.rfind(ends_token).map_or(0, |i| {
            i + keep[i..].chars().next().map_or(1, char::len_utf8)
        });
        keep = &keep[..start];
    }
    format!("{keep}…")
}

/// Line-by-line redaction state; see [`Redactor::lines`].
#[derive(Debug)]
pub struct LineRedactor<'r> {
    redactor: &'r Redactor,
    in_private_key: bool,
}

impl LineRedactor<'_> {
    /// One line (without its newline), redacted. Every line of a
    /// private-key block becomes `[REDACTED:private-key]`.
    pub fn line<'t>(&mut self, line: &'t str) -> Cow<'t, str> {
        if self.in_private_key {
            let Some(end) = self
                .redactor
                .built_in
                .pem_end(line)
                .and_then(|end| end.find(line))
            else {
                return Cow::Owned(marker("private-key"));
            };
            self.in_private_key = false;
            let rest = &line[end.end()..];
            let tail = self.line(rest);
            return Cow::Owned(format!("{}{tail}", marker("private-key")));
        }
        self.in_private_key = self.redactor.private_key_left_open(line);
        self.redactor.redact(line)
    }
}

#[cfg(test)]
mod tests;
