//! `sdd-evals agents` and `sdd-evals agents install`: the pinned real
//! CLIs ([`crate::world::clis`]) — where each is (installed, on `PATH`, or
//! missing with the command that installs it) and the disk the install
//! directory takes; and installing them with npm, once (a warm cache
//! downloads nothing).

use std::path::PathBuf;
use std::time::Instant;

use crate::world::clis::{self, Found, INSTALL_HINT, InstallError, Installed, Places};

use super::args::{AgentsArgs, AgentsCommand};
use super::env::{Env, error};
use super::exit;

/// Where the CLIs are looked for: `--dir`, else the environment's; and
/// which versions (`SDD_EVALS_AGENT_VERSIONS`, else the pins).
fn places(env: &mut Env<'_>, dir: Option<PathBuf>) -> Result<Places, u8> {
    let mut places = Places::from_vars(&env.vars).map_err(|e| {
        error(
            env,
            &e.to_string(),
            &format!("fix {} or unset it to use the pins", clis::VERSIONS_VAR),
            exit::USAGE,
        )
    })?;
    if let Some(dir) = dir {
        places.dir = env.cwd.join(dir);
    }
    Ok(places)
}

fn megabytes(bytes: u64) -> String {
    format!("{:.0} MB", bytes as f64 / 1_000_000.0)
}

pub(super) fn agents_command(env: &mut Env<'_>, args: AgentsArgs) -> u8 {
    let places = match places(env, args.dir) {
        Ok(places) => places,
        Err(code) => return code,
    };
    match args.command {
        None => list(env, &places),
        Some(AgentsCommand::Install) => install(env, &places),
    }
}

/// One line per pinned CLI; exits 69 when one is missing.
fn list(env: &mut Env<'_>, places: &Places) -> u8 {
    let mut missing = 0;
    for cli in &places.clis() {
        let found = clis::find(cli, places);
        let line = match &found {
            Found::Installed(path) => format!(
                "installed: {} ({}, {})",
                path.display(),
                clis::version(path).unwrap_or_else(|| "does not run".to_owned()),
                megabytes(clis::disk_usage(&cli.prefix(&places.dir)))
            ),
            Found::OnPath(path) => format!(
                "not installed; on PATH: {} ({}; the cases run it, but the pinned version is {})",
                path.display(),
                clis::version(path).unwrap_or_else(|| "does not run".to_owned()),
                cli.version
            ),
            Found::Missing => {
                missing += 1;
                format!("missing: its cases are skipped; install it with `{INSTALL_HINT}`")
            }
        };
        let _ = writeln!(env.stdout, "{:<9}{:<36}{line}", cli.name, cli.spec());
    }
    let _ = writeln!(
        env.stdout,
        "install directory: {} ({})",
        places.dir.display(),
        megabytes(clis::disk_usage(&places.dir))
    );
    if missing > 0 {
        exit::UNAVAILABLE
    } else {
        exit::OK
    }
}

fn install(env: &mut Env<'_>, places: &Places) -> u8 {
    for cli in &places.clis() {
        let started = Instant::now();
        // Whether it runs is asked once: each `--version` starts the CLI
        // (the Gemini CLI's takes 3 s).
        let done = if clis::is_installed(cli, &places.dir) {
            Ok(Installed::Present(cli.installed_bin(&places.dir)))
        } else {
            let _ = writeln!(
                env.stderr,
                "{}: installing {} with npm…",
                cli.name,
                cli.spec()
            );
            clis::install(cli, &places.dir)
        };
        match done {
            Ok(Installed::Present(path)) => {
                let _ = writeln!(
                    env.stdout,
                    "{}: {} already installed at {}",
                    cli.name,
                    cli.spec(),
                    path.display()
                );
            }
            Ok(Installed::Fresh(path)) => {
                let _ = writeln!(
                    env.stdout,
                    "{}: installed {} at {} in {:.1}s ({})",
                    cli.name,
                    cli.spec(),
                    path.display(),
                    started.elapsed().as_secs_f64(),
                    megabytes(clis::disk_usage(&cli.prefix(&places.dir)))
                );
            }
            Err(e) => {
                let help = match &e {
                    InstallError::NoNpm(_) => "install Node.js 20 or newer with npm (Debian: `apt-get install nodejs npm`), then run it again".to_owned(),
                    InstallError::Dir { .. } => "pass --dir DIR (or set SDD_EVALS_AGENTS_DIR) with a writable directory".to_owned(),
                    InstallError::Npm { .. } => "npm's output is above: check that the npm registry is reachable, then run it again (it installs only what is missing)".to_owned(),
                    InstallError::NoBinary { .. } => format!("remove {} and run it again", cli.prefix(&places.dir).display()),
                };
                return error(env, &e.to_string(), &help, exit::UNAVAILABLE);
            }
        }
    }
    let _ = writeln!(
        env.stdout,
        "install directory: {} ({})",
        places.dir.display(),
        megabytes(clis::disk_usage(&places.dir))
    );
    exit::OK
}
