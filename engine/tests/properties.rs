//! Property tests for every parser an outsider can feed the engine: a
//! history line and a history file's torn or damaged lines, `budget.json`,
//! the lock record, the CLAUDE.md rate and redaction tables, the
//! `--answers` file, the skill's result and events, and the tracker's JSON
//! — plus the redactor's promises: no planted secret survives, and
//! redacting twice is redacting once.
//!
//! Two invariants throughout: arbitrary input gives an error value, never a
//! panic; and what the engine writes, it reads back unchanged (valid values
//! are generated, serialised, parsed and compared). Also the
//! interrupted-iteration journal, the exchange's events file, Claude
//! Code transcripts (each response counted once, every other line a
//! counted skip), and the agent adapters' inputs: Claude Code's and
//! Codex's streams (each step counted once, Codex's cumulative usage read
//! as growth, the verdict failing what did not succeed, counts that
//! saturate), Codex's `config.toml`, and prompt templates (every
//! placeholder filled, a text without one kept as is). The scenario
//! harness's case files have their own properties
//! (`harness/tests/properties.rs`).
//!
//! Each property runs 256 cases by default; failures shrink to a minimal
//! input and are saved in `properties.proptest-regressions`, replayed first
//! on the next run. For a longer search:
//!
//! ```text
//! PROPTEST_CASES=10000 cargo nextest run -p sdd-loop --test properties
//! ```

use std::sync::LazyLock;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use sdd_loop::rules::redact::Redactor;

/// The default number of cases (256, or `PROPTEST_CASES`), with failures
/// saved next to this file (`properties.proptest-regressions`) and replayed
/// first on the next run.
fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

/// Characters that end a token in every built-in shape and start none.
const SEPARATORS: &[char] = &[
    ' ', '\n', '\t', '"', '\'', '=', ':', ',', ';', '(', ')', '<', '>',
];

fn separator() -> impl Strategy<Value = char> {
    proptest::sample::select(SEPARATORS)
}

/// Text around a planted secret: anything printable, any script.
fn filler() -> impl Strategy<Value = String> {
    "\\PC{0,40}"
}

/// A secret to plant, and the random part of it that must not survive.
#[derive(Debug, Clone)]
struct Planted {
    text: String,
    body: String,
}

fn planted(
    prefix: impl Strategy<Value = String> + 'static,
    body: &'static str,
) -> BoxedStrategy<Planted> {
    (prefix, body)
        .prop_map(|(prefix, body)| Planted {
            text: format!("{prefix}{body}"),
            body,
        })
        .boxed()
}

fn fixed(prefix: &'static str) -> impl Strategy<Value = String> {
    Just(prefix.to_owned())
}

fn credential() -> BoxedStrategy<Planted> {
    prop_oneof![
        planted("gh[pousr]_", "[A-Za-z0-9]{36,50}"),
        planted(fixed("github_pat_"), "[A-Za-z0-9_]{22,90}"),
        planted(fixed("sk-ant-api03-"), "[A-Za-z0-9_-]{20,100}"),
        planted(fixed("sk-"), "[A-Za-z0-9]{20,60}"),
        planted("sk-(proj|svcacct|admin)-", "[A-Za-z0-9_-]{20,80}"),
        planted("AKIA|ASIA", "[A-Z0-9]{16}"),
        planted("xox[abprs]-", "[A-Za-z0-9-]{10,60}"),
        planted(
            "(?i)authorization: ?(bearer |token |basic )?",
            // At least 8 characters: `Authorization: token` followed by
            // ` abc` is rightly read as scheme `token`, value `abc`.
            "[A-Za-z0-9._~+/=-]{8,60}"
        ),
        planted(
            "\"(?i)authorization\": \"(Bearer |token )?",
            "[A-Za-z0-9._~+/= -]{8,60}"
        )
        .prop_map(|p| Planted {
            text: format!("{}\"", p.text),
            body: p.body,
        }),
        (
            "(RSA |EC |OPENSSH |ENCRYPTED )?",
            proptest::collection::vec("[A-Za-z0-9+/]{16,64}", 1..6)
        )
            .prop_map(|(kind, lines)| {
                let body = lines.join("\n");
                Planted {
                    text: format!(
                        "-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"
                    ),
                    body,
                }
            }),
    ]
    .boxed()
}

/// `true` if some 12-character piece of `body` (or all of a shorter one)
/// is still in `out`. Pieces, not the whole: a secret cut in two and half
/// kept is still a leak.
fn survives(body: &str, out: &str) -> bool {
    let chars: Vec<char> = body.chars().collect();
    if chars.len() <= 12 {
        return out.contains(body);
    }
    chars
        .windows(12)
        .any(|w| out.contains(&w.iter().collect::<String>()))
}

/// Pieces of text that make the redactor's rules interact: headers next to
/// markers, stray `BEGIN`/`END` lines, boundaries glued to keys.
fn tricky_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        filler(),
        separator().prop_map(String::from),
        credential().prop_map(|p| p.text),
        proptest::sample::select(vec![
            "Authorization: ",
            "authorization:",
            "Bearer ",
            "token ",
            "\"authorization\": \"",
            "\\\"Authorization\\\": \\\"",
            "[REDACTED:github-token]",
            "[REDACTED]",
            "-----BEGIN RSA PRIVATE KEY-----",
            "-----END RSA PRIVATE KEY-----",
            "sk-",
            "AKIAIOSFODNN7EXAMPLE",
            "env-secret-value",
        ])
        .prop_map(str::to_owned),
    ]
}

/// Any JSON value, a few levels deep, strings with the odd secret in them.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "\\PC{0,20}".prop_map(Value::String),
        tricky_piece().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec(("(?i)authorization|[a-z_]{1,10}", inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// Same keys, same non-string leaves, strings anywhere strings were.
fn same_shape(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::String(_), Value::String(_)) => true,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_shape(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, x), (ky, y))| kx == ky && same_shape(x, y))
        }
        _ => a == b,
    }
}

/// Built once: compiling the rules is what a tick does once, not per line.
static DEFAULTS: LazyLock<Redactor> = LazyLock::new(Redactor::default);
static WITH_SECRETS: LazyLock<Redactor> = LazyLock::new(|| {
    Redactor::builder()
        .env([("MY_API_KEY", "env-secret-value"), ("HOME", "/home/x")])
        .secret("tracker-token", "tracker-token-value")
        .build()
});

fn redactor() -> &'static Redactor {
    &WITH_SECRETS
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn no_planted_secret_survives(
        before in filler(),
        open in separator(),
        secret in credential(),
        close in separator(),
        after in filler(),
    ) {
        let text = format!("{before}{open}{}{close}{after}", secret.text);
        let out = DEFAULTS.apply(&text);
        prop_assert!(!survives(&secret.body, &out), "{text:?} -> {out:?}");
    }

    #[test]
    fn distinctive_prefixes_are_redacted_even_glued_to_text(
        before in "[A-Za-z0-9_]{0,10}",
        secret in prop_oneof![
            planted("gh[pousr]_", "[A-Za-z0-9]{36,50}"),
            planted(fixed("github_pat_"), "[A-Za-z0-9_]{22,90}"),
            planted("AKIA|ASIA", "[A-Z0-9]{16}"),
            planted("xox[abprs]-", "[A-Za-z0-9-]{10,60}"),
        ],
        after in "[A-Za-z0-9_]{0,10}",
    ) {
        let text = format!("{before}{}{after}", secret.text);
        let out = DEFAULTS.apply(&text);
        prop_assert!(!survives(&secret.body, &out), "{text:?} -> {out:?}");
    }

    #[test]
    fn redacting_twice_is_redacting_once(
        pieces in proptest::collection::vec(tricky_piece(), 0..12),
    ) {
        let redactor = redactor();
        let once = redactor.apply(&pieces.concat());
        prop_assert_eq!(redactor.apply(&once), once);
    }

    #[test]
    fn plain_words_are_never_touched(text in "[a-z \n.]{0,200}") {
        prop_assert_eq!(redactor().apply(&text), text);
    }

    #[test]
    fn line_by_line_leaves_no_key_line(
        before in proptest::collection::vec("[a-z ]{0,20}", 0..3),
        key in proptest::collection::vec("[A-Za-z0-9+/]{16,64}", 1..6),
        after in proptest::collection::vec("[a-z ]{0,20}", 0..3),
    ) {
        let mut lines = DEFAULTS.lines();
        let text = [
            before.clone(),
            vec!["-----BEGIN PRIVATE KEY-----".to_owned()],
            key.clone(),
            vec!["-----END PRIVATE KEY-----".to_owned()],
            after.clone(),
        ]
        .concat();
        let out: Vec<String> = text.iter().map(|l| lines.line(l).into_owned()).collect();
        for k in &key {
            prop_assert!(!out.iter().any(|l| l.contains(k.as_str())), "{out:?}");
        }
        prop_assert_eq!(&out[..before.len()], &before[..]);
        prop_assert_eq!(&out[out.len() - after.len()..], &after[..]);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}", bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let redactor = redactor();
        let _ = redactor.apply(&text);
        let mut lines = redactor.lines();
        for line in String::from_utf8_lossy(&bytes).lines() {
            let _ = lines.line(line);
        }
    }

    #[test]
    fn json_redaction_keeps_the_shape(value in json_value()) {
        let mut redacted = value.clone();
        redactor().redact_json(&mut redacted);
        prop_assert!(same_shape(&value, &redacted), "{value} -> {redacted}");
    }

    #[test]
    fn exact_values_never_survive(
        before in filler(),
        vars in proptest::collection::vec(
            ("[A-Z_]{0,8}(TOKEN|KEY|SECRET|PASSWORD|token|Key)", "[A-Za-z0-9_./+-]{8,40}"),
            1..4,
        ),
        after in filler(),
    ) {
        let values: Vec<&str> = vars.iter().map(|(_, v)| v.as_str()).collect();
        // A value inside a marker is ignored by design (see `redact`).
        let in_a_marker = |value: &str| {
            vars.iter()
                .any(|(name, _)| format!("[REDACTED:secret-env:{name}]").contains(value))
        };
        prop_assume!(!values.iter().any(|v| in_a_marker(v)));
        let redactor = Redactor::builder().env(vars.clone()).build();
        let out = redactor.apply(&format!("{before} {}\n{after}", values.join(" ")));
        for value in values {
            prop_assert!(!out.contains(value), "{out:?}");
        }
    }
}

// ---------------------------------------------------------------------
// Shared strategies.

fn word() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,11}"
}

/// Any printable text, any script: what a title or a root cause may hold.
fn text() -> impl Strategy<Value = String> {
    "\\PC{0,30}"
}

fn sha() -> impl Strategy<Value = String> {
    "[0-9a-f]{7,40}"
}

fn branch() -> impl Strategy<Value = String> {
    "(feature|fix)/[0-9]{1,4}-[a-z]{1,10}"
}

fn pr_ref() -> impl Strategy<Value = String> {
    (1u64..100_000).prop_map(|n| format!("#{n}"))
}

fn timestamp() -> impl Strategy<Value = String> {
    (
        2020u32..2040,
        1u32..=12,
        1u32..=28,
        0u32..24,
        0u32..60,
        0u32..60,
    )
        .prop_map(|(y, mo, d, h, mi, s)| format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"))
}

/// Dollars in whole cents: exact through JSON and back.
fn dollars() -> impl Strategy<Value = f64> {
    (0u64..10_000_000).prop_map(|cents| cents as f64 / 100.0)
}

/// A count the engine writes: up to `MAX_COUNT` (larger ones are refused
/// on read; `hand_edited_state` below feeds those).
fn count() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..100, 0u64..=sdd_loop::state::budget::MAX_COUNT]
}

/// Fields another writer added: kept on rewrite. The `x_` prefix keeps
/// them clear of the known fields.
fn extra() -> impl Strategy<Value = serde_json::Map<String, serde_json::Value>> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    proptest::collection::btree_map("x_[a-z]{1,8}", leaf, 0..3)
        .prop_map(|m| m.into_iter().collect())
}

/// Bytes that look like what a crash or an editor leaves: fragments of
/// JSON, newlines, blanks, invalid UTF-8.
fn messy_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40),
        Just(b"\n".to_vec()),
        Just(b"{}".to_vec()),
        Just(br#"{"iteration":1,"outcome":"ok"}"#.to_vec()),
        Just(br#"{"iteration":"#.to_vec()),
        Just(b"   ".to_vec()),
        Just(vec![0xff, 0xfe]),
        json_value().prop_map(|v| v.to_string().into_bytes()),
    ];
    proptest::collection::vec(piece, 0..10).prop_map(|pieces| pieces.concat())
}

// ---------------------------------------------------------------------
// History lines and files.

mod history_lines {
    use super::*;
    use sdd_loop::state::budget::{ModelTokens, RunStop};
    use sdd_loop::state::history::{
        self, ActiveWorktree, BudgetSnapshot, FailureRecord, GateRecord, HistoryLine, Outcome,
        PrState, TrackedPr,
    };

    fn outcome() -> impl Strategy<Value = Outcome> {
        proptest::sample::select(vec![
            Outcome::Ok,
            Outcome::Halted,
            Outcome::SkippedLock,
            Outcome::Errored,
        ])
    }

    pub fn pr_state() -> impl Strategy<Value = PrState> {
        proptest::sample::select(vec![PrState::Open, PrState::Merged, PrState::Closed])
    }

    pub fn tracked_pr() -> impl Strategy<Value = TrackedPr> {
        (
            1u64..100_000,
            branch(),
            proptest::option::of(sha()),
            proptest::option::of(sha()),
            pr_state(),
            extra(),
        )
            .prop_map(
                |(number, branch, start, end, state_at_end, extra)| TrackedPr {
                    number,
                    branch,
                    head_sha_at_iteration_start: start,
                    head_sha_at_iteration_end: end,
                    state_at_end,
                    extra,
                },
            )
    }

    pub fn worktree() -> impl Strategy<Value = ActiveWorktree> {
        (text(), branch(), sha(), extra()).prop_map(|(path, branch, head_sha, extra)| {
            ActiveWorktree {
                path,
                branch,
                head_sha,
                extra,
            }
        })
    }

    pub fn gate() -> impl Strategy<Value = GateRecord> {
        (word(), text(), text(), timestamp(), extra()).prop_map(
            |(name, question, answer, at, extra)| GateRecord {
                name,
                question,
                answer,
                at,
                answered_by: None,
                extra,
            },
        )
    }

    fn failure() -> impl Strategy<Value = FailureRecord> {
        (pr_ref(), text()).prop_map(|(target, root_cause)| FailureRecord { target, root_cause })
    }

