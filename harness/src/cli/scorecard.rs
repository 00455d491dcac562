//! `sdd-evals scorecard PLUGIN_DIR... --adapter FILE...` (issue 35): every
//! scorecard case against every plugin, with the real Claude Code offline,
//! on `--jobs` cells at once; the matrix on stdout and as
//! `scorecard.{json,md,html}`; `--expect` holds each column to the
//! verdicts it must have (what CI checks).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::loading::fixtures::Fixtures;
use crate::scorecard::cell::{Setup, run_cell};
use crate::scorecard::format::{self, Adapter, LoadError, ScoreCase};
use crate::scorecard::matrix::{self, Column, Matrix, Row};
use crate::scorecard::verdict::{Verdict, judge};
use crate::world::bins;
use crate::world::clis::{self, Clis, INSTALL_HINT, Places};

use super::args::ScorecardArgs;
use super::env::{Env, error, sandbox_parent};
use super::exit;

/// `ADAPTER_NAME: { CASE_ID: held|broken|n/a }`.
type Expected = BTreeMap<String, BTreeMap<String, String>>;

/// One plugin to score.
struct Target {
    adapter: Adapter,
    setup: Setup,
}

fn load_error(env: &mut Env<'_>, e: &LoadError) -> u8 {
    let _ = writeln!(env.stderr, "{}", e.render());
    exit::BAD_CASE
}

/// The Claude Code to run: `--claude`, else the pinned one (or the
/// version `SDD_EVALS_AGENT_VERSIONS` names) where sdd-evals installs it.
fn claude(env: &mut Env<'_>, args: &ScorecardArgs) -> Result<Option<PathBuf>, u8> {
    if let Some(path) = &args.claude {
        return Ok(Some(env.cwd.join(path)));
    }
    let places = Places::from_vars(&env.vars).map_err(|e| {
        error(
            env,
            &e.to_string(),
            &format!("fix {} or unset it to run the pin", clis::VERSIONS_VAR),
            exit::USAGE,
        )
    })?;
    let Some(pinned) = places.clis().into_iter().find(|c| c.name == "claude") else {
        return Ok(None);
    };
    Ok(Clis::find(&places).get(&pinned).map(Path::to_path_buf))
}

/// The cases to run, `--case` applied.
fn cases(env: &mut Env<'_>, args: &ScorecardArgs, workspace: &Path) -> Result<Vec<ScoreCase>, u8> {
    let dir = args.cases.as_ref().map_or_else(
        || workspace.join("evals").join("scorecard"),
        |d| env.cwd.join(d),
    );
    let mut all = format::load_cases(&dir).map_err(|e| load_error(env, &e))?;
    if let Some(unknown) = args
        .only
        .iter()
        .find(|id| !all.iter().any(|c| &c.id == *id))
    {
        let ids: Vec<&str> = all.iter().map(|c| c.id.as_str()).collect();
        return Err(error(
            env,
            &format!("no case `{unknown}` in {}", dir.display()),
            &format!("the cases there are: {}", ids.join(", ")),
            exit::USAGE,
        ));
    }
    if !args.only.is_empty() {
        all.retain(|c| args.only.contains(&c.id));
    }
    Ok(all)
}

