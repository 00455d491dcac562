//! The exit statuses of `sdd-evals`, one named constant each, as `--help`
//! documents them.

/// Every case passed (or: the command succeeded).
pub const OK: u8 = 0;
/// At least one case failed.
pub const FAILED: u8 = 1;
/// Usage error.
pub const USAGE: u8 = 64;
/// A case file (or the `--compare` benchmark) does not parse or validate.
pub const BAD_CASE: u8 = 65;
/// A binary the harness needs is missing.
pub const UNAVAILABLE: u8 = 69;
/// A file cannot be written.
pub const CANT_WRITE: u8 = 73;
