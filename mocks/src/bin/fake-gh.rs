//! `fake-gh`: GitHub's `gh` CLI, the pull-request subset, against the mock
//! tracker — installed as `gh` on a real agent's `PATH` (see
//! [`sdd_mocks::gh`]).

use std::process::ExitCode;

use sdd_mocks::gh::{self, GhEnv};

fn main() -> ExitCode {
    let text = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let env = GhEnv {
        tracker_url: text(sdd_mocks::skill::ENV_TRACKER_URL),
        repo: text("GH_REPO").or_else(|| text(sdd_mocks::skill::ENV_REPO)),
        token: text("GH_TOKEN")
            .or_else(|| text(sdd_mocks::skill::ENV_GITHUB_TOKEN))
            .or_else(|| text(sdd_mocks::skill::ENV_TRACKER_TOKEN)),
    };
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let cwd = std::env::current_dir().unwrap_or_default();
    let code = gh::run(
        &args,
        &env,
        &cwd,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    ExitCode::from(code)
}
