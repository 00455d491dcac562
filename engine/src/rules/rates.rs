//! Per-model cost rates and the dollar estimate (ADR-0028, "Budget controls"
//! and "Rate-table sourcing"; stop condition #12).
//!
//! Rates are USD per million tokens, sourced in priority order from the
//! `Loop Cost Rates` table under `CLAUDE.md`'s `### SDD Configuration`
//! (source `CLAUDE.md SDD config`), else from the built-in table (source
//! `built-in default`). The main type is [`RateTable`]; [`RateTable::cost`]
//! turns cumulative per-model tokens into a [`Cost`].
//!
//! The contract prices only exact model ids and counts an unknown model as
//! $0.00. Agents report dated ids (`claude-sonnet-4-5-20250929`), aliases
//! and decorated ids (`claude-opus-4-6[1m]`), so under that rule a real run
//! cost nothing and the cost ceiling never tripped. What we do instead:
//! - a model resolves to its own row (case-insensitive), else — after
//!   dropping a `[…]` decoration — to the row whose id is its LONGEST prefix
//!   ending at a `-` or `@` boundary (`claude-sonnet-4-7-20260115` → row
//!   `claude-sonnet-4-7`; `claude-sonnet-45` never matches `claude-sonnet-4`;
//!   Claude Code's bare aliases `opus`, `sonnet`, `haiku` read as
//!   `claude-opus`…). A suffix that names a dearer variant (OpenAI's `-pro`)
//!   would inherit its family's price: such a model needs its own row;
//! - a model no row matches is priced at the table's highest input and
//!   output rates (cache writes at the highest write rate, cache reads with
//!   no discount), named in a warning, and recorded in `rate_table_source`
//!   as `… (unknown models priced at the highest rates)`: spend is
//!   over-estimated, never dropped. Only a row that says 0 makes tokens free.
//!
//! Cache tokens are parts of `tokens_in` (see
//! [`crate::state::protocol::ModelUsage`]). A table may give `cache read`,
//! `cache write` (5-minute writes) and `cache write 1h` columns; a missing
//! column or cell prices those tokens at the input rate — the contract's
//! no-discount bias — and 1-hour writes fall back to the 5-minute write
//! rate. So a model costs, over 10⁶: uncached input (`tokens_in` less the
//! cache parts) × input, plus reads × cache read, 5-minute writes × cache
//! write, 1-hour writes × cache write 1h, and `tokens_out` × output.
//!
//! The built-in table is a point-in-time snapshot of public list prices
//! (Anthropic, the OpenAI models Codex runs and Google's Gemini models),
//! announced once per run when
//! the cost ceiling is on: it is only as current as this file. It keeps the
//! contract's three rows exactly (`claude-*-4-7`, input and output only, so
//! their cache tokens cost the input rate) and adds family rows
//! (`claude-opus`, `claude-sonnet`, `claude-haiku`) priced no lower than any
//! of their members, for ids released after the snapshot. Long-context
//! premiums (prompts over 200K tokens on some models) are not modelled.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use crate::rules::claude_md::{ClaudeMd, Table};
use crate::state::budget::{ModelTokens, round_dollars};

/// Where the rates came from; its label starts `rate_table_source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateSource {
    ClaudeMd,
    BuiltIn,
}

impl RateSource {
    /// The contract's label: `CLAUDE.md SDD config` or `built-in default`.
    pub fn label(self) -> &'static str {
        match self {
            RateSource::ClaudeMd => "CLAUDE.md SDD config",
            RateSource::BuiltIn => "built-in default",
        }
    }
}

/// Appended to the source label when a model was priced at the table's
/// highest rates, so the checkpoint says its dollars are an over-estimate.
pub const UNKNOWN_MODELS_SUFFIX: &str = " (unknown models priced at the highest rates)";

/// USD per million tokens. A cache rate of `None` means "not declared".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub input: f64,
    pub output: f64,
    /// Cache reads; undeclared = the input rate.
    pub cache_read: Option<f64>,
    /// 5-minute cache writes; undeclared = the input rate.
    pub cache_write: Option<f64>,
    /// 1-hour cache writes; undeclared = the 5-minute write rate.
    pub cache_write_1h: Option<f64>,
}

