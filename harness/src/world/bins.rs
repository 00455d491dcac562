//! The binaries a case runs: the engine (`sdd-loop`, or another
//! implementation of the contract given as a command line), the fake skill,
//! mock-qmd, the fake agents (`fake-claude`, `fake-codex`) and `fake-gh`
//! (installed as `gh` for the real CLIs' scripted commands). The scripted
//! model of a real-CLI case runs inside the harness
//! (`sdd_mocks::model::MockModel`), so the `mock-model` binary is not one
//! of them.
//!
//! Cargo sets `CARGO_BIN_EXE_*` only for a test's own package, and these
//! binaries belong to `sdd-loop` and `sdd-mocks`, so they are looked for
//! next to the running executable: a test binary lives in
//! `target/<profile>/deps/`, `sdd-evals` in `target/<profile>/`, the
//! binaries in `target/<profile>/`. Each can be overridden with an
//! environment variable; a missing one is an error that names it and the
//! command that builds it.
//!
//! [`set_by_cargo_run`] names what a nested `cargo build` must not inherit
//! from the `cargo run` that started `sdd-evals` (see there for why).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What builds every binary the harness needs.
pub const BUILD_HINT: &str = "cargo build --workspace --bins";

/// Variables `cargo run` sets for the program it runs, describing that
/// program's own package: exact names, then prefixes.
const CARGO_RUN_VARS: [&str; 9] = [
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
];
const CARGO_RUN_PREFIXES: [&str; 3] = ["CARGO_PKG_", "CARGO_BIN_EXE_", "CARGO_CFG_"];

/// The variables in `vars` that `cargo run` set for `sdd-evals` itself,
/// which the nested `cargo build --workspace --bins` must not inherit.
///
/// Build scripts declare `rerun-if-env-changed` on some of them — ring's
/// does on `CARGO_MANIFEST_DIR` and `CARGO_PKG_*` — and cargo compares
/// those with its own environment. Inherited, they hold the harness's
/// values where a plain `cargo build` or `cargo nextest run` sees none, so
/// every `cargo evals` reran ring's build script and rebuilt ring, rustls,
/// ureq and our three crates, and the next `cargo nextest run` rebuilt
/// them back (measured: 50 s and 80 s on a prebuilt tree). Without them
/// the two commands share one build.
pub fn set_by_cargo_run(vars: &BTreeMap<String, String>) -> Vec<&str> {
    vars.keys()
        .map(String::as_str)
        .filter(|k| {
            CARGO_RUN_VARS.contains(k) || CARGO_RUN_PREFIXES.iter().any(|p| k.starts_with(p))
        })
        .collect()
}

/// The binaries, by name, with the variable that overrides each.
pub const ENGINE: (&str, &str) = ("sdd-loop", "SDD_EVALS_SDD_LOOP");
pub const FAKE_SKILL: (&str, &str) = ("fake-skill", "SDD_EVALS_FAKE_SKILL");
pub const MOCK_QMD: (&str, &str) = ("mock-qmd", "SDD_EVALS_MOCK_QMD");
pub const FAKE_CLAUDE: (&str, &str) = ("fake-claude", "SDD_EVALS_FAKE_CLAUDE");
pub const FAKE_CODEX: (&str, &str) = ("fake-codex", "SDD_EVALS_FAKE_CODEX");
pub const FAKE_GH: (&str, &str) = ("fake-gh", "SDD_EVALS_FAKE_GH");

/// Every binary a graded run needs beside `sdd-evals` itself: what a CI job
/// that runs the suite from prebuilt binaries must carry (`ci/skill-evals`).
pub const ALL: [(&str, &str); 6] = [
    ENGINE,
    FAKE_SKILL,
    MOCK_QMD,
    FAKE_CLAUDE,
    FAKE_CODEX,
    FAKE_GH,
];

