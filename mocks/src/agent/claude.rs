//! `fake-claude`'s command line and stream: what `claude -p
//! --output-format stream-json --verbose` prints (`agent-formats.md`),
//! from a script's actions.
//!
//! Each `usage` action is one API step with its own `message.id`, printed
//! as two `assistant` events — a thinking block with a partial output
//! count, then a text block with the full one — both carrying the step's
//! usage in Anthropic's shape (`input_tokens` EXCLUDES the cache reads
//! and writes). World actions become `tool_use` blocks of the current
//! step followed by `user` tool results; `agents: N` becomes N `Task`
//! tool uses. A model written with a decoration (`claude-opus-4-7[1m]`)
//! streams under its plain id and appears in `modelUsage` under the
//! decorated key with `canonicalModel`. The agent's own cost
//! (`costUSD`, `total_cost_usd`) is the built-in list price × the
//! script's `cost_factor`; past `--max-budget-usd` it stops with
//! `error_max_budget_usd`.

use std::collections::BTreeMap;
use std::io::Write;

use clap::Parser;
use sdd_loop::rules::rates::RateTable;
use sdd_loop::state::budget::ModelTokens;
use sdd_loop::state::history::PrState;
use sdd_loop::state::protocol::{ChainReport, Failure, ModelUsage, PrReport, WorktreeReport};
use serde_json::{Value, json};

use super::Emitter;
use super::script::{AgentTick, End};
use crate::skill::act::Sink;

/// The flags `fake-claude` understands: the real CLI's headless subset.
#[derive(Debug, Parser)]
#[command(
    name = "claude",
    about = "fake-claude: a scripted stand-in for Claude Code run headless"
)]
pub struct ClaudeArgs {
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    #[arg(long = "output-format", value_name = "FORMAT")]
    pub output_format: Option<String>,
    #[arg(long)]
    pub verbose: bool,
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    #[arg(long = "max-budget-usd", value_name = "USD")]
    pub max_budget_usd: Option<f64>,
    #[arg(long = "max-turns", value_name = "N")]
    pub max_turns: Option<u64>,
    #[arg(long = "permission-mode", value_name = "MODE")]
    pub permission_mode: Option<String>,
    #[arg(long = "allowedTools", alias = "allowed-tools", value_name = "TOOLS")]
    pub allowed_tools: Vec<String>,
    #[arg(long = "append-system-prompt", value_name = "TEXT")]
    pub append_system_prompt: Option<String>,
    #[arg(long = "dangerously-skip-permissions")]
    pub dangerously_skip_permissions: bool,
    #[arg(long = "session-id", value_name = "UUID")]
    pub session_id: Option<String>,
    /// The prompt; read from stdin when absent.
    pub prompt: Option<String>,
}

impl ClaudeArgs {
    /// The flags, checked as the real CLI checks them; the message it
    /// would print otherwise.
    pub fn parse_from_args(
        args: impl IntoIterator<Item = std::ffi::OsString>,
    ) -> Result<Self, String> {
        let parsed = Self::try_parse_from(args).map_err(|e| {
            let text = e.render().to_string();
            text.lines()
                .next()
                .unwrap_or("error: bad arguments")
                .to_owned()
        })?;
        if !parsed.print {
            return Err("error: fake-claude plays only headless runs: pass -p".to_owned());
        }
        match parsed.output_format.as_deref() {
            Some("stream-json") => {}
            other => {
                return Err(format!(
                    "error: fake-claude streams only --output-format stream-json (got {})",
                    other.unwrap_or("text")
                ));
            }
        }
        if !parsed.verbose {
            return Err(
                "Error: When using --print, --output-format=stream-json requires --verbose"
                    .to_owned(),
            );
        }
        Ok(parsed)
    }
}

/// The message a nested Claude Code prints when `CLAUDECODE` is set.
pub const NESTED: &str =
    "Error: Claude Code cannot be launched inside another Claude Code session.";

