//! The arguments of `sdd-evals`, as clap parses them, and the help text
//! that documents its environment and exit statuses.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use sdd_loop::state::paths::Skill;

const AFTER_HELP: &str = "\
Environment:
  SDD_EVALS_SDD_LOOP     the engine binary [default: next to sdd-evals]
  SDD_EVALS_FAKE_SKILL   the fake-skill binary [default: next to sdd-evals]
  SDD_EVALS_MOCK_QMD     the mock-qmd binary [default: next to sdd-evals]
  SDD_EVALS_KEEP=1       keep every sandbox (same as --keep)
  SDD_EVALS_TMPDIR       where sandboxes are made [default: /dev/shm when
                         there is one, else the system's temporary directory]
  SDD_EVALS_AGENTS_DIR   where `agents install` puts the pinned real CLIs
                         (Claude Code, Codex, Gemini CLI, OpenCode), and the
                         real-CLI cases find them
                         [default: $XDG_CACHE_HOME/sdd-evals/agents, else
                         ~/.cache/sdd-evals/agents; then PATH]
  SDD_EVALS_AGENT_VERSIONS=claude@VERSION[,NAME@VERSION…]  other versions
                         than the pins, for `agents`, `agents install` and
                         the real-CLI cases (ci/canary tries a new release)
  SDD_EVALS_REQUIRE_AGENTS=1  a real-CLI case whose CLI is missing fails
                         (same as --require-agents)

Exit status:
  0   every case passed
  1   a case failed (an assertion, an expectation or a snapshot), a
      Tier 1 skill's pass rate over the full suite is under 80% (a run
      of case files named one by one is not held to it), or `docs`
      found a difference between a SKILL.md and the engine
  64  usage error
  65  a case file (or the --compare benchmark) does not parse or validate
  69  a binary is missing (build them with `cargo build --workspace --bins`),
      or `agents` found a pinned CLI missing or could not install it
  73  the reports cannot be written

The case format: docs/src/case-format.md; a first case: evals/README.md";

