//! The wrapped skill every family runs: this program re-executed with
//! `--skill` by the engine (`sh -c '<exe> --skill'`), speaking the skill
//! protocol (`SDD_LOOP_REQUEST`, `SDD_LOOP_EVENTS`, `SDD_LOOP_RESULT`).
//!
//! It is configured through the environment, which the engine passes on:
//!
//! | variable | meaning |
//! |---|---|
//! | `REL_LEDGER` | file to append what it did to (`start`, `event`, `term`, `end`, `overlap`) |
//! | `REL_ACTIVE` | file it holds an advisory lock on while it runs; finding it held is an overlap |
//! | `REL_EVENTS`, `REL_TOKENS`, `REL_PACE_MS` | usage events to append, tokens in each, pause between them |
//! | `REL_READY_FIFO`, `REL_READY_AFTER` | say `ready` into the FIFO after that many events |
//! | `REL_MODE` | `ok`, `hang`, `flood`, `flood-one-line`, `garbage`, `signal`, `leak` |
//! | `REL_LEAK_*` | the secrets `leak` mode plants (see `leaks.rs`) |
//!
//! Every usage event is appended to the events stream first and to the
//! ledger second, each in one `write`; SIGTERM and SIGINT are caught
//! before anything is written, and only noted (`term`): the skill drains —
//! finishes its events and writes its result — as a real one would. So
//! the ledger is the exact spend the engine must account for, whatever
//! happened to the engine. The pause between events is the work being
//! simulated, not synchronisation.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const MODEL: &str = "claude-haiku-4-7";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn env_num(name: &str, default: u64) -> u64 {
    env(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn append(path: &Path, line: &str) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.write_all(format!("{line}\n").as_bytes())
        .unwrap_or_else(|e| panic!("append to {}: {e}", path.display()));
}

/// Writes `bytes` of output to `out` in lines of 1 KiB, or as one line.
fn flood(out: &mut impl Write, bytes: u64, one_line: bool) {
    let mut chunk = vec![b'x'; 64 * 1024];
    if !one_line {
        for i in (1023..chunk.len()).step_by(1024) {
            chunk[i] = b'\n';
        }
    }
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        if out.write_all(&chunk[..n]).is_err() {
            return;
        }
        left -= n as u64;
    }
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// The skill's body; its exit status.
pub fn run() -> i32 {
    let mode = env("REL_MODE").unwrap_or_else(|| "ok".into());
    // Caught before anything is written: a TERM after this point is a
    // request to drain, never a death between two writes.
    let term = Arc::new(AtomicBool::new(false));
    if mode != "hang" {
        for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            let _ = signal_hook::flag::register(sig, Arc::clone(&term));
        }
    }
    let (Some(ledger), Some(events), Some(result)) = (
        env("REL_LEDGER"),
        env("SDD_LOOP_EVENTS"),
        env("SDD_LOOP_RESULT"),
    ) else {
        let _ = writeln!(
            std::io::stderr(),
            "reliability skill: REL_LEDGER, SDD_LOOP_EVENTS and SDD_LOOP_RESULT must be set"
        );
        return 64;
    };
    let (ledger, events) = (Path::new(&ledger), Path::new(&events));
    let me = std::process::id();
    let ppid = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    let pgid = rustix::process::getpgrp().as_raw_nonzero().get();
    append(ledger, &format!("start {me} {ppid} {pgid}"));
    // Held until this process exits, however it exits: the kernel drops
    // it, so a second run finding it held is running beside this one.
    let _active = env("REL_ACTIVE").map(|path| {
        let file = File::create(&path).expect("active lock file");
        if file.try_lock().is_err() {
            append(ledger, &format!("overlap {me}"));
            file.lock().expect("wait for the other run");
        }
        file
    });

    if mode == "hang" {
        loop {
            std::thread::park();
        }
    }

    let count = env_num("REL_EVENTS", 1);
    let tokens = env_num("REL_TOKENS", 1000);
    let pace = Duration::from_millis(env_num("REL_PACE_MS", 0));
    let ready_after = env("REL_READY_FIFO").map(|f| (f, env_num("REL_READY_AFTER", 1)));
    let (mut total_in, mut total_out) = (0u64, 0u64);
    let mut noted_term = false;
    for i in 1..=count {
        let (tin, tout) = (tokens + i, tokens / 10 + i);
        append(
            events,
            &format!(
                r#"{{"event":"usage","model":"{MODEL}","tokens_in":{tin},"tokens_out":{tout}}}"#
            ),
        );
        append(ledger, &format!("event {me} {tin} {tout}"));
        total_in += tin;
        total_out += tout;
        if let Some((fifo, after)) = &ready_after
            && *after == i
        {
            // Blocks until the family opens the FIFO to read: it is waiting.
            std::fs::write(fifo, "ready\n").expect("ready fifo");
        }
        if term.load(Ordering::Relaxed) && !noted_term {
            noted_term = true;
            append(ledger, &format!("term {me}"));
        }
        if i < count && !pace.is_zero() {
            std::thread::sleep(pace);
        }
    }
    if term.load(Ordering::Relaxed) && !noted_term {
        append(ledger, &format!("term {me}"));
    }

    let mut summary = format!("{count} usage events");
    let mut failures = String::new();
    match mode.as_str() {
        "flood" | "flood-one-line" => {
            let bytes = env_num("REL_FLOOD_BYTES", 100 << 20);
            flood(
                &mut std::io::stdout().lock(),
                bytes,
                mode == "flood-one-line",
            );
        }
        "leak" => {
            let planted = |name: &str| env(name).unwrap_or_default();
            let _ = writeln!(
                std::io::stderr(),
                "skill stderr: retrying with {}",
                planted("REL_LEAK_STDERR")
            );
            let _ = writeln!(
                std::io::stdout(),
                "skill stdout: using key {}",
                planted("REL_LEAK_STDOUT")
            );
            for name in planted("REL_LEAK_ECHO")
                .split(',')
                .filter(|n| !n.is_empty())
            {
                let _ = writeln!(std::io::stderr(), "debug: {name}={}", planted(name));
            }
            append(
                events,
                &serde_json::json!({"event": "progress", "message": format!("pushing with {}", planted("REL_LEAK_EVENT"))})
                    .to_string(),
            );
            summary = format!("done; token was {}", planted("REL_LEAK_SUMMARY"));
            failures = serde_json::json!([{
                "target": "#1",
                "root_cause": format!("git push rejected: bad credentials {}", planted("REL_LEAK_CAUSE")),
            }])
            .to_string();
        }
        _ => {}
    }
    let body = match mode.as_str() {
        "garbage" => "{\"protocol\": 1, \"usage\": [{\"model\": \u{0}garbage".to_owned(),
        _ => {
            let mut result = serde_json::json!({
                "protocol": 1,
                "usage": [{"model": MODEL, "tokens_in": total_in, "tokens_out": total_out}],
                "agents_dispatched": 1,
                "summary": summary,
            });
            if !failures.is_empty() {
                result["failures"] = serde_json::from_str(&failures).expect("failures json");
            }
            result.to_string()
        }
    };
    std::fs::write(&result, body).expect("write result");
    if mode == "signal" {
        append(ledger, &format!("end {me}"));
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }
    append(ledger, &format!("end {me}"));
    0
}