fn targets(
    env: &mut Env<'_>,
    args: &ScorecardArgs,
    workspace: &Path,
    claude: &Path,
) -> Result<Vec<Target>, u8> {
    if args.plugins.len() != args.adapters.len() {
        return Err(error(
            env,
            &format!(
                "{} plugin directories but {} adapters",
                args.plugins.len(),
                args.adapters.len()
            ),
            "give one --adapter FILE per PLUGIN_DIR, in the same order",
            exit::USAGE,
        ));
    }
    let mut out = Vec::new();
    for (dir, adapter) in args.plugins.iter().zip(&args.adapters) {
        let plugin = env.cwd.join(dir);
        let Ok(plugin) = plugin.canonicalize() else {
            return Err(error(
                env,
                &format!("no plugin directory at {}", plugin.display()),
                "give the directory that holds .claude-plugin/plugin.json",
                exit::USAGE,
            ));
        };
        if !plugin.join(".claude-plugin").join("plugin.json").is_file() {
            return Err(error(
                env,
                &format!("{} has no .claude-plugin/plugin.json", plugin.display()),
                "give the plugin's own directory (for a marketplace clone, its plugins/NAME)",
                exit::USAGE,
            ));
        }
        let adapter = Adapter::load(&env.cwd.join(adapter)).map_err(|e| load_error(env, &e))?;
        out.push(Target {
            adapter,
            setup: Setup {
                plugin,
                claude: claude.to_path_buf(),
                bin: Some(bins::search_dir(&env.exe)),
                path: env.vars.get("PATH").cloned().unwrap_or_default().into(),
                fixtures: Fixtures::new(workspace.join("fixtures")),
                parent: sandbox_parent(&env.vars),
                timeout: Duration::from_secs(args.timeout),
                keep: args.keep,
            },
        });
    }
    Ok(out)
}

fn expected(env: &mut Env<'_>, path: Option<&PathBuf>) -> Result<Option<Expected>, u8> {
    let Some(path) = path else { return Ok(None) };
    sdd_loop::yaml::load(&env.cwd.join(path), format::FORMAT_HELP)
        .map(Some)
        .map_err(|e| load_error(env, &LoadError::from(e)))
}

/// Runs every cell on `jobs` threads, saying each verdict on stderr as
/// it comes; `cells[row][column]`.
fn run_all(
    env: &mut Env<'_>,
    cases: &[ScoreCase],
    targets: &[Target],
    jobs: usize,
) -> Vec<Vec<Verdict>> {
    let mut cells: Vec<Vec<Option<Verdict>>> = cases
        .iter()
        .map(|c| {
            targets
                .iter()
                .map(|t| {
                    c.not_applicable(&t.adapter)
                        .map(|why| Verdict::NotApplicable { why })
                })
                .collect()
        })
        .collect();
    let todo: Vec<(usize, usize)> = (0..cases.len())
        .flat_map(|r| (0..targets.len()).map(move |c| (r, c)))
        .filter(|(r, c)| cells[*r][*c].is_none())
        .collect();
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            let tx = tx.clone();
            let (todo, next) = (&todo, &next);
            s.spawn(move || {
                while let Some(&(r, c)) = todo.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let (case, target) = (&cases[r], &targets[c]);
                    let started = Instant::now();
                    let (verdict, kept) = match run_cell(case, &target.adapter, &target.setup) {
                        Ok(run) => (judge(case, &run), run.kept),
                        Err(e) => (Verdict::Error { why: e.to_string() }, None),
                    };
                    let _ = tx.send((r, c, verdict, kept, started.elapsed()));
                }
            });
        }
        drop(tx);
        for (r, c, verdict, kept, took) in rx {
            let _ = writeln!(
                env.stderr,
                "{} × {}: {} ({:.1}s){}",
                cases[r].id,
                targets[c].adapter.name,
                verdict.word(),
                took.as_secs_f64(),
                kept.map(|k| format!(", kept {}", k.display()))
                    .unwrap_or_default()
            );
            cells[r][c] = Some(verdict);
        }
    });
    cells
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|v| {
                    v.unwrap_or(Verdict::Error {
                        why: "the cell was not run".to_owned(),
                    })
                })
                .collect()
        })
        .collect()
}

/// The adapter's name, and the plugin directory's when two columns share
/// the adapter (one plugin at two commits).
fn column_name(targets: &[Target], t: &Target, dir: &Path) -> String {
    let shared = targets
        .iter()
        .filter(|o| o.adapter.name == t.adapter.name)
        .count()
        > 1;
    if shared {
        format!("{} ({})", t.adapter.name, dir.display())
    } else {
        t.adapter.name.clone()
    }
}

