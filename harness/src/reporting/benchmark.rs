//! `benchmark.json` and what is read from it (SPEC-0017 "Benchmark
//! Tracking"): pass rate, wall time and tokens per case and per skill
//! ([`Benchmark`]); the trend against an earlier benchmark (`sdd-evals run
//! --compare`, [`Benchmark::trend`]); the Tier 1 threshold — a Tier 1
//! skill below an 80% pass rate fails the run with SPEC-0017's own message
//! ([`Benchmark::below_threshold`]); the PR comment, `summary.md`
//! ([`summary`]); and the committed history in `evals/benchmarks/`
//! (`--record`, [`record`]).
//!
//! A skill's pass rate is the share of its cases that passed; its mean
//! time and mean tokens are over the same cases. Deltas are new minus old,
//! for the skills both runs have.
//!
//! A `claude plugin eval` run (`sdd-evals plugin-evals`) adds SPEC-0017's
//! two arms — `with_skill` (the plugin loaded) and `without_skill` (the
//! baseline) — to the run, each skill and each case, and the per-run
//! `runs[]` ([`crate::reporting::arms`]); the harness's own runs have one
//! arm and leave these out.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::reporting::arms::{ArmDelta, ArmRun, ArmSummary, Arms};
use crate::reporting::report::{CaseResult, pass_rate};

/// SPEC-0017's Tier 1 skills: each must keep [`THRESHOLD`].
pub const TIER_1: [&str; 4] = ["plan", "work", "review", "audit"];

/// The pass rate a Tier 1 skill must reach.
pub const THRESHOLD: f64 = 0.80;

/// Where `--record` keeps the history, relative to the workspace.
pub const HISTORY_DIR: &str = "evals/benchmarks";