impl Rate {
    /// Input and output only: cache tokens cost the input rate.
    pub const fn new(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cache_read: None,
            cache_write: None,
            cache_write_1h: None,
        }
    }

    /// Every column declared (Anthropic's shape).
    const fn cached(input: f64, output: f64, read: f64, write: f64, write_1h: f64) -> Self {
        Self {
            input,
            output,
            cache_read: Some(read),
            cache_write: Some(write),
            cache_write_1h: Some(write_1h),
        }
    }

    /// A cached-input discount and no cache writes (OpenAI's shape).
    const fn cached_input(input: f64, output: f64, read: f64) -> Self {
        Self {
            input,
            output,
            cache_read: Some(read),
            cache_write: None,
            cache_write_1h: None,
        }
    }

    pub fn cache_read_rate(&self) -> f64 {
        self.cache_read.unwrap_or(self.input)
    }

    pub fn cache_write_rate(&self) -> f64 {
        self.cache_write.unwrap_or(self.input)
    }

    pub fn cache_write_1h_rate(&self) -> f64 {
        self.cache_write_1h.unwrap_or(self.cache_write_rate())
    }

    /// Unrounded dollars for `tokens`. Cache parts larger than the whole
    /// (a misreport) are priced as reported, with nothing left uncached:
    /// the larger reading wins, never a negative count.
    pub fn dollars(&self, tokens: &ModelTokens) -> f64 {
        let write_1h = tokens.cache_write_1h_tokens.min(tokens.cache_write_tokens);
        let write_5m = tokens.cache_write_tokens - write_1h;
        let uncached = tokens
            .tokens_in
            .saturating_sub(tokens.cache_read_tokens)
            .saturating_sub(tokens.cache_write_tokens);
        (uncached as f64 * self.input
            + tokens.cache_read_tokens as f64 * self.cache_read_rate()
            + write_5m as f64 * self.cache_write_rate()
            + write_1h as f64 * self.cache_write_1h_rate()
            + tokens.tokens_out as f64 * self.output)
            / 1e6
    }
}

