//! Unit tests of `budget.rs`.

use super::*;
use rstest::rstest;

/// The contract's example budget (ADR-0028, "Budget controls").
pub(crate) const CONTRACT_EXAMPLE: &str = r##"{
"started_at": "2026-05-09T14:32:00Z",
"max_iterations": 5,
"max_prs": 20,
"max_minutes": 60,
"max_dollars": 25.00,
"iterations_used": 2,
"prs_touched": ["#141", "#142", "#143", "#145"],
"comments_pushed": 7,
"merges_attempted": 1,
"minutes_elapsed": 18,
"tokens_in": 1843210,
"tokens_out": 412057,
"agents_dispatched": 6,
"dollars_estimate": 14.92,
"rate_table_source": "CLAUDE.md SDD config (or built-in default)"
}"##;

#[test]
fn contract_example_parses() {
    let b = Budget::from_slice(Path::new("b.json"), CONTRACT_EXAMPLE.as_bytes()).unwrap();
    assert_eq!(b.iterations_used, 2);
    assert_eq!(b.prs_touched.len(), 4);
    assert_eq!(b.dollars_estimate, 14.92);
    assert_eq!(b.elapsed_seconds(), 18 * 60);
    assert_eq!(b.qmd_failures_consecutive, 0);
}

#[rstest]
fn every_missing_field_is_refused_with_the_contract_message_and_file_untouched(
    #[values(
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
        "rate_table_source"
    )]
    field: &str,
) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("work.budget.json");
    let mut map: Map<String, Value> = serde_json::from_str(CONTRACT_EXAMPLE).unwrap();
    map.remove(field);
    let bytes = serde_json::to_vec_pretty(&map).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();

    let err = Budget::load(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Budget file at {} is missing required field {field} — refusing to load. Delete the file to start a fresh run, or restore the missing field manually.",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "byte-identical");
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        before
    );
}

#[test]
fn all_required_fields_are_covered_by_the_test() {
    assert_eq!(REQUIRED_FIELDS.len(), 15);
}

#[test]
fn wrong_type_names_the_field() {
    let text = CONTRACT_EXAMPLE.replace("\"tokens_in\": 1843210", "\"tokens_in\": \"lots\"");
    let err = Budget::from_slice(Path::new("b.json"), text.as_bytes()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Budget file at b.json has an invalid tokens_in: expected a whole number"),
        "{err}"
    );
}

#[test]
fn non_object_and_broken_json_are_refused() {
    let err = Budget::from_slice(Path::new("b.json"), b"[1]").unwrap_err();
    assert!(err.to_string().contains("not a JSON object"), "{err}");
    let err = Budget::from_slice(Path::new("b.json"), b"{\"started_at\":").unwrap_err();
    assert!(err.to_string().contains("refusing to load"), "{err}");
}

#[test]
fn every_write_has_every_field_and_round_trips() {
    let mut b = Budget::start(
        "2026-05-09T14:32:00Z",
        Ceilings::default(),
        "built-in default",
    );
    b.add_usage("claude-opus-4-7", 10, 2);
    let json: Map<String, Value> = serde_json::from_str(&b.to_json()).unwrap();
    for field in REQUIRED_FIELDS
        .iter()
        .chain(&["qmd_failures_consecutive", "tokens_by_model"])
    {
        assert!(json.contains_key(*field), "missing {field}");
    }
    let back = Budget::from_slice(Path::new("b"), b.to_json().as_bytes()).unwrap();
    assert_eq!(back, b);
}

#[test]
fn cache_parts_are_written_only_when_present() {
    let mut b = Budget::start("t", Ceilings::default(), "built-in default");
    b.add_usage("claude-opus-4-7", 10, 2);
    let plain = b.to_json();
    assert!(
        !plain.contains("cache_"),
        "an old-shaped file stays old: {plain}"
    );
    b.add_model_tokens(
        "claude-sonnet-4-5",
        &ModelTokens {
            tokens_in: 100,
            tokens_out: 5,
            cache_read_tokens: 80,
            cache_write_tokens: 15,
            cache_write_1h_tokens: 10,
        },
    );
    b.add_model_tokens(
        "claude-sonnet-4-5",
        &ModelTokens {
            tokens_in: 10,
            tokens_out: 1,
            cache_read_tokens: 5,
            ..ModelTokens::default()
        },
    );
    assert_eq!((b.tokens_in, b.tokens_out), (120, 8));
    assert_eq!(
        b.tokens_by_model["claude-sonnet-4-5"],
        ModelTokens {
            tokens_in: 110,
            tokens_out: 6,
            cache_read_tokens: 85,
            cache_write_tokens: 15,
            cache_write_1h_tokens: 10,
        }
    );
    assert!(
        b.per_model_totals_complete(),
        "cache parts are inside tokens_in"
    );
    let back = Budget::from_slice(Path::new("b"), b.to_json().as_bytes()).unwrap();
    assert_eq!(back, b);
    let json: Value = serde_json::from_str(&b.to_json()).unwrap();
    assert_eq!(
        json["tokens_by_model"]["claude-opus-4-7"],
        serde_json::json!({"tokens_in": 10, "tokens_out": 2})
    );
}