/// Scenario evals for the loop engine.
#[derive(Debug, Parser)]
#[command(name = "sdd-evals", version, about, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run cases against the engine, grade them and compare their
    /// snapshots; writes target/sdd-evals/{report.html, grading.json,
    /// benchmark.json, summary.md}.
    #[command(
        after_help = "Examples:\n  sdd-evals run\n  sdd-evals run evals/loop/c4-pr-budget.yaml --keep\n  sdd-evals run evals/loop/my-case.yaml --accept\n  sdd-evals run --compare evals/benchmarks/\n  sdd-evals run --engine './other-engine --verbose'"
    )]
    Run(RunArgs),
    /// Parse and validate cases without running them.
    Check {
        /// Case files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Scaffold a minimal case under evals/loop/ (or --dir).
    New {
        /// The case id (a-z, 0-9 and -); also the file name.
        name: String,
        /// Where to write it [default: evals/loop/ of the workspace]; its
        /// snapshots go in DIR/snapshots/ when it is run with --accept.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// List the cases.
    List {
        /// Case files or directories [default: evals/]
        paths: Vec<PathBuf>,
    },
    /// Print the case format as JSON Schema (for editors).
    Schema,
    /// Compare a plugin's skills/work/SKILL.md and skills/review/SKILL.md
    /// with the engine: loop flags and defaults, gate questions and
    /// options, ADR-0010 and single-PR semantics, and every command, flag
    /// and exit status they name (ADR-0028 confirmations 1–2). Exits 1 on
    /// any difference.
    #[command(
        after_help = "Examples:\n  sdd-evals docs\n  sdd-evals docs --plugin-root ../claude-plugin-sdd --skill review"
    )]
    Docs(DocsArgs),
    /// Map every SPEC-0020 requirement and ADR-0028 confirmation to the
    /// cases that cover it (`covers:`) and their assertion counts; exits 1
    /// when any has no case, naming them.
    #[command(
        after_help = "Examples:\n  sdd-evals coverage\n  sdd-evals coverage --markdown\n  sdd-evals coverage --markdown --write docs/coverage.md"
    )]
    Coverage(CoverageArgs),
    /// Review changed snapshots: the diff of every `*.snap.new` a test run
    /// left beside a stored `.snap` (`cargo nextest run` writes one where a
    /// case's snapshot changed); `--accept` writes them over the stored
    /// ones, `--reject` deletes them. Works without cargo-insta.
    #[command(
        after_help = "Examples:\n  sdd-evals review\n  sdd-evals review --accept evals/loop/snapshots/c4-pr-budget__output.snap.new\n  sdd-evals review --reject"
    )]
    Review(ReviewArgs),
    /// The pinned real CLIs the real-CLI cases run (Claude Code, Codex,
    /// Gemini CLI, OpenCode): where each is and the disk they take;
    /// `agents install` installs them with npm (once: a warm cache
    /// downloads nothing).
    #[command(
        after_help = "Examples:\n  sdd-evals agents\n  sdd-evals agents install\n  sdd-evals agents install --dir /tmp/agents"
    )]
    Agents(AgentsArgs),
    /// Report a `claude plugin eval` run of plugin-evals/ (the directories
    /// ci/plugin-evals writes, each with the runner's result.json):
    /// benchmark.json with the plugin arm as with_skill and the baseline as
    /// without_skill, grading.json, summary.md and report.html; and whether
    /// each answer scripted to break its case (a CASE.negative-NAME
    /// directory) was caught. Exits 1 when a case fails with the plugin or
    /// a breaking answer is not caught.
    #[command(
        name = "plugin-evals",
        after_help = "Examples:
  sdd-evals plugin-evals target/plugin-evals/runs/*
  sdd-evals plugin-evals target/plugin-evals/live --out target/plugin-evals/live --compare old/benchmark.json"
    )]
    PluginEvals(PluginEvalsArgs),
    /// Run the loop-safety scorecard: every case under evals/scorecard/
    /// (a failure class of Claude Code loop plugins, naming no plugin)
    /// against each PLUGIN_DIR with the real Claude Code, offline against
    /// a scripted model, and print the matrix case × plugin — held, broken
    /// with its evidence (model requests per session, state files), or n/a
    /// where the plugin's adapter cannot express the case. Writes
    /// scorecard.json, scorecard.md and scorecard.html. Exits 1 when a
    /// cell differs from --expect or could not be run.
    #[command(
        after_help = SCORECARD_HELP
    )]
    Scorecard(ScorecardArgs),
}

const SCORECARD_HELP: &str = "\
An adapter is a few lines of YAML that tell the cases how the plugin's
loop is started with a cap, cancelled and finished, and which files are
its state (evals/scorecard/README.md). Give one --adapter per PLUGIN_DIR,
in the same order.

Examples:
  sdd-evals scorecard . --adapter evals/scorecard/adapters/sdd-loop.yaml
  sdd-evals scorecard fixtures/loop-plugins/reference \\
    fixtures/loop-plugins/reference-session \\
    --adapter evals/scorecard/adapters/reference.yaml \\
    --adapter evals/scorecard/adapters/reference-session.yaml
  sdd-evals scorecard ../claude-plugins-official/plugins/ralph-loop \\
    --adapter evals/scorecard/adapters/ralph-loop.yaml
  sdd-evals scorecard fixtures/loop-plugins/reference \\
    --adapter evals/scorecard/adapters/reference.yaml \\
    --case cap-refired --keep

Exit status: 0 every cell ran (and matched --expect) · 1 a cell differs
from --expect or could not be run · 64 usage · 65 a case, adapter or
--expect file does not parse · 69 Claude Code is missing
(sdd-evals agents install) · 73 the reports cannot be written";

#[derive(Debug, Args)]
pub struct ScorecardArgs {
    /// Plugin directories (each holds .claude-plugin/plugin.json).
    #[arg(required = true, value_name = "PLUGIN_DIR")]
    pub plugins: Vec<PathBuf>,
    /// The adapter of each PLUGIN_DIR, in order.
    #[arg(long = "adapter", required = true, value_name = "FILE")]
    pub adapters: Vec<PathBuf>,
    /// The cases [default: evals/scorecard]
    #[arg(long, value_name = "DIR")]
    pub cases: Option<PathBuf>,
    /// Run only these cases (by id).
    #[arg(long = "case", value_name = "ID")]
    pub only: Vec<String>,
    /// The verdicts each column must have: `ADAPTER_NAME: { CASE_ID:
    /// held|broken|n/a }`; a column it does not name is not checked.
    #[arg(long, value_name = "FILE")]
    pub expect: Option<PathBuf>,
    /// Cells run at once (Claude Code mostly waits on its hooks and the
    /// scripted model, so more than the cores is fine)
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub jobs: usize,
    /// The claude executable [default: the pinned Claude Code that
    /// `sdd-evals agents` finds]
    #[arg(long, value_name = "PATH")]
    pub claude: Option<PathBuf>,
    /// Seconds one submission may take before it is killed.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    pub timeout: u64,
    /// Where the reports go [default: target/sdd-evals]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Keep each cell's directory (sessions' streams, the models' logs).
    #[arg(long)]
    pub keep: bool,
}

#[derive(Debug, Args)]
pub struct PluginEvalsArgs {
    /// Run directories: result.json (`claude plugin eval --json`), and
    /// model.log offline (mock-model's log, for tokens); a name with
    /// `.negative-` holds an answer that must be caught.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Where the reports go [default: target/plugin-evals]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Show deltas from an earlier benchmark.json of plugin-evals.
    #[arg(long, value_name = "BENCHMARK")]
    pub compare: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(subcommand)]
    pub command: Option<AgentsCommand>,
    /// The install directory [default: $SDD_EVALS_AGENTS_DIR, else
    /// $XDG_CACHE_HOME/sdd-evals/agents, else ~/.cache/sdd-evals/agents]
    #[arg(long, value_name = "DIR", global = true)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// Install every pinned CLI that is not installed yet (npm, into the
    /// install directory).
    Install,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Files or directories to look in [default: the workspace]
    pub paths: Vec<PathBuf>,
    /// Write each pending snapshot over the stored one.
    #[arg(long, conflicts_with = "reject")]
    pub accept: bool,
    /// Delete each pending snapshot, keeping the stored one.
    #[arg(long)]
    pub reject: bool,
}

#[derive(Debug, Args)]
pub struct CoverageArgs {
    /// Case files or directories [default: evals/]
    pub paths: Vec<PathBuf>,
    /// Print the table as Markdown (e.g. for a pull request).
    #[arg(long)]
    pub markdown: bool,
    /// Replace the Markdown table between the coverage markers of FILE
    /// (implies --markdown).
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DocsArgs {
    /// The plugin checkout holding skills/{work,review}/SKILL.md
    /// [default: this repository]
    #[arg(long, value_name = "DIR")]
    pub plugin_root: Option<PathBuf>,
    /// Check only this skill's document [default: both]
    #[arg(long, value_enum)]
    pub skill: Option<Skill>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Case files or directories [default: evals/]. A directory's
    /// `driver: real-loop` cases are left out (each waits minutes on Claude
    /// Code's own /loop timers): name their files to run them.
    pub paths: Vec<PathBuf>,
    /// Run another implementation of the contract: a command line to which
    /// the harness appends `<skill> --loop …`.
    #[arg(long, value_name = "CMD")]
    pub engine: Option<String>,
    /// Print the grading as JSON on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Keep every sandbox directory (its path is printed).
    #[arg(long)]
    pub keep: bool,
    /// Do not compare snapshots (e.g. for an engine whose wording differs).
    #[arg(long)]
    pub no_snapshots: bool,
    /// Where the reports go [default: target/sdd-evals]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Under `cargo run` (`cargo evals`) the engine and mock binaries are
    /// rebuilt first, so the suite never runs stale ones; this skips that.
    #[arg(long)]
    pub no_build: bool,
    /// How many cases run at once [default: 4 per core]
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// Write the snapshots of new cases (those with none stored). A
    /// snapshot that changed is never accepted here: review it with
    /// `sdd-evals review` (`cargo review-snapshots`).
    #[arg(long)]
    pub accept: bool,
    /// Show per-skill deltas from an earlier benchmark.json, or from the
    /// newest one in a directory such as evals/benchmarks/.
    #[arg(long, value_name = "BENCHMARK")]
    pub compare: Option<PathBuf>,
    /// A real-CLI case whose CLI is not installed fails instead of being
    /// skipped (CI uses it; `sdd-evals agents install` installs them).
    #[arg(long)]
    pub require_agents: bool,
    /// Add this run's benchmark to evals/benchmarks/ as
    /// <commit date>-<commit>.json (the committed history).
    #[arg(long)]
    pub record: bool,
    /// Print each case's phases (world, events, ticks, capture, judging,
    /// teardown), slowest first, and the run's wall and CPU time.
    #[arg(long)]
    pub timings: bool,
    /// Also report a `claude plugin eval` run of plugin-evals/ (the run
    /// directories ci/plugin-evals writes; see `sdd-evals plugin-evals`):
    /// its cases join this report with both arms, and a breaking answer
    /// not caught fails the run.
    #[arg(long = "plugin-evals", value_name = "DIR", num_args = 1..)]
    pub plugin_evals: Vec<PathBuf>,
}
