//! `sdd-evals`: capture the process environment, run one command, exit
//! with its code.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let code = {
        let mut env = sdd_harness::cli::Env {
            stdout: &mut stdout,
            stderr: &mut stderr,
            vars: std::env::vars().collect(),
            cwd: std::env::current_dir().unwrap_or_else(|_| ".".into()),
            exe: std::env::current_exe().unwrap_or_default(),
            stderr_is_terminal: std::io::stderr().is_terminal(),
        };
        sdd_harness::cli::main_with(std::env::args_os(), &mut env)
    };
    let _ = stdout.flush();
    ExitCode::from(code)
}
