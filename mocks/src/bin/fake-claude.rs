//! `fake-claude`: imitates Claude Code run headless (`claude -p --output-format stream-json --verbose`) for the
//! engine's agent adapter — follows the entry of `FAKE_AGENT_SCRIPT` for
//! this invocation, acts on the world, and prints the real CLI's stream.
//! It never speaks the engine's protocol. Its own failures are prefixed
//! `[fake-claude]` and exit 90–94.

use std::process::ExitCode;

fn main() -> ExitCode {
    let (mut stdin, mut stdout, mut stderr) = (
        std::io::stdin().lock(),
        std::io::stdout().lock(),
        std::io::stderr().lock(),
    );
    let code = sdd_mocks::agent::claude::main(sdd_mocks::agent::Process {
        args: std::env::args_os().collect(),
        vars: std::env::vars().collect(),
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
        cwd: std::env::current_dir().unwrap_or_default(),
        pid: std::process::id(),
    });
    ExitCode::from(code)
}
