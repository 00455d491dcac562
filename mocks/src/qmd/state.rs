//! How `mock-qmd` behaves this tick, read from a one-line state file the
//! harness rewrites between ticks (`MOCK_QMD_STATE`):
//!
//! - `up` — answer normally (also: an empty or missing file);
//! - `down` — fail as the real tool does when it cannot reach its index or
//!   daemon: an error on stderr, exit status 1;
//! - `slow <ms>` — answer normally after `<ms>` milliseconds.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Also a YAML value for scenarios: `up`, `down`, `{ slow: 250 }`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum QmdState {
    #[default]
    Up,
    Down,
    /// Milliseconds.
    Slow(u64),
}

impl QmdState {
    pub fn delay(self) -> Option<Duration> {
        match self {
            QmdState::Slow(ms) => Some(Duration::from_millis(ms)),
            QmdState::Up | QmdState::Down => None,
        }
    }
}

impl fmt::Display for QmdState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QmdState::Up => f.write_str("up"),
            QmdState::Down => f.write_str("down"),
            QmdState::Slow(ms) => write!(f, "slow {ms}"),
        }
    }
}

/// State file text that is none of the three.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("state `{0}` is not `up`, `down` or `slow <ms>`")]
pub struct BadState(pub String);

impl FromStr for QmdState {
    type Err = BadState;
    fn from_str(text: &str) -> Result<Self, BadState> {
        let words: Vec<&str> = text.split_whitespace().collect();
        match words.as_slice() {
            [] | ["up"] => Ok(QmdState::Up),
            ["down"] => Ok(QmdState::Down),
            ["slow", ms] => ms
                .parse()
                .map(QmdState::Slow)
                .map_err(|_| BadState(text.trim().to_owned())),
            _ => Err(BadState(text.trim().to_owned())),
        }
    }
}

/// The state in `path`; a missing file (or no path) is `up`.
pub fn read(path: Option<&Path>) -> Result<QmdState, StateFileError> {
    let Some(path) = path else {
        return Ok(QmdState::Up);
    };
    match std::fs::read_to_string(path) {
        Ok(text) => text.parse().map_err(|e: BadState| StateFileError {
            path: path.display().to_string(),
            detail: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(QmdState::Up),
        Err(e) => Err(StateFileError {
            path: path.display().to_string(),
            detail: e.to_string(),
        }),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("state file {path}: {detail}")]
pub struct StateFileError {
    pub path: String,
    pub detail: String,
}

/// Writes `state` to `path` atomically (temp file + rename), so a qmd
/// call racing the harness never reads half a line.
pub fn write(path: &Path, state: QmdState) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, format!("{state}\n"))?;
    std::fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_states_and_refuses_others() {
        assert_eq!("".parse::<QmdState>(), Ok(QmdState::Up));
        assert_eq!("up\n".parse::<QmdState>(), Ok(QmdState::Up));
        assert_eq!(" down ".parse::<QmdState>(), Ok(QmdState::Down));
        assert_eq!("slow 250".parse::<QmdState>(), Ok(QmdState::Slow(250)));
        assert!("slow".parse::<QmdState>().is_err());
        assert!("sideways".parse::<QmdState>().is_err());
    }

    #[test]
    fn missing_file_is_up_and_written_state_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("qmd.state");
        assert_eq!(read(Some(&path)), Ok(QmdState::Up));
        write(&path, QmdState::Slow(40)).unwrap();
        assert_eq!(read(Some(&path)), Ok(QmdState::Slow(40)));
        let yaml: Vec<QmdState> =
            crate::yaml::parse(Path::new("s.yaml"), "[up, down, {slow: 5}]", "h").unwrap();
        assert_eq!(yaml, vec![QmdState::Up, QmdState::Down, QmdState::Slow(5)]);
    }
}
