//! Redact data that varies from run to run, to produce stable snapshots.
//!
//! One policy, applied before anything is snapshotted, so the test suite
//! (insta) and `sdd-evals run` (which compares against the stored `.snap`
//! files itself and never writes them) see the same bytes:
//!
//! - the sandbox directory → `[ROOT]`, the workspace → `[WORKSPACE]`, and
//!   the sandbox project's Claude Code folder name (its path with every
//!   non-alphanumeric character turned into `-`) → `[PROJECT-SLUG]`;
//! - the mock tracker's port → `[PORT]`, the notification receiver's
//!   (`world.notify`) → `[NOTIFY-PORT]`, and the loopback address a
//!   partitioned machine is pointed at → `[DEAD-ENDPOINT]`;
//! - a real Claude Code session's id (the name of its transcript under
//!   `[ROOT]/claude-config/projects/`) → `[SESSION-1]`, `[SESSION-2]`, …
//!   in the order the sessions began;
//! - process ids: `pid 12345` → `pid [PID]` in text, and any JSON field
//!   named `pid` → `"[PID]"` (`process_start` → `"[START]"`);
//! - how git refused the losing push of a claim race (`took it first
//!   ([rejected] (stale info))`, `([remote rejected] (failed to update
//!   ref))`) → `took it first ([GIT'S REFUSAL])`: which wording the loser
//!   gets depends on how far the winner's push had got; and, where
//!   machines ticked at once, the machine named as a claim's holder or in
//!   a path of its clone → `[MACHINE]` ([`Redactor::raced_machines`]).
//!
//! Credentials are redacted too, as the engine redacts them (its
//! credential shapes, and the sandbox's tracker token), so a planted secret
//! never reaches a snapshot — nor a grade: grades quote what the engine
//! printed and recorded, and the engine may be another implementation
//! that redacts nothing (`--engine`). Grades lose only the credentials
//! ([`Redactor::credentials`]); their paths stay real, so the evidence of a
//! failure points at files one can open.
//!
//! Times are *not* redacted: the engine's clock is frozen at the case's
//! `SDD_LOOP_NOW` for the whole tick, the fake skill and the git world pin
//! their dates, so every recorded time and SHA is the same on every run.
//! What a test is about (iterations, counters, gates, stop causes, PR
//! numbers) is never touched.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// The ids of the real Claude Code sessions a case ran (its transcripts'
/// names under `root/claude-config/projects/*/`), oldest first.
fn real_sessions(root: &Path) -> Vec<String> {
    let mut found: Vec<(std::time::SystemTime, String)> = Vec::new();
    let Ok(projects) = std::fs::read_dir(root.join("claude-config").join("projects")) else {
        return Vec::new();
    };
    for project in projects.flatten() {
        let Ok(files) = std::fs::read_dir(project.path()) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            if path.extension().is_some_and(|e| e == "jsonl")
                && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
            {
                let born = file
                    .metadata()
                    .and_then(|m| m.created().or_else(|_| m.modified()))
                    .unwrap_or(std::time::SystemTime::UNIX_EPOCH);
                found.push((born, stem.to_owned()));
            }
        }
    }
    found.sort();
    found.into_iter().map(|(_, id)| id).collect()
}

/// The rules for one sandbox.
#[derive(Debug, Clone)]
pub struct Redactor {
    rules: Vec<(Regex, String)>,
    /// Credentials never reach a snapshot or a grade: the engine's own
    /// redaction (credential shapes) plus the sandbox's tracker token.
    secrets: sdd_loop::rules::redact::Redactor,
}

/// The credentials the harness removes from everything it writes: the
/// engine's built-in credential shapes and the sandbox's tracker token.
pub fn credentials() -> sdd_loop::rules::redact::Redactor {
    sdd_loop::rules::redact::Redactor::builder()
        .secret("tracker-token", crate::world::sandbox::TRACKER_TOKEN)
        .build()
}

fn literal(text: &str) -> Regex {
    Regex::new(&regex::escape(text)).expect("an escaped literal is a valid pattern")
}

