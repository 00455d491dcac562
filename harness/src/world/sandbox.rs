//! The world a case runs in, built fresh in an
//! `assert_fs::TempDir` per case:
//!
//! ```text
//! [ROOT]/home/          HOME
//! [ROOT]/bin/qmd        → mock-qmd (first on PATH)
//! [ROOT]/bin/claude     → fake-claude
//! [ROOT]/bin/codex      → fake-codex
//! [ROOT]/origin.git/    the bare origin, built from the backlog
//! [ROOT]/work/          the project: a clone of origin, CLAUDE.md, .sdd/
//! [ROOT]/elsewhere/     another clone, for pushes "by someone else"
//! [ROOT]/qmd.state      mock-qmd's state
//! [ROOT]/ticks/N/       each tick's fake-skill script, answers, barrier FIFO,
//!                       and the engine's stdout.txt and stderr.txt
//!                       (`ticks/N-NAME/` for a tick on machine NAME)
//! [ROOT]/machines/NAME/ each simulated machine's clone, HOME and clock
//!                       ([`crate::world::machines`]), copied from the seeded
//!                       project
//! ```
//!
//! A real-CLI case (`driver: real-claude|real-codex|real-session`) gets no
//! fake agents; instead `bin/gh` → fake-gh, `bin/sdd-loop` → the engine
//! and `bin/sdd-evals-barrier` (what a scripted command runs where the
//! case kills), `[ROOT]/claude-config/` and `[ROOT]/codex-home/` for the
//! CLIs' own configuration and transcripts (the Gemini CLI's and
//! OpenCode's in `[ROOT]/home/.gemini/` and `[ROOT]/home/.config/opencode/`), and the case's scripted model
//! on 127.0.0.1 with its log in `[ROOT]/model.log` ([`CaseModel`]).
//!
//! plus the mock tracker on 127.0.0.1, bound to the origin so pull
//! requests' heads are live, and with `world.notify` a notification
//! receiver on 127.0.0.1 (`sdd_mocks::notify`); they stop when the
//! sandbox is dropped. The
//! directory is removed on drop unless it is kept for debugging.
//!
//! Where the sandboxes go is the caller's choice; [`ram_dir`] offers a RAM
//! file system. A case is mostly creating small files and directories (two
//! git repositories, the engine's state, each tick's inputs), and on a
//! busy disk each `mkdir` took over a millisecond: the suite ran 2.6 times
//! faster in `/dev/shm` than in `/tmp` on this project's 2-core machine.
//!
//! The project's CLAUDE.md is the case's `claude_md` fixture; without one,
//! a backlog that declares `agent_logins` gets a CLAUDE.md listing them
//! under `### SDD Configuration` → `#### Agent Logins` ([`agent_logins_md`]),
//! which is where the engine reads them — so a backlog's own declaration is
//! enough for the review gates that tell agents from humans.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use assert_fs::TempDir;
use jiff::Timestamp;
use sdd_loop::os::liveness::{OsProbe, ProcessProbe};
use sdd_loop::state::lock::LockRecord;
use sdd_mocks::fixture::Backlog;
use sdd_mocks::git::{self, Git, GitWorld};
use sdd_mocks::qmd::{self, QmdState};
use sdd_mocks::tracker::{BlockingMockTracker, MockTracker};
use serde_json::Value;

use crate::loading::case::{Case, PidSpec};
use crate::loading::fixtures::Fixtures;
use crate::world::bins::{Binaries, Engine};
use crate::world::error::HarnessError;
use crate::world::machines::Machine;
use crate::world::model::{self, BARRIER_BIN, BARRIER_SCRIPT, CaseModel, Confinement};
use crate::world::procs::Reaper;

/// The bearer token the mock tracker requires.
pub const TRACKER_TOKEN: &str = "sdd-evals-token";

