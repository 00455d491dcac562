//! A project for the hook tests: the mock tracker (sdd-mocks) serving a
//! backlog, optionally a git origin, and `sdd-loop hook EVENT` run as
//! Claude Code runs it — one JSON object on stdin, shaped exactly as
//! Claude Code 2.1.328 writes it (`reference/real-agents.md`: every field
//! of every event) — with this test process as the session that holds the
//! loop.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

use sdd_mocks::fixture::Backlog;
use sdd_mocks::git::{Git, GitIdentity, GitWorld, materialise};
use sdd_mocks::tracker::{BlockingMockTracker, MockTracker};

pub const TOKEN: &str = "hook-test-token-0123456789";

/// Two unblocked stories (`fixtures/backlogs/two-ready-stories.yaml`).
pub const TWO_STORIES: &str = include_str!("../../../fixtures/backlogs/two-ready-stories.yaml");
/// An open PR whose human feedback the responder answered.
pub const HUMAN_FEEDBACK: &str =
    include_str!("../../../fixtures/backlogs/pr-with-human-feedback.yaml");
/// Issue #20 has no criteria, #21 has `TBD`.
pub const AMBIGUOUS: &str = include_str!("../../../fixtures/backlogs/ambiguous-criteria.yaml");
pub const EMPTY: &str = include_str!("../../../fixtures/backlogs/empty.yaml");

/// A session transcript recorded with Claude Code 2.1.328 against
/// mock-model: one prompt answered by four responses.
pub const TRANSCRIPT: &str = include_str!(
    "../fixtures/transcripts/real-2.1.328-mock-model/80e0210c-fc40-4791-971c-34d9a14abae1.jsonl"
);

/// Another live process: a second session holding the loop.
pub struct OtherSession(Child);