/// The built-in table: public list prices, USD per million tokens, as of
/// November 2026. Anthropic rows carry cache read (0.1× input), 5-minute
/// write (1.25×) and 1-hour write (2×) rates; OpenAI and Gemini rows a
/// cached-input rate. The first three rows are the contract's, exactly.
pub const BUILT_IN: &[(&str, Rate)] = &[
    ("claude-opus-4-7", Rate::new(15.0, 75.0)),
    ("claude-sonnet-4-7", Rate::new(3.0, 15.0)),
    ("claude-haiku-4-7", Rate::new(0.25, 1.25)),
    ("claude-opus-5", Rate::cached(5.0, 25.0, 0.5, 6.25, 10.0)),
    ("claude-opus-4-8", Rate::cached(5.0, 25.0, 0.5, 6.25, 10.0)),
    ("claude-opus-4-6", Rate::cached(5.0, 25.0, 0.5, 6.25, 10.0)),
    ("claude-opus-4-5", Rate::cached(5.0, 25.0, 0.5, 6.25, 10.0)),
    (
        "claude-opus-4-1",
        Rate::cached(15.0, 75.0, 1.5, 18.75, 30.0),
    ),
    ("claude-opus-4", Rate::cached(15.0, 75.0, 1.5, 18.75, 30.0)),
    ("claude-sonnet-5", Rate::cached(2.0, 10.0, 0.2, 2.5, 4.0)),
    ("claude-sonnet-4-6", Rate::cached(3.0, 15.0, 0.3, 3.75, 6.0)),
    ("claude-sonnet-4-5", Rate::cached(3.0, 15.0, 0.3, 3.75, 6.0)),
    ("claude-sonnet-4", Rate::cached(3.0, 15.0, 0.3, 3.75, 6.0)),
    ("claude-haiku-4-5", Rate::cached(1.0, 5.0, 0.1, 1.25, 2.0)),
    ("claude-3-7-sonnet", Rate::cached(3.0, 15.0, 0.3, 3.75, 6.0)),
    ("claude-3-5-sonnet", Rate::cached(3.0, 15.0, 0.3, 3.75, 6.0)),
    ("claude-3-5-haiku", Rate::cached(0.8, 4.0, 0.08, 1.0, 1.6)),
    ("claude-3-opus", Rate::cached(15.0, 75.0, 1.5, 18.75, 30.0)),
    ("claude-3-haiku", Rate::cached(0.25, 1.25, 0.03, 0.3, 0.5)),
    // Family rows, for ids newer than this table: never cheaper than any
    // member, so cache reads stay at the input rate (the contract's rows
    // declare no discount) and writes at the dearest member's rate.
    (
        "claude-opus",
        Rate {
            input: 15.0,
            output: 75.0,
            cache_read: None,
            cache_write: Some(18.75),
            cache_write_1h: Some(30.0),
        },
    ),
    (
        "claude-sonnet",
        Rate {
            input: 3.0,
            output: 15.0,
            cache_read: None,
            cache_write: Some(3.75),
            cache_write_1h: Some(6.0),
        },
    ),
    (
        "claude-haiku",
        Rate {
            input: 1.0,
            output: 5.0,
            cache_read: None,
            cache_write: Some(1.25),
            cache_write_1h: Some(2.0),
        },
    ),
    ("gpt-5", Rate::cached_input(1.25, 10.0, 0.125)),
    ("gpt-5-codex", Rate::cached_input(1.25, 10.0, 0.125)),
    ("gpt-5-mini", Rate::cached_input(0.25, 2.0, 0.025)),
    ("gpt-5.1", Rate::cached_input(1.25, 10.0, 0.125)),
    ("gpt-5.1-codex", Rate::cached_input(1.25, 10.0, 0.125)),
    ("o3", Rate::cached_input(2.0, 8.0, 0.5)),
    ("o4-mini", Rate::cached_input(1.1, 4.4, 0.275)),
    ("codex-mini-latest", Rate::cached_input(1.5, 6.0, 0.375)),
    // Google's Gemini Developer API, paid tier, Standard, text input,
    // prompts up to 200K tokens (ai.google.dev/gemini-api/docs/pricing, as
    // published in March 2026): cached tokens (implicit or explicit
    // caching) at the context-caching rate, a part of the prompt; thinking
    // tokens are billed as output ("output price, including thinking
    // tokens"), which is how the Gemini adapter counts them. Cache storage
    // per hour and the dearer prompts over 200K tokens (2.5 Pro: $2.50 /
    // $15.00; 3 Pro: $4.00 / $18.00) are not modelled.
    ("gemini-3-pro", Rate::cached_input(2.0, 12.0, 0.2)),
    ("gemini-3-flash", Rate::cached_input(0.5, 3.0, 0.05)),
    ("gemini-2.5-pro", Rate::cached_input(1.25, 10.0, 0.125)),
    ("gemini-2.5-flash", Rate::cached_input(0.3, 2.5, 0.03)),
    ("gemini-2.5-flash-lite", Rate::cached_input(0.1, 0.4, 0.01)),
    ("gemini-2.0-flash", Rate::cached_input(0.1, 0.4, 0.025)),
    ("gemini-2.0-flash-lite", Rate::new(0.075, 0.3)),
];

/// Printed once per run when the built-in table prices a run whose cost
/// ceiling is on.
pub const BUILT_IN_NOTICE: &str = "Cost rates: using the built-in table, a point-in-time snapshot of per-model rates that may be out of date. Declare your own under `### SDD Configuration` → `### Loop Cost Rates` in CLAUDE.md, one row per model: `| claude-opus-4-7 | 15.00 | 75.00 |` (USD per million input / output tokens).";

/// A rate row that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: {detail}", path.display())]
pub struct RateError {
    pub path: PathBuf,
    pub line: usize,
    pub detail: String,
}

