//! Which transcript `--transcript` means: Claude Code writes a session to
//! `<config dir>/projects/<slug>/<session id>.jsonl`, where the config dir
//! is `$CLAUDE_CONFIG_DIR` or `~/.claude` and `<slug>` is the project's
//! absolute path with every character outside ASCII `[A-Za-z0-9]` replaced
//! by `-` ([`project_slug`]). `auto` takes the session's own file when the
//! session id is known (Claude Code exports `CLAUDE_CODE_SESSION_ID` to the
//! commands it runs), else the newest `*.jsonl` of the project's folder
//! ([`locate`]). [`ClaudeDirs`] is what the CLI found in the environment;
//! nothing here reads it.

use std::io;
use std::path::{Path, PathBuf};

use super::TranscriptError;

/// Claude Code shortens a slug past this many characters and appends a
/// hash of the path.
pub const MAX_SLUG_LEN: usize = 200;

/// Where Claude Code keeps its data, as the CLI found it in the
/// environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeDirs {
    /// `$CLAUDE_CONFIG_DIR`, when set and not empty.
    pub config_dir: Option<PathBuf>,
    /// The user's home directory (`$HOME`).
    pub home: PathBuf,
    /// `$CLAUDE_CODE_SESSION_ID`: the session whose command runs `end`.
    pub session_id: Option<String>,
}

/// Which transcript to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TranscriptChoice {
    /// The session's own file, else the newest `*.jsonl` of the project's
    /// folder.
    Auto,
    /// This file.
    Path(PathBuf),
}

/// The folder name Claude Code gives `project`: every character outside
/// ASCII `[A-Za-z0-9]` becomes `-`, one per UTF-16 code unit as in the
/// JavaScript that makes it (`/home/me/my_app.v2` → `-home-me-my-app-v2`).
/// Not shortened: see [`MAX_SLUG_LEN`].
pub fn project_slug(project: &Path) -> String {
    project
        .to_string_lossy()
        .chars()
        .flat_map(|c| {
            let (kept, width) = if c.is_ascii_alphanumeric() {
                (c, 1)
            } else {
                ('-', c.len_utf16())
            };
            std::iter::repeat_n(kept, width)
        })
        .collect()
}

impl ClaudeDirs {
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub fn config_dir(&self) -> PathBuf {
        self.config_dir
            .clone()
            .unwrap_or_else(|| self.home.join(".claude"))
    }

    /// The folder holding `project`'s transcripts. A slug longer than
    /// [`MAX_SLUG_LEN`] is cut there and given a hash suffix whose
    /// algorithm has changed between Claude Code builds, so it is found by
    /// its prefix instead of recomputed.
    pub fn project_dir(&self, project: &Path) -> Result<PathBuf, TranscriptError> {
        if !project.is_absolute() {
            return Err(TranscriptError::RelativeProject {
                project: project.to_path_buf(),
            });
        }
        let projects = self.config_dir().join("projects");
        let slug = project_slug(project);
        let missing = |dir: PathBuf| TranscriptError::NoProjectFolder {
            project: project.to_path_buf(),
            dir,
        };
        if slug.len() <= MAX_SLUG_LEN {
            let dir = projects.join(&slug);
            return if dir.is_dir() {
                Ok(dir)
            } else {
                Err(missing(dir))
            };
        }
        let prefix = format!("{}-", &slug[..MAX_SLUG_LEN]);
        let entries = match std::fs::read_dir(&projects) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(missing(projects.join(format!("{prefix}*"))));
            }
            Err(source) => {
                return Err(TranscriptError::List {
                    path: projects,
                    source,
                });
            }
        };
        let mut candidates: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| {
                e.file_name().to_str().is_some_and(|name| {
                    name.strip_prefix(&prefix).is_some_and(|hash| {
                        !hash.is_empty() && hash.bytes().all(|b| b.is_ascii_alphanumeric())
                    })
                })
            })
            .map(|e| e.path())
            .collect();
        candidates.sort();
        match candidates.len() {
            0 => Err(missing(projects.join(format!("{prefix}*")))),
            1 => Ok(candidates.remove(0)),
            _ => Err(TranscriptError::AmbiguousProjectFolder {
                project: project.to_path_buf(),
                candidates,
            }),
        }
    }

    /// `<session id>.jsonl` in the project's folder, else in any project
    /// folder (the session may have started in another directory than the
    /// one `end` runs in). `None` without a session id, or when no folder
    /// holds that file.
    fn session_file(&self, project: &Path) -> Option<PathBuf> {
        let id = self.session_id.as_deref()?;
        // An id is a UUID; anything that could step out of a folder is not.
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return None;
        }
        let name = format!("{id}.jsonl");
        if let Ok(dir) = self.project_dir(project) {
            let path = dir.join(&name);
            if path.is_file() {
                return Some(path);
            }
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.config_dir().join("projects"))
            .ok()?
            .filter_map(Result::ok)
            .map(|e| e.path().join(&name))
            .filter(|p| p.is_file())
            .collect();
        found.sort();
        found.into_iter().next()
    }
}

/// The transcript `choice` names for `project`.
pub fn locate(
    choice: &TranscriptChoice,
    dirs: &ClaudeDirs,
    project: &Path,
) -> Result<PathBuf, TranscriptError> {
    match choice {
        TranscriptChoice::Path(path) => Ok(path.clone()),
        TranscriptChoice::Auto => match dirs.session_file(project) {
            Some(path) => Ok(path),
            None => newest_transcript(&dirs.project_dir(project)?),
        },
    }
}

/// The `*.jsonl` files directly in `dir`, sorted by path.
pub(super) fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>, TranscriptError> {
    let list_err = |source| TranscriptError::List {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(list_err)? {
        let entry = entry.map_err(list_err)?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "jsonl")
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The most recently modified `*.jsonl` in `dir` (the later name on a tie).
pub fn newest_transcript(dir: &Path) -> Result<PathBuf, TranscriptError> {
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for path in jsonl_files(dir)? {
        let modified = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .map_err(|source| TranscriptError::Read {
                path: path.clone(),
                source,
            })?;
        if newest.as_ref().is_none_or(|(at, _)| modified >= *at) {
            newest = Some((modified, path));
        }
    }
    newest
        .map(|(_, path)| path)
        .ok_or_else(|| TranscriptError::NoTranscripts {
            dir: dir.to_path_buf(),
        })
}

/// Every `*.jsonl` under `dir`, recursively, without following links.
fn jsonl_tree(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), TranscriptError> {
    let list_err = |source| TranscriptError::List {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(list_err)? {
        let entry = entry.map_err(list_err)?;
        entries.push((entry.path(), entry.file_type().map_err(list_err)?));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, kind) in entries {
        if kind.is_dir() {
            jsonl_tree(&path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
    Ok(())
}

/// The subagent transcripts of the session whose transcript is `session`:
/// `<session id>/subagents/**/*.jsonl`.
pub(super) fn subagent_files(session: &Path) -> Result<Vec<PathBuf>, TranscriptError> {
    let mut out = Vec::new();
    if let Some(stem) = session.file_stem() {
        let dir = session.with_file_name(stem).join("subagents");
        if dir.is_dir() {
            jsonl_tree(&dir, &mut out)?;
        }
    }
    Ok(out)
}

/// The `agent-*.jsonl` files beside `session`: where builds before the
/// `subagents/` folder wrote their subagents.
pub(super) fn sibling_agent_files(session: &Path) -> Result<Vec<PathBuf>, TranscriptError> {
    let dir = match session.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    Ok(jsonl_files(dir)?
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("agent-"))
        })
        .collect())
}
