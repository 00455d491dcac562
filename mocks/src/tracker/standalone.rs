//! `mock-tracker` as a standalone server: serve a fixture backlog on
//! 127.0.0.1 for manual use (`curl`) or for a harness that wants the
//! tracker in another process.
//!
//! It prints its base URL as one line on stdout, then serves until Ctrl-C,
//! SIGTERM, or — when stdin is a pipe — until stdin closes, so a parent
//! that dies takes the server with it. Exit status: 0 stopped, 2 usage,
//! 65 the backlog cannot be loaded, 69 the port cannot be bound.

use std::io::Write;
use std::path::PathBuf;

use super::server::MockTracker;
use crate::fixture::{Backlog, LineEndings};

pub const EXIT_STOPPED: u8 = 0;
pub const EXIT_BAD_BACKLOG: u8 = 65;
pub const EXIT_UNAVAILABLE: u8 = 69;

const EXIT_TABLE: &str = "\
Stops on Ctrl-C, SIGTERM, or (when stdin is a pipe) when stdin closes.

Exit status:
  0   stopped
  2   usage error
  65  the backlog file cannot be loaded (the error names file:line:column)
  69  the port cannot be bound";

/// A GitHub-REST-shaped mock tracker serving a fixture backlog on 127.0.0.1.
#[derive(Debug, clap::Parser)]
#[command(name = "mock-tracker", version, after_help = EXIT_TABLE)]
pub struct Args {
    /// The fixture backlog (YAML) to serve.
    #[arg(long, value_name = "FILE")]
    pub backlog: PathBuf,
    /// Port on 127.0.0.1 (default: a free one).
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// Require `Authorization: Bearer T` (or `token T`) on every request.
    #[arg(long, value_name = "T")]
    pub token: Option<String>,
    /// A bare git repository whose branches give live PR head SHAs.
    #[arg(long, value_name = "PATH")]
    pub origin: Option<PathBuf>,
    /// The login API callers act as.
    #[arg(long, value_name = "LOGIN")]
    pub viewer: Option<String>,
    /// Serve every body with these line endings (`crlf`: as GitHub returns
    /// text from its web editor), whatever the backlog says.
    #[arg(long, value_name = "lf|crlf", value_parser = ["lf", "crlf"])]
    pub line_endings: Option<String>,
}

/// Whether stdin is a pipe or a socket (so its closing means "stop").
pub fn stdin_is_pipe() -> bool {
    rustix::fs::fstat(std::io::stdin()).is_ok_and(|st| {
        matches!(
            rustix::fs::FileType::from_raw_mode(st.st_mode),
            rustix::fs::FileType::Fifo | rustix::fs::FileType::Socket
        )
    })
}

/// Serves until stopped; the exit status.
pub fn run(args: &Args, watch_stdin: bool, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let backlog = match Backlog::load(&args.backlog) {
        Ok(mut b) => {
            match args.line_endings.as_deref() {
                Some("crlf") => b.line_endings = LineEndings::Crlf,
                Some(_) => b.line_endings = LineEndings::Lf,
                None => {}
            }
            b
        }
        Err(e) => {
            let _ = writeln!(err, "{}", e.render());
            return EXIT_BAD_BACKLOG;
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
    let mut builder = MockTracker::builder().backlog(backlog);
    if let Some(port) = args.port {
        builder = builder.port(port);
    }
    if let Some(token) = &args.token {
        builder = builder.token(token);
    }
    if let Some(origin) = &args.origin {
        builder = builder.origin(origin);
    }
    if let Some(viewer) = &args.viewer {
        builder = builder.viewer(viewer);
    }
    let code = runtime.block_on(async {
        let tracker = match builder.start().await {
            Ok(t) => t,
            Err(e) => {
                let _ = writeln!(
                    err,
                    "error: cannot listen on 127.0.0.1:{}: {e}",
                    args.port.unwrap_or(0)
                );
                let _ = writeln!(
                    err,
                    "help: pick another --port, or leave it out for a free one"
                );
                return EXIT_UNAVAILABLE;
            }
        };
        let _ = writeln!(out, "{}", tracker.uri());
        let _ = out.flush();
        crate::serve::wait_for_stop(watch_stdin).await;
        drop(tracker);
        EXIT_STOPPED
    });
    runtime.shutdown_background();
    code
}
