//! Family `property tests`: the proptest suites of every parser an
//! outsider can feed (`engine/tests/properties.rs`,
//! `harness/tests/properties.rs`).
//!
//! They are test targets, not library code, so this program cannot call
//! them. With `--with-properties` it runs them (`cargo nextest run
//! --test properties` for both crates, a debug build) and reports nextest's
//! own pass and fail counts; without it the row says they were not run
//! here — CI runs them in its test step — and gives how many properties
//! there are and how many cases each would try, counted from the sources
//! this program was built with.

use std::process::{Command, Stdio};

use crate::{Ctx, Row};

const SUITES: [(&str, &str); 2] = [
    (
        "engine/tests/properties.rs",
        include_str!("../../tests/properties.rs"),
    ),
    (
        "harness/tests/properties.rs",
        include_str!("../../../harness/tests/properties.rs"),
    ),
];

const COMMAND: &str = "cargo nextest run -p sdd-loop -p sdd-harness --test properties";

/// `#[test]` functions inside `proptest! { … }` blocks (rustfmt layout:
/// a block ends at the first `}` line indented as its opening line).
fn properties(source: &str) -> usize {
    let mut count = 0;
    let mut block_end: Option<String> = None;
    for line in source.lines() {
        match &block_end {
            None => {
                if line.trim_start().starts_with("proptest! {") {
                    let indent = &line[..line.len() - line.trim_start().len()];
                    block_end = Some(format!("{indent}}}"));
                }
            }
            Some(end) if line == end => block_end = None,
            Some(_) => count += usize::from(line.trim() == "#[test]"),
        }
    }
    count
}

/// nextest's summary: `… N tests run: P passed, F failed, …`.
fn summary(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().rev().find(|l| l.contains("tests run:"))?;
    let number_before = |word: &str| {
        let head = &line[..line.find(word)?];
        head.split_whitespace().last()?.parse::<u64>().ok()
    };
    Some((
        number_before(" passed")?,
        number_before(" failed").unwrap_or(0),
    ))
}

pub fn run(ctx: &Ctx) -> Row {
    let cases = proptest::test_runner::Config::default().cases;
    let counts: Vec<usize> = SUITES.iter().map(|(_, src)| properties(src)).collect();
    let total: usize = counts.iter().sum();
    let listed = SUITES
        .iter()
        .zip(&counts)
        .map(|((path, _), n)| format!("{path} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let what = format!("proptest properties of every outside-fed parser ({listed})");
    if !ctx.with_properties {
        return Row {
            family: "property tests",
            what,
            trials: format!(
                "{total} properties × {cases} cases = {} cases",
                total * cases as usize
            ),
            result: format!(
                "not run by this program: CI runs them in its test step; pass --with-properties, or run `{COMMAND}`"
            ),
            violations: None,
            secs: 0.0,
        };
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = Command::new(cargo)
        .args(COMMAND.split_whitespace().skip(1))
        .current_dir(workspace)
        .stdin(Stdio::null())
        .output();
    let (result, violations) = match out {
        Err(e) => (format!("could not run `{COMMAND}`: {e}"), 1),
        Ok(out) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            match summary(&text) {
                Some((passed, failed)) => (
                    format!(
                        "`{COMMAND}`: {passed} tests passed, {failed} failed ({total} of them properties, {cases} cases each)"
                    ),
                    failed + u64::from(failed == 0 && !out.status.success()),
                ),
                None => {
                    crate::report_problems("property tests", &[text]);
                    (
                        format!("`{COMMAND}` printed no summary ({})", out.status),
                        1,
                    )
                }
            }
        }
    };
    Row {
        family: "property tests",
        what,
        trials: format!(
            "{total} properties × {cases} cases = {} cases",
            total * cases as usize
        ),
        result,
        violations: Some(violations),
        secs: 0.0,
    }
}
