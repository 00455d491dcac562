//! Unit tests of `rates.rs`.

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
                    ..ModelTokens::default()
                },
            )
        })
        .collect()
}

fn md(text: &str) -> ClaudeMd {
    ClaudeMd::parse(Path::new("CLAUDE.md"), text)
}

fn row_of(t: &RateTable, model: &str) -> Option<String> {
    t.resolve(model).row().map(str::to_owned)
}

#[test]
fn built_in_when_claude_md_has_no_rates() {
    let t = RateTable::from_claude_md(&md("# Project\n")).unwrap();
    assert_eq!(t.source.label(), "built-in default");
    let cost = t.cost(&usage(&[("claude-opus-4-7", 1_000_000, 100_000)]));
    assert_eq!(cost.dollars, 22.5);
    assert_eq!(cost.rate_table_source(), "built-in default");
}

#[test]
fn the_contract_rows_are_kept_exactly() {
    let t = RateTable::built_in();
    assert_eq!(t.rate("claude-opus-4-7"), Some(Rate::new(15.0, 75.0)));
    assert_eq!(t.rate("claude-sonnet-4-7"), Some(Rate::new(3.0, 15.0)));
    assert_eq!(t.rate("claude-haiku-4-7"), Some(Rate::new(0.25, 1.25)));
}

#[test]
fn nested_heading_layout_is_sourced() {
    let t = RateTable::from_claude_md(&md(
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input ($/Mtok) | Output ($/Mtok) |\n|---|---|---|\n| claude-opus-4-7 | 10.00 | 50.00 |\n",
        ))
        .unwrap();
    assert_eq!(t.source.label(), "CLAUDE.md SDD config");
    assert_eq!(t.rate("claude-opus-4-7"), Some(Rate::new(10.0, 50.0)));
    assert_eq!(
        t.rate("claude-sonnet-4-7"),
        None,
        "the declared table is exhaustive"
    );
}

#[test]
fn sibling_heading_layout_is_sourced() {
    let t = RateTable::from_claude_md(&md(
            "### SDD Configuration\n\n### Loop Cost Rates\n\n| Model | Input | Output |\n| --- | --- | --- |\n| my-model | $2 | $8 |\n",
        ))
        .unwrap();
    assert_eq!(t.source, RateSource::ClaudeMd);
    let cost = t.cost(&usage(&[("my-model", 500_000, 250_000)]));
    assert_eq!(cost.dollars, 3.0);
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
    let err = RateTable::from_claude_md(&md(
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input | Output |\n|---|---|---|\n| m | cheap | 1 |\n",
        ))
        .unwrap_err();
    assert_eq!(err.line, 5);
    assert_eq!(
        err.to_string(),
        "CLAUDE.md:5: input rate for m is not a non-negative number: `cheap`"
    );
}

