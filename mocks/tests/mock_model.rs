//! `mock-model` over real HTTP: both APIs streamed and plain, untooled
//! requests, every fault and the recovery after it, assertions, the
//! request-id header, the redacted log and its totals, and the binary.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rstest::rstest;
use sdd_mocks::model::{BlockingMockModel, MockModel, Script, Totals, Usage};
use serde_json::{Value, json};

#[path = "mock_model/client.rs"]
mod client;
use client::{Answer, KEY, claude_request, codex_request, get, messages, post, responses};

fn script(text: &str) -> Script {
    Script::parse(Path::new("fixtures/model/inline.yaml"), text)
        .unwrap_or_else(|e| panic!("{}", e.render()))
}

fn serve(text: &str) -> BlockingMockModel {
    MockModel::builder(script(text)).start_blocking().unwrap()
}

const TWO_TURNS: &str = "\
turns:
  - text: Running it.
    calls:
      - bash: { command: echo begin, description: Print begin }
    usage: { input: 200, output: 50, cache_read: 1000, cache_creation: 300, reasoning: 7 }
  - text: Done.
    model: claude-haiku-4-5
";

#[test]
fn messages_api_streams_text_then_a_bash_tool_use_and_the_final_usage() {
    let model = serve(TWO_TURNS);
    let answer = messages(&model.uri(), &claude_request(true, None));
    assert_eq!(answer.status, 200);
    assert!(
        answer
            .header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert_eq!(
        answer.event_names(),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let events = answer.events();
    let start = &events[0].1["message"];
    assert!(start["id"].as_str().unwrap().starts_with("msg_"), "{start}");
    assert_eq!(
        start["model"], "claude-sonnet-4-5",
        "the request's model by default"
    );
    assert_eq!(
        start["usage"],
        json!({"input_tokens": 200, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 1000, "output_tokens": 1})
    );
    assert_eq!(events[6].1["content_block"]["name"], "Bash");
    assert!(
        events[6].1["content_block"]["id"]
            .as_str()
            .unwrap()
            .starts_with("toolu_")
    );
    let json: String = events[7..9]
        .iter()
        .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&json).unwrap(),
        json!({"command": "echo begin", "description": "Print begin"})
    );
    assert_eq!(events[10].1["delta"]["stop_reason"], "tool_use");
    assert_eq!(events[10].1["usage"]["output_tokens"], 50);

    let log = model.log();
    assert_eq!(log[0].turn, Some(1));
    assert_eq!(
        log[0].usage,
        Some(Usage {
            reasoning: 0,
            ..script(TWO_TURNS).turns[0].value.usage
        }),
        "the Messages API carries no reasoning count"
    );
    assert_eq!(log[0].response_id.as_deref(), start["id"].as_str());
    assert_eq!(log[0].query.as_deref(), Some("beta=true"));
}

