//! `sdd-evals plugin-evals DIR...`: the results of Claude Code's own
//! runner on `plugin-evals/` (`ci/plugin-evals` leaves one directory per
//! eval) as this harness reports a run — `benchmark.json` with the plugin
//! arm as `with_skill` and the no-plugin baseline as `without_skill`,
//! `grading.json`, `summary.md` and the viewer — plus whether each answer
//! scripted to break its case was caught
//! ([`crate::reporting::plugin_eval`]). Exits 1 when a case's plugin arm
//! failed or a breaking answer was not caught. [`Loaded`] is also what
//! `sdd-evals run --plugin-evals DIR...` adds to the harness's own report.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::reporting::arms::{ArmRun, Configuration};
use crate::reporting::benchmark::{self, Failing};
use crate::reporting::plugin_eval::{self, Catch, RunDir};
use crate::reporting::report::{self, CaseResult};
use crate::reporting::viewer;

use super::args::PluginEvalsArgs;
use super::env::{Env, error};
use super::exit;

/// Plugin-eval run directories, read: the cases' own answers as results
/// and runs, the breaking answers as catches.
#[derive(Debug, Default)]
pub(super) struct Loaded {
    pub results: Vec<CaseResult>,
    pub runs: Vec<ArmRun>,
    pub catches: Vec<Catch>,
    /// The evals' wall time (the cases' own answers), in seconds.
    pub wall: f64,
}

impl Loaded {
    /// Reads `paths` (relative to the working directory); on an error,
    /// prints it and gives the exit status.
    pub(super) fn load(env: &mut Env<'_>, paths: &[PathBuf]) -> Result<Self, u8> {
        let mut dirs = Vec::new();
        for path in paths {
            match RunDir::load(&env.cwd.join(path)) {
                Ok(dir) => dirs.push(dir),
                Err(e) => return Err(error(env, &e.to_string(), &e.help(), exit::BAD_CASE)),
            }
        }
        let (results, runs) = plugin_eval::cases(&dirs);
        Ok(Self {
            results,
            runs,
            catches: plugin_eval::catches(&dirs),
            wall: dirs
                .iter()
                .filter(|d| d.answer == plugin_eval::Answer::Case)
                .map(|d| d.report.duration_seconds)
                .sum(),
        })
    }

    /// Breaking answers no grader caught.
    pub(super) fn missed(&self) -> usize {
        self.catches.iter().filter(|c| !c.caught()).count()
    }

    /// The catches' section of `summary.md`, after a blank line (empty
    /// without breaking answers).
    pub(super) fn catches_md(&self) -> String {
        let md = plugin_eval::catches_md(&self.catches);
        if md.is_empty() { md } else { format!("\n{md}") }
    }
}

pub(super) fn plugin_evals_command(env: &mut Env<'_>, args: PluginEvalsArgs) -> u8 {
    let loaded = match Loaded::load(env, &args.dirs) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let compared = match &args.compare {
        Some(path) => match benchmark::load(&env.cwd.join(path)) {
            Ok((bench, file)) => Some((bench, file.display().to_string())),
            Err(e) => return error(env, &e.to_string(), &e.help(), exit::BAD_CASE),
        },
        None => None,
    };
    let Loaded {
        results,
        runs,
        catches,
        wall,
    } = &loaded;
    if results.is_empty() {
        return error(
            env,
            "no run holds a case's own answer: nothing to report",
            "give the directories of the cases' own answers too (target/plugin-evals/runs/*.model)",
            exit::USAGE,
        );
    }
    let bench = plugin_eval::benchmark(results, runs, Duration::from_secs_f64(*wall));
    let old = compared.as_ref().map(|(b, shown)| (b, shown.as_str()));

    table(env.stdout, &bench, catches);
    let mut summary = benchmark::summary(&bench, old, &Failing::of(results)).replacen(
        "## Skill evals:",
        "## Plugin evals (`claude plugin eval`):",
        1,
    );
    summary.push_str(&loaded.catches_md());
    let page = viewer::render(
        results,
        viewer::Run {
            benchmark: &bench,
            compared: old,
        },
    );
    let out_dir = env.cwd.join(
        args.out
            .clone()
            .unwrap_or_else(|| PathBuf::from("target/plugin-evals")),
    );
    let others = [
        (report::BENCHMARK, bench.to_json()),
        (report::SUMMARY, summary),
        (report::VIEWER, page),
    ];
    let others: Vec<(&str, &str)> = others.iter().map(|(n, t)| (*n, t.as_str())).collect();
    if let Err(e) = report::write_files(&out_dir, results, &others) {
        return error(
            env,
            &format!("cannot write the reports to {}: {e}", out_dir.display()),
            "pass --out DIR with a writable directory",
            exit::CANT_WRITE,
        );
    }
    let _ = writeln!(
        env.stderr,
        "reports: {} (open it in a browser), {}, {}, {}",
        out_dir.join(report::VIEWER).display(),
        out_dir.join(report::GRADING).display(),
        out_dir.join(report::BENCHMARK).display(),
        out_dir.join(report::SUMMARY).display()
    );
    let failed = results.iter().filter(|r| !r.passed).count();
    let missed = loaded.missed();
    if failed > 0 || missed > 0 {
        let _ = writeln!(
            env.stderr,
            "error: {failed} case(s) failed with the plugin, {missed} breaking answer(s) not caught"
        );
        let _ = writeln!(
            env.stderr,
            "help: each case's graders and evidence are in {}; a run's sandbox is kept with `KEEP=1 ci/plugin-evals offline CASE`",
            out_dir.join(report::VIEWER).display()
        );
        return exit::FAILED;
    }
    exit::OK
}

/// One line per case — its score with and without the plugin — then one
/// per breaking answer and the grader that caught it.
fn table(out: &mut dyn Write, bench: &benchmark::Benchmark, catches: &[plugin_eval::Catch]) {
    let width = bench
        .cases
        .iter()
        .map(|c| c.id.len())
        .chain(catches.iter().map(|c| c.case.len() + c.answer.len() + 1))
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "{:<width$}  {:<6}  {:>4}  {:>7}  {:>5}",
        "case", "plugin", "with", "without", "Δ"
    );
    for case in &bench.cases {
        let Some(arms) = &case.arms else { continue };
        let _ = writeln!(
            out,
            "{:<width$}  {:<6}  {:>4.2}  {:>7.2}  {:>5}",
            case.id,
            if case.passed { "pass" } else { "FAIL" },
            arms.with_skill.pass_rate.mean,
            arms.without_skill.pass_rate.mean,
            arms.delta.pass_rate
        );
    }
    if let (Some(with), Some(without), Some(delta)) = (
        &bench.run_summary.with_skill,
        &bench.run_summary.without_skill,
        &bench.run_summary.delta,
    ) {
        let _ = writeln!(
            out,
            "{:<width$}  {:<6}  {:>4.2}  {:>7.2}  {:>5}",
            "all",
            format!("{}/{}", bench.run_summary.passed, bench.run_summary.cases),
            with.pass_rate.mean,
            without.pass_rate.mean,
            delta.pass_rate
        );
    }
    if catches.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{:<width$}  caught by", "breaking answer");
    for c in catches {
        let by = if c.caught() {
            c.flipped
                .iter()
                .map(|(arm, grader)| match arm {
                    Configuration::WithSkill => grader.clone(),
                    Configuration::WithoutSkill => format!("{grader} (baseline)"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            "NOT CAUGHT".to_owned()
        };
        let _ = writeln!(out, "{:<width$}  {by}", format!("{}:{}", c.case, c.answer));
    }
}