    fn snapshot() -> impl Strategy<Value = BudgetSnapshot> {
        (
            (
                proptest::option::of(count()),
                proptest::option::of(count()),
                proptest::option::of(count()),
                proptest::option::of(count()),
                proptest::option::of(dollars()),
                proptest::option::of(proptest::collection::vec(pr_ref(), 0..4)),
            ),
            (
                proptest::option::of(proptest::collection::btree_map(
                    word(),
                    (count(), count(), count()).prop_map(
                        |(tokens_in, tokens_out, cache_read_tokens)| ModelTokens {
                            tokens_in,
                            tokens_out,
                            cache_read_tokens,
                            ..ModelTokens::default()
                        },
                    ),
                    0..3,
                )),
                proptest::option::of(timestamp()),
                proptest::option::of(dollars()),
                proptest::option::of((word(), count(), proptest::option::of(word())).prop_map(
                    |(cause, iteration, gate)| RunStop {
                        cause,
                        iteration,
                        gate,
                    },
                )),
                extra(),
            ),
        )
            .prop_map(
                |(
                    (
                        iterations_used,
                        tokens_in,
                        tokens_out,
                        seconds_elapsed,
                        dollars_estimate,
                        prs,
                    ),
                    (tokens_by_model, run_started_at, max_dollars, stopped, extra),
                )| BudgetSnapshot {
                    iterations_used,
                    tokens_in,
                    tokens_out,
                    seconds_elapsed,
                    dollars_estimate,
                    prs_touched: prs,
                    tokens_by_model,
                    run_started_at,
                    max_dollars,
                    stopped,
                    extra,
                    ..BudgetSnapshot::default()
                },
            )
    }

    pub fn line() -> impl Strategy<Value = HistoryLine> {
        use proptest::collection::vec;
        use proptest::option::of;
        (
            (
                of(count()),
                of(proptest::sample::select(vec!["work", "review"]).prop_map(str::to_owned)),
                of(timestamp()),
                of(timestamp()),
                of(outcome()),
                of(vec(pr_ref(), 0..4)),
                of(count()),
                of(dollars()),
            ),
            (
                of(snapshot()),
                of(vec(tracked_pr(), 0..3)),
                of(vec(worktree(), 0..2)),
                of(vec(gate(), 0..2)),
                of(vec(word(), 0..3)),
                of(vec(failure(), 0..3)),
                of(vec(1u64..1000, 0..4)),
            ),
            (
                of(any::<bool>()),
                of(text()),
                of(any::<bool>()),
                of(word()),
                extra(),
            ),
        )
            .prop_map(
                |(
                    (iteration, skill, started_at, ended_at, outcome, prs, tokens_in, dollars),
                    (snapshot, tracked, worktrees, gates, stops, failures, backlog),
                    (lock_held, error, chain_invoked, review_outcome, extra),
                )| HistoryLine {
                    iteration,
                    skill,
                    started_at,
                    ended_at,
                    outcome,
                    prs_touched_this_iter: prs,
                    tokens_in_this_iter: tokens_in,
                    dollars_this_iter: dollars,
                    budget_snapshot: snapshot,
                    tracked_prs: tracked,
                    active_worktrees: worktrees,
                    gates,
                    stop_conditions_fired: stops,
                    failures_this_iter: failures,
                    backlog_snapshot: backlog,
                    lock_held,
                    error,
                    chain_invoked,
                    review_outcome,
                    extra,
                    ..HistoryLine::default()
                },
            )
    }

    /// A line with a few fields: file-level properties are about lines
    /// and bytes, not about every field, and the full strategy is slow.
    fn light_line() -> impl Strategy<Value = HistoryLine> {
        (
            proptest::option::of(count()),
            proptest::option::of(outcome()),
            proptest::option::of("[ -~]{0,20}"),
        )
            .prop_map(|(iteration, outcome, error)| HistoryLine {
                iteration,
                outcome,
                error,
                ..HistoryLine::default()
            })
    }

    fn write(dir: &tempfile::TempDir, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.path().join("work.history.jsonl");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn file_of(lines: &[HistoryLine]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|l| format!("{}\n", l.to_json()).into_bytes())
            .collect()
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn a_line_round_trips(line in line()) {
            prop_assert_eq!(history::parse_line(line.to_json().as_bytes()), Ok(line));
        }

        #[test]
        fn any_line_is_a_value_or_an_error(bytes in messy_bytes()) {
            let _ = history::parse_line(&bytes);
        }

        #[test]
        fn any_file_is_a_tail_or_an_error(bytes in messy_bytes(), want in 0usize..6) {
            let dir = tempfile::tempdir().unwrap();
            let path = write(&dir, &bytes);
            let _ = history::read_tail(&path, want);
            let _ = history::read_all(&path);
        }

        #[test]
        fn the_tail_reader_agrees_with_the_whole_file_reader(bytes in messy_bytes()) {
            let dir = tempfile::tempdir().unwrap();
            let path = write(&dir, &bytes);
            match (history::read_all(&path), history::read_tail(&path, usize::MAX)) {
                (Ok(all), Ok(tail)) => prop_assert_eq!(all, tail),
                // Each names the damaged line it met first, from its end.
                (
                    Err(history::HistoryError::Damaged { .. }),
                    Err(history::HistoryError::Damaged { .. }),
                ) => {}
                (all, tail) => prop_assert!(false, "read_all {all:?} but read_tail {tail:?}"),
            }
        }

        #[test]
        fn a_torn_tail_is_set_aside_and_the_lines_before_it_kept(
            lines in proptest::collection::vec(light_line(), 0..4),
            torn in prop_oneof![
                // A crash mid-append: a cut-short line.
                (light_line(), any::<proptest::sample::Index>()).prop_map(|(l, at)| {
                    let json = l.to_json().into_bytes();
                    json[..1 + at.index(json.len() - 1)].to_vec()
                }),
                // Anything else without a newline.
                proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 1..60),
            ],
        ) {
            // A blank tail is not a torn line (nothing to set aside).
            prop_assume!(!torn.iter().all(u8::is_ascii_whitespace));
            prop_assume!(history::parse_line(&torn).is_err());
            let dir = tempfile::tempdir().unwrap();
            let mut bytes = file_of(&lines);
            let offset = bytes.len() as u64;
            bytes.extend_from_slice(&torn);
            let path = write(&dir, &bytes);
            for tail in [
                history::read_tail(&path, lines.len() + 1).unwrap(),
                history::read_all(&path).unwrap(),
            ] {
                let read: Vec<HistoryLine> = tail.lines.iter().map(|l| l.line.clone()).collect();
                prop_assert_eq!(&read, &lines);
                let found = tail.torn.expect("a torn tail");
                prop_assert_eq!(found.offset, offset);
                prop_assert_eq!(&found.bytes, &torn);
            }
        }

        #[test]
        fn a_damaged_middle_line_is_refused_with_its_number(
            before in proptest::collection::vec(light_line(), 0..3),
            damaged in (light_line(), any::<proptest::sample::Index>()).prop_map(|(l, at)| {
                let json = l.to_json().into_bytes();
                json[..1 + at.index(json.len() - 1)].to_vec()
            }),
            after in proptest::collection::vec(light_line(), 1..3),
        ) {
            prop_assume!(history::parse_line(&damaged).is_err());
            let dir = tempfile::tempdir().unwrap();
            let mut bytes = file_of(&before);
            bytes.extend_from_slice(&damaged);
            bytes.push(b'\n');
            bytes.extend(file_of(&after));
            let path = write(&dir, &bytes);
            let number = before.len() as u64 + 1;
            let refused = |result: Result<history::Tail, history::HistoryError>| {
                matches!(result, Err(history::HistoryError::Damaged { line, .. }) if line == number)
            };
            prop_assert!(refused(history::read_all(&path)));
            prop_assert!(refused(history::read_tail(&path, after.len() + 1)));
            let tail = history::read_tail(&path, after.len()).unwrap();
            prop_assert_eq!(tail.lines.len(), after.len());
        }
    }
}

// ---------------------------------------------------------------------
// budget.json

mod budget_file {
    use super::*;
    use sdd_loop::state::budget::{Budget, CeilingFlags, Ceilings, ModelTokens, RunStop};
    use std::path::Path;

    fn budget() -> impl Strategy<Value = Budget> {
        (
            (
                timestamp(),
                (count(), count(), count(), dollars()),
                proptest::sample::select(vec!["CLAUDE.md SDD config", "built-in default"]),
                (count(), count(), count(), count(), count()),
                (count(), count(), dollars(), count()),
            ),
            (
                proptest::collection::vec(pr_ref(), 0..5),
                proptest::collection::btree_map(
                    word(),
                    (count(), count(), count()).prop_map(
                        |(tokens_in, tokens_out, cache_read_tokens)| ModelTokens {
                            tokens_in,
                            tokens_out,
                            cache_read_tokens,
                            ..ModelTokens::default()
                        },
                    ),
                    0..3,
                ),
                proptest::option::of(count()),
                proptest::option::of((word(), count(), proptest::option::of(word())).prop_map(
                    |(cause, iteration, gate)| RunStop {
                        cause,
                        iteration,
                        gate,
                    },
                )),
                proptest::option::of(timestamp()),
                proptest::collection::vec(pr_ref(), 0..3),
                proptest::option::of(
                    (
                        proptest::option::of(count()),
                        proptest::option::of(dollars()),
                    )
                        .prop_map(|(max_iterations, max_dollars)| {
                            CeilingFlags {
                                max_iterations,
                                max_dollars,
                                ..CeilingFlags::default()
                            }
                        }),
                ),
                extra(),
            ),
        )
            .prop_map(
                |(
                    (
                        started_at,
                        (max_iterations, max_prs, max_minutes, max_dollars),
                        source,
                        counts,
                        spend,
                    ),
                    (prs, by_model, seconds, stopped, last_end, deferred, flags, extra),
                )| {
                    let mut b = Budget::start(
                        &started_at,
                        Ceilings {
                            max_iterations,
                            max_prs,
                            max_minutes,
                            max_dollars,
                        },
                        source,
                    );
                    (
                        b.iterations_used,
                        b.comments_pushed,
                        b.merges_attempted,
                        b.minutes_elapsed,
                        b.agents_dispatched,
                    ) = counts;
                    (
                        b.tokens_in,
                        b.tokens_out,
                        b.dollars_estimate,
                        b.qmd_failures_consecutive,
                    ) = spend;
                    for pr in prs {
                        b.prs_touched.insert(pr);
                    }
                    b.tokens_by_model = by_model;
                    b.seconds_elapsed = seconds;
                    b.stopped = stopped;
                    b.last_tick_ended_at = last_end;
                    b.deferred = deferred;
                    b.ceiling_flags = flags;
                    b.extra = extra;
                    b
                },
            )
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn a_budget_round_trips(budget in budget()) {
            let path = Path::new(".sdd/loop/work.budget.json");
            let read = Budget::from_slice(path, budget.to_json().as_bytes());
            prop_assert_eq!(read.ok(), Some(budget));
        }

        #[test]
        fn any_bytes_are_a_budget_or_an_error(bytes in messy_bytes()) {
            let _ = Budget::from_slice(Path::new("b.json"), &bytes);
        }

        #[test]
        fn any_json_is_a_budget_or_an_error(value in json_value(), budget in budget(), field in "[a-z_]{1,30}") {
            let path = Path::new("b.json");
            let _ = Budget::from_slice(path, value.to_string().as_bytes());
            // A valid budget with one field replaced by anything.
            let mut object = serde_json::to_value(&budget).unwrap();
            object[field.as_str()] = value;
            let _ = Budget::from_slice(path, object.to_string().as_bytes());
        }
    }
}

// ---------------------------------------------------------------------
// The lock record.

mod lock_record {
    use super::*;
    use sdd_loop::state::lock::LockRecord;

    fn record() -> impl Strategy<Value = LockRecord> {
        (
            any::<u32>(),
            count(),
            timestamp(),
            proptest::sample::select(vec!["work", "review"]),
            proptest::option::of(any::<u64>()),
            extra(),
        )
            .prop_map(
                |(pid, iteration, started_at, skill, process_start, extra)| LockRecord {
                    pid,
                    iteration,
                    started_at,
                    skill: skill.to_owned(),
                    process_start,
                    extra,
                },
            )
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn a_record_round_trips(record in record()) {
            prop_assert_eq!(LockRecord::from_slice(&record.to_bytes()).ok(), Some(record));
        }

        #[test]
        fn any_bytes_are_a_record_or_an_error(bytes in messy_bytes(), value in json_value()) {
            let _ = LockRecord::from_slice(&bytes);
            let _ = LockRecord::from_slice(value.to_string().as_bytes());
        }
    }
}

// ---------------------------------------------------------------------
// CLAUDE.md: rate and redaction tables.

mod claude_md_tables {
    use super::*;
    use sdd_loop::rules::claude_md::ClaudeMd;
    use sdd_loop::rules::rates::{Rate, RateSource, RateTable};
    use std::path::Path;

    /// Lines a CLAUDE.md is made of, in any order.
    fn markdown() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            text(),
            Just("### SDD Configuration".to_owned()),
            Just("#### Loop Cost Rates".to_owned()),
            Just("### Loop Logging".to_owned()),
            Just("#### Agent Logins".to_owned()),
            Just("## Other".to_owned()),
            Just("```".to_owned()),
            Just("| Model | Input | Output |".to_owned()),
            Just("| Pattern | Replacement |".to_owned()),
            Just("|---|---|---|".to_owned()),
            proptest::collection::vec("[^|\n]{0,12}", 0..5)
                .prop_map(|cells| format!("| {} |", cells.join(" | "))),
            "- `[^`\n]{0,15}`",
            "[#]{1,6} \\PC{0,10}",
        ];
        proptest::collection::vec(line, 0..16).prop_map(|lines| lines.join("\n"))
    }

    fn model() -> impl Strategy<Value = String> {
        "claude-[a-z]{3,8}-[0-9]"
    }

    fn rate() -> impl Strategy<Value = f64> {
        (0u64..100_000).prop_map(|cents| cents as f64 / 100.0)
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn any_claude_md_is_tables_or_an_error(text in markdown()) {
            let md = ClaudeMd::parse(Path::new("CLAUDE.md"), &text);
            let _ = RateTable::from_claude_md(&md);
            let _ = sdd_loop::rules::redact::Redactor::from_claude_md(&md);
            let _ = md.agent_logins();
        }

        #[test]
        fn a_rate_table_round_trips(
            rows in proptest::collection::btree_map(model(), (rate(), rate()), 1..5),
            nested in any::<bool>(),
        ) {
            // Model ids that differ only in case are one row; keep them apart.
            let lower: std::collections::BTreeSet<String> =
                rows.keys().map(|m| m.to_ascii_lowercase()).collect();
            prop_assume!(lower.len() == rows.len());
            let heading = if nested { "####" } else { "###" };
            let mut text = format!(
                "# Project\n\n### SDD Configuration\n\n{heading} Loop Cost Rates\n\n| Model | Input ($/Mtok) | Output ($/Mtok) |\n|---|---|---|\n"
            );
            for (model, (input, output)) in &rows {
                text.push_str(&format!("| `{model}` | {input:.2} | ${output:.2} |\n"));
            }
            let table = RateTable::from_claude_md(&ClaudeMd::parse(Path::new("CLAUDE.md"), &text))
                .unwrap();
            prop_assert_eq!(table.source, RateSource::ClaudeMd);
            for (model, (input, output)) in rows {
                prop_assert_eq!(
                    table.rate(&model),
                    Some(Rate {
                        input,
                        output,
                        cache_read: None,
                        cache_write: None,
                        cache_write_1h: None,
                    })
                );
            }
        }

        #[test]
        fn a_redaction_table_round_trips(
            rows in proptest::collection::btree_map("[a-z]{4,10}", proptest::option::of("\\[[A-Z]{2,8}\\]"), 1..5),
        ) {
            // A word inside another would be replaced by whichever runs first.
            let words: Vec<&String> = rows.keys().collect();
            prop_assume!(!words.iter().any(|a| words.iter().any(|b| a != b && b.contains(a.as_str()))));
            let mut text = "### SDD Configuration\n#### Loop Logging\n| Pattern | Replacement |\n|---|---|\n".to_owned();
            for (word, replacement) in &rows {
                text.push_str(&format!("| `{word}` | {} |\n", replacement.as_deref().unwrap_or("")));
            }
            let redactor =
                sdd_loop::rules::redact::Redactor::from_claude_md(&ClaudeMd::parse(Path::new("CLAUDE.md"), &text))
                    .unwrap();
            prop_assert_eq!(redactor.project_patterns(), rows.len());
            for (word, replacement) in rows {
                prop_assert_eq!(
                    redactor.apply(&format!("a {word} b")),
                    format!("a {} b", replacement.as_deref().unwrap_or("[REDACTED]"))
                );
            }
        }
    }
}