#[test]
fn dated_ids_resolve_to_the_longest_prefix_row() {
    let t = RateTable::built_in();
    for (model, row) in [
        ("claude-sonnet-4-7-20260115", "claude-sonnet-4-7"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
        ("claude-opus-4-1@20250805", "claude-opus-4-1"),
        ("gpt-5-codex-2025-09-15", "gpt-5-codex"),
        ("gpt-5.1-codex-max", "gpt-5.1-codex"),
    ] {
        let r = t.resolve(model);
        assert!(matches!(r, Resolution::Family { .. }), "{model}: {r:?}");
        assert_eq!(r.row(), Some(row), "{model}");
    }
    let exact = t.resolve("Claude-Opus-4-7");
    assert!(
        matches!(exact, Resolution::Exact { .. }),
        "case-insensitive"
    );
}

// A plain prefix test would price `claude-sonnet-45` as
// `claude-sonnet-4`, and `gpt-5.1` as `gpt-5`.
#[test]
fn a_prefix_counts_only_at_a_boundary() {
    let t = RateTable::built_in();
    assert_eq!(row_of(&t, "claude-sonnet-45"), Some("claude-sonnet".into()));
    assert_eq!(row_of(&t, "claude-opus-4-50"), Some("claude-opus-4".into()));
    assert_eq!(row_of(&t, "gpt-5.2"), None, "`.` is not a boundary");
    assert_eq!(row_of(&t, "o3x"), None);
    assert_eq!(row_of(&t, "claude"), None);
}

#[test]
fn the_family_row_is_used_when_the_member_has_none() {
    let t = RateTable::from_claude_md(&md(
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input | Output |\n|---|---|---|\n| claude-haiku | 1 | 5 |\n| claude-sonnet-4 | 3 | 15 |\n| claude-sonnet-4-5 | 4 | 16 |\n",
        ))
        .unwrap();
    assert_eq!(row_of(&t, "claude-haiku-4-5"), Some("claude-haiku".into()));
    assert_eq!(
        row_of(&t, "claude-sonnet-4-5-20250929"),
        Some("claude-sonnet-4-5".into()),
        "the longest prefix wins, not the first row"
    );
    assert_eq!(
        row_of(&t, "claude-sonnet-4-20250514"),
        Some("claude-sonnet-4".into())
    );
}

#[test]
fn decorated_ids_and_aliases_resolve() {
    let t = RateTable::built_in();
    assert_eq!(
        row_of(&t, "claude-opus-5[1m]"),
        Some("claude-opus-5".into())
    );
    assert_eq!(
        row_of(&t, " claude-sonnet-4-5-20250929[1m] "),
        Some("claude-sonnet-4-5".into())
    );
    assert_eq!(row_of(&t, "opus"), Some("claude-opus".into()));
    assert_eq!(row_of(&t, "sonnet[1m]"), Some("claude-sonnet".into()));
    assert_eq!(row_of(&t, "haiku"), Some("claude-haiku".into()));
    assert_eq!(row_of(&t, "[1m]"), None);
}

#[test]
fn unknown_models_cost_the_highest_rates_and_are_named() {
    let t = RateTable::built_in();
    let cost = t.cost(&usage(&[
        ("claude-haiku-4-7", 4_000_000, 0),
        ("gpt-9", 1_000_000, 1_000_000),
    ]));
    // haiku 4 × 0.25 = 1; gpt-9 at the highest rates: 15 + 75.
    assert_eq!(cost.dollars, 91.0);
    assert_eq!(cost.unknown_models.len(), 1);
    let unknown = &cost.unknown_models[0];
    assert_eq!(unknown.as_str(), "gpt-9");
    assert_eq!((unknown.rate.input, unknown.rate.output), (15.0, 75.0));
    assert_eq!(
        unknown_model_warning(unknown),
        "Unknown model in cost accounting: gpt-9 — priced at the rate table's highest rates ($15.00 input, $75.00 output per Mtok) so spend is over- rather than under-counted. Add a row to ### Loop Cost Rates in CLAUDE.md to fix."
    );
    assert_eq!(
        cost.rate_table_source(),
        "built-in default (unknown models priced at the highest rates)"
    );
    assert!(
        cost.rate_table_source()
            .starts_with(RateSource::BuiltIn.label())
    );
}

#[test]
fn highest_rates_come_from_the_declared_table() {
    let t = RateTable::from_claude_md(&md(
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input | Output | Cache write |\n|---|---|---|---|\n| a | 2 | 30 | 2.5 |\n| b | 4 | 8 | |\n",
        ))
        .unwrap();
    let h = t.highest();
    assert_eq!((h.input, h.output), (4.0, 30.0));
    assert_eq!(h.cache_read_rate(), 4.0, "no discount for the unknown");
    assert_eq!(h.cache_write_rate(), 4.0, "never below the input rate");
    let cost = t.cost(&usage(&[("mystery", 1_000_000, 0)]));
    assert_eq!(cost.dollars, 4.0);
    assert_eq!(
        cost.rate_table_source(),
        "CLAUDE.md SDD config (unknown models priced at the highest rates)"
    );
}

#[test]
fn family_notes_name_the_row_used() {
    let t = RateTable::built_in();
    let cost = t.cost(&usage(&[
        ("claude-sonnet-4-5-20250929", 1, 1),
        ("claude-opus-4-7", 1, 1),
    ]));
    assert_eq!(
        cost.family_notes(),
        vec![
            "Cost rates: claude-sonnet-4-5-20250929 priced at row claude-sonnet-4-5 ($3.00 input, $15.00 output per Mtok)"
        ]
    );
    assert_eq!(cost.rate_table_source(), "built-in default");
    assert!(cost.unknown_models.is_empty());
}

#[test]
fn cache_columns_in_the_nested_layout() {
    let t = RateTable::from_claude_md(&md(
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input ($/Mtok) | Output ($/Mtok) | Cache read ($/Mtok) | Cache write (5m) | Cache write 1h |\n|---|---|---|---|---|---|\n| m | 4.00 | 20.00 | 0.40 | 5.00 | 8.00 |\n",
        ))
        .unwrap();
    assert_eq!(
        t.rate("m"),
        Some(Rate {
            input: 4.0,
            output: 20.0,
            cache_read: Some(0.4),
            cache_write: Some(5.0),
            cache_write_1h: Some(8.0),
        })
    );
}

#[test]
fn cache_columns_in_the_sibling_layout_in_any_order_and_spelling() {
    let t = RateTable::from_claude_md(&md(
            "### SDD Configuration\n\n### Loop Cost Rates\n| cache_write_1h | Model | cache_read | Output | Input | CACHE WRITE |\n| --- | --- | --- | --- | --- | --- |\n| 6 | m | 0.3 | 15 | 3 | 3.75 |\n| | n | - | 10 | 2 | |\n",
        ))
        .unwrap();
    assert_eq!(
        t.rate("m"),
        Some(Rate {
            input: 3.0,
            output: 15.0,
            cache_read: Some(0.3),
            cache_write: Some(3.75),
            cache_write_1h: Some(6.0),
        })
    );
    assert_eq!(
        t.rate("n"),
        Some(Rate::new(2.0, 10.0)),
        "blank = undeclared"
    );
}

#[test]
fn header_spellings_are_understood() {
    for (header, column) in [
        ("Cache read", Some(Column::CacheRead)),
        ("cache_read", Some(Column::CacheRead)),
        ("Cache hits ($/Mtok)", Some(Column::CacheRead)),
        ("Cached input", Some(Column::CacheRead)),
        ("Cache write (5m)", Some(Column::CacheWrite)),
        ("Cache write", Some(Column::CacheWrite)),
        ("cache creation", Some(Column::CacheWrite)),
        ("Cache write 1h ($/Mtok)", Some(Column::CacheWrite1h)),
        ("Cache write (1 hour)", Some(Column::CacheWrite1h)),
        ("Input ($/Mtok)", Some(Column::Input)),
        ("Output ($/Mtok)", Some(Column::Output)),
        ("Model", Some(Column::Model)),
        ("Notes", None),
    ] {
        assert_eq!(Column::of_header(header), column, "{header}");
    }
}

#[test]
fn a_bad_cache_cell_names_its_line_and_column() {
    let err = RateTable::from_claude_md(&md(
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input | Output | Cache read |\n|---|---|---|---|\n| m | 1 | 2 | free |\n",
        ))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "CLAUDE.md:5: cache read rate for m is not a non-negative number: `free`"
    );
}

