//! Claude Code's own runner, `claude plugin eval --json`, read into this
//! harness's reports: each case's plugin arm and no-plugin baseline arm
//! become SPEC-0017 `with_skill` / `without_skill` ([`crate::reporting::arms`]),
//! so `benchmark.json`, `summary.md` and the viewer show a `plugin-evals/`
//! run beside the harness's own.
//!
//! A run directory ([`RunDir`]) is what `ci/plugin-evals` writes per
//! eval: `result.json` (the runner's `--json`; the shape of Claude Code
//! 2.1.328 and 2.1.332, `schemaVersion` 1, read leniently — unknown fields
//! are Claude Code's to add) and, offline, `model.log` (mock-model's
//! request log, which gives each run's tokens: `claude plugin eval`
//! reports cost but no tokens).
//! A directory named `CASE.negative-NAME` holds an answer scripted to
//! break its case: it is [`Catch`]ed when a grader that passed in every
//! run of an arm with the case's own answer fails in that arm — the proof
//! that the graders read what they claim to. A case is reported under its
//! name when its directory is `CASE.ANSWER` (one eval per case, as
//! offline), and as `DIR:CASE` from a directory of a whole suite (`live`),
//! so the two can share one report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::reporting::arms::{ArmRun, Arms, Configuration, Expectation, RunResult};
use crate::reporting::benchmark::Benchmark;
use crate::reporting::report::CaseResult;

/// The file `claude plugin eval --json FILE` writes, in a run directory.
pub const RESULT_FILE: &str = "result.json";
/// mock-model's `--log` file, in an offline run directory.
pub const MODEL_LOG: &str = "model.log";
/// What marks a run directory's answer as one that must be caught.
pub const NEGATIVE: &str = ".negative-";