// ---------------------------------------------------------------------
// The `--answers` file.

mod answers_file {
    use super::*;
    use sdd_loop::rules::gates::{GateName, Script, ScriptedAnswer};
    use std::path::Path;

    fn entry() -> impl Strategy<Value = ScriptedAnswer> {
        (
            proptest::sample::select(GateName::ALL.to_vec()),
            any::<proptest::sample::Index>(),
            1u64..1000,
            proptest::option::of("\\PC{0,20}"),
            proptest::option::of(0u64..1_000_000),
        )
            .prop_map(|(gate, pick, raise_to, matches, iteration)| {
                let option = *pick.get(gate.options());
                let answer = if option == "raise" {
                    format!("raise max_iterations={raise_to}")
                } else {
                    option.to_owned()
                };
                ScriptedAnswer {
                    gate,
                    answer,
                    matches,
                    iteration,
                }
            })
    }

    /// YAML as a person would write it; strings double-quoted with JSON
    /// escapes, which YAML reads the same.
    fn render(entries: &[ScriptedAnswer]) -> String {
        let quote = |s: &str| serde_json::to_string(s).unwrap();
        let mut text = String::new();
        for e in entries {
            text.push_str(&format!(
                "- gate: {}\n  answer: {}\n",
                e.gate,
                quote(&e.answer)
            ));
            if let Some(m) = &e.matches {
                text.push_str(&format!("  match: {}\n", quote(m)));
            }
            if let Some(i) = e.iteration {
                text.push_str(&format!("  iteration: {i}\n"));
            }
        }
        text
    }

    /// YAML-looking lines in any order.
    fn yamlish() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            text(),
            "- gate: [a-z-]{0,20}",
            "  answer: \\PC{0,15}",
            "  match: \\PC{0,10}",
            "  iteration: -?[0-9]{0,25}",
            Just("- [".to_owned()),
            Just("  &a *a".to_owned()),
            Just("{".to_owned()),
        ];
        proptest::collection::vec(line, 0..10).prop_map(|lines| lines.join("\n"))
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn an_answers_file_round_trips(entries in proptest::collection::vec(entry(), 0..6)) {
            let path = Path::new("answers.yaml");
            let script = Script::parse(path, &render(&entries));
            prop_assert_eq!(script.map(|s| s.entries).ok(), Some(entries));
        }

        #[test]
        fn any_text_is_a_script_or_an_error(text in prop_oneof![yamlish(), "\\PC{0,200}"]) {
            let _ = Script::parse(Path::new("answers.yaml"), &text);
        }
    }
}

// ---------------------------------------------------------------------
// The skill's result and events.

mod skill_protocol {
    use super::*;
    use sdd_loop::state::protocol::{SkillEvent, SkillResult};
    use serde_json::{Value, json};

    fn state() -> impl Strategy<Value = &'static str> {
        proptest::sample::select(vec!["open", "merged", "closed"])
    }

    /// A result as a skill would write it, as JSON.
    fn result() -> impl Strategy<Value = Value> {
        let pr = (
            1u64..10_000,
            branch(),
            proptest::option::of(sha()),
            state(),
            any::<bool>(),
        )
            .prop_map(|(number, branch, sha, state, opened)| {
                let mut v =
                    json!({"number": number, "branch": branch, "state": state, "opened": opened});
                if let Some(sha) = sha {
                    v["head_sha_at_end"] = json!(sha);
                }
                v
            });
        let usage = (word(), count(), count())
            .prop_map(|(m, i, o)| json!({"model": m, "tokens_in": i, "tokens_out": o}));
        let worktree = (text(), branch(), sha())
            .prop_map(|(p, b, s)| json!({"path": p, "branch": b, "head_sha": s}));
        let failure = (pr_ref(), text()).prop_map(|(t, r)| json!({"target": t, "root_cause": r}));
        let chain = proptest::option::of((any::<bool>(), word(), any::<bool>(), word()).prop_map(
            |(invoked, outcome, autofix, status)| {
                if invoked {
                    json!({"invoked": true, "review_outcome": outcome,
                           "autofix_pr": if autofix { json!({"invoked": true, "status": status}) }
                                         else { json!({"invoked": false}) }})
                } else {
                    json!({"invoked": false})
                }
            },
        ));
        (
            proptest::collection::vec(pr, 0..3),
            proptest::collection::vec(usage, 0..3),
            (count(), count(), count()),
            proptest::collection::vec(worktree, 0..2),
            proptest::collection::vec(failure, 0..2),
            chain,
            proptest::option::of(text()),
        )
            .prop_map(
                |(prs, usage, (agents, comments, merges), worktrees, failures, chain, summary)| {
                    let mut v = json!({
                        "protocol": 1, "prs": prs, "usage": usage, "agents_dispatched": agents,
                        "comments_pushed": comments, "merges_attempted": merges,
                        "worktrees": worktrees, "failures": failures,
                    });
                    if let Some(c) = chain {
                        v["chain"] = c;
                    }
                    if let Some(s) = summary {
                        v["summary"] = json!(s);
                    }
                    v
                },
            )
    }

    fn event() -> impl Strategy<Value = Value> {
        prop_oneof![
            (word(), count(), count())
                .prop_map(|(m, i, o)| json!({"event": "usage", "model": m, "tokens_in": i, "tokens_out": o})),
            (1u64..10_000, branch(), state(), any::<bool>())
                .prop_map(|(n, b, s, o)| json!({"event": "pr", "number": n, "branch": b, "state": s, "opened": o})),
            count().prop_map(|c| json!({"event": "agent_dispatched", "count": c})),
            (1u64..10_000, count()).prop_map(|(pr, c)| json!({"event": "comment_pushed", "pr": pr, "count": c})),
            (1u64..10_000).prop_map(|pr| json!({"event": "merge_attempted", "pr": pr})),
            (pr_ref(), text()).prop_map(|(t, r)| json!({"event": "failure", "target": t, "root_cause": r})),
            text().prop_map(|m| json!({"event": "progress", "message": m})),
        ]
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn a_result_round_trips(value in result()) {
            let parsed: SkillResult = serde_json::from_value(value.clone())
                .map_err(|e| TestCaseError::fail(format!("{e}: {value}")))?;
            let again: SkillResult = serde_json::from_str(&serde_json::to_string(&parsed).unwrap()).unwrap();
            prop_assert_eq!(again, parsed);
        }

        #[test]
        fn an_event_round_trips(value in event()) {
            let parsed: SkillEvent = serde_json::from_value(value.clone())
                .map_err(|e| TestCaseError::fail(format!("{e}: {value}")))?;
            let again: SkillEvent = serde_json::from_str(&serde_json::to_string(&parsed).unwrap()).unwrap();
            prop_assert_eq!(again, parsed);
        }

        #[test]
        fn any_bytes_are_a_result_or_an_error(bytes in messy_bytes(), value in json_value()) {
            let _ = serde_json::from_slice::<SkillResult>(&bytes);
            let _ = serde_json::from_slice::<SkillEvent>(&bytes);
            let _ = serde_json::from_value::<SkillResult>(value.clone());
            let _ = serde_json::from_value::<SkillEvent>(value);
        }
    }
}

// ---------------------------------------------------------------------
// The tracker's JSON.

mod tracker_json {
    use super::history_lines::pr_state;
    use super::*;
    use sdd_loop::state::history::PrState;
    use sdd_loop::world::backlog::Issue;
    use sdd_loop::world::tracker::{self, Pull, ReviewComment};
    use serde_json::{Value, json};

    const URL: &str = "https://tracker.example/repos/acme/app/issues";

    fn labels() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec("[a-z:-]{1,12}", 0..4)
    }

    fn issue() -> impl Strategy<Value = Issue> {
        (1u64..100_000, text(), text(), labels()).prop_map(|(number, title, body, labels)| Issue {
            number,
            title,
            body,
            labels,
        })
    }

    /// GitHub's shape; an empty body is `null` as often as `""`.
    fn issue_json(issue: &Issue, null_body: bool) -> Value {
        json!({
            "number": issue.number,
            "title": issue.title,
            "body": if null_body && issue.body.is_empty() { Value::Null } else { json!(issue.body) },
            "labels": issue.labels.iter().map(|l| json!({"name": l, "color": "ffffff"})).collect::<Vec<_>>(),
            "state": "open",
        })
    }

    fn pull() -> impl Strategy<Value = Pull> {
        (
            1u64..100_000,
            text(),
            text(),
            pr_state(),
            labels(),
            branch(),
            sha(),
            word(),
        )
            .prop_map(
                |(number, title, body, state, labels, head_ref, head_sha, author)| Pull {
                    number,
                    title,
                    body,
                    state,
                    labels,
                    head_ref,
                    head_sha,
                    author,
                    merged_by: None,
                },
            )
    }

    fn pull_json(pull: &Pull, merged_by_time: bool) -> Value {
        let (state, merged) = match pull.state {
            PrState::Open => ("open", false),
            PrState::Closed => ("closed", false),
            PrState::Merged => ("closed", true),
        };
        let mut v = json!({
            "number": pull.number,
            "title": pull.title,
            "body": pull.body,
            "state": state,
            "labels": pull.labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>(),
            "head": {"ref": pull.head_ref, "sha": pull.head_sha},
            "user": {"login": pull.author},
        });
        // Single-PR answers say `merged`; list answers only `merged_at`.
        if merged_by_time {
            v["merged_at"] = if merged {
                json!("2026-05-09T14:20:00Z")
            } else {
                Value::Null
            };
        } else {
            v["merged"] = json!(merged);
        }
        v
    }

    fn comment() -> impl Strategy<Value = ReviewComment> {
        (
            1u64..1_000_000,
            word(),
            text(),
            proptest::option::of(1u64..1_000_000),
        )
            .prop_map(|(id, author, body, in_reply_to)| ReviewComment {
                id,
                author,
                body,
                in_reply_to,
            })
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn issues_round_trip_and_pulls_are_left_out(
            issues in proptest::collection::vec((issue(), any::<bool>(), any::<bool>()), 0..5),
        ) {
            let page: Vec<Value> = issues
                .iter()
                .map(|(issue, null_body, is_pull)| {
                    let mut v = issue_json(issue, *null_body);
                    if *is_pull {
                        v["pull_request"] = json!({"url": "https://tracker.example/pulls/1"});
                    }
                    v
                })
                .collect();
            let want: Vec<Issue> = issues.into_iter().filter(|(_, _, p)| !p).map(|(i, _, _)| i).collect();
            prop_assert_eq!(tracker::parse_issues(URL, &Value::from(page).to_string()), Ok(want));
        }

        #[test]
        fn pulls_round_trip(pulls in proptest::collection::vec((pull(), any::<bool>()), 0..4)) {
            let page: Vec<Value> = pulls.iter().map(|(p, by_time)| pull_json(p, *by_time)).collect();
            let want: Vec<Pull> = pulls.iter().map(|(p, _)| p.clone()).collect();
            prop_assert_eq!(tracker::parse_pulls(URL, &Value::from(page).to_string()), Ok(want));
            for (p, by_time) in pulls {
                prop_assert_eq!(tracker::parse_pull(URL, &pull_json(&p, by_time).to_string()), Ok(p));
            }
        }

        #[test]
        fn review_comments_round_trip(comments in proptest::collection::vec(comment(), 0..5)) {
            let page: Vec<Value> = comments
                .iter()
                .map(|c| json!({"id": c.id, "user": {"login": c.author}, "body": c.body, "in_reply_to_id": c.in_reply_to}))
                .collect();
            prop_assert_eq!(tracker::parse_review_comments(URL, &Value::from(page).to_string()), Ok(comments));
        }

        #[test]
        fn the_next_link_is_found_among_others(
            next in "https://tracker\\.example/[a-z/?=&0-9]{0,30}",
            others in proptest::collection::vec(("https://tracker\\.example/[a-z0-9]{0,10}", "prev|last|first"), 0..3),
            at in any::<proptest::sample::Index>(),
        ) {
            let mut parts: Vec<String> = others.iter().map(|(u, rel)| format!("<{u}>; rel=\"{rel}\"")).collect();
            parts.insert(at.index(parts.len() + 1), format!("<{next}>; rel=\"next\""));
            prop_assert_eq!(tracker::next_link(&parts.join(", ")), Some(next));
        }

        #[test]
        fn any_answer_is_parsed_or_an_error(text in prop_oneof![
            "\\PC{0,200}",
            json_value().prop_map(|v| v.to_string()),
            proptest::collection::vec(json_value(), 0..4).prop_map(|v| Value::from(v).to_string()),
        ]) {
            let _ = tracker::parse_issues(URL, &text);
            let _ = tracker::parse_pulls(URL, &text);
            let _ = tracker::parse_pull(URL, &text);
            let _ = tracker::parse_review_comments(URL, &text);
            let _ = tracker::next_link(&text);
        }
    }
}

// ---------------------------------------------------------------------
// The interrupted-iteration journal.

mod journal_file {
    use super::history_lines::{gate, tracked_pr, worktree};
    use super::*;
    use sdd_loop::state::journal::Shown;
    use sdd_loop::state::journal::{Driver, Journal, SkillProcess};
    use sdd_loop::state::paths::Skill;
    use sdd_loop::state::protocol::{Criteria, IssueAssignment, PrAssignment, SkillRequest};
    use std::path::PathBuf;