#[test]
fn messages_api_answers_json_when_not_streamed() {
    let model = serve(TWO_TURNS);
    messages(&model.uri(), &claude_request(false, None));
    let answer = messages(&model.uri(), &claude_request(false, Some("begin")));
    assert!(
        answer
            .header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let message = answer.json();
    assert_eq!(message["type"], "message");
    assert_eq!(message["model"], "claude-haiku-4-5", "the turn's model");
    assert_eq!(
        message["content"],
        json!([{"type": "text", "text": "Done."}])
    );
    assert_eq!(message["stop_reason"], "end_turn");
    assert_eq!(message["usage"]["input_tokens"], 100, "default usage");
    assert_eq!(message["usage"]["output_tokens"], 10);
    assert_eq!(model.turns_served(), 2);
}

#[test]
fn responses_api_streams_an_exec_command_call_and_usage() {
    let model = serve(TWO_TURNS);
    let answer = responses(&model.uri(), &codex_request(true, None));
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.event_names(),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.output_text.delta",
            "response.output_item.done",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let events = answer.events();
    let message = &events[4].1["item"];
    assert_eq!(
        message["content"],
        json!([{"type": "output_text", "text": "Running it.", "annotations": []}])
    );
    let call = &events[6].1["item"];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "exec_command");
    assert!(call["call_id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(call["arguments"], r#"{"cmd":"echo begin"}"#);
    let done = &events[7].1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(
        done["usage"],
        json!({
            "input_tokens": 200,
            "input_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 300},
            "output_tokens": 50,
            "output_tokens_details": {"reasoning_tokens": 7},
            "total_tokens": 250,
        })
    );
    assert_eq!(answer.header("x-request-id"), answer.header("request-id"));
    assert_eq!(model.log()[0].usage.unwrap().reasoning, 7);
}

#[test]
fn responses_api_answers_json_when_not_streamed() {
    let model = serve(TWO_TURNS);
    let answer = responses(&model.uri(), &codex_request(false, None));
    let response = answer.json();
    assert_eq!(response["object"], "response");
    assert!(response["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(response["output"].as_array().unwrap().len(), 2);
    assert_eq!(response["usage"]["output_tokens"], 50);
}

#[test]
fn requests_without_tools_are_answered_without_using_a_turn() {
    let model = serve(
        "untooled: { text: Fix the login, usage: { input: 40, output: 6 } }\nturns:\n  - text: Turn one.\n",
    );
    let mut untooled = claude_request(false, None);
    untooled.as_object_mut().unwrap().remove("tools");
    let title = messages(&model.uri(), &untooled).json();
    assert_eq!(title["content"][0]["text"], "Fix the login");
    let mut untooled = codex_request(false, None);
    untooled["tools"] = json!([]);
    let title = responses(&model.uri(), &untooled).json();
    assert_eq!(title["output"][0]["content"][0]["text"], "Fix the login");
    assert_eq!(model.turns_served(), 0);

    let counted = post(
        &model.uri(),
        "/v1/messages/count_tokens",
        &[],
        &claude_request(false, None),
    );
    assert!(counted.json()["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(model.turns_served(), 0);

    let turn = messages(&model.uri(), &claude_request(false, None)).json();
    assert_eq!(turn["content"][0]["text"], "Turn one.");
    let outcomes: Vec<String> = model
        .log()
        .iter()
        .map(|e| format!("{:?}", e.outcome))
        .collect();
    assert_eq!(outcomes, ["Untooled", "Untooled", "CountTokens", "Turn"]);
    let totals = model.totals();
    assert_eq!(
        (totals.all.responses, totals.all.input, totals.all.output),
        (3, 180, 22)
    );
}

#[derive(Debug, Clone, Copy)]
enum Via {
    Claude,
    Codex,
}

fn ask(via: Via, base: &str, stream: bool) -> Answer {
    match via {
        Via::Claude => messages(base, &claude_request(stream, None)),
        Via::Codex => responses(base, &codex_request(stream, None)),
    }
}

#[rstest]
#[case::rate_limited_claude(
    Via::Claude,
    "{ fault: rate_limited, retry_after: 3, times: 2 }",
    429,
    "rate_limit_error"
)]
#[case::server_error_claude(Via::Claude, "{ fault: server_error, times: 2 }", 500, "api_error")]
#[case::overloaded_claude(
    Via::Claude,
    "{ fault: overloaded, times: 2 }",
    529,
    "overloaded_error"
)]
#[case::rate_limited_codex(
    Via::Codex,
    "{ fault: rate_limited, retry_after: 3, times: 2 }",
    429,
    "requests"
)]
#[case::server_error_codex(Via::Codex, "{ fault: server_error, times: 2 }", 500, "server_error")]
#[case::overloaded_codex(Via::Codex, "{ fault: overloaded, times: 2 }", 529, "server_error")]
fn an_error_fault_is_served_its_times_then_the_turn(
    #[case] via: Via,
    #[case] fault: &str,
    #[case] status: u16,
    #[case] kind: &str,
) {
    let model = serve(&format!(
        "turns:\n  - text: Served.\n    faults:\n      - {fault}\n"
    ));
    for attempt in 1..=2 {
        let answer = ask(via, &model.uri(), true);
        assert_eq!(answer.status, status, "attempt {attempt}: {}", answer.text);
        let body = answer.json();
        let error = match via {
            Via::Claude => {
                assert_eq!(body["type"], "error");
                assert_eq!(body["request_id"].as_str(), answer.header("request-id"));
                &body["error"]
            }
            Via::Codex => &body["error"],
        };
        assert_eq!(error["type"], kind);
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains(&format!("attempt {attempt} of 2"))
        );
        assert_eq!(answer.header("retry-after"), (status == 429).then_some("3"));
    }
    let served = ask(via, &model.uri(), true);
    assert_eq!(served.status, 200);
    let log = model.log();
    let faults: Vec<_> = log
        .iter()
        .map(|e| e.fault.as_ref().map(|f| (f.attempt, f.of)))
        .collect();
    assert_eq!(faults, [Some((1, 2)), Some((2, 2)), None]);
    assert!(
        log[..2]
            .iter()
            .all(|e| e.usage.is_none() && e.status == status)
    );
    assert_eq!(model.totals().all.responses, 1);
}