/// `claude plugin eval --json` output (the fields read here).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalReport {
    pub schema_version: u32,
    pub claude_version: String,
    pub duration_seconds: f64,
    pub cost_usd: f64,
    /// Stopped early (a cost ceiling, an interrupt).
    #[serde(default)]
    pub partial: bool,
    pub cases: Vec<EvalCase>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalCase {
    pub name: String,
    /// The case's directory, relative to the plugin.
    pub dir: String,
    pub prompt_markdown: String,
    pub arms: EvalArms,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EvalArms {
    pub with: Vec<EvalRun>,
    /// Absent with `--ablation none`.
    #[serde(default)]
    pub without: Vec<EvalRun>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalRun {
    pub score: f64,
    pub passed: bool,
    pub turns: u64,
    pub cost_usd: f64,
    pub duration_seconds: f64,
    pub started_at: jiff::Timestamp,
    pub error: Option<String>,
    pub graders: Vec<EvalGrader>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalGrader {
    pub name: String,
    pub passed: bool,
    pub explanation: String,
    /// A plugin-fired indicator under with-without, not scored.
    #[serde(default)]
    pub with_only: bool,
}

/// Why a run directory cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PluginEvalError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not `claude plugin eval --json` output: {detail}", path.display())]
    Parse { path: PathBuf, detail: String },
    #[error("{}", .0)]
    Log(#[from] sdd_mocks::model::log::LogReadError),
    #[error("{} holds {count} cases; an answer that must be caught is run against one case", path.display())]
    NegativeOfMany { path: PathBuf, count: usize },
}

impl PluginEvalError {
    pub fn help(&self) -> String {
        match self {
            PluginEvalError::Read { .. } | PluginEvalError::Parse { .. } => format!(
                "give the directories ci/plugin-evals writes (target/plugin-evals/runs/*), each holding the {RESULT_FILE} of `claude plugin eval --json {RESULT_FILE}`"
            ),
            PluginEvalError::Log(_) => {
                format!("{MODEL_LOG} must be the `mock-model --log` file of the run, or absent")
            }
            PluginEvalError::NegativeOfMany { .. } => {
                "run each negative answer with `--case CASE` (ci/plugin-evals does)".to_owned()
            }
        }
    }
}

/// Which answer a run directory holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The case's own answer (offline `model.yaml`), or the real model.
    Case,
    /// `negative-NAME`: an answer scripted to break the case.
    Negative(String),
}

/// One eval's results, as `ci/plugin-evals` leaves them.
#[derive(Debug, Clone)]
pub struct RunDir {
    pub path: PathBuf,
    pub answer: Answer,
    /// `DIR:` before each case's name, for a directory not named
    /// `CASE.ANSWER`.
    pub prefix: Option<String>,
    pub report: EvalReport,
    /// Each case's runs, both arms, in the report's order, with tokens
    /// from `model.log` when there is one.
    pub runs: Vec<Vec<ArmRun>>,
}

impl RunDir {
    pub fn load(path: &Path) -> Result<Self, PluginEvalError> {
        let file = path.join(RESULT_FILE);
        let text = std::fs::read_to_string(&file).map_err(|source| PluginEvalError::Read {
            path: file.clone(),
            source,
        })?;
        let report: EvalReport =
            serde_json::from_str(&text).map_err(|e| PluginEvalError::Parse {
                path: file.clone(),
                detail: e.to_string(),
            })?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let answer = match name.find(NEGATIVE) {
            Some(i) => Answer::Negative(name[i + 1..].to_owned()),
            None => Answer::Case,
        };
        let prefix = (!name.contains('.')).then(|| format!("{name}:"));
        if matches!(answer, Answer::Negative(_)) && report.cases.len() != 1 {
            return Err(PluginEvalError::NegativeOfMany {
                path: file,
                count: report.cases.len(),
            });
        }
        let log = path.join(MODEL_LOG);
        let log = if log.is_file() {
            Some(sdd_mocks::model::log::read(&log)?)
        } else {
            None
        };
        let runs = report
            .cases
            .iter()
            .map(|case| {
                let id = format!("{}{}", prefix.as_deref().unwrap_or(""), case.name);
                arm_runs(case, &id, log.as_deref())
            })
            .collect();
        Ok(Self {
            path: path.to_path_buf(),
            answer,
            prefix,
            report,
            runs,
        })
    }
}

/// Every run of `case`, reported as `id`, with the tokens `log` returned
/// during it: Claude Code runs the arms and their runs one after another
/// against the one server, so a request belongs to the last run started
/// before it.
pub fn arm_runs(
    case: &EvalCase,
    id: &str,
    log: Option<&[sdd_mocks::model::LogEntry]>,
) -> Vec<ArmRun> {
    let mut all: Vec<(Configuration, usize, &EvalRun)> = Vec::new();
    for (configuration, runs) in [
        (Configuration::WithSkill, &case.arms.with),
        (Configuration::WithoutSkill, &case.arms.without),
    ] {
        for (i, run) in runs.iter().enumerate() {
            all.push((configuration, i + 1, run));
        }
    }
    let mut starts: Vec<jiff::Timestamp> = all.iter().map(|(_, _, r)| r.started_at).collect();
    starts.sort();
    let tokens_of = |run: &EvalRun| -> u64 {
        let Some(log) = log else { return 0 };
        let end = starts.iter().find(|s| **s > run.started_at).copied();
        log.iter()
            .filter(|e| e.at >= run.started_at && end.is_none_or(|end| e.at < end))
            .filter_map(|e| e.usage.as_ref())
            .map(|u| u.input + u.output + u.cache_read + u.cache_creation)
            .sum()
    };
    all.into_iter()
        .map(|(configuration, run_number, run)| {
            let scored: Vec<&EvalGrader> = run.graders.iter().filter(|g| !g.with_only).collect();
            let passed = scored.iter().filter(|g| g.passed).count();
            ArmRun {
                eval_name: id.to_owned(),
                configuration,
                run_number,
                result: RunResult {
                    pass_rate: run.score,
                    passed,
                    failed: scored.len() - passed,
                    total: scored.len(),
                    time_seconds: run.duration_seconds,
                    tokens: tokens_of(run),
                    cost_usd: run.cost_usd,
                    turns: run.turns,
                    error: run.error.clone(),
                },
                expectations: run
                    .graders
                    .iter()
                    .map(|g| Expectation {
                        text: g.name.clone(),
                        passed: g.passed,
                        evidence: g.explanation.clone(),
                    })
                    .collect(),
            }
        })
        .collect()
}

/// The skill a case's prompt runs: `/sdd-loop:review …` or `/sdd:review
/// …` is `review`, anything else `work`.
pub fn skill_of(prompt: &str) -> &'static str {
    let command = prompt
        .split_whitespace()
        .find(|w| w.starts_with('/') && *w != "/loop")
        .unwrap_or("");
    if command.ends_with(":review") {
        "review"
    } else {
        "work"
    }
}

/// A case as the harness's reports show it: the plugin arm's graders are
/// its assertions (each run's, when there are several); it passes when
/// every plugin-arm run scored 1.
pub fn case_result(case: &EvalCase, runs: &[ArmRun]) -> CaseResult {
    let with: Vec<&ArmRun> = runs
        .iter()
        .filter(|r| r.configuration == Configuration::WithSkill)
        .collect();
    let several = with.len() > 1;
    let mut expectations = Vec::new();
    for run in &with {
        if let Some(error) = &run.result.error {
            expectations.push(crate::judging::grade::Grade::new(
                format!("run {} ends without an error", run.run_number),
                false,
                error.clone(),
            ));
        }
        for e in &run.expectations {
            let mut grade: crate::judging::grade::Grade = e.into();
            if several {
                grade.text = format!("run {}: {}", run.run_number, grade.text);
            }
            expectations.push(grade);
        }
    }
    let seconds: f64 = with.iter().map(|r| r.result.time_seconds).sum();
    CaseResult {
        id: runs
            .first()
            .map_or_else(|| case.name.clone(), |r| r.eval_name.clone()),
        name: format!("claude plugin eval: {}", case.name),
        proves: "the plugin, run by Claude Code's own runner (plugin-evals/)".to_owned(),
        file: format!("{}/case.yaml", case.dir),
        skill: skill_of(&case.prompt_markdown).to_owned(),
        prompt: Some(case.prompt_markdown.clone()),
        passed: !with.is_empty()
            && with
                .iter()
                .all(|r| r.result.error.is_none() && r.result.failed == 0),
        skipped: None,
        expectations,
        ticks: 0,
        wall: Duration::from_secs_f64(seconds.max(0.0)),
        tokens_in: with.iter().map(|r| r.result.tokens).sum(),
        tokens_out: 0,
        sandbox: None,
        timeline: Vec::new(),
        snapshots: Vec::new(),
        phases: Default::default(),
    }
}

/// The cases of `dirs` that hold the cases' own answers: their results
/// and their runs.
pub fn cases(dirs: &[RunDir]) -> (Vec<CaseResult>, Vec<ArmRun>) {
    let mut results = Vec::new();
    let mut runs = Vec::new();
    for dir in dirs.iter().filter(|d| d.answer == Answer::Case) {
        for (case, case_runs) in dir.report.cases.iter().zip(&dir.runs) {
            results.push(case_result(case, case_runs));
            runs.extend(case_runs.iter().cloned());
        }
    }
    (results, runs)
}

/// `benchmark.json` of a plugin-eval run: the harness's figures over the
/// plugin arm, and both arms per case, per skill and in all.
pub fn benchmark(results: &[CaseResult], runs: &[ArmRun], wall: Duration) -> Benchmark {
    let mut bench = Benchmark::new(results, wall);
    add_arms(&mut bench, results, runs);
    bench
}

/// Both arms of `runs` into `bench`, whose cases may include the
/// harness's own (`sdd-evals run --plugin-evals`): in all, for each skill
/// with a plugin-eval case, and for each plugin-eval case.
pub fn add_arms(bench: &mut Benchmark, results: &[CaseResult], runs: &[ArmRun]) {
    if runs.is_empty() {
        return;
    }
    let all = Arms::of(runs);
    bench.run_summary.with_skill = Some(all.with_skill);
    bench.run_summary.without_skill = Some(all.without_skill);
    bench.run_summary.delta = Some(all.delta);
    for skill in &mut bench.skills {
        let of_skill: Vec<&ArmRun> = runs
            .iter()
            .filter(|r| {
                results
                    .iter()
                    .any(|c| c.id == r.eval_name && c.skill == skill.skill)
            })
            .collect();
        if !of_skill.is_empty() {
            skill.arms = Some(Arms::of(of_skill.iter().copied()));
        }
    }
    for case in &mut bench.cases {
        let of_case: Vec<&ArmRun> = runs.iter().filter(|r| r.eval_name == case.id).collect();
        if !of_case.is_empty() {
            case.arms = Some(Arms::of(of_case.iter().copied()));
        }
    }
    bench.runs = runs.to_vec();
}

/// Whether an answer that breaks its case was caught.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catch {
    pub case: String,
    /// `negative-NAME`.
    pub answer: String,
    /// The graders that passed in every run of an arm with the case's own
    /// answer and failed in that arm with this one.
    pub flipped: Vec<(Configuration, String)>,
    /// Whether the plugin arm asked the model at all (0 turns in every
    /// run: a hook answered the prompt), so only the baseline arm could
    /// meet this answer.
    pub plugin_arm_reached: bool,
}

