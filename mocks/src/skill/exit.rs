//! The fake skill's exit statuses. Its own failures use 90–99, which a
//! script may not use, so a test never mistakes a broken fixture for the
//! behaviour it scripted. Everything else is the script's `exit:` — or 78
//! (`EX_QMD_UNREACHABLE`) after a failed qmd call.

/// The script is missing, unreadable, invalid, or has no tick for this
/// invocation.
pub const BAD_SCRIPT: u8 = 90;
/// The engine's request (`SDD_LOOP_REQUEST`) is missing or invalid.
pub const BAD_REQUEST: u8 = 91;
/// The tracker is not configured or answered with an error.
pub const TRACKER: u8 = 92;
/// A git command failed.
pub const GIT: u8 = 93;
/// The result, events, counter or barrier file cannot be written.
pub const IO: u8 = 94;

/// Statuses a script may not use.
pub fn is_reserved(code: i32) -> bool {
    (90..=99).contains(&code)
}
