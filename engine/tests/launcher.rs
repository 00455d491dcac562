//! The plugin's hook launcher, `hooks/sdd-loop-hook` (POSIX sh): it
//! recognises exactly the loop prompts the engine recognises, finds the
//! engine (override, PATH, the npm package's binary), checks its hook
//! protocol, and fails closed — a loop prompt blocked with the reason
//! when there is no usable engine or the engine crashes, hangs or prints
//! garbage; anything else untouched. It answers within the hook's limit
//! whatever the candidates, the engine or the prompt's size do, and what
//! it stops leaves nothing behind. Also `sdd-loop doctor`'s verdicts on a
//! bare machine. The real Claude Code runs the launcher in
//! ci/plugin-install and in the `hook-*` cases.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use sdd_loop::hook::prompt::recognise;
use serde_json::{Value, json};

fn launcher() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("hooks/sdd-loop-hook")
}

fn engine() -> &'static str {
    env!("CARGO_BIN_EXE_sdd-loop")
}

fn input(prompt: &str) -> String {
    json!({
        "session_id": "s-1",
        "transcript_path": "/nonexistent/t.jsonl",
        "cwd": "/nonexistent",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    })
    .to_string()
}

/// The same JSON with every non-ASCII character as `\uXXXX` (surrogate
/// pairs beyond the BMP), as an ASCII-only writer would send it.
fn ascii_escaped(json: &str) -> String {
    let mut out = String::new();
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}