impl RateError {
    pub fn help(&self) -> &'static str {
        "each row is `| model | input USD per Mtok | output USD per Mtok |`, e.g. `| claude-opus-4-7 | 15.00 | 75.00 |`; optional `Cache read`, `Cache write` (5-minute) and `Cache write 1h` columns may be left blank"
    }
}

/// How one model id was priced.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// The model's own row.
    Exact { row: String, rate: Rate },
    /// A dated id, alias or decorated id, priced at the row of its family.
    Family { row: String, rate: Rate },
    /// No row matched: the table's highest rates.
    Unknown { rate: Rate },
}

impl Resolution {
    pub fn rate(&self) -> Rate {
        match self {
            Resolution::Exact { rate, .. }
            | Resolution::Family { rate, .. }
            | Resolution::Unknown { rate } => *rate,
        }
    }

    /// The table row used, if any.
    pub fn row(&self) -> Option<&str> {
        match self {
            Resolution::Exact { row, .. } | Resolution::Family { row, .. } => Some(row),
            Resolution::Unknown { .. } => None,
        }
    }
}

/// A model no row matched, and the rates it was priced at.
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownModel {
    pub model: String,
    pub rate: Rate,
}

impl UnknownModel {
    /// The model id.
    pub fn as_str(&self) -> &str {
        &self.model
    }
}

impl fmt::Display for UnknownModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.model)
    }
}

/// The rates in force for a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RateTable {
    pub source: RateSource,
    rates: Vec<(String, Rate)>,
}

/// A dollar estimate and how each model was priced.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    pub dollars: f64,
    /// Models no row matched, priced at the table's highest rates.
    pub unknown_models: Vec<UnknownModel>,
    /// Every model of the usage and how it was priced.
    pub resolutions: BTreeMap<String, Resolution>,
    source: RateSource,
}

impl Cost {
    /// What `budget.json` records as `rate_table_source`: the source's
    /// label, plus [`UNKNOWN_MODELS_SUFFIX`] when a model had no row.
    pub fn rate_table_source(&self) -> String {
        let mut label = self.source.label().to_owned();
        if !self.unknown_models.is_empty() {
            label.push_str(UNKNOWN_MODELS_SUFFIX);
        }
        label
    }

    /// One line per model priced at its family's row rather than its own,
    /// e.g. `Cost rates: claude-sonnet-4-5-20250929 priced at row
    /// claude-sonnet-4-5 ($3.00 input, $15.00 output per Mtok)`.
    pub fn family_notes(&self) -> Vec<String> {
        self.resolutions
            .keys()
            .filter_map(|model| self.family_note(model))
            .collect()
    }

    /// [`Cost::family_notes`]' line for `model`, if a family row priced it.
    pub fn family_note(&self, model: &str) -> Option<String> {
        match self.resolutions.get(model)? {
            Resolution::Family { row, rate } => Some(format!(
                "Cost rates: {model} priced at row {row} ({} input, {} output per Mtok)",
                usd(rate.input),
                usd(rate.output)
            )),
            _ => None,
        }
    }
}

/// Dollars with cents, and more digits only when the rate has them.
fn usd(rate: f64) -> String {
    let cents = format!("{rate:.2}");
    if cents.parse::<f64>() == Ok(rate) {
        format!("${cents}")
    } else {
        format!("${rate}")
    }
}

fn parse_rate(text: &str) -> Option<f64> {
    let cleaned: String = text
        .chars()
        .filter(|c| !matches!(c, '$' | ',' | ' '))
        .collect();
    cleaned
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// A cache cell left blank (or `-`, `—`, `n/a`) declares nothing.
fn is_blank(cell: &str) -> bool {
    matches!(
        cell.trim().to_ascii_lowercase().as_str(),
        "" | "-" | "—" | "–" | "n/a" | "na"
    )
}

/// What a header cell of the rates table holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Model,
    Input,
    Output,
    CacheRead,
    CacheWrite,
    CacheWrite1h,
}

