//! `sdd-loop statusline [CMD…]`: Claude Code's statusLine command, chained
//! before the user's own (docs/src/usage-windows.md, "In a Claude Code
//! session"). An interactive session passes the account's usage windows
//! only to this command's stdin (`rate_limits.five_hour.used_percentage`,
//! `.resets_at`, and `seven_day`); they are recorded in the project's
//! `.sdd/loop/statusline.json` for the loop's window budgets, and then the
//! user's status command — its arguments, else `SDD_LOOP_STATUSLINE_CMD` —
//! runs with the same stdin and its output is printed byte for byte, its
//! exit status passed on. Chained, never replaced: nothing of ours is
//! printed, and a figure that cannot be recorded never costs the user
//! their status line.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::os::clock;
use crate::state::files;
use crate::state::paths::{Skill, StatePaths};
use crate::state::windows::{Recorded, Window, WindowsState};

/// The variable naming the user's own status command when none is given
/// as arguments.
pub const ENV_CMD: &str = "SDD_LOOP_STATUSLINE_CMD";

/// Whether a statusLine `command` runs this one (`sdd-loop statusline`,
/// by any path to the engine).
pub fn is_installed(command: &str) -> bool {
    command
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .any(|w| (w[0] == "sdd-loop" || w[0].ends_with("/sdd-loop")) && w[1] == "statusline")
}

/// The settings line that installs this command, chained before the
/// user's own statusLine `command` if there is one (quoted for the shell
/// Claude Code runs it with, unless it needs no quoting).
pub fn install_line(own: Option<&str>) -> String {
    let command = match own.map(str::trim).filter(|c| !c.is_empty()) {
        None => "sdd-loop statusline".to_owned(),
        Some(c) => {
            let plain = c.split(' ').all(|w| {
                !w.is_empty()
                    && w.chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || "_./~:@%+=,-".contains(ch))
            });
            if plain {
                format!("sdd-loop statusline -- {c}")
            } else {
                format!("sdd-loop statusline -- '{}'", c.replace('\'', "'\\''"))
            }
        }
    };
    format!(
        "\"statusLine\": {}",
        serde_json::json!({"type": "command", "command": command})
    )
}

/// A Unix time in seconds, or an RFC 3339 instant, as RFC 3339.
fn instant(v: &Value) -> Option<String> {
    if let Some(s) = v.as_str() {
        return clock::parse(s).ok().map(clock::format);
    }
    let secs = v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))?;
    jiff::Timestamp::from_second(secs).ok().map(clock::format)
}

/// The project the session runs in: `workspace.project_dir`, else `cwd`.
pub fn project_of(input: &Value) -> Option<PathBuf> {
    input
        .pointer("/workspace/project_dir")
        .or_else(|| input.get("cwd"))
        .and_then(Value::as_str)
        .map(PathBuf::from)
}

/// Records the windows `input` carries into `root`'s
/// `.sdd/loop/statusline.json` — only in a project that has `.sdd/` (a
/// project the loop runs in), and only when a figure changed. Whether it
/// wrote. The file is this command's alone: the ticks read it over
/// `windows.json` ([`WindowsState::load_with_statusline`]) and never write
/// it, so a refresh never overwrites a tick's wait.
pub fn record(root: &Path, input: &Value, now: jiff::Timestamp) -> Result<bool, String> {
    let Some(limits) = input.get("rate_limits") else {
        return Ok(false);
    };
    if !root.join(".sdd").is_dir() {
        return Ok(false);
    }
    let paths = StatePaths::new(root, Skill::Work, None);
    // A damaged file is written again whole.
    let mut state = WindowsState::load(&paths.statusline_windows()).unwrap_or_default();
    let mut changed = false;
    for w in Window::ALL {
        let Some(win) = limits.get(w.name()) else {
            continue;
        };
        let (Some(used), Some(reset)) = (
            win.get("used_percentage").and_then(Value::as_f64),
            win.get("resets_at").and_then(instant),
        ) else {
            continue;
        };
        let same = state
            .recorded(w)
            .is_some_and(|r| r.used_percent == used && r.resets_at == reset);
        if !same {
            *state.recorded_mut(w) = Some(Recorded {
                used_percent: used,
                resets_at: reset,
                read_at: clock::format(now),
                source: "statusline".to_owned(),
            });
            changed = true;
        }
    }
    if changed {
        files::ensure_state_dir(&paths.dir).map_err(|e| e.to_string())?;
        // Not waited for on the disk: the status line is drawn at every
        // refresh, and a figure lost to a power cut — or a file left torn,
        // read as no figure — is written again at the next one.
        state
            .save_with(&paths.statusline_windows(), files::Durability::Transient)
            .map_err(|e| e.to_string())?;
    }
    Ok(changed)
}

