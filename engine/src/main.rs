//! `sdd-loop`: parse, run one command, exit with its code.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let code = {
        let mut env = sdd_loop::cli::Env {
            stdout: &mut stdout,
            stderr: &mut stderr,
        };
        sdd_loop::cli::main_with(std::env::args_os(), &mut env)
    };
    let _ = stdout.flush();
    ExitCode::from(code)
}
