//! `fake-codex`'s command line and stream: what `codex exec --json`
//! prints (`agent-formats.md`), from a script's actions.
//!
//! `thread.started`, then `turn.started`; world actions become
//! `command_execution` items (`item.started`, `item.completed`),
//! `progress` an `agent_message`; each `usage` action ends a turn with
//! `turn.completed` whose usage is CUMULATIVE for the thread and whose
//! `cached_input_tokens` (the action's cache reads) is a SUBSET of
//! `input_tokens` (its `tokens_in`); `reasoning_output_tokens` is a part of
//! the output. The stream names no model (an action's `model` is not
//! printed). It ends with a final agent message and, when actions came
//! after the last counted turn, one more `turn.completed`; or with
//! `turn.failed`, a top-level `error` (exit 0 unless scripted — Codex
//! reports failures that way too) or nothing.

use std::io::Write;

use clap::Parser;
use sdd_loop::state::protocol::{ChainReport, Failure, ModelUsage, PrReport, WorktreeReport};
use serde_json::{Value, json};

use super::Emitter;
use super::script::{AgentTick, End};
use crate::skill::act::Sink;

/// `codex exec`'s flags that `fake-codex` understands.
#[derive(Debug, Parser)]
#[command(
    name = "codex",
    about = "fake-codex: a scripted stand-in for Codex run headless"
)]
pub struct CodexArgs {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(Debug, clap::Subcommand)]
pub enum Sub {
    /// Run non-interactively.
    Exec(ExecArgs),
}

#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    #[arg(long)]
    pub json: bool,
    #[arg(short = 'm', long = "model", value_name = "MODEL")]
    pub model: Option<String>,
    #[arg(short = 's', long = "sandbox", value_name = "MODE")]
    pub sandbox: Option<String>,
    #[arg(long = "skip-git-repo-check")]
    pub skip_git_repo_check: bool,
    #[arg(long = "dangerously-bypass-approvals-and-sandbox")]
    pub bypass: bool,
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub cd: Option<std::path::PathBuf>,
    /// The prompt, or `-` (or nothing) to read it from stdin.
    pub prompt: Option<String>,
}

impl CodexArgs {
    /// `exec`'s flags, checked; the message the CLI would print otherwise.
    pub fn parse_from_args(
        args: impl IntoIterator<Item = std::ffi::OsString>,
    ) -> Result<ExecArgs, String> {
        let parsed = Self::try_parse_from(args).map_err(|e| {
            let text = e.render().to_string();
            text.lines()
                .next()
                .unwrap_or("error: bad arguments")
                .to_owned()
        })?;
        let Sub::Exec(exec) = parsed.command;
        if !exec.json {
            return Err("error: fake-codex streams only `exec --json`".to_owned());
        }
        Ok(exec)
    }
}

/// Prints a Codex stream.
pub struct CodexStream<W: Write> {
    out: W,
    thread: String,
    items: u64,
    input: u64,
    cached: u64,
    output: u64,
    /// A turn is open (started, not yet completed).
    open: bool,
    failed: Option<String>,
}

impl<W: Write> std::fmt::Debug for CodexStream<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodexStream")
            .field("thread", &self.thread)
            .finish_non_exhaustive()
    }
}

impl<W: Write> CodexStream<W> {
    pub fn new(out: W, pid: u32) -> Self {
        Self {
            out,
            thread: format!("0199c0de-{pid:04x}-7000-8000-00000000fa4e"),
            items: 0,
            input: 0,
            cached: 0,
            output: 0,
            open: false,
            failed: None,
        }
    }

    fn line(&mut self, value: &Value) -> std::io::Result<()> {
        writeln!(self.out, "{value}")?;
        self.out.flush()
    }

    fn turn(&mut self) -> std::io::Result<()> {
        if !self.open {
            self.open = true;
            self.line(&json!({"type": "turn.started"}))?;
        }
        Ok(())
    }

    fn item(&mut self, item: Value) -> std::io::Result<()> {
        self.turn()?;
        self.items += 1;
        let mut item = item;
        item["id"] = json!(format!("item_{}", self.items));
        if item["type"] == "command_execution" {
            let mut started = item.clone();
            started["status"] = json!("in_progress");
            started["aggregated_output"] = json!("");
            started["exit_code"] = Value::Null;
            self.line(&json!({"type": "item.started", "item": started}))?;
        }
        self.line(&json!({"type": "item.completed", "item": item}))
    }

    fn command(&mut self, command: &str, output: &str, exit_code: i32) -> std::io::Result<()> {
        self.item(json!({
            "type": "command_execution", "command": command,
            "aggregated_output": output, "exit_code": exit_code,
            "status": if exit_code == 0 { "completed" } else { "failed" },
        }))
    }

    fn message(&mut self, text: &str) -> std::io::Result<()> {
        self.item(json!({"type": "agent_message", "text": text}))
    }