    pub fn request() -> impl Strategy<Value = SkillRequest> {
        let issue = (1u64..100_000, text(), any::<bool>()).prop_map(|(number, title, clear)| {
            IssueAssignment {
                number,
                title,
                criteria: if clear {
                    Criteria::Clear
                } else {
                    Criteria::BestInterpretation
                },
            }
        });
        let pr = (
            1u64..100_000,
            branch(),
            proptest::option::of(sha()),
            any::<bool>(),
        )
            .prop_map(|(number, branch, head_sha, merge_allowed)| PrAssignment {
                number,
                branch,
                head_sha,
                merge_allowed,
            });
        (
            any::<bool>(),
            count(),
            proptest::option::of("[a-z]{1,8}/[a-z]{1,8}"),
            proptest::collection::vec(issue, 0..3),
            proptest::collection::vec(pr, 0..3),
            proptest::option::of(count()),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(
                |(work, iteration, repository, issues, prs, max_new_prs, no_chain, dry_run)| {
                    SkillRequest {
                        protocol: 1,
                        skill: if work { Skill::Work } else { Skill::Review },
                        iteration,
                        repository,
                        issues,
                        prs,
                        max_new_prs,
                        no_chain,
                        dry_run,
                    }
                },
            )
    }

    fn shown() -> impl Strategy<Value = Shown> {
        (text(), text(), text(), text()).prop_map(|(context, plan, concurrency, outcome)| Shown {
            context,
            plan,
            concurrency,
            outcome,
        })
    }

    pub fn journal() -> impl Strategy<Value = Journal> {
        let process = (
            any::<u32>(),
            proptest::option::of(any::<u64>()),
            timestamp(),
            timestamp(),
            count(),
        );
        let work = (
            request(),
            proptest::collection::vec(tracked_pr(), 0..3),
            proptest::option::of(proptest::collection::vec(1u64..100_000, 0..4)),
            proptest::collection::vec(gate(), 0..3),
            any::<bool>(),
            proptest::collection::vec(worktree(), 0..2),
        );
        let rest = (
            shown(),
            proptest::collection::vec(text(), 0..3),
            proptest::option::of(1u64..100_000),
            proptest::option::of(text().prop_map(PathBuf::from)),
            proptest::option::of(text().prop_map(PathBuf::from)),
            proptest::option::of(
                (any::<u32>(), proptest::option::of(any::<u64>()))
                    .prop_map(|(pgid, start)| SkillProcess { pgid, start }),
            ),
        );
        (count(), process, work, rest).prop_map(
            |(
                iteration,
                (pid, process_start, started_at, run_started_at, seconds_at_start),
                (request, tracked_prs, backlog_snapshot, gates, session, worktrees),
                (shown, gate_outcomes, single_pr, budget_file, claude_md, skill_process),
            )| Journal {
                iteration,
                pid,
                process_start,
                started_at,
                run_started_at,
                seconds_at_start,
                request,
                tracked_prs,
                backlog_snapshot,
                gates,
                driver: if session {
                    Driver::Session
                } else {
                    Driver::Wrapper
                },
                worktrees,
                shown,
                gate_outcomes,
                single_pr,
                budget_file,
                claude_md,
                skill_process,
                claims: None,
                window_ceilings: Default::default(),
            },
        )
    }

    fn write(dir: &tempfile::TempDir, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.path().join("work.inflight.json");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn a_journal_round_trips(journal in journal()) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("work.inflight.json");
            journal.save(&path).unwrap();
            prop_assert_eq!(Journal::load(&path).unwrap(), Some(journal));
        }

        #[test]
        fn any_bytes_are_a_journal_or_an_error(bytes in messy_bytes(), value in json_value()) {
            let dir = tempfile::tempdir().unwrap();
            let _ = Journal::load(&write(&dir, &bytes));
            let _ = Journal::load(&write(&dir, value.to_string().as_bytes()));
        }

        /// A journal with one field changed to anything, or dropped: still
        /// a journal, or an error naming the file.
        #[test]
        fn a_damaged_journal_is_a_journal_or_an_error(
            journal in journal(),
            at in any::<proptest::sample::Index>(),
            value in proptest::option::of(json_value()),
        ) {
            let mut object = serde_json::to_value(&journal).unwrap();
            let map = object.as_object_mut().unwrap();
            let key = map.keys().nth(at.index(map.len())).unwrap().clone();
            match value {
                Some(v) => map[&key] = v,
                None => {
                    map.remove(&key);
                }
            }
            let dir = tempfile::tempdir().unwrap();
            let path = write(&dir, object.to_string().as_bytes());
            if let Err(e) = Journal::load(&path) {
                prop_assert!(e.to_string().contains("work.inflight.json"), "{}", e);
            }
        }
    }
}

// ---------------------------------------------------------------------
// The exchange: the skill's progress events file.

mod exchange_events {
    use super::*;
    use sdd_loop::state::exchange::{Exchange, fold_events};
    use sdd_loop::state::protocol::SkillEvent;

    fn event() -> impl Strategy<Value = SkillEvent> {
        use super::history_lines::pr_state;
        prop_oneof![
            (word(), count(), count()).prop_map(|(model, tokens_in, tokens_out)| {
                SkillEvent::Usage {
                    model,
                    tokens_in,
                    tokens_out,
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                    cache_write_1h_tokens: 0,
                }
            }),
            (
                1u64..10_000,
                branch(),
                proptest::option::of(sha()),
                pr_state(),
                any::<bool>()
            )
                .prop_map(|(number, branch, head_sha, state, opened)| SkillEvent::Pr {
                    number,
                    branch,
                    head_sha,
                    state,
                    opened,
                }),
            count().prop_map(|count| SkillEvent::AgentDispatched { count }),
            (1u64..10_000, count()).prop_map(|(pr, count)| SkillEvent::CommentPushed { pr, count }),
            (1u64..10_000).prop_map(|pr| SkillEvent::MergeAttempted { pr }),
            (pr_ref(), text())
                .prop_map(|(target, root_cause)| SkillEvent::Failure { target, root_cause }),
            text().prop_map(|message| SkillEvent::Progress { message }),
        ]
    }

    fn exchange(dir: &tempfile::TempDir) -> Exchange {
        let exchange = Exchange {
            dir: dir.path().join("1"),
        };
        std::fs::create_dir_all(&exchange.dir).unwrap();
        exchange
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn events_round_trip_and_torn_lines_are_counted(
            events in proptest::collection::vec(event(), 0..12),
            torn in proptest::collection::vec(("[a-z{\":,]{1,20}", any::<proptest::sample::Index>()), 0..3),
        ) {
            let mut lines: Vec<String> =
                events.iter().map(|e| serde_json::to_string(e).unwrap()).collect();
            let mut skipped = 0;
            for (junk, at) in &torn {
                if serde_json::from_str::<SkillEvent>(junk).is_err() && !junk.trim().is_empty() {
                    lines.insert(at.index(lines.len() + 1), junk.clone());
                    skipped += 1;
                }
            }
            let dir = tempfile::tempdir().unwrap();
            let exchange = exchange(&dir);
            std::fs::write(exchange.events_path(), lines.join("\n")).unwrap();
            let (read, bad) = exchange.read_events();
            prop_assert_eq!(&read, &events);
            prop_assert_eq!(bad, skipped);
            let folded = fold_events(&read);
            prop_assert_eq!(folded.protocol, 1);
        }

        #[test]
        fn any_events_file_folds_without_a_panic(bytes in messy_bytes()) {
            let dir = tempfile::tempdir().unwrap();
            let exchange = exchange(&dir);
            std::fs::write(exchange.events_path(), &bytes).unwrap();
            let (events, _) = exchange.read_events();
            let _ = fold_events(&events);
            let _ = exchange.read_result();
        }

        /// Counts add up without overflowing, however large the skill says
        /// they are.
        #[test]
        fn folded_counts_saturate(counts in proptest::collection::vec(any::<u64>(), 0..6)) {
            let events: Vec<SkillEvent> = counts
                .iter()
                .flat_map(|&count| {
                    [
                        SkillEvent::AgentDispatched { count },
                        SkillEvent::CommentPushed { pr: 1, count },
                    ]
                })
                .collect();
            let folded = fold_events(&events);
            let sum = counts.iter().fold(0u64, |a, c| a.saturating_add(*c));
            prop_assert_eq!(folded.agents_dispatched, sum);
            prop_assert_eq!(folded.comments_pushed, sum);
        }
    }
}

// ---------------------------------------------------------------------
// Claude Code transcripts.

mod transcripts {
    use super::*;
    use jiff::{SignedDuration, Timestamp};
    use sdd_loop::transcript::{self, Ledger, ResponseKey, TickId, TokenTotals, count_spend};
    use serde_json::json;
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    const FROM: &str = "2026-11-03T10:00:00Z";

    fn at(offset: i64) -> String {
        (FROM.parse::<Timestamp>().unwrap() + SignedDuration::from_secs(offset)).to_string()
    }

    /// One API response as Claude Code writes it: one entry per streamed
    /// content block, each a usage snapshot, the last one final.
    #[derive(Debug, Clone)]
    struct Response {
        model: String,
        request_id: Option<String>,
        /// (input, output, cache writes, cache reads) per entry.
        entries: Vec<(u64, u64, u64, u64)>,
    }

    fn tokens() -> impl Strategy<Value = u64> {
        0u64..1_000_000
    }

    fn response() -> impl Strategy<Value = Response> {
        (
            "claude-[a-z]{3,8}-[0-9]",
            proptest::option::of("req_[A-Za-z0-9]{8}"),
            proptest::collection::vec((tokens(), tokens(), tokens(), tokens()), 1..4),
        )
            .prop_map(|(model, request_id, entries)| Response {
                model,
                request_id,
                entries,
            })
    }

    fn entry(id: &str, r: &Response, k: usize, offset: i64) -> String {
        let (input, output, writes, reads) = r.entries[k];
        let mut v = json!({
            "type": "assistant",
            "timestamp": at(offset),
            "message": {
                "id": id,
                "model": r.model,
                "role": "assistant",
                "content": [{"type": "text", "text": "…"}],
                "usage": {
                    "input_tokens": input,
                    "output_tokens": output,
                    "cache_creation_input_tokens": writes,
                    "cache_read_input_tokens": reads,
                },
            },
        });
        if let Some(req) = &r.request_id {
            v["requestId"] = json!(req);
        }
        v.to_string()
    }

    fn prompt(uuid: &str, offset: i64) -> String {
        json!({"type": "user", "uuid": uuid, "timestamp": at(offset), "message": {"role": "user", "content": "/sdd:work --loop"}}).to_string()
    }

    /// Lines around the responses: tool results and other entry types,
    /// junk, blanks — none of which starts a turn.
    fn noise() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(json!({"type": "user", "timestamp": FROM, "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}}).to_string()),
            Just(json!({"type": "user", "isMeta": true, "timestamp": FROM, "message": {"role": "user", "content": "skill body"}}).to_string()),
            Just(json!({"type": "queue-operation", "operation": "enqueue", "content": "x"}).to_string()),
            Just(json!({"type": "attachment", "attachment": {"type": "total_tokens_reminder"}}).to_string()),
            Just(json!({"type": "summary", "summary": "…"}).to_string()),
            Just(json!({"type": "assistant", "timestamp": FROM, "message": {"id": "msg_x", "model": transcript::SYNTHETIC_MODEL, "usage": {"input_tokens": 5}}}).to_string()),
            Just(json!({"type": "assistant", "timestamp": FROM}).to_string()),
            Just("{\"type\": \"assist".to_owned()),
            Just("   ".to_owned()),
            json_value()
                .prop_filter("not an entry that starts a turn", |v| v.get("type").is_none())
                .prop_map(|v| v.to_string()),
            "[^{}\\[\\]\"]{1,40}",
        ]
    }

    fn non_blank_lines(bytes: &[u8]) -> u64 {
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty())
            .count() as u64
    }

    /// A turn: a loop tick (its `end` runs after `before_end` of its
    /// responses) or chat, with noise lines inside.
    #[derive(Debug, Clone)]
    struct Turn {
        tick: bool,
        responses: Vec<Response>,
        before_end: proptest::sample::Index,
        noise: Vec<(String, proptest::sample::Index)>,
    }

    fn turn() -> impl Strategy<Value = Turn> {
        (
            proptest::bool::weighted(0.7),
            proptest::collection::vec(response(), 0..5),
            any::<proptest::sample::Index>(),
            proptest::collection::vec((noise(), any::<proptest::sample::Index>()), 0..3),
        )
            .prop_map(|(tick, responses, before_end, noise)| Turn {
                tick,
                responses,
                before_end,
                noise,
            })
    }

    fn add(want: &mut BTreeMap<String, TokenTotals>, r: &Response) {
        let &(input, output, writes, reads) = r.entries.last().unwrap();
        let t = want.entry(r.model.clone()).or_default();
        t.input += input;
        t.output += output;
        t.cache_creation += writes;
        t.cache_read += reads;
    }

    fn sum(a: &mut BTreeMap<String, TokenTotals>, b: &BTreeMap<String, TokenTotals>) {
        for (model, t) in b {
            let s = a.entry(model.clone()).or_default();
            s.input += t.input;
            s.output += t.output;
            s.cache_creation += t.cache_creation;
            s.cache_read += t.cache_read;
        }
    }

    /// What the `end`s of a loop have counted so far.
    #[derive(Default)]
    struct Ends {
        ledger: Ledger,
        got: BTreeMap<String, TokenTotals>,
        counted: BTreeSet<ResponseKey>,
    }

    /// Writes `lines` as the transcript and runs tick `iteration`'s `end`.
    fn run_end(
        path: &Path,
        lines: &[String],
        ends: &mut Ends,
        iteration: u64,
    ) -> Result<(), TestCaseError> {
        std::fs::write(path, lines.join("\n")).unwrap();
        let tick = TickId {
            iteration,
            began_at: format!("tick {iteration}"),
        };
        let c = count_spend(path, &ends.ledger, &tick, None).unwrap();
        sum(&mut ends.got, &c.spend.by_model);
        for key in &c.ledger.ticks.last().unwrap().counted {
            prop_assert!(ends.counted.insert(key.clone()), "{:?} counted twice", key);
        }
        ends.ledger = c.ledger;
        Ok(())
    }