/// Runs the launcher with ARGS, `stdin`, and only the environment given
/// (HOME in an empty directory: no ~/.cargo/bin).
fn launch(args: &[&str], stdin: &str, env: &[(&str, &str)], home: &Path) -> Output {
    let mut child = Command::new(launcher())
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    // A launcher that does not read (pre-tool-use without an engine) may
    // close its end first.
    let _ = pipe.write_all(stdin.as_bytes());
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn is_loop_prompt(json: &str, home: &Path) -> bool {
    let out = launch(&["--is-loop-prompt"], json, &[], home);
    match out.status.code() {
        Some(0) => true,
        Some(1) => false,
        other => panic!(
            "--is-loop-prompt exited {other:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// The reason of a block answer, or None for no answer.
fn blocked(out: &Output) -> Option<String> {
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return None;
    }
    let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(answer["decision"], "block", "{answer}");
    Some(answer["reason"].as_str().unwrap().to_owned())
}

/// A directory holding an executable `sdd-loop` with BODY after the
/// handshake (which answers `hook-protocol PROTOCOL`).
fn fake_engine(protocol: &str, body: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sdd-loop");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nif [ \"$1 $2\" = \"hook --protocol\" ]; then echo \"hook-protocol {protocol} sdd-loop 9.1.0\"; exit 0; fi\ncat >/dev/null\n{body}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn path_with(dir: &Path) -> String {
    format!("{}:/usr/bin:/bin", dir.display())
}

/// Runs the launcher as `launch` does, in a process group of its own, and
/// gives it `limit`: past it the group is killed and the test fails (a
/// launcher that waits for ever, or reads a prompt for minutes, must not
/// hold the suite). Returns what it printed and how long it took.
fn launch_within(
    args: &[&str],
    stdin: &str,
    env: &[(&str, &str)],
    home: &Path,
    limit: Duration,
) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = Command::new(launcher())
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .envs(env.iter().copied())
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let group = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let bytes = stdin.as_bytes().to_vec();
    // A launcher that does not read may close its end first.
    std::thread::spawn(move || {
        let _ = pipe.write_all(&bytes);
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output().unwrap());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => (out, started.elapsed()),
        Err(_) => {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let stderr = rx
                .recv_timeout(Duration::from_secs(10))
                .map(|out| String::from_utf8_lossy(&out.stderr).into_owned())
                .unwrap_or_default();
            panic!("{args:?} did not answer within {limit:?}: {stderr}");
        }
    }
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
}

/// Lets go whatever still waits to read `fifo` (it reads end of file),
/// so that nothing a failed test left behind waits for ever.
fn release(fifo: &Path) {
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(fifo);
}

/// A directory holding an executable `sdd-loop` that never answers the
/// handshake (it waits to read the FIFO `hang`, which nobody writes).
fn silent_engine() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("hang");
    mkfifo(&fifo);
    let path = dir.path().join("sdd-loop");
    std::fs::write(
        &path,
        format!("#!/bin/sh\nread -r line <'{}'\nexit 1\n", fifo.display()),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// A directory of the tools the launcher runs, as links, without
/// `timeout`: its watchdog's way, as on macOS.
fn tools_without_timeout() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for tool in [
        "sh", "awk", "sed", "head", "tail", "tr", "cat", "date", "mktemp", "rm", "sleep", "ps",
    ] {
        if let Some(found) = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
        {
            std::os::unix::fs::symlink(found, dir.path().join(tool)).unwrap();
        }
    }
    assert!(!dir.path().join("timeout").exists());
    dir
}

/// Whether process `pid` still runs (a zombie does not: it is dead,
/// waiting for a parent to reap it).
fn runs(pid: &str) -> bool {
    let out = Command::new("ps")
        .args(["-o", "stat=", "-p", pid])
        .output()
        .unwrap();
    let state = String::from_utf8_lossy(&out.stdout);
    let state = state.trim();
    !state.is_empty() && !state.starts_with('Z')
}

/// A project whose work loop's lock names a live process (this test's):
/// a tick is open.
fn project_with_an_open_tick() -> tempfile::TempDir {
    let project = tempfile::tempdir().unwrap();
    let loop_dir = project.path().join(".sdd/loop");
    std::fs::create_dir_all(&loop_dir).unwrap();
    std::fs::write(
        loop_dir.join("work.lock"),
        json!({
            "pid": std::process::id(),
            "iteration": 3,
            "started_at": "2026-01-01T00:00:00Z",
            "skill": "work",
        })
        .to_string(),
    )
    .unwrap();
    project
}

const LOOP: &str = "/loop 5m /sdd:work --loop --max-prs 1";

#[test]
fn the_launcher_speaks_a_protocol_the_engine_speaks() {
    let text = std::fs::read_to_string(launcher()).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("PROTOCOL="))
        .expect("PROTOCOL= in hooks/sdd-loop-hook");
    let protocol: u32 = line["PROTOCOL=".len()..].parse().unwrap();
    assert!(sdd_loop::hook::PROTOCOLS.contains(&protocol));
    let out = Command::new(engine())
        .args(["hook", "--protocol"])
        .output()
        .unwrap();
    let speaks: Vec<String> = sdd_loop::hook::PROTOCOLS
        .iter()
        .map(u32::to_string)
        .collect();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "hook-protocol {} sdd-loop {}\n",
            speaks.join(","),
            env!("CARGO_PKG_VERSION")
        )
    );
    assert!(speaks.contains(&protocol.to_string()));
}

