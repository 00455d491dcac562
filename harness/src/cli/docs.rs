//! `sdd-evals docs`: a plugin's SKILL.md documents compared with the
//! engine (the judging stage's `docs`), the differences printed.

use std::path::{Path, PathBuf};

use sdd_loop::state::paths::Skill;

use crate::judging::docs;

use super::args::DocsArgs;
use super::env::{Env, error};
use super::exit;

pub(super) fn docs_command(env: &mut Env<'_>, args: DocsArgs, workspace: &Path) -> u8 {
    let (root, shown) = match &args.plugin_root {
        Some(dir) => (env.cwd.join(dir), dir.clone()),
        None => (workspace.to_path_buf(), pathdiff(workspace, &env.cwd)),
    };
    let cli = docs::engine::Cli::read();
    let skills = match args.skill {
        Some(s) => vec![s],
        None => vec![Skill::Work, Skill::Review],
    };
    let mut differences = 0;
    for skill in skills {
        match docs::check(&root, &shown, skill, &cli) {
            Ok(report) => {
                differences += report.differences.len();
                let _ = env.stdout.write_all(report.render().as_bytes());
            }
            Err(e) => return error(env, &e.to_string(), &e.help(), exit::USAGE),
        }
    }
    if differences == 0 {
        exit::OK
    } else {
        let _ = writeln!(
            env.stderr,
            "{differences} difference(s) between the documents and the engine"
        );
        exit::FAILED
    }
}

/// `target` relative to `base` when it is under it, else `target`.
fn pathdiff(target: &Path, base: &Path) -> PathBuf {
    match target.strip_prefix(base) {
        Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
        Ok(rel) => rel.to_path_buf(),
        Err(_) => target.to_path_buf(),
    }
}
