//! The budget checkpoint `.sdd/loop/{skill}.budget.json` (ADR-0028, "Budget
//! controls").
//!
//! Four ceilings (iterations, distinct PRs, wall-clock minutes, dollars) and
//! the run's cumulative counters. Every write carries the full field list
//! (nothing omitted) plus the engine's extras — per-model token totals, so
//! dollars can be recomputed when rates change; exact elapsed seconds; the
//! run's stop, once it has one. Fields added by other writers are kept.
//!
//! Every read validates: a file missing a required field is refused with the
//! contract's exact message and left byte-for-byte untouched (reading never
//! writes). The first write records `started_at`, the ceilings and
//! `rate_table_source`; later flags never silently widen a recorded ceiling
//! (see [`Budget::apply_flags`]). `prs_touched` is a deduplicated set of
//! `"#N"`. Writes are atomic and durable ([`crate::state::files::write_atomic`]).
//!
//! `qmd_failures_consecutive` is always written but not required on read:
//! the contract's own example file predates condition #11 and omits it, and
//! its value is restored from history, which wins anyway.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::state::files::{self, FileError};

/// The fields a budget file must carry, in the contract's order.
pub const REQUIRED_FIELDS: [&str; 15] = [
    "started_at",
    "max_iterations",
    "max_prs",
    "max_minutes",
    "max_dollars",
    "iterations_used",
    "prs_touched",
    "comments_pushed",
    "merges_attempted",
    "minutes_elapsed",
    "tokens_in",
    "tokens_out",
    "agents_dispatched",
    "dollars_estimate",
    "rate_table_source",
];

/// Contract defaults (ADR-0028, stop conditions #3–#5 and #12).
pub const DEFAULT_MAX_ITERATIONS: u64 = 5;
pub const DEFAULT_MAX_PRS: u64 = 20;
pub const DEFAULT_MAX_MINUTES: u64 = 60;
pub const DEFAULT_MAX_DOLLARS: f64 = 25.0;

/// An ordered, duplicate-free set of PR references (`"#142"`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrSet(Vec<String>);

impl PrSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `pr` unless present; returns whether it was new.
    pub fn insert(&mut self, pr: impl Into<String>) -> bool {
        let pr = pr.into();
        if self.0.contains(&pr) {
            false
        } else {
            self.0.push(pr);
            true
        }
    }

    pub fn contains(&self, pr: &str) -> bool {
        self.0.iter().any(|p| p == pr)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

impl<S: Into<String>> FromIterator<S> for PrSet {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut set = PrSet::new();
        for pr in iter {
            set.insert(pr);
        }
        set
    }
}

impl Serialize for PrSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for PrSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Vec::<String>::deserialize(d)?.into_iter().collect())
    }
}

impl schemars::JsonSchema for PrSet {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PrSet".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Distinct PR references, \"#N\", deduplicated",
            "type": "array",
            "items": {"type": "string", "pattern": "^#[0-9]+$"},
            "uniqueItems": true
        })
    }
}

/// Cumulative tokens for one model.
///
/// The cache counts are parts of `tokens_in` (see
/// [`crate::state::protocol::ModelUsage`]); they are written only when non-zero,
/// so a run that never reports cache tokens keeps the file's old shape.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct ModelTokens {
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// The part of `tokens_in` read from the prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_tokens: u64,
    /// The part of `tokens_in` written to the prompt cache (all lifetimes).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// The part of `cache_write_tokens` written with the 1-hour lifetime.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_1h_tokens: u64,
}

