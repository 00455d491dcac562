//! `mock-tracker`: imitates the GitHub REST v3 API for one repository —
//! issues, pull requests, comments, review threads, labels, merges — from
//! a fixture backlog, on 127.0.0.1, until stopped. Prints its base URL.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use sdd_mocks::tracker::standalone;

fn main() -> ExitCode {
    let args = standalone::Args::parse();
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let code = standalone::run(&args, standalone::stdin_is_pipe(), &mut stdout, &mut stderr);
    let _ = stdout.flush();
    ExitCode::from(code)
}
