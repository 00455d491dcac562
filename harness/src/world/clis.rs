//! The real agent CLIs the real-agent cases run: Claude Code, Codex, the
//! Gemini CLI and OpenCode, pinned to one version each ([`PINNED`], the only place a version is
//! named), installed from npm into a cache outside `target/` and found
//! there, else on `PATH`.
//!
//! Each CLI gets its own npm prefix, `<dir>/<name>-<version>/`, so a
//! version change installs beside the old one and never half-replaces it;
//! the binary is `<prefix>/node_modules/.bin/<bin>`. The default `<dir>` is
//! `$XDG_CACHE_HOME/sdd-evals/agents` (else `~/.cache/sdd-evals/agents`),
//! which survives `cargo clean` and is what CI caches. Installing needs
//! only the npm registry; the CLIs are never pointed at anything but a
//! loopback model server (the drivers' job).
//!
//! A case whose CLI is not found is skipped with [`INSTALL_HINT`], never
//! passed (`--require-agents` makes it a failure). The library reads no
//! environment: [`Places`] carries what the binary gathered
//! (`SDD_EVALS_AGENTS_DIR`, `XDG_CACHE_HOME`, `HOME`, `PATH`,
//! `SDD_EVALS_AGENT_VERSIONS`), and [`Clis`] what was found there, for the
//! drivers.
//!
//! `SDD_EVALS_AGENT_VERSIONS=claude@2.1.340` runs another version than the
//! pin — installed by `agents install` beside the pinned one, found by the
//! cases instead of it — which is how `ci/canary` tries the newest release
//! before the pin moves ([`Places::clis`]).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One pinned CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// What cases and drivers call it.
    pub name: &'static str,
    pub package: &'static str,
    /// The pin, or the version `SDD_EVALS_AGENT_VERSIONS` named instead.
    pub version: Cow<'static, str>,
    /// The executable npm links into `node_modules/.bin`.
    pub bin: &'static str,
}

/// Claude Code, as measured in `real-agents.md`.
pub const CLAUDE: Pinned = Pinned {
    name: "claude",
    package: "@anthropic-ai/claude-code",
    version: Cow::Borrowed("2.1.332"),
    bin: "claude",
};

/// Codex, as measured in `real-agents.md`.
pub const CODEX: Pinned = Pinned {
    name: "codex",
    package: "@openai/codex",
    version: Cow::Borrowed("0.169.0"),
    bin: "codex",
};

/// The Gemini CLI, as measured in `real-agents.md`.
pub const GEMINI: Pinned = Pinned {
    name: "gemini",
    package: "@google/gemini-cli",
    version: Cow::Borrowed("0.61.0"),
    bin: "gemini",
};

/// OpenCode, as measured in `real-agents.md`.
pub const OPENCODE: Pinned = Pinned {
    name: "opencode",
    package: "opencode-ai",
    version: Cow::Borrowed("1.18.33"),
    bin: "opencode",
};

/// Every pinned CLI. Changing a version is a one-line change here.
pub const PINNED: [Pinned; 4] = [CLAUDE, CODEX, GEMINI, OPENCODE];

impl Pinned {
    /// `package@version`, as npm takes it.
    pub fn spec(&self) -> String {
        format!("{}@{}", self.package, self.version)
    }

    /// The npm prefix this version installs into, under `dir`.
    pub fn prefix(&self, dir: &Path) -> PathBuf {
        dir.join(format!("{}-{}", self.name, self.version))
    }

    /// The installed executable under `dir` (whether or not it exists).
    pub fn installed_bin(&self, dir: &Path) -> PathBuf {
        self.prefix(dir)
            .join("node_modules")
            .join(".bin")
            .join(self.bin)
    }

    /// This CLI by its case-facing name.
    pub fn named(name: &str) -> Option<Pinned> {
        PINNED.into_iter().find(|p| p.name == name)
    }
}

/// The variable that names other versions than the pins.
pub const VERSIONS_VAR: &str = "SDD_EVALS_AGENT_VERSIONS";

/// A `SDD_EVALS_AGENT_VERSIONS` entry that names no pinned CLI or no version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{VERSIONS_VAR} has `{entry}`: each entry is NAME@VERSION, NAME one of claude, codex, gemini, opencode (e.g. `{VERSIONS_VAR}=claude@2.1.332`)"
)]
pub struct VersionsError {
    pub entry: String,
}