#[test]
fn tricky_prompts_are_recognised_as_the_engine_does() {
    let home = tempfile::tempdir().unwrap();
    for prompt in [
        "/sdd:work --loop",
        "  /sdd:review --loop --pr 142  ",
        "/sdd-loop:work --loop every 20m",
        "/loop /sdd:work --loop every 5 minutes",
        "/loop 10m /sdd-loop:review --loop",
        "/loop 10x /sdd:work --loop",
        "/loop",
        "/loop 5m",
        "/sdd:work \"--loop\"",
        "/sdd:work '--lo'op",
        "/sdd:work --lo\\op",
        "/sdd:work \"--max-prs 1 --loop\"",
        "/sdd:work\t--loop",
        "/sdd:work\n--loop",
        "/sdd:work\u{a0}--loop",
        "/sdd:work\u{2003}--loop",
        "/sdd:work\u{3000}--loop",
        "/sdd:work\u{200b}--loop",
        "\u{feff}/sdd:work --loop",
        "/sdd:work --loop\\",
        "/sdd:work --loop \\\u{a0}",
        "/sdd:work \"--loop",
        "/sdd:work '--loop",
        "\"/sdd:work\" --loop",
        "/sdd:works --loop",
        "please run /sdd:work --loop",
        "/sdd:work --max-prs 1",
        "/sdd:work 😀 --loop",
        "😀 /sdd:work --loop",
        "",
    ] {
        let expected = recognise(prompt).is_some();
        let json = input(prompt);
        assert_eq!(is_loop_prompt(&json, home.path()), expected, "{prompt:?}");
        assert_eq!(
            is_loop_prompt(&ascii_escaped(&json), home.path()),
            expected,
            "{prompt:?} (\\u-escaped)"
        );
    }
    // Not a prompt the engine can read: never a loop prompt.
    for json in [
        "{\"prompt\": \"/sdd:work --loop\",}",
        "{\"prompt\": 7}",
        "[\"/sdd:work --loop\"]",
        "{\"prompt\": \"/sdd:work --loop\"} x",
        "{\"prompt\": \"/sdd:work \\ud800 --loop\"}",
    ] {
        assert!(!is_loop_prompt(json, home.path()), "{json}");
    }
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/loop".to_owned()),
        Just("/sdd:work".to_owned()),
        Just("/sdd:review".to_owned()),
        Just("/sdd-loop:work".to_owned()),
        Just("/sdd-loop:review".to_owned()),
        Just("--loop".to_owned()),
        Just("--max-prs".to_owned()),
        Just("5m".to_owned()),
        Just("every".to_owned()),
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("\\\"".to_owned()),
        Just("$".to_owned()),
        Just("--lo".to_owned()),
        Just("op".to_owned()),
        Just("é".to_owned()),
        Just("\u{a0}".to_owned()),
        Just("\u{2028}".to_owned()),
        Just("\u{1f600}".to_owned()),
        "[a-z0-9:/-]{0,6}",
    ]
}

fn gap() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(" ".to_owned()),
        Just("".to_owned()),
        Just("  ".to_owned()),
        Just("\t".to_owned()),
        Just("\n".to_owned()),
        Just("\u{85}".to_owned()),
        Just("\u{2009}".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// Whatever the prompt, the launcher and the engine agree on whether
    /// it is a loop prompt — as Claude Code writes it, and \u-escaped.
    #[test]
    fn the_launcher_and_the_engine_agree_on_loop_prompts(
        parts in prop::collection::vec((word(), gap()), 0..7),
    ) {
        let prompt: String = parts.iter().map(|(w, g)| format!("{w}{g}")).collect();
        let home = tempfile::tempdir().unwrap();
        let expected = recognise(&prompt).is_some();
        let json = input(&prompt);
        prop_assert_eq!(is_loop_prompt(&json, home.path()), expected, "{:?}", prompt);
        prop_assert_eq!(is_loop_prompt(&ascii_escaped(&json), home.path()), expected, "{:?} escaped", prompt);
    }
}

#[test]
fn without_an_engine_a_loop_prompt_is_blocked_and_nothing_else_is_touched() {
    let home = tempfile::tempdir().unwrap();
    let reason = blocked(&launch(
        &["user-prompt-submit"],
        &input(LOOP),
        &[],
        home.path(),
    ))
    .expect("a loop prompt is blocked");
    for part in [
        "the model was not called",
        "Missing: sdd-loop",
        "Looked in:",
        "PATH=/usr/bin:/bin",
        "lib/node_modules/sdd-loop",
        &format!("{}/.cargo/bin", home.path().display()),
        &format!("npm install -g sdd-loop@{}", env!("CARGO_PKG_VERSION")),
        "sdd-loop doctor",
    ] {
        assert!(reason.contains(part), "{part:?} not in:\n{reason}");
    }
    assert_eq!(
        blocked(&launch(
            &["user-prompt-submit"],
            &input("hello"),
            &[],
            home.path()
        )),
        None
    );
    for event in ["pre-tool-use", "stop"] {
        let out = launch(&[event], "{\"tool_name\":\"Bash\"}", &[], home.path());
        assert_eq!(blocked(&out), None, "{event}");
    }
}