/// A model id without its `[…]` decoration.
pub fn plain(model: &str) -> &str {
    model.split_once('[').map_or(model, |(m, _)| m)
}

struct Step {
    id: String,
    model: String,
    usage: Value,
}

/// Prints a Claude Code stream.
pub struct ClaudeStream<W: Write> {
    out: W,
    session: String,
    init_model: String,
    permission_mode: String,
    max_budget: Option<f64>,
    cost_factor: f64,
    rates: RateTable,
    step: Option<Step>,
    steps: u64,
    ids: u64,
    /// Per `modelUsage` key: tokens and cost.
    by_model: BTreeMap<String, (ModelTokens, f64)>,
    cost: f64,
    over: bool,
    pending_merge: Option<String>,
    failed: Option<String>,
}

impl<W: Write> std::fmt::Debug for ClaudeStream<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeStream")
            .field("session", &self.session)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

pub(crate) fn anthropic_usage(t: &ModelTokens, output: u64) -> Value {
    let write_1h = t.cache_write_1h_tokens.min(t.cache_write_tokens);
    json!({
        "input_tokens": t.tokens_in.saturating_sub(t.cache_read_tokens).saturating_sub(t.cache_write_tokens),
        "cache_creation_input_tokens": t.cache_write_tokens,
        "cache_read_input_tokens": t.cache_read_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": t.cache_write_tokens - write_1h,
            "ephemeral_1h_input_tokens": write_1h,
        },
        "output_tokens": output,
        "service_tier": "standard",
    })
}

impl<W: Write> ClaudeStream<W> {
    /// `args` and the script entry decide the model, limits and cost.
    pub fn new(out: W, args: &ClaudeArgs, tick: &AgentTick, pid: u32) -> Self {
        let first_usage = tick.actions.iter().find_map(|a| match a {
            crate::skill::Action::Usage(u) => Some(plain(&u.model).to_owned()),
            _ => None,
        });
        Self {
            out,
            session: format!("5e55{pid:04x}-0000-4000-8000-00000000fa4e"),
            init_model: args
                .model
                .clone()
                .or(first_usage)
                .unwrap_or_else(|| "claude-sonnet-4-5-20250929".to_owned()),
            permission_mode: args
                .permission_mode
                .clone()
                .unwrap_or_else(|| "default".to_owned()),
            max_budget: args.max_budget_usd,
            cost_factor: tick.stream.cost_factor,
            rates: RateTable::built_in(),
            step: None,
            steps: 0,
            ids: 0,
            by_model: BTreeMap::new(),
            cost: 0.0,
            over: false,
            pending_merge: None,
            failed: None,
        }
    }

    fn line(&mut self, value: &Value) -> std::io::Result<()> {
        writeln!(self.out, "{value}")?;
        self.out.flush()
    }

    fn next_id(&mut self, prefix: &str) -> String {
        self.ids += 1;
        format!("{prefix}_{:04}", self.ids)
    }

    fn assistant(&mut self, content: Value, usage: Option<Value>) -> std::io::Result<()> {
        if self.step.is_none() {
            // A tool call before any counted step: its own step, no tokens.
            let id = self.next_id("msg_fake");
            self.step = Some(Step {
                id,
                model: self.init_model.clone(),
                usage: anthropic_usage(&ModelTokens::default(), 0),
            });
        }
        let step = self.step.as_ref().expect("set above");
        let event = json!({
            "type": "assistant",
            "message": {
                "id": step.id, "type": "message", "role": "assistant", "model": step.model,
                "content": [content], "stop_reason": null, "stop_sequence": null,
                "usage": usage.unwrap_or_else(|| step.usage.clone()),
            },
            "parent_tool_use_id": null,
            "session_id": self.session,
        });
        self.line(&event)
    }

    fn tool_result(&mut self, id: &str, content: &str, is_error: bool) -> std::io::Result<()> {
        let event = json!({
            "type": "user",
            "message": {"role": "user", "content": [
                {"tool_use_id": id, "type": "tool_result", "content": content, "is_error": is_error}
            ]},
            "parent_tool_use_id": null,
            "session_id": self.session,
        });
        self.line(&event)
    }

