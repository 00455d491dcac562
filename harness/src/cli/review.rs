//! `sdd-evals review`: the snapshots a test run left to review — every
//! `*.snap.new` that insta wrote beside a stored `.snap` whose test saw
//! something else — shown as a diff of their contents, then accepted
//! (written over the stored snapshot, as `cargo insta review` would) or
//! rejected (deleted). Needs nothing installed beyond the workspace.

use std::path::{Path, PathBuf};

use insta::Snapshot;
use insta::internals::SnapshotContents;
use similar::TextDiff;

use super::args::ReviewArgs;
use super::env::{Env, error};
use super::exit;

/// Directories never searched: build output, git, npm.
const SKIPPED: [&str; 3] = ["target", ".git", "node_modules"];

/// Every `*.snap.new` under `roots`, sorted.
pub fn pending(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack: Vec<PathBuf> = roots.to_vec();
    while let Some(path) = stack.pop() {
        if path.is_file() {
            if path.to_string_lossy().ends_with(".snap.new") {
                found.push(path);
            }
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if SKIPPED.iter().any(|s| name == *s) {
                continue;
            }
            stack.push(entry.path());
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The stored snapshot a `.snap.new` would replace.
pub fn stored_for(new: &Path) -> PathBuf {
    let text = new.to_string_lossy();
    PathBuf::from(text.strip_suffix(".new").unwrap_or(&text).to_owned())
}

fn contents(path: &Path) -> Result<String, String> {
    let snapshot = Snapshot::from_file(path).map_err(|e| e.to_string())?;
    match snapshot.contents() {
        SnapshotContents::Text(text) => Ok(text.to_string()),
        SnapshotContents::Binary(_) => Err("a binary snapshot".to_owned()),
    }
}

/// The diff of one pending snapshot against the stored one (all `+` for
/// a snapshot with none stored).
pub fn diff(new: &Path, shown: &Path) -> Result<String, String> {
    let stored = stored_for(new);
    let old = if stored.is_file() {
        contents(&stored)?
    } else {
        String::new()
    };
    let now = contents(new)?;
    let mut old = old;
    let mut now = now;
    for text in [&mut old, &mut now] {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let stored_shown = stored_for(shown);
    Ok(TextDiff::from_lines(&old, &now)
        .unified_diff()
        .context_radius(3)
        .header(
            &stored_shown.display().to_string(),
            &shown.display().to_string(),
        )
        .to_string())
}

pub(super) fn review_command(env: &mut Env<'_>, args: &ReviewArgs, workspace: &Path) -> u8 {
    let roots: Vec<PathBuf> = if args.paths.is_empty() {
        vec![workspace.to_path_buf()]
    } else {
        args.paths.iter().map(|p| env.cwd.join(p)).collect()
    };
    let found = pending(&roots);
    let shown = |p: &Path| -> PathBuf { p.strip_prefix(&env.cwd).unwrap_or(p).to_path_buf() };
    if found.is_empty() {
        let _ = writeln!(
            env.stdout,
            "no snapshot to review (no *.snap.new under {})",
            roots
                .iter()
                .map(|r| shown(r).display().to_string())
                .map(|s| if s.is_empty() { ".".to_owned() } else { s })
                .collect::<Vec<_>>()
                .join(", ")
        );
        return exit::OK;
    }
    let mut failed = 0;
    for new in &found {
        let name = shown(new);
        let stored = stored_for(new);
        if args.accept {
            let written = Snapshot::from_file(new)
                .and_then(|s| s.save(&stored))
                .map_err(|e| e.to_string())
                .and_then(|()| std::fs::remove_file(new).map_err(|e| e.to_string()));
            match written {
                Ok(()) => {
                    let _ = writeln!(env.stdout, "accepted {}", shown(&stored).display());
                }
                Err(why) => {
                    failed += 1;
                    let _ = writeln!(env.stderr, "error: cannot accept {}: {why}", name.display());
                }
            }
        } else if args.reject {
            match std::fs::remove_file(new) {
                Ok(()) => {
                    let _ = writeln!(env.stdout, "rejected {}", name.display());
                }
                Err(e) => {
                    failed += 1;
                    let _ = writeln!(env.stderr, "error: cannot remove {}: {e}", name.display());
                }
            }
        } else {
            match diff(new, &name) {
                Ok(text) => {
                    let _ = write!(env.stdout, "{text}");
                    let _ = writeln!(env.stdout);
                }
                Err(why) => {
                    failed += 1;
                    let _ = writeln!(env.stderr, "error: cannot read {}: {why}", name.display());
                }
            }
        }
    }
    if failed > 0 {
        return error(
            env,
            &format!("{failed} snapshot(s) could not be reviewed"),
            "see the lines above; a .snap.new is insta's file, written by a test run",
            exit::CANT_WRITE,
        );
    }
    if !args.accept && !args.reject {
        let _ = writeln!(
            env.stdout,
            "{} snapshot(s) to review. Read each diff: `cargo review-snapshots --accept` (sdd-evals review --accept) writes them over the stored ones, `--reject` deletes them; both take paths, to settle some only.",
            found.len()
        );
    }
    exit::OK
}