#[test]
fn a_cut_messages_stream_stops_before_message_stop_then_the_turn_is_served() {
    let model = serve(&format!(
        "{TWO_TURNS}    faults: [{{ fault: cut, after_events: 3 }}]\n"
    ));
    let first = messages(&model.uri(), &claude_request(true, None));
    assert_eq!(first.event_names().last().unwrap(), "message_stop");
    let cut = messages(&model.uri(), &claude_request(true, Some("begin")));
    assert_eq!(cut.status, 200);
    assert_eq!(
        cut.event_names(),
        ["message_start", "ping", "content_block_start"]
    );
    let again = messages(&model.uri(), &claude_request(true, Some("begin")));
    assert_eq!(again.event_names().last().unwrap(), "message_stop");
    assert_ne!(
        cut.events()[0].1["message"]["id"],
        again.events()[0].1["message"]["id"]
    );

    let log = model.log();
    assert_eq!(log[1].fault.as_ref().unwrap().after_events, Some(3));
    assert_eq!(log[1].turn, Some(2));
    assert_eq!(
        log[1].usage,
        Some(Usage {
            input: 100,
            output: 1,
            ..Usage::ZERO
        }),
        "what message_start told the client"
    );
    assert_eq!(model.totals().all.responses, 3);
}

#[test]
fn a_cut_responses_stream_stops_before_response_completed_then_the_turn_is_served() {
    let model = serve("turns:\n  - text: Served.\n    faults: [{ fault: cut }]\n");
    let cut = responses(&model.uri(), &codex_request(true, None));
    let names = cut.event_names();
    assert_eq!(names.len(), 3, "half of the six events: {names:?}");
    assert!(!names.contains(&"response.completed".to_owned()));
    let served = responses(&model.uri(), &codex_request(true, None));
    assert_eq!(served.event_names().last().unwrap(), "response.completed");
    let log = model.log();
    assert_eq!(
        log[0].usage, None,
        "a Responses stream reports usage only at its end"
    );
    assert_eq!(log[0].fault.as_ref().unwrap().after_events, Some(3));
}

#[test]
fn a_cut_json_answer_is_half_a_body() {
    let model = serve("turns:\n  - text: Served.\n    faults: [{ fault: cut }]\n");
    let cut = messages(&model.uri(), &claude_request(false, None));
    assert!(
        serde_json::from_str::<Value>(&cut.text).is_err(),
        "{}",
        cut.text
    );
    assert!(cut.text.starts_with("{\"id\":\"msg_"), "{}", cut.text);
    assert_eq!(
        messages(&model.uri(), &claude_request(false, None)).json()["content"][0]["text"],
        "Served."
    );
}

const EXPECTING: &str = "\
turns:
  - calls: [{ bash: { command: echo begin } }]
    expect: { user_contains: hello, system_contains: Claude Code }
  - text: Done.
    expect: { last_tool_result_contains: begin }
";