    fn tool_use(&mut self, name: &str, input: Value) -> std::io::Result<String> {
        let id = self.next_id("toolu_fake");
        self.assistant(
            json!({"type": "tool_use", "id": id, "name": name, "input": input}),
            None,
        )?;
        Ok(id)
    }

    fn bash(&mut self, command: &str) -> std::io::Result<()> {
        let id = self.tool_use("Bash", json!({ "command": command }))?;
        self.tool_result(&id, "ok", false)
    }

    fn text(&mut self, text: &str) -> std::io::Result<()> {
        self.assistant(json!({"type": "text", "text": text}), None)
    }

    fn price(&self, model: &str, tokens: &ModelTokens) -> f64 {
        self.rates.resolve(plain(model)).rate().dollars(tokens) * self.cost_factor
    }

    fn count(&mut self, model: &str, tokens: &ModelTokens) {
        let dollars = self.price(model, tokens);
        let entry = self.by_model.entry(model.to_owned()).or_default();
        entry.0.add(tokens);
        entry.1 += dollars;
        self.cost += dollars;
    }

    fn result(
        &mut self,
        subtype: &str,
        tick: &AgentTick,
        errors: Vec<String>,
    ) -> std::io::Result<()> {
        let is_error = tick.stream.is_error.unwrap_or(subtype != "success");
        let mut total = ModelTokens::default();
        let model_usage: serde_json::Map<String, Value> = self
            .by_model
            .iter()
            .map(|(key, (t, dollars))| {
                total.add(t);
                let usage = anthropic_usage(t, t.tokens_out);
                let mut v = json!({
                    "inputTokens": usage["input_tokens"],
                    "outputTokens": t.tokens_out,
                    "cacheReadInputTokens": t.cache_read_tokens,
                    "cacheCreationInputTokens": t.cache_write_tokens,
                    "webSearchRequests": 0,
                    "costUSD": dollars,
                    "contextWindow": if key.contains("[1m]") { 1_000_000 } else { 200_000 },
                });
                if plain(key) != key {
                    v["canonicalModel"] = json!(plain(key));
                }
                (key.clone(), v)
            })
            .collect();
        let denials: Vec<Value> = tick
            .stream
            .permission_denials
            .iter()
            .enumerate()
            .map(|(i, tool)| json!({"tool_name": tool, "tool_use_id": format!("toolu_denied_{i}"), "tool_input": {}}))
            .collect();
        let mut usage = anthropic_usage(&total, total.tokens_out);
        usage["server_tool_use"] = json!({"web_search_requests": 0});
        let mut event = json!({
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "duration_ms": 1000 + 250 * self.steps,
            "duration_api_ms": 800 + 200 * self.steps,
            "num_turns": tick.stream.num_turns.unwrap_or(self.steps.max(1)),
            "session_id": self.session,
            "total_cost_usd": self.cost,
            "usage": usage,
            "modelUsage": model_usage,
            "permission_denials": denials,
        });
        if subtype == "success" {
            event["result"] = json!(
                tick.stream
                    .message
                    .clone()
                    .unwrap_or_else(|| "Done.".to_owned())
            );
        } else {
            event["errors"] = json!(errors);
        }
        self.line(&event)
    }
}

/// RFC 3339 as Unix seconds (0 when it is none).
fn unix(at: &str) -> i64 {
    at.parse::<jiff::Timestamp>()
        .map(|t| t.as_second())
        .unwrap_or(0)
}