/// One run's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Benchmark {
    pub run_summary: RunSummary,
    /// Per skill, `work` first (absent from files written before skills
    /// were counted).
    #[serde(default)]
    pub skills: Vec<SkillSummary>,
    pub cases: Vec<CaseFigures>,
    /// The commit and day the run was recorded for (`--record`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<Recorded>,
    /// Every run of every case in each arm (a `claude plugin eval` run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<ArmRun>,
    /// The number of case files named on the command line, when the run
    /// was such a selection: the Tier 1 threshold applies to the full
    /// suite, so it is not applied to it.
    #[serde(skip)]
    pub selected: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The cases that ran (skipped ones are not counted).
    pub cases: usize,
    pub passed: usize,
    /// Cases that did not run (their real CLI is not installed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: usize,
    pub pass_rate: f64,
    pub wall_seconds: f64,
    pub tokens: u64,
    /// The plugin arm over every run (a `claude plugin eval` run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_skill: Option<ArmSummary>,
    /// The no-plugin baseline arm over every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_skill: Option<ArmSummary>,
    /// With minus without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<ArmDelta>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillSummary {
    pub skill: String,
    pub cases: usize,
    pub passed: usize,
    /// Cases passed / cases, 0–1.
    pub pass_rate: f64,
    pub mean_wall_seconds: f64,
    pub mean_tokens: f64,
    /// Both arms of the skill's runs (a `claude plugin eval` run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arms: Option<Arms>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseFigures {
    pub id: String,
    #[serde(default)]
    pub skill: Option<String>,
    pub passed: bool,
    /// Why the case did not run, when it was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// The share of the case's assertions that passed.
    pub pass_rate: f64,
    pub ticks: usize,
    pub wall_seconds: f64,
    pub tokens: Tokens,
    /// Both arms of the case's runs (a `claude plugin eval` run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arms: Option<Arms>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(rename = "in")]
    pub tokens_in: u64,
    #[serde(rename = "out")]
    pub tokens_out: u64,
    pub total: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// `YYYY-MM-DD`.
    pub date: String,
    pub commit: String,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn seconds(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

fn round(v: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (v * scale).round() / scale
}

/// Skills in report order: `work`, `review`, then any other by name.
fn rank(skill: &str) -> (usize, &str) {
    (
        ["work", "review"]
            .iter()
            .position(|s| *s == skill)
            .unwrap_or(2),
        skill,
    )
}

impl Benchmark {
    /// The figures of a run that took `wall`.
    pub fn new(all: &[CaseResult], wall: Duration) -> Self {
        let ran: Vec<CaseResult> = crate::reporting::report::ran(all).cloned().collect();
        let results = ran.as_slice();
        let passed = results.iter().filter(|r| r.passed).count();
        let mut names: Vec<&str> = results.iter().map(|r| r.skill.as_str()).collect();
        names.sort_by_key(|s| rank(s));
        names.dedup();
        let skills = names
            .into_iter()
            .map(|skill| {
                let of: Vec<&CaseResult> = results.iter().filter(|r| r.skill == skill).collect();
                let n = of.len();
                let ok = of.iter().filter(|r| r.passed).count();
                let mean = |f: &dyn Fn(&CaseResult) -> f64| {
                    of.iter().map(|r| f(r)).sum::<f64>() / n.max(1) as f64
                };
                SkillSummary {
                    skill: skill.to_owned(),
                    cases: n,
                    passed: ok,
                    pass_rate: pass_rate(ok, n),
                    mean_wall_seconds: round(mean(&|r| r.wall.as_secs_f64()), 3),
                    mean_tokens: round(mean(&|r| (r.tokens_in + r.tokens_out) as f64), 1),
                    arms: None,
                }
            })
            .collect();
        Self {
            run_summary: RunSummary {
                cases: results.len(),
                passed,
                skipped: all.len() - results.len(),
                pass_rate: pass_rate(passed, results.len()),
                wall_seconds: seconds(wall),
                tokens: results.iter().map(|r| r.tokens_in + r.tokens_out).sum(),
                with_skill: None,
                without_skill: None,
                delta: None,
            },
            skills,
            cases: all
                .iter()
                .map(|r| {
                    let ok = r.expectations.iter().filter(|g| g.passed).count();
                    CaseFigures {
                        id: r.id.clone(),
                        skill: Some(r.skill.clone()),
                        passed: r.passed,
                        skipped: r.skipped.clone(),
                        pass_rate: pass_rate(ok, r.expectations.len()),
                        ticks: r.ticks,
                        wall_seconds: seconds(r.wall),
                        tokens: Tokens {
                            tokens_in: r.tokens_in,
                            tokens_out: r.tokens_out,
                            total: r.tokens_in + r.tokens_out,
                        },
                        arms: None,
                    }
                })
                .collect(),
            recorded: None,
            runs: Vec::new(),
            selected: None,
        }
    }

    /// Pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    pub fn skill(&self, name: &str) -> Option<&SkillSummary> {
        self.skills.iter().find(|s| s.skill == name)
    }

    /// SPEC-0017's message for every Tier 1 skill under [`THRESHOLD`];
    /// none for a run of case files named one by one ([`Self::selected`]):
    /// the threshold is the full suite's.
    pub fn below_threshold(&self) -> Vec<String> {
        if self.selected.is_some() {
            return Vec::new();
        }
        self.skills
            .iter()
            .filter(|s| TIER_1.contains(&s.skill.as_str()) && s.pass_rate < THRESHOLD)
            .map(|s| {
                format!(
                    "Tier 1 skill '{}' pass rate is {} (threshold: {})",
                    s.skill,
                    percent(s.pass_rate),
                    percent(THRESHOLD)
                )
            })
            .collect()
    }

    /// One sentence on the Tier 1 threshold and this run: met, missed
    /// (by which skills), or not applied to a selection of cases.
    pub fn threshold_note(&self) -> String {
        let at = percent(THRESHOLD);
        if let Some(n) = self.selected {
            return format!(
                "The Tier 1 pass-rate threshold ({at}) applies to the full suite; this run of {n} case(s) selected by name is not held to it."
            );
        }
        let below: Vec<&str> = self
            .skills
            .iter()
            .filter(|s| TIER_1.contains(&s.skill.as_str()) && s.pass_rate < THRESHOLD)
            .map(|s| s.skill.as_str())
            .collect();
        if below.is_empty() {
            format!(
                "Every Tier 1 skill is at or above the {at} pass-rate threshold (the full suite)."
            )
        } else {
            format!(
                "Below the Tier 1 pass-rate threshold ({at}, the full suite): {}.",
                below.join(", ")
            )
        }
    }

    /// Each skill of this run beside the same skill in `old`.
    pub fn trend<'a>(
        &'a self,
        old: &'a Benchmark,
    ) -> Vec<(&'a SkillSummary, Option<&'a SkillSummary>)> {
        self.skills
            .iter()
            .map(|s| (s, old.skill(&s.skill)))
            .collect()
    }
}

