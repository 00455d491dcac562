//! `mock-qmd`: imitates the `qmd` markdown search CLI (`status`, `search`,
//! `vsearch`, `query`, `update`, `embed`, `get`) over the collections in
//! `$MOCK_QMD_FIXTURES`, up, down or slow as `$MOCK_QMD_STATE` says.
//! Installed as `qmd` on a sandbox PATH.

use std::io::Write;
use std::process::ExitCode;

use sdd_mocks::qmd::{self, QmdEnv};

fn main() -> ExitCode {
    let env = QmdEnv {
        fixtures: std::env::var_os(qmd::ENV_FIXTURES).map(Into::into),
        state: std::env::var_os(qmd::ENV_STATE).map(Into::into),
    };
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let code = qmd::run(
        std::env::args_os(),
        &env,
        &mut stdout,
        &mut stderr,
        &mut std::thread::sleep,
    );
    let _ = stdout.flush();
    ExitCode::from(code)
}