impl<W: Write> ClaudeStream<W> {
    /// A subscriber's `rate_limit_event` (Claude Code 2.1.332's shape).
    fn windows_event(&mut self, w: &super::script::Windows) -> std::io::Result<()> {
        let mut unified = serde_json::Map::new();
        for (key, fig) in [("five_hour", &w.five_hour), ("seven_day", &w.seven_day)] {
            if let Some(f) = fig {
                unified.insert(
                    key.to_owned(),
                    json!({"utilization": f.utilization, "resetsAt": unix(&f.resets_at), "status": "allowed"}),
                );
            }
        }
        let first = w.five_hour.as_ref().or(w.seven_day.as_ref());
        self.line(&json!({
            "type": "rate_limit_event",
            "rate_limit_info": {
                "status": "allowed",
                "resetsAt": first.map(|f| unix(&f.resets_at)),
                "rateLimitType": if w.five_hour.is_some() { "five_hour" } else { "seven_day" },
                "unifiedWindows": unified,
            },
            "session_id": self.session,
        }))
    }

    /// A 429: the `rejected` event, the assistant's `rate_limit` error,
    /// and an error result quoting the message.
    fn rate_limited(
        &mut self,
        l: &super::script::RateLimited,
        tick: &AgentTick,
    ) -> std::io::Result<()> {
        let info = json!({"status": "rejected", "resetsAt": unix(&l.resets_at), "rateLimitType": l.window});
        self.line(&json!({"type": "rate_limit_event", "rate_limit_info": info, "session_id": self.session}))?;
        let id = self.next_id("msg");
        self.line(&json!({
            "type": "assistant",
            "error": "rate_limit",
            "api_error_params": {"rate_limit_info": info},
            "message": {"id": id, "model": "<synthetic>", "role": "assistant", "type": "message",
                        "content": [{"type": "text", "text": l.message}]},
            "session_id": self.session,
        }))?;
        let mut result = json!({
            "type": "result",
            "subtype": "success",
            "is_error": true,
            "duration_ms": 300,
            "duration_api_ms": 0,
            "num_turns": tick.stream.num_turns.unwrap_or(self.steps.max(1)),
            "session_id": self.session,
            "total_cost_usd": self.cost,
            "modelUsage": {},
            "permission_denials": [],
        });
        result["result"] = json!(l.message);
        self.line(&result)
    }
}

impl<W: Write> Sink for ClaudeStream<W> {
    fn usage(&mut self, u: &ModelUsage) -> std::io::Result<()> {
        self.steps += 1;
        let id = format!("msg_fake{:02}", self.steps);
        let tokens = u.tokens();
        self.step = Some(Step {
            id,
            model: plain(&u.model).to_owned(),
            usage: anthropic_usage(&tokens, tokens.tokens_out),
        });
        // The same step, block by block: a partial output count first.
        let partial = anthropic_usage(&tokens, tokens.tokens_out.min(1));
        self.assistant(
            json!({"type": "thinking", "thinking": "Planning the next step.", "signature": "c2ln"}),
            Some(partial),
        )?;
        self.text("Working on it.")?;
        self.count(&u.model, &tokens);
        if self.max_budget.is_some_and(|max| self.cost > max) {
            self.over = true;
        }
        Ok(())
    }

    fn agents(&mut self, count: u64) -> std::io::Result<()> {
        for i in 0..count {
            let id = self.tool_use(
                "Task",
                json!({"description": format!("worker {}", i + 1), "subagent_type": "general-purpose", "prompt": "…"}),
            )?;
            self.tool_result(&id, "The worker finished.", false)?;
        }
        Ok(())
    }

    fn pr(&mut self, pr: PrReport, command: &str) -> std::io::Result<()> {
        match (pr.state, self.pending_merge.take()) {
            (PrState::Merged, Some(id)) => self.tool_result(&id, "Merged.", false),
            _ => self.bash(command),
        }
    }

    fn comment(&mut self, pr: u64, body: &str) -> std::io::Result<()> {
        self.bash(&format!("gh pr comment {pr} --body {body:?}"))
    }

    fn merge_attempted(&mut self, pr: u64) -> std::io::Result<()> {
        let id = self.tool_use(
            "Bash",
            json!({"command": format!("gh pr merge {pr} --squash")}),
        )?;
        self.pending_merge = Some(id);
        Ok(())
    }