/// `80%`, `94.1%`.
pub fn percent(rate: f64) -> String {
    let p = round(rate * 100.0, 1);
    if p.fract() == 0.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

fn signed(v: f64, places: usize) -> String {
    if round(v, places as i32) == 0.0 {
        "±0".to_owned()
    } else if v > 0.0 {
        format!("+{v:.places$}")
    } else {
        format!("−{:.places$}", -v)
    }
}

/// The cells of one skill's row: pass rate, mean time, mean tokens, each
/// with its delta from `old` when there is one.
fn cells(new: &SkillSummary, old: Option<&SkillSummary>) -> [String; 3] {
    let rate = percent(new.pass_rate);
    let time = format!("{:.2}s", new.mean_wall_seconds);
    let tokens = format!("{:.0}", new.mean_tokens);
    match old {
        None => [rate, time, tokens],
        Some(o) => [
            format!(
                "{rate} ({} pts)",
                signed((new.pass_rate - o.pass_rate) * 100.0, 1)
            ),
            format!(
                "{time} ({}s)",
                signed(new.mean_wall_seconds - o.mean_wall_seconds, 2)
            ),
            format!("{tokens} ({})", signed(new.mean_tokens - o.mean_tokens, 0)),
        ],
    }
}

/// The per-skill table for the terminal.
pub fn table(out: &mut dyn std::io::Write, new: &Benchmark, old: Option<&Benchmark>) {
    let rows: Vec<(String, String, [String; 3])> = new
        .skills
        .iter()
        .map(|s| {
            let before = old.and_then(|o| o.skill(&s.skill));
            (s.skill.clone(), s.cases.to_string(), cells(s, before))
        })
        .collect();
    let w = |i: usize, head: &str| {
        rows.iter()
            .map(|r| r.2[i].chars().count())
            .max()
            .unwrap_or(0)
            .max(head.len())
    };
    let (w0, w1, w2) = (w(0, "pass rate"), w(1, "mean time"), w(2, "mean tokens"));
    let _ = writeln!(
        out,
        "{:<8}  {:>5}  {:<w0$}  {:<w1$}  {:<w2$}",
        "skill", "cases", "pass rate", "mean time", "mean tokens"
    );
    for (skill, cases, [rate, time, tokens]) in &rows {
        let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w - s.chars().count()));
        let _ = writeln!(
            out,
            "{skill:<8}  {cases:>5}  {}  {}  {}",
            pad(rate, w0),
            pad(time, w1),
            pad(tokens, w2)
        );
    }
    let _ = writeln!(out, "{}", new.threshold_note());
}

/// One failing case, for the summary: its id, skill and first failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failing {
    pub id: String,
    pub skill: String,
    pub first: String,
}

impl Failing {
    pub fn of(results: &[CaseResult]) -> Vec<Failing> {
        results
            .iter()
            .filter(|r| !r.passed && r.skipped.is_none())
            .map(|r| Failing {
                id: r.id.clone(),
                skill: r.skill.clone(),
                first: r
                    .expectations
                    .iter()
                    .find(|g| !g.ok())
                    .map(|g| g.text.clone())
                    .unwrap_or_default(),
            })
            .collect()
    }
}