/// Every cell that differs from `expected`, said plainly.
fn differences(m: &Matrix, expected: &Expected) -> Vec<String> {
    let mut out = Vec::new();
    for (c, col) in m.columns.iter().enumerate() {
        let Some(wanted) = expected.get(&col.name) else {
            continue;
        };
        for (r, row) in m.rows.iter().enumerate() {
            if let Some(word) = wanted.get(&row.id)
                && m.cells[r][c].word() != word
            {
                out.push(format!(
                    "{} × {}: expected {word}, got {}",
                    row.id,
                    col.name,
                    m.cells[r][c].word()
                ));
            }
        }
    }
    out
}

fn write_reports(env: &mut Env<'_>, m: &Matrix, out: &Path) -> Result<(), u8> {
    let files = [
        (
            "scorecard.json",
            serde_json::to_string_pretty(m).unwrap_or_default() + "\n",
        ),
        ("scorecard.md", matrix::markdown(m)),
        ("scorecard.html", matrix::html(m)),
    ];
    let written = std::fs::create_dir_all(out).and_then(|()| {
        files
            .iter()
            .try_for_each(|(name, text)| std::fs::write(out.join(name), text))
    });
    written.map_err(|e| {
        error(
            env,
            &format!("cannot write the scorecard into {}: {e}", out.display()),
            "pass --out DIR with a directory you can write",
            exit::CANT_WRITE,
        )
    })
}

pub(super) fn scorecard_command(env: &mut Env<'_>, args: &ScorecardArgs, workspace: &Path) -> u8 {
    match scorecard(env, args, workspace) {
        Ok(code) | Err(code) => code,
    }
}

fn scorecard(env: &mut Env<'_>, args: &ScorecardArgs, workspace: &Path) -> Result<u8, u8> {
    let cases = cases(env, args, workspace)?;
    let Some(claude) = claude(env, args)? else {
        return Err(error(
            env,
            "Claude Code is not installed where sdd-evals looks (nor on PATH)",
            &format!("install the pinned one with `{INSTALL_HINT}`, or pass --claude PATH"),
            exit::UNAVAILABLE,
        ));
    };
    let targets = targets(env, args, workspace, &claude)?;
    let expected = expected(env, args.expect.as_ref())?;
    let started = Instant::now();
    let cells = run_all(env, &cases, &targets, args.jobs);
    let m = Matrix {
        claude_code: clis::version(&claude)
            .and_then(|v| v.split_whitespace().next().map(str::to_owned))
            .unwrap_or_else(|| "(unknown version)".to_owned()),
        rows: cases
            .iter()
            .map(|c| Row {
                id: c.id.clone(),
                name: c.name.clone(),
                held: c.held.clone(),
            })
            .collect(),
        columns: targets
            .iter()
            .zip(args.plugins.iter().zip(&args.adapters))
            .map(|(t, (dir, adapter))| Column {
                name: column_name(&targets, t, dir),
                plugin_dir: dir.display().to_string(),
                adapter: adapter.display().to_string(),
            })
            .collect(),
        cells,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    let _ = write!(env.stdout, "{}", matrix::text(&m));
    let out = args.out.as_ref().map_or_else(
        || workspace.join("target").join("sdd-evals"),
        |o| env.cwd.join(o),
    );
    write_reports(env, &m, &out)?;
    let _ = writeln!(env.stdout, "wrote {}", out.join("scorecard.html").display());
    let diffs = expected.map(|e| differences(&m, &e)).unwrap_or_default();
    for d in &diffs {
        let _ = writeln!(env.stderr, "error: {d}");
    }
    if m.errors() > 0 {
        let _ = writeln!(
            env.stderr,
            "error: {} cell(s) could not be run (see above)\nhelp: rerun them with --case ID --keep and read the kept directory's N.stderr.txt",
            m.errors()
        );
    }
    Ok(if diffs.is_empty() && m.errors() == 0 {
        exit::OK
    } else {
        exit::FAILED
    })
}