/// `claude@2.1.332,codex@0.170.0` (commas or spaces between entries) as
/// (name, version) pairs.
fn parse_versions(text: &str) -> Result<Vec<(&'static str, String)>, VersionsError> {
    text.split([',', ' '])
        .filter(|e| !e.is_empty())
        .map(|entry| {
            let bad = || VersionsError {
                entry: entry.to_owned(),
            };
            let (name, version) = entry.split_once('@').ok_or_else(bad)?;
            let cli = Pinned::named(name).ok_or_else(bad)?;
            let ok = !version.is_empty()
                && version
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
            ok.then(|| (cli.name, version.to_owned())).ok_or_else(bad)
        })
        .collect()
}

/// The command that installs every pinned CLI, for messages.
pub const INSTALL_HINT: &str = "sdd-evals agents install";

/// The pinned CLIs a run found, by name: what the real-CLI drivers run;
/// and whether a case whose CLI is missing fails (`--require-agents`)
/// rather than being skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Clis {
    found: Vec<(&'static str, PathBuf)>,
    required: bool,
}

impl Clis {
    /// Looks for every pinned CLI in `places`.
    pub fn find(places: &Places) -> Self {
        Self {
            found: places
                .clis()
                .iter()
                .filter_map(|cli| {
                    find(cli, places)
                        .path()
                        .map(|p| (cli.name, p.to_path_buf()))
                })
                .collect(),
            required: false,
        }
    }

    /// A case whose CLI is missing fails instead of being skipped.
    pub fn required(self, required: bool) -> Self {
        Self { required, ..self }
    }

    /// Whether a missing CLI fails its case.
    pub fn is_required(&self) -> bool {
        self.required
    }

    /// The executable of `cli`, if it was found.
    pub fn get(&self, cli: &Pinned) -> Option<&Path> {
        self.found
            .iter()
            .find(|(name, _)| *name == cli.name)
            .map(|(_, p)| p.as_path())
    }

    /// Only these (for tests).
    pub fn with(found: impl IntoIterator<Item = (&'static str, PathBuf)>) -> Self {
        Self {
            found: found.into_iter().collect(),
            required: false,
        }
    }
}

/// Where to look: the install directory and `PATH`, gathered by the
/// binary; and the versions to look for where they are not the pins.
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// The install directory (`--dir`, else the cache default).
    pub dir: PathBuf,
    /// `PATH`'s entries, in order.
    pub path: Vec<PathBuf>,
    /// Versions other than the pins, by CLI name (`SDD_EVALS_AGENT_VERSIONS`).
    pub versions: Vec<(&'static str, String)>,
}

impl Places {
    /// Every CLI to install and look for: the pins, each at the version
    /// [`Places::versions`] names for it instead, if any.
    pub fn clis(&self) -> Vec<Pinned> {
        PINNED
            .into_iter()
            .map(
                |cli| match self.versions.iter().find(|(n, _)| *n == cli.name) {
                    Some((_, version)) => Pinned {
                        version: Cow::Owned(version.clone()),
                        ..cli
                    },
                    None => cli,
                },
            )
            .collect()
    }

    /// The install directory: `SDD_EVALS_AGENTS_DIR` when set, else the
    /// cache default; `PATH`; and `SDD_EVALS_AGENT_VERSIONS`. `vars` is the
    /// process's environment, as the binary gathered it.
    pub fn from_vars(
        vars: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, VersionsError> {
        let get = |k: &str| vars.get(k).filter(|v| !v.is_empty());
        let dir = match get("SDD_EVALS_AGENTS_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => Self::default_dir(
                get("XDG_CACHE_HOME").map(Path::new),
                get("HOME").map(Path::new),
            ),
        };
        let path = get("PATH")
            .map(|p| std::env::split_paths(p).collect())
            .unwrap_or_default();
        let versions = get(VERSIONS_VAR).map_or(Ok(Vec::new()), |v| parse_versions(v))?;
        Ok(Self {
            dir,
            path,
            versions,
        })
    }

    /// The default install directory from `XDG_CACHE_HOME` and `HOME`.
    pub fn default_dir(xdg_cache_home: Option<&Path>, home: Option<&Path>) -> PathBuf {
        match (xdg_cache_home, home) {
            (Some(xdg), _) if xdg.is_absolute() => xdg.join("sdd-evals").join("agents"),
            (_, Some(home)) => home.join(".cache").join("sdd-evals").join("agents"),
            _ => PathBuf::from(".cache/sdd-evals/agents"),
        }
    }
}

/// Where a CLI was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The pinned version, in the install directory.
    Installed(PathBuf),
    /// Not installed; an executable of that name on `PATH` (any version).
    OnPath(PathBuf),
    Missing,
}

