//! What `sdd-loop statusline` adds before a user's own status command:
//! the same statusLine input (with `rate_limits`, in a project with
//! `.sdd/`) given N times to the user's command run by `sh -c` directly
//! and N times through `sdd-loop statusline -- CMD`, alternating, each a
//! fresh process as Claude Code starts it; prints the medians and the
//! difference, and exits 1 when the chained output differs from the
//! user's own or the median difference is above the 5 ms the chain may
//! cost (docs/src/usage-windows.md).
//!
//!   cargo run --release -p sdd-loop --example statusline_overhead -- [--calls N] [--binary PATH]
//!
//! The binary defaults to the `sdd-loop` built beside this example (the
//! same profile).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The most the chain may add to a status line, at the median.
const LIMIT: Duration = Duration::from_millis(5);

fn call(program: &Path, args: &[&str], input: &[u8], cwd: &Path) -> (Duration, Vec<u8>) {
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env_remove("SDD_LOOP_STATUSLINE_CMD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let mut stdin = child.stdin.take().expect("stdin");
    let _ = stdin.write_all(input);
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    (started.elapsed(), out.stdout)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[expect(clippy::print_stdout, reason = "the figures are the program's output")]
fn main() {
    let mut calls = 100usize;
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
    let project = std::env::temp_dir().join(format!("sdd-statusline-{}", std::process::id()));
    std::fs::create_dir_all(project.join(".sdd")).expect("project");
    // Every call a new figure, so every chained call writes statusline.json.
    let user = r#"printf '%s' "$(head -c 40)""#;
    let (mut direct, mut chained) = (Vec::new(), Vec::new());
    let mut differ = 0;
    for i in 0..calls {
        let input = format!(
            r#"{{"workspace":{{"project_dir":"{}"}},"model":{{"display_name":"Opus"}},"rate_limits":{{"five_hour":{{"used_percentage":{},"resets_at":1778353200}},"seven_day":{{"used_percentage":17,"resets_at":1778576400}}}}}}"#,
            project.display(),
            i % 100
        );
        let (d, own) = call(Path::new("sh"), &["-c", user], input.as_bytes(), &project);
        let (c, through) = call(
            &binary,
            &["statusline", "--", user],
            input.as_bytes(),
            &project,
        );
        if own != through {
            differ += 1;
        }
        direct.push(d);
        chained.push(c);
    }
    let recorded = std::fs::read_to_string(project.join(".sdd/loop/statusline.json")).is_ok();
    let _ = std::fs::remove_dir_all(&project);
    let (d, c) = (median(direct), median(chained));
    let added = c.saturating_sub(d);
    println!("calls: {calls} each (the user's command alone, then through `sdd-loop statusline`)");
    println!("median, the user's command alone: {:.2} ms", ms(d));
    println!("median, through sdd-loop statusline: {:.2} ms", ms(c));
    println!(
        "added by the chain: {:.2} ms (limit {:.0} ms)",
        ms(added),
        ms(LIMIT)
    );
    println!("outputs that differed: {differ}; windows recorded: {recorded}");
    if differ > 0 || !recorded || added > LIMIT {
        std::process::exit(1);
    }
}