fn md_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// `summary.md`: the PR comment.
pub fn summary(new: &Benchmark, old: Option<(&Benchmark, &str)>, failing: &[Failing]) -> String {
    let run = &new.run_summary;
    let mut md = format!(
        "## Skill evals: {} of {} cases passed\n\n",
        run.passed, run.cases
    );
    md.push_str("| skill | cases | pass rate | mean time | mean tokens |\n");
    md.push_str("|---|--:|--:|--:|--:|\n");
    for s in &new.skills {
        let before = old.and_then(|(o, _)| o.skill(&s.skill));
        let [rate, time, tokens] = cells(s, before);
        let _ = writeln!(
            md,
            "| {} | {} | {rate} | {time} | {tokens} |",
            s.skill, s.cases
        );
    }
    md.push('\n');
    match old {
        Some((_, label)) => {
            let _ = writeln!(md, "Deltas are from `{}`.\n", md_cell(label));
        }
        None => {
            md.push_str("No earlier benchmark was given (`--compare`), so there are no deltas.\n\n")
        }
    }
    let below = new.below_threshold();
    if below.is_empty() {
        let _ = writeln!(md, "{}\n", new.threshold_note());
    } else {
        md.push_str("**Below the Tier 1 threshold:**\n\n");
        for line in &below {
            let _ = writeln!(md, "- {line}");
        }
        md.push('\n');
    }
    arms_md(&mut md, new, old.map(|(o, _)| o));
    let skipped: Vec<&CaseFigures> = new.cases.iter().filter(|c| c.skipped.is_some()).collect();
    if !skipped.is_empty() {
        md.push_str("### Skipped cases (not run: their CLI is not installed; `sdd-evals agents install`, and `--require-agents` fails them)\n\n| case | why |\n|---|---|\n");
        for c in skipped {
            let _ = writeln!(
                md,
                "| `{}` | {} |",
                c.id,
                md_cell(c.skipped.as_deref().unwrap_or(""))
            );
        }
        md.push('\n');
    }
    if !failing.is_empty() {
        md.push_str("### Failing cases\n\n| case | skill | first failure |\n|---|---|---|\n");
        for f in failing {
            let _ = writeln!(md, "| `{}` | {} | {} |", f.id, f.skill, md_cell(&f.first));
        }
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "Wall time {:.2}s. The eval viewer (`report.html`), `grading.json` and `benchmark.json` are this run's artifacts.",
        run.wall_seconds
    );
    md
}

/// `0.75 (±0.25)`, or `0.75` for one run.
fn score(arm: &ArmSummary) -> String {
    if arm.runs > 1 {
        format!("{:.2} (±{:.2})", arm.pass_rate.mean, arm.pass_rate.stddev)
    } else {
        format!("{:.2}", arm.pass_rate.mean)
    }
}

/// The section of a run with two arms: each case's mean score with the
/// plugin, without it, and the difference (with its change from `old`'s).
fn arms_md(md: &mut String, new: &Benchmark, old: Option<&Benchmark>) {
    let (Some(with), Some(without), Some(delta)) = (
        &new.run_summary.with_skill,
        &new.run_summary.without_skill,
        &new.run_summary.delta,
    ) else {
        return;
    };
    let _ = writeln!(
        md,
        "### With and without the plugin

Mean score (the share of graders passed) per case over {} run(s) with the plugin and {} without; Δ is with minus without.
",
        with.runs, without.runs
    );
    md.push_str("| case | with the plugin | without | Δ |\n|---|--:|--:|--:|\n");
    for case in &new.cases {
        let Some(arms) = &case.arms else { continue };
        let was = old
            .and_then(|o| o.cases.iter().find(|c| c.id == case.id))
            .and_then(|c| c.arms.as_ref());
        let change = match was {
            Some(w) => format!(
                " ({} from {})",
                signed(arms.pass_rate_delta() - w.pass_rate_delta(), 2),
                w.delta.pass_rate
            ),
            None => String::new(),
        };
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {}{change} |",
            case.id,
            score(&arms.with_skill),
            score(&arms.without_skill),
            arms.delta.pass_rate
        );
    }
    let _ = writeln!(
        md,
        "| **all** | **{}** | **{}** | **{}** |\n",
        score(with),
        score(without),
        delta.pass_rate
    );
}

/// Why an earlier benchmark cannot be compared with.
#[derive(Debug, thiserror::Error)]
pub enum BenchmarkError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a benchmark.json: {detail}", path.display())]
    Parse { path: PathBuf, detail: String },
    #[error("{} holds no benchmark (*.json)", path.display())]
    Empty { path: PathBuf },
    #[error("{} has no per-skill figures (it was written before sdd-evals counted skills)", path.display())]
    NoSkills { path: PathBuf },
}