/// A built world; removed (and its tracker stopped) on drop.
#[derive(Debug)]
pub struct Sandbox {
    dir: TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub bin: PathBuf,
    pub tmp: PathBuf,
    pub qmd_state: PathBuf,
    pub git: Git,
    pub world: GitWorld,
    pub tracker: BlockingMockTracker,
    /// The process behind `world.lock.pid: live`, while it runs.
    pub live_lock: Option<u32>,
    elsewhere: Option<PathBuf>,
    /// A real-CLI case's scripted model (stops with the sandbox).
    pub model: Option<CaseModel>,
    /// What a real CLI runs with: the model, its configuration here, no
    /// network but loopback.
    pub confinement: Option<Confinement>,
    /// The case's machines, by name (none without `machines:`).
    pub machines: Vec<Machine>,
    /// Where a partitioned machine's origin and tracker point: a loopback
    /// port nobody listens on.
    pub dead_url: String,
    /// The notification receiver (`world.notify`; stops with the sandbox).
    pub notify: Option<sdd_mocks::notify::Receiver>,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HarnessError {
    let what = what.into();
    move |source| HarnessError::Io { what, source }
}

fn write_private(path: &Path, text: &str) -> Result<(), HarnessError> {
    std::fs::write(path, text).map_err(io(format!("write {}", path.display())))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(io(format!("chmod {}", path.display())))
}

/// A CLAUDE.md declaring the backlog's `agent_logins` where the engine
/// reads them; `None` when it declares none.
pub fn agent_logins_md(backlog: &Backlog) -> Option<String> {
    if backlog.agent_logins.is_empty() {
        return None;
    }
    let mut text = format!(
        "# {}\n\nWritten by sdd-evals from the backlog fixture's `agent_logins`.\n\n### SDD Configuration\n\n#### Agent Logins\n\n",
        backlog.repository.value
    );
    for login in &backlog.agent_logins {
        text.push_str(&format!("- {login}\n"));
    }
    Some(text)
}

/// A new directory named `{prefix}…` under `parent` (default: the
/// system's temporary directory), removed when dropped unless kept, and
/// its canonical path (what the files in it are named by). Every
/// directory a case, a backlog's template or a scorecard cell runs in is
/// made here.
pub fn temp_dir(prefix: &str, parent: Option<&Path>) -> Result<(TempDir, PathBuf), HarnessError> {
    let dir = match parent {
        Some(parent) => TempDir::with_prefix_in(prefix, parent),
        None => TempDir::with_prefix(prefix),
    }
    .map_err(|e| HarnessError::Sandbox(e.to_string()))?;
    let root = dir
        .path()
        .canonicalize()
        .map_err(io(format!("resolve {}", dir.path().display())))?;
    Ok((dir, root))
}

/// The backlog fixture `name`, or an empty backlog of `acme/app`.
pub fn backlog(fixtures: &Fixtures, name: Option<&str>) -> Result<Backlog, HarnessError> {
    match name {
        Some(name) => {
            Backlog::load(&fixtures.backlog(name)).map_err(|e| HarnessError::Fixture(e.render()))
        }
        None => Ok(Backlog::empty("acme/app")),
    }
}

/// `/dev/shm` when it is a directory a sandbox can be created in (a RAM
/// file system on Linux), else `None` (the system's temporary directory).
pub fn ram_dir() -> Option<PathBuf> {
    let dir = Path::new("/dev/shm");
    (dir.is_dir() && TempDir::new_in(dir).is_ok()).then(|| dir.to_path_buf())
}

/// The git worlds a run has built, by backlog, to copy instead of
/// building again ([`git::copy_world`]): in a suite most cases share a
/// handful of backlogs, and building one runs a dozen git processes and
/// a push per pull request — a quarter of the suite's CPU before this
/// cache. Each backlog is built once, under a directory of its own that is
/// removed when the cache is dropped; cases running at once that need the
/// same backlog wait for the one build.
#[derive(Debug)]
pub struct Worlds {
    dir: TempDir,
    built: Mutex<HashMap<String, Arc<Template>>>,
}

/// One backlog's world, built once (or the error building it gave).
type Template = OnceLock<Result<GitWorld, String>>;

impl Worlds {
    /// An empty cache in a new directory under `parent` (default: the
    /// system's temporary directory).
    pub fn new(parent: Option<&Path>) -> Result<Self, HarnessError> {
        let (dir, _) = temp_dir("sdd-evals-worlds-", parent)?;
        Ok(Self {
            dir,
            built: Mutex::default(),
        })
    }

