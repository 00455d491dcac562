//! Real agents as the work of a wrapper tick: `--agent claude`
//! runs Claude Code headless, `--agent codex` Codex, `--agent gemini` the
//! Gemini CLI and `--agent opencode` OpenCode, in place of a skill
//! command. Agents never speak our protocol, so the adapter —
//! [`AgentRunner`], one more [`SkillRunner`] — learns everything from the
//! agent's event stream and from the world, and writes the [`SkillResult`]
//! the engine's `end` half already reads:
//!
//! 1. the prompt is built from the request ([`prompt`]);
//! 2. the world is snapshot before the agent runs ([`world::snapshot`]),
//!    and kept in the exchange directory for recovery;
//! 3. the agent runs in its own process group, watched like a skill (stall
//!    watchdog, interrupt drain, bounded stderr), with `CLAUDECODE` and
//!    `CLAUDE_CODE_ENTRYPOINT` removed from its environment (Claude Code
//!    refuses to start inside another session) and the prompt on stdin;
//! 4. every stdout line is read as it arrives ([`claude`], [`codex`],
//!    [`gemini`], [`opencode`]), and a reader whose usage is written
//!    elsewhere (the Gemini CLI's session file) is polled on a timer as
//!    well: usage is appended to the iteration's `events.jsonl` at once,
//!    one count per API step, so a SIGKILL of the engine mid-agent loses
//!    no spend — the next tick recovers it as it recovers a skill's events;
//! 5. after the agent exits: the usage (the stream's final word), the
//!    agent's own cost estimate, the PRs, comments and merges found by
//!    comparing the world with the snapshot ([`world::discover`]), and the
//!    failure, if any — a root cause quoted from the agent, redacted and
//!    truncated — become `result.json` and [`RunOutcome::cause`]; a run
//!    whose own result said success and whose process then failed says
//!    so ([`RunOutcome::result_succeeded`]): the tick is errored, no
//!    target failed.

pub mod claude;
pub mod codex;
pub mod gemini;
pub mod opencode;
pub mod prompt;
mod stream;
pub mod world;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::rules::redact::Redactor;
use crate::skill::runner::{ProcessRunner, RunOutcome, RunSpec, SkillRunner};
use crate::state::exchange::Exchange;
use crate::state::files;
use crate::state::protocol::{PROTOCOL_VERSION, SkillEvent, SkillRequest, SkillResult};
use crate::world::git::Git;
use crate::world::tracker::Tracker;

use stream::bounded;
pub(crate) use stream::first_line;
pub use stream::{LineRead, POLL_EVERY, ROOT_CAUSE_MAX, StreamReader, Verdict};

/// Which agent CLI does the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AgentKind {
    /// Claude Code: `claude -p --output-format stream-json --verbose`.
    Claude,
    /// Codex: `codex exec --json`.
    Codex,
    /// Gemini CLI: `gemini --output-format stream-json --approval-mode yolo`.
    Gemini,
    /// OpenCode: `opencode run --format json --auto`.
    Opencode,
}

impl AgentKind {
    /// The program looked up on PATH when `--agent-cmd` is not given.
    pub fn program(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Opencode => "opencode",
        }
    }
}

impl std::fmt::Display for AgentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.program())
    }
}

/// Removed from the agent's environment: Claude Code refuses to start
/// when it finds itself inside another Claude Code session, which is
/// exactly where a loop started from a session would launch it.
pub const ENV_REMOVED: &[&str] = &["CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT"];

/// How to run the agent, gathered by the CLI.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    pub kind: AgentKind,
    /// `--agent-cmd PATH` [default: the kind's program, from PATH].
    pub command: Option<PathBuf>,
    /// `--agent-arg ARG`, in order, after the adapter's own flags.
    pub args: Vec<String>,
    /// `--agent-model MODEL`.
    pub model: Option<String>,
    /// `--agent-prompt FILE`, loaded and checked; `None`: the built-in
    /// template of the tick's skill.
    pub prompt: Option<prompt::Template>,
    /// Codex's `config.toml` (`$CODEX_HOME/config.toml`, else
    /// `~/.codex/config.toml`), read for its `model` when `--agent-model`
    /// is not given.
    pub codex_config: Option<PathBuf>,
    /// Where the Gemini CLI keeps its sessions (`$GEMINI_CLI_HOME`,
    /// `$HOME/.gemini`), read for its per-response usage.
    pub gemini_dirs: Vec<PathBuf>,
    /// OpenCode's config files, first found first (`$OPENCODE_CONFIG`,
    /// `$XDG_CONFIG_HOME/opencode/opencode.json`,
    /// `~/.config/opencode/opencode.json`), read for its `model` when
    /// `--agent-model` is not given.
    pub opencode_configs: Vec<PathBuf>,
}

impl AgentSettings {
    pub fn new(kind: AgentKind) -> Self {
        Self {
            kind,
            command: None,
            args: Vec::new(),
            model: None,
            prompt: None,
            codex_config: None,
            gemini_dirs: Vec::new(),
            opencode_configs: Vec::new(),
        }
    }
}