impl Column {
    /// Matched on the header's letters and digits, case-insensitively, so
    /// `Cache read`, `cache_read`, `Cache write (5m)`, `Cache write 1h
    /// ($/Mtok)` and OpenAI's `Cached input` are all understood.
    fn of_header(header: &str) -> Option<Self> {
        let h: String = header
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        if h.contains("cache") {
            return if h.contains("read") || h.contains("hit") || h.contains("cachedinput") {
                Some(Column::CacheRead)
            } else if h.contains("write") || h.contains("creat") {
                if h.contains("1h") || h.contains("hour") || h.contains("60m") {
                    Some(Column::CacheWrite1h)
                } else {
                    Some(Column::CacheWrite)
                }
            } else {
                None
            };
        }
        if h.contains("model") {
            Some(Column::Model)
        } else if h.contains("input") {
            Some(Column::Input)
        } else if h.contains("output") {
            Some(Column::Output)
        } else {
            None
        }
    }

    fn find(table: &Table, wanted: Column) -> Option<usize> {
        table
            .header
            .iter()
            .position(|h| Column::of_header(h) == Some(wanted))
    }

    fn what(self) -> &'static str {
        match self {
            Column::Model => "model",
            Column::Input => "input",
            Column::Output => "output",
            Column::CacheRead => "cache read",
            Column::CacheWrite => "cache write",
            Column::CacheWrite1h => "cache write 1h",
        }
    }
}

/// `claude-opus-4-6[1m]` → `claude-opus-4-6`.
fn strip_decoration(model: &str) -> &str {
    let mut id = model.trim();
    while let Some(inner) = id.strip_suffix(']') {
        match inner.rfind('[') {
            Some(open) => id = inner[..open].trim_end(),
            None => break,
        }
    }
    id
}

impl RateTable {
    pub fn built_in() -> Self {
        Self {
            source: RateSource::BuiltIn,
            rates: BUILT_IN
                .iter()
                .map(|(m, r)| ((*m).to_owned(), *r))
                .collect(),
        }
    }

    /// The CLAUDE.md table if one is declared with at least one row, else
    /// the built-in table. A row that does not parse is an error naming its
    /// line: silently mispricing a model would misstate spend.
    pub fn from_claude_md(md: &ClaudeMd) -> Result<Self, RateError> {
        let Some(table) = md
            .sdd_section("Loop Cost Rates")
            .and_then(|section| section.table())
        else {
            return Ok(Self::built_in());
        };
        let model_col = Column::find(&table, Column::Model).unwrap_or(0);
        let in_col = Column::find(&table, Column::Input).unwrap_or(1);
        let out_col = Column::find(&table, Column::Output).unwrap_or(2);
        let read_col = Column::find(&table, Column::CacheRead);
        let write_col = Column::find(&table, Column::CacheWrite);
        let write_1h_col = Column::find(&table, Column::CacheWrite1h);
        let mut rates = Vec::new();
        for row in &table.rows {
            let err = |detail: String| RateError {
                path: md.path().to_path_buf(),
                line: row.line,
                detail,
            };
            let model = row
                .cells
                .get(model_col)
                .filter(|m| !m.is_empty())
                .ok_or_else(|| err("rate row has no model name".into()))?;
            let cell = |col: usize| row.cells.get(col).map(String::as_str).unwrap_or("");
            let number = |col: usize, what: Column| {
                parse_rate(cell(col)).ok_or_else(|| {
                    err(format!(
                        "{} rate for {model} is not a non-negative number: `{}`",
                        what.what(),
                        cell(col)
                    ))
                })
            };
            let optional = |col: Option<usize>, what: Column| match col {
                Some(col) if !is_blank(cell(col)) => number(col, what).map(Some),
                _ => Ok(None),
            };
            rates.push((
                model.clone(),
                Rate {
                    input: number(in_col, Column::Input)?,
                    output: number(out_col, Column::Output)?,
                    cache_read: optional(read_col, Column::CacheRead)?,
                    cache_write: optional(write_col, Column::CacheWrite)?,
                    cache_write_1h: optional(write_1h_col, Column::CacheWrite1h)?,
                },
            ));
        }
        if rates.is_empty() {
            return Ok(Self::built_in());
        }
        Ok(Self {
            source: RateSource::ClaudeMd,
            rates,
        })
    }

