//! `mock-model`: imitates the Anthropic Messages API and the OpenAI
//! Responses API for one scripted conversation, on 127.0.0.1, until
//! stopped — so the real Claude Code and Codex run offline. Prints its
//! base URL; `mock-model totals LOG` sums a request log's usage.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use sdd_mocks::model::standalone;
use sdd_mocks::tracker::standalone::stdin_is_pipe;

fn main() -> ExitCode {
    let args = standalone::Args::parse();
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let code = standalone::run(&args, stdin_is_pipe(), &mut stdout, &mut stderr);
    let _ = stdout.flush();
    ExitCode::from(code)
}