impl BenchmarkError {
    pub fn help(&self) -> String {
        match self {
            BenchmarkError::Read { .. } | BenchmarkError::Empty { .. } => format!(
                "give a benchmark.json written by `sdd-evals run`, or a directory of them such as {HISTORY_DIR}/ (the newest by name is used)"
            ),
            BenchmarkError::Parse { .. } => {
                "give a benchmark.json written by `sdd-evals run`".to_owned()
            }
            BenchmarkError::NoSkills { .. } => {
                "run the suite on that revision again with this sdd-evals, or compare with a newer benchmark".to_owned()
            }
        }
    }
}

/// Reads the benchmark at `path` — a file, or a directory whose newest
/// `*.json` (by name; recorded names start with the date) is used — and
/// the file it came from.
pub fn load(path: &Path) -> Result<(Benchmark, PathBuf), BenchmarkError> {
    let file = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|source| BenchmarkError::Read {
                path: path.to_path_buf(),
                source,
            })?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        files.pop().ok_or_else(|| BenchmarkError::Empty {
            path: path.to_path_buf(),
        })?
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(|source| BenchmarkError::Read {
        path: file.clone(),
        source,
    })?;
    let bench: Benchmark = serde_json::from_str(&text).map_err(|e| BenchmarkError::Parse {
        path: file.clone(),
        detail: e.to_string(),
    })?;
    if bench.skills.is_empty() && !bench.cases.is_empty() {
        return Err(BenchmarkError::NoSkills { path: file });
    }
    Ok((bench, file))
}

/// The commit `dir` is checked out at, for `--record`: its commit date
/// and short hash, with `-dirty` when tracked files have changed.
pub fn revision(dir: &Path) -> Result<Recorded, String> {
    let git = |args: &[&str]| -> Result<String, String> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "`git {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let head = git(&["log", "-1", "--format=%cs %h"])?;
    let (date, commit) = head
        .split_once(' ')
        .ok_or_else(|| format!("unexpected `git log` output: {head}"))?;
    let dirty = !git(&["status", "--porcelain", "--untracked-files=no"])?.is_empty();
    Ok(Recorded {
        date: date.to_owned(),
        commit: if dirty {
            format!("{commit}-dirty")
        } else {
            commit.to_owned()
        },
    })
}