impl Found {
    pub fn path(&self) -> Option<&Path> {
        match self {
            Found::Installed(p) | Found::OnPath(p) => Some(p),
            Found::Missing => None,
        }
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Finds `cli`: installed first, then `PATH`.
pub fn find(cli: &Pinned, places: &Places) -> Found {
    let installed = cli.installed_bin(&places.dir);
    if is_executable(&installed) {
        return Found::Installed(installed);
    }
    places
        .path
        .iter()
        .map(|d| d.join(cli.bin))
        .find(|p| is_executable(p))
        .map_or(Found::Missing, Found::OnPath)
}

/// What `sdd-evals agents install` did for one CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// Already there; nothing was downloaded.
    Present(PathBuf),
    /// Installed now.
    Fresh(PathBuf),
}

/// A failed install, naming the command and what npm said.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(
        "cannot run npm ({0}): install Node.js and npm (Node 20 or newer), then run `sdd-evals agents install` again"
    )]
    NoNpm(std::io::Error),
    #[error("cannot create {path}: {source}")]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}):\n{output}")]
    Npm {
        command: String,
        status: String,
        output: String,
    },
    #[error("npm installed {spec} but `{} --version` does not run", bin.display())]
    NoBinary { spec: String, bin: PathBuf },
}

/// Whether `cli` is installed under `dir` and runs.
pub fn is_installed(cli: &Pinned, dir: &Path) -> bool {
    let bin = cli.installed_bin(dir);
    is_executable(&bin) && version(&bin).is_some()
}

/// Installs `cli` into `dir` with npm unless it is already there and
/// runs. npm runs the packages' install scripts: Claude Code's links its
/// platform's native binary into place (it downloads nothing), and
/// without it `claude` only prints that the binary is not installed.
pub fn install(cli: &Pinned, dir: &Path) -> Result<Installed, InstallError> {
    let bin = cli.installed_bin(dir);
    if is_installed(cli, dir) {
        return Ok(Installed::Present(bin));
    }
    let prefix = cli.prefix(dir);
    std::fs::create_dir_all(&prefix).map_err(|source| InstallError::Dir {
        path: prefix.clone(),
        source,
    })?;
    let args = [
        "install".to_owned(),
        "--prefix".to_owned(),
        prefix.display().to_string(),
        "--no-fund".to_owned(),
        "--no-audit".to_owned(),
        "--no-save".to_owned(),
        "--no-update-notifier".to_owned(),
        cli.spec(),
    ];
    let output = Command::new("npm")
        .args(&args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(InstallError::NoNpm)?;
    if !output.status.success() {
        let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stdout));
        return Err(InstallError::Npm {
            command: format!("npm {}", args.join(" ")),
            status: output.status.to_string(),
            output: text.trim().to_owned(),
        });
    }
    if !is_executable(&bin) || version(&bin).is_none() {
        return Err(InstallError::NoBinary {
            spec: cli.spec(),
            bin,
        });
    }
    Ok(Installed::Fresh(bin))
}

/// What `exe --version` prints first (`2.1.332 (Claude Code)`,
/// `codex-cli 0.169.0`), for the listing; `None` when it does not run.
pub fn version(exe: &Path) -> Option<String> {
    let out = Command::new(exe)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())?
        .trim()
        .to_owned();
    out.status.success().then_some(line)
}

