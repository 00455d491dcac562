//! The repository as a Claude Code plugin: `.claude-plugin/plugin.json`
//! and `marketplace.json` name a plugin that does not clash with the
//! upstream `sdd`, its skills exist, `hooks/hooks.json` wires each event
//! to the plugin's launcher (`hooks/sdd-loop-hook EVENT`, which runs
//! `sdd-loop hook EVENT`) with the time limit the engine keeps, and the
//! installed Claude Code's `claude plugin validate` passes it.
//!
//! The validation runs the real CLI: `$SDD_EVALS_CLAUDE`, else the one
//! `sdd-evals agents install` put in `~/.cache/sdd-evals/agents/`, else
//! `claude` on PATH. Without one the test says it was not run — unless
//! `SDD_EVALS_REQUIRE_AGENTS=1` (CI), where that is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use sdd_loop::hook::{HookEvent, TIMEOUTS};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn json(path: &str) -> Value {
    let full = root().join(path);
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

#[test]
fn the_plugin_is_named_apart_from_upstream_and_lists_its_skills_and_hooks() {
    let plugin = json(".claude-plugin/plugin.json");
    assert_eq!(
        plugin["name"], "sdd-loop",
        "`sdd` is the upstream plugin's name"
    );
    for skill in plugin["skills"].as_array().unwrap() {
        let dir = root().join(skill.as_str().unwrap());
        assert!(dir.join("SKILL.md").is_file(), "{}", dir.display());
    }
    assert_eq!(plugin["hooks"], "./hooks/hooks.json");
    let market = json(".claude-plugin/marketplace.json");
    let entry = &market["plugins"][0];
    assert_eq!(entry["name"], plugin["name"]);
    assert_eq!(entry["source"], "./");
    assert_eq!(entry["version"], plugin["version"]);
    assert_eq!(
        plugin["version"],
        env!("CARGO_PKG_VERSION"),
        "the plugin's version is the engine's"
    );
}

#[test]
fn each_hook_runs_sdd_loop_hook_with_the_engine_s_time_limit() {
    let hooks = json("hooks/hooks.json");
    for (event, seconds) in TIMEOUTS {
        let groups = hooks["hooks"][event.claude_name()]
            .as_array()
            .unwrap_or_else(|| panic!("{} is not wired", event.claude_name()));
        assert_eq!(groups.len(), 1);
        let hook = &groups[0]["hooks"][0];
        assert_eq!(hook["type"], "command");
        // The launcher in the plugin, its path quoted for the shell
        // Claude Code runs it with (a plugin root may hold spaces).
        assert_eq!(
            hook["command"],
            format!(
                "\"${{CLAUDE_PLUGIN_ROOT}}\"/hooks/sdd-loop-hook {}",
                event.command()
            )
        );
        assert!(hook["args"].is_null(), "{}", event.claude_name());
        assert_eq!(hook["timeout"], seconds, "{}", event.claude_name());
        let matcher = &groups[0]["matcher"];
        match event {
            HookEvent::PreToolUse => {
                assert_eq!(
                    matcher,
                    "Bash|Write|Edit|MultiEdit|NotebookEdit|Skill|mcp__.*"
                )
            }
            _ => assert!(
                matcher.is_null(),
                "{} takes no matcher",
                event.claude_name()
            ),
        }
    }
}

/// The installed Claude Code, if any.
fn claude() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SDD_EVALS_CLAUDE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    let cached = home.join(".cache/sdd-evals/agents/claude-2.1.332/node_modules/.bin/claude");
    if cached.is_file() {
        return Some(cached);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("claude"))
            .find(|p| p.is_file())
    })
}

#[test]
fn claude_plugin_validate_passes() {
    let Some(claude) = claude() else {
        assert!(
            std::env::var("SDD_EVALS_REQUIRE_AGENTS").as_deref() != Ok("1"),
            "SDD_EVALS_REQUIRE_AGENTS=1 but no Claude Code is installed: run `sdd-evals agents install` or set SDD_EVALS_CLAUDE"
        );
        #[expect(clippy::print_stderr, reason = "a skipped check must say so")]
        {
            eprintln!(
                "claude plugin validate was not run: no Claude Code (set SDD_EVALS_CLAUDE, run `sdd-evals agents install`, or put claude on PATH)"
            );
        }
        return;
    };
    let config = tempfile::tempdir().unwrap();
    let out = Command::new(&claude)
        .args(["plugin", "validate"])
        .arg(root())
        .env("CLAUDE_CONFIG_DIR", config.path())
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("Validation passed"),
        "{} plugin validate {}: exit {:?}\n{stdout}\n{}",
        claude.display(),
        root().display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    for part in [
        "hooks: UserPromptSubmit command \"\\\"${CLAUDE_PLUGIN_ROOT}\\\"/hooks/sdd-loop-hook user-prompt-submit\"",
        "hooks: PreToolUse",
        "hooks: Stop command \"\\\"${CLAUDE_PLUGIN_ROOT}\\\"/hooks/sdd-loop-hook stop\"",
        "skills: sdd-loop:work",
        "skills: sdd-loop:review",
    ] {
        assert!(stdout.contains(part), "{part} missing:\n{stdout}");
    }
}
