//! `sdd-loop`: capture the process environment, run one command, exit with
//! its code.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    // Claude Code runs the statusLine command at every refresh: the user's
    // own status command replaces this process once the windows are read.
    #[cfg(unix)]
    {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        let chained = std::panic::catch_unwind(|| sdd_loop::cli::statusline::main_in_place(&args));
        match chained {
            Ok(Some(code)) => return ExitCode::from(code),
            Ok(None) => {}
            Err(_) => return ExitCode::from(sdd_loop::exit::INTERNAL),
        }
    }
    let signals = sdd_loop::skill::runner::SignalFlag::install().ok();
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let stdin = std::io::stdin();
    let (terminal, piped) = if stdin.is_terminal() {
        (
            Some(Box::new(stdin.lock()) as Box<dyn std::io::BufRead>),
            None,
        )
    } else {
        (None, Some(Box::new(stdin.lock()) as Box<dyn std::io::Read>))
    };
    let code = {
        let mut env = sdd_loop::cli::Env {
            stdout: &mut stdout,
            stderr: &mut stderr,
            vars: std::env::vars().collect(),
            cwd: std::env::current_dir().unwrap_or_else(|_| ".".into()),
            terminal,
            stdin: piped,
            interrupts: signals
                .as_ref()
                .map(|s| s as &dyn sdd_loop::skill::runner::Interrupts),
        };
        // A bug must end as the documented internal-error status, not as
        // an unwinding panic's 101; the lock, if held, is released by drop.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            sdd_loop::cli::main_with(std::env::args_os(), &mut env)
        }))
        .unwrap_or(sdd_loop::exit::INTERNAL)
    };
    let _ = stdout.flush();
    ExitCode::from(code)
}