/// A root cause as it may be recorded: redacted, then bounded.
pub fn quote(redactor: &Redactor, text: &str) -> String {
    bounded(&redactor.apply(text), ROOT_CAUSE_MAX)
}

/// The PRs, comments and merges an agent tick killed mid-work left in the
/// world, from the snapshot it kept — `None` when the tick was no agent's.
pub fn recover(
    exchange: &Exchange,
    tracker: &dyn Tracker,
    git: &dyn Git,
    remote: &str,
    request: &SkillRequest,
) -> Option<Result<world::Found, String>> {
    let before = world::Before::load(exchange)?;
    Some(world::discover(&before, tracker, git, remote, request))
}

/// Runs an agent as the tick's work.
#[derive(Debug)]
pub struct AgentRunner<'a> {
    pub settings: AgentSettings,
    /// Watches the agent's process as it watches a skill's.
    pub process: ProcessRunner<'a>,
    pub tracker: &'a dyn Tracker,
    pub git: &'a dyn Git,
    /// The git remote whose heads are compared (`--remote`).
    pub remote: String,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn failed(cause: String) -> RunOutcome {
    RunOutcome {
        cause: Some(cause),
        ..RunOutcome::default()
    }
}

impl AgentRunner<'_> {
    fn command(&self, spec: &RunSpec) -> (PathBuf, Vec<OsString>, Box<dyn StreamReader>) {
        let s = &self.settings;
        let program = s
            .command
            .clone()
            .unwrap_or_else(|| PathBuf::from(s.kind.program()));
        match s.kind {
            AgentKind::Claude => (
                program,
                claude::argv(s.model.as_deref(), spec.dollars_left, &s.args),
                Box::new(claude::ClaudeStream::default()),
            ),
            AgentKind::Codex => {
                let model = s
                    .model
                    .clone()
                    .or_else(|| s.codex_config.as_deref().and_then(codex::config_model))
                    .unwrap_or_else(|| codex::UNKNOWN_MODEL.to_owned());
                (
                    program,
                    codex::argv(s.model.as_deref(), &s.args),
                    Box::new(codex::CodexStream::new(model)),
                )
            }
            AgentKind::Gemini => (
                program,
                gemini::argv(s.model.as_deref(), &s.args),
                Box::new(gemini::GeminiStream::new(
                    s.gemini_dirs.clone(),
                    s.model.clone(),
                )),
            ),
            AgentKind::Opencode => {
                let model = s
                    .model
                    .clone()
                    .or_else(|| {
                        s.opencode_configs
                            .iter()
                            .find(|p| p.is_file())
                            .and_then(|p| opencode::config_model(p))
                    })
                    .unwrap_or_else(|| opencode::UNKNOWN_MODEL.to_owned());
                (
                    program,
                    opencode::argv(s.model.as_deref(), &s.args),
                    Box::new(opencode::OpencodeStream::new(&model)),
                )
            }
        }
    }
}

impl SkillRunner for AgentRunner<'_> {
    fn run(&mut self, spec: &RunSpec, exchange: &Exchange, echo: &mut dyn Write) -> RunOutcome {
        let kind = self.settings.kind;
        let request = match read_request(exchange) {
            Ok(r) => r,
            Err(e) => return failed(format!("{kind}: not started — {e}")),
        };
        let template = self
            .settings
            .prompt
            .clone()
            .unwrap_or_else(|| prompt::Template::built_in(request.skill));
        let prompt = template.render(&request, &exchange.request_path());
        let before = match world::snapshot(self.tracker, self.git, &self.remote, &request) {
            Ok(b) => b,
            Err(e) => {
                return failed(quote(
                    &spec.redactor,
                    &format!(
                        "{kind}: not started — the tracker and remote must be readable to find the PRs it opens: {e}"
                    ),
                ));
            }
        };
        if let Err(e) = before.save(exchange) {
            return failed(format!("{kind}: not started — {e}"));
        }
        let (program, args, stream) = self.command(spec);
        let mut child = match agent_command(spec, &program, &args).spawn() {
            Ok(c) => c,
            Err(e) => {
                return failed(format!(
                    "{kind}: could not start {}: {e} — install it, or pass --agent-cmd PATH",
                    program.display()
                ));
            }
        };
        if let Some(mut stdin) = child.stdin.take() {
            // A thread, so an agent that reads its prompt late never blocks
            // the watchdog; dropping the pipe ends the prompt.
            std::thread::spawn(move || {
                let _ = stdin.write_all(prompt.as_bytes());
            });
        }
        let (mut outcome, mut stream, journal_error) =
            self.supervise_streaming(child, spec, exchange, echo, stream);
        let mut verdict = stream.finish(&outcome);
        for n in &verdict.notes {
            let _ = writeln!(echo, "note: {kind}: {n}");
        }
        let result_succeeded = verdict.result_succeeded;
        let mut causes: Vec<String> = verdict.failure.take().into_iter().collect();
        let found = match world::discover(&before, self.tracker, self.git, &self.remote, &request) {
            Ok(found) => found,
            Err(e) => {
                causes.push(format!(
                    "could not find this tick's PRs on the tracker: {e}"
                ));
                world::Found::default()
            }
        };
        for n in &found.notes {
            let _ = writeln!(echo, "note: {n}");
        }
        if let Some(e) = journal_error {
            causes.push(format!("could not journal the streamed usage: {e}"));
        }
        if let Err(e) = write_result(exchange, kind, spec, verdict, found) {
            causes.push(format!("could not write the result: {e}"));
        }
        // Any other cause is the engine's: what the tracker shows of the
        // work, or its spend, is then not known to stand.
        outcome.result_succeeded = result_succeeded && causes.len() == 1;
        if !causes.is_empty() {
            outcome.cause = Some(quote(&spec.redactor, &causes.join("; ")));
        }
        outcome
    }
}

