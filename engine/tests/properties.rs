//! Property tests for every parser an outsider can feed the engine: a
//! history line (and a history file's torn tail), `budget.json`, the lock
//! record, the CLAUDE.md rate and redaction tables, the `--answers` file,
//! the skill's result and events, and the tracker's JSON — plus the
//! redactor's promise that no planted secret survives.
//!
//! Two invariants throughout: arbitrary input gives an error value, never a
//! panic; and what the engine writes, it reads back unchanged (valid values
//! are generated, serialised, parsed and compared). The journal, exchange
//! and transcript parsers are left out here while their formats change.
//!
//! Each property runs 256 cases by default; failures shrink to a minimal
//! input. For a longer search:
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
