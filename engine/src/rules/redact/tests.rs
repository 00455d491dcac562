//! Unit tests of `redact.rs`.

use super::*;
use std::path::Path;

fn with_patterns(md: &str) -> Redactor {
    Redactor::from_claude_md(&ClaudeMd::parse(Path::new("CLAUDE.md"), md)).unwrap()
}

fn r() -> Redactor {
    Redactor::default()
}

const GHP: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

#[test]
fn table_with_replacements() {
    let r = with_patterns(
        "### SDD Configuration\n#### Loop Logging\n| Pattern | Replacement |\n|---|---|\n| `tok_[A-Za-z0-9]+` | [TOKEN] |\n| `acme-\\d+` | |\n",
    );
    assert_eq!(r.project_patterns(), 2);
    assert_eq!(
        r.apply("Issue #4 from acme-991 uses tok_abc123 and acme-2"),
        "Issue #4 from [REDACTED] uses [TOKEN] and [REDACTED]"
    );
}

#[test]
fn bullet_list_patterns() {
    let r =
        with_patterns("### SDD Configuration\n### Loop Logging\n- `secret-[a-z]+`\n- hunter2\n");
    assert_eq!(r.apply("secret-foo hunter2 ok"), "[REDACTED] [REDACTED] ok");
}

#[test]
fn replacement_is_literal() {
    let r = with_patterns(
        "### SDD Configuration\n### Loop Logging\n| Pattern | Replacement |\n|---|---|\n| (x) | $1-gone |\n",
    );
    assert_eq!(r.apply("x"), "$1-gone");
}

#[test]
fn no_block_still_redacts_the_built_in_shapes() {
    let r = with_patterns("# nothing\n");
    assert_eq!(r.project_patterns(), 0);
    assert_eq!(
        r.apply(&format!("root cause: push failed with {GHP}")),
        "root cause: push failed with [REDACTED:github-token]"
    );
    assert_eq!(r.apply("ghp_abc"), "ghp_abc");
}

#[test]
fn project_patterns_add_to_the_defaults_and_run_after_them() {
    // A project pattern for the same token shape does not replace the
    // built-in rule; a pattern that could break a token's shape (`0123`)
    // runs too late to let the rest of the token through.
    let r = with_patterns(
        "### SDD Configuration\n### Loop Logging\n| Pattern | Replacement |\n|---|---|\n| `ghp_[A-Za-z0-9]{36}` | [GITHUB-TOKEN] |\n| `0123` | [N] |\n",
    );
    assert_eq!(
        r.apply(&format!("{GHP} 0123")),
        "[REDACTED:github-token] [N]"
    );
}

#[test]
fn bad_pattern_names_file_and_line() {
    let md = ClaudeMd::parse(
        Path::new("CLAUDE.md"),
        "### SDD Configuration\n### Loop Logging\n- `unclosed(`\n",
    );
    let err = Redactor::from_claude_md(&md).unwrap_err();
    assert_eq!(err.line, 3);
    assert!(
            err.to_string().starts_with(
                "CLAUDE.md:3: redaction pattern `unclosed(` cannot be used: it is not a valid regular expression"
            ),
            "{err}"
        );
}

#[test]
fn pattern_matching_empty_text_is_refused() {
    let md = ClaudeMd::parse(
        Path::new("CLAUDE.md"),
        "### SDD Configuration\n### Loop Logging\n- `x`\n- `a*`\n",
    );
    let err = Redactor::from_claude_md(&md).unwrap_err();
    assert_eq!((err.line, err.pattern.as_str()), (4, "a*"));
    assert!(
        err.to_string()
            .contains("`a*` cannot be used: it matches the empty text"),
        "{err}"
    );
}

#[test]
fn github_tokens() {
    for prefix in ["ghp", "gho", "ghu", "ghs", "ghr"] {
        let token = format!("{prefix}_{}", "aB3".repeat(12));
        assert_eq!(
            r().apply(&format!("a {token} b")),
            "a [REDACTED:github-token] b"
        );
    }
    // Glued to other text, and longer than 36: still whole.
    assert_eq!(
        r().apply(&format!("token={GHP}XYZ.")),
        "token=[REDACTED:github-token]."
    );
    let pat = format!("github_pat_{}_{}", "A1b2C3d4E5f6G7h8I9j0K1", "z".repeat(59));
    assert_eq!(r().apply(&pat), "[REDACTED:github-pat]");
}