/// Issue 33: `source` decides, with no engine as with one — a loop
/// prompt that another session, a channel or an event sent (`system`,
/// `poll_event`) is plain text and passes; the user's own senders, and a
/// payload without the field, are blocked with no engine.
#[test]
fn without_an_engine_only_the_users_own_senders_loop_prompts_are_blocked() {
    let home = tempfile::tempdir().unwrap();
    let from = |source: Option<&str>| {
        let mut json: serde_json::Value = serde_json::from_str(&input(LOOP)).unwrap();
        if let Some(s) = source {
            json["source"] = json!(s);
        }
        json.to_string()
    };
    for source in [
        None,
        Some("user"),
        Some("sdk"),
        Some("loop_wakeup"),
        Some("schedule_wakeup"),
    ] {
        let json = from(source);
        assert!(is_loop_prompt(&json, home.path()), "{source:?}");
        let out = launch(&["user-prompt-submit"], &json, &[], home.path());
        assert!(blocked(&out).is_some(), "{source:?}");
    }
    for source in ["system", "poll_event", "peer_message", "", "USER"] {
        let json = from(Some(source));
        assert!(!is_loop_prompt(&json, home.path()), "{source}");
        assert!(
            !is_loop_prompt(&ascii_escaped(&json), home.path()),
            "{source} escaped"
        );
        let out = launch(&["user-prompt-submit"], &json, &[], home.path());
        assert_eq!(blocked(&out), None, "{source}");
        assert!(out.status.success(), "{source}: {out:?}");
    }
}

#[test]
fn an_engine_of_another_protocol_is_named_with_both_protocols() {
    let home = tempfile::tempdir().unwrap();
    let fake = fake_engine("3,4", "echo '{}'");
    let path = path_with(fake.path());
    let reason = blocked(&launch(
        &["user-prompt-submit"],
        &input(LOOP),
        &[("PATH", &path)],
        home.path(),
    ))
    .unwrap();
    assert!(
        reason.contains(&format!(
            "is sdd-loop 9.1.0, which speaks hook protocol 3,4; this plugin (sdd-loop {}) speaks hook protocol 2",
            env!("CARGO_PKG_VERSION")
        )),
        "{reason}"
    );
    let out = launch(&["pre-tool-use"], "{}", &[("PATH", &path)], home.path());
    assert_eq!(blocked(&out), None);
}

#[test]
fn an_engine_that_crashes_hangs_or_prints_garbage_blocks_a_loop_prompt() {
    let home = tempfile::tempdir().unwrap();
    for (body, says) in [
        ("echo boom >&2; exit 70", "failed (exit 70)"),
        ("kill -KILL $$", "failed (exit 137)"),
        ("echo 'hello there'", "not a hook answer: hello there"),
        (
            "echo '{\"decision\":\"block\",\"reason\":'",
            "not a hook answer",
        ),
        ("exit 0", "printed no answer to a loop prompt"),
        ("exec sleep 300", "did not answer within 1 s"),
    ] {
        let fake = fake_engine("1,2", body);
        let path = path_with(fake.path());
        // The launcher tells a hang from a crash by whole seconds of
        // `date`: an engine that crashed in the last second of a 1 s wait
        // would read as one that did not answer. Only the hang waits 1 s.
        let wait = if body.contains("sleep") { "1" } else { "5" };
        let env = [("PATH", path.as_str()), ("SDD_LOOP_HOOK_WAIT", wait)];
        let started = Instant::now();
        let reason = blocked(&launch(
            &["user-prompt-submit"],
            &input(LOOP),
            &env,
            home.path(),
        ))
        .unwrap_or_else(|| panic!("not blocked: {body}"));
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{body}: {:?}",
            started.elapsed()
        );
        assert!(reason.contains(says), "{body}: {reason}");
        assert!(reason.contains("npm install -g sdd-loop@"), "{reason}");
        // Any other prompt passes untouched, whatever the engine did.
        let out = launch(&["user-prompt-submit"], &input("hello"), &env, home.path());
        assert_eq!(blocked(&out), None, "{body}");
    }
}

