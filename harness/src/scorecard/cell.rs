//! One cell of the loop-safety scorecard (issue 35): a [`ScoreCase`] run
//! against one plugin ([`Adapter`]) with the real Claude Code, offline.
//!
//! ```text
//! [ROOT]/work/            the project: a clone of its origin, served by the mock tracker
//! [ROOT]/home/, tmp/      HOME and TMPDIR
//! [ROOT]/config-loop/     the loop session's CLAUDE_CONFIG_DIR (its transcripts)
//! [ROOT]/config-other/    the other session's
//! [ROOT]/loop-model.log   what the loop session asked its scripted model
//! [ROOT]/other-model.log  what the other session asked its own
//! [ROOT]/other-session.sh `{other}`: a second `claude -p` with the same plugin
//!                         in the same project; it lists the state files'
//!                         checksums before and after it runs
//! [ROOT]/step-N.sh        the case's steps, the adapter's fields in place
//! [ROOT]/N.jsonl          each submission's stream (1 = the first fire)
//! ```
//!
//! Each session has a scripted model of its own, so its requests are
//! counted apart whatever the plugin re-feeds: the loop's model runs the
//! case's steps as `Bash` calls (`sh step-N.sh`), then answers the case's reply to every
//! request; the other's always answers. The loop's prompt is submitted
//! `fires` times in one session (`claude -p`, then `--continue`), as
//! `/loop` fires it; a question goes in after the first fire. Nothing is
//! judged here ([`super::verdict`] is).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sdd_mocks::git::{self, Git};
use sdd_mocks::model::{BlockingMockModel, LogEntry, MockModel, Script};
use sdd_mocks::tracker::MockTracker;

use super::format::{Adapter, NOT_DONE, ScoreCase};
use crate::loading::fixtures::Fixtures;
use crate::world::error::HarnessError;
use crate::world::model::{Confinement, MODEL_KEY, closed_port};
use crate::world::procs::{MARKER, Reaper};
use crate::world::sandbox::{self, TRACKER_TOKEN};
use crate::world::spawn::{self, Control, Ended, Invocation};

/// The model every session is started with.
const MODEL: &str = "claude-sonnet-4-5";
/// Answers each scripted model has after the loop's steps: more than any
/// cap a case sets, so a loop that never stops shows as this many
/// requests and then Claude Code's error when the script runs out.
const ANSWERS: usize = 16;

static CELLS: AtomicUsize = AtomicUsize::new(0);

/// What every cell runs with.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The plugin directory (`--plugin-dir`).
    pub plugin: PathBuf,
    /// The `claude` executable.
    pub claude: PathBuf,
    /// Put first on the sessions' PATH (where `sdd-loop` is, for ours).
    pub bin: Option<PathBuf>,
    /// The PATH after it (the tools a plugin's hooks run: sh, jq, perl…).
    pub path: OsString,
    pub fixtures: Fixtures,
    /// Where the cell's directory is made [default: the system's].
    pub parent: Option<PathBuf>,
    /// How long one submission may take.
    pub timeout: Duration,
    /// Keep the cell's directory.
    pub keep: bool,
}

/// What one cell did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CellRun {
    /// Requests the loop session made at each fire.
    pub fires: Vec<u32>,
    /// Requests the question made.
    pub question: Option<u32>,
    /// Requests the other session made, when it ran.
    pub other: Option<u32>,
    /// The loop's scripted model ran out of answers.
    pub loop_exhausted: bool,
    /// The state files' checksums when the other session started and
    /// when it ended (path → checksum and size).
    pub state_around_other: Option<(BTreeMap<String, String>, BTreeMap<String, String>)>,
    /// The state files present at the end.
    pub state_at_end: Vec<String>,
    /// A submission that timed out or failed to run, said plainly.
    pub problems: Vec<String>,
    pub wall: Duration,
    /// The kept directory.
    pub kept: Option<PathBuf>,
}