#[test]
fn github_near_misses_are_kept() {
    for text in [
        format!("ghp_{}", "a".repeat(35)),
        format!("ghx_{}", "a".repeat(36)),
        format!("ghp-{}", "a".repeat(36)),
        "github_pat_short".to_owned(),
        "see ghp_ tokens in the docs".to_owned(),
    ] {
        assert_eq!(r().apply(&text), text);
    }
}

#[test]
fn anthropic_and_openai_keys() {
    let ant = format!("sk-ant-api03-{}AA", "x_Y-z".repeat(19));
    assert_eq!(
        r().apply(&format!("key: {ant}\n")),
        "key: [REDACTED:anthropic-key]\n"
    );
    let legacy = format!("sk-{}", "Ab1".repeat(16));
    let project = format!("sk-proj-{}", "Ab1_-".repeat(20));
    let service = format!("sk-svcacct-{}", "Q9".repeat(30));
    for key in [legacy, project, service] {
        assert_eq!(
            r().apply(&format!("OPENAI=\"{key}\"")),
            "OPENAI=\"[REDACTED:openai-key]\""
        );
    }
}

#[test]
fn sk_near_misses_are_kept() {
    for text in [
        "task-0123456789abcdefghijkl",
        "disk-0123456789abcdefghijkl",
        "sk-learn-compatible-wrapper-for-models",
        "sk-short1234",
        "sk-ant-short",
    ] {
        assert_eq!(r().apply(text), text);
    }
}

#[test]
fn aws_and_slack() {
    assert_eq!(
        r().apply("id AKIAIOSFODNN7EXAMPLE and ASIAY34FZKBOKMUTVV7A."),
        "id [REDACTED:aws-access-key-id] and [REDACTED:aws-access-key-id]."
    );
    for near in [
        "AKIAIOSFODNN7EXAMPL",
        "AKIAiosfodnn7example",
        "ABIAIOSFODNN7EXAMPLE",
    ] {
        assert_eq!(r().apply(near), near);
    }
    for prefix in ["xoxa", "xoxb", "xoxp", "xoxr", "xoxs"] {
        let token = format!("{prefix}-123456789012-1234567890123-AbCdEf");
        assert_eq!(r().apply(&token), "[REDACTED:slack-token]");
    }
    for near in ["xoxc-123456789012", "xoxb-short", "xoxb_1234567890123"] {
        assert_eq!(r().apply(near), near);
    }
}

#[test]
fn google_api_keys() {
    let key = format!("AIzaSy{}", "A1b2C3d4_e-".repeat(3));
    assert_eq!(key.len(), 39);
    assert_eq!(
        r().apply(&format!("GEMINI_API_KEY={key} gemini -p hi")),
        "GEMINI_API_KEY=[REDACTED:google-api-key] gemini -p hi"
    );
    for near in [
        &key[..38],
        "AIzaSy-short",
        "aiza0123456789012345678901234567890123456",
    ] {
        assert_eq!(r().apply(near), near);
    }
}

const KEY_BLOCK: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAMwAAAAtzc2gtZWQyNTUxOQAAACB\n-----END OPENSSH PRIVATE KEY-----";

#[test]
fn private_key_blocks_span_lines() {
    assert_eq!(
        r().apply(&format!("cat id:\n{KEY_BLOCK}\ndone")),
        "cat id:\n[REDACTED:private-key]\ndone"
    );
    let rsa = KEY_BLOCK.replace("OPENSSH", "RSA");
    assert_eq!(r().apply(&rsa), "[REDACTED:private-key]");
    let pgp = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF\n-----END PGP PRIVATE KEY BLOCK-----";
    assert_eq!(r().apply(pgp), "[REDACTED:private-key]");
    // Two blocks: each ends at its own END.
    assert_eq!(
        r().apply(&format!("{KEY_BLOCK}\nmiddle\n{KEY_BLOCK}")),
        "[REDACTED:private-key]\nmiddle\n[REDACTED:private-key]"
    );
    // Cut short: redacted to the end.
    assert_eq!(
        r().apply("x\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN"),
        "x\n[REDACTED:private-key]"
    );
    // Public material is not a secret.
    let public = "-----BEGIN PUBLIC KEY-----\nMFkwEwYH\n-----END PUBLIC KEY-----";
    assert_eq!(r().apply(public), public);
}

#[test]
fn private_key_blocks_line_by_line() {
    let redactor = r();
    let mut lines = redactor.lines();
    let text = format!("before\n{KEY_BLOCK} after {GHP}\nnext");
    let out: Vec<String> = text.lines().map(|l| lines.line(l).into_owned()).collect();
    assert_eq!(
        out,
        [
            "before",
            "[REDACTED:private-key]",
            "[REDACTED:private-key]",
            "[REDACTED:private-key]",
            "[REDACTED:private-key] after [REDACTED:github-token]",
            "next",
        ]
    );
}

