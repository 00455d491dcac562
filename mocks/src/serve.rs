//! What the standalone servers (`mock-tracker`, `mock-model`) share: how a
//! server started from a shell or a harness knows it is time to stop.

use std::io::Read;

/// Waits for Ctrl-C, SIGTERM, or (when `watch_stdin`) the end of stdin —
/// the last is how a harness stops a server it started: it closes the pipe,
/// and a harness that dies closes it too.
pub(crate) async fn wait_for_stop(watch_stdin: bool) {
    let (eof_tx, eof_rx) = tokio::sync::oneshot::channel::<()>();
    if watch_stdin {
        // A plain thread: tokio's stdin would hold runtime shutdown hostage
        // to a read that never returns.
        std::thread::spawn(move || {
            let mut sink = [0u8; 256];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
            let _ = eof_tx.send(());
        });
    } else {
        std::mem::forget(eof_tx);
    }
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
        _ = eof_rx => {}
    }
}