impl CellRun {
    pub fn loop_requests(&self) -> u32 {
        self.fires.iter().sum::<u32>() + self.question.unwrap_or(0)
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HarnessError {
    let what = what.into();
    move |source| HarnessError::Io { what, source }
}

/// `text` quoted for `sh`.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// A scripted model's YAML: `steps` as Bash calls, then `reply` to every
/// request.
fn script_yaml(steps: &[String], reply: &str, input_tokens: u64) -> String {
    let q = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
    let usage = format!("{{ input: {input_tokens}, output: 10 }}");
    let mut text = format!("model: {MODEL}\nturns:\n");
    for step in steps {
        text.push_str(&format!(
            "  - calls: [{{ bash: {{ command: {}, description: Run a step }} }}]\n    usage: {usage}\n",
            q(step)
        ));
    }
    for _ in 0..ANSWERS {
        text.push_str(&format!("  - text: {}\n    usage: {usage}\n", q(reply)));
    }
    text
}

fn start_model(root: &Path, name: &str, yaml: &str) -> Result<BlockingMockModel, HarnessError> {
    let path = root.join(format!("{name}-model.yaml"));
    std::fs::write(&path, yaml).map_err(io(format!("write {}", path.display())))?;
    let script = Script::parse(&path, yaml)
        .map_err(|e| HarnessError::Sandbox(format!("the {name} model's script: {e}")))?;
    MockModel::builder(script)
        .api_key(MODEL_KEY)
        .log_file(root.join(format!("{name}-model.log")))
        .start_blocking()
        .map_err(|e| HarnessError::Sandbox(format!("start the {name} session's model: {e}")))
}

/// The model requests in `log` (tooled Messages API calls; token counts
/// and title generation are not requests a loop makes).
fn requests(log: &[LogEntry]) -> u32 {
    let n = log
        .iter()
        .filter(|e| e.path.ends_with("/v1/messages") && e.body.get("tools").is_some())
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The shell function that lists the state files' checksums.
fn snapshot_fn(state: &[String]) -> String {
    let paths: Vec<String> = state.iter().map(|p| sh_quote(p)).collect();
    format!(
        "snap() {{ for p in {}; do if [ -d \"$p\" ]; then find \"$p\" -type f -exec cksum {{}} +; elif [ -f \"$p\" ]; then cksum \"$p\"; fi; done | sort; }}",
        paths.join(" ")
    )
}

/// Reads `snap`'s output: path → "checksum size".
fn read_snapshot(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ' ');
            let (sum, size, file) = (parts.next()?, parts.next()?, parts.next()?);
            Some((
                file.trim_start_matches("./").to_owned(),
                format!("{sum} {size}"),
            ))
        })
        .collect()
}

/// The state files present under `state` in `project`.
fn present(project: &Path, state: &[String]) -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if let Ok(rel) = path.strip_prefix(base) {
                out.push(rel.display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    for p in state {
        let path = project.join(p);
        if path.is_dir() {
            walk(&path, project, &mut out);
        } else if path.is_file() {
            out.push(p.clone());
        }
    }
    out.sort();
    out
}

/// One cell's world and sessions.
struct Cell<'a> {
    case: &'a ScoreCase,
    adapter: &'a Adapter,
    setup: &'a Setup,
    root: PathBuf,
    project: PathBuf,
    env: Vec<(String, OsString)>,
    reaper: Reaper,
}

/// Runs `case` against `adapter`'s plugin.
pub fn run_cell(
    case: &ScoreCase,
    adapter: &Adapter,
    setup: &Setup,
) -> Result<CellRun, HarnessError> {
    let started = Instant::now();
    let (dir, root) = sandbox::temp_dir(
        &format!("sdd-scorecard-{}-", case.id),
        setup.parent.as_deref(),
    )?;
    let backlog = sandbox::backlog(&setup.fixtures, adapter.backlog.as_deref())?;
    let world = git::materialise(&Git::default(), &backlog, &root)?;
    let tracker = MockTracker::builder()
        .backlog(backlog)
        .token(TRACKER_TOKEN)
        .origin(&world.origin)
        .start_blocking()
        .map_err(io("start the mock tracker"))?;
    for d in ["home", "tmp", "config-loop", "config-other", "codex-home"] {
        std::fs::create_dir_all(root.join(d)).map_err(io(format!("create {d}")))?;
    }
    let done = adapter.done.clone().unwrap_or_default();
    let reply = case
        .reply
        .as_deref()
        .unwrap_or(NOT_DONE)
        .replace("{done}", &done);
    let other_model = start_model(&root, "other", &script_yaml(&[], "Answered: 4.", 100))?;
    let cell_no = CELLS.fetch_add(1, Ordering::Relaxed);
    let mut cell = Cell {
        case,
        adapter,
        setup,
        project: world.clone.clone(),
        env: Vec::new(),
        reaper: Reaper::new(format!("scorecard-{}-{cell_no}", std::process::id())),
        root,
    };
    let steps = cell.write_steps()?;
    let loop_model = start_model(
        &cell.root,
        "loop",
        &script_yaml(&steps, &reply, case.input_tokens),
    )?;
    cell.env = cell.environment(&loop_model.uri(), &tracker.uri(), &tracker.repository())?;
    cell.write_other_session(&other_model.uri())?;
    let mut run = cell.submissions(&loop_model)?;
    let other_log = other_model.log();
    if cell.root.join("other.before").exists() {
        run.other = Some(requests(&other_log));
        run.state_around_other = Some((
            read_snapshot(&cell.root.join("other.before")),
            read_snapshot(&cell.root.join("other.after")),
        ));
    }
    run.loop_exhausted = loop_model.turns_served() >= loop_model.turns_total();
    run.state_at_end = present(&cell.project, &adapter.state);
    run.wall = started.elapsed();
    cell.reaper.sweep();
    if setup.keep {
        run.kept = Some(dir.into_persistent().path().to_path_buf());
    }
    Ok(run)
}