/// An engine candidate that never answers `hook --protocol` is stopped
/// and counts as no engine: each hook answers within its bound (2 s for
/// these events; the engine answers 5 s before the hook's limit, counted
/// from its own start), with and without timeout(1). With no tick open
/// nothing is decided; with one open, PreToolUse refuses the tool call
/// (nothing can check it against the tick's contract) and the others do
/// nothing.
#[test]
fn a_candidate_that_never_answers_the_handshake_is_no_engine_and_the_hook_answers_in_time() {
    let home = tempfile::tempdir().unwrap();
    let silent = silent_engine();
    let bin = silent.path().join("sdd-loop");
    let tools = tools_without_timeout();
    let idle = tempfile::tempdir().unwrap();
    let open = project_with_an_open_tick();
    let tool_call = r#"{"session_id":"s-1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"gh pr create --title x --body y"}}"#;
    let usual = "/usr/bin:/bin";
    let no_timeout = tools.path().to_str().unwrap();
    let cases = [
        ("pre-tool-use", usual, idle.path(), false),
        ("pre-tool-use", no_timeout, idle.path(), false),
        ("pre-tool-use", usual, open.path(), true),
        ("pre-tool-use", no_timeout, open.path(), true),
        ("stop", usual, open.path(), false),
        ("stop-failure", usual, open.path(), false),
        ("session-end", usual, open.path(), false),
    ];
    for (event, path, project, denied) in cases {
        let env = [
            ("PATH", path),
            ("SDD_LOOP_BIN", bin.to_str().unwrap()),
            ("CLAUDE_PROJECT_DIR", project.to_str().unwrap()),
        ];
        let (out, took) = launch_within(
            &[event],
            tool_call,
            &env,
            home.path(),
            Duration::from_secs(40),
        );
        release(&silent.path().join("hang"));
        let case = format!("{event} (PATH={path}, tick open: {denied})");
        assert!(out.status.success(), "{case}: {out:?}");
        assert!(
            took < Duration::from_secs(20),
            "{case}: {took:?}, the hook's limit is 30 s"
        );
        let text = String::from_utf8_lossy(&out.stdout);
        if !denied {
            assert_eq!(text.trim(), "", "{case}");
            continue;
        }
        let answer: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{case}: {e}: {text}"));
        let answer = &answer["hookSpecificOutput"];
        assert_eq!(answer["hookEventName"], "PreToolUse", "{case}");
        assert_eq!(answer["permissionDecision"], "deny", "{case}");
        let reason = answer["permissionDecisionReason"].as_str().unwrap();
        for part in [
            "a loop tick is open in this project",
            ".sdd/loop/work.lock, held by process",
            &format!(
                "{} did not answer `sdd-loop hook --protocol` within 2 s",
                bin.display()
            ),
            "fail closed",
            "npm install -g sdd-loop@",
        ] {
            assert!(reason.contains(part), "{case}: {part:?} not in:\n{reason}");
        }
    }
}