impl ModelTokens {
    /// Adds `other`, saturating: a corrupt count never wraps to a small one.
    pub fn add(&mut self, other: &ModelTokens) {
        self.tokens_in = self.tokens_in.saturating_add(other.tokens_in);
        self.tokens_out = self.tokens_out.saturating_add(other.tokens_out);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
        self.cache_write_1h_tokens = self
            .cache_write_1h_tokens
            .saturating_add(other.cache_write_1h_tokens);
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Why and where a run stopped; recorded so later ticks report the same end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunStop {
    /// Stop-cause name (e.g. `iteration_budget`).
    pub cause: String,
    /// The iteration in which it fired.
    pub iteration: u64,
    /// For `prior_gate_stop`: the gate answered `stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
}

/// The contents of `budget.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Budget {
    /// When the run began (RFC 3339 UTC); set by the first write.
    pub started_at: String,
    pub max_iterations: u64,
    pub max_prs: u64,
    pub max_minutes: u64,
    /// 0 disables the cost stop; spend is still tracked.
    pub max_dollars: f64,
    pub iterations_used: u64,
    pub prs_touched: PrSet,
    /// Top-level review comments and replies.
    pub comments_pushed: u64,
    pub merges_attempted: u64,
    pub minutes_elapsed: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub agents_dispatched: u64,
    pub dollars_estimate: f64,
    /// `CLAUDE.md SDD config` or `built-in default`.
    pub rate_table_source: String,
    #[serde(default)]
    pub qmd_failures_consecutive: u64,
    /// Per-model cumulative tokens (engine extra).
    #[serde(default)]
    pub tokens_by_model: BTreeMap<String, ModelTokens>,
    /// Exact elapsed seconds behind `minutes_elapsed` (engine extra).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_elapsed: Option<u64>,
    /// Set once the run has stopped (engine extra).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<RunStop>,
    /// When the last tick of the run ended; the wall-clock budget counts
    /// the time between ticks too (engine extra).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tick_ended_at: Option<String>,
    /// Targets (`#N`) deferred for the rest of the run by a repeated-failure
    /// `skip` answer (engine extra).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<String>,
    /// The ceiling flags of the command line last seen (engine extra): a
    /// later tick passing the same flags is `/loop` repeating one command
    /// line, not a request to change a ceiling raised since at a gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_flags: Option<CeilingFlags>,
    /// Fields written by other tools, preserved.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The four ceilings, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ceilings {
    pub max_iterations: u64,
    pub max_prs: u64,
    pub max_minutes: u64,
    pub max_dollars: f64,
}

impl Default for Ceilings {
    fn default() -> Self {
        Self {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_prs: DEFAULT_MAX_PRS,
            max_minutes: DEFAULT_MAX_MINUTES,
            max_dollars: DEFAULT_MAX_DOLLARS,
        }
    }
}

/// Ceilings as given on the command line: `None` = flag not given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CeilingFlags {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_prs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_dollars: Option<f64>,
}

impl CeilingFlags {
    /// Flags over the contract defaults.
    pub fn resolve(&self) -> Ceilings {
        let d = Ceilings::default();
        Ceilings {
            max_iterations: self.max_iterations.unwrap_or(d.max_iterations),
            max_prs: self.max_prs.unwrap_or(d.max_prs),
            max_minutes: self.max_minutes.unwrap_or(d.max_minutes),
            max_dollars: self.max_dollars.unwrap_or(d.max_dollars),
        }
    }
}

/// One of the four budget dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dimension {
    Iterations,
    Prs,
    Minutes,
    Dollars,
}

impl Dimension {
    pub const ALL: [Dimension; 4] = [
        Dimension::Iterations,
        Dimension::Prs,
        Dimension::Minutes,
        Dimension::Dollars,
    ];

    /// The budget.json field of its ceiling.
    pub fn field(self) -> &'static str {
        match self {
            Dimension::Iterations => "max_iterations",
            Dimension::Prs => "max_prs",
            Dimension::Minutes => "max_minutes",
            Dimension::Dollars => "max_dollars",
        }
    }

    /// The word the contract's prompts use.
    pub fn noun(self) -> &'static str {
        match self {
            Dimension::Iterations => "iterations",
            Dimension::Prs => "PRs",
            Dimension::Minutes => "minutes",
            Dimension::Dollars => "dollars",
        }
    }

    pub fn from_field(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|d| d.field() == name || d.noun().eq_ignore_ascii_case(name))
    }
}

