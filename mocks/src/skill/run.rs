//! One invocation of the fake skill: read the engine's request, pick this
//! invocation's tick from the script, perform its actions in order against
//! the mock tracker, real git and `qmd` on PATH — reporting each as an
//! event as it happens — then write the result and exit as scripted.
//!
//! Failure paths, each with its own exit status ([`super::exit`]):
//! a failed qmd call prints `qmd-unreachable: <captured error>` on stderr,
//! writes the result so far (as the tick's `result:` says) and exits 78,
//! as the real skill does; the fake skill's own failures (bad script or
//! request, tracker or git error, unwritable files) print `[fake-skill]`
//! diagnostics, write no result and exit 90–94.

use std::io::Write;
use std::path::{Path, PathBuf};

use sdd_loop::state::protocol::{EX_QMD_UNREACHABLE, QMD_SENTINEL, SkillRequest};

use super::act::{ActError, Actor};
use super::counter;
use super::exit;
use super::report::{self, Report};
use super::script::{Chosen, Script, Tick};

/// What the binary gathers from its environment.
#[derive(Debug, Clone, Default)]
pub struct SkillEnv {
    /// `SDD_LOOP_REQUEST`.
    pub request: Option<PathBuf>,
    /// `SDD_LOOP_RESULT`.
    pub result: Option<PathBuf>,
    /// `SDD_LOOP_EVENTS`.
    pub events: Option<PathBuf>,
    /// `FAKE_SKILL_SCRIPT`.
    pub script: Option<PathBuf>,
    /// `FAKE_SKILL_COUNTER`; default `{script}.count`.
    pub counter: Option<PathBuf>,
    /// `SDD_LOOP_TRACKER_URL`, e.g. `http://127.0.0.1:4567`.
    pub tracker_url: Option<String>,
    /// `SDD_LOOP_REPO` (`owner/name`); default: the request's repository.
    pub repo: Option<String>,
    /// `SDD_LOOP_TRACKER_TOKEN`, else `GITHUB_TOKEN`.
    pub token: Option<String>,
    /// The working clone the skill runs in.
    pub cwd: PathBuf,
    pub pid: u32,
}

fn diag(err: &mut dyn Write, text: &str) {
    for line in text.lines() {
        let _ = writeln!(err, "[fake-skill] {line}");
    }
    let _ = err.flush();
}

fn load_request(env: &SkillEnv) -> Result<SkillRequest, String> {
    let path = env
        .request
        .as_ref()
        .ok_or("SDD_LOOP_REQUEST is not set; the engine sets it to the request file's path")?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the request {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "the request {} is not a valid skill request: {e}",
            path.display()
        )
    })
}

fn counter_path(env: &SkillEnv, script: &Path) -> PathBuf {
    env.counter.clone().unwrap_or_else(|| {
        let mut name = script.as_os_str().to_owned();
        name.push(".count");
        PathBuf::from(name)
    })
}

/// One invocation; the exit status. Does not return after `barrier` or
/// `hang`.
pub fn run(env: &SkillEnv, err: &mut dyn Write) -> u8 {
    let request = match load_request(env) {
        Ok(r) => r,
        Err(e) => {
            diag(err, &format!("error: {e}"));
            return exit::BAD_REQUEST;
        }
    };
    let Some(result_path) = env.result.clone() else {
        diag(
            err,
            "error: SDD_LOOP_RESULT is not set; the engine sets it to where the result goes",
        );
        return exit::BAD_REQUEST;
    };
    let Some(script_path) = env.script.clone() else {
        diag(
            err,
            "error: FAKE_SKILL_SCRIPT is not set\nhelp: point it at a fake-skill script (format: fixtures/README.md)",
        );
        return exit::BAD_SCRIPT;
    };
    let script = match Script::load(&script_path) {
        Ok(s) => s,
        Err(e) => {
            diag(err, &e.render());
            return exit::BAD_SCRIPT;
        }
    };
    let counter = counter_path(env, &script_path);
    let chosen = match script.choose(request.iteration, || counter::advance(&counter)) {
        Ok(Some(chosen)) => chosen,
        Ok(None) => {
            diag(
                err,
                &format!(
                    "error: {} has no tick for iteration {} and no `default`\nhelp: add a tick (or `default:`); the invocation counter is {}",
                    script_path.display(),
                    request.iteration,
                    counter.display()
                ),
            );
            return exit::BAD_SCRIPT;
        }
        Err(e) => {
            diag(
                err,
                &format!("error: invocation counter {}: {e}", counter.display()),
            );
            return exit::IO;
        }
    };
    let tick: &Tick = chosen.tick();
    if matches!(chosen, Chosen::Default(_)) && !script.ticks.is_empty() {
        diag(
            err,
            &format!(
                "no tick left for iteration {}; running `default`",
                request.iteration
            ),
        );
    }
    let report = match Report::new(env.events.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            diag(err, &format!("error: cannot open the events stream: {e}"));
            return exit::IO;
        }
    };
    let mut report = report;
    let mut actor = Actor::new(
        env.cwd.clone(),
        env.pid,
        env.tracker_url.clone(),
        env.repo.clone().or(request.repository.clone()),
        env.token.clone(),
    );
    actor.issues = request.issues.iter().map(|i| i.number).collect();
    let mut code = u8::try_from(tick.exit.value).unwrap_or(u8::MAX);
    for action in &tick.actions {
        match actor.act(action, &mut report, err) {
            Ok(()) => {}
            Err(ActError::Qmd(captured)) => {
                let _ = writeln!(err, "{QMD_SENTINEL}: {captured}");
                code = u8::try_from(EX_QMD_UNREACHABLE).unwrap_or(78);
                break;
            }
            Err(e) => {
                let status = match e {
                    ActError::Tracker(_) => exit::TRACKER,
                    ActError::Git(_) => exit::GIT,
                    ActError::Io(_) | ActError::Qmd(_) => exit::IO,
                };
                diag(err, &format!("error: {action:?} failed: {e}"));
                return status;
            }
        }
    }
    let result = report.result(tick.summary.as_deref());
    if let Err(e) = report::write_result(&result_path, tick.result, &result) {
        diag(
            err,
            &format!(
                "error: cannot write the result {}: {e}",
                result_path.display()
            ),
        );
        return exit::IO;
    }
    let _ = err.flush();
    code
}
