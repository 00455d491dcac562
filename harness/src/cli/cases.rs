//! `sdd-evals check` and `sdd-evals list`: load the cases a command names
//! and say which are well-formed, or list them.

use std::path::PathBuf;

use crate::loading::case::{Case, FORMAT_HELP};
use crate::loading::fixtures::Fixtures;
use crate::loading::suite;

use super::env::{Env, error};
use super::exit;

pub(super) fn load(
    env: &mut Env<'_>,
    paths: &[PathBuf],
    fixtures: &Fixtures,
) -> Result<(Vec<Case>, usize), u8> {
    let files = match suite::case_files(&env.cwd, paths) {
        Ok(f) => f,
        Err(e) => {
            return Err(error(
                env,
                &e,
                "give case files or directories that hold them",
                exit::USAGE,
            ));
        }
    };
    let (cases, errors) = suite::load(&files, fixtures);
    for e in &errors {
        let _ = writeln!(env.stderr, "{e}");
    }
    Ok((cases, errors.len()))
}

pub(super) fn check(env: &mut Env<'_>, paths: &[PathBuf], fixtures: &Fixtures) -> u8 {
    let (cases, bad) = match load(env, paths, fixtures) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    for case in &cases {
        let _ = writeln!(env.stdout, "ok {} ({})", case.path.display(), case.id());
    }
    if bad > 0 {
        let _ = writeln!(env.stderr, "{bad} case file(s) have errors ({FORMAT_HELP})");
        exit::BAD_CASE
    } else {
        exit::OK
    }
}

pub(super) fn list(env: &mut Env<'_>, paths: &[PathBuf], fixtures: &Fixtures) -> u8 {
    let (cases, bad) = match load(env, paths, fixtures) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    let width = cases.iter().map(|c| c.id().len()).max().unwrap_or(2).max(2);
    let _ = writeln!(env.stdout, "{:<width$}  {:>5}  proves", "id", "ticks");
    for case in &cases {
        let _ = writeln!(
            env.stdout,
            "{:<width$}  {:>5}  {} — {}",
            case.id(),
            case.ticks().len(),
            case.proves,
            case.name
        );
    }
    if bad > 0 { exit::BAD_CASE } else { exit::OK }
}