/// What a pipe takes without a reader (Linux gives 64 KiB; POSIX
/// promises at least 4 KiB, and Claude Code's statusLine input is ~2 KiB).
const PIPE_ROOM: usize = 4096;

/// Runs the user's status command with `input` on its stdin; its stdout
/// and stderr copied byte for byte; its exit status.
pub fn chain(
    command: &str,
    cwd: &Path,
    input: &[u8],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "sdd-loop statusline: cannot run {command:?}: {e}");
            return 1;
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        if input.len() <= PIPE_ROOM {
            // Fits in the pipe's buffer: written at once even when the
            // command never reads it, with no thread to start.
            let _ = stdin.write_all(input);
        } else {
            let bytes = input.to_vec();
            // A command that never reads its stdin must not block the chain.
            std::thread::spawn(move || {
                let _ = stdin.write_all(&bytes);
            });
        }
    }
    match child.wait_with_output() {
        Ok(o) => {
            let _ = out.write_all(&o.stdout);
            let _ = err.write_all(&o.stderr);
            let _ = out.flush();
            o.status
                .code()
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(1)
        }
        Err(e) => {
            let _ = writeln!(err, "sdd-loop statusline: {command:?} failed: {e}");
            1
        }
    }
}

/// The binary's `statusline`: as [`run`], except that the user's command
/// replaces this process (`exec`) instead of running as its child, so the
/// chain adds no second process, no copy of the output and no wait: its
/// stdout, stderr and exit status are the user's command's own. `None`
/// when `args` (the program name first) is not `statusline` alone or
/// `statusline -- CMD…`: `--help` and the rest go through the parser
/// ([`crate::cli::main_with`]).
#[cfg(unix)]
pub fn main_in_place(args: &[std::ffi::OsString]) -> Option<u8> {
    use std::os::unix::process::CommandExt;

    if args.get(1).is_none_or(|a| a != "statusline") || args.get(2).is_some_and(|a| a != "--") {
        return None;
    }
    let vars: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    let command = if args.len() > 3 {
        Some(
            args[3..]
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
        )
    } else {
        vars.get(ENV_CMD).cloned()
    };
    let now =
        super::env::clock_from_vars(&vars).map_or_else(|_| jiff::Timestamp::now(), |c| c.now());
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let mut input = Vec::new();
    let _ = std::io::stdin().lock().read_to_end(&mut input);
    let root = record_input(&input, &cwd, now, &mut std::io::stderr());
    let Some(command) = command.filter(|c| !c.trim().is_empty()) else {
        return Some(0);
    };
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    if input.len() > PIPE_ROOM {
        // Would not fit in the pipe before the command reads it.
        return Some(chain(&command, &root, &input, &mut out, &mut err));
    }
    let stdin = match std::io::pipe().and_then(|(reader, mut writer)| {
        writer.write_all(&input)?;
        Ok(reader)
    }) {
        Ok(reader) => reader,
        Err(_) => return Some(chain(&command, &root, &input, &mut out, &mut err)),
    };
    // Returns only when the command could not be started.
    let e = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(&root)
        .stdin(stdin)
        .exec();
    let _ = writeln!(err, "sdd-loop statusline: cannot run {command:?}: {e}");
    Some(1)
}

/// Reads the statusLine input's project and records its windows there
/// (a failure noted on `err` only: the status line itself stays the
/// user's); the project, where the user's command runs.
fn record_input(input: &[u8], cwd: &Path, now: jiff::Timestamp, err: &mut dyn Write) -> PathBuf {
    let parsed: Value = serde_json::from_slice(input).unwrap_or(Value::Null);
    let root = project_of(&parsed).unwrap_or_else(|| cwd.to_path_buf());
    if let Err(e) = record(&root, &parsed, now) {
        let _ = writeln!(
            err,
            "sdd-loop statusline: the usage windows were not recorded: {e}"
        );
    }
    root
}