impl Catch {
    pub fn caught(&self) -> bool {
        !self.flipped.is_empty()
    }
}

/// Every negative answer of `dirs`, against its case's own answer; a
/// negative whose case has no run of its own is not caught.
pub fn catches(dirs: &[RunDir]) -> Vec<Catch> {
    let (_, positive) = cases(dirs);
    let positive = &positive;
    dirs.iter()
        .filter_map(|dir| match &dir.answer {
            Answer::Negative(name) => Some((dir, name)),
            Answer::Case => None,
        })
        .flat_map(|(dir, name)| {
            dir.report
                .cases
                .iter()
                .zip(&dir.runs)
                .map(move |(case, negative)| {
                    let mut flipped = Vec::new();
                    for configuration in [Configuration::WithSkill, Configuration::WithoutSkill] {
                        let good: Vec<&ArmRun> = positive
                            .iter()
                            .filter(|r| {
                                r.eval_name == case.name && r.configuration == configuration
                            })
                            .collect();
                        let bad: Vec<&ArmRun> = negative
                            .iter()
                            .filter(|r| r.configuration == configuration)
                            .collect();
                        let Some(first) = good.first() else { continue };
                        for e in &first.expectations {
                            let held = good.iter().all(|r| {
                                r.expectations.iter().any(|x| x.text == e.text && x.passed)
                            });
                            let broke = bad.iter().any(|r| {
                                r.expectations.iter().any(|x| x.text == e.text && !x.passed)
                            });
                            if held && broke {
                                flipped.push((configuration, e.text.clone()));
                            }
                        }
                    }
                    Catch {
                        case: case.name.clone(),
                        answer: name.clone(),
                        flipped,
                        plugin_arm_reached: case.arms.with.iter().any(|r| r.turns > 0),
                    }
                })
        })
        .collect()
}

