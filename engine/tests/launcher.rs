//! The plugin's hook launcher, `hooks/sdd-loop-hook` (POSIX sh): it
//! recognises exactly the loop prompts the engine recognises, finds the
//! engine (override, PATH, the npm package's binary), checks its hook
//! protocol, and fails closed — a loop prompt blocked with the reason
//! when there is no usable engine or the engine crashes, hangs or prints
//! garbage; anything else untouched. Also `sdd-loop doctor`'s verdicts on
//! a bare machine. The real Claude Code runs the launcher in
//! ci/plugin-install and in the `hook-*` cases.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
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
        let env = [("PATH", path.as_str()), ("SDD_LOOP_HOOK_WAIT", "1")];
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