    /// `backlog`'s world, copied into `root`; built first if this is the
    /// first time it is asked for.
    fn get(&self, git: &Git, backlog: &Backlog, root: &Path) -> Result<GitWorld, HarnessError> {
        let key = serde_json::to_string(backlog).unwrap_or_default();
        // The map's lock is held only to find the slot; the build itself
        // holds the slot's, so other backlogs are built meanwhile.
        let slot = Arc::clone(
            self.built
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(key)
                .or_default(),
        );
        let template = slot.get_or_init(|| {
            let dir = self.dir.path().join(unique_name());
            git::materialise(git, backlog, &dir).map_err(|e| e.to_string())
        });
        match template {
            Ok(template) => Ok(git::copy_world(template, root)?),
            Err(e) => Err(HarnessError::Sandbox(format!("build the git world: {e}"))),
        }
    }
}

/// A directory name no other template in this cache has.
fn unique_name() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("world-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// `text` as one shell word.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The engine as a real CLI's scripted commands run it: `bin/sdd-loop`.
/// In a real session (`SDD_EVALS_TICK_DIR` set) it also keeps each run's
/// arguments, output and exit status under `ticks/N/engine/` — what the
/// case reads as the tick's report and exit, since the session's Bash
/// calls are the only ones that see them (not the plugin launcher's
/// handshake, `sdd-loop hook --protocol`, run before every hook). In an
/// interactive session (`SDD_EVALS_NOW_FILE` set) each run reads the
/// engine's clock from that file, so a case's `advance:` reaches a
/// session started ticks ago.
fn engine_shim(engine: &Engine) -> String {
    let run = match engine {
        Engine::Binary(path) => shell_quote(&path.display().to_string()),
        Engine::Command(cmd) => format!(
            "sh -c {} sdd-engine",
            shell_quote(&format!("exec {cmd} \"$@\""))
        ),
    };
    format!(
        "#!/bin/sh\n\
         # Written by sdd-evals: the engine under test; in a real session it\n\
         # also keeps each run's arguments, output and exit status for the case.\n\
         # An interactive session's clock is a file the harness moves per tick.\n\
         if [ -n \"$SDD_EVALS_NOW_FILE\" ]; then SDD_LOOP_NOW=$(cat \"$SDD_EVALS_NOW_FILE\"); export SDD_LOOP_NOW; fi\n\
         if [ -z \"$SDD_EVALS_TICK_DIR\" ]; then exec {run} \"$@\"; fi\n\
         # The plugin launcher's handshake is no run of the tick.\n\
         if [ \"$1 $2\" = \"hook --protocol\" ]; then exec {run} \"$@\"; fi\n\
         d=\"$SDD_EVALS_TICK_DIR/engine\"\n\
         mkdir -p \"$d\"\n\
         n=$(($(cat \"$d/count\" 2>/dev/null || echo 0) + 1))\n\
         echo \"$n\" > \"$d/count\"\n\
         printf '%s\\n' \"$@\" > \"$d/$n.args\"\n\
         {run} \"$@\" > \"$d/$n.out\" 2> \"$d/$n.err\"\n\
         code=$?\n\
         echo \"$code\" > \"$d/$n.exit\"\n\
         cat \"$d/$n.out\"\n\
         cat \"$d/$n.err\" >&2\n\
         exit \"$code\"\n"
    )
}

/// What a real CLI's scripted commands find on the sandbox PATH besides
/// `gh`: `sdd-loop` ([`engine_shim`]) and the barrier helper.
fn install_for_real_clis(bin: &Path, engine: &Engine) -> Result<(), HarnessError> {
    let script = |path: &Path, text: &str| -> Result<(), HarnessError> {
        std::fs::write(path, text).map_err(io(format!("write {}", path.display())))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(io(format!("chmod {}", path.display())))
    };
    script(&bin.join("sdd-loop"), &engine_shim(engine))?;
    script(&bin.join(BARRIER_BIN), BARRIER_SCRIPT)
}

impl Sandbox {
    /// Builds the world of `case` at `start`, in a new directory under
    /// `parent` (default: the system's temporary directory).
    pub fn build(
        case: &Case,
        fixtures: &Fixtures,
        binaries: &Binaries,
        start: Timestamp,
        reaper: &mut Reaper,
        parent: Option<&Path>,
        worlds: Option<&Worlds>,
    ) -> Result<Self, HarnessError> {
        let (dir, root) = temp_dir(&format!("sdd-evals-{}-", case.id()), parent)?;
        let world_spec = &case.world;
        let backlog = backlog(
            fixtures,
            world_spec.backlog.as_ref().map(|n| n.value.as_str()),
        )?;
        let claude_md = match &world_spec.claude_md {
            Some(_) => None,
            None => agent_logins_md(&backlog),
        };
        let git = Git::default();
        let world = match worlds {
            Some(worlds) => worlds.get(&git, &backlog, &root)?,
            None => git::materialise(&git, &backlog, &root)?,
        };
        let tracker = MockTracker::builder()
            .backlog(backlog)
            .token(TRACKER_TOKEN)
            .origin(&world.origin)
            .fixed_time(start)
            .start_blocking()
            .map_err(io("start the mock tracker"))?;

        let home = root.join("home");
        let bin = root.join("bin");
        let tmp = root.join("tmp");
        for d in [&home, &bin, &tmp, &root.join("ticks")] {
            std::fs::create_dir_all(d).map_err(io(format!("create {}", d.display())))?;
        }
        let real = case.driver.real_cli().is_some();
        let mut installed = vec![(&binaries.mock_qmd, "qmd")];
        if real {
            installed.push((&binaries.fake_gh, "gh"));
        } else {
            installed.push((&binaries.fake_claude, "claude"));
            installed.push((&binaries.fake_codex, "codex"));
        }
        for (target, name) in installed {
            std::os::unix::fs::symlink(target, bin.join(name))
                .map_err(io(format!("install {} as {name}", target.display())))?;
        }
        // `driver: hooks` too: the plugin's launcher finds the engine on
        // PATH, as in a real session, and the shim keeps each run under
        // the tick's directory.
        if real || case.driver == crate::loading::case::Driver::Hooks {
            install_for_real_clis(&bin, &binaries.engine)?;
        }
        let (model, confinement) = if real {
            // Codex runs each command in a login shell, which sets PATH
            // afresh from /etc/profile: the sandbox's bin/ comes back
            // from the profile, as a user's own PATH would.
            std::fs::write(
                home.join(".profile"),
                format!(
                    "# Written by sdd-evals: the sandbox's bin/ (gh, sdd-loop) first, in login shells too.\nexport PATH={}:\"$PATH\"\n",
                    shell_quote(&bin.display().to_string())
                ),
            )
            .map_err(io("write the sandbox's .profile"))?;
            let claude_config = root.join("claude-config");
            let codex_home = root.join("codex-home");
            for d in [&claude_config, &codex_home] {
                std::fs::create_dir_all(d).map_err(io(format!("create {}", d.display())))?;
            }
            let model = CaseModel::start(case, &root)?;
            if let Some(m) = &model {
                for (path, text) in model::config_files(&m.uri()) {
                    let path = home.join(path);
                    if let Some(dir) = path.parent() {
                        std::fs::create_dir_all(dir)
                            .map_err(io(format!("create {}", dir.display())))?;
                    }
                    std::fs::write(&path, text).map_err(io(format!("write {}", path.display())))?;
                }
            }
            let confinement = model.as_ref().map(|m| {
                model::closed_port()
                    .map(|port| Confinement::new(&m.uri(), &claude_config, &codex_home, port))
            });
            (model, confinement.transpose()?)
        } else {
            (None, None)
        };
        let qmd_state = root.join("qmd.state");
        qmd::state::write(&qmd_state, world_spec.qmd).map_err(io("write the qmd state"))?;

        let mut sandbox = Self {
            dir,
            root,
            home,
            bin,
            tmp,
            qmd_state,
            git,
            world,
            tracker,
            live_lock: None,
            elsewhere: None,
            model,
            confinement,
            machines: Vec::new(),
            dead_url: String::new(),
            notify: world_spec
                .notify
                .map(|n| sdd_mocks::notify::Receiver::start(n.answer()))
                .transpose()
                .map_err(io("start the notification receiver"))?,
        };
        if let Some(text) = claude_md {
            sandbox.write_file("CLAUDE.md", &text)?;
        }
        sandbox.live_lock = sandbox.seed_project(case, fixtures, start, reaper)?;
        sandbox.build_machines(case, start)?;
        Ok(sandbox)
    }

    /// The case's machines, each a copy of the seeded project.
    fn build_machines(&mut self, case: &Case, start: Timestamp) -> Result<(), HarnessError> {
        if case.machines.is_empty() {
            return Ok(());
        }
        self.dead_url = format!("http://127.0.0.1:{}", model::closed_port()?);
        for name in case.machine_names() {
            let spec = case
                .machines
                .iter()
                .find(|(k, _)| k.value == name)
                .map(|(_, v)| v);
            let skew = match spec.and_then(|s| s.skew.as_ref()) {
                Some(text) => crate::loading::duration::parse_signed(&text.value)
                    .map_err(HarnessError::Sandbox)?,
                None => jiff::SignedDuration::ZERO,
            };
            let machine = Machine::build(
                &self.root,
                self.project(),
                &self.world.origin,
                name,
                skew,
                start,
            )?;
            self.machines.push(machine);
        }
        Ok(())
    }

    /// Machine `name`.
    pub fn machine(&self, name: &str) -> Option<&Machine> {
        self.machines.iter().find(|m| m.name == name)
    }

    /// Machine `name`, to change.
    pub fn machine_mut(&mut self, name: &str) -> Result<&mut Machine, String> {
        self.machines
            .iter_mut()
            .find(|m| m.name == name)
            .ok_or_else(|| format!("no machine {name}"))
    }

    /// Sets every machine's clock to `now` plus its skew.
    pub fn set_clocks(&self, now: Timestamp) -> Result<(), HarnessError> {
        self.machines.iter().try_for_each(|m| m.set_clock(now))
    }

    /// `ticks/N-NAME/`, created: a tick's directory on machine `name`.
    pub fn machine_tick_dir(&self, n: usize, name: &str) -> Result<PathBuf, HarnessError> {
        let dir = self.root.join("ticks").join(format!("{n}-{name}"));
        std::fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
        Ok(dir)
    }

    /// The project the engine runs in.
    pub fn project(&self) -> &Path {
        &self.world.clone
    }

    /// `.sdd/loop/` in the project.
    pub fn state_dir(&self) -> PathBuf {
        self.project().join(".sdd").join("loop")
    }

    /// `ticks/N/`, created.
    pub fn tick_dir(&self, n: usize) -> Result<PathBuf, HarnessError> {
        let dir = self.root.join("ticks").join(n.to_string());
        std::fs::create_dir_all(&dir).map_err(io(format!("create {}", dir.display())))?;
        Ok(dir)
    }

    /// Keeps the directory after the sandbox is dropped; its path.
    pub fn keep(self) -> PathBuf {
        let root = self.root.clone();
        let Self {
            dir,
            tracker,
            model,
            notify,
            ..
        } = self;
        drop(tracker);
        drop(model);
        drop(notify);
        let _ = dir.into_persistent();
        root
    }

    fn seed_project(
        &self,
        case: &Case,
        fixtures: &Fixtures,
        start: Timestamp,
        reaper: &mut Reaper,
    ) -> Result<Option<u32>, HarnessError> {
        let world = &case.world;
        let project = self.project();
        if let Some(name) = &world.claude_md {
            std::fs::copy(fixtures.claude_md(&name.value), project.join("CLAUDE.md"))
                .map_err(io(format!("copy CLAUDE.md fixture {}", name.value)))?;
        }
        let mut files: Vec<_> = world.files.iter().collect();
        files.sort_by(|a, b| a.0.value.cmp(&b.0.value));
        for (path, content) in files {
            self.write_file(&path.value, content)?;
        }
        let skill = case.skill.as_str();
        let state = self.state_dir();
        let has_state = world.lock.is_some() || world.budget.is_some() || !world.history.is_empty();
        if !has_state {
            return Ok(None);
        }
        std::fs::create_dir_all(&state).map_err(io("create .sdd/loop"))?;
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700))
            .map_err(io("chmod .sdd/loop"))?;
        if let Some(budget) = &world.budget {
            let text = serde_json::to_string_pretty(budget).unwrap_or_default();
            write_private(
                &state.join(format!("{skill}.budget.json")),
                &format!("{text}\n"),
            )?;
        }
        if !world.history.is_empty() {
            let lines: String = world
                .history
                .iter()
                .map(|l| format!("{}\n", Value::Object(l.clone())))
                .collect();
            write_private(&state.join(format!("{skill}.history.jsonl")), &lines)?;
        }
        let mut live = None;
        if let Some(lock) = &world.lock {
            let (pid, process_start) = match lock.pid {
                PidSpec::Live => {
                    let holder = Command::new("cat")
                        .stdin(Stdio::piped())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .map_err(io("start a live lock holder (`cat`)"))?;
                    let pid = holder.id();
                    reaper.adopt(holder);
                    live = Some(pid);
                    (pid, OsProbe.start_time(pid))
                }
                PidSpec::Dead => {
                    let mut gone = Command::new("true")
                        .stdin(Stdio::null())
                        .spawn()
                        .map_err(io("start a short-lived process (`true`)"))?;
                    let pid = gone.id();
                    gone.wait().map_err(io("reap the short-lived process"))?;
                    (pid, None)
                }
                PidSpec::Number(pid) => (pid, None),
            };
            let record = LockRecord {
                pid,
                iteration: lock.iteration,
                started_at: lock.started_at.clone().unwrap_or_else(|| start.to_string()),
                skill: skill.to_owned(),
                process_start,
                extra: serde_json::Map::new(),
            };
            let text = serde_json::to_string(&record).unwrap_or_default();
            write_private(&state.join(format!("{skill}.lock")), &format!("{text}\n"))?;
        }
        Ok(live)
    }