#[test]
fn passing_assertions_are_logged_and_the_turn_served() {
    let model = serve(EXPECTING);
    assert_eq!(
        messages(&model.uri(), &claude_request(true, None)).status,
        200
    );
    assert_eq!(
        messages(&model.uri(), &claude_request(true, Some("begin\n"))).status,
        200
    );
    let checks: Vec<Vec<(String, bool)>> = model
        .log()
        .iter()
        .map(|e| {
            e.checks
                .iter()
                .map(|c| (c.check.clone(), c.passed))
                .collect()
        })
        .collect();
    assert_eq!(
        checks,
        [
            vec![
                ("system_contains".to_owned(), true),
                ("user_contains".to_owned(), true)
            ],
            vec![("last_tool_result_contains".to_owned(), true)],
        ]
    );
}

#[test]
fn a_failed_assertion_is_a_400_that_names_the_turn_and_leaves_it_unserved() {
    let model = serve(EXPECTING);
    messages(&model.uri(), &claude_request(true, None));
    let refused = messages(&model.uri(), &claude_request(true, Some("end\n")));
    assert_eq!(refused.status, 400);
    let message = refused.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        message,
        "mock-model: turn 2 of fixtures/model/inline.yaml (line 4) did not get the request it \
         expects: `last_tool_result_contains: \"begin\"` failed: the last tool result is \"end\\n\""
    );
    let entry = &model.log()[1];
    assert_eq!(format!("{:?}", entry.outcome), "ExpectFailed");
    assert_eq!(entry.error.as_deref(), Some(message.as_str()));
    assert!(!entry.checks[0].passed);
    assert_eq!(model.turns_served(), 1);

    let codex = serve(EXPECTING.replace("Claude Code", "Codex").as_str());
    responses(&codex.uri(), &codex_request(true, None));
    let refused = responses(&codex.uri(), &codex_request(true, Some("Output:\nend\n")));
    assert_eq!(refused.status, 400);
    assert_eq!(refused.json()["error"]["type"], "invalid_request_error");
    assert_eq!(
        responses(&codex.uri(), &codex_request(true, Some("Output:\nbegin\n"))).status,
        200
    );
}

#[test]
fn running_out_of_turns_is_a_400_naming_the_script() {
    let model = serve("turns:\n  - text: Only one.\n");
    messages(&model.uri(), &claude_request(true, None));
    let refused = messages(&model.uri(), &claude_request(true, None));
    assert_eq!(refused.status, 400);
    let message = refused.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("the script fixtures/model/inline.yaml has no turn left (1 served)"),
        "{message}"
    );
    assert_eq!(format!("{:?}", model.log()[1].outcome), "OutOfTurns");
}

#[test]
fn every_answer_has_a_unique_request_id_even_across_servers() {
    let one = serve("turns:\n  - text: One.\n    faults: [{ fault: overloaded }]\n");
    let two = serve("turns:\n  - text: Two.\n");
    let answers = [
        ask(Via::Claude, &one.uri(), true),
        ask(Via::Claude, &one.uri(), false),
        ask(Via::Claude, &one.uri(), true),
        post(&one.uri(), "/nowhere", &[], &json!({})),
        ask(Via::Codex, &two.uri(), true),
        ask(Via::Claude, &two.uri(), true),
    ];
    let ids: Vec<&str> = answers
        .iter()
        .map(|a| a.header("request-id").unwrap())
        .collect();
    assert!(ids.iter().all(|id| id.starts_with("req_")), "{ids:?}");
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    assert_eq!(answers[3].status, 404);
    let logged: Vec<String> = one.log().iter().map(|e| e.request_id.clone()).collect();
    assert_eq!(logged, ids[..4]);
}