    fn row(&self, id: &str) -> Option<&(String, Rate)> {
        self.rates.iter().find(|(m, _)| m.eq_ignore_ascii_case(id))
    }

    /// How `model` is priced: its own row; else, without a `[…]`
    /// decoration, the row whose id is its longest prefix ending at a `-`
    /// or `@` boundary (a bare alias `opus` is read as `claude-opus`); else
    /// the table's highest rates.
    pub fn resolve(&self, model: &str) -> Resolution {
        let model = model.trim();
        if let Some((row, rate)) = self.row(model) {
            return Resolution::Exact {
                row: row.clone(),
                rate: *rate,
            };
        }
        let id = strip_decoration(model);
        self.family_row(id)
            .or_else(|| {
                // Claude Code's model aliases (`opus`, `sonnet[1m]`).
                let claude = format!("claude-{id}");
                self.family_row(&claude)
            })
            .unwrap_or(Resolution::Unknown {
                rate: self.highest(),
            })
    }

    /// The row whose id is the longest prefix of `id` ending at a `-` or
    /// `@` boundary (or all of `id`).
    fn family_row(&self, id: &str) -> Option<Resolution> {
        self.rates
            .iter()
            .filter(|(row, _)| {
                id.get(..row.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(row))
                    && matches!(id.as_bytes().get(row.len()), None | Some(b'-' | b'@'))
            })
            .max_by_key(|(row, _)| row.len())
            .map(|(row, rate)| Resolution::Family {
                row: row.clone(),
                rate: *rate,
            })
    }

    /// The rate of `model`'s row (its own or its family's); `None` when no
    /// row matches.
    pub fn rate(&self, model: &str) -> Option<Rate> {
        match self.resolve(model) {
            Resolution::Unknown { .. } => None,
            known => Some(known.rate()),
        }
    }

    /// The rate for a model no row matches: the highest input and output
    /// rates of the table, cache reads undiscounted, and cache writes at
    /// the highest write rate any row charges (never below the input rate).
    pub fn highest(&self) -> Rate {
        let max = |f: fn(&Rate) -> f64| self.rates.iter().map(|(_, r)| f(r)).fold(0.0, f64::max);
        let input = max(|r| r.input);
        let write = max(Rate::cache_write_rate).max(input);
        Rate {
            input,
            output: max(|r| r.output),
            cache_read: None,
            cache_write: Some(write),
            cache_write_1h: Some(max(Rate::cache_write_1h_rate).max(write)),
        }
    }

    /// Dollars for cumulative per-model usage.
    pub fn cost(&self, usage: &BTreeMap<String, ModelTokens>) -> Cost {
        let mut dollars = 0.0;
        let mut unknown_models = Vec::new();
        let mut resolutions = BTreeMap::new();
        for (model, tokens) in usage {
            let resolution = self.resolve(model);
            let rate = resolution.rate();
            dollars += rate.dollars(tokens);
            if let Resolution::Unknown { .. } = resolution {
                unknown_models.push(UnknownModel {
                    model: model.clone(),
                    rate,
                });
            }
            resolutions.insert(model.clone(), resolution);
        }
        Cost {
            dollars: round_dollars(dollars),
            unknown_models,
            resolutions,
            source: self.source,
        }
    }
}

/// The warning for a model with no row (the contract's wording, with the
/// over-estimate in place of its $0.00).
pub fn unknown_model_warning(unknown: &UnknownModel) -> String {
    format!(
        "Unknown model in cost accounting: {} — priced at the rate table's highest rates ({} input, {} output per Mtok) so spend is over- rather than under-counted. Add a row to ### Loop Cost Rates in CLAUDE.md to fix.",
        unknown.model,
        usd(unknown.rate.input),
        usd(unknown.rate.output)
    )
}

#[cfg(test)]
mod tests;