impl OtherSession {
    pub fn start() -> Self {
        Self(
            Command::new("sleep")
                .arg("600")
                .stdin(Stdio::null())
                .spawn()
                .expect("sleep runs"),
        )
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for OtherSession {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What a hook printed.
#[derive(Debug)]
pub struct Answered {
    /// The JSON it printed, if any.
    pub json: Option<Value>,
    pub output: Output,
}

impl Answered {
    /// The reason of a block or a deny, or the context.
    pub fn text(&self) -> String {
        let Some(j) = &self.json else {
            return String::new();
        };
        j["reason"]
            .as_str()
            .or(j["hookSpecificOutput"]["permissionDecisionReason"].as_str())
            .or(j["hookSpecificOutput"]["additionalContext"].as_str())
            .or(j["systemMessage"].as_str())
            .unwrap_or_default()
            .to_owned()
    }

    pub fn passed(&self) -> bool {
        self.json.is_none()
    }

    pub fn denied(&self) -> bool {
        self.json.as_ref().is_some_and(|j| {
            j["hookSpecificOutput"]["permissionDecision"] == "deny"
                && j["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
        })
    }

    pub fn blocked(&self) -> bool {
        self.json.as_ref().is_some_and(|j| j["decision"] == "block")
    }

    pub fn context(&self) -> Option<String> {
        let j = self.json.as_ref()?;
        (j["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit")
            .then(|| j["hookSpecificOutput"]["additionalContext"].as_str())
            .flatten()
            .map(str::to_owned)
    }
}

pub struct World {
    pub tracker: BlockingMockTracker,
    pub dir: tempfile::TempDir,
    pub git: Option<GitWorld>,
    pub project: PathBuf,
    pub session_id: String,
    pub transcript: PathBuf,
}

impl World {
    fn build(backlog: &str, with_git: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let backlog = Backlog::parse(Path::new("backlog.yaml"), backlog).unwrap();
        let git = with_git.then(|| {
            let git = Git::new(GitIdentity::default());
            materialise(&git, &backlog, dir.path()).unwrap()
        });
        let mut builder = MockTracker::builder().backlog(backlog).token(TOKEN);
        if let Some(g) = &git {
            builder = builder.origin(&g.origin);
        }
        let tracker = builder.start_blocking().unwrap();
        let project = match &git {
            Some(g) => g.clone.clone(),
            None => {
                let p = dir.path().join("project");
                std::fs::create_dir(&p).unwrap();
                p
            }
        };
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let transcript = dir.path().join("config/projects/-project/session-1.jsonl");
        std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
        std::fs::write(&transcript, TRANSCRIPT).unwrap();
        Self {
            tracker,
            dir,
            git,
            project,
            session_id: "11111111-2222-3333-4444-555555555555".into(),
            transcript,
        }
    }

    /// The backlog on the tracker; the project is a plain directory.
    pub fn new(backlog: &str) -> Self {
        Self::build(backlog, false)
    }

    /// The backlog on the tracker and in a git origin; the project is a
    /// clone of it.
    pub fn with_git(backlog: &str) -> Self {
        Self::build(backlog, true)
    }

    pub fn env(&self) -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("HOME", self.dir.path().join("home").display().to_string()),
            ("SDD_LOOP_TRACKER_URL", self.tracker.uri()),
            ("SDD_LOOP_REPO", "acme/app".into()),
            ("SDD_LOOP_TRACKER_TOKEN", TOKEN.into()),
            ("SDD_LOOP_TRACKER_RETRY_BUDGET", "2".into()),
            ("GIT_TERMINAL_PROMPT", "0".into()),
        ])
    }

    fn command(&self, args: &[String]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sdd-loop"));
        cmd.args(args)
            .current_dir(&self.project)
            .env_clear()
            .envs(self.env());
        cmd
    }

    /// Runs `sdd-loop hook EVENT` with `input` on stdin, held by `holder`.
    pub fn hook_as(&self, event: &str, input: &Value, holder: u32) -> Answered {
        self.hook_bytes(event, input.to_string().as_bytes(), holder)
    }

    /// Runs `sdd-loop hook EVENT` with `bytes` on stdin, held by `holder`.
    pub fn hook_bytes(&self, event: &str, bytes: &[u8], holder: u32) -> Answered {
        let mut child = self
            .command(&[
                "hook".into(),
                event.into(),
                "--holder-pid".into(),
                holder.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(bytes).unwrap();
        let output = child.wait_with_output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "a hook always exits 0: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout.clone()).unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(lines.len() <= 1, "one JSON line at most: {stdout}");
        let json = lines.first().map(|l| {
            serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))
        });
        Answered { json, output }
    }

    /// [`World::hook_as`] with this test process as the session.
    pub fn hook(&self, event: &str, input: &Value) -> Answered {
        self.hook_as(event, input, std::process::id())
    }

    /// `sdd-loop ARGS` in the project.
    pub fn engine(&self, args: &[&str]) -> Output {
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        self.command(&args).stdin(Stdio::null()).output().unwrap()
    }

    fn common(&self, event: &str, prompt_id: &str) -> Value {
        json!({
            "session_id": self.session_id,
            "transcript_path": self.transcript,
            "cwd": self.project,
            "prompt_id": prompt_id,
            "permission_mode": "default",
            "hook_event_name": event,
        })
    }

    /// `UserPromptSubmit`.
    pub fn prompt(&self, prompt: &str, prompt_id: &str) -> Value {
        let mut v = self.common("UserPromptSubmit", prompt_id);
        v["prompt"] = json!(prompt);
        v
    }

    /// `UserPromptSubmit` from `source` (`None`: a payload without the
    /// field, as Claude Code sent before it).
    pub fn prompt_from(&self, prompt: &str, prompt_id: &str, source: Option<&str>) -> Value {
        let mut v = self.prompt(prompt, prompt_id);
        if let Some(s) = source {
            v["source"] = json!(s);
        }
        v
    }

    /// `PreToolUse` for a `Bash` command.
    pub fn bash(&self, command: &str, prompt_id: &str) -> Value {
        self.tool(
            "Bash",
            json!({"command": command, "description": "run it"}),
            prompt_id,
        )
    }

    /// `PreToolUse` for any tool.
    pub fn tool(&self, name: &str, input: Value, prompt_id: &str) -> Value {
        let mut v = self.common("PreToolUse", prompt_id);
        v["tool_name"] = json!(name);
        v["tool_input"] = input;
        v["tool_use_id"] = json!(format!("toolu_{prompt_id}"));
        v
    }

    /// `Stop`.
    pub fn stop(&self, active: bool, message: &str, prompt_id: &str) -> Value {
        let mut v = self.common("Stop", prompt_id);
        v["stop_hook_active"] = json!(active);
        v["last_assistant_message"] = json!(message);
        v["background_tasks"] = json!([]);
        v["session_crons"] = json!([]);
        v
    }

    /// `StopFailure`: the turn ended on a model-API error `error`.
    pub fn stop_failure(&self, error: &str, details: &str, prompt_id: &str) -> Value {
        let mut v = self.common("StopFailure", prompt_id);
        v["error"] = json!(error);
        v["error_details"] = json!(details);
        v["last_assistant_message"] = json!("");
        v
    }

    /// `SessionEnd` for `reason`.
    pub fn session_end(&self, reason: &str, prompt_id: &str) -> Value {
        let mut v = self.common("SessionEnd", prompt_id);
        v["reason"] = json!(reason);
        v
    }

    /// Opens a PR straight on the tracker, as `curl` would: nobody reports
    /// it to the engine.
    pub fn open_pr(&self, head: &str, body: &str) -> u64 {
        if let Some(g) = &self.git {
            let git = Git::new(GitIdentity::default());
            git.run(&g.clone, ["checkout", "--quiet", "-B", head, "main"])
                .unwrap();
            std::fs::write(
                g.clone.join(format!("{}.txt", head.replace('/', "-"))),
                head,
            )
            .unwrap();
            git.run(&g.clone, ["add", "."]).unwrap();
            git.run(&g.clone, ["commit", "--quiet", "-m", head])
                .unwrap();
            git.run(&g.clone, ["push", "--quiet", "origin", head])
                .unwrap();
            git.run(&g.clone, ["checkout", "--quiet", "main"]).unwrap();
        }
        let mut reply = ureq::post(format!("{}/repos/acme/app/pulls", self.tracker.uri()))
            .header("Authorization", format!("Bearer {TOKEN}"))
            .send_json(json!({"title": head, "head": head, "base": "main", "body": body}))
            .unwrap();
        let pr: Value = reply.body_mut().read_json().unwrap();
        pr["number"].as_u64().unwrap()
    }

    pub fn state(&self, name: &str) -> PathBuf {
        self.project.join(".sdd/loop").join(name)
    }

    fn lines(&self, name: &str) -> Vec<Value> {
        std::fs::read_to_string(self.state(name))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    pub fn history(&self, skill: &str) -> Vec<Value> {
        self.lines(&format!("{skill}.history.jsonl"))
    }

    pub fn log(&self, skill: &str) -> Vec<Value> {
        self.lines(&format!("{skill}.hooks.jsonl"))
    }

    pub fn budget(&self, skill: &str) -> Value {
        serde_json::from_slice(&std::fs::read(self.state(&format!("{skill}.budget.json"))).unwrap())
            .unwrap()
    }

    pub fn is_open(&self, skill: &str) -> bool {
        self.state(&format!("{skill}.inflight.json")).exists()
    }

    /// Every file under `.sdd/`, with its bytes.
    pub fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.insert(p.clone(), std::fs::read(&p).unwrap_or_default());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.project.join(".sdd"), &mut out);
        out
    }
}