/// UserPromptSubmit: the handshakes are bounded all together, not each
/// (by 10 s, or the wait when shorter): however many candidates never
/// answer, a loop prompt is blocked, with why, well within the hook's
/// limit.
#[test]
fn a_loop_prompt_is_blocked_in_time_whatever_number_of_candidates_never_answer() {
    let home = tempfile::tempdir().unwrap();
    let silent: Vec<tempfile::TempDir> = (0..6).map(|_| silent_engine()).collect();
    let dirs: Vec<String> = silent
        .iter()
        .map(|d| d.path().display().to_string())
        .collect();
    let path = format!("{}:/usr/bin:/bin", dirs.join(":"));
    let env = [("PATH", path.as_str()), ("SDD_LOOP_HOOK_WAIT", "3")];
    let release_all = || {
        for d in &silent {
            release(&d.path().join("hang"));
        }
    };
    let (out, took) = launch_within(
        &["user-prompt-submit"],
        &input(LOOP),
        &env,
        home.path(),
        Duration::from_secs(50),
    );
    release_all();
    assert!(took < Duration::from_secs(30), "{took:?}");
    let reason = blocked(&out).expect("a loop prompt is blocked");
    for part in [
        format!(
            "{}/sdd-loop did not answer `sdd-loop hook --protocol` within 3 s",
            dirs[0]
        ),
        format!(
            "{}/sdd-loop was not asked `sdd-loop hook --protocol`: the 3 s",
            dirs[5]
        ),
    ] {
        assert!(reason.contains(&part), "{part:?} not in:\n{reason}");
    }
    let (out, _) = launch_within(
        &["user-prompt-submit"],
        &input("hello"),
        &env,
        home.path(),
        Duration::from_secs(50),
    );
    release_all();
    assert_eq!(blocked(&out), None);
}

/// The launcher reads a prompt in time linear in its size (it was
/// quadratic: 3.2 MB took two minutes), and reads it while the engine
/// runs: a multi-megabyte loop prompt is blocked, and any other passes,
/// well within the hook's 120 s even when the engine uses all its time.
#[test]
fn a_multi_megabyte_prompt_is_answered_well_within_the_hook_s_limit() {
    let home = tempfile::tempdir().unwrap();
    let text = "pasted log line here, \"quoted\" and 'not'\n".repeat(200_000);
    let plain = input(&text);
    let looping = input(&format!("{LOOP} {text}"));
    assert!(plain.len() > 8_000_000, "{}", plain.len());
    assert!(recognise(&format!("{LOOP} {text}")).is_some());
    let limit = Duration::from_secs(100);
    for (json, code) in [(&plain, 1), (&looping, 0)] {
        let (out, took) = launch_within(&["--is-loop-prompt"], json, &[], home.path(), limit);
        assert_eq!(out.status.code(), Some(code), "{out:?}");
        assert!(took < Duration::from_secs(60), "{took:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("hang");
    mkfifo(&fifo);
    let fake = fake_engine("1,2", &format!("read -r line <'{}'", fifo.display()));
    let path = path_with(fake.path());
    let env = [("PATH", path.as_str()), ("SDD_LOOP_HOOK_WAIT", "2")];
    let (out, took) = launch_within(&["user-prompt-submit"], &looping, &env, home.path(), limit);
    release(&fifo);
    let reason = blocked(&out).expect("a loop prompt is blocked");
    assert!(reason.contains("did not answer within 2 s"), "{reason}");
    assert!(took < Duration::from_secs(60), "{took:?}");
    let (out, took) = launch_within(&["user-prompt-submit"], &plain, &env, home.path(), limit);
    release(&fifo);
    assert_eq!(blocked(&out), None);
    assert!(took < Duration::from_secs(60), "{took:?}");
}

/// Without timeout(1) (macOS) the launcher's watchdog stops the engine
/// with every process it started: nothing outlives the hook.
#[test]
fn without_timeout_the_watchdog_leaves_no_process_of_the_engine_behind() {
    let home = tempfile::tempdir().unwrap();
    let tools = tools_without_timeout();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("hang");
    let pids = dir.path().join("pids");
    mkfifo(&fifo);
    // The engine starts a child that waits for ever, says who they are,
    // and waits for it.
    let fake = fake_engine(
        "1,2",
        &format!(
            "cat '{}' >/dev/null &\necho $$ $! >'{}'\nwait",
            fifo.display(),
            pids.display()
        ),
    );
    let path = format!("{}:{}", fake.path().display(), tools.path().display());
    let env = [("PATH", path.as_str()), ("SDD_LOOP_HOOK_WAIT", "3")];
    let (out, took) = launch_within(
        &["user-prompt-submit"],
        &input(LOOP),
        &env,
        home.path(),
        Duration::from_secs(60),
    );
    let started = std::fs::read_to_string(&pids).unwrap_or_default();
    let left: Vec<&str> = started.split_whitespace().filter(|p| runs(p)).collect();
    let left = left.join(" ");
    release(&fifo);
    let reason = blocked(&out).expect("a loop prompt is blocked");
    assert!(reason.contains("did not answer within 3 s"), "{reason}");
    assert!(took < Duration::from_secs(30), "{took:?}");
    assert_eq!(
        started.split_whitespace().count(),
        2,
        "the engine and its child: {started:?}"
    );
    assert_eq!(left, "", "still running after the hook answered");
}

#[test]
fn a_usable_engine_answers_and_its_answer_passes_through() {
    let home = tempfile::tempdir().unwrap();
    let answer = r#"{"decision":"block","reason":"skip: another tick holds the lock"}"#;
    let fake = fake_engine("1,2", &format!("echo '{answer}'"));
    let path = path_with(fake.path());
    let out = launch(
        &["user-prompt-submit"],
        &input(LOOP),
        &[("PATH", &path)],
        home.path(),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), answer);
    // The real engine: a plain prompt in a project without a loop passes.
    let bin = Path::new(engine()).parent().unwrap();
    let path = path_with(bin);
    let out = launch(
        &["user-prompt-submit"],
        &input("hello"),
        &[("PATH", &path)],
        home.path(),
    );
    assert_eq!(blocked(&out), None);
    let out = launch(&["--locate"], "", &[("PATH", &path)], home.path());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        bin.join("sdd-loop").display().to_string()
    );
}