/// The engine under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Engine {
    /// A binary, run directly.
    Binary(PathBuf),
    /// A command line run with `sh -c`; the harness appends `<skill> --loop …`.
    Command(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binaries {
    pub engine: Engine,
    pub fake_skill: PathBuf,
    pub mock_qmd: PathBuf,
    /// Installed as `claude` on the sandbox PATH.
    pub fake_claude: PathBuf,
    /// Installed as `codex` on the sandbox PATH.
    pub fake_codex: PathBuf,
    /// Installed as `gh` on the sandbox PATH of a real-CLI case.
    pub fake_gh: PathBuf,
}

/// A binary that is not where it should be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot find the `{name}` binary at {}", path.display())]
pub struct MissingBinary {
    pub name: String,
    pub path: PathBuf,
    pub var: String,
}

impl MissingBinary {
    pub fn help(&self) -> String {
        format!(
            "build it with `{BUILD_HINT}` (a plain `cargo nextest run` from the workspace root builds it too), or point {} at it",
            self.var
        )
    }
}

/// Where binaries next to `exe` live: its directory, or the parent of a
/// `deps/` directory.
pub fn search_dir(exe: &Path) -> PathBuf {
    let dir = exe.parent().unwrap_or(Path::new("."));
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().unwrap_or(dir).to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

fn locate(
    (name, var): (&str, &str),
    dir: &Path,
    vars: &BTreeMap<String, String>,
) -> Result<PathBuf, MissingBinary> {
    let path = match vars.get(var).filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => dir.join(name),
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(MissingBinary {
            name: name.to_owned(),
            path,
            var: var.to_owned(),
        })
    }
}

impl Binaries {
    /// Finds the binaries next to `exe` (or where `vars` say); `engine`
    /// replaces `sdd-loop` with a command line.
    pub fn find(
        exe: &Path,
        vars: &BTreeMap<String, String>,
        engine: Option<String>,
    ) -> Result<Self, MissingBinary> {
        let dir = search_dir(exe);
        let engine = match engine {
            Some(cmd) => Engine::Command(cmd),
            None => Engine::Binary(locate(ENGINE, &dir, vars)?),
        };
        Ok(Self {
            engine,
            fake_skill: locate(FAKE_SKILL, &dir, vars)?,
            mock_qmd: locate(MOCK_QMD, &dir, vars)?,
            fake_claude: locate(FAKE_CLAUDE, &dir, vars)?,
            fake_codex: locate(FAKE_CODEX, &dir, vars)?,
            fake_gh: locate(FAKE_GH, &dir, vars)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_binaries_look_one_level_up() {
        assert_eq!(
            search_dir(Path::new("/w/target/debug/deps/evals-0123")),
            Path::new("/w/target/debug")
        );
        assert_eq!(
            search_dir(Path::new("/w/target/debug/sdd-evals")),
            Path::new("/w/target/debug")
        );
    }

    /// Regression: CI extracted only the binaries of an older list from
    /// its archive, and the graded suite could not find `fake-claude`.
    #[test]
    fn the_ci_job_carries_every_binary_the_suite_runs() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/skill-evals");
        let text = std::fs::read_to_string(&script).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("BINS=("))
            .expect("ci/skill-evals has a BINS=(...) line");
        let listed: Vec<&str> = line
            .trim_start_matches("BINS=(")
            .trim_end_matches(')')
            .split_whitespace()
            .collect();
        for (name, _) in ALL.iter().chain([&("sdd-evals", "")]) {
            assert!(
                listed.contains(name),
                "{}: BINS lacks `{name}`, which the graded suite runs",
                script.display()
            );
        }
    }

    /// Regression: the nested build inherited `cargo run`'s package
    /// variables, which reran ring's build script on every `cargo evals`.
    #[test]
    fn the_nested_build_drops_what_cargo_run_set_and_keeps_the_rest() {
        let vars: BTreeMap<String, String> = [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_BIN_NAME",
            "RUSTFLAGS",
            "RUSTUP_TOOLCHAIN",
            "PATH",
        ]
        .into_iter()
        .map(|k| (k.to_owned(), "x".to_owned()))
        .collect();
        assert_eq!(
            set_by_cargo_run(&vars),
            [
                "CARGO_BIN_NAME",
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_PKG_NAME",
                "CARGO_PKG_VERSION_MAJOR"
            ]
        );
    }

    #[test]
    fn a_missing_binary_names_itself_and_the_build_command() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("sdd-evals");
        let err = Binaries::find(&exe, &BTreeMap::new(), None).unwrap_err();
        assert_eq!(err.name, "sdd-loop");
        assert!(err.help().contains(BUILD_HINT), "{}", err.help());
        assert!(err.help().contains("SDD_EVALS_SDD_LOOP"), "{}", err.help());

        for name in ["sdd-loop", "fake-skill"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let err = Binaries::find(&exe, &BTreeMap::new(), None).unwrap_err();
        assert_eq!(err.name, "mock-qmd");
        for name in ["fake-claude", "fake-codex", "fake-gh"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let vars = BTreeMap::from([(
            "SDD_EVALS_MOCK_QMD".to_owned(),
            dir.path().join("sdd-loop").display().to_string(),
        )]);
        let found = Binaries::find(&exe, &vars, Some("other-engine".into())).unwrap();
        assert_eq!(found.engine, Engine::Command("other-engine".into()));
    }
}
