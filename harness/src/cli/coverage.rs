//! `sdd-evals coverage`: every SPEC-0020 requirement and ADR-0028
//! confirmation mapped to the cases that cover it, as text or Markdown.

use std::path::PathBuf;

use crate::loading::case::FORMAT_HELP;
use crate::loading::coverage::{self, Coverage};
use crate::loading::fixtures::Fixtures;

use super::args::CoverageArgs;
use super::cases::load;
use super::env::{Env, error};
use super::exit;

pub(super) fn coverage_command(
    env: &mut Env<'_>,
    args: &CoverageArgs,
    paths: &[PathBuf],
    fixtures: &Fixtures,
) -> u8 {
    let (cases, bad) = match load(env, paths, fixtures) {
        Ok(loaded) => loaded,
        Err(code) => return code,
    };
    if bad > 0 {
        return error(
            env,
            &format!("{bad} case file(s) have errors; the map would be incomplete"),
            &format!("fix them (`sdd-evals check` shows the same errors; {FORMAT_HELP})"),
            exit::BAD_CASE,
        );
    }
    let map = Coverage::of(&cases);
    if let Some(file) = &args.write {
        let path = env.cwd.join(file);
        let written = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| coverage::splice(&text, &map.markdown()))
            .and_then(|text| std::fs::write(&path, text).map_err(|e| e.to_string()));
        if let Err(why) = written {
            return error(
                env,
                &format!("cannot update {}: {why}", file.display()),
                &format!(
                    "the file needs the lines `{}` and `{}` around the table",
                    coverage::BEGIN,
                    coverage::END
                ),
                exit::CANT_WRITE,
            );
        }
        let _ = writeln!(env.stdout, "updated {}", file.display());
    } else if args.markdown {
        let _ = env.stdout.write_all(map.markdown().as_bytes());
    } else {
        let _ = env.stdout.write_all(map.text().as_bytes());
    }
    let uncovered = map.uncovered();
    if uncovered.is_empty() {
        return exit::OK;
    }
    let _ = writeln!(
        env.stderr,
        "error: {} requirement(s) have no case: {}",
        uncovered.len(),
        uncovered.join("; ")
    );
    let _ = writeln!(
        env.stderr,
        "help: write a case that proves each and name it in the case's `covers:` ({FORMAT_HELP})"
    );
    exit::FAILED
}