#[test]
fn authorization_values() {
    let cases = [
        (
            "Authorization: Bearer abc.def-ghi",
            "Authorization: Bearer [REDACTED:authorization]",
        ),
        (
            "authorization: token s3cr3tvalue",
            "authorization: token [REDACTED:authorization]",
        ),
        (
            "curl -H 'Authorization: Basic dXNlcjpwYXNz' https://x",
            "curl -H 'Authorization: Basic [REDACTED:authorization]' https://x",
        ),
        (
            "AUTHORIZATION:opaque",
            "AUTHORIZATION:[REDACTED:authorization]",
        ),
        (
            "Proxy-Authorization: Bearer zzz",
            "Proxy-Authorization: Bearer [REDACTED:authorization]",
        ),
        (
            r#"{"authorization": "Bearer abc def", "x": 1}"#,
            r#"{"authorization": "[REDACTED:authorization]", "x": 1}"#,
        ),
        (
            r#"{"headers":"{\"Authorization\": \"token q\"}"}"#,
            r#"{"headers":"{\"Authorization\": \"[REDACTED:authorization]\"}"}"#,
        ),
        (
            "authorization: \"Bearer yaml\"",
            "authorization: \"Bearer [REDACTED:authorization]\"",
        ),
        (
            &format!("Authorization: Bearer {GHP}"),
            "Authorization: Bearer [REDACTED:github-token]",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(r().apply(text), want, "{text}");
    }
}

#[test]
fn authorization_near_misses_are_kept() {
    for text in [
        "the authorization step failed",
        "authorizations: 3",
        r#"{"authorization": ""}"#,
        "Bearer alone is not a header",
    ] {
        assert_eq!(r().apply(text), text);
    }
}

#[test]
fn exact_values_from_the_environment() {
    let vars = [
        ("GITHUB_TOKEN", "plain-looking-value-1"),
        ("aws_secret_access_key", "wJalrXUtnFEMI/K7MDENG"),
        ("DB_PASSWORD", "correct horse battery"),
        ("Stripe_Secret", "rk_live_0000aaaa"),
        ("DEBUG_KEY", "true"),
        ("SHORT_TOKEN", "1234567"),
        ("HOME", "/home/someone/dir"),
        ("KEYBOARD", "us-international"),
    ];
    let r = Redactor::builder().env(vars).build();
    assert_eq!(
            r.apply("a plain-looking-value-1 b wJalrXUtnFEMI/K7MDENG c correct horse battery d rk_live_0000aaaa"),
            "a [REDACTED:secret-env:GITHUB_TOKEN] b [REDACTED:secret-env:aws_secret_access_key] c [REDACTED:secret-env:DB_PASSWORD] d [REDACTED:secret-env:Stripe_Secret]"
        );
    let kept = "true 1234567 /home/someone/dir us-international";
    assert_eq!(r.apply(kept), kept);
}

#[test]
fn secret_name_rule() {
    for name in [
        "GITHUB_TOKEN",
        "token",
        "api_key",
        "Client_Secret",
        "PGPASSWORD",
        "MONKEY",
    ] {
        assert!(is_secret_name(name), "{name}");
    }
    for name in [
        "TOKENS_IN",
        "KEYS",
        "SECRETS_DIR",
        "PASSWORD_FILE_PATH",
        "HOME",
    ] {
        assert!(!is_secret_name(name), "{name}");
    }
}

#[test]
fn tracker_token_and_first_label_wins() {
    let r = Redactor::builder()
        .env([("GH_TOKEN", "0000-1111-2222")])
        .secret("tracker-token", "0000-1111-2222")
        .secret("tracker-token", "zzzz-yyyy-xxxx")
        .build();
    assert_eq!(
        r.apply("0000-1111-2222 zzzz-yyyy-xxxx"),
        "[REDACTED:secret-env:GH_TOKEN] [REDACTED:tracker-token]"
    );
}

#[test]
fn longer_value_containing_a_shorter_one_goes_whole() {
    let r = Redactor::builder()
        .secret("a", "abcdefgh")
        .secret("b", "xxabcdefghyy")
        .build();
    assert_eq!(
        r.apply("xxabcdefghyy abcdefgh"),
        "[REDACTED:b] [REDACTED:a]"
    );
}

#[test]
fn multi_line_values_are_also_matched_per_line() {
    let r = Redactor::builder()
        .secret("ssh", "line-one-secret\nline-two-secret\nshort")
        .build();
    assert_eq!(
        r.apply("x line-two-secret y short"),
        "x [REDACTED:ssh] y short"
    );
}

#[test]
fn values_found_in_markers_are_ignored() {
    // Otherwise every pass would redact inside the previous pass's marker.
    let r = Redactor::builder()
        .secret("x", "REDACTED")
        .secret("y", "github-token")
        .build();
    let once = r.apply(&format!("{GHP} REDACTED"));
    assert_eq!(once, "[REDACTED:github-token] REDACTED");
    assert_eq!(r.apply(&once), once);
}

#[test]
fn redacting_twice_is_redacting_once() {
    let r = Redactor::builder()
        .env([("API_KEY", "k3y-value-123")])
        .build();
    let text = format!(
        "{KEY_BLOCK}\nAuthorization: Bearer {GHP}\n{{\"authorization\": \"Bearer k3y-value-123\"}}\nAKIAIOSFODNN7EXAMPLE sk-ant-api03-{} Authorization: token plain",
        "q".repeat(40)
    );
    let once = r.apply(&text);
    assert_eq!(r.apply(&once), once);
    assert!(
        !once.contains("k3y-value") && !once.contains("plain"),
        "{once}"
    );
}

#[test]
fn a_marker_before_sk_does_not_change_a_second_pass() {
    // The AWS rule's marker ends in `]`, a word boundary the OpenAI rule
    // needs; had the OpenAI rule run first, only a second pass would
    // have redacted the key.
    let text = "AKIAIOSFODNN7EXAMPLEsk-0123456789abcdefghij";
    let once = r().apply(text);
    assert_eq!(once, "[REDACTED:aws-access-key-id][REDACTED:openai-key]");
    assert_eq!(r().apply(&once), once);
}

#[test]
fn clean_text_is_borrowed() {
    let r = Redactor::builder().secret("t", "abcdefghij").build();
    assert!(matches!(r.redact("nothing to see here"), Cow::Borrowed(_)));
}

#[test]
fn skipping_rules_that_cannot_match_changes_nothing() {
    let md = ClaudeMd::parse(
        Path::new("CLAUDE.md"),
        "### SDD Configuration\n### Loop Logging\n- `internal-\\d+`\n- `REDACTED:aws`\n",
    );
    let with = Redactor::builder()
        .env([("X_TOKEN", "value-of-x-token")])
        .claude_md(&md)
        .unwrap()
        .build();
    let mut without_set = with.clone();
    without_set.project_set = None;
    for text in [
        format!("{GHP} value-of-x-token Authorization: Bearer q internal-7"),
        format!("value-of-x-token {KEY_BLOCK}"),
        "AKIAIOSFODNN7EXAMPLE internal-3".to_owned(),
        "internal-3 only".to_owned(),
        "plain".to_owned(),
    ] {
        let every_rule = with.redact_from(&text, 0);
        assert_eq!(with.redact(&text), every_rule, "{text}");
        assert_eq!(without_set.redact(&text), every_rule, "{text}");
    }
}

#[test]
fn json_strings_are_redacted_recursively() {
    let r = Redactor::builder()
        .env([("SDD_LOOP_TRACKER_TOKEN", "tracker-secret-1")])
        .build();
    let mut v = serde_json::json!({
        "error": format!("push failed: {GHP}"),
        "failures": [{"target": "#4", "root_cause": "tracker-secret-1 rejected"}],
        "headers": {"Authorization": "Bearer opaque", "accept": "json"},
        "n": 3, "ok": true, "none": null,
        "ghp_keys_are_kept": 1
    });
    r.redact_json(&mut v);
    assert_eq!(
        v,
        serde_json::json!({
            "error": "push failed: [REDACTED:github-token]",
            "failures": [{"target": "#4", "root_cause": "[REDACTED:secret-env:SDD_LOOP_TRACKER_TOKEN] rejected"}],
            "headers": {"Authorization": "[REDACTED:authorization]", "accept": "json"},
            "n": 3, "ok": true, "none": null,
            "ghp_keys_are_kept": 1
        })
    );
    let again = v.clone();
    r.redact_json(&mut v);
    assert_eq!(v, again);
}

/// The built-in rules compile when first used, not at start; a pattern
/// that does not compile must still fail here, not in a user's tick.
#[test]
fn every_built_in_rule_compiles_and_matches_its_set_entry() {
    let built_in = &*BUILT_IN;
    let rules: Vec<&Rule> = std::iter::once(&built_in.private_key)
        .chain(&built_in.rest)
        .collect();
    let set = built_in.set();
    // The needled rules come last, outside the set.
    assert_eq!(rules.len(), set.len() + NEEDLED.len());
    for (i, rule) in rules.iter().enumerate() {
        assert_eq!(rule.re().as_str(), &*rule.pattern);
        match set.patterns().get(i) {
            Some(entry) => assert_eq!(entry, &*rule.pattern),
            None => assert_eq!(NEEDLED[i - set.len()].0, &*rule.pattern),
        }
    }
}

proptest::proptest! {
    /// The set is skipped for a text holding none of its words: that must
    /// never skip a match.
    #[test]
    fn a_text_the_set_matches_holds_one_of_its_words(
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "gh", "p", "o", "u", "s", "r", "_", "github", "pat", "sk", "-", "ant",
                "proj", "svcacct", "AKIA", "ASIA", "AKI", "xox", "a", "b", "AIza", "AI",
                "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789abcdefghij", "-----", "BEGIN",
                "END", " PRIVATE KEY", " BLOCK", "RSA", " ", "\n", ".",
            ]),
            0..16,
        )
    ) {
        let text: String = parts.concat();
        let built_in = &*BUILT_IN;
        if built_in.set().is_match(&text) {
            proptest::prop_assert!(built_in.set_words.is_match(&text), "{:?}", text);
        }
    }
}