#[test]
fn unknown_fields_survive_a_rewrite() {
    let text = CONTRACT_EXAMPLE.replace("{\n", "{\n\"owner\": \"ci\",\n");
    let b = Budget::from_slice(Path::new("b"), text.as_bytes()).unwrap();
    let again: Map<String, Value> = serde_json::from_str(&b.to_json()).unwrap();
    assert_eq!(again["owner"], "ci");
}

#[test]
fn prs_touched_is_deduplicated_on_read_and_insert() {
    let text = CONTRACT_EXAMPLE.replace("\"#145\"]", "\"#145\", \"#141\"]");
    let mut b = Budget::from_slice(Path::new("b"), text.as_bytes()).unwrap();
    assert_eq!(b.prs_touched.len(), 4);
    assert!(!b.prs_touched.insert("#142"));
    assert!(b.prs_touched.insert("#150"));
    assert_eq!(b.prs_touched.len(), 5);
}

#[test]
fn save_is_atomic_0600() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("work.budget.json");
    let b = Budget::start(
        "2026-05-09T14:32:00Z",
        Ceilings::default(),
        "built-in default",
    );
    b.save(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(Budget::load(&path).unwrap().unwrap(), b);
}

#[test]
fn later_flags_narrow_but_never_silently_widen() {
    let mut b = Budget::start("t", Ceilings::default(), "built-in default");
    let flags = CeilingFlags {
        max_iterations: Some(10),
        max_prs: Some(3),
        max_minutes: None,
        max_dollars: Some(0.0),
    };
    let changes = b.apply_flags(&flags, false);
    assert_eq!(b.max_iterations, 5, "not widened");
    assert_eq!(b.max_prs, 3, "narrowed");
    assert_eq!(b.max_dollars, 25.0, "0 (= off) is the widest; refused");
    assert_eq!(changes.len(), 3);
    assert!(matches!(
        changes[0],
        CeilingChange::KeptRecorded {
            field: "max_iterations",
            ..
        }
    ));
    assert!(matches!(
        changes[1],
        CeilingChange::Narrowed {
            field: "max_prs",
            ..
        }
    ));
    assert!(matches!(
        changes[2],
        CeilingChange::KeptRecorded {
            field: "max_dollars",
            ..
        }
    ));

    let changes = b.apply_flags(&flags, true);
    assert_eq!(b.max_iterations, 10);
    assert_eq!(b.max_dollars, 0.0);
    assert_eq!(changes.len(), 2);
}

// A ceiling raised at the gate stayed raised only until /loop repeated
// the original command line, whose flag then "narrowed" it back.
#[test]
fn a_repeated_command_line_does_not_undo_a_raise() {
    let flags = CeilingFlags {
        max_iterations: Some(2),
        ..Default::default()
    };
    let mut b = Budget::start("t", flags.resolve(), "built-in default");
    b.ceiling_flags = Some(flags);
    b.set_ceiling(Dimension::Iterations, 3.0);
    assert!(b.apply_flags(&flags, false).is_empty());
    assert_eq!(b.max_iterations, 3);
    // A new value is a request again.
    let lower = CeilingFlags {
        max_iterations: Some(1),
        ..Default::default()
    };
    assert_eq!(b.apply_flags(&lower, false).len(), 1);
    assert_eq!(b.max_iterations, 1);
}

#[test]
fn equal_flags_change_nothing() {
    let mut b = Budget::start("t", Ceilings::default(), "built-in default");
    let flags = CeilingFlags {
        max_iterations: Some(5),
        max_prs: Some(20),
        max_minutes: Some(60),
        max_dollars: Some(25.0),
    };
    assert!(b.apply_flags(&flags, false).is_empty());
}

#[test]
fn elapsed_minutes_follow_seconds() {
    let mut b = Budget::start("t", Ceilings::default(), "x");
    b.set_elapsed_seconds(49 * 60 + 59);
    assert_eq!(b.minutes_elapsed, 49);
}
