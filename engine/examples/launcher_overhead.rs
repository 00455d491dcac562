//! What the plugin's hook launcher (`hooks/sdd-loop-hook`) adds to every
//! hook call: the same hook input run N times through the launcher and N
//! times by the engine directly (`sdd-loop hook EVENT`), alternating, each
//! a fresh process as Claude Code starts it; prints the medians and the
//! difference. PreToolUse is the one that counts (it runs on every Bash
//! call); UserPromptSubmit runs once a prompt and is watched, so costs more.
//!
//!   cargo run --release -p sdd-loop --example launcher_overhead -- [--calls N] [--binary PATH]
//!
//! The binary defaults to the `sdd-loop` built beside this example (the
//! same profile). Exits 1 if any call's answer differs between the two.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn call(
    program: &Path,
    args: &[&str],
    input: &str,
    path_env: &str,
    home: &Path,
) -> (Duration, Vec<u8>) {
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .env_clear()
        .env("PATH", path_env)
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let mut stdin = child.stdin.take().expect("stdin");
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    (started.elapsed(), out.stdout)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn p90(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() * 9) / 10]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[expect(clippy::print_stdout, reason = "the figures are the program's output")]
fn main() {
    let mut calls = 200usize;
    let mut binary: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--calls" => calls = args.next().and_then(|n| n.parse().ok()).expect("--calls N"),
            "--binary" => binary = args.next().map(PathBuf::from),
            other => panic!("unknown argument {other}: --calls N, --binary PATH"),
        }
    }
    let exe = std::env::current_exe().expect("current_exe");
    let binary = binary.unwrap_or_else(|| exe.parent().unwrap().parent().unwrap().join("sdd-loop"));
    assert!(
        binary.is_file(),
        "no engine at {} (build it, or pass --binary)",
        binary.display()
    );
    let launcher = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("hooks/sdd-loop-hook");
    let project = tempfile::tempdir().expect("tempdir");
    let home = tempfile::tempdir().expect("tempdir");
    let bin_dir = binary.parent().unwrap();
    let path_env = format!("{}:/usr/bin:/bin", bin_dir.display());
    let cwd = project.path().display().to_string();
    let pre = serde_json::json!({
        "session_id": "bench", "transcript_path": "/nonexistent.jsonl", "cwd": cwd,
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "gh pr create --title x --body 'Closes #1'"}, "tool_use_id": "t1",
    })
    .to_string();
    let prompt = serde_json::json!({
        "session_id": "bench", "transcript_path": "/nonexistent.jsonl", "cwd": cwd,
        "hook_event_name": "UserPromptSubmit", "prompt": "What does this function do?",
    })
    .to_string();

    println!(
        "launcher overhead: {calls} calls each way, alternating; engine {}, launcher {}",
        binary.display(),
        launcher.display()
    );
    let mut differ = false;
    for (event, input) in [("pre-tool-use", &pre), ("user-prompt-submit", &prompt)] {
        let (mut direct, mut launched) = (Vec::new(), Vec::new());
        for _ in 0..calls {
            let (d, a) = call(&binary, &["hook", event], input, &path_env, home.path());
            let (l, b) = call(&launcher, &[event], input, &path_env, home.path());
            direct.push(d);
            launched.push(l);
            differ |= a != b;
        }
        let (md, ml) = (median(direct.clone()), median(launched.clone()));
        println!(
            "{event:<19} direct: median {:6.2} ms  p90 {:6.2} ms | via launcher: median {:6.2} ms  p90 {:6.2} ms | added: {:+.2} ms (median)",
            ms(md),
            ms(p90(direct)),
            ms(ml),
            ms(p90(launched)),
            ms(ml) - ms(md)
        );
    }
    if differ {
        println!("error: the launcher's answers differ from the engine's");
        std::process::exit(1);
    }
}