#[test]
fn every_shape_is_found_by_its_word_and_redacted_whole() {
    // Each shape's own example, alone and glued to text: found by its word.
    let r = Redactor::builder().build();
    for token in [
        GHP.to_owned(),
        format!("github_pat_{}", "A".repeat(22)),
        format!("sk-ant-{}", "a".repeat(20)),
        "AKIAIOSFODNN7EXAMPLE".to_owned(),
        format!("xoxb-{}", "1".repeat(10)),
        format!("AIza{}", "B".repeat(35)),
        format!("sk-{}", "c".repeat(20)),
    ] {
        assert!(
            !r.apply(&format!("x={token} end")).contains(&token),
            "{token}"
        );
    }
}

#[test]
fn a_needled_rule_is_tried_on_any_case_of_its_word() {
    // Its word is looked for ASCII case aside, as its `(?i)` matches.
    let r = Redactor::builder().build();
    assert_eq!(
        r.apply("AuThOrIzAtIoN: Bearer abc123"),
        "AuThOrIzAtIoN: Bearer [REDACTED:authorization]"
    );
    assert_eq!(
        r.apply(r#"{"AUTHORIZATION": "token abc123"}"#),
        r#"{"AUTHORIZATION": "[REDACTED:authorization]"}"#
    );
}

#[test]
fn credentials_in_a_url_are_redacted_and_the_url_stays_readable() {
    let r = Redactor::builder().build();
    assert_eq!(
        r.apply("tracker https://alice:s3cr3t-Pa55@tracker.example/api/v3 failed"),
        "tracker https://[REDACTED:url-credentials]@tracker.example/api/v3 failed"
    );
    assert_eq!(
        r.apply("git clone https://x-access-token:abcd1234@github.com/acme/app.git"),
        "git clone https://[REDACTED:url-credentials]@github.com/acme/app.git"
    );
    assert_eq!(
        r.apply("https://0123456789abcdef0123@api.example"),
        "https://[REDACTED:url-credentials]@api.example"
    );
    // A short user name is no credential; an address is no URL.
    assert_eq!(
        r.apply("ssh://git@github.com/acme/app"),
        "ssh://git@github.com/acme/app"
    );
    assert_eq!(r.apply("mail alice@example.com"), "mail alice@example.com");
    let once = r.apply("see https://u:p@h.example/x");
    assert_eq!(r.apply(&once), once, "redacting twice is redacting once");
}

#[test]
fn a_cut_never_splits_a_marker_or_a_token() {
    let marker = "[REDACTED:github-token]";
    let text = format!("error {marker} at the end");
    for max in 0..text.chars().count() {
        let kept = super::cut(&text, max);
        assert!(kept.ends_with('…'), "{kept}");
        assert!(
            !kept.contains("[REDACTED") || kept.contains(marker),
            "max {max}: {kept}"
        );
        assert!(kept.chars().count() <= max + 1, "max {max}: {kept}");
    }
    let token = format!("x ghp_{}", "A".repeat(36));
    assert_eq!(super::cut(&token, 20), "x …");
    assert_eq!(super::cut("short", 10), "short");
}