    /// Writes `content` at `rel` in the project (validated: relative, no `..`).
    pub fn write_file(&self, rel: &str, content: &str) -> Result<(), HarnessError> {
        Self::write_file_in(self.project(), rel, content)
    }

    /// Writes `content` at `rel` in `project` (a machine's clone, or the project).
    pub fn write_file_in(project: &Path, rel: &str, content: &str) -> Result<(), HarnessError> {
        let path = project.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(format!("create {}", parent.display())))?;
        }
        std::fs::write(&path, content).map_err(io(format!("write {rel}")))
    }

    pub fn remove_file(&self, rel: &str) -> Result<(), HarnessError> {
        Self::remove_file_in(self.project(), rel)
    }

    /// Removes `rel` from `project`; a file already gone is no error.
    pub fn remove_file_in(project: &Path, rel: &str) -> Result<(), HarnessError> {
        match std::fs::remove_file(project.join(rel)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(io(format!("remove {rel}"))(e))
            }
            _ => Ok(()),
        }
    }

    /// A second clone of origin, for pushes made "elsewhere".
    pub fn elsewhere(&mut self) -> Result<PathBuf, HarnessError> {
        if let Some(dir) = &self.elsewhere {
            return Ok(dir.clone());
        }
        let dir = self.root.join("elsewhere");
        self.git.run(
            &self.root,
            [
                std::ffi::OsStr::new("clone"),
                "--quiet".as_ref(),
                self.world.origin.as_os_str(),
                dir.as_os_str(),
            ],
        )?;
        self.elsewhere = Some(dir.clone());
        Ok(dir)
    }

    /// Makes `qmd` answer `state` from now on.
    pub fn set_qmd(&self, state: QmdState) -> Result<(), HarnessError> {
        qmd::state::write(&self.qmd_state, state).map_err(io("write the qmd state"))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sdd_loop::rules::claude_md::ClaudeMd;

    use super::*;

    /// Regression: a backlog's `agent_logins` did nothing unless the case
    /// also named a CLAUDE.md fixture listing the same logins.
    #[test]
    fn the_backlogs_agent_logins_reach_the_engine_through_claude_md() {
        let fixtures = Fixtures::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures"));
        let backlog = Backlog::load(&fixtures.backlog("pr-with-human-feedback")).unwrap();
        let text = agent_logins_md(&backlog).expect("the fixture declares agent logins");
        let md = ClaudeMd::parse(Path::new("CLAUDE.md"), &text);
        assert_eq!(md.agent_logins(), backlog.agent_logins);
        assert_eq!(agent_logins_md(&Backlog::empty("acme/app")), None);
    }

    /// Cases sharing a backlog share one build; each gets a world of its
    /// own, and the cache's directory goes with the cache.
    #[test]
    fn a_backlog_is_built_once_and_copied_apart() {
        let fixtures = Fixtures::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures"));
        let backlog = Backlog::load(&fixtures.backlog("pr-with-human-feedback")).unwrap();
        let worlds = Worlds::new(None).unwrap();
        let cache = worlds.dir.path().to_path_buf();
        let (a, b) = (TempDir::new().unwrap(), TempDir::new().unwrap());
        let git = Git::default();
        let wa = worlds.get(&git, &backlog, a.path()).unwrap();
        let wb = worlds.get(&git, &backlog, b.path()).unwrap();
        let other = worlds
            .get(
                &git,
                &Backlog::empty("acme/app"),
                b.path().join("x").as_path(),
            )
            .unwrap();
        assert_eq!(
            std::fs::read_dir(&cache).unwrap().count(),
            2,
            "two backlogs, two builds"
        );
        assert_eq!(wa.clone, a.path().join("work"));
        assert_eq!(wb.origin, b.path().join("origin.git"));
        assert_ne!(other.origin, wb.origin);
        for branch in ["main", &backlog.pull_requests[0].branch] {
            assert_eq!(
                git::ref_sha(&git, &wa.origin, branch).unwrap(),
                git::ref_sha(&git, &wb.origin, branch).unwrap()
            );
        }
        drop(worlds);
        assert!(!cache.exists());
    }
}