    proptest! {
        #![proptest_config(config())]

        /// Over a loop's ticks, interleaved with chat, the `end`s count
        /// every response answering a tick's prompt exactly once, with its
        /// final usage — the closing ones by the next `end` — and never a
        /// chat response.
        #[test]
        fn the_ends_of_a_loop_count_each_tick_s_responses_once(
            turns in proptest::collection::vec(turn(), 0..6),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("session.jsonl");
            let mut lines: Vec<String> = Vec::new();
            let mut seen = Ends::default();
            let mut want: BTreeMap<String, TokenTotals> = BTreeMap::new();
            let mut offset = 0i64;
            let mut iteration = 0u64;
            for (n, turn) in turns.iter().enumerate() {
                offset += 60;
                lines.push(prompt(&format!("p{n}"), offset));
                // A response's entries are written together, once its
                // stream has ended: `end` comes before or after all of them.
                let mut mine: Vec<Vec<String>> = Vec::new();
                for (i, r) in turn.responses.iter().enumerate() {
                    let id = format!("msg_{n}_{i}");
                    mine.push((0..r.entries.len()).map(|k| entry(&id, r, k, offset + i as i64)).collect());
                    if turn.tick {
                        add(&mut want, r);
                    }
                }
                for (line, at) in &turn.noise {
                    mine.insert(at.index(mine.len() + 1), vec![line.clone()]);
                }
                if turn.tick {
                    let cut = turn.before_end.index(mine.len() + 1);
                    lines.extend(mine[..cut].iter().flatten().cloned());
                    iteration += 1;
                    run_end(&path, &lines, &mut seen, iteration)?;
                    lines.extend(mine[cut..].iter().flatten().cloned());
                } else {
                    lines.extend(mine.into_iter().flatten());
                }
            }
            // One more tick, whose end counts what the last one left.
            lines.push(prompt("last", offset + 60));
            run_end(&path, &lines, &mut seen, iteration + 1)?;
            seen.got.retain(|_, t| *t != TokenTotals::default());
            want.retain(|_, t| *t != TokenTotals::default());
            prop_assert_eq!(seen.got, want);
        }

        /// Nothing in a transcript is fatal: whatever it holds is read,
        /// every non-blank line counted once.
        #[test]
        fn any_transcript_is_read_and_every_line_accounted_for(
            bytes in messy_bytes(),
            lines in proptest::collection::vec(noise(), 0..8),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("session.jsonl");
            for bytes in [bytes, lines.join("\n").into_bytes()] {
                std::fs::write(&path, &bytes).unwrap();
                let tick = TickId { iteration: 1, began_at: FROM.into() };
                let spend = count_spend(&path, &Ledger::default(), &tick, None).unwrap().spend;
                let s = spend.skipped;
                prop_assert_eq!(
                    spend.responses + s.malformed + s.foreign + s.other_entries + s.incomplete
                        + s.synthetic + s.not_loop + s.counted_before + s.streamed + s.replayed,
                    non_blank_lines(&bytes),
                );
            }
        }

        /// The folder name, read unit by unit of the path's UTF-16 (as
        /// the JavaScript that makes it sees the path): ASCII letters and
        /// digits kept in place, every other unit a `-`.
        #[test]
        fn a_project_slug_keeps_letters_and_digits_in_place(path in "/\\PC{0,40}") {
            let slug = transcript::project_slug(Path::new(&path));
            let want: String = path
                .encode_utf16()
                .map(|unit| match u8::try_from(unit) {
                    Ok(b) if b.is_ascii_alphanumeric() => char::from(b),
                    _ => '-',
                })
                .collect();
            prop_assert_eq!(slug, want);
        }
    }

    /// An unreadable transcript is an error value naming the file.
    #[test]
    fn a_missing_transcript_is_an_error_naming_it() {
        let tick = TickId {
            iteration: 1,
            began_at: FROM.into(),
        };
        let err = count_spend(
            Path::new("/nonexistent/s.jsonl"),
            &Ledger::default(),
            &tick,
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/s.jsonl"), "{err}");
    }
}

// ---------------------------------------------------------------------
// Agent streams: Claude Code's `stream-json`, Codex's `exec --json`, and
// Codex's `config.toml` (`agent-formats.md`).

mod agent_streams {
    use super::*;
    use sdd_loop::agent::claude::ClaudeStream;
    use sdd_loop::agent::codex::{self, CodexStream};
    use sdd_loop::agent::{StreamReader, Verdict};
    use sdd_loop::skill::runner::RunOutcome;
    use sdd_loop::state::protocol::{ModelUsage, SkillEvent};
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    /// Token counts, near `u64::MAX` one time in four: sums of them must
    /// saturate, never overflow.
    fn tokens() -> impl Strategy<Value = u64> {
        prop_oneof![3 => 0u64..1_000_000, 1 => (u64::MAX - 1_000_000)..=u64::MAX]
    }

    fn percent(n: u64, pct: u64) -> u64 {
        u64::try_from(u128::from(n) * u128::from(pct) / 100).expect("at most n")
    }

    fn clamp(n: u128) -> u64 {
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// Exact sums (no u64 can overflow a u128 here), clamped only when
    /// compared: what a saturating reader must report.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    struct Sum {
        input: u128,
        output: u128,
        cache_write: u128,
        cache_write_1h: u128,
        cache_read: u128,
    }

    impl Sum {
        fn clamped(self) -> Self {
            let c = |n| u128::from(clamp(n));
            Self {
                input: c(self.input),
                output: c(self.output),
                cache_write: c(self.cache_write),
                cache_write_1h: c(self.cache_write_1h),
                cache_read: c(self.cache_read),
            }
        }

        fn add(&mut self, o: Self) {
            self.input += o.input;
            self.output += o.output;
            self.cache_write += o.cache_write;
            self.cache_write_1h += o.cache_write_1h;
            self.cache_read += o.cache_read;
        }

        fn max(self, o: Self) -> Self {
            Self {
                input: self.input.max(o.input),
                output: self.output.max(o.output),
                cache_write: self.cache_write.max(o.cache_write),
                cache_write_1h: self.cache_write_1h.max(o.cache_write_1h),
                cache_read: self.cache_read.max(o.cache_read),
            }
        }

        /// Anthropic's counts as our usage record: `tokens_in` includes
        /// the cache reads and writes.
        fn anthropic(self, model: &str) -> ModelUsage {
            ModelUsage {
                model: model.to_owned(),
                tokens_in: clamp(self.input + self.cache_write + self.cache_read),
                tokens_out: clamp(self.output),
                cache_read_tokens: clamp(self.cache_read),
                cache_write_tokens: clamp(self.cache_write),
                cache_write_1h_tokens: clamp(self.cache_write_1h),
            }
        }
    }

    /// Usage records per model, in model order, zero ones left out: the
    /// shape of a verdict's usage.
    fn records(by_model: BTreeMap<String, ModelUsage>) -> Vec<ModelUsage> {
        by_model
            .into_values()
            .filter(|u| {
                *u != ModelUsage {
                    model: u.model.clone(),
                    ..ModelUsage::default()
                }
            })
            .collect()
    }

    /// The usage events journaled while reading, summed per model
    /// (saturating), and whether every event was usage.
    fn summed(events: &[SkillEvent]) -> (BTreeMap<String, ModelUsage>, bool) {
        let mut sums: BTreeMap<String, [u128; 5]> = BTreeMap::new();
        let mut only_usage = true;
        for e in events {
            let SkillEvent::Usage {
                model,
                tokens_in,
                tokens_out,
                cache_read_tokens,
                cache_write_tokens,
                cache_write_1h_tokens,
            } = e
            else {
                only_usage = false;
                continue;
            };
            let s = sums.entry(model.clone()).or_default();
            for (acc, n) in s.iter_mut().zip([
                tokens_in,
                tokens_out,
                cache_read_tokens,
                cache_write_tokens,
                cache_write_1h_tokens,
            ]) {
                *acc += u128::from(*n);
            }
        }
        let by_model = sums
            .into_iter()
            .map(|(model, [i, o, r, w, h])| {
                let u = ModelUsage {
                    model: model.clone(),
                    tokens_in: clamp(i),
                    tokens_out: clamp(o),
                    cache_read_tokens: clamp(r),
                    cache_write_tokens: clamp(w),
                    cache_write_1h_tokens: clamp(h),
                };
                (model, u)
            })
            .collect();
        (by_model, only_usage)
    }

    fn at_most(a: &ModelUsage, b: &ModelUsage) -> bool {
        a.tokens_in <= b.tokens_in
            && a.tokens_out <= b.tokens_out
            && a.cache_read_tokens <= b.cache_read_tokens
            && a.cache_write_tokens <= b.cache_write_tokens
            && a.cache_write_1h_tokens <= b.cache_write_1h_tokens
    }

    /// How the agent's process ended.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Exit {
        Clean,
        Code(i32),
        Signal(i32),
        Stalled,
    }

    fn exit() -> impl Strategy<Value = Exit> {
        prop_oneof![
            4 => Just(Exit::Clean),
            1 => (1i32..=255).prop_map(Exit::Code),
            1 => (1i32..=31).prop_map(Exit::Signal),
            1 => Just(Exit::Stalled),
        ]
    }

    impl Exit {
        fn outcome(self, stderr: &str) -> RunOutcome {
            let (exit_code, signal, stalled) = match self {
                Exit::Clean => (Some(0), None, false),
                Exit::Code(c) => (Some(c), None, false),
                Exit::Signal(s) => (None, Some(s), false),
                Exit::Stalled => (None, Some(9), true),
            };
            RunOutcome {
                exit_code,
                signal,
                stalled,
                stderr_tail: vec![stderr.to_owned()],
                ..RunOutcome::default()
            }
        }
    }

    /// Lines a CLI prints beside its stream: warnings, blanks. `true`
    /// for a line that is not JSON and not blank (a counted skip).
    fn chatter() -> impl Strategy<Value = (String, bool)> {
        prop_oneof![
            "Warning: [a-z ]{0,30}".prop_map(|l| (l, true)),
            Just(("Reading prompt from stdin...".to_owned(), true)),
            Just((String::new(), false)),
            Just(("   ".to_owned(), false)),
        ]
    }

    /// Chatter, each line with where it goes.
    type Noise = Vec<((String, bool), proptest::sample::Index)>;

    fn noise(line: impl Strategy<Value = (String, bool)>) -> impl Strategy<Value = Noise> {
        proptest::collection::vec((line, any::<proptest::sample::Index>()), 0..5)
    }

    fn interleave(lines: &mut Vec<String>, noise: &Noise) {
        for ((line, _), at) in noise {
            lines.insert(at.index(lines.len() + 1), line.clone());
        }
    }

    /// The note a reader must give for the noise's non-JSON lines.
    fn not_json_note(noise: &Noise) -> Option<String> {
        let n = noise.iter().filter(|((_, counted), _)| *counted).count();
        (n > 0).then(|| format!("{n} line(s) of the stream were not JSON (skipped)"))
    }

    fn skipped_note(v: &Verdict) -> Option<String> {
        v.notes
            .iter()
            .find(|n| n.ends_with("line(s) of the stream were not JSON (skipped)"))
            .cloned()
    }

    // -----------------------------------------------------------------
    // Claude Code.

    /// One reading of a step's usage, as Anthropic reports it: `input`
    /// EXCLUDES the cache.
    #[derive(Debug, Clone, Copy, Default)]
    struct Reading {
        input: u64,
        output: u64,
        cache_write: u64,
        cache_write_1h: u64,
        cache_read: u64,
    }

    impl Reading {
        fn scaled(&self, pct: u64) -> Self {
            Self {
                input: percent(self.input, pct),
                output: percent(self.output, pct),
                cache_write: percent(self.cache_write, pct),
                cache_write_1h: percent(self.cache_write_1h, pct),
                cache_read: percent(self.cache_read, pct),
            }
        }

        fn sum(&self) -> Sum {
            Sum {
                input: self.input.into(),
                output: self.output.into(),
                cache_write: self.cache_write.into(),
                cache_write_1h: self.cache_write_1h.into(),
                cache_read: self.cache_read.into(),
            }
        }

        /// `message.usage`; with `split`, cache writes also by lifetime.
        fn usage(&self, split: bool) -> Value {
            let mut u = json!({
                "input_tokens": self.input,
                "cache_creation_input_tokens": self.cache_write,
                "cache_read_input_tokens": self.cache_read,
                "output_tokens": self.output,
                "service_tier": "standard",
            });
            if split {
                u["cache_creation"] = json!({
                    "ephemeral_5m_input_tokens": self.cache_write - self.cache_write_1h,
                    "ephemeral_1h_input_tokens": self.cache_write_1h,
                });
            }
            u
        }
    }

    fn reading() -> impl Strategy<Value = Reading> {
        (tokens(), tokens(), tokens(), 0u64..=100, tokens()).prop_map(
            |(input, output, cache_write, pct_1h, cache_read)| Reading {
                input,
                output,
                cache_write,
                cache_write_1h: percent(cache_write, pct_1h),
                cache_read,
            },
        )
    }

    /// One API step (`message.id`) streamed as one `assistant` event per
    /// content block, the earlier ones with partial counts.
    #[derive(Debug, Clone)]
    struct Step {
        /// `None`: no `model` field (the init event's model applies).
        model: Option<String>,
        split: bool,
        /// Earlier readings, as ascending percentages of the last one.
        partial: Vec<u64>,
        last: Reading,
        /// Content blocks, one per event, cycled.
        blocks: Vec<u8>,
    }

    fn claude_model() -> impl Strategy<Value = String> {
        "claude-(opus|sonnet|haiku)-4-[0-9]"
    }

    fn step() -> impl Strategy<Value = Step> {
        (
            proptest::option::of(prop_oneof![4 => claude_model(), 1 => Just(String::new())]),
            any::<bool>(),
            proptest::collection::vec(0u64..=100, 0..3).prop_map(|mut v| {
                v.sort_unstable();
                v
            }),
            reading(),
            proptest::collection::vec(0u8..5, 1..4),
        )
            .prop_map(|(model, split, partial, mut last, blocks)| {
                if !split {
                    last.cache_write_1h = 0;
                }
                Step {
                    model,
                    split,
                    partial,
                    last,
                    blocks,
                }
            })
    }

    impl Step {
        fn events(&self) -> usize {
            self.partial.len() + 1
        }

        fn dispatches(&self) -> usize {
            (0..self.events())
                .filter(|k| matches!(self.blocks[k % self.blocks.len()], 1 | 2))
                .count()
        }

