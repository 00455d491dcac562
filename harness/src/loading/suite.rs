//! A suite: the case files under some paths (every `*.yaml`, recursively,
//! in path order), loaded together so that two cases cannot share an id —
//! ids name snapshot files, and a clash would make two cases overwrite one
//! another's snapshots.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sdd_mocks::yaml::YamlError;

use crate::loading::case::{Case, FORMAT_HELP};
use crate::loading::diagnostics;
use crate::loading::fixtures::Fixtures;

/// A case file: where it is, and how messages name it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct CaseFile {
    /// Resolved against the base directory.
    pub file: PathBuf,
    /// As given, or relative to the base directory.
    pub shown: PathBuf,
}

/// The case files under `paths`, which are relative to `base` (a file is
/// taken as it is, a directory searched for `*.yaml`).
pub fn case_files(base: &Path, paths: &[PathBuf]) -> Result<Vec<CaseFile>, String> {
    let mut found = Vec::new();
    for path in paths {
        let resolved = base.join(path);
        if resolved.is_file() {
            found.push(resolved);
        } else if resolved.is_dir() {
            collect(&resolved, &mut found);
        } else {
            return Err(format!("{} does not exist", path.display()));
        }
    }
    let mut files: Vec<CaseFile> = found
        .into_iter()
        .map(|file| CaseFile {
            shown: file
                .strip_prefix(base)
                .map_or_else(|_| file.clone(), Path::to_path_buf),
            file,
        })
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

/// The directory under `evals/` that holds the loop-safety scorecard's
/// cases and adapters (`sdd-evals scorecard`): not engine cases, so a
/// search skips it.
pub const SCORECARD_DIR: &str = "scorecard";

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == SCORECARD_DIR) {
                continue;
            }
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}

/// A case that does not load, rendered with its source lines.
pub type LoadError = String;

/// Every file loaded, in order, the files shared among one thread per core
/// (parsing and validating a suite is a tenth of a second of CPU).
fn load_each(files: &[CaseFile], fixtures: &Fixtures) -> Vec<Result<Case, YamlError>> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let chunk = files.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|f| Case::load_shown(&f.file, &f.shown, fixtures))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// Loads every file; the cases that load, and the rendered errors of those
/// that do not.
pub fn load(files: &[CaseFile], fixtures: &Fixtures) -> (Vec<Case>, Vec<LoadError>) {
    let mut cases: Vec<Case> = Vec::new();
    let mut errors = Vec::new();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for (f, loaded) in files.iter().zip(load_each(files, fixtures)) {
        match loaded {
            Ok(case) => {
                if let Some(first) = seen.get(case.id()) {
                    let err = YamlError::at(
                        &f.shown,
                        case.id.referenced,
                        format!("id `{}` is already used by {}", case.id(), first.display()),
                        format!("ids name snapshot files and must be unique ({FORMAT_HELP})"),
                    );
                    errors.push(diagnostics::render(&err, &f.file));
                    continue;
                }
                seen.insert(case.id().to_owned(), f.shown.clone());
                cases.push(case);
            }
            Err(e) => errors.push(diagnostics::render(&e, &f.file)),
        }
    }
    (cases, errors)
}