/// A ceiling change caused by flags on a later tick.
#[derive(Debug, Clone, PartialEq)]
pub enum CeilingChange {
    /// A lower ceiling was asked for and applied.
    Narrowed {
        field: &'static str,
        from: f64,
        to: f64,
    },
    /// A higher ceiling was asked for on `--resume` and applied.
    Widened {
        field: &'static str,
        from: f64,
        to: f64,
    },
    /// A higher ceiling was asked for on a plain tick and refused.
    KeptRecorded {
        field: &'static str,
        recorded: f64,
        requested: f64,
    },
}

impl fmt::Display for CeilingChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CeilingChange::Narrowed { field, from, to } => {
                write!(f, "Budget {field} lowered from {from} to {to} by flag")
            }
            CeilingChange::Widened { field, from, to } => {
                write!(
                    f,
                    "Budget {field} raised from {from} to {to} by flag on --resume"
                )
            }
            CeilingChange::KeptRecorded {
                field,
                recorded,
                requested,
            } => write!(
                f,
                "Budget {field} stays at the recorded {recorded} (flag asked for {requested}); \
                 raise it by answering `raise` at the budget gate, or pass the flag with --resume"
            ),
        }
    }
}

/// Why a budget file could not be loaded. The file is never modified.
#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    #[error(
        "Budget file at {} is missing required field {field} — refusing to load. Delete the file to start a fresh run, or restore the missing field manually.",
        path.display()
    )]
    MissingField { path: PathBuf, field: &'static str },
    #[error(
        "Budget file at {} has an invalid {field}: {detail} — refusing to load. Delete the file to start a fresh run, or correct the field manually.",
        path.display()
    )]
    InvalidField {
        path: PathBuf,
        field: String,
        detail: String,
    },
    #[error(
        "Budget file at {} is not a JSON object ({detail}) — refusing to load. Delete the file to start a fresh run, or restore it from a backup.",
        path.display()
    )]
    NotJson { path: PathBuf, detail: String },
    #[error(transparent)]
    File(#[from] FileError),
}

/// The largest count read from a state file: 2^53 − 1, the largest
/// integer JSON tools (`jq`, JavaScript) hold exactly. A hand-edited
/// counter above it (`18446744073709551615`) is refused with its field
/// named, so no counter the engine adds to can wrap.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

/// The first integer above [`MAX_COUNT`] in `value`, as a JSON pointer
/// and the number.
pub fn count_above_max(value: &Value) -> Option<(String, Value)> {
    fn go(value: &Value, at: &mut String) -> Option<(String, Value)> {
        match value {
            Value::Number(n) if n.as_u64().is_some_and(|n| n > MAX_COUNT) => {
                Some((at.clone(), value.clone()))
            }
            Value::Number(n) if n.as_f64().is_some_and(|f| f.abs() > MAX_COUNT as f64) => {
                Some((at.clone(), value.clone()))
            }
            Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
                let len = at.len();
                at.push_str(&format!("/{i}"));
                let found = go(v, at);
                at.truncate(len);
                found
            }),
            Value::Object(map) => map.iter().find_map(|(k, v)| {
                let len = at.len();
                at.push('/');
                at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                let found = go(v, at);
                at.truncate(len);
                found
            }),
            _ => None,
        }
    }
    go(value, &mut String::new())
}

/// Caps every number in `value` at [`MAX_COUNT`]: what the engine writes
/// it can read back (a skill reporting `u64::MAX` tokens saturates there).
pub fn clamp_counts(value: &mut Value) {
    match value {
        Value::Number(n) if n.as_u64().is_some_and(|n| n > MAX_COUNT) => {
            *value = Value::from(MAX_COUNT);
        }
        Value::Number(n) if n.as_f64().is_some_and(|f| f > MAX_COUNT as f64) => {
            *value = Value::from(MAX_COUNT as f64);
        }
        Value::Array(items) => items.iter_mut().for_each(clamp_counts),
        Value::Object(map) => map.values_mut().for_each(clamp_counts),
        _ => {}
    }
}