/// The disk everything under `dir` takes, in bytes, as `du` counts it
/// (allocated blocks, each hard-linked file once: Claude Code's install
/// script links its native binary into place).
pub fn disk_usage(dir: &Path) -> u64 {
    fn walk(dir: &Path, seen: &mut std::collections::HashSet<(u64, u64)>) -> u64 {
        use std::os::unix::fs::MetadataExt;
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        entries
            .flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => walk(&e.path(), seen),
                Ok(t) if t.is_file() => e
                    .metadata()
                    .ok()
                    .filter(|m| seen.insert((m.dev(), m.ino())))
                    .map_or(0, |m| m.blocks() * 512),
                _ => 0,
            })
            .sum()
    }
    walk(dir, &mut std::collections::HashSet::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_is_named_once_and_prefixes_differ_by_version() {
        let dir = Path::new("/c");
        assert_eq!(
            CLAUDE.installed_bin(dir),
            Path::new("/c/claude-2.1.332/node_modules/.bin/claude")
        );
        let newer = Pinned {
            version: "9.9.9".into(),
            ..CLAUDE
        };
        assert_ne!(newer.prefix(dir), CLAUDE.prefix(dir));
        assert_eq!(CODEX.spec(), "@openai/codex@0.169.0");
    }

    #[test]
    fn the_install_directory_wins_over_path_and_path_over_nothing() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let on_path = tmp.path().join("bin");
        std::fs::create_dir_all(&on_path).unwrap();
        let exe = |p: &Path| {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        let places = Places {
            dir: tmp.path().join("cache"),
            path: vec![on_path.clone()],
            versions: Vec::new(),
        };
        assert_eq!(find(&CODEX, &places), Found::Missing);
        exe(&on_path.join("codex"));
        assert_eq!(find(&CODEX, &places), Found::OnPath(on_path.join("codex")));
        exe(&CODEX.installed_bin(&places.dir));
        assert_eq!(
            find(&CODEX, &places),
            Found::Installed(CODEX.installed_bin(&places.dir))
        );
    }

    #[test]
    fn the_override_wins_and_path_is_split() {
        let vars = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let places = Places::from_vars(&vars(&[
            ("SDD_EVALS_AGENTS_DIR", "/agents"),
            ("XDG_CACHE_HOME", "/x"),
            ("PATH", "/a:/b"),
        ]))
        .unwrap();
        assert_eq!(places.dir, Path::new("/agents"));
        assert_eq!(places.path, [Path::new("/a"), Path::new("/b")]);
        assert_eq!(places.clis(), PINNED);
        let places =
            Places::from_vars(&vars(&[("SDD_EVALS_AGENTS_DIR", ""), ("HOME", "/h")])).unwrap();
        assert_eq!(places.dir, Path::new("/h/.cache/sdd-evals/agents"));
    }

    #[test]
    fn another_version_replaces_only_the_pin_it_names_and_a_bad_entry_is_refused() {
        let vars = |versions: &str| {
            std::collections::BTreeMap::from([
                ("HOME".to_owned(), "/h".to_owned()),
                (VERSIONS_VAR.to_owned(), versions.to_owned()),
            ])
        };
        let places = Places::from_vars(&vars("claude@2.1.332")).unwrap();
        let clis = places.clis();
        assert_eq!(clis[0].spec(), "@anthropic-ai/claude-code@2.1.332");
        assert_eq!(
            clis[0].installed_bin(&places.dir),
            Path::new("/h/.cache/sdd-evals/agents/claude-2.1.332/node_modules/.bin/claude")
        );
        assert_eq!(clis[1..], PINNED[1..]);
        let both = Places::from_vars(&vars("codex@0.170.0, claude@2.1.340-beta.1")).unwrap();
        assert_eq!(
            both.versions,
            [
                ("codex", "0.170.0".to_owned()),
                ("claude", "2.1.340-beta.1".to_owned())
            ]
        );
        for bad in ["claude", "claude@", "cursor@1.0", "claude@1.0;rm"] {
            let err = Places::from_vars(&vars(bad)).unwrap_err();
            assert_eq!(err.entry, bad.split(' ').next().unwrap());
            assert!(err.to_string().contains("NAME@VERSION"), "{err}");
        }
        assert!(Places::from_vars(&vars("")).unwrap().versions.is_empty());
    }

    #[test]
    fn an_executable_that_does_not_run_is_not_installed() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let bin = CLAUDE.installed_bin(tmp.path());
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::write(&bin, "#!/bin/sh\nexit 1\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!is_installed(&CLAUDE, tmp.path()));
        std::fs::write(&bin, "#!/bin/sh\necho '2.1.328 (Claude Code)'\n").unwrap();
        assert!(is_installed(&CLAUDE, tmp.path()));
        assert_eq!(version(&bin).as_deref(), Some("2.1.328 (Claude Code)"));
    }

    #[test]
    fn the_default_directory_is_a_cache_outside_the_build() {
        assert_eq!(
            Places::default_dir(Some(Path::new("/x")), Some(Path::new("/h"))),
            Path::new("/x/sdd-evals/agents")
        );
        assert_eq!(
            Places::default_dir(Some(Path::new("rel")), Some(Path::new("/h"))),
            Path::new("/h/.cache/sdd-evals/agents")
        );
    }
}