/// Adds `bench` to the history in `dir` as `{date}-{commit}.json`
/// (replacing a recording of the same day and commit); its path.
pub fn record(dir: &Path, bench: &Benchmark) -> std::io::Result<PathBuf> {
    let name = match &bench.recorded {
        Some(r) => format!("{}-{}.json", r.date, r.commit),
        None => "unrecorded.json".to_owned(),
    };
    std::fs::create_dir_all(dir)?;
    let path = dir.join(name);
    std::fs::write(&path, bench.to_json())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judging::grade::Grade;

    /// A skipped case (its real CLI is not installed) is never a pass and
    /// weighs on no pass rate; the summary lists it with the reason.
    #[test]
    fn a_skipped_case_is_left_out_of_the_pass_rates_and_listed() {
        let skipped = CaseResult {
            skipped: Some("@openai/codex 0.169.0 is not installed".to_owned()),
            passed: false,
            expectations: Vec::new(),
            ..case("c4-real-codex", "work", false, 0, 0)
        };
        let results = vec![case("c4", "work", true, 100, 10), skipped];
        let bench = Benchmark::new(&results, Duration::from_secs(1));
        assert_eq!(
            (
                bench.run_summary.cases,
                bench.run_summary.passed,
                bench.run_summary.skipped
            ),
            (1, 1, 1)
        );
        assert_eq!(bench.skill("work").map(|s| s.pass_rate), Some(1.0));
        assert!(bench.below_threshold().is_empty());
        assert!(Failing::of(&results).is_empty());
        let md = summary(&bench, None, &Failing::of(&results));
        assert!(
            md.contains("| `c4-real-codex` | @openai/codex 0.169.0 is not installed |"),
            "{md}"
        );
        assert!(
            bench
                .to_json()
                .contains("\"skipped\": \"@openai/codex 0.169.0 is not installed\"")
        );
    }

    fn case(id: &str, skill: &str, passed: bool, wall_ms: u64, tokens: u64) -> CaseResult {
        CaseResult {
            id: id.to_owned(),
            name: String::new(),
            proves: String::new(),
            file: String::new(),
            skill: skill.to_owned(),
            prompt: None,
            passed,
            skipped: None,
            expectations: vec![Grade::new("the check", passed, "evidence")],
            ticks: 1,
            wall: Duration::from_millis(wall_ms),
            tokens_in: tokens,
            tokens_out: 0,
            sandbox: None,
            timeline: Vec::new(),
            snapshots: Vec::new(),
            phases: Default::default(),
        }
    }

    fn suite(review_passes: bool) -> Vec<CaseResult> {
        vec![
            case("w1", "work", true, 100, 1000),
            case("r1", "review", true, 200, 0),
            case("w2", "work", true, 300, 3000),
            case("r2", "review", review_passes, 400, 0),
        ]
    }

    #[test]
    fn skills_are_counted_work_first_with_means() {
        let b = Benchmark::new(&suite(true), Duration::from_secs(1));
        let names: Vec<&str> = b.skills.iter().map(|s| s.skill.as_str()).collect();
        assert_eq!(names, ["work", "review"]);
        let work = b.skill("work").unwrap();
        assert_eq!((work.cases, work.passed, work.pass_rate), (2, 2, 1.0));
        assert_eq!(work.mean_wall_seconds, 0.2);
        assert_eq!(work.mean_tokens, 2000.0);
        assert!(b.below_threshold().is_empty());
        let back: Benchmark = serde_json::from_str(&b.to_json()).unwrap();
        assert_eq!(back, b, "benchmark.json reads back as written");
    }

    #[test]
    fn a_tier_1_skill_under_80_percent_gets_spec_0017s_message() {
        let b = Benchmark::new(&suite(false), Duration::from_secs(1));
        assert_eq!(
            b.below_threshold(),
            ["Tier 1 skill 'review' pass rate is 50% (threshold: 80%)"]
        );
        assert_eq!(percent(0.9412), "94.1%");
    }

    #[test]
    fn the_summary_shows_deltas_the_threshold_and_the_failing_case() {
        let old = Benchmark::new(&suite(true), Duration::from_secs(1));
        let results = suite(false);
        let new = Benchmark::new(&results, Duration::from_secs(1));
        let md = summary(
            &new,
            Some((&old, "evals/benchmarks/old.json")),
            &Failing::of(&results),
        );
        assert!(
            md.starts_with("## Skill evals: 3 of 4 cases passed\n"),
            "{md}"
        );
        assert!(
            md.contains("| review | 2 | 50% (−50.0 pts) | 0.30s (±0s) | 0 (±0) |"),
            "{md}"
        );
        assert!(md.contains("| work | 2 | 100% (±0 pts) |"), "{md}");
        assert!(
            md.contains("- Tier 1 skill 'review' pass rate is 50% (threshold: 80%)"),
            "{md}"
        );
        assert!(md.contains("| `r2` | review | the check |"), "{md}");
        assert!(md.contains("`evals/benchmarks/old.json`"), "{md}");

        let mut out = Vec::new();
        table(&mut out, &new, Some(&old));
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("review        2  50% (−50.0 pts)"), "{text}");
    }

    #[test]
    fn a_directory_compares_with_its_newest_recording() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = Benchmark::new(&suite(true), Duration::from_secs(1));
        for (date, commit) in [("2026-11-01", "aaa"), ("2026-11-20", "bbb")] {
            b.recorded = Some(Recorded {
                date: date.to_owned(),
                commit: commit.to_owned(),
            });
            record(dir.path(), &b).unwrap();
        }
        let (loaded, file) = load(dir.path()).unwrap();
        assert!(file.ends_with("2026-11-20-bbb.json"), "{}", file.display());
        assert_eq!(loaded.recorded.unwrap().commit, "bbb");

        let old = dir.path().join("old.json");
        std::fs::write(&old, r#"{"run_summary":{"cases":1,"passed":1,"pass_rate":1.0,"wall_seconds":1.0,"tokens":0},"cases":[{"id":"x","passed":true,"pass_rate":1.0,"ticks":1,"wall_seconds":0.1,"tokens":{"in":0,"out":0,"total":0}}]}"#).unwrap();
        let err = load(&old).unwrap_err();
        assert!(matches!(err, BenchmarkError::NoSkills { .. }), "{err}");
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            load(empty.path()).unwrap_err(),
            BenchmarkError::Empty { .. }
        ));
    }
}
