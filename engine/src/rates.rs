//! Per-model cost rates and the dollar estimate (ADR-0028, "Budget controls"
//! and "Rate-table sourcing"; stop condition #12).
//!
//! Rates are USD per million tokens, sourced in priority order from the
//! `Loop Cost Rates` table under `CLAUDE.md`'s `### SDD Configuration`
//! (source `CLAUDE.md SDD config`), else from the built-in table (source
//! `built-in default`), which is a point-in-time snapshot and announced once
//! per run when the cost ceiling is on. The estimate is
//! `Σ over models (tokens_in × rate_in + tokens_out × rate_out) / 1e6` with
//! no caching discount — conservative by construction. A model with no rate
//! contributes $0 and is named in a one-line warning.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::budget::{ModelTokens, round_dollars};
use crate::claude_md::ClaudeMd;

/// Where the rates came from; its label is stored in `rate_table_source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateSource {
    ClaudeMd,
    BuiltIn,
}

impl RateSource {
    pub fn label(self) -> &'static str {
        match self {
            RateSource::ClaudeMd => "CLAUDE.md SDD config",
            RateSource::BuiltIn => "built-in default",
        }
    }
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub input: f64,
    pub output: f64,
}

/// The built-in table (representative rates, Q2 2026).
pub const BUILT_IN: [(&str, Rate); 3] = [
    (
        "claude-opus-4-7",
        Rate {
            input: 15.0,
            output: 75.0,
        },
    ),
    (
        "claude-sonnet-4-7",
        Rate {
            input: 3.0,
            output: 15.0,
        },
    ),
    (
        "claude-haiku-4-7",
        Rate {
            input: 0.25,
            output: 1.25,
        },
    ),
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
        "each row is `| model | input USD per Mtok | output USD per Mtok |`, e.g. `| claude-opus-4-7 | 15.00 | 75.00 |`"
    }
}

/// The rates in force for a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RateTable {
    pub source: RateSource,
    rates: Vec<(String, Rate)>,
}

/// A dollar estimate and the models it could not price.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    pub dollars: f64,
    pub unknown_models: Vec<String>,
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
    /// line: silently pricing a model at $0 would under-count spend.
    pub fn from_claude_md(md: &ClaudeMd) -> Result<Self, RateError> {
        let Some(table) = md
            .sdd_section("Loop Cost Rates")
            .and_then(|section| section.table())
        else {
            return Ok(Self::built_in());
        };
        let model_col = table.column("model").unwrap_or(0);
        let in_col = table.column("input").unwrap_or(1);
        let out_col = table.column("output").unwrap_or(2);
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
            let number = |col: usize, what: &str| {
                let cell = row.cells.get(col).map(String::as_str).unwrap_or("");
                parse_rate(cell).ok_or_else(|| {
                    err(format!(
                        "{what} rate for {model} is not a non-negative number: `{cell}`"
                    ))
                })
            };
            let input = number(in_col, "input")?;
            let output = number(out_col, "output")?;
            rates.push((model.clone(), Rate { input, output }));
        }
        if rates.is_empty() {
            return Ok(Self::built_in());
        }
        Ok(Self {
            source: RateSource::ClaudeMd,
            rates,
        })
    }

    /// The rate of `model` (exact id, case-insensitive).
    pub fn rate(&self, model: &str) -> Option<Rate> {
        let model = model.trim();
        self.rates
            .iter()
            .find(|(m, _)| m.eq_ignore_ascii_case(model))
            .map(|(_, r)| *r)
    }

    /// Dollars for cumulative per-model usage.
    pub fn cost(&self, usage: &BTreeMap<String, ModelTokens>) -> Cost {
        let mut dollars = 0.0;
        let mut unknown_models = Vec::new();
        for (model, tokens) in usage {
            match self.rate(model) {
                Some(rate) => {
                    dollars += (tokens.tokens_in as f64 * rate.input
                        + tokens.tokens_out as f64 * rate.output)
                        / 1e6;
                }
                None => unknown_models.push(model.clone()),
            }
        }
        Cost {
            dollars: round_dollars(dollars),
            unknown_models,
        }
    }
}

