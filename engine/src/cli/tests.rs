//! Unit tests of `cli.rs`.

use super::*;

fn call(args: &[&str], vars: &[(&str, &str)]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = {
        let mut env = Env {
            stdout: &mut out,
            stderr: &mut err,
            vars: vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            cwd: std::env::temp_dir(),
            terminal: None,
            stdin: None,
            interrupts: None,
        };
        main_with(
            std::iter::once("sdd-loop")
                .chain(args.iter().copied())
                .map(Into::into),
            &mut env,
        )
    };
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn schema_prints_json() {
    let (code, out, _) = call(&["schema", "lock"], &[]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["properties"]["pid"].is_object());
}

#[test]
fn usage_errors_exit_64() {
    let (code, _, err) = call(&["schema", "nope"], &[]);
    assert_eq!(code, exit::USAGE);
    assert!(err.contains("nope"));
    let (code, _, err) = call(
        &[
            "work",
            "--loop",
            "--answer",
            "backlog-drfit=continue",
            "--skill-cmd",
            "true",
        ],
        &[],
    );
    assert_eq!(code, exit::USAGE);
    assert!(err.contains("did you mean `backlog-drift`"), "{err}");
}

// clap quoted a rejected `--answer` value verbatim, so a secret typed (or
// pasted) there reached stderr unredacted.
#[test]
fn a_rejected_answer_is_quoted_redacted() {
    let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let tracker = "0123456789abcdef0123456789abcdef";
    for answer in [
        format!("budget-escalation={token}"),
        format!("{token}=continue"),
        format!("budget-escalation={tracker}"),
    ] {
        let (code, _, err) = call(
            &["work", "--loop", "--answer", &answer],
            &[("SDD_LOOP_TRACKER_TOKEN", tracker)],
        );
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("invalid value"), "{err}");
        assert!(!err.contains(token) && !err.contains(tracker), "{err}");
    }
}

#[test]
fn help_lists_every_flag_default_env_and_exit_codes() {
    let (code, out, _) = call(&["work", "--help"], &[]);
    assert_eq!(code, 0);
    for needle in [
        "--loop",
        "--max-iterations",
        "[default: 5]",
        "--max-prs",
        "[default: 20]",
        "--max-minutes",
        "[default: 60]",
        "--max-dollars",
        "[default: 25]",
        "--lock",
        "[default: skip]",
        "--resume",
        "--budget-file",
        "--no-chain",
        "--dry-run",
        "--skill-cmd",
        "--answer",
        "--answers",
        "--json",
        "--repo",
        "--tracker-url",
        "SDD_LOOP_NOW",
        "SDD_LOOP_NOW_FILE",
        "SDD_LOOP_CLOCK",
        "Exit status:",
    ] {
        assert!(out.contains(needle), "work --help lacks {needle}\n{out}");
    }
    let (_, out, _) = call(&["review", "--help"], &[]);
    assert!(out.contains("--pr"));
}

// Regression: `--remote` said it fed resume only, though claims are made
// on it and the tracker repository defaults from it.
#[test]
fn remote_help_names_everything_it_picks() {
    let (_, out, _) = call(&["work", "--help"], &[]);
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("--remote <NAME> git remote of the shared origin: loop ticks claim their issues and PRs on it (unless SDD_LOOP_CLAIM_REMOTE names another), resume compares branch heads against it, and --repo defaults from its URL"),
        "{flat}"
    );
}

#[test]
fn missing_skill_command_is_a_usage_error_with_help() {
    let (code, _, err) = call(&["work", "--loop"], &[]);
    assert_eq!(code, exit::USAGE);
    assert!(err.contains("help: pass --skill-cmd"), "{err}");
}

#[test]
fn bad_clock_and_crash_point_are_usage_errors() {
    let (code, _, err) = call(
        &["work", "--loop", "--skill-cmd", "true"],
        &[("SDD_LOOP_NOW", "yesterday")],
    );
    assert_eq!(code, exit::USAGE, "{err}");
    let (code, _, err) = call(
        &["work", "--loop", "--skill-cmd", "true"],
        &[("SDD_LOOP_CLOCK", "fast")],
    );
    assert_eq!(code, exit::USAGE, "{err}");
    assert!(err.contains("help: SDD_LOOP_CLOCK takes real"), "{err}");
    let (code, _, err) = call(
        &["work", "--loop", "--skill-cmd", "true"],
        &[("SDD_LOOP_CRASH_AT", "lunch")],
    );
    assert_eq!(code, exit::USAGE, "{err}");
    assert!(err.contains("after-lock"));
}

