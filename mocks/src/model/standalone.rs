//! `mock-model` as a process: serve a script on 127.0.0.1 for a real CLI
//! (or `curl`), or sum a log's usage.
//!
//! `mock-model --script FILE` prints its base URL as one line on stdout,
//! then serves until Ctrl-C, SIGTERM, or — when stdin is a pipe — until
//! stdin closes, so a parent that dies takes the server with it.
//! `mock-model totals LOG` prints the usage a `--log` file says was
//! returned, as one JSON object.

use std::io::Write;
use std::path::PathBuf;

use super::log::{self, Totals};
use super::script::Script;
use super::server::{MockModel, StartError};

pub const EXIT_STOPPED: u8 = 0;
pub const EXIT_BAD_INPUT: u8 = 65;
pub const EXIT_UNAVAILABLE: u8 = 69;
pub const EXIT_CANT_CREATE: u8 = 73;
pub const EXIT_IO: u8 = 74;

const EXIT_TABLE: &str = "\
Serving stops on Ctrl-C, SIGTERM, or (when stdin is a pipe) when stdin closes.
Claude Code: ANTHROPIC_BASE_URL=URL. Codex: a model provider whose base_url is URL/v1.
GET URL/__log gives the request log as JSON lines; GET URL/__totals its token totals.

Exit status:
  0   stopped (totals: printed)
  2   usage error
  65  the script or the log cannot be read (the error names file:line:column)
  69  the port cannot be bound
  73  the --log file cannot be created
  74  the --log file could not be written while serving";

/// A scripted model server for the Anthropic Messages API and the OpenAI
/// Responses API, on 127.0.0.1.
#[derive(Debug, clap::Parser)]
#[command(
    name = "mock-model",
    version,
    after_help = EXIT_TABLE,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The script (YAML) to serve.
    #[arg(long, value_name = "FILE", required = true)]
    pub script: Option<PathBuf>,
    /// Port on 127.0.0.1 (default: a free one).
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// Append the request log to this file, one JSON object a line.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Require this API key (`x-api-key` or `Authorization: Bearer`).
    /// Whatever key a request presents is redacted from the log anyway.
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print the usage a log returned (in all and per model) as JSON.
    Totals {
        /// A file written by `mock-model --log`.
        log: PathBuf,
    },
}

/// Runs `args`; the exit status.
pub fn run(args: &Args, watch_stdin: bool, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match (&args.command, &args.script) {
        (Some(Command::Totals { log }), _) => totals(log, out, err),
        (None, Some(script)) => serve(args, script, watch_stdin, out, err),
        (None, None) => {
            let _ = writeln!(err, "error: --script FILE is required");
            2
        }
    }
}

fn totals(path: &std::path::Path, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match log::read(path) {
        Ok(entries) => {
            let totals = Totals::of(&entries);
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string(&totals).unwrap_or_default()
            );
            EXIT_STOPPED
        }
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            let _ = writeln!(err, "help: give the file `mock-model --log` wrote");
            EXIT_BAD_INPUT
        }
    }
}

fn serve(
    args: &Args,
    script: &std::path::Path,
    watch_stdin: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let script = match Script::load(script) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(err, "{}", e.render());
            return EXIT_BAD_INPUT;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(err, "error: cannot start the runtime: {e}");
            return EXIT_UNAVAILABLE;
        }
    };
    let mut builder = MockModel::builder(script);
    if let Some(port) = args.port {
        builder = builder.port(port);
    }
    if let Some(log) = &args.log {
        builder = builder.log_file(log);
    }
    if let Some(key) = &args.api_key {
        builder = builder.api_key(key);
    }
    let code = runtime.block_on(async {
        let model = match builder.start().await {
            Ok(m) => m,
            Err(e @ StartError::Bind { .. }) => {
                let _ = writeln!(err, "error: {e}");
                let _ = writeln!(
                    err,
                    "help: pick another --port, or leave it out for a free one"
                );
                return EXIT_UNAVAILABLE;
            }
            Err(e @ StartError::Log { .. }) => {
                let _ = writeln!(err, "error: {e}");
                let _ = writeln!(err, "help: give --log a path in a writable directory");
                return EXIT_CANT_CREATE;
            }
        };
        let _ = writeln!(out, "{}", model.uri());
        let _ = out.flush();
        crate::serve::wait_for_stop(watch_stdin).await;
        let write_error = model.log_write_error();
        drop(model);
        match write_error {
            Some(e) => {
                let _ = writeln!(err, "error: {e}");
                let _ = writeln!(
                    err,
                    "help: the log is incomplete; free space or fix permissions and run again"
                );
                EXIT_IO
            }
            None => EXIT_STOPPED,
        }
    });
    runtime.shutdown_background();
    code
}
