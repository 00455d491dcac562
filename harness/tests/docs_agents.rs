//! The book's command lines for the Gemini CLI and OpenCode are the ones
//! the real-CLI cases run: every `sdd-loop … --agent gemini|opencode` line
//! of "Driving a real agent" (`docs/src/agents.md`) must have a `driver:
//! real-gemini|real-opencode` case whose `args` carry the same
//! `--agent-model` and `--agent-arg`s and the same loop flags, so the
//! flags the docs tell users to pass are the flags proved against the
//! pinned CLIs.

use std::path::PathBuf;

use serde_json::Value;

/// The workspace, found from the package directory tests run in (as
/// `support::workspace` does; that module is not pulled in whole here).
fn workspace() -> PathBuf {
    let here = std::env::current_dir().expect("a current directory");
    sdd_harness::cli::find_workspace(&here).expect("the tests run inside the workspace")
}

/// The page's `sdd-loop` command lines (continuations joined) that
/// drive `agent`, as their words.
fn page_lines(page: &str, agent: &str) -> Vec<Vec<String>> {
    let mut lines = Vec::new();
    let mut current = String::new();
    for line in page.lines() {
        let line = line.trim();
        if current.is_empty() && !line.starts_with("while sdd-loop") {
            continue;
        }
        current.push(' ');
        current.push_str(line.trim_end_matches('\\'));
        if !line.ends_with('\\') {
            let words: Vec<String> = current.split_whitespace().map(str::to_owned).collect();
            if words.windows(2).any(|w| w[0] == "--agent" && w[1] == agent) {
                lines.push(words);
            }
            current.clear();
        }
    }
    lines
}

/// The flags of a command line a case must run: everything after
/// `sdd-loop <skill> --loop`, up to `;`, without `--agent NAME`.
fn flags(words: &[String]) -> Vec<String> {
    let start = words.iter().position(|w| w == "--loop").unwrap() + 1;
    let mut out = Vec::new();
    let mut i = start;
    while i < words.len() {
        if words[i] == "--agent" {
            i += 2;
            continue;
        }
        if let Some(last) = words[i].strip_suffix(';') {
            out.push(last.to_owned());
            break;
        }
        out.push(words[i].clone());
        i += 1;
    }
    out
}

fn cases(driver: &str) -> Vec<(String, Vec<String>)> {
    let dir = workspace().join("evals/loop");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let Ok(case) = serde_saphyr::from_str::<Value>(&text) else {
            continue;
        };
        if case.get("driver").and_then(Value::as_str) != Some(driver) {
            continue;
        }
        let args = case
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        out.push((entry.file_name().to_string_lossy().into_owned(), args));
    }
    out
}

#[test]
fn every_documented_command_line_for_gemini_and_opencode_is_run_by_a_case() {
    let page = std::fs::read_to_string(workspace().join("docs/src/agents.md")).unwrap();
    for agent in ["gemini", "opencode"] {
        let lines = page_lines(&page, agent);
        assert!(
            !lines.is_empty(),
            "docs/src/agents.md shows no `--agent {agent}` line"
        );
        let cases = cases(&format!("real-{agent}"));
        for words in lines {
            let want = flags(&words);
            let run_by: Vec<&String> = cases
                .iter()
                .filter(|(_, args)| args.windows(want.len()).any(|w| w == want.as_slice()))
                .map(|(name, _)| name)
                .collect();
            assert!(
                !run_by.is_empty(),
                "docs/src/agents.md's `{}` is run by no `driver: real-{agent}` case with the args {want:?}",
                words.join(" ")
            );
        }
    }
}
