use std::time::{Duration, Instant};

use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn answering(rt: &tokio::runtime::Runtime, status: u16) -> MockServer {
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).set_body_string("nope"))
            .mount(&server),
    );
    server
}

fn hanging(rt: &tokio::runtime::Runtime) -> MockServer {
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(600)))
            .mount(&server),
    );
    server
}

fn received(rt: &tokio::runtime::Runtime, server: &MockServer) -> Vec<wiremock::Request> {
    rt.block_on(server.received_requests()).unwrap_or_default()
}

fn gate(code: Option<&str>) -> Notice {
    Notice::GatePosted(GatePosted {
        skill: "work".into(),
        gate: "budget-80".into(),
        question: "80% of the iteration budget is used. Continue?".into(),
        options: vec!["continue".into(), "stop".into()],
        link: "https://github.com/o/r/issues/7#issuecomment-1".into(),
        code: code.map(str::to_owned),
    })
}

fn stopped() -> Notice {
    Notice::RunStopped(RunStopped {
        skill: "work".into(),
        cause: "iteration-ceiling".into(),
        message: "3 of 3 iterations used".into(),
        figures: vec![
            "Iterations: 3/3".into(),
            "Dollars: $0.42 (no cost ceiling)".into(),
        ],
    })
}

fn soon() -> Instant {
    Instant::now() + TICK_LIMIT
}

fn plain() -> Redactor {
    Redactor::builder().build()
}

#[test]
fn the_format_follows_the_prefix_then_the_host() {
    let f = |u: &str| Target::parse(u).map(|t| t.format());
    assert_eq!(f("https://ntfy.sh/topic"), Ok(Format::Ntfy));
    assert_eq!(
        f("https://hooks.slack.com/services/T/B/x"),
        Ok(Format::Slack)
    );
    assert_eq!(
        f("https://discord.com/api/webhooks/1/abc"),
        Ok(Format::Discord)
    );
    assert_eq!(
        f("https://discordapp.com/api/webhooks/1/abc"),
        Ok(Format::Discord)
    );
    assert_eq!(f("https://discord.com/channels/1"), Ok(Format::Ntfy));
    assert_eq!(f("slack+https://chat.example/hooks/x"), Ok(Format::Slack));
    assert_eq!(f("discord+http://127.0.0.1:9/x"), Ok(Format::Discord));
    assert_eq!(f("ntfy+https://hooks.slack.com/x"), Ok(Format::Ntfy));
    assert!(matches!(
        f("teams+https://x.example/"),
        Err(TargetError::Prefix { .. })
    ));
    assert!(matches!(
        f("ftp://x.example/"),
        Err(TargetError::Scheme { .. })
    ));
    assert!(matches!(
        f("ntfy.sh/topic"),
        Err(TargetError::Scheme { .. })
    ));
    assert!(matches!(
        f("https:///topic"),
        Err(TargetError::NoHost { .. })
    ));
}

#[test]
fn credentials_leave_the_url_for_a_header_and_are_never_shown() {
    let t = Target::parse("https://alice:s%3Acret@ntfy.example:8443/private-topic?x=1").unwrap();
    assert_eq!(t.url(), "https://ntfy.example:8443/private-topic?x=1");
    assert_eq!(
        t.auth.as_deref(),
        Some("Basic YWxpY2U6czpjcmV0"),
        "alice:s:cret"
    );
    assert_eq!(t.shown(), "ntfy https://ntfy.example:8443/…");
    let secrets = t.secrets();
    assert!(secrets.iter().any(|s| s.contains("alice:s%3Acret")));
    assert!(secrets.iter().any(|s| s.ends_with("private-topic?x=1")));
    let bearer = Target::parse("https://tk_abcdef123456@ntfy.example/t").unwrap();
    assert_eq!(bearer.auth.as_deref(), Some("Bearer tk_abcdef123456"));
    let err = Target::parse("ftp://bob:pw@host/x")
        .unwrap_err()
        .to_string();
    assert!(!err.contains("bob") && !err.contains("pw@"), "{err}");
}

#[test]
fn base64_pads_like_the_standard() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"foob"), "Zm9vYg==");
}