    fn completed(&mut self) -> std::io::Result<()> {
        self.turn()?;
        self.open = false;
        let usage = json!({
            "input_tokens": self.input,
            "cached_input_tokens": self.cached,
            "output_tokens": self.output,
            "reasoning_output_tokens": self.output / 4,
        });
        self.line(&json!({"type": "turn.completed", "usage": usage}))
    }
}

impl<W: Write> Sink for CodexStream<W> {
    fn usage(&mut self, u: &ModelUsage) -> std::io::Result<()> {
        self.item(json!({"type": "reasoning", "text": "**Planning the next step**"}))?;
        self.input += u.tokens_in;
        self.cached += u.cache_read_tokens;
        self.output += u.tokens_out;
        self.completed()
    }

    fn agents(&mut self, _: u64) -> std::io::Result<()> {
        // Codex dispatches no subagents; the work is its own.
        self.message("Working through the tasks myself.")
    }

    fn pr(&mut self, pr: PrReport, command: &str) -> std::io::Result<()> {
        let _ = pr;
        self.command(command, "ok", 0)
    }

    fn comment(&mut self, pr: u64, body: &str) -> std::io::Result<()> {
        self.command(&format!("gh pr comment {pr} --body {body:?}"), "ok", 0)
    }

    fn merge_attempted(&mut self, _: u64) -> std::io::Result<()> {
        Ok(())
    }

    fn worktree(&mut self, w: WorktreeReport) -> std::io::Result<()> {
        self.command(
            &format!("git worktree add {} -b {}", w.path, w.branch),
            "ok",
            0,
        )
    }

    fn failure(&mut self, f: Failure) -> std::io::Result<()> {
        self.command(
            &format!("gh pr merge {}", f.target.trim_start_matches('#')),
            &f.root_cause,
            1,
        )
    }

    // Protocol reports: refused when the script is checked.
    fn chain(&mut self, _: ChainReport) {}
    fn review_round(&mut self, _: u64, _: u64) {}
    fn report_pr(&mut self, _: PrReport) -> std::io::Result<()> {
        Ok(())
    }

    fn progress(&mut self, message: &str) -> std::io::Result<()> {
        self.message(message)
    }

    fn tool(&mut self, command: &str) -> std::io::Result<()> {
        self.command(command, "ok", 0)
    }
}

impl<W: Write> Emitter for CodexStream<W> {
    fn start(&mut self) -> std::io::Result<()> {
        // Codex's untidy edge: a notice before the JSON.
        writeln!(self.out, "Reading prompt from stdin...")?;
        let started = json!({"type": "thread.started", "thread_id": self.thread});
        self.line(&started)
    }

    fn over_budget(&self) -> bool {
        false
    }

    fn qmd_failed(&mut self, captured: &str) -> std::io::Result<()> {
        self.failed = Some(captured.to_owned());
        self.command("qmd status", captured, 1)?;
        self.line(&json!({"type": "turn.failed", "error": {"message": format!("qmd-unreachable: {captured}")}}))
    }

    fn finish(&mut self, tick: &AgentTick) -> std::io::Result<i32> {
        let failure = || {
            tick.stream
                .errors
                .first()
                .cloned()
                .unwrap_or_else(|| "stream disconnected before completion".to_owned())
        };
        match tick.stream.end {
            End::NoResult => self.out.flush()?,
            End::TurnFailed => {
                self.turn()?;
                self.line(&json!({"type": "turn.failed", "error": {"message": failure()}}))?;
            }
            End::Error => {
                self.line(&json!({"type": "error", "message": failure()}))?;
            }
            _ => {
                self.message(tick.stream.message.as_deref().unwrap_or("Done."))?;
                self.completed()?;
            }
        }
        Ok(tick.exit_code())
    }
}

/// `fake-codex`: one `codex exec --json` run; its exit status.
pub fn main(mut p: super::Process<'_>) -> u8 {
    let kind = super::script::Kind::Codex;
    let args = match CodexArgs::parse_from_args(p.args.clone()) {
        Ok(a) => a,
        Err(message) => {
            let _ = writeln!(p.stderr, "{message}");
            return 2;
        }
    };
    let prompt = match p.prompt(args.prompt.clone()) {
        Ok(text) => text,
        Err(e) => {
            super::diag(
                kind,
                p.stderr,
                &format!("error: cannot read the prompt from stdin: {e}"),
            );
            return crate::skill::exit::IO;
        }
    };
    let env = p.agent_env();
    let tick = match super::prepare(kind, &env, &prompt, p.stderr) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let _ = writeln!(
        p.stderr,
        "OpenAI Codex v0.46.0 (research preview) — model: {}",
        args.model.as_deref().unwrap_or("from config.toml")
    );
    let mut stream = CodexStream::new(&mut *p.stdout, p.pid);
    super::play(kind, &env, &tick, &mut stream, p.stderr)
}