impl Cell<'_> {
    /// A step with the adapter's fields in place.
    fn expand(&self, step: &str) -> String {
        let a = self.adapter;
        let state: Vec<String> = a.state.iter().map(|p| sh_quote(p)).collect();
        step.replace(
            "{other}",
            &sh_quote(&self.root.join("other-session.sh").display().to_string()),
        )
        .replace("{start}", &sh_quote(&self.case.start_prompt(a)))
        .replace("{cancel}", a.cancel.as_deref().unwrap_or_default())
        .replace("{edit_state}", a.edit_state.as_deref().unwrap_or_default())
        .replace("{delete_state}", &format!("rm -rf {}", state.join(" ")))
    }

    fn environment(
        &self,
        model: &str,
        tracker: &str,
        repo: &str,
    ) -> Result<Vec<(String, OsString)>, HarnessError> {
        let root = &self.root;
        let confinement = Confinement::new(
            model,
            &root.join("config-loop"),
            &root.join("codex-home"),
            closed_port()?,
            crate::loading::case::Auth::ApiKey,
        );
        let mut path = OsString::new();
        if let Some(bin) = &self.setup.bin {
            path.push(bin);
            path.push(":");
        }
        path.push(&self.setup.path);
        let mut env: Vec<(String, OsString)> = vec![
            ("PATH".to_owned(), path),
            ("HOME".to_owned(), root.join("home").into()),
            ("TMPDIR".to_owned(), root.join("tmp").into()),
            ("LANG".to_owned(), "C.UTF-8".into()),
            ("GIT_CONFIG_NOSYSTEM".to_owned(), "1".into()),
            (MARKER.to_owned(), self.reaper.marker().into()),
        ];
        env.extend(confinement.env);
        for (k, v) in &self.adapter.env {
            let v = v
                .replace("{tracker}", tracker)
                .replace("{repo}", repo)
                .replace("{token}", TRACKER_TOKEN);
            env.push((k.clone(), v.into()));
        }
        Ok(env)
    }

    /// Writes each step as `step-N.sh`; the Bash commands that run them.
    /// The model runs a step as a script, as it runs a build or a test
    /// script: Claude Code refuses a Bash command that names a file under
    /// `.claude/` ("a sensitive file") but not a script that touches one,
    /// and its guard must not stand in for the plugin's.
    fn write_steps(&self) -> Result<Vec<String>, HarnessError> {
        let mut commands = Vec::new();
        for (i, step) in self.case.steps.iter().enumerate() {
            let path = self.root.join(format!("step-{}.sh", i + 1));
            std::fs::write(&path, format!("{}\n", self.expand(step)))
                .map_err(io(format!("write {}", path.display())))?;
            commands.push(format!("sh {}", sh_quote(&path.display().to_string())));
        }
        Ok(commands)
    }

    /// `other-session.sh PROMPT`, run by a step as `sh {other} PROMPT`.
    fn write_other_session(&self, model: &str) -> Result<(), HarnessError> {
        let root = &self.root;
        let q = |p: &Path| sh_quote(&p.display().to_string());
        let text = format!(
            "# Another Claude Code session in the same project, with the same plugin,\n\
             # against its own scripted model; the state's checksums before and after.\n\
             cd {project} || exit 1\n{snap}\nsnap > {before}\n\
             env -u CLAUDECODE -u CLAUDE_CODE_ENTRYPOINT -u CLAUDE_CODE_SESSION_ID \\\n  \
             CLAUDE_CONFIG_DIR={config} ANTHROPIC_BASE_URL={model} \\\n  \
             {claude} -p \"$1\" --plugin-dir {plugin} --allowedTools Bash --model {MODEL} \\\n  \
             --output-format stream-json --verbose > {out} 2> {err} < /dev/null\n\
             echo \"the other session exited $?\"\nsnap > {after}\n",
            project = q(&self.project),
            snap = snapshot_fn(&self.adapter.state),
            before = q(&root.join("other.before")),
            after = q(&root.join("other.after")),
            config = q(&root.join("config-other")),
            model = sh_quote(model),
            claude = q(&self.setup.claude),
            plugin = q(&self.setup.plugin),
            out = q(&root.join("other.jsonl")),
            err = q(&root.join("other.stderr.txt")),
        );
        let path = root.join("other-session.sh");
        std::fs::write(&path, text).map_err(io(format!("write {}", path.display())))
    }

    /// Submits the loop's prompt `fires` times (and the question after the
    /// first), counting the loop model's requests at each.
    fn submissions(&mut self, model: &BlockingMockModel) -> Result<CellRun, HarnessError> {
        let prompt = self.case.start_prompt(self.adapter);
        let mut run = CellRun::default();
        let mut n = 0;
        for fire in 0..self.case.fires {
            n += 1;
            let made = self.submit(n, &prompt, fire > 0, model, &mut run)?;
            run.fires.push(made);
            if fire == 0
                && let Some(question) = self.case.question.clone()
            {
                n += 1;
                run.question = Some(self.submit(n, &question, true, model, &mut run)?);
            }
        }
        Ok(run)
    }

    /// One `claude -p PROMPT`; the requests it made.
    fn submit(
        &mut self,
        n: usize,
        prompt: &str,
        resume: bool,
        model: &BlockingMockModel,
        run: &mut CellRun,
    ) -> Result<u32, HarnessError> {
        let mut args: Vec<OsString> = vec![
            "-p".into(),
            prompt.into(),
            "--output-format".into(),
            "stream-json".into(),
            "--verbose".into(),
            "--allowedTools".into(),
            "Bash".into(),
            "--model".into(),
            MODEL.into(),
            "--plugin-dir".into(),
            self.setup.plugin.clone().into(),
        ];
        if resume {
            args.push("--continue".into());
        }
        let invocation = Invocation {
            program: self.setup.claude.clone(),
            args,
            env: self.env.clone(),
            cwd: self.project.clone(),
        };
        let before = requests(&model.log());
        let deadline = Instant::now() + self.setup.timeout;
        let ran = spawn::run(&invocation, Control::default(), deadline, &mut self.reaper)
            .map_err(io("run claude"))?;
        let _ = std::fs::write(self.root.join(format!("{n}.jsonl")), &ran.stdout);
        let _ = std::fs::write(self.root.join(format!("{n}.stderr.txt")), &ran.stderr);
        match ran.ended {
            Ended::Exited(0) => {}
            Ended::TimedOut => run.problems.push(format!(
                "submission {n} was still running after {}s and was killed",
                self.setup.timeout.as_secs()
            )),
            other => run
                .problems
                .push(format!("submission {n}: claude ended {other:?}")),
        }
        Ok(requests(&model.log()) - before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_runs_the_steps_then_answers_forever() {
        let yaml = script_yaml(&["rm -f 'a b'".to_owned()], "Not done.", 7);
        let script = Script::parse(Path::new("s.yaml"), &yaml).unwrap();
        assert_eq!(script.turns.len(), 1 + ANSWERS);
        assert_eq!(script.turns[1].value.text.as_deref(), Some("Not done."));
        assert_eq!(script.turns[0].value.usage.input, 7);
    }

    #[test]
    fn a_snapshot_reads_back_by_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("snap");
        std::fs::write(&file, "123 45 ./.claude/x.state\n9 1 s/y\n").unwrap();
        let map = read_snapshot(&file);
        assert_eq!(map[".claude/x.state"], "123 45");
        assert_eq!(map["s/y"], "9 1");
    }
}