#[test]
fn the_log_never_holds_the_api_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("model.log");
    let model = MockModel::builder(script(TWO_TURNS))
        .log_file(&file)
        .start_blocking()
        .unwrap();
    let mut body = claude_request(true, None);
    body["metadata"] = json!({"user_id": KEY, "note": format!("key={KEY}")});
    post(
        &model.uri(),
        "/v1/messages",
        &[("x-api-key", KEY), ("x-echo", KEY)],
        &body,
    );
    responses(&model.uri(), &codex_request(true, None));
    let on_disk = std::fs::read_to_string(&file).unwrap();
    assert_eq!(on_disk, get(&model.uri(), "/__log"));
    assert!(!on_disk.contains(KEY), "{on_disk}");
    let log = model.log();
    assert_eq!(log[0].credential.as_deref(), Some("x-api-key"));
    assert_eq!(log[1].credential.as_deref(), Some("authorization"));
    assert!(!log[0].headers.contains_key("x-api-key"));
    assert!(!log[1].headers.contains_key("authorization"));
    assert_eq!(log[0].headers["x-echo"], "[REDACTED]");
    assert_eq!(
        log[0].body["metadata"],
        json!({"user_id": "[REDACTED]", "note": "key=[REDACTED]"})
    );
    assert_eq!(
        log[0].body["messages"][0]["content"][0]["text"], "hello",
        "the rest is kept"
    );
}

#[test]
fn a_required_api_key_refuses_other_keys() {
    let model = MockModel::builder(script(TWO_TURNS))
        .api_key(KEY)
        .start_blocking()
        .unwrap();
    let refused = post(
        &model.uri(),
        "/v1/messages",
        &[("x-api-key", "other")],
        &claude_request(true, None),
    );
    assert_eq!(refused.status, 401);
    assert_eq!(refused.json()["error"]["type"], "authentication_error");
    assert_eq!(
        messages(&model.uri(), &claude_request(true, None)).status,
        200
    );
    assert_eq!(model.turns_served(), 1);
}

fn mock_model() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mock-model"))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/model")
        .join(name)
}

#[test]
fn the_binary_prints_its_url_serves_logs_and_stops_when_stdin_closes() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("model.log");
    let mut child = mock_model()
        .arg("--script")
        .arg(fixture("claude-in-session-tick.yaml"))
        .arg("--log")
        .arg(&log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line.trim();
    assert!(base.starts_with("http://127.0.0.1:"), "{line:?}");
    let answer = messages(base, &claude_request(true, None));
    assert_eq!(answer.status, 200);
    let totals: Value = serde_json::from_str(&get(base, "/__totals")).unwrap();
    assert_eq!(totals["input"], 3000);
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");

    let out = mock_model().arg("totals").arg(&log).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, totals);
    assert_eq!(
        printed,
        serde_json::to_value(Totals::of(&sdd_mocks::model::log::read(&log).unwrap())).unwrap()
    );
    assert_eq!(
        printed["by_model"]["claude-sonnet-4-5"]["cache_creation"],
        12000
    );
}

#[test]
fn the_binary_reports_a_broken_script_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "turns:\n  - text: Hi\n    usage: { inptu: 3 }\n",
            "3:14: unknown field `inptu`",
        ),
        (
            "turns:\n  - text: Hi\n  - usage: { input: 3 }\n",
            "3:5: this turn has neither `text` nor `calls`",
        ),
        (
            "turns:\n  - text: Hi\n    faults:\n      - { fault: cut, retry_after: 2 }\n",
            "4:9: `retry_after` applies to `rate_limited`, not to `cut`",
        ),
    ];
    for (text, expected) in cases {
        let file = dir.path().join("broken.yaml");
        std::fs::write(&file, text).unwrap();
        let out = mock_model()
            .arg("--script")
            .arg(&file)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(65), "{out:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            stderr.starts_with(&format!("error: {}:{expected}", file.display())),
            "{stderr}"
        );
        assert!(
            stderr
                .trim_end()
                .lines()
                .last()
                .unwrap()
                .starts_with("help: "),
            "{stderr}"
        );
    }
}

#[test]
fn the_example_scripts_load() {
    for entry in std::fs::read_dir(fixture("")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            Script::load(&path).unwrap_or_else(|e| panic!("{}", e.render()));
        }
    }
}