/// The request the engine wrote for this iteration.
fn read_request(exchange: &Exchange) -> Result<SkillRequest, String> {
    let bytes = files::read_bytes(&exchange.request_path())
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "the request file is missing".to_owned())?;
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
}

/// The agent's command line, under the guard when there is one, in its
/// own process group, with the agent's own variables removed.
fn agent_command(spec: &RunSpec, program: &Path, args: &[OsString]) -> Command {
    let mut command = match &spec.guard {
        // Under the guard, as a skill: the kernel tells the agent when
        // the engine dies (crate::skill::guard).
        Some(binary) => {
            let mut argv = vec![program.as_os_str().to_owned()];
            argv.extend(args.iter().cloned());
            let mut c = Command::new(binary);
            c.args(crate::skill::guard::args(
                &crate::skill::guard::Guarded::Exec(argv),
                std::process::id(),
            ));
            c
        }
        None => {
            let mut c = Command::new(program);
            c.args(args);
            c
        }
    };
    command
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for name in ENV_REMOVED
        .iter()
        .copied()
        .chain(spec.env_removed.iter().map(String::as_str))
    {
        command.env_remove(name);
    }
    // Its own group, as a skill's: the watchdog and the interrupt reach
    // the agent and everything it started.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command
}

/// The agent's result file, from its stream and what the tracker shows.
fn write_result(
    exchange: &Exchange,
    kind: AgentKind,
    spec: &RunSpec,
    verdict: Verdict,
    found: world::Found,
) -> Result<(), files::FileError> {
    let result = SkillResult {
        protocol: PROTOCOL_VERSION,
        prs: found.prs,
        usage: verdict.usage,
        agents_dispatched: verdict.agents,
        comments_pushed: found.comments,
        merges_attempted: found.merges,
        summary: verdict
            .summary
            .map(|s| format!("{kind}: {}", spec.redactor.apply(&s))),
        agent_cost_usd: verdict.agent_cost,
        usage_windows: verdict.windows,
        ..SkillResult::default()
    };
    let mut json = serde_json::to_vec_pretty(&result).expect("results serialise");
    json.push(b'\n');
    files::write_atomic(&exchange.result_path(), &json)
}

impl AgentRunner<'_> {
    /// Supervises the agent while its stream is read: stdout line by line,
    /// other usage on a timer and once after it exits, each event
    /// journaled at once. Returns the outcome, the reader, and the first
    /// error journaling met.
    fn supervise_streaming(
        &self,
        child: std::process::Child,
        spec: &RunSpec,
        exchange: &Exchange,
        echo: &mut dyn Write,
        stream: Box<dyn StreamReader>,
    ) -> (RunOutcome, Box<dyn StreamReader>, Option<String>) {
        let events = exchange.events_path();
        let journal_error: Mutex<Option<String>> = Mutex::new(None);
        // One lock for the reader and the journal: the timer's polls and
        // the stdout lines append in turn, never interleaved.
        let stream = Mutex::new(stream);
        let journal = |read_events: &[SkillEvent]| {
            for event in read_events {
                let text = serde_json::to_string(event).expect("events serialise");
                match files::append_line(&events, &text, false) {
                    Ok(_) => spec.crash.hit("after-agent-usage"),
                    Err(e) => {
                        lock(&journal_error).get_or_insert_with(|| e.to_string());
                    }
                }
            }
        };
        let done = AtomicBool::new(false);
        let outcome = std::thread::scope(|scope| {
            let poller = scope.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    std::thread::park_timeout(POLL_EVERY);
                    let mut s = lock(&stream);
                    let polled = s.poll();
                    journal(&polled);
                }
            });
            let outcome = self.process.supervise(
                child,
                spec,
                exchange,
                echo,
                crate::skill::runner::STREAM_LINE_MAX,
                &mut |line, echo| {
                    let mut s = lock(&stream);
                    let read = s.line(line);
                    journal(&read.events);
                    drop(s);
                    // Read whole, shown as a skill's line would be.
                    for l in read.echo {
                        let shown = crate::rules::redact::cut(&l, crate::skill::runner::LINE_MAX);
                        let _ = writeln!(echo, "{shown}");
                    }
                },
            );
            done.store(true, Ordering::Relaxed);
            poller.thread().unpark();
            outcome
        });
        let mut stream = stream.into_inner().unwrap_or_else(PoisonError::into_inner);
        let last = stream.poll();
        journal(&last);
        let journal_error = journal_error
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        (outcome, stream, journal_error)
    }
}