#[test]
fn the_override_variable_is_the_only_place_looked_when_set() {
    let home = tempfile::tempdir().unwrap();
    let bin = Path::new(engine()).parent().unwrap();
    let path = path_with(bin);
    let env = [
        ("PATH", path.as_str()),
        ("SDD_LOOP_BIN", "/nonexistent/sdd-loop"),
    ];
    let reason = blocked(&launch(
        &["user-prompt-submit"],
        &input(LOOP),
        &env,
        home.path(),
    ))
    .unwrap();
    assert!(
        reason.contains("SDD_LOOP_BIN=/nonexistent/sdd-loop is not an executable file"),
        "{reason}"
    );
    let env = [("SDD_LOOP_BIN", engine())];
    let out = launch(&["--locate"], "", &env, home.path());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), engine());
}

#[test]
fn the_npm_package_s_binary_is_run_directly_not_through_node() {
    let home = tempfile::tempdir().unwrap();
    let prefix = tempfile::tempdir().unwrap();
    let p = prefix.path();
    let modules = p.join("lib/node_modules");
    std::fs::create_dir_all(modules.join("sdd-loop/bin")).unwrap();
    std::fs::create_dir_all(modules.join("@sdd-loop/linux-x64/bin")).unwrap();
    std::fs::create_dir_all(p.join("bin")).unwrap();
    std::fs::write(modules.join("sdd-loop/package.json"), "{}").unwrap();
    // The node shim: must not be what runs.
    let shim = modules.join("sdd-loop/bin/sdd-loop");
    std::fs::write(&shim, "#!/bin/sh\necho shim ran >&2\nexit 99\n").unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(&shim, p.join("bin/sdd-loop")).unwrap();
    let platform = modules.join("@sdd-loop/linux-x64/bin/sdd-loop");
    std::fs::copy(engine(), &platform).unwrap();
    let path = path_with(&p.join("bin"));
    let out = launch(&["--locate"], "", &[("PATH", &path)], home.path());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!(
            "{}/../lib/node_modules/@sdd-loop/linux-x64/bin/sdd-loop",
            p.join("bin").display()
        )
    );
    // Not on PATH at all: found under an npm prefix.
    let out = launch(
        &["--locate"],
        "",
        &[("npm_config_prefix", p.to_str().unwrap())],
        home.path(),
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("@sdd-loop/linux-x64/bin/sdd-loop"),
        "{out:?}"
    );
}

