//! `sdd-loop statusline -- CMD` as Claude Code runs it: the binary records
//! the session's usage windows, then the user's own status command
//! replaces the engine's process, with the same stdin, its output and exit
//! status its own (docs/src/usage-windows.md, "In a Claude Code session").

#![cfg(unix)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn statusline(args: &[&str], input: &[u8], cwd: &std::path::Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sdd-loop"))
        .arg("statusline")
        .args(args)
        .current_dir(cwd)
        .env_remove("SDD_LOOP_STATUSLINE_CMD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

fn input(project: &std::path::Path, pad: usize) -> String {
    format!(
        r#"{{"workspace":{{"project_dir":"{}"}},"pad":"{}","rate_limits":{{"five_hour":{{"used_percentage":42,"resets_at":1778353200}},"seven_day":{{"used_percentage":17,"resets_at":1778576400}}}}}}"#,
        project.display(),
        "x".repeat(pad)
    )
}

#[test]
fn the_users_command_replaces_the_engine_with_the_same_stdin_after_the_windows_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".sdd")).unwrap();
    let text = input(dir.path(), 0);
    // Its parent is whoever started the engine: no process in between.
    let out = statusline(
        &[
            "--",
            r#"printf '%s \033[1m%s\033[0m' "$PPID" "$(wc -c | tr -d ' ')"; printf warn >&2; exit 3"#,
        ],
        text.as_bytes(),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{} \x1b[1m{}\x1b[0m", std::process::id(), text.len())
    );
    assert_eq!(out.stderr, b"warn");
    let windows = std::fs::read_to_string(dir.path().join(".sdd/loop/statusline.json")).unwrap();
    assert!(windows.contains(r#""used_percent": 42.0"#), "{windows}");
    assert!(windows.contains(r#""used_percent": 17.0"#), "{windows}");
}

#[test]
fn the_users_command_starts_with_signals_as_a_shell_expects_them() {
    // The engine ignores SIGPIPE; the command it hands the process to must
    // not inherit that, or `yes` writes into a closed pipe for ever.
    let dir = tempfile::tempdir().unwrap();
    let out = statusline(&["--", "yes | head -n 1"], b"{}", dir.path());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"y\n");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_input_larger_than_a_pipe_holds_still_reaches_the_users_command_whole() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".sdd")).unwrap();
    let text = input(dir.path(), 200_000);
    let out = statusline(&["--", "wc -c"], text.as_bytes(), dir.path());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        text.len().to_string()
    );
    assert!(dir.path().join(".sdd/loop/statusline.json").is_file());
}

#[test]
fn without_a_command_the_windows_are_recorded_and_nothing_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".sdd")).unwrap();
    let out = statusline(&[], input(dir.path(), 0).as_bytes(), dir.path());
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    assert!(dir.path().join(".sdd/loop/statusline.json").is_file());
}

#[test]
fn a_command_that_cannot_start_says_so_on_stderr_only() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone");
    let text = input(&gone, 0);
    let out = statusline(&["--", "printf never"], text.as_bytes(), dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("sdd-loop statusline: cannot run \"printf never\": "),
        "{err}"
    );
}