#[test]
fn without_cache_columns_cache_tokens_cost_the_input_rate() {
    let t = RateTable::from_claude_md(&md(
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input | Output |\n|---|---|---|\n| m | 2 | 10 |\n",
        ))
        .unwrap();
    let tokens = ModelTokens {
        tokens_in: 1_000_000,
        tokens_out: 0,
        cache_read_tokens: 600_000,
        cache_write_tokens: 300_000,
        cache_write_1h_tokens: 100_000,
    };
    let cost = t.cost(&BTreeMap::from([("m".to_owned(), tokens)]));
    assert_eq!(
        cost.dollars, 2.0,
        "tokens_in × input, as without cache data"
    );
}

#[test]
fn a_cache_heavy_usage_is_priced_exactly() {
    let t = RateTable::built_in();
    // claude-sonnet-4-5: input 3, output 15, read 0.30, write 3.75,
    // write 1h 6.00 (USD per Mtok).
    let tokens = ModelTokens {
        tokens_in: 10_000_000,
        tokens_out: 200_000,
        cache_read_tokens: 9_000_000,
        cache_write_tokens: 900_000,
        cache_write_1h_tokens: 400_000,
    };
    // uncached   10,000,000 − 9,000,000 − 900,000 = 100,000 × 3.00 = 0.30
    // reads       9,000,000 × 0.30                               = 2.70
    // 5m writes     500,000 × 3.75                               = 1.875
    // 1h writes     400,000 × 6.00                               = 2.40
    // output        200,000 × 15.00                              = 3.00
    //                                                     total = 10.275
    let cost = t.cost(&BTreeMap::from([(
        "claude-sonnet-4-5-20250929".to_owned(),
        tokens,
    )]));
    assert_eq!(cost.dollars, 10.275);
    // The same tokens with no cache parts: 10 × 3 + 0.2 × 15 = 33.
    let plain = ModelTokens {
        tokens_in: 10_000_000,
        tokens_out: 200_000,
        ..ModelTokens::default()
    };
    let cost = t.cost(&BTreeMap::from([("claude-sonnet-4-5".to_owned(), plain)]));
    assert_eq!(cost.dollars, 33.0);
}