impl Redactor {
    /// Rules for a sandbox at `root` (its project at `project`) in a
    /// workspace at `workspace`, with the mock tracker on `port`.
    pub fn new(root: &Path, project: &Path, workspace: &Path, port: u16) -> Self {
        let mut rules = Vec::new();
        let mut paths = vec![(root.to_path_buf(), "[ROOT]")];
        if let Ok(canonical) = root.canonicalize() {
            paths.push((canonical, "[ROOT]"));
        }
        paths.push((workspace.to_path_buf(), "[WORKSPACE]"));
        if let Ok(canonical) = workspace.canonicalize() {
            paths.push((canonical, "[WORKSPACE]"));
        }
        // Longest first, so a sandbox inside the workspace is `[ROOT]`.
        paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.as_os_str().len()));
        paths.dedup_by(|a, b| a.0 == b.0);
        // In-session transcripts live in a folder named after the project.
        let mut projects = vec![project.to_path_buf()];
        projects.extend(project.canonicalize());
        for project in projects {
            let slug = sdd_loop::transcript::project_slug(&project);
            rules.push((literal(&slug), "[PROJECT-SLUG]".to_owned()));
        }
        for (n, id) in real_sessions(root).iter().enumerate() {
            rules.push((literal(id), format!("[SESSION-{}]", n + 1)));
        }
        for (path, with) in paths {
            let text = path.display().to_string();
            if text.len() > 1 {
                rules.push((literal(&text), with.to_owned()));
            }
        }
        rules.push((
            Regex::new(&format!(r"\b127\.0\.0\.1:{port}\b")).expect("valid pattern"),
            "127.0.0.1:[PORT]".to_owned(),
        ));
        static PID: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"\bpid (\d+)").expect("valid pattern"));
        rules.push((PID.clone(), "pid [PID]".to_owned()));
        // Two clones' claims pushed at once: git words the loser's refusal
        // by how far the winner's push had got (`[rejected] (stale info)`,
        // `[remote rejected] (failed to update ref)`, …). That it lost is
        // the test; the wording is timing.
        static LOST_RACE: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(r"took it first \((?:\[remote rejected\]|\[rejected\]) \([^)]*\)\)")
                .expect("valid pattern")
        });
        rules.push((
            LOST_RACE.clone(),
            "took it first ([GIT'S REFUSAL])".to_owned(),
        ));
        Self {
            rules,
            secrets: credentials(),
        }
    }

    /// Also redacts `url` (a partitioned machine's dead endpoint, whose
    /// port is any free one) as `[DEAD-ENDPOINT]`, and curl's words for it
    /// (`Failed to connect to 127.0.0.1 port 41234 after 0 ms`, whose
    /// milliseconds vary too) as `Failed to connect to [DEAD-ENDPOINT]`.
    pub fn dead_endpoint(mut self, url: &str) -> Self {
        if url.is_empty() {
            return self;
        }
        self.rules
            .insert(0, (literal(url), "[DEAD-ENDPOINT]".to_owned()));
        let address = url.split_once("://").map_or(url, |(_, rest)| rest);
        let address = address.split('/').next().unwrap_or(address);
        if let Some((host, port)) = address.rsplit_once(':')
            && let Ok(curl) = Regex::new(&format!(
                r"{} port {} after \d+ ms",
                regex::escape(host),
                regex::escape(port)
            ))
        {
            self.rules.insert(0, (curl, "[DEAD-ENDPOINT]".to_owned()));
        }
        self
    }

    /// Also redacts the notification receiver's port (`uri` is
    /// `http://127.0.0.1:PORT`, when the case has one) as `[NOTIFY-PORT]`.
    pub fn notify_receiver(mut self, uri: Option<&str>) -> Self {
        let Some(port) = uri
            .and_then(|u| u.rsplit_once(':'))
            .and_then(|(_, p)| p.parse::<u16>().ok())
        else {
            return self;
        };
        self.rules.insert(
            0,
            (
                Regex::new(&format!(r"\b127\.0\.0\.1:{port}\b")).expect("valid pattern"),
                "127.0.0.1:[NOTIFY-PORT]".to_owned(),
            ),
        );
        self
    }

    /// Also redacts which of `machines` a text names — a claim's holder
    /// (`by a:[ROOT]/machines/a/work` → `by [MACHINE]:[ROOT]/machines/[MACHINE]/work`),
    /// a path in a machine's clone: where machines ticked at once, which
    /// one won a race varies from run to run.
    pub fn raced_machines(mut self, machines: &[&str]) -> Self {
        if machines.is_empty() {
            return self;
        }
        let names = machines
            .iter()
            .map(|m| regex::escape(m))
            .collect::<Vec<_>>()
            .join("|");
        for (pattern, with) in [
            (
                format!(r"\[ROOT\]/machines/(?:{names})/"),
                "[ROOT]/machines/[MACHINE]/",
            ),
            (format!(r"by (?:{names}):\[ROOT\]"), "by [MACHINE]:[ROOT]"),
        ] {
            if let Ok(rule) = Regex::new(&pattern) {
                self.rules.push((rule, with.to_owned()));
            }
        }
        self
    }

    /// `text` without credentials, everything else as it was.
    pub fn credentials(&self, text: &str) -> String {
        self.secrets.apply(text)
    }

    /// Redacts text.
    pub fn text(&self, text: &str) -> String {
        let mut out = self.secrets.redact(text).into_owned();
        for (pattern, with) in &self.rules {
            if let std::borrow::Cow::Owned(replaced) = pattern.replace_all(&out, with.as_str()) {
                out = replaced;
            }
        }
        out
    }

    /// Redacts a JSON value: `pid` and `process_start` fields wholesale,
    /// every string by [`Redactor::text`].
    pub fn json(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.text(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.json(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let v = match k.as_str() {
                            "pid" if !v.is_null() => Value::from("[PID]"),
                            "process_start" if !v.is_null() => Value::from("[START]"),
                            _ => self.json(v),
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Regression: curl's message for the dead endpoint named its port and
    /// the milliseconds it waited, so a partitioned machine's snapshot
    /// changed from run to run.
    #[test]
    fn a_dead_endpoint_is_redacted_in_curls_words_too() {
        let r = Redactor::new(
            Path::new("/tmp/sdd-evals-x1"),
            Path::new("/tmp/sdd-evals-x1/work"),
            Path::new("/work/main"),
            4567,
        )
        .dead_endpoint("http://127.0.0.1:44309");
        assert_eq!(
            r.text("unable to access 'http://127.0.0.1:44309/origin.git/': Failed to connect to 127.0.0.1 port 44309 after 12 ms: Couldn't connect to server"),
            "unable to access '[DEAD-ENDPOINT]/origin.git/': Failed to connect to [DEAD-ENDPOINT]: Couldn't connect to server"
        );
    }

    #[test]
    fn paths_ports_and_pids_are_redacted_times_are_not() {
        let r = Redactor::new(
            Path::new("/tmp/sdd-evals-x1"),
            Path::new("/tmp/sdd-evals-x1/work"),
            Path::new("/work/main"),
            4567,
        );
        assert_eq!(
            r.text("/tmp/sdd-evals-x1/home/.claude/projects/-tmp-sdd-evals-x1-work/s.jsonl"),
            "[ROOT]/home/.claude/projects/[PROJECT-SLUG]/s.jsonl"
        );
        assert_eq!(
            r.text("Previous iteration 3 still active (pid 48213) — skipping this tick"),
            "Previous iteration 3 still active (pid [PID]) — skipping this tick"
        );
        assert_eq!(
            r.text("GET http://127.0.0.1:4567/repos at /tmp/sdd-evals-x1/work/.sdd (2026-05-09T14:00:00Z)"),
            "GET http://127.0.0.1:[PORT]/repos at [ROOT]/work/.sdd (2026-05-09T14:00:00Z)"
        );
        assert_eq!(
            r.text("/work/main/fixtures/qmd"),
            "[WORKSPACE]/fixtures/qmd"
        );
        assert_eq!(
            r.json(&json!({"lock": {"pid": 7, "iteration": 3, "process_start": 99}, "note": "was pid 7"})),
            json!({"lock": {"pid": "[PID]", "iteration": 3, "process_start": "[START]"}, "note": "was pid [PID]"})
        );
    }
}