    fn worktree(&mut self, w: WorktreeReport) -> std::io::Result<()> {
        self.bash(&format!("git worktree add {} -b {}", w.path, w.branch))
    }

    fn failure(&mut self, f: Failure) -> std::io::Result<()> {
        match self.pending_merge.take() {
            Some(id) => self.tool_result(&id, &f.root_cause, true),
            None => self.text(&format!("{}: {}", f.target, f.root_cause)),
        }
    }

    // Protocol reports: refused when the script is checked.
    fn chain(&mut self, _: ChainReport) {}
    fn review_round(&mut self, _: u64, _: u64) {}
    fn report_pr(&mut self, _: PrReport) -> std::io::Result<()> {
        Ok(())
    }

    fn progress(&mut self, message: &str) -> std::io::Result<()> {
        self.text(message)
    }

    fn tool(&mut self, command: &str) -> std::io::Result<()> {
        self.bash(command)
    }
}

impl<W: Write> Emitter for ClaudeStream<W> {
    fn start(&mut self) -> std::io::Result<()> {
        // The real CLI's untidy edges: a notice on stdout before the JSON.
        writeln!(
            self.out,
            "Update available: 2.0.31 → 2.0.40 (run: claude update)"
        )?;
        let init = json!({
            "type": "system", "subtype": "init",
            "cwd": std::env::current_dir().unwrap_or_default(),
            "session_id": self.session,
            "tools": ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write"],
            "mcp_servers": [],
            "model": self.init_model,
            "permissionMode": self.permission_mode,
            "apiKeySource": "none",
            "claude_code_version": "2.0.31",
        });
        self.line(&init)
    }

    fn over_budget(&self) -> bool {
        self.over
    }

    fn qmd_failed(&mut self, captured: &str) -> std::io::Result<()> {
        self.failed = Some(captured.to_owned());
        self.text(&format!("qmd is unreachable: {captured}"))?;
        let tick = AgentTick::default();
        self.result(
            "error_during_execution",
            &tick,
            vec![format!("qmd-unreachable: {captured}")],
        )
    }

    fn finish(&mut self, tick: &AgentTick) -> std::io::Result<i32> {
        for h in &tick.stream.helpers {
            self.count(&h.model, &h.tokens());
        }
        if let Some(w) = &tick.stream.windows {
            self.windows_event(w)?;
        }
        if let Some(limited) = &tick.stream.rate_limited {
            self.rate_limited(limited, tick)?;
            return Ok(tick.exit.unwrap_or(1));
        }
        if self.over {
            let max = self.max_budget.unwrap_or_default();
            self.result(
                "error_max_budget_usd",
                tick,
                vec![format!("Reached maximum budget (${max})")],
            )?;
            return Ok(tick.exit.unwrap_or(1));
        }
        if tick.stream.end == End::NoResult {
            self.out.flush()?;
            return Ok(tick.exit_code());
        }
        let subtype = tick.stream.end.claude_subtype().unwrap_or("success");
        self.result(subtype, tick, tick.stream.errors.clone())?;
        Ok(tick.exit_code())
    }
}

/// `fake-claude`: one headless run; its exit status.
pub fn main(mut p: super::Process<'_>) -> u8 {
    let kind = super::script::Kind::Claude;
    let args = match ClaudeArgs::parse_from_args(p.args.clone()) {
        Ok(a) => a,
        Err(message) => {
            let _ = writeln!(p.stderr, "{message}");
            return 1;
        }
    };
    if p.var_set("CLAUDECODE") {
        let _ = writeln!(p.stderr, "{NESTED}");
        return 1;
    }
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
        "(node:{}) Warning: settings.local.json not found, using defaults",
        p.pid
    );
    let mut stream = ClaudeStream::new(&mut *p.stdout, &args, &tick, p.pid);
    super::play(kind, &env, &tick, &mut stream, p.stderr)
}