/// The JSON kind a field must have.
#[derive(Clone, Copy)]
enum Kind {
    Count,
    Number,
    Text,
    PrList,
}

fn kind_of(field: &str) -> Kind {
    match field {
        "started_at" | "rate_table_source" => Kind::Text,
        "max_dollars" | "dollars_estimate" => Kind::Number,
        "prs_touched" => Kind::PrList,
        _ => Kind::Count,
    }
}

fn check_kind(kind: Kind, value: &Value) -> Result<(), String> {
    let ok = match kind {
        Kind::Count => value.as_u64().is_some_and(|n| n <= MAX_COUNT),
        Kind::Number => value
            .as_f64()
            .is_some_and(|n| (0.0..=MAX_COUNT as f64).contains(&n)),
        Kind::Text => value.is_string(),
        Kind::PrList => value
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string)),
    };
    if ok {
        return Ok(());
    }
    let expected = match kind {
        Kind::Count => "a whole number from 0 to 9007199254740991",
        Kind::Number => "a number from 0 to 9007199254740991",
        Kind::Text => "a string",
        Kind::PrList => "an array of strings like \"#142\"",
    };
    Err(format!("expected {expected}, found {value}"))
}

impl Budget {
    /// The first write of a run: ceilings, start time and rate source.
    pub fn start(started_at: &str, ceilings: Ceilings, rate_table_source: &str) -> Self {
        Self {
            started_at: started_at.to_owned(),
            max_iterations: ceilings.max_iterations,
            max_prs: ceilings.max_prs,
            max_minutes: ceilings.max_minutes,
            max_dollars: ceilings.max_dollars,
            iterations_used: 0,
            prs_touched: PrSet::new(),
            comments_pushed: 0,
            merges_attempted: 0,
            minutes_elapsed: 0,
            tokens_in: 0,
            tokens_out: 0,
            agents_dispatched: 0,
            dollars_estimate: 0.0,
            rate_table_source: rate_table_source.to_owned(),
            qmd_failures_consecutive: 0,
            tokens_by_model: BTreeMap::new(),
            seconds_elapsed: Some(0),
            stopped: None,
            last_tick_ended_at: None,
            deferred: Vec::new(),
            ceiling_flags: None,
            extra: Map::new(),
        }
    }

    pub fn ceilings(&self) -> Ceilings {
        Ceilings {
            max_iterations: self.max_iterations,
            max_prs: self.max_prs,
            max_minutes: self.max_minutes,
            max_dollars: self.max_dollars,
        }
    }