/// The whole command: read stdin, record, chain.
pub fn run(
    command: Option<String>,
    cwd: &Path,
    stdin: Option<&mut dyn Read>,
    now: jiff::Timestamp,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let mut input = Vec::new();
    if let Some(r) = stdin {
        let _ = r.read_to_end(&mut input);
    }
    let root = record_input(&input, cwd, now, err);
    match command {
        Some(c) if !c.trim().is_empty() => chain(&c, &root, &input, out, err),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INPUT: &str = r#"{"session_id":"s","workspace":{"project_dir":"PROJECT"},"rate_limits":{"five_hour":{"used_percentage":42,"resets_at":1778353200},"seven_day":{"used_percentage":17,"resets_at":1778576400}}}"#;

    fn input(root: &Path) -> String {
        INPUT.replace("PROJECT", &root.display().to_string())
    }

    #[test]
    fn the_users_command_prints_byte_for_byte_after_the_windows_are_recorded() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join(".sdd")).unwrap();
        let text = input(tmp.path());
        let (mut out, mut err) = (Vec::new(), Vec::new());
        // The user's command sees the same stdin, and its bytes (no
        // trailing newline, an escape sequence) come through untouched.
        let code = run(
            Some(r#"printf '\033[1m%s\033[0m' "$(wc -c | tr -d ' ')"; exit 3"#.to_owned()),
            Path::new("/"),
            Some(&mut text.as_bytes()),
            "2026-05-09T14:00:00Z".parse().unwrap(),
            &mut out,
            &mut err,
        );
        assert_eq!(code, 3);
        assert_eq!(out, format!("\x1b[1m{}\x1b[0m", text.len()).into_bytes());
        assert!(err.is_empty(), "{}", String::from_utf8_lossy(&err));
        let state = WindowsState::load(&tmp.path().join(".sdd/loop/statusline.json")).unwrap();
        let five = state.five_hour.unwrap();
        assert_eq!(
            (
                five.used_percent,
                five.resets_at.as_str(),
                five.source.as_str()
            ),
            (42.0, "2026-05-09T19:00:00Z", "statusline")
        );
        assert_eq!(state.seven_day.unwrap().used_percent, 17.0);
    }

    #[test]
    fn the_install_line_chains_the_users_own_command_quoted_for_the_shell() {
        assert_eq!(
            install_line(None),
            r#""statusLine": {"type":"command","command":"sdd-loop statusline"}"#
        );
        assert_eq!(
            install_line(Some("~/.claude/my-status.sh --short")),
            r#""statusLine": {"type":"command","command":"sdd-loop statusline -- ~/.claude/my-status.sh --short"}"#
        );
        let own = r#"printf '%s' "$(cat | jq -r .model.display_name)""#;
        let line = install_line(Some(own));
        let json: Value = serde_json::from_str(&format!("{{{line}}}")).unwrap();
        let command = json["statusLine"]["command"].as_str().unwrap();
        // The shell Claude Code runs it with hands the user's command to
        // `statusline` as one argument, unchanged.
        let out = Command::new("sh")
            .arg("-c")
            .arg(command.replace("sdd-loop statusline --", "printf '%s'"))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), own);
        assert!(is_installed(command));
        assert!(is_installed("/usr/local/bin/sdd-loop statusline"));
        assert!(!is_installed("~/.claude/my-status.sh"));
    }

    #[test]
    fn a_refresh_never_writes_the_ticks_windows_file() {
        // A tick's wait in windows.json, saved while a refresh runs, is
        // not overwritten by the refresh's figures.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(".sdd/loop");
        std::fs::create_dir_all(&dir).unwrap();
        let ticks = r#"{"wait":{"window":"five_hour","until":"2026-05-09T19:00:00Z","reason":"5-hour window at 80% (ceiling 75%)","since":"2026-05-09T14:20:00Z"}}"#;
        std::fs::write(dir.join("windows.json"), ticks).unwrap();
        let v: Value = serde_json::from_str(&input(tmp.path())).unwrap();
        assert!(record(tmp.path(), &v, "2026-05-09T14:30:00Z".parse().unwrap()).unwrap());
        assert_eq!(
            std::fs::read_to_string(dir.join("windows.json")).unwrap(),
            ticks
        );
        let merged = WindowsState::load_with_statusline(
            &dir.join("windows.json"),
            &dir.join("statusline.json"),
        )
        .unwrap();
        assert_eq!(merged.five_hour.unwrap().used_percent, 42.0);
        assert!(merged.wait.is_some());
        // A torn statusLine file is written again whole at the next refresh.
        std::fs::write(dir.join("statusline.json"), "{\"five").unwrap();
        assert!(record(tmp.path(), &v, "2026-05-09T14:31:00Z".parse().unwrap()).unwrap());
        assert!(WindowsState::load(&dir.join("statusline.json")).is_ok());
    }

    #[test]
    fn a_project_without_sdd_is_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let v: Value = serde_json::from_str(&input(tmp.path())).unwrap();
        assert!(!record(tmp.path(), &v, jiff::Timestamp::UNIX_EPOCH).unwrap());
        assert!(!tmp.path().join(".sdd").exists());
    }
}