#[test]
fn over_reported_cache_parts_never_go_negative() {
    let rate = Rate::cached(1.0, 1.0, 0.5, 2.0, 4.0);
    let tokens = ModelTokens {
        tokens_in: 10,
        tokens_out: 0,
        cache_read_tokens: 1_000_000,
        cache_write_tokens: 1_000_000,
        cache_write_1h_tokens: 3_000_000,
    };
    // 1 M reads × 0.5 + 1 M 1-hour writes (capped at the writes) × 4.
    assert_eq!(rate.dollars(&tokens), 4.5);
}

// The contract priced any unlisted model at $0, so a budget never
// tripped on real model ids. Every kind of token, on every path
// (exact, family, decorated, alias, unknown; built-in and declared
// tables with and without cache columns), must cost something.
#[test]
fn no_path_prices_tokens_at_zero_unless_a_row_says_so() {
    let declared = RateTable::from_claude_md(&md(
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input | Output |\n|---|---|---|\n| claude-sonnet | 3 | 15 |\n| claude-opus-4-7 | 15 | 75 |\n",
        ))
        .unwrap();
    let with_cache = RateTable::from_claude_md(&md(
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input | Output | Cache read | Cache write | Cache write 1h |\n|---|---|---|---|---|---|\n| claude-sonnet | 3 | 15 | 0.3 | 3.75 | 6 |\n",
        ))
        .unwrap();
    let kinds = [
        ModelTokens {
            tokens_in: 1,
            ..ModelTokens::default()
        },
        ModelTokens {
            tokens_out: 1,
            ..ModelTokens::default()
        },
        ModelTokens {
            tokens_in: 1,
            cache_read_tokens: 1,
            ..ModelTokens::default()
        },
        ModelTokens {
            tokens_in: 1,
            cache_write_tokens: 1,
            ..ModelTokens::default()
        },
        ModelTokens {
            tokens_in: 1,
            cache_write_tokens: 1,
            cache_write_1h_tokens: 1,
            ..ModelTokens::default()
        },
    ];
    let models = [
        "claude-opus-4-7",
        "claude-sonnet-4-5-20250929",
        "claude-sonnet-4-7[1m]",
        "sonnet",
        "gpt-5.1-codex-max",
        "o4-mini-2025-04-16",
        "gpt-9",
        "",
    ];
    for (name, table) in [
        ("built-in", RateTable::built_in()),
        ("declared", declared),
        ("declared with cache", with_cache),
    ] {
        for model in models {
            for tokens in &kinds {
                let rate = table.resolve(model).rate();
                assert!(
                    rate.dollars(tokens) > 0.0,
                    "{name}: {model} {tokens:?} priced at $0 by {rate:?}"
                );
            }
        }
    }
    let free = RateTable::from_claude_md(&md(
            "### SDD Configuration\n#### Loop Cost Rates\n| Model | Input | Output | Cache read |\n|---|---|---|---|\n| local | 0 | 0 | 0 |\n",
        ))
        .unwrap();
    assert_eq!(free.cost(&usage(&[("local", 5, 5)])).dollars, 0.0);
}