/// The contract's warning for a model with no rate.
pub fn unknown_model_warning(model: &str) -> String {
    format!(
        "Unknown model in cost accounting: {model} — contributing $0.00 to dollars_estimate. Add a row to ### Loop Cost Rates in CLAUDE.md to fix."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn usage(rows: &[(&str, u64, u64)]) -> BTreeMap<String, ModelTokens> {
        rows.iter()
            .map(|(m, i, o)| {
                (
                    (*m).to_owned(),
                    ModelTokens {
                        tokens_in: *i,
                        tokens_out: *o,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn built_in_when_claude_md_has_no_rates() {
        let md = ClaudeMd::parse(Path::new("CLAUDE.md"), "# Project\n");
        let t = RateTable::from_claude_md(&md).unwrap();
        assert_eq!(t.source.label(), "built-in default");
        let cost = t.cost(&usage(&[("claude-opus-4-7", 1_000_000, 100_000)]));
        assert_eq!(cost.dollars, 22.5);
    }

    #[test]
    fn nested_heading_layout_is_sourced() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input ($/Mtok) | Output ($/Mtok) |\n|---|---|---|\n| claude-opus-4-7 | 10.00 | 50.00 |\n",
        );
        let t = RateTable::from_claude_md(&md).unwrap();
        assert_eq!(t.source.label(), "CLAUDE.md SDD config");
        assert_eq!(
            t.rate("claude-opus-4-7"),
            Some(Rate {
                input: 10.0,
                output: 50.0
            })
        );
        assert_eq!(
            t.rate("claude-sonnet-4-7"),
            None,
            "the declared table is exhaustive"
        );
    }

    #[test]
    fn sibling_heading_layout_is_sourced() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "### SDD Configuration\n\n### Loop Cost Rates\n\n| Model | Input | Output |\n| --- | --- | --- |\n| my-model | $2 | $8 |\n",
        );
        let t = RateTable::from_claude_md(&md).unwrap();
        assert_eq!(t.source, RateSource::ClaudeMd);
        let cost = t.cost(&usage(&[("my-model", 500_000, 250_000)]));
        assert_eq!(cost.dollars, 3.0);
    }

    #[test]
    fn unknown_model_costs_nothing_and_is_named() {
        let t = RateTable::built_in();
        let cost = t.cost(&usage(&[
            ("claude-haiku-4-7", 4_000_000, 0),
            ("gpt-9", 1_000_000, 1_000_000),
        ]));
        assert_eq!(cost.dollars, 1.0);
        assert_eq!(cost.unknown_models, vec!["gpt-9".to_owned()]);
        assert_eq!(
            unknown_model_warning("gpt-9"),
            "Unknown model in cost accounting: gpt-9 — contributing $0.00 to dollars_estimate. Add a row to ### Loop Cost Rates in CLAUDE.md to fix."
        );
    }

    #[test]
    fn dollars_sum_over_models() {
        let t = RateTable::built_in();
        let cost = t.cost(&usage(&[
            ("claude-opus-4-7", 100_000, 10_000),
            ("claude-sonnet-4-7", 200_000, 20_000),
        ]));
        // 1.5 + 0.75 + 0.6 + 0.3
        assert_eq!(cost.dollars, 3.15);
    }

    #[test]
    fn bad_rate_row_names_its_line() {
        let md = ClaudeMd::parse(
            Path::new("CLAUDE.md"),
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input | Output |\n|---|---|---|\n| m | cheap | 1 |\n",
        );
        let err = RateTable::from_claude_md(&md).unwrap_err();
        assert_eq!(err.line, 5);
        assert_eq!(
            err.to_string(),
            "CLAUDE.md:5: input rate for m is not a non-negative number: `cheap`"
        );
    }
}
