//! A Claude Code session transcript, as Claude Code writes it under
//! `~/.claude/projects/<project slug>/<session id>.jsonl`: what a played
//! in-session agent leaves for `sdd-loop end --transcript auto` to count.
//! One assistant entry per response in Anthropic's usage shape (the same
//! as [`super::claude`]'s stream: `input_tokens` excludes the cache),
//! the first response streamed as two (a thinking block with a partial
//! output count, then the text), the user turns between them, and a torn
//! last line, as a transcript being written has.

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use sdd_loop::state::protocol::ModelUsage;
use sdd_loop::transcript::project_slug;
use serde_json::{Value, json};

use super::claude::anthropic_usage;

/// One session's transcript, as of one tick.
#[derive(Debug)]
pub struct Transcript<'a> {
    /// The project the session runs in (names the folder, and each
    /// entry's `cwd`).
    pub project: &'a Path,
    /// The session's number in the case (names its id).
    pub session: u32,
    /// The tick (names its message and request ids).
    pub tick: usize,
    /// When every entry was written.
    pub at: Timestamp,
}

impl Transcript<'_> {
    /// The folder Claude Code keeps the project's transcripts in, under `home`.
    pub fn folder(&self, home: &Path) -> PathBuf {
        home.join(".claude/projects")
            .join(project_slug(self.project))
    }

    /// The session's id, a UUID.
    pub fn session_id(&self) -> String {
        format!("00000000-0000-4000-8000-{:012}", self.session)
    }

    /// The file's name in [`Self::folder`].
    pub fn file_name(&self) -> String {
        format!("{}.jsonl", self.session_id())
    }

    /// The transcript of a session that prompted `/sdd:work --loop` and
    /// spent `usage`, one response per entry.
    pub fn render(&self, usage: &[ModelUsage]) -> String {
        let mut lines = vec![self.entry(
            "user",
            json!({"uuid": "prompt", "message": {"role": "user", "content": "/sdd:work --loop"}}),
        )];
        for (i, u) in usage.iter().enumerate() {
            let id = format!("msg_t{}_{i}", self.tick);
            let request = format!("req_t{}_{i}", self.tick);
            let message = |content: Value, output: u64| {
                json!({
                    "uuid": format!("{id}-{output}"),
                    "requestId": request,
                    "message": {
                        "id": id, "type": "message", "role": "assistant", "model": u.model,
                        "content": content, "stop_reason": null, "stop_sequence": null,
                        "usage": anthropic_usage(&u.tokens(), output),
                    },
                })
            };
            if i == 0 {
                lines.push(self.entry(
                    "assistant",
                    message(
                        json!([{"type": "thinking", "thinking": "…", "signature": "s"}]),
                        1,
                    ),
                ));
            }
            lines.push(self.entry(
                "assistant",
                message(json!([{"type": "text", "text": "Done."}]), u.tokens_out),
            ));
            lines.push(self.entry(
                "user",
                json!({"uuid": format!("{id}-result"), "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}}),
            ));
        }
        let mut text = lines.join("\n");
        text.push_str("\n{\"type\":\"assistant\",\"timestamp\":\"");
        text
    }

    /// One line: the fields every entry has, then `extra`'s (its `uuid`
    /// becomes the entry's, prefixed with its kind).
    fn entry(&self, kind: &str, extra: Value) -> String {
        let mut e = json!({
            "parentUuid": null, "isSidechain": false, "userType": "external",
            "cwd": self.project.display().to_string(), "sessionId": self.session_id(),
            "version": "2.0.31", "gitBranch": "main", "type": kind,
            "uuid": format!("{kind}-{}", extra["uuid"].as_str().unwrap_or("0")),
            "timestamp": self.at.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        });
        if let (Some(map), Value::Object(more)) = (e.as_object_mut(), extra) {
            map.extend(more.into_iter().filter(|(k, _)| k != "uuid"));
        }
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_response_is_an_entry_and_the_last_line_is_torn() {
        let t = Transcript {
            project: Path::new("/p"),
            session: 2,
            tick: 3,
            at: "2026-01-01T00:00:00Z".parse().unwrap(),
        };
        let usage = ModelUsage {
            model: "m".to_owned(),
            tokens_in: 100,
            tokens_out: 7,
            cache_read_tokens: 60,
            cache_write_tokens: 0,
            cache_write_1h_tokens: 0,
        };
        let text = t.render(&[usage.clone(), usage]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 3 + 2 + 1);
        let first: Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(first["sessionId"], "00000000-0000-4000-8000-000000000002");
        assert_eq!(first["message"]["usage"]["input_tokens"], 40);
        assert_eq!(first["message"]["usage"]["output_tokens"], 1);
        assert!(serde_json::from_str::<Value>(lines[6]).is_err());
    }
}