#[test]
fn family_rows_are_never_cheaper_than_a_member() {
    let t = RateTable::built_in();
    for family in ["claude-opus", "claude-sonnet", "claude-haiku"] {
        let f = t.rate(family).unwrap();
        let members = BUILT_IN
            .iter()
            .filter(|(id, _)| id.starts_with(&format!("{family}-")));
        for (id, m) in members {
            for (what, fam, mem) in [
                ("input", f.input, m.input),
                ("output", f.output, m.output),
                ("cache read", f.cache_read_rate(), m.cache_read_rate()),
                ("cache write", f.cache_write_rate(), m.cache_write_rate()),
                (
                    "cache write 1h",
                    f.cache_write_1h_rate(),
                    m.cache_write_1h_rate(),
                ),
            ] {
                assert!(fam >= mem, "{family} {what} {fam} < {id} {mem}");
            }
        }
    }
}

#[test]
fn built_in_ids_are_unique_and_lowercase() {
    let mut ids: Vec<&str> = BUILT_IN.iter().map(|(id, _)| *id).collect();
    assert!(ids.iter().all(|id| *id == id.to_ascii_lowercase()));
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), BUILT_IN.len());
}

#[test]
fn gemini_models_are_priced_with_cached_and_thinking_tokens_as_google_bills() {
    let t = RateTable::built_in();
    for (model, row) in [
        ("gemini-2.5-flash", "gemini-2.5-flash"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        ("gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"),
        ("gemini-2.5-pro", "gemini-2.5-pro"),
        ("gemini-3-pro-preview", "gemini-3-pro"),
        ("gemini-2.0-flash-001", "gemini-2.0-flash"),
    ] {
        assert_eq!(row_of(&t, model).as_deref(), Some(row), "{model}");
    }
    // gemini-2.5-flash: input 0.30, cached 0.03, output 2.50 per Mtok. The
    // adapter counts the prompt (cached included) as tokens_in and the
    // candidates plus the thoughts as tokens_out.
    let tokens = ModelTokens {
        tokens_in: 2_200_000,
        tokens_out: 100_000,
        cache_read_tokens: 400_000,
        ..ModelTokens::default()
    };
    // uncached 1,800,000 × 0.30 = 0.54; cached 400,000 × 0.03 = 0.012;
    // output (70,000 candidates + 30,000 thoughts) × 2.50 = 0.25.
    let cost = t.cost(&BTreeMap::from([("gemini-2.5-flash".to_owned(), tokens)]));
    assert_eq!(cost.dollars, 0.802);
    assert!(cost.unknown_models.is_empty());
    // An unknown Gemini id is never free.
    let cost = t.cost(&usage(&[("gemini-9-ultra", 1_000_000, 0)]));
    assert!(cost.dollars >= 2.0, "{}", cost.dollars);
    assert_eq!(cost.unknown_models.len(), 1);
}