#[test]
fn a_clock_file_that_gives_no_instant_or_a_second_clock_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("machine-a.clock");
    let missing = missing.to_str().unwrap();
    let (code, _, err) = call(
        &["work", "--loop", "--skill-cmd", "true"],
        &[("SDD_LOOP_NOW_FILE", missing)],
    );
    assert_eq!(code, exit::USAGE, "{err}");
    assert!(
        err.contains("cannot read the clock file") && err.contains("machine-a.clock"),
        "{err}"
    );
    assert!(
        err.contains("help: SDD_LOOP_NOW_FILE names a file"),
        "{err}"
    );
    std::fs::write(dir.path().join("machine-a.clock"), "2026-05-09T14:00:00Z").unwrap();
    let (code, _, err) = call(
        &["work", "--loop", "--skill-cmd", "true"],
        &[
            ("SDD_LOOP_NOW_FILE", missing),
            ("SDD_LOOP_NOW", "2026-05-09T14:00:00Z"),
        ],
    );
    assert_eq!(code, exit::USAGE, "{err}");
    assert!(err.contains("both set"), "{err}");
    let clock =
        super::clock_from_vars(&[("SDD_LOOP_NOW_FILE".to_owned(), missing.to_owned())].into())
            .unwrap();
    assert_eq!(
        crate::os::clock::format(clock.now()),
        "2026-05-09T14:00:00Z"
    );
    std::fs::write(dir.path().join("machine-a.clock"), "2026-05-09T14:16:00Z").unwrap();
    assert_eq!(
        crate::os::clock::format(clock.now()),
        "2026-05-09T14:16:00Z"
    );
}

#[test]
fn the_in_session_halves_have_their_own_help_and_checks() {
    let (code, out, _) = call(&["work", "begin", "--help"], &[]);
    assert_eq!(code, 0);
    for needle in ["--holder-pid", "--max-prs", "--answer", "5  skip", "4  ask"] {
        assert!(out.contains(needle), "begin --help lacks {needle}\n{out}");
    }
    let (code, out, _) = call(&["review", "end", "--help"], &[]);
    assert_eq!(code, 0);
    for needle in [
        "--result",
        "--opened",
        "--comments",
        "--iteration",
        "exit 66",
    ] {
        assert!(out.contains(needle), "end --help lacks {needle}\n{out}");
    }
    let (code, _, err) = call(&["work", "begin", "--holder-pid", "1"], &[]);
    assert_eq!(code, exit::USAGE);
    assert!(err.contains("begin needs --loop"), "{err}");
    let (code, _, err) = call(
        &[
            "work",
            "begin",
            "--loop",
            "--skill-cmd",
            "x",
            "--holder-pid",
            "1",
        ],
        &[],
    );
    assert_eq!(code, exit::USAGE);
    assert!(err.contains("--skill-cmd does not apply to begin"), "{err}");
    let (code, _, err) = call(&["work", "end", "--failed", "oops"], &[]);
    assert_eq!(code, exit::USAGE);
    assert!(err.contains("#N=root cause"), "{err}");
    let (code, _, err) = call(&["work", "end", "--usage", "m:1"], &[]);
    assert_eq!(code, exit::USAGE, "{err}");
}

#[test]
fn crash_points_are_listed() {
    let (code, out, _) = call(&["crash-points"], &[]);
    assert_eq!(code, 0);
    assert!(out.contains("after-history"));
}

#[test]
fn agent_flags_are_checked_before_anything_runs() {
    let refused = [
        (
            &[
                "work",
                "--loop",
                "--agent-model",
                "opus",
                "--skill-cmd",
                "true",
            ][..],
            &[][..],
            "need --agent",
        ),
        (
            &["work", "begin", "--loop", "--agent", "claude"],
            &[],
            "does not apply to begin",
        ),
        (&["work", "--agent", "claude"], &[], "--agent needs --loop"),
        (
            &["work", "--loop"],
            &[("SDD_LOOP_AGENT", "aider")],
            "SDD_LOOP_AGENT=\"aider\"",
        ),
        (
            &["work", "--loop"],
            &[("SDD_LOOP_AGENT", "claude"), ("SDD_LOOP_SKILL_CMD", "true")],
            "both SDD_LOOP_SKILL_CMD and SDD_LOOP_AGENT are set",
        ),
        (
            &["work", "--loop", "--agent", "claude", "--skill-cmd", "true"],
            &[],
            "cannot be used with",
        ),
    ];
    for (args, vars, want) in refused {
        let (code, _, err) = call(args, vars);
        assert_eq!(code, exit::USAGE, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }

    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("prompt.md");
    std::fs::write(&template, "Work on {{issues}} in {{repo}}\n").unwrap();
    let (code, _, err) = call(
        &[
            "work",
            "--loop",
            "--agent",
            "codex",
            "--agent-prompt",
            template.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, exit::DATA, "{err}");
    assert!(
        err.contains("prompt.md:1: unknown placeholder {{repo}}"),
        "{err}"
    );
    assert!(err.contains("help: placeholders are {{skill}}"), "{err}");
}

// `statusline -- CMD` is read without the parser: it must run the same
// command the parser would, its words and a second `--` kept.
#[test]
fn statusline_after_a_double_dash_runs_the_same_command_as_the_parser_would() {
    let words = ["printf", "%s+%s", "a", "--"];
    let fast: Vec<&str> = ["statusline", "--"].into_iter().chain(words).collect();
    let parsed: Vec<&str> = ["statusline"].into_iter().chain(words).collect();
    let (code, out, err) = call(&fast, &[]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "a+--", ""));
    assert_eq!(call(&parsed, &[]), (0, "a+--".to_owned(), String::new()));
    let (code, out, _) = call(&["statusline", "--help"], &[]);
    assert_eq!(code, 0);
    assert!(out.contains("Install (settings.json)"), "{out}");
    let (code, out, _) = call(
        &["statusline", "--"],
        &[("SDD_LOOP_STATUSLINE_CMD", "printf ok")],
    );
    assert_eq!((code, out.as_str()), (0, "ok"));
}