#[test]
fn a_list_splits_on_whitespace_and_commas() {
    let list =
        parse_list(" https://ntfy.sh/a,https://hooks.slack.com/x\nhttps://b.example/c ").unwrap();
    assert_eq!(list.len(), 3);
    assert!(parse_list("").unwrap().is_empty());
}

#[test]
fn ntfy_gets_the_text_as_body_and_its_headers() {
    let rt = rt();
    let server = answering(&rt, 200);
    let target = Target::parse(&format!("{}/my-topic", server.uri())).unwrap();
    let failures = tell(&[target], &gate(Some("K7Q2-93XF")), &plain(), soon());
    assert!(failures.is_empty(), "{failures:?}");
    let got = received(&rt, &server);
    assert_eq!(got.len(), 1);
    let req = &got[0];
    assert_eq!(req.url.path(), "/my-topic");
    let header = |n: &str| {
        req.headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    assert_eq!(
        header("title"),
        "sdd-loop work: a gate waits for you (budget-80)"
    );
    assert_eq!(header("priority"), "4");
    assert_eq!(header("tags"), "question,sdd-loop");
    assert_eq!(
        header("click"),
        "https://github.com/o/r/issues/7#issuecomment-1"
    );
    let body = String::from_utf8_lossy(&req.body);
    assert!(
        body.contains("Continue?") && body.contains("continue | stop"),
        "{body}"
    );
    assert!(
        body.contains("Answer code (yours only): K7Q2-93XF"),
        "{body}"
    );
}

#[test]
fn slack_and_discord_get_their_json_field() {
    let rt = rt();
    let server = answering(&rt, 204);
    rt.block_on(
        Mock::given(path("/never"))
            .respond_with(ResponseTemplate::new(500))
            .mount(&server),
    );
    let slack = Target::parse(&format!("slack+{}/s", server.uri())).unwrap();
    let discord = Target::parse(&format!("discord+{}/d", server.uri())).unwrap();
    assert!(tell(&[slack, discord], &stopped(), &plain(), soon()).is_empty());
    let mut got = received(&rt, &server);
    got.sort_by_key(|r| r.url.path().to_owned());
    let json =
        |r: &wiremock::Request| serde_json::from_slice::<serde_json::Value>(&r.body).unwrap();
    let d = json(&got[0]);
    let s = json(&got[1]);
    assert_eq!(got[0].url.path(), "/d");
    assert!(d["content"].as_str().unwrap().starts_with(
        "**sdd-loop work: the loop stopped (iteration-ceiling)**\nStop cause: iteration-ceiling"
    ));
    assert!(
        s["text"].as_str().unwrap().contains("Iterations: 3/3"),
        "{s}"
    );
    assert!(s.get("content").is_none() && d.get("text").is_none());
}

#[test]
fn the_body_is_redacted_but_the_code_is_not() {
    let rt = rt();
    let server = answering(&rt, 200);
    let target = Target::parse(&format!("{}/t", server.uri())).unwrap();
    let mut notice = gate(Some("K7Q2-93XF"));
    if let Notice::GatePosted(g) = &mut notice {
        g.question = "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 leaked; continue?".into();
    }
    assert!(tell(&[target], &notice, &plain(), soon()).is_empty());
    let body = String::from_utf8_lossy(&received(&rt, &server)[0].body).into_owned();
    assert!(!body.contains("ghp_abcdef"), "{body}");
    assert!(
        body.contains("[REDACTED:github-token]") && body.contains("K7Q2-93XF"),
        "{body}"
    );
}

#[test]
fn a_refusal_and_a_hang_fail_in_bounded_time_and_the_others_arrive() {
    let rt = rt();
    let (ok, refusing, hung) = (answering(&rt, 200), answering(&rt, 500), hanging(&rt));
    let targets: Vec<Target> = [&ok, &refusing, &hung]
        .iter()
        .map(|s| Target::parse(&format!("{}/topic", s.uri())).unwrap())
        .collect();
    let start = Instant::now();
    let failures = tell(
        &targets,
        &stopped(),
        &plain(),
        Instant::now() + Duration::from_millis(800),
    );
    let took = start.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert_eq!(received(&rt, &ok).len(), 1);
    let details: Vec<(usize, &str)> = failures
        .iter()
        .map(|f| (f.target, f.detail.as_str()))
        .collect();
    assert_eq!(details.len(), 2, "{failures:?}");
    assert_eq!(details[0], (1, "HTTP 500: nope"));
    assert_eq!(details[1].0, 2);
    assert!(details[1].1.starts_with("no answer within"), "{failures:?}");
    assert!(
        !failures[1].to_string().contains("/topic"),
        "{}",
        failures[1]
    );
}

#[test]
fn a_refused_connection_is_a_failure_not_a_panic() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = Target::parse(&format!("http://127.0.0.1:{port}/t")).unwrap();
    let failures = tell(&[target], &stopped(), &plain(), soon());
    assert_eq!(failures.len(), 1);
    assert!(
        failures[0].detail.starts_with("unreachable"),
        "{failures:?}"
    );
}