    /// Parses and validates budget JSON read from `path`.
    pub fn from_slice(path: &Path, bytes: &[u8]) -> Result<Self, BudgetError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| BudgetError::NotJson {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        let Value::Object(map) = &value else {
            return Err(BudgetError::NotJson {
                path: path.to_path_buf(),
                detail: format!("found {}", type_name(&value)),
            });
        };
        for field in REQUIRED_FIELDS {
            let Some(v) = map.get(field) else {
                return Err(BudgetError::MissingField {
                    path: path.to_path_buf(),
                    field,
                });
            };
            check_kind(kind_of(field), v).map_err(|detail| BudgetError::InvalidField {
                path: path.to_path_buf(),
                field: field.to_owned(),
                detail,
            })?;
        }
        // The engine's own fields only: other writers' extras are kept
        // as they are, never added to.
        let ours: Map<String, Value> = map
            .iter()
            .filter(|(k, _)| {
                REQUIRED_FIELDS.contains(&k.as_str())
                    || matches!(
                        k.as_str(),
                        "qmd_failures_consecutive"
                            | "tokens_by_model"
                            | "seconds_elapsed"
                            | "stopped"
                            | "ceiling_flags"
                    )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some((pointer, n)) = count_above_max(&Value::Object(ours)) {
            return Err(BudgetError::InvalidField {
                path: path.to_path_buf(),
                field: pointer.trim_start_matches('/').to_owned(),
                detail: format!("{n} is above the largest count the engine accepts ({MAX_COUNT})"),
            });
        }
        if let Some(v) = map.get("seconds_elapsed").filter(|v| !v.is_null()) {
            check_kind(Kind::Count, v).map_err(|detail| BudgetError::InvalidField {
                path: path.to_path_buf(),
                field: "seconds_elapsed".into(),
                detail,
            })?;
        }
        if let Some(Value::Object(models)) = map.get("tokens_by_model") {
            for (model, tokens) in models {
                let Value::Object(tokens) = tokens else {
                    continue;
                };
                for (name, v) in tokens {
                    check_kind(Kind::Count, v).map_err(|detail| BudgetError::InvalidField {
                        path: path.to_path_buf(),
                        field: format!("tokens_by_model/{model}/{name}"),
                        detail,
                    })?;
                }
            }
        }
        if let Some(v) = map.get("qmd_failures_consecutive") {
            check_kind(Kind::Count, v).map_err(|detail| BudgetError::InvalidField {
                path: path.to_path_buf(),
                field: "qmd_failures_consecutive".into(),
                detail,
            })?;
        }
        serde_json::from_value(value).map_err(|e| BudgetError::InvalidField {
            path: path.to_path_buf(),
            field: "(engine extras)".into(),
            detail: e.to_string(),
        })
    }

    /// Loads `path`; `Ok(None)` if there is no file.
    pub fn load(path: &Path) -> Result<Option<Self>, BudgetError> {
        match files::read_bytes(path)? {
            None => Ok(None),
            Some(bytes) => Self::from_slice(path, &bytes).map(Some),
        }
    }

    /// Pretty JSON with every field, newline-terminated.
    pub fn to_json(&self) -> String {
        let mut value = serde_json::to_value(self).expect("a budget always serialises");
        if let Value::Object(map) = &mut value {
            for (k, v) in map.iter_mut() {
                if !self.extra.contains_key(k) {
                    clamp_counts(v);
                }
            }
        }
        let mut text = serde_json::to_string_pretty(&value).expect("a budget always serialises");
        text.push('\n');
        text
    }

    /// Writes atomically and durably.
    pub fn save(&self, path: &Path) -> Result<(), FileError> {
        files::write_atomic(path, self.to_json().as_bytes())
    }

    /// Exact elapsed seconds (derived from minutes for files without them).
    pub fn elapsed_seconds(&self) -> u64 {
        self.seconds_elapsed
            .unwrap_or(self.minutes_elapsed.saturating_mul(60))
    }

    /// Sets elapsed time; `minutes_elapsed` is whole minutes, rounded down.
    pub fn set_elapsed_seconds(&mut self, seconds: u64) {
        self.seconds_elapsed = Some(seconds);
        self.minutes_elapsed = seconds / 60;
    }

    /// Whether the per-model totals account for every token, so dollars
    /// can be recomputed from them alone.
    pub fn per_model_totals_complete(&self) -> bool {
        let (tin, tout) = self
            .tokens_by_model
            .values()
            .fold((0u64, 0u64), |(i, o), t| {
                (
                    i.saturating_add(t.tokens_in),
                    o.saturating_add(t.tokens_out),
                )
            });
        (tin, tout) == (self.tokens_in, self.tokens_out)
    }

    /// Adds one model's usage, with no cache parts, to the per-model and
    /// overall totals.
    pub fn add_usage(&mut self, model: &str, tokens_in: u64, tokens_out: u64) {
        self.add_model_tokens(
            model,
            &ModelTokens {
                tokens_in,
                tokens_out,
                ..ModelTokens::default()
            },
        );
    }

    /// Adds one model's usage, cache parts included, to the per-model and
    /// overall totals (`tokens_in` already counts the cache parts).
    pub fn add_model_tokens(&mut self, model: &str, tokens: &ModelTokens) {
        self.tokens_by_model
            .entry(model.to_owned())
            .or_default()
            .add(tokens);
        self.tokens_in = self.tokens_in.saturating_add(tokens.tokens_in);
        self.tokens_out = self.tokens_out.saturating_add(tokens.tokens_out);
    }

    pub fn ceiling(&self, dim: Dimension) -> f64 {
        match dim {
            Dimension::Iterations => self.max_iterations as f64,
            Dimension::Prs => self.max_prs as f64,
            Dimension::Minutes => self.max_minutes as f64,
            Dimension::Dollars => self.max_dollars,
        }
    }

    /// Sets one ceiling (a `raise` answer, or an applied flag).
    pub fn set_ceiling(&mut self, dim: Dimension, value: f64) {
        match dim {
            Dimension::Iterations => self.max_iterations = value as u64,
            Dimension::Prs => self.max_prs = value as u64,
            Dimension::Minutes => self.max_minutes = value as u64,
            Dimension::Dollars => self.max_dollars = value,
        }
    }

    /// Applies ceilings given as flags on a tick after the first.
    ///
    /// A flag with the same value as on the command line last seen is that
    /// command line repeated (`/loop` re-invokes the same prompt) and
    /// changes nothing — so a ceiling raised at the budget gate stays
    /// raised. A flag with a new value is a request:
    /// A lower value is applied (a tighter budget is always safe). A higher
    /// value — including `--max-dollars 0`, which disables the cost stop —
    /// is applied only when `resuming` (an explicit user act) and is
    /// otherwise refused, so a stale command line never widens a run
    /// silently. Every change and refusal is returned for a one-line note.
    pub fn apply_flags(&mut self, flags: &CeilingFlags, resuming: bool) -> Vec<CeilingChange> {
        let as_list = |f: &CeilingFlags| {
            [
                (Dimension::Iterations, f.max_iterations.map(|v| v as f64)),
                (Dimension::Prs, f.max_prs.map(|v| v as f64)),
                (Dimension::Minutes, f.max_minutes.map(|v| v as f64)),
                (Dimension::Dollars, f.max_dollars),
            ]
        };
        let mut seen = self.ceiling_flags.unwrap_or_default();
        let previously = as_list(&seen);
        let mut changes = Vec::new();
        for ((dim, want), (_, before)) in as_list(flags).into_iter().zip(previously) {
            let Some(want) = want else { continue };
            if before == Some(want) {
                continue;
            }
            let have = self.ceiling(dim);
            // For dollars, 0 means "no ceiling", the widest of all.
            let wider = if dim == Dimension::Dollars {
                have > 0.0 && (want == 0.0 || want > have)
            } else {
                want > have
            };
            let narrower = if dim == Dimension::Dollars {
                want > 0.0 && (have == 0.0 || want < have)
            } else {
                want < have
            };
            if narrower {
                self.set_ceiling(dim, want);
                changes.push(CeilingChange::Narrowed {
                    field: dim.field(),
                    from: have,
                    to: want,
                });
            } else if wider && resuming {
                self.set_ceiling(dim, want);
                changes.push(CeilingChange::Widened {
                    field: dim.field(),
                    from: have,
                    to: want,
                });
            } else if wider {
                changes.push(CeilingChange::KeptRecorded {
                    field: dim.field(),
                    recorded: have,
                    requested: want,
                });
                // A refused flag is not "seen": passing it again with
                // --resume is still a request.
                continue;
            }
            match dim {
                Dimension::Iterations => seen.max_iterations = Some(want as u64),
                Dimension::Prs => seen.max_prs = Some(want as u64),
                Dimension::Minutes => seen.max_minutes = Some(want as u64),
                Dimension::Dollars => seen.max_dollars = Some(want),
            }
        }
        self.ceiling_flags = Some(seen);
        changes
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Rounds dollars to micro-dollars so stored values do not carry float noise.
pub fn round_dollars(d: f64) -> f64 {
    (d * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests;