#[test]
fn on_native_windows_a_loop_prompt_is_blocked_with_wsl() {
    let home = tempfile::tempdir().unwrap();
    let bin = Path::new(engine()).parent().unwrap();
    let path = path_with(bin);
    let env = [("PATH", path.as_str()), ("OS", "Windows_NT")];
    let reason = blocked(&launch(
        &["user-prompt-submit"],
        &input(LOOP),
        &env,
        home.path(),
    ))
    .unwrap();
    assert!(reason.contains("inside WSL"), "{reason}");
    assert_eq!(
        blocked(&launch(
            &["user-prompt-submit"],
            &input("hi"),
            &env,
            home.path()
        )),
        None
    );
}

#[test]
fn doctor_checks_the_tokens_right_to_post_gates() {
    let backlog = sdd_mocks::fixture::Backlog::parse(
        std::path::Path::new("b.yaml"),
        "repository: acme/app\nagent_logins: [sdd-worker]\nissues: []\n",
    )
    .unwrap();
    let tracker = sdd_mocks::tracker::MockTracker::builder()
        .backlog(backlog)
        .token("doctor-token")
        .start_blocking()
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let out = Command::new(engine())
        .args(["doctor", "--json", "-C"])
        .arg(project.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home.path())
        .env("SDD_LOOP_REPO", "acme/app")
        .env("SDD_LOOP_TRACKER_URL", tracker.uri())
        .env("SDD_LOOP_TRACKER_TOKEN", "doctor-token")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let gates: Vec<&Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["part"] == "gates")
        .collect();
    assert_eq!(gates.len(), 1, "{report}");
    assert_eq!(gates[0]["verdict"], "ok", "{report}");
    assert!(
        gates[0]["detail"]
            .as_str()
            .unwrap()
            .contains("the token acts as sdd-worker, with write access to acme/app"),
        "{report}"
    );
    assert_eq!(
        tracker.count("GET", "/repos/acme/app/collaborators/sdd-worker/permission"),
        1
    );
}

#[test]
fn doctor_names_each_part_that_is_not_usable_and_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let out = Command::new(engine())
        .args(["doctor", "--json", "-C"])
        .arg(project.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["usable"], false);
    let verdict = |part: &str| -> Vec<(String, String)> {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["part"] == part)
            .map(|c| {
                (
                    c["verdict"].as_str().unwrap().to_owned(),
                    c["fix"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    assert_eq!(verdict("engine")[0].0, "ok");
    // No Claude Code at all: a shell's or cron's loop needs neither it nor
    // the plugin, so their absence is a note (the tracker is what fails).
    assert_eq!(verdict("claude")[0].0, "note");
    let plugin = verdict("plugin");
    assert_eq!(plugin[0].0, "note");
    assert!(
        plugin[0].1.contains("plugin install sdd-loop@sdd-loop"),
        "{plugin:?}"
    );
    let tracker = verdict("tracker");
    assert_eq!(tracker[0].0, "fix");
    assert!(tracker[0].1.contains("SDD_LOOP_REPO"), "{tracker:?}");
    assert_eq!(verdict("state")[0].0, "ok");
}