        fn line(&self, i: usize, k: usize) -> String {
            let reading = self
                .partial
                .get(k)
                .map_or(self.last, |pct| self.last.scaled(*pct));
            let tool = format!("toolu_{i}_{k}");
            let block = match self.blocks[k % self.blocks.len()] {
                0 => json!({"type": "text", "text": "Reading the issue.\nThen the code."}),
                1 => {
                    json!({"type": "tool_use", "id": tool, "name": "Task", "input": {"prompt": "…"}})
                }
                2 => json!({"type": "tool_use", "id": tool, "name": "Agent", "input": {}}),
                3 => {
                    json!({"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": "git push"}})
                }
                _ => json!({"type": "thinking", "thinking": "…", "signature": "c2ln"}),
            };
            let mut message = json!({
                "id": format!("msg_{i:03}"), "type": "message", "role": "assistant",
                "content": [block], "stop_reason": null, "usage": reading.usage(self.split),
            });
            if let Some(m) = &self.model {
                message["model"] = json!(m);
            }
            json!({"type": "assistant", "message": message, "parent_tool_use_id": null, "session_id": "s1"})
                .to_string()
        }
    }

    /// What the `result` event says of the run.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Said {
        Success,
        Subtype(&'static str),
        IsError,
        Denied,
        ZeroTurns,
    }

    fn said() -> impl Strategy<Value = Said> {
        prop_oneof![
            4 => Just(Said::Success),
            1 => proptest::sample::select(vec![
                "error_during_execution",
                "error_max_turns",
                "error_max_budget_usd",
                "error_max_structured_output_retries",
            ])
            .prop_map(Said::Subtype),
            1 => Just(Said::IsError),
            1 => Just(Said::Denied),
            1 => Just(Said::ZeroTurns),
        ]
    }

    /// How a model's entry in `modelUsage` is keyed.
    #[derive(Debug, Clone, Copy)]
    enum Key {
        Plain,
        /// `model[1m]` with `canonicalModel`.
        Alias,
        /// Split across an alias and the plain id: the two add up.
        Both,
        /// `canonicalModel: ""`: the key is the model.
        EmptyCanonical,
    }

    /// The final `result` event.
    #[derive(Debug, Clone)]
    struct Reported {
        /// Per streamed model, cycled: the result's count as a percentage
        /// of the streamed one (100: it agrees; less: it under-reports),
        /// plus what the stream never showed, and how it is keyed.
        per_model: Vec<(u64, Reading, Key)>,
        /// Models that appear only in the result (helpers).
        helpers: BTreeMap<String, Reading>,
        said: Said,
        turns: u64,
        cost: f64,
    }

    fn reported() -> impl Strategy<Value = Reported> {
        let key =
            proptest::sample::select(vec![Key::Plain, Key::Alias, Key::Both, Key::EmptyCanonical]);
        (
            proptest::collection::vec(
                (
                    prop_oneof![3 => Just(100u64), 1 => 0u64..100],
                    prop_oneof![Just(Reading::default()), reading()],
                    key,
                ),
                1..4,
            ),
            proptest::collection::btree_map("helper-[a-z]{3,6}", reading(), 0..3),
            said(),
            1u64..50,
            dollars(),
        )
            .prop_map(|(per_model, helpers, said, turns, cost)| Reported {
                per_model,
                helpers,
                said,
                turns,
                cost,
            })
    }

    fn model_usage(r: &Reading, canonical: Option<&str>) -> Value {
        let mut v = json!({
            "inputTokens": r.input, "outputTokens": r.output,
            "cacheReadInputTokens": r.cache_read, "cacheCreationInputTokens": r.cache_write,
            "webSearchRequests": 0, "costUSD": 0.5, "contextWindow": 200_000,
        });
        if let Some(c) = canonical {
            v["canonicalModel"] = json!(c);
        }
        v
    }

    impl Reported {
        /// The event, and what its `modelUsage` adds up to per model.
        fn event(&self, streamed: &BTreeMap<String, Sum>) -> (String, BTreeMap<String, Sum>) {
            let mut entries = serde_json::Map::new();
            let mut totals: BTreeMap<String, Sum> = BTreeMap::new();
            let mut put = |key: String, canonical: Option<&str>, model: &str, r: Reading| {
                entries.insert(key, model_usage(&r, canonical));
                // `modelUsage` does not split cache writes by lifetime.
                let r = Reading {
                    cache_write_1h: 0,
                    ..r
                };
                totals.entry(model.to_owned()).or_default().add(r.sum());
            };
            for (j, (model, s)) in streamed.iter().enumerate() {
                let (pct, extra, key) = self.per_model[j % self.per_model.len()];
                let s = s.clamped();
                let part = |n: u128, e: u64| clamp(n * u128::from(pct) / 100 + u128::from(e));
                let r = Reading {
                    input: part(s.input, extra.input),
                    output: part(s.output, extra.output),
                    cache_write: part(s.cache_write, extra.cache_write),
                    cache_write_1h: 0,
                    cache_read: part(s.cache_read, extra.cache_read),
                };
                let alias = format!("{model}[1m]");
                match key {
                    Key::Plain => put(model.clone(), None, model, r),
                    Key::Alias => put(alias, Some(model), model, r),
                    Key::EmptyCanonical => put(model.clone(), Some(""), model, r),
                    Key::Both => {
                        let half = r.scaled(50);
                        let rest = Reading {
                            input: r.input - half.input,
                            output: r.output - half.output,
                            cache_write: r.cache_write - half.cache_write,
                            cache_write_1h: 0,
                            cache_read: r.cache_read - half.cache_read,
                        };
                        put(alias, Some(model), model, half);
                        put(model.clone(), None, model, rest);
                    }
                }
            }
            for (model, r) in &self.helpers {
                put(model.clone(), None, model, *r);
            }
            let subtype = match self.said {
                Said::Subtype(s) => s,
                _ => "success",
            };
            let mut event = json!({
                "type": "result", "subtype": subtype,
                "is_error": matches!(self.said, Said::Subtype(_) | Said::IsError),
                "duration_ms": 1200, "num_turns": if self.said == Said::ZeroTurns { 0 } else { self.turns },
                "session_id": "s1", "total_cost_usd": self.cost,
                "usage": {"input_tokens": 1, "output_tokens": 1},
                "modelUsage": entries,
                "permission_denials": if self.said == Said::Denied {
                    json!([{"tool_name": "Edit", "tool_use_id": "toolu_d", "tool_input": {}}])
                } else {
                    json!([])
                },
            });
            if subtype == "success" {
                event["result"] = json!("Opened #3.\nDetails follow.");
            } else {
                event["errors"] = json!(["Reached the limit"]);
            }
            (event.to_string(), totals)
        }
    }

    /// Lines of a Claude Code stream that carry no usage.
    fn claude_noise() -> impl Strategy<Value = (String, bool)> {
        let events = prop_oneof![
            Just(json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "ok"}]}})),
            Just(json!({"type": "system", "subtype": "compact_boundary", "compact_metadata": {"trigger": "auto", "pre_tokens": 123_456}})),
            Just(json!({"type": "system", "subtype": "status", "status": "compacting"})),
            Just(json!({"type": "system", "subtype": "hook_response", "hook_name": "SessionStart"})),
            Just(json!({"type": "stream_event", "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Hel"}}})),
            Just(json!({"type": "tool_progress", "tool_use_id": "toolu_x", "elapsed_time_seconds": 3})),
            Just(json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "no id, no usage"}]}})),
        ]
        .prop_map(|v| (v.to_string(), false));
        prop_oneof![3 => events, 1 => chatter()]
    }

    /// A whole run: the init event, the steps, the noise, the result.
    #[derive(Debug, Clone)]
    struct ClaudeRun {
        init: Option<String>,
        steps: Vec<Step>,
        result: Option<Reported>,
        noise: Noise,
        exit: Exit,
    }

    fn claude_run() -> impl Strategy<Value = ClaudeRun> {
        (
            proptest::option::of(claude_model()),
            proptest::collection::vec(step(), 0..6),
            proptest::option::weighted(0.8, reported()),
            noise(claude_noise()),
            exit(),
        )
            .prop_map(|(init, steps, result, noise, exit)| ClaudeRun {
                init,
                steps,
                result,
                noise,
                exit,
            })
    }

    /// What reading a run must give.
    struct ClaudeWant {
        lines: Vec<String>,
        /// The streamed steps' last readings, summed per model.
        streamed: BTreeMap<String, Sum>,
        /// The result's `modelUsage`, summed per priced model.
        reported: Option<BTreeMap<String, Sum>>,
        dispatches: u64,
    }

    impl ClaudeRun {
        fn want(&self) -> ClaudeWant {
            let mut lines = Vec::new();
            if let Some(m) = &self.init {
                lines.push(
                    json!({"type": "system", "subtype": "init", "model": m, "session_id": "s1",
                           "cwd": "/w", "tools": ["Bash", "Task"], "claude_code_version": "2.0.0"})
                    .to_string(),
                );
            }
            let mut streamed: BTreeMap<String, Sum> = BTreeMap::new();
            let mut dispatches = 0;
            for (i, step) in self.steps.iter().enumerate() {
                lines.extend((0..step.events()).map(|k| step.line(i, k)));
                let model = step
                    .model
                    .clone()
                    .filter(|m| !m.is_empty())
                    .or_else(|| self.init.clone())
                    .unwrap_or_else(|| "unknown".to_owned());
                streamed.entry(model).or_default().add(step.last.sum());
                dispatches += step.dispatches() as u64;
            }
            let reported = self.result.as_ref().map(|r| {
                let (line, totals) = r.event(&streamed);
                lines.push(line);
                totals
            });
            // Noise goes after the init event: an init later in the
            // stream would change the model of the steps before it.
            let skip = usize::from(self.init.is_some());
            let mut rest = lines.split_off(skip);
            interleave(&mut rest, &self.noise);
            lines.extend(rest);
            ClaudeWant {
                lines,
                streamed,
                reported,
                dispatches,
            }
        }
    }

    // -----------------------------------------------------------------
    // Codex.

    /// One turn: what it adds to the thread's counts, and its items.
    #[derive(Debug, Clone)]
    struct Turn {
        input: u64,
        cached_pct: u64,
        write_pct: u64,
        output: u64,
        reasoning_pct: u64,
        items: Vec<u8>,
    }

    fn turn() -> impl Strategy<Value = Turn> {
        (
            tokens(),
            0u64..=100,
            0u64..=30,
            tokens(),
            0u64..=100,
            proptest::collection::vec(0u8..5, 0..4),
        )
            .prop_map(
                |(input, cached_pct, write_pct, output, reasoning_pct, items)| Turn {
                    input,
                    cached_pct,
                    write_pct,
                    output,
                    reasoning_pct,
                    items,
                },
            )
    }

    #[derive(Debug, Clone)]
    enum Failing {
        TurnFailed(String),
        Error(String),
    }

    #[derive(Debug, Clone)]
    struct CodexRun {
        model: String,
        thread: bool,
        /// Newer builds report cache writes and reasoning tokens.
        newer: bool,
        turns: Vec<Turn>,
        failing: Option<Failing>,
        noise: Noise,
        exit: Exit,
    }

    fn codex_run() -> impl Strategy<Value = CodexRun> {
        (
            prop_oneof![
                4 => "gpt-5(\\.1)?-codex|o4-mini|o3",
                1 => Just(codex::UNKNOWN_MODEL.to_owned()),
            ],
            any::<bool>(),
            any::<bool>(),
            proptest::collection::vec(turn(), 0..5),
            proptest::option::weighted(
                0.25,
                prop_oneof![
                    "[a-z ]{1,30}".prop_map(Failing::TurnFailed),
                    "[a-z ]{1,30}".prop_map(Failing::Error),
                ],
            ),
            noise(chatter()),
            exit(),
        )
            .prop_map(
                |(model, thread, newer, turns, failing, noise, exit)| CodexRun {
                    model,
                    thread,
                    newer,
                    turns,
                    failing,
                    noise,
                    exit,
                },
            )
    }

    impl CodexRun {
        /// The stream's lines, and the thread's counts after the last
        /// turn as our usage record (`None`: nothing was spent).
        fn lines(&self) -> (Vec<String>, Option<ModelUsage>) {
            let mut lines = Vec::new();
            if self.thread {
                lines.push(json!({"type": "thread.started", "thread_id": "th_1"}).to_string());
            }
            let (mut input, mut cached, mut write, mut output, mut reasoning) =
                (0u128, 0u128, 0u128, 0u128, 0u128);
            for (t, turn) in self.turns.iter().enumerate() {
                lines.push(json!({"type": "turn.started"}).to_string());
                for (k, kind) in turn.items.iter().enumerate() {
                    let id = format!("item_{t}_{k}");
                    let item = match kind {
                        0 => {
                            json!({"id": id, "type": "agent_message", "text": "Opened #3.\nDone."})
                        }
                        1 => {
                            let started = json!({"id": id, "type": "command_execution", "command": "git push", "status": "in_progress", "aggregated_output": "", "exit_code": null});
                            lines
                                .push(json!({"type": "item.started", "item": started}).to_string());
                            json!({"id": id, "type": "command_execution", "command": "git push", "status": "completed", "aggregated_output": "ok", "exit_code": 0})
                        }
                        2 => json!({"id": id, "type": "reasoning", "text": "**Planning**"}),
                        3 => {
                            json!({"id": id, "type": "file_change", "changes": [{"path": "a.rs", "kind": "update"}], "status": "completed"})
                        }
                        _ => {
                            json!({"id": id, "type": "todo_list", "items": [{"text": "push", "completed": false}]})
                        }
                    };
                    lines.push(json!({"type": "item.completed", "item": item}).to_string());
                }
                input += u128::from(turn.input);
                cached += u128::from(percent(turn.input, turn.cached_pct));
                write += u128::from(percent(turn.input, turn.write_pct));
                output += u128::from(turn.output);
                reasoning += u128::from(percent(turn.output, turn.reasoning_pct));
                let mut usage = json!({
                    "input_tokens": clamp(input),
                    "cached_input_tokens": clamp(cached),
                    "output_tokens": clamp(output),
                });
                if self.newer {
                    usage["cache_write_input_tokens"] = json!(clamp(write));
                    usage["reasoning_output_tokens"] = json!(clamp(reasoning));
                }
                lines.push(json!({"type": "turn.completed", "usage": usage}).to_string());
            }
            match &self.failing {
                Some(Failing::TurnFailed(m)) => {
                    lines.push(json!({"type": "turn.failed", "error": {"message": m}}).to_string());
                }
                Some(Failing::Error(m)) => {
                    lines.push(json!({"type": "error", "message": m}).to_string());
                }
                None => {}
            }
            let usage = ModelUsage {
                model: self.model.clone(),
                tokens_in: clamp(input),
                tokens_out: clamp(output),
                cache_read_tokens: clamp(cached),
                cache_write_tokens: if self.newer { clamp(write) } else { 0 },
                cache_write_1h_tokens: 0,
            };
            let spent = usage
                != ModelUsage {
                    model: self.model.clone(),
                    ..ModelUsage::default()
                };
            interleave(&mut lines, &self.noise);
            (lines, spent.then_some(usage))
        }
    }

    // -----------------------------------------------------------------
    // Arbitrary and mangled lines, for both readers.

    /// Real events of both agents, before mangling.
    fn real_event() -> impl Strategy<Value = Value> {
        let reading_json = (reading(), any::<bool>()).prop_map(|(r, split)| r.usage(split));
        prop_oneof![
            claude_model().prop_map(|m| json!({"type": "system", "subtype": "init", "model": m, "session_id": "s1"})),
            ("msg_[0-2]", claude_model(), reading_json, proptest::sample::select(vec!["Task", "Agent", "Bash"]))
                .prop_map(|(id, m, usage, tool)| json!({
                    "type": "assistant",
                    "message": {"id": id, "model": m, "usage": usage,
                                "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": {}},
                                            {"type": "text", "text": "a\nb"}]},
                })),
            (
                said(),
                proptest::collection::btree_map(
                    "claude-[a-z]{1,3}(\\[1m\\])?",
                    (reading(), proptest::option::of(claude_model())),
                    0..3,
                ),
                text(),
                tokens(),
            )
                .prop_map(|(said, usage, message, turns)| {
                    let model_usage: serde_json::Map<String, Value> = usage
                        .iter()
                        .map(|(k, (r, c))| (k.clone(), model_usage(r, c.as_deref())))
                        .collect();
                    json!({
                        "type": "result", "subtype": match said { Said::Subtype(s) => s, _ => "success" },
                        "is_error": said == Said::IsError, "num_turns": turns, "result": message,
                        "errors": [message], "total_cost_usd": 1.5, "modelUsage": model_usage,
                        "permission_denials": [{"tool_name": "Edit"}, {}],
                    })
                }),
            text().prop_map(|t| json!({"type": "thread.started", "thread_id": t})),
            (tokens(), tokens(), tokens(), tokens()).prop_map(|(i, c, o, w)| json!({
                "type": "turn.completed",
                "usage": {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o,
                          "cache_write_input_tokens": w, "reasoning_output_tokens": o},
            })),
            text().prop_map(|m| json!({"type": "turn.failed", "error": {"message": m}})),
            text().prop_map(|m| json!({"type": "error", "message": m})),
            (text(), proptest::sample::select(vec!["agent_message", "command_execution", "reasoning"]))
                .prop_map(|(t, kind)| json!({"type": "item.completed",
                                            "item": {"id": "i", "type": kind, "text": t, "command": t}})),
        ]
    }

    /// What replaces a field: wrong types, huge and negative numbers,
    /// floats, weird strings, nothing.
    fn replacement() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            1 => Just(None),
            1 => ((u64::MAX - 3)..=u64::MAX).prop_map(|n| Some(json!(n))),
            1 => (i64::MIN..0).prop_map(|n| Some(json!(n))),
            1 => proptest::sample::select(vec![1e300, -1.5, 0.5, f64::MAX, -0.0])
                .prop_map(|f| Some(json!(f))),
            1 => weird().prop_map(|s| Some(json!(s))),
            1 => json_value().prop_map(Some),
        ]
    }

    /// Text of any script, with the awkward parts of Unicode: byte-order
    /// marks, zero-width and bidi controls, combining marks, joined
    /// emoji, the last code point, control characters.
    fn weird() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "\\PC{0,10}",
            "(?s).{0,10}",
            proptest::sample::select(vec![
                "\u{feff}",
                "\u{200b}",
                "\u{202e}",
                "e\u{301}",
                "👩‍👩‍👧",
                "\u{fffd}",
                "𝕏",
                "\u{10ffff}",
                "\0",
                "\u{7f}",
                "\\u0000",
            ])
            .prop_map(str::to_owned),
        ];
        proptest::collection::vec(piece, 0..5).prop_map(|p| p.concat())
    }

    /// JSON pointers to every field and element of `v`.
    fn pointers(v: &Value, at: &str, out: &mut Vec<String>) {
        let children: Vec<(String, &Value)> = match v {
            Value::Object(m) => m
                .iter()
                .map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v))
                .collect(),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, v)| (i.to_string(), v))
                .collect(),
            _ => Vec::new(),
        };
        for (key, child) in children {
            let p = format!("{at}/{key}");
            out.push(p.clone());
            pointers(child, &p, out);
        }
    }

    /// A real event with fields dropped or replaced, maybe cut short.
    #[derive(Debug, Clone)]
    struct Mangled {
        event: Value,
        edits: Vec<(proptest::sample::Index, Option<Value>)>,
        cut: Option<proptest::sample::Index>,
    }

    impl Mangled {
        fn line(&self) -> String {
            let mut v = self.event.clone();
            for (at, with) in &self.edits {
                let mut all = Vec::new();
                pointers(&v, "", &mut all);
                if all.is_empty() {
                    break;
                }
                let p = at.get(&all);
                match with {
                    Some(w) => *v.pointer_mut(p).expect("listed") = w.clone(),
                    None => {
                        let (parent, key) = p.rsplit_once('/').expect("a child");
                        match v.pointer_mut(parent).expect("listed") {
                            Value::Object(m) => {
                                m.shift_remove(&key.replace("~1", "/").replace("~0", "~"));
                            }
                            Value::Array(a) => {
                                a.remove(key.parse::<usize>().expect("an index"));
                            }
                            _ => unreachable!("a parent holds children"),
                        }
                    }
                }
            }
            let line = v.to_string();
            match &self.cut {
                Some(at) => {
                    let ends: Vec<usize> = line.char_indices().map(|(i, _)| i).collect();
                    line[..*at.get(&ends)].to_owned()
                }
                None => line,
            }
        }
    }

    fn any_line() -> impl Strategy<Value = String> {
        prop_oneof![
            1 => weird(),
            1 => json_value().prop_map(|v| v.to_string()),
            4 => (
                real_event(),
                proptest::collection::vec((any::<proptest::sample::Index>(), replacement()), 0..4),
                proptest::option::weighted(0.25, any::<proptest::sample::Index>()),
            )
                .prop_map(|(event, edits, cut)| Mangled { event, edits, cut }.line()),
        ]
    }

    fn any_run() -> impl Strategy<Value = RunOutcome> {
        (
            proptest::option::of(any::<i32>()),
            proptest::option::of(any::<i32>()),
            any::<bool>(),
            proptest::collection::vec(weird(), 0..3),
        )
            .prop_map(|(exit_code, signal, stalled, stderr_tail)| RunOutcome {
                exit_code,
                signal,
                stalled,
                stderr_tail,
                ..RunOutcome::default()
            })
    }

    fn of_type(line: &str, types: &[&str]) -> bool {
        serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|v| {
                v.get("type")
                    .and_then(Value::as_str)
                    .map(|t| types.contains(&t))
            })
            .unwrap_or(false)
    }

    fn read(
        reader: &mut dyn StreamReader,
        lines: &[String],
        run: &RunOutcome,
    ) -> (Vec<SkillEvent>, Verdict) {
        let mut events = Vec::new();
        for l in lines {
            events.extend(reader.line(l).events);
        }
        (events, reader.finish(run))
    }

    // -----------------------------------------------------------------
    // Codex's config.toml.

    /// Lines of a `config.toml` that name no top-level model.
    fn toml_filler() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ \t]{0,2}# \\PC{0,30}",
            ("[a-z_]{1,12}", "\\PC{0,20}")
                .prop_filter("not the model key", |(k, _)| k != "model")
                .prop_map(|(k, v)| format!("{k} = {v:?}")),
            "[ \t]{0,4}",
        ]
    }

    /// Text that looks like a `config.toml`, or does not.
    fn tomlish() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            toml_filler(),
            weird(),
            proptest::sample::select(vec![
                "model",
                "model=",
                "model = ",
                "\"",
                "'",
                "\"\"",
                "''",
                " #",
                "#",
                "[",
                "[profiles.x]",
                "\n",
                "=",
                "model = \"",
                "model = 'x",
            ])
            .prop_map(str::to_owned),
        ];
        proptest::collection::vec(piece, 0..12).prop_map(|p| p.concat())
    }

    proptest! {
        #![proptest_config(config())]

        /// Each `message.id` counts once, as its last reading; the growth
        /// journaled line by line adds up to that; the `result`'s
        /// `modelUsage` is the usage when there is one (the larger count
        /// kept where the steps saw more), the steps' sum when not.
        #[test]
        fn claude_usage_is_each_step_once_and_the_result_is_authoritative(run in claude_run()) {
            let want = run.want();
            let outcome = run.exit.outcome("claude: boom");
            let (events, verdict) = read(&mut ClaudeStream::default(), &want.lines, &outcome);

            let (journaled, only_usage) = summed(&events);
            prop_assert!(only_usage, "{events:?}");
            let streamed: BTreeMap<String, ModelUsage> = want
                .streamed
                .iter()
                .map(|(m, s)| (m.clone(), s.anthropic(m)))
                .collect();
            prop_assert_eq!(records(journaled), records(streamed.clone()));

            let (usage, undercount) = match &want.reported {
                None => (records(streamed), false),
                Some(reported) => {
                    let mut finals: BTreeMap<String, Sum> = reported.iter().map(|(m, r)| (m.clone(), r.clamped())).collect();
                    let mut undercount = false;
                    for (m, s) in &want.streamed {
                        let s = s.clamped();
                        let r = finals.entry(m.clone()).or_default();
                        undercount |= s.input > r.input || s.output > r.output
                            || s.cache_write > r.cache_write || s.cache_read > r.cache_read;
                        *r = r.max(s);
                    }
                    (records(finals.iter().map(|(m, f)| (m.clone(), f.anthropic(m))).collect()), undercount)
                }
            };
            prop_assert_eq!(&verdict.usage, &usage);
            prop_assert_eq!(
                verdict.notes.iter().any(|n| n.contains("count more tokens than the result's modelUsage")),
                undercount,
                "{:?}", verdict.notes
            );
            prop_assert_eq!(verdict.agents, want.dispatches);
            prop_assert_eq!(skipped_note(&verdict), not_json_note(&run.noise));

            let succeeded = run.exit == Exit::Clean
                && run.result.as_ref().is_some_and(|r| r.said == Said::Success);
            prop_assert_eq!(verdict.failure.is_none(), succeeded, "{:?}", verdict.failure);
            if let Some(f) = &verdict.failure {
                prop_assert!(f.starts_with("claude: "), "{f}");
            }
            match &run.result {
                None => {
                    let f = verdict.failure.as_deref().unwrap_or_default();
                    prop_assert!(f.contains("the stream ended without a result event"), "{f}");
                    prop_assert_eq!(verdict.agent_cost, None);
                }
                Some(r) => prop_assert_eq!(verdict.agent_cost, Some(r.cost)),
            }
        }

        /// `turn.completed` usage is cumulative: the growth journaled
        /// turn by turn adds up to the last turn's counts, which are the
        /// usage, cached (and cache-write) tokens inside `tokens_in`.
        #[test]
        fn codex_usage_is_the_last_cumulative_turn(run in codex_run()) {
            let (lines, want) = run.lines();
            let outcome = run.exit.outcome("codex: boom");
            let (events, verdict) = read(&mut CodexStream::new(run.model.clone()), &lines, &outcome);

            let (journaled, only_usage) = summed(&events);
            prop_assert!(only_usage, "{events:?}");
            prop_assert_eq!(records(journaled), want.clone().into_iter().collect::<Vec<_>>());
            prop_assert_eq!(&verdict.usage, &want.into_iter().collect::<Vec<_>>());
            for u in &verdict.usage {
                prop_assert!(u.cache_read_tokens <= u.tokens_in, "{u:?}");
                prop_assert_eq!(u.cache_write_1h_tokens, 0);
            }
            prop_assert_eq!(verdict.agent_cost, None, "Codex reports no cost");
            prop_assert_eq!(
                verdict.notes.iter().any(|n| n.contains("--agent-model")),
                run.model == codex::UNKNOWN_MODEL
            );
            prop_assert_eq!(skipped_note(&verdict), not_json_note(&run.noise));

            let succeeded = run.exit == Exit::Clean && run.failing.is_none() && !run.turns.is_empty();
            prop_assert_eq!(verdict.failure.is_none(), succeeded, "{:?}", verdict.failure);
            if let Some(f) = &verdict.failure {
                prop_assert!(f.starts_with("codex: "), "{f}");
                match &run.failing {
                    Some(Failing::TurnFailed(m)) => prop_assert!(f.contains(&format!("turn.failed: {m}")), "{f}"),
                    Some(Failing::Error(m)) => prop_assert!(f.contains(&format!("error: {m}")), "{f}"),
                    None if run.turns.is_empty() => prop_assert!(f.contains("without turn.completed"), "{f}"),
                    None => {}
                }
            }
        }

        /// Whatever the lines hold — any text, any JSON, real events of
        /// either agent with fields dropped, retyped, pushed to
        /// `u64::MAX` or cut short — both readers read every line and
        /// finish without panicking (a debug build panics on overflow);
        /// the usage they finish with is never less than what they
        /// journaled; and the verdict fails what did not succeed.
        #[test]
        fn any_lines_are_read_without_a_panic_or_an_overflow(
            lines in proptest::collection::vec(any_line(), 0..16),
            run in any_run(),
        ) {
            let ended_badly = run.stalled || run.exit_code != Some(0);

            let (events, verdict) = read(&mut ClaudeStream::default(), &lines, &run);
            let (journaled, only_usage) = summed(&events);
            prop_assert!(only_usage);
            let has_result = lines.iter().any(|l| of_type(l, &["result"]));
            if has_result {
                for j in journaled.values() {
                    let v = verdict.usage.iter().find(|u| u.model == j.model);
                    prop_assert!(v.is_some_and(|v| at_most(j, v)), "journaled {j:?}, finished with {:?}", verdict.usage);
                }
            } else {
                prop_assert_eq!(&verdict.usage, &records(journaled));
                prop_assert!(verdict.failure.is_some());
            }
            if ended_badly {
                prop_assert!(verdict.failure.is_some());
            }

            let (events, verdict) = read(&mut CodexStream::new("gpt-5-codex"), &lines, &run);
            let (journaled, only_usage) = summed(&events);
            prop_assert!(only_usage);
            prop_assert_eq!(&verdict.usage, &records(journaled));
            let completed = lines.iter().any(|l| of_type(l, &["turn.completed"]));
            let failed = lines.iter().any(|l| of_type(l, &["turn.failed", "error"]));
            if ended_badly || failed || !completed {
                prop_assert!(verdict.failure.is_some());
            }
        }

        /// `model = "…"` at the top level is the model, however it is
        /// quoted, spaced or commented, whatever lines come before it.
        #[test]
        fn codex_config_names_its_top_level_model(
            before in proptest::collection::vec(toml_filler(), 0..5),
            name in "[A-Za-z0-9._:/-]{1,30}",
            quote in proptest::sample::select(vec!['"', '\'']),
            (lead, around, trail) in ("[ \t]{0,2}", "[ \t]{0,2}", "[ \t]{0,2}"),
            comment in proptest::option::of("[ \t]{0,2}#\\PC{0,20}"),
            table in proptest::option::of("\\[[a-z.]{1,12}\\]\nmodel = \"o4-mini\""),
            table_first in any::<bool>(),
        ) {
            let model = format!(
                "{lead}model{around}={around}{quote}{name}{quote}{trail}{}",
                comment.unwrap_or_default()
            );
            let mut lines = before;
            let table_first = table_first && table.is_some();
            if table_first {
                lines.extend(table.clone());
            }
            lines.push(model);
            if !table_first {
                lines.extend(table);
            }
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("config.toml");
            std::fs::write(&path, lines.join("\n")).unwrap();
            let want = (!table_first).then_some(name);
            prop_assert_eq!(codex::config_model(&path), want, "{}", lines.join("\n"));
        }

        /// Any file is a model or none, never a panic; a model read is
        /// never empty and never spans lines.
        #[test]
        fn any_config_is_a_model_or_none(text in tomlish(), bytes in messy_bytes()) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("config.toml");
            for content in [text.into_bytes(), bytes] {
                std::fs::write(&path, &content).unwrap();
                if let Some(m) = codex::config_model(&path) {
                    prop_assert!(!m.is_empty() && !m.contains('\n'), "{m:?}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------
// Agent prompt templates.

mod prompt_templates {
    use super::journal_file::request;
    use super::*;
    use sdd_loop::agent::prompt::{PLACEHOLDERS, PromptError, Template};
    use sdd_loop::state::paths::Skill;
    use sdd_loop::state::protocol::SkillRequest;
    use std::path::Path;

    const FILE: &str = "/w/.sdd/loop/exchange/request.json";

    fn known() -> impl Strategy<Value = &'static str> {
        proptest::sample::select(PLACEHOLDERS.iter().map(|(n, _)| *n).collect::<Vec<_>>())
    }

    fn placeholder() -> impl Strategy<Value = String> {
        ("[ \t]{0,2}", known(), "[ \t]{0,2}").prop_map(|(a, n, b)| format!("{{{{{a}{n}{b}}}}}"))
    }

    /// Pieces that make the parser's cases meet: braces alone and in
    /// runs, known and unknown names, line breaks, any text.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            "\\PC{0,20}",
            proptest::sample::select(vec!["{{", "}}", "{", "}", "{{{", "}}}", "\n", " "])
                .prop_map(str::to_owned),
            placeholder(),
            "[a-z_ ]{0,12}".prop_map(|n| format!("{{{{{n}}}}}")),
        ]
    }

    /// Brace-free text: what lies between placeholders.
    fn literal() -> impl Strategy<Value = String> {
        "[^{}\\p{Cc}]{0,30}|\n"
    }

    /// A request whose texts hold no braces, so a brace in a prompt can
    /// only come from the template.
    fn plain_request() -> impl Strategy<Value = SkillRequest> {
        request().prop_map(|mut r| {
            for i in &mut r.issues {
                i.title.retain(|c| c != '{' && c != '}');
            }
            r
        })
    }

    fn lines(text: &str) -> usize {
        text.matches('\n').count() + 1
    }

    proptest! {
        #![proptest_config(config())]

        /// Any text is a template or an error naming the line and the
        /// fix; a template renders with any request, every placeholder
        /// filled (no `{{` is left for the agent to see).
        #[test]
        fn any_text_is_a_template_or_an_error(
            pieces in proptest::collection::vec(piece(), 0..12),
            request in plain_request(),
        ) {
            let text = pieces.concat();
            match Template::parse(Path::new("p.md"), text.clone()) {
                Ok(t) => {
                    let prompt = t.render(&request, Path::new(FILE));
                    prop_assert!(!prompt.contains("{{"), "{text:?} -> {prompt:?}");
                }
                Err(e) => {
                    match &e {
                        PromptError::Unknown { line, name, .. } => {
                            prop_assert!(!PLACEHOLDERS.iter().any(|(k, _)| k == name), "{name}");
                            prop_assert!((1..=lines(&text)).contains(line));
                        }
                        PromptError::Unclosed { line, .. } => {
                            prop_assert!((1..=lines(&text)).contains(line));
                        }
                        PromptError::Read { .. } => prop_assert!(false, "{e}"),
                    }
                    prop_assert!(e.to_string().starts_with("--agent-prompt p.md:"), "{e}");
                    prop_assert!(e.help().contains("{{issues}}"));
                }
            }
        }

        /// Rendering never panics, whatever the request holds.
        #[test]
        fn any_request_renders(
            pieces in proptest::collection::vec(prop_oneof![literal(), placeholder()], 0..8),
            request in request(),
        ) {
            let t = Template::parse(Path::new("p.md"), pieces.concat()).unwrap();
            let _ = t.render(&request, Path::new(FILE));
            for skill in [Skill::Work, Skill::Review] {
                let _ = Template::built_in(skill).render(&request, Path::new(FILE));
            }
        }

        /// A text without placeholders renders to itself, braces and all.
        #[test]
        fn a_template_without_placeholders_renders_to_itself(
            pieces in proptest::collection::vec(
                prop_oneof!["\\PC{0,20}", proptest::sample::select(vec!["{", "}", "}}", "\n"]).prop_map(str::to_owned)],
                0..10,
            ),
            request in request(),
        ) {
            let mut text = pieces.concat();
            while text.contains("{{") {
                text = text.replace("{{", "{ {");
            }
            let t = Template::parse(Path::new("p.md"), text.clone()).unwrap();
            prop_assert_eq!(t.render(&request, Path::new(FILE)), text);
        }

        /// A template renders piece by piece: its text between
        /// placeholders kept as written, each placeholder (spaced or
        /// not) what it renders to alone; the built-ins fill every one.
        #[test]
        fn a_template_renders_piece_by_piece(
            pieces in proptest::collection::vec((literal(), placeholder()), 0..6),
            tail in literal(),
            request in plain_request(),
        ) {
            let text: String = pieces.iter().map(|(l, p)| format!("{l}{p}")).chain([tail.clone()]).collect();
            let t = Template::parse(Path::new("p.md"), text).unwrap();
            let alone = |p: &str| {
                Template::parse(Path::new("p.md"), p.to_owned()).unwrap().render(&request, Path::new(FILE))
            };
            let want: String = pieces.iter().map(|(l, p)| format!("{l}{}", alone(p))).chain([tail]).collect();
            prop_assert_eq!(t.render(&request, Path::new(FILE)), want);
            for skill in [Skill::Work, Skill::Review] {
                let prompt = Template::built_in(skill).render(&request, Path::new(FILE));
                prop_assert!(!prompt.contains("{{"), "{prompt}");
            }
        }
    }
}

/// Deep nesting must end in an error, not a stack overflow, in every
/// parser an outsider can feed.
#[test]
fn deeply_nested_input_is_an_error() {
    use sdd_loop::agent::StreamReader;
    use sdd_loop::{
        rules::gates::Script, state::budget::Budget, state::history, state::lock::LockRecord,
        world::tracker,
    };
    use std::path::Path;
    let json = "[".repeat(100_000);
    assert!(history::parse_line(json.as_bytes()).is_err());
    assert!(Budget::from_slice(Path::new("b.json"), json.as_bytes()).is_err());
    assert!(LockRecord::from_slice(json.as_bytes()).is_err());
    assert!(serde_json::from_str::<sdd_loop::state::protocol::SkillResult>(&json).is_err());
    assert!(tracker::parse_issues("u", &json).is_err());
    let mut claude = sdd_loop::agent::claude::ClaudeStream::default();
    let mut codex = sdd_loop::agent::codex::CodexStream::new("m");
    for reader in [&mut claude as &mut dyn StreamReader, &mut codex] {
        let read = reader.line(&json);
        assert!(read.events.is_empty());
        assert_eq!(
            read.echo,
            [json.as_str()],
            "a line that is not JSON is echoed"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("work.inflight.json");
    std::fs::write(&path, &json).unwrap();
    assert!(sdd_loop::state::journal::Journal::load(&path).is_err());
    let transcript = dir.path().join("session.jsonl");
    std::fs::write(&transcript, &json).unwrap();
    let tick = sdd_loop::transcript::TickId {
        iteration: 1,
        began_at: "2026-11-03T10:00:00Z".into(),
    };
    let spend = sdd_loop::transcript::count_spend(
        &transcript,
        &sdd_loop::transcript::Ledger::default(),
        &tick,
        None,
    )
    .unwrap()
    .spend;
    assert_eq!(spend.skipped.malformed, 1);
    for open in ["[", "{a: ", "- "] {
        let yaml = format!("- gate: {}", open.repeat(100_000));
        assert!(
            Script::parse(Path::new("answers.yaml"), &yaml).is_err(),
            "{open}"
        );
    }
}

/// Budget and history files edited by hand: a counter made huge
/// (`u64::MAX`), negative, a string, a float, `null`, or removed. Reading
/// never panics, never yields a counter the engine could wrap by adding
/// to it, never rewrites the file — and a refusal names the field.
mod hand_edited_state {
    use super::*;
    use sdd_loop::state::budget::{Budget, MAX_COUNT};
    use sdd_loop::state::history;
    use serde_json::{Value, json};

    const BUDGET: &str = r##"{"started_at":"2026-05-09T14:00:00Z","max_iterations":5,"max_prs":20,"max_minutes":60,"max_dollars":25.0,"iterations_used":2,"prs_touched":["#3"],"comments_pushed":1,"merges_attempted":0,"minutes_elapsed":12,"tokens_in":1000,"tokens_out":100,"agents_dispatched":2,"dollars_estimate":0.5,"rate_table_source":"built-in default","qmd_failures_consecutive":0,"tokens_by_model":{"claude-sonnet-4-5":{"tokens_in":1000,"tokens_out":100}},"seconds_elapsed":720}"##;

    const LINE: &str = r##"{"iteration":2,"skill":"work","started_at":"2026-05-09T14:10:00Z","ended_at":"2026-05-09T14:12:00Z","outcome":"ok","prs_touched_this_iter":["#3"],"agents_dispatched_this_iter":1,"tokens_in_this_iter":500,"tokens_out_this_iter":50,"dollars_this_iter":0.25,"comments_pushed_this_iter":1,"merges_attempted_this_iter":0,"budget_snapshot":{"iterations_used":2,"prs_touched_total":1,"minutes_elapsed":12,"tokens_in":1000,"tokens_out":100,"dollars_estimate":0.5,"qmd_failures_consecutive":0,"comments_pushed":1,"merges_attempted":0,"agents_dispatched":2,"max_iterations":5,"max_prs":20,"max_minutes":60,"max_dollars":25.0,"run_started_at":"2026-05-09T14:00:00Z"},"tracked_prs":[],"active_worktrees":[],"gates":[],"stop_conditions_fired":[],"lock_held":true}"##;

    const BUDGET_FIELDS: [&str; 18] = [
        "/max_iterations",
        "/max_prs",
        "/max_minutes",
        "/max_dollars",
        "/iterations_used",
        "/comments_pushed",
        "/merges_attempted",
        "/minutes_elapsed",
        "/tokens_in",
        "/tokens_out",
        "/agents_dispatched",
        "/dollars_estimate",
        "/qmd_failures_consecutive",
        "/seconds_elapsed",
        "/tokens_by_model/claude-sonnet-4-5/tokens_in",
        "/prs_touched",
        "/started_at",
        "/rate_table_source",
    ];

    const LINE_FIELDS: [&str; 14] = [
        "/iteration",
        "/tokens_in_this_iter",
        "/tokens_out_this_iter",
        "/dollars_this_iter",
        "/agents_dispatched_this_iter",
        "/comments_pushed_this_iter",
        "/budget_snapshot/iterations_used",
        "/budget_snapshot/tokens_in",
        "/budget_snapshot/dollars_estimate",
        "/budget_snapshot/max_iterations",
        "/budget_snapshot/max_dollars",
        "/budget_snapshot/seconds_elapsed",
        "/budget_snapshot/prs_touched_total",
        "/budget_snapshot/comments_pushed",
    ];

    /// What a hand replaces a number with (`None`: the field removed).
    fn edit() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            Just(None),
            Just(Some(Value::Null)),
            Just(Some(json!(u64::MAX))),
            (MAX_COUNT + 1..=u64::MAX).prop_map(|n| Some(json!(n))),
            (0..=MAX_COUNT).prop_map(|n| Some(json!(n))),
            (i64::MIN..0).prop_map(|n| Some(json!(n))),
            proptest::sample::select(vec![0.5, 1e300, -1.5, 2.0, 1.8e19])
                .prop_map(|f| Some(json!(f))),
            "[0-9]{1,25}".prop_map(|s| Some(json!(s))),
            "-?[0-9]{1,3}\\.[0-9]".prop_map(|s| Some(json!(s))),
        ]
    }

    fn edited(base: &str, pointer: &str, with: Option<Value>) -> String {
        let mut v: Value = serde_json::from_str(base).unwrap();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let object = v.pointer_mut(parent).unwrap().as_object_mut().unwrap();
        match with {
            Some(x) => {
                object.insert(key.to_owned(), x);
            }
            None => {
                object.remove(key);
            }
        }
        v.to_string()
    }

    fn counts_in_range(v: &Value) -> bool {
        sdd_loop::state::budget::count_above_max(v).is_none()
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn a_hand_edited_budget_is_refused_by_name_or_read_in_range(
            field in proptest::sample::select(BUDGET_FIELDS.to_vec()),
            with in edit(),
            torn in proptest::option::of(0usize..400),
        ) {
            let mut text = edited(BUDGET, field, with);
            if let Some(cut) = torn {
                let cut = cut.min(text.len());
                text.truncate(text.floor_char_boundary(cut));
            }
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("work.budget.json");
            std::fs::write(&path, &text).unwrap();
            let read = Budget::load(&path);
            prop_assert_eq!(std::fs::read_to_string(&path).unwrap(), text.clone(), "never rewritten");
            match read {
                Ok(Some(b)) => {
                    let v = serde_json::to_value(&b).unwrap();
                    prop_assert!(counts_in_range(&v), "{v}");
                    prop_assert!(b.iterations_used.saturating_add(1) > b.iterations_used);
                    prop_assert!(b.max_dollars >= 0.0 && b.dollars_estimate >= 0.0);
                    // The next iteration's number, as a tick computes it.
                    prop_assert!(b.iterations_used < MAX_COUNT);
                }
                Ok(None) => prop_assert!(false, "a file that exists is read"),
                Err(e) => {
                    let message = e.to_string();
                    prop_assert!(message.contains("work.budget.json"), "{message}");
                    let top = field.trim_start_matches('/').split('/').next().unwrap();
                    let nested = field.matches('/').count() > 1;
                    prop_assert!(
                        torn.is_some() || nested || message.contains(top),
                        "the refusal names {top}: {message}"
                    );
                }
            }
        }

        #[test]
        fn a_hand_edited_history_line_is_refused_by_name_or_read_in_range(
            field in proptest::sample::select(LINE_FIELDS.to_vec()),
            with in edit(),
            last in any::<bool>(),
        ) {
            let line = edited(LINE, field, with);
            let text = if last {
                format!("{LINE}\n{line}\n")
            } else {
                format!("{line}\n{LINE}\n")
            };
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("work.history.jsonl");
            std::fs::write(&path, &text).unwrap();
            let tail = history::read_tail(&path, 2);
            let all = history::read_all(&path);
            prop_assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "never rewritten");
            for read in [tail, all] {
                match read {
                    Ok(t) => {
                        for l in &t.lines {
                            let v = serde_json::to_value(&l.line).unwrap();
                            prop_assert!(counts_in_range(&v), "{v}");
                            let snap = l.line.snapshot();
                            prop_assert!(snap.iterations_used.unwrap_or(0) < MAX_COUNT + 1);
                            let budget: Budget = serde_json::from_str(BUDGET).unwrap();
                            let r = sdd_loop::state::reconcile::reconcile(Some(budget), Some(&l.line), false);
                            if let Some(b) = r.budget {
                                prop_assert!(b.iterations_used <= MAX_COUNT);
                                prop_assert!(b.dollars_estimate >= 0.0);
                            }
                        }
                    }
                    Err(e) => {
                        let message = e.to_string();
                        prop_assert!(message.contains(field), "the refusal names {field}: {message}");
                    }
                }
            }
        }
    }
}