fn outbox<'a>(targets: &'a [Target], dir: &Path, redactor: &'a Redactor) -> Outbox<'a> {
    Outbox {
        targets,
        path: pending_path(dir, "work"),
        redactor,
        limit: Duration::from_millis(800),
    }
}

#[test]
fn an_undelivered_notice_is_kept_without_its_code_and_retried_once_a_tick() {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let (ok, refusing) = (answering(&rt, 200), answering(&rt, 500));
    let targets: Vec<Target> = [&ok, &refusing]
        .iter()
        .map(|s| Target::parse(&format!("{}/topic", s.uri())).unwrap())
        .collect();
    let redactor = plain();
    let out = outbox(&targets, dir.path(), &redactor);
    let first = out.deliver(&[gate(Some("K7Q2-93XF"))], "2026-05-09T14:00:00Z");
    assert_eq!((first.sent, first.delivered, first.kept), (2, 1, 1));
    let kept = std::fs::read_to_string(&out.path).unwrap();
    assert!(
        !kept.contains("K7Q2-93XF"),
        "the code reached the disk: {kept}"
    );
    assert!(
        !kept.contains(&refusing.uri()),
        "a URL reached the disk: {kept}"
    );
    assert!(
        kept.contains("\"targets\": [\n        1\n      ]"),
        "{kept}"
    );

    // The next tick retries it once, to the target it missed only.
    let second = out.deliver(&[], "2026-05-09T14:10:00Z");
    assert_eq!((second.sent, second.delivered, second.kept), (1, 0, 1));
    assert_eq!(received(&rt, &ok).len(), 1);
    let retried = received(&rt, &refusing);
    assert_eq!(retried.len(), 2);
    let body = String::from_utf8_lossy(&retried[1].body);
    assert!(
        body.contains("never kept on disk") && !body.contains("K7Q2"),
        "{body}"
    );

    // The third tick is the last try; then it is given up.
    let third = out.deliver(&[], "2026-05-09T14:20:00Z");
    assert_eq!(third.given_up, ["gate-posted"]);
    assert!(!out.path.exists());
    assert_eq!(received(&rt, &refusing).len(), 3);
    let fourth = out.deliver(&[], "2026-05-09T14:30:00Z");
    assert_eq!(fourth, Delivery::default());
}

#[test]
fn a_retry_that_arrives_empties_the_file() {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let server = rt.block_on(MockServer::builder().start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(503))
            .up_to_n_times(1)
            .mount(&server),
    );
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&server),
    );
    let targets = [Target::parse(&format!("{}/t", server.uri())).unwrap()];
    let redactor = plain();
    let out = outbox(&targets, dir.path(), &redactor);
    assert_eq!(out.deliver(&[stopped()], "2026-05-09T14:00:00Z").kept, 1);
    let again = out.deliver(&[], "2026-05-09T14:10:00Z");
    assert_eq!((again.sent, again.delivered, again.kept), (1, 1, 0));
    assert!(!out.path.exists());
}

#[test]
fn no_targets_touch_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let redactor = plain();
    let out = outbox(&[], dir.path(), &redactor);
    std::fs::write(&out.path, "not json").unwrap();
    assert_eq!(
        out.deliver(&[stopped()], "2026-05-09T14:00:00Z"),
        Delivery::default()
    );
    assert_eq!(std::fs::read_to_string(&out.path).unwrap(), "not json");
}

#[test]
fn the_work_loses_the_notify_variables() {
    assert_eq!(
        child_env_removed(&["MY_NTFY".into(), ENV_NOTIFY.into()]),
        [ENV_NOTIFY, "MY_NTFY"]
    );
}