/// The Markdown section on the negative answers, for `summary.md`.
pub fn catches_md(catches: &[Catch]) -> String {
    if catches.is_empty() {
        return String::new();
    }
    let caught = catches.iter().filter(|c| c.caught()).count();
    let mut md = format!(
        "### Answers that break their case: {caught} of {} caught\n\n| case | answer | caught by |\n|---|---|---|\n",
        catches.len()
    );
    for c in catches {
        let by = if c.caught() {
            let names: Vec<String> = c
                .flipped
                .iter()
                .map(|(arm, grader)| format!("`{grader}` ({})", arm.label()))
                .collect();
            names.join(", ")
        } else {
            "**not caught**: no grader that held with the case's own answer failed".to_owned()
        };
        let reach = if c.plugin_arm_reached {
            ""
        } else {
            " — the plugin arm never asked the model (a hook answered the prompt)"
        };
        md.push_str(&format!(
            "| `{}` | `{}` | {by}{reach} |\n",
            c.case, c.answer
        ));
    }
    md.push('\n');
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESULT: &str = include_str!("plugin_eval_example.json");

    fn dir(answer: Answer, text: &str) -> RunDir {
        let report: EvalReport = serde_json::from_str(text).unwrap();
        let runs = report
            .cases
            .iter()
            .map(|c| arm_runs(c, &c.name, None))
            .collect();
        RunDir {
            path: PathBuf::from("runs/x"),
            answer,
            prefix: None,
            report,
            runs,
        }
    }

    /// The same case with the plugin arm's `one-pr-at-the-tracker` failed,
    /// as a second PR would leave it.
    fn second_pr() -> String {
        RESULT.replacen(
            "\"passed\": true,\n                \"weight\": 1,\n                \"explanation\": \"found 1 matches (expected 1)\"",
            "\"passed\": false,\n                \"weight\": 1,\n                \"explanation\": \"found 2 matches (expected 1)\"",
            1,
        )
    }

    #[test]
    fn the_plugin_arm_is_the_case_and_both_arms_reach_the_benchmark() {
        let dirs = [dir(Answer::Case, RESULT)];
        let (results, runs) = cases(&dirs);
        assert_eq!(results.len(), 1);
        let case = &results[0];
        assert_eq!(
            (case.id.as_str(), case.skill.as_str(), case.passed),
            ("work-opens-one-pr", "work", true)
        );
        assert_eq!(case.expectations.len(), 4);
        let bench = benchmark(&results, &runs, Duration::from_secs(3));
        let arms = bench.cases[0].arms.as_ref().unwrap();
        assert_eq!(
            (
                arms.with_skill.pass_rate.mean,
                arms.without_skill.pass_rate.mean
            ),
            (1.0, 0.0)
        );
        assert_eq!(arms.delta.pass_rate, "+1.00");
        assert_eq!(bench.runs.len(), 2);
        assert_eq!(bench.runs[1].configuration, Configuration::WithoutSkill);
        let json = bench.to_json();
        assert!(
            json.contains("\"configuration\": \"without_skill\""),
            "{json}"
        );
        let back: Benchmark = serde_json::from_str(&json).unwrap();
        assert_eq!(back, bench, "benchmark.json reads back as written");

        let md = crate::reporting::benchmark::summary(&bench, None, &[]);
        assert!(
            md.contains("| `work-opens-one-pr` | 1.00 | 0.00 | +1.00 |"),
            "{md}"
        );
        let page = crate::reporting::viewer::render(
            &results,
            crate::reporting::viewer::Run {
                benchmark: &bench,
                compared: None,
            },
        );
        assert!(
            page.contains("Run 1 without the plugin: score 0.00"),
            "the viewer shows the baseline arm's graders"
        );
        assert!(page.contains("<th class=\"num\">score with the plugin</th>"));
    }

    #[test]
    fn a_negative_is_caught_by_the_grader_it_breaks() {
        let broken = second_pr();
        let dirs = [
            dir(Answer::Case, RESULT),
            dir(Answer::Negative("negative-second-pr".into()), &broken),
        ];
        let catches = catches(&dirs);
        assert_eq!(catches.len(), 1);
        assert!(catches[0].caught());
        assert_eq!(
            catches[0].flipped,
            [(Configuration::WithSkill, "one-pr-at-the-tracker".to_owned())]
        );
        let md = catches_md(&catches);
        assert!(
            md.contains("| `work-opens-one-pr` | `negative-second-pr` | `one-pr-at-the-tracker` (with the plugin) |"),
            "{md}"
        );
    }

    /// A negative answer that changes nothing the graders read is reported
    /// as not caught: an answer must break a grader that held.
    #[test]
    fn a_negative_that_breaks_nothing_is_not_caught() {
        let dirs = [
            dir(Answer::Case, RESULT),
            dir(Answer::Negative("negative-harmless".into()), RESULT),
        ];
        let catches = catches(&dirs);
        assert!(!catches[0].caught());
        assert!(catches_md(&catches).contains("**not caught**"));
    }

    #[test]
    fn tokens_come_from_the_model_log_of_each_run() {
        let report: EvalReport = serde_json::from_str(RESULT).unwrap();
        let case = &report.cases[0];
        let line = |seq: u64, at: &str, input: u64| {
            format!(
                r#"{{"seq":{seq},"at":"{at}","api":"anthropic","method":"POST","path":"/v1/messages","query":null,"outcome":"turn","turn":{seq},"fault":null,"checks":[],"status":200,"stream":true,"model":"m","usage":{{"input":{input},"output":10,"cache_read":0,"cache_creation":0,"reasoning":0}},"response_id":null,"request_id":"r","error":null,"credential":null,"headers":{{}},"body":null}}"#
            )
        };
        let log: Vec<sdd_mocks::model::LogEntry> = [
            line(1, "2026-11-25T05:51:54Z", 100),
            line(2, "2026-11-25T05:51:55Z", 200),
            line(3, "2026-11-25T05:51:56Z", 400),
        ]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
        let runs = arm_runs(case, &case.name, Some(&log));
        assert_eq!(
            (runs[0].result.tokens, runs[1].result.tokens),
            (100 + 10 + 200 + 10, 400 + 10)
        );
    }

    /// `sdd-evals run --plugin-evals`: the harness's own cases keep one
    /// arm beside the plugin-eval cases, and a whole suite's directory
    /// names its cases `DIR:CASE` so an offline and a live run can share
    /// the report.
    #[test]
    fn harness_cases_keep_one_arm_beside_plugin_cases() {
        let dirs = [dir(Answer::Case, RESULT)];
        let (mut results, runs) = cases(&dirs);
        let mut own = results[0].clone();
        own.id = "c4-pr-budget".to_owned();
        results.insert(0, own);
        let mut bench = Benchmark::new(&results, Duration::from_secs(1));
        add_arms(&mut bench, &results, &runs);
        assert!(bench.cases[0].arms.is_none());
        assert!(bench.cases[1].arms.is_some());
        assert!(bench.run_summary.with_skill.is_some());

        let live = tempfile::tempdir().unwrap();
        let path = live.path().join("live");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join(RESULT_FILE), RESULT).unwrap();
        let loaded = RunDir::load(&path).unwrap();
        assert_eq!(loaded.answer, Answer::Case);
        let (live_results, _) = cases(&[loaded]);
        assert_eq!(live_results[0].id, "live:work-opens-one-pr");
    }

    #[test]
    fn the_skill_is_the_prompts_command() {
        assert_eq!(skill_of("/sdd-loop:review --loop --pr 142"), "review");
        assert_eq!(skill_of("/loop /sdd:review --loop"), "review");
        assert_eq!(skill_of("/sdd-loop:work --loop"), "work");
    }
}
