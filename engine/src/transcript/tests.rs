//! Unit tests of `transcript.rs`.

use super::*;

fn window() -> Window {
    Window {
        from: "2026-11-03T10:00:00Z".parse().unwrap(),
        to: "2026-11-03T10:30:00Z".parse().unwrap(),
    }
}

fn assistant(id: &str, request: Option<&str>, at: &str, output: u64) -> String {
    let request = request.map_or(String::new(), |r| format!(r#""requestId":"{r}","#));
    format!(
        r#"{{"type":"assistant",{request}"timestamp":"{at}","message":{{"id":"{id}","model":"m","content":[],"usage":{{"input_tokens":1,"output_tokens":{output}}}}}}}"#
    )
}

fn spend_of(lines: &[u8]) -> Spend {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("s.jsonl");
    std::fs::write(&path, lines).unwrap();
    read_spend(&path, window()).unwrap()
}

#[test]
fn the_slug_replaces_every_character_outside_ascii_letters_and_digits() {
    for (path, slug) in [
        ("/home/me/my_app.v2", "-home-me-my-app-v2"),
        ("/home/me/My Project", "-home-me-My-Project"),
        ("/home/me/.agents", "-home-me--agents"),
        ("/srv/a-b/c", "-srv-a-b-c"),
        ("/home/josé/app", "-home-jos--app"),
        ("/tmp/🚀x", "-tmp---x"),
    ] {
        assert_eq!(project_slug(Path::new(path)), slug, "{path}");
    }
}

#[test]
fn the_config_dir_is_claude_config_dir_else_dot_claude_in_home() {
    let home = PathBuf::from("/home/me");
    let dirs = ClaudeDirs {
        config_dir: None,
        home: home.clone(),
    };
    assert_eq!(dirs.config_dir(), home.join(".claude"));
    let dirs = ClaudeDirs {
        config_dir: Some("/etc/claude".into()),
        home,
    };
    assert_eq!(dirs.config_dir(), PathBuf::from("/etc/claude"));
}

#[test]
fn missing_counts_are_zero_and_the_cache_split_never_loses_a_write() {
    let usage = |json: &str| serde_json::from_str::<RawUsage>(json).unwrap().totals();
    assert_eq!(usage("{}"), TokenTotals::default());
    assert_eq!(
        usage(r#"{"input_tokens":3,"cache_creation_input_tokens":500,"output_tokens":5}"#),
        TokenTotals {
            input: 3,
            output: 5,
            cache_creation: 500,
            cache_creation_1h: 0,
            cache_read: 0,
        },
        "older builds wrote no split"
    );
    assert_eq!(
        usage(
            r#"{"cache_creation_input_tokens":500,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":900}}"#
        ),
        TokenTotals {
            cache_creation: 1000,
            cache_creation_1h: 900,
            ..TokenTotals::default()
        },
        "a split larger than its total wins"
    );
    assert_eq!(
        usage(r#"{"input_tokens":null,"cache_read_input_tokens":7}"#).cache_read,
        7
    );
}

#[test]
fn a_streamed_response_keeps_its_last_usage_not_the_sum() {
    let lines = [
        assistant("msg_1", Some("req_1"), "2026-11-03T10:01:00Z", 5),
        assistant("msg_1", Some("req_1"), "2026-11-03T10:01:01Z", 9),
        assistant("msg_1", Some("req_1"), "2026-11-03T10:01:02Z", 40),
    ]
    .join("\n");
    let spend = spend_of(lines.as_bytes());
    assert_eq!(spend.by_model["m"].output, 40);
    assert_eq!(spend.responses, 1);
    assert_eq!(spend.skipped.streamed, 2);
}

#[test]
fn a_response_is_a_message_id_and_request_id_pair() {
    let lines = [
        assistant("msg_1", Some("req_1"), "2026-11-03T10:01:00Z", 5),
        assistant("msg_1", Some("req_2"), "2026-11-03T10:02:00Z", 7),
        assistant("msg_2", None, "2026-11-03T10:03:00Z", 11),
    ]
    .join("\n");
    let spend = spend_of(lines.as_bytes());
    assert_eq!(spend.responses, 3);
    assert_eq!(spend.by_model["m"].output, 23);
    assert_eq!(spend.by_model["m"].input, 3);
}

#[test]
fn both_ends_of_the_window_count() {
    let lines = [
        assistant("a", None, "2026-11-03T09:59:59.999Z", 1),
        assistant("b", None, "2026-11-03T10:00:00Z", 10),
        assistant("c", None, "2026-11-03T12:30:00+02:00", 100),
        assistant("d", None, "2026-11-03T10:30:00.001Z", 1000),
    ]
    .join("\n");
    let spend = spend_of(lines.as_bytes());
    assert_eq!(spend.by_model["m"].output, 110);
    assert_eq!(spend.skipped.outside_window, 2);
}

#[test]
fn bytes_that_are_not_utf8_are_a_malformed_line_not_an_error() {
    let mut bytes = b"\xff\xfe\x00garbage\r\n".to_vec();
    bytes.extend_from_slice(assistant("a", None, "2026-11-03T10:05:00Z", 3).as_bytes());
    bytes.extend_from_slice(b"\r\n\n   \n{\"type\":7}\n\"just a string\"\n");
    let spend = spend_of(&bytes);
    assert_eq!(spend.responses, 1, "a CRLF line still parses");
    assert_eq!(spend.skipped.malformed, 1);
    assert_eq!(
        spend.skipped.foreign, 2,
        "`type` not a string; not an object"
    );
}

#[test]
fn the_synthetic_model_and_incomplete_entries_are_skipped() {
    let lines = [
            r#"{"type":"assistant","timestamp":"2026-11-03T10:05:00Z","message":{"id":"x","model":"<synthetic>","usage":{"input_tokens":0,"output_tokens":0}}}"#.to_owned(),
            r#"{"type":"assistant","timestamp":"2026-11-03T10:05:00Z","message":{"model":"m","usage":{}}}"#.to_owned(),
            r#"{"type":"assistant","timestamp":"2026-11-03T10:05:00Z","message":{"id":"y","usage":{}}}"#.to_owned(),
            r#"{"type":"assistant","timestamp":"2026-11-03T10:05:00Z","message":{"id":"y","model":"m","usage":{"input_tokens":-4}}}"#.to_owned(),
            r#"{"type":"assistant","timestamp":"2026-11-03T10:05:00Z"}"#.to_owned(),
        ]
        .join("\n");
    let spend = spend_of(lines.as_bytes());
    assert_eq!(spend.skipped.synthetic, 1);
    assert_eq!(spend.skipped.incomplete, 4);
    assert!(spend.by_model.is_empty());
}