fn gemini_request(tool_output: Option<&str>) -> Value {
    let mut contents = vec![json!({"role": "user", "parts": [{"text": "hello"}]})];
    if let Some(output) = tool_output {
        contents.push(json!({"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]}));
        contents.push(json!({"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {"output": output}}}]}));
    }
    json!({
        "contents": contents,
        "systemInstruction": {"parts": [{"text": "You are a non-interactive CLI agent"}]},
        "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}],
    })
}

fn gemini(base: &str, action: &str, body: &Value) -> Answer {
    let path = format!("/v1beta/models/gemini-2.5-flash:{action}");
    post(base, &path, &[("x-goog-api-key", KEY)], body)
}

/// Gemini's stream: `data:` lines only, each event ended by a blank line.
fn gemini_events(answer: &Answer) -> Vec<Value> {
    answer
        .text
        .split("\r\n\r\n")
        .filter_map(|chunk| chunk.trim().strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[test]
fn gemini_api_streams_a_run_shell_command_call_then_the_usage_and_reads_its_response() {
    let model = serve(TWO_TURNS);
    let answer = gemini(
        &model.uri(),
        "streamGenerateContent?alt=sse",
        &gemini_request(None),
    );
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert!(!answer.text.contains("event:"), "{}", answer.text);
    let events = gemini_events(&answer);
    let last = events.last().unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        last["usageMetadata"],
        json!({"promptTokenCount": 200, "cachedContentTokenCount": 1000, "candidatesTokenCount": 50, "thoughtsTokenCount": 7, "totalTokenCount": 257})
    );
    assert_eq!(last["modelVersion"], "gemini-2.5-flash", "the path's model");
    let call = events
        .iter()
        .find_map(|e| e["candidates"][0]["content"]["parts"][0].get("functionCall"))
        .unwrap();
    assert_eq!(
        call,
        &json!({"name": "run_shell_command", "args": {"command": "echo begin", "description": "Print begin"}})
    );
    let plain = gemini(
        &model.uri(),
        "generateContent",
        &gemini_request(Some("Output: begin")),
    );
    assert_eq!(plain.status, 200);
    assert_eq!(
        plain.json()["candidates"][0]["content"]["parts"][0]["text"],
        "Done."
    );
    let counted = gemini(&model.uri(), "countTokens", &gemini_request(None));
    assert!(counted.json()["totalTokens"].as_u64().unwrap() > 0);
    let log = model.log();
    assert_eq!(log[0].credential.as_deref(), Some("x-goog-api-key"));
    assert!(!serde_json::to_string(&log).unwrap().contains(KEY));
    assert_eq!(model.totals().all.reasoning, 7);
}

#[test]
fn gemini_faults_have_googles_shape_then_the_turn_is_served() {
    let model = serve(
        "turns:\n  - text: Done.\n    faults:\n      - { fault: rate_limited, retry_after: 2 }\n      - { fault: malformed }\n",
    );
    let limited = gemini(
        &model.uri(),
        "streamGenerateContent?alt=sse",
        &gemini_request(None),
    );
    assert_eq!(limited.status, 429);
    assert_eq!(limited.json()["error"]["status"], "RESOURCE_EXHAUSTED");
    assert_eq!(limited.header("retry-after"), Some("2"));
    let malformed = gemini(
        &model.uri(),
        "streamGenerateContent?alt=sse",
        &gemini_request(None),
    );
    assert_eq!(malformed.status, 200);
    let data = malformed.text.trim().strip_prefix("data: ").unwrap();
    assert!(serde_json::from_str::<Value>(data).is_err(), "{data}");
    let served = gemini(&model.uri(), "generateContent", &gemini_request(None));
    assert_eq!(served.status, 200);
    assert_eq!(model.turns_served(), 1);
}

#[test]
fn a_hang_holds_its_answer_back_then_gives_a_504_and_the_turn_follows() {
    let model =
        serve("turns:\n  - text: Done.\n    faults:\n      - { fault: hang, seconds: 1 }\n");
    let started = std::time::Instant::now();
    let hung = messages(&model.uri(), &claude_request(false, None));
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    assert_eq!(hung.status, 504);
    assert_eq!(hung.json()["error"]["type"], "timeout_error");
    assert_eq!(model.log()[0].fault.as_ref().unwrap().seconds, Some(1));
    let served = messages(&model.uri(), &claude_request(false, None));
    assert_eq!(served.status, 200);
    let malformed = serve("turns:\n  - text: Done.\n    faults: [{ fault: malformed }]\n");
    let answer = responses(&malformed.uri(), &codex_request(false, None));
    assert_eq!(answer.status, 200);
    assert!(serde_json::from_str::<Value>(&answer.text).is_err());
}

#[test]
fn usage_windows_ride_every_later_answer_and_a_limit_turn_is_a_rejected_429() {
    let model = serve(
        "turns:
  - text: Looking.
    windows:
      five_hour: { utilization: 0.30, resets_at: \"2026-05-09T19:00:00Z\" }
      seven_day: { utilization: 0.10, resets_at: \"2026-05-12T09:00:00Z\" }
  - text: Done.
    windows:
      five_hour: { utilization: 0.55, resets_at: \"2026-05-09T19:00:00Z\" }
  - limit: five_hour
",
    );
    let h = "anthropic-ratelimit-unified-";
    let first = messages(&model.uri(), &claude_request(true, None));
    assert_eq!(first.header(&format!("{h}5h-utilization")), Some("0.3"));
    assert_eq!(first.header(&format!("{h}5h-reset")), Some("1778353200"));
    assert_eq!(first.header(&format!("{h}7d-utilization")), Some("0.1"));
    assert_eq!(first.header(&format!("{h}status")), Some("allowed"));
    let second = messages(&model.uri(), &claude_request(true, None));
    assert_eq!(second.header(&format!("{h}5h-utilization")), Some("0.55"));
    assert_eq!(
        second.header(&format!("{h}7d-utilization")),
        Some("0.1"),
        "a window the turn does not name keeps its figure"
    );
    let limited = messages(&model.uri(), &claude_request(true, None));
    assert_eq!(limited.status, 429);
    assert_eq!(limited.json()["error"]["type"], "rate_limit_error");
    assert_eq!(limited.header(&format!("{h}status")), Some("rejected"));
    assert_eq!(limited.header(&format!("{h}5h-status")), Some("rejected"));
    assert_eq!(
        limited.header(&format!("{h}representative-claim")),
        Some("five_hour")
    );
    assert_eq!(limited.header(&format!("{h}reset")), Some("1778353200"));
    assert_eq!(limited.header("retry-after"), None);
    assert_eq!(model.turns_served(), 3, "the limit used its turn");
    let outcomes: Vec<_> = model.log().iter().map(|e| e.outcome).collect();
    assert_eq!(
        outcomes,
        [
            sdd_mocks::model::turns::Outcome::Turn,
            sdd_mocks::model::turns::Outcome::Turn,
            sdd_mocks::model::turns::Outcome::Limited
        ]
    );
    // Other APIs carry none.
    let codex = responses(&serve(
        "turns:\n  - text: Hi.\n    windows:\n      five_hour: { utilization: 0.3, resets_at: \"2026-05-09T19:00:00Z\" }\n",
    ).uri(), &codex_request(true, None));
    assert_eq!(codex.header(&format!("{h}5h-utilization")), None);
}

#[test]
fn a_limit_turn_with_text_and_a_window_out_of_range_are_refused_at_their_line() {
    for (text, wanted) in [
        (
            "turns:\n  - text: Hi.\n    limit: five_hour\n",
            "a limited turn is answered 429",
        ),
        (
            "turns:\n  - text: Hi.\n    windows:\n      five_hour: { utilization: 30, resets_at: \"2026-05-09T19:00:00Z\" }\n",
            "`five_hour.utilization` is 30",
        ),
        (
            "turns:\n  - text: Hi.\n    windows:\n      seven_day: { utilization: 0.3, resets_at: tomorrow }\n",
            "not an RFC 3339 instant",
        ),
    ] {
        let err = Script::parse(Path::new("inline.yaml"), text)
            .unwrap_err()
            .render();
        assert!(err.contains(wanted), "{err}");
        assert!(err.contains("inline.yaml:2:"), "{err}");
    }
}
