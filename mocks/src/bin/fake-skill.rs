//! `fake-skill`: imitates a wrapped `/sdd:work` or `/sdd:review` skill for
//! the engine's tests — reads `SDD_LOOP_REQUEST`, follows the tick of
//! `FAKE_SKILL_SCRIPT` for this invocation, streams `SDD_LOOP_EVENTS`,
//! writes `SDD_LOOP_RESULT`, and exits as scripted. Its own failures are
//! prefixed `[fake-skill]` and exit 90–94.

use std::process::ExitCode;

use sdd_loop::state::protocol::{ENV_EVENTS, ENV_REQUEST, ENV_RESULT};
use sdd_mocks::skill::{self, SkillEnv};

fn main() -> ExitCode {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let text = |name: &str| var(name).map(|v| v.to_string_lossy().into_owned());
    let env = SkillEnv {
        request: var(ENV_REQUEST).map(Into::into),
        result: var(ENV_RESULT).map(Into::into),
        events: var(ENV_EVENTS).map(Into::into),
        script: var(skill::ENV_SCRIPT).map(Into::into),
        counter: var(skill::ENV_COUNTER).map(Into::into),
        tracker_url: text(skill::ENV_TRACKER_URL),
        repo: text(skill::ENV_REPO),
        token: text(skill::ENV_TRACKER_TOKEN).or_else(|| text(skill::ENV_GITHUB_TOKEN)),
        cwd: std::env::current_dir().unwrap_or_default(),
        pid: std::process::id(),
    };
    let code = skill::run(&env, &mut std::io::stderr().lock());
    ExitCode::from(code)
}
