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
//! interrupted-iteration journal, the exchange's events file, and Claude
//! Code transcripts (each response counted once, every other line a
//! counted skip). The scenario harness's case files have their own
//! properties (`harness/tests/properties.rs`).
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
use sdd_loop::redact::Redactor;

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

fn count() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..100, any::<u64>()]
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
    use sdd_loop::budget::{ModelTokens, RunStop};
    use sdd_loop::history::{
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
    use sdd_loop::budget::{Budget, CeilingFlags, Ceilings, ModelTokens, RunStop};
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
    use sdd_loop::lock::LockRecord;

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
    use sdd_loop::claude_md::ClaudeMd;
    use sdd_loop::rates::{Rate, RateSource, RateTable};
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
            let _ = sdd_loop::redact::Redactor::from_claude_md(&md);
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
                sdd_loop::redact::Redactor::from_claude_md(&ClaudeMd::parse(Path::new("CLAUDE.md"), &text))
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
    use sdd_loop::gates::{GateName, Script, ScriptedAnswer};
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
    use sdd_loop::protocol::{SkillEvent, SkillResult};
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
    use sdd_loop::backlog::Issue;
    use sdd_loop::history::PrState;
    use sdd_loop::tracker::{self, Pull, ReviewComment};
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
    use sdd_loop::journal::{Driver, Journal, SkillProcess};
    use sdd_loop::paths::Skill;
    use sdd_loop::protocol::{Criteria, IssueAssignment, PrAssignment, SkillRequest};
    use sdd_loop::report::Shown;
    use std::path::PathBuf;

    fn request() -> impl Strategy<Value = SkillRequest> {
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
    use sdd_loop::exchange::{Exchange, fold_events};
    use sdd_loop::protocol::SkillEvent;

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
    use sdd_loop::transcript::{self, TokenTotals, Window, read_spend};
    use serde_json::json;
    use std::collections::BTreeMap;
    use std::path::Path;

    const FROM: &str = "2026-11-03T10:00:00Z";
    /// The window is one hour; responses start up to an hour either side.
    const WINDOW_SECS: i64 = 3600;

    fn window() -> Window {
        let from: Timestamp = FROM.parse().unwrap();
        Window {
            from,
            to: from + SignedDuration::from_secs(WINDOW_SECS),
        }
    }

    fn at(offset: i64) -> String {
        (window().from + SignedDuration::from_secs(offset)).to_string()
    }

    /// One API response as Claude Code writes it: one entry per streamed
    /// content block, each a usage snapshot, the last one final.
    #[derive(Debug, Clone)]
    struct Response {
        model: String,
        request_id: Option<String>,
        /// Seconds from the window's start to the first entry.
        offset: i64,
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
            -WINDOW_SECS..2 * WINDOW_SECS,
            proptest::collection::vec((tokens(), tokens(), tokens(), tokens()), 1..4),
        )
            .prop_map(|(model, request_id, offset, entries)| Response {
                model,
                request_id,
                offset,
                entries,
            })
    }

    fn entry(id: usize, r: &Response, k: usize) -> String {
        let (input, output, writes, reads) = r.entries[k];
        let mut v = json!({
            "type": "assistant",
            "timestamp": at(r.offset + k as i64),
            "message": {
                "id": format!("msg_{id}"),
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

    /// Lines around the responses: other entry types, junk, blanks.
    fn noise() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(json!({"type": "user", "timestamp": FROM, "message": {"role": "user", "content": "go"}}).to_string()),
            Just(json!({"type": "summary", "summary": "…"}).to_string()),
            Just(json!({"type": "assistant", "timestamp": FROM, "message": {"id": "msg_x", "model": transcript::SYNTHETIC_MODEL, "usage": {"input_tokens": 5}}}).to_string()),
            Just(json!({"type": "assistant", "timestamp": FROM}).to_string()),
            Just("{\"type\": \"assist".to_owned()),
            Just("   ".to_owned()),
            json_value().prop_map(|v| v.to_string()),
            "\\PC{1,40}",
        ]
    }

    fn non_blank_lines(bytes: &[u8]) -> u64 {
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty())
            .count() as u64
    }

    fn write(dir: &tempfile::TempDir, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.path().join("session.jsonl");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    proptest! {
        #![proptest_config(config())]

        /// Each response counts once, with its final usage, when it first
        /// appears inside the window; every other line is a counted skip.
        #[test]
        fn spend_is_the_final_usage_of_each_response_in_the_window(
            responses in proptest::collection::vec(response(), 0..8),
            noise in proptest::collection::vec((noise(), any::<proptest::sample::Index>()), 0..6),
        ) {
            let mut lines: Vec<String> = Vec::new();
            let mut want: BTreeMap<String, TokenTotals> = BTreeMap::new();
            let (mut counted, mut streamed, mut outside) = (0, 0, 0);
            for (id, r) in responses.iter().enumerate() {
                lines.extend((0..r.entries.len()).map(|k| entry(id, r, k)));
                if (0..=WINDOW_SECS).contains(&r.offset) {
                    let &(input, output, writes, reads) = r.entries.last().unwrap();
                    let t = want.entry(r.model.clone()).or_default();
                    t.input += input;
                    t.output += output;
                    t.cache_creation += writes;
                    t.cache_read += reads;
                    counted += 1;
                    streamed += r.entries.len() as u64 - 1;
                } else {
                    outside += r.entries.len() as u64;
                }
            }
            for (line, at) in &noise {
                lines.insert(at.index(lines.len() + 1), line.clone());
            }
            let bytes = lines.join("\n").into_bytes();
            let dir = tempfile::tempdir().unwrap();
            let spend = read_spend(&write(&dir, &bytes), window()).unwrap();
            prop_assert_eq!(&spend.by_model, &want);
            prop_assert_eq!(spend.responses, counted);
            prop_assert_eq!(spend.skipped.streamed, streamed);
            prop_assert!(spend.skipped.outside_window >= outside);
            let s = spend.skipped;
            prop_assert_eq!(
                spend.responses + s.malformed + s.foreign + s.other_entries + s.incomplete
                    + s.synthetic + s.outside_window + s.streamed + s.replayed,
                non_blank_lines(&bytes),
            );
        }

        /// Nothing in a transcript is fatal: whatever it holds is read,
        /// every non-blank line counted once.
        #[test]
        fn any_transcript_is_read_and_every_line_accounted_for(
            bytes in messy_bytes(),
            lines in proptest::collection::vec(noise(), 0..8),
        ) {
            let dir = tempfile::tempdir().unwrap();
            for bytes in [bytes, lines.join("\n").into_bytes()] {
                let spend = read_spend(&write(&dir, &bytes), window()).unwrap();
                let s = spend.skipped;
                prop_assert_eq!(
                    spend.responses + s.malformed + s.foreign + s.other_entries + s.incomplete
                        + s.synthetic + s.outside_window + s.streamed + s.replayed,
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
        let err = read_spend(Path::new("/nonexistent/s.jsonl"), window()).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/s.jsonl"), "{err}");
    }
}

/// Deep nesting must end in an error, not a stack overflow, in every
/// parser an outsider can feed.
#[test]
fn deeply_nested_input_is_an_error() {
    use sdd_loop::{budget::Budget, gates::Script, history, lock::LockRecord, tracker};
    use std::path::Path;
    let json = "[".repeat(100_000);
    assert!(history::parse_line(json.as_bytes()).is_err());
    assert!(Budget::from_slice(Path::new("b.json"), json.as_bytes()).is_err());
    assert!(LockRecord::from_slice(json.as_bytes()).is_err());
    assert!(serde_json::from_str::<sdd_loop::protocol::SkillResult>(&json).is_err());
    assert!(tracker::parse_issues("u", &json).is_err());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("work.inflight.json");
    std::fs::write(&path, &json).unwrap();
    assert!(sdd_loop::journal::Journal::load(&path).is_err());
    let transcript = dir.path().join("session.jsonl");
    std::fs::write(&transcript, &json).unwrap();
    let window = sdd_loop::transcript::Window {
        from: jiff::Timestamp::UNIX_EPOCH,
        to: jiff::Timestamp::MAX,
    };
    let spend = sdd_loop::transcript::read_spend(&transcript, window).unwrap();
    assert_eq!(spend.skipped.malformed, 1);
    for open in ["[", "{a: ", "- "] {
        let yaml = format!("- gate: {}", open.repeat(100_000));
        assert!(
            Script::parse(Path::new("answers.yaml"), &yaml).is_err(),
            "{open}"
        );
    }
}
