//! The two arms of a skill evaluation, as SPEC-0017 compares them: the
//! runs with the skill (the plugin loaded) and the baseline runs without
//! it, summarised the way skill-creator's `benchmark.json` does —
//! `run_summary.with_skill` / `without_skill` with a mean, standard
//! deviation, minimum and maximum per figure, a signed `delta`, and a
//! `runs[]` list whose `configuration` is `with_skill` or `without_skill`
//! ([`Arms`], [`ArmRun`]).
//!
//! The harness's own cases have one arm (the engine is deterministic); only
//! `claude plugin eval` runs ([`crate::reporting::plugin_eval`]) fill these
//! in, so every field that holds them in [`crate::reporting::benchmark`] is
//! optional and absent from the harness's benchmarks. A run's pass rate is
//! its share of graders that passed (its score); a case passes in an arm
//! when every run there scored 1.

use serde::{Deserialize, Serialize};

use crate::judging::grade::Grade;

/// `with_skill` or `without_skill`: which arm a run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Configuration {
    WithSkill,
    WithoutSkill,
}

impl Configuration {
    /// How the report names the arm.
    pub fn label(self) -> &'static str {
        match self {
            Configuration::WithSkill => "with the plugin",
            Configuration::WithoutSkill => "without the plugin",
        }
    }
}

/// A figure over several runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub mean: f64,
    /// The population standard deviation (0 for one run).
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
}

fn round(v: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (v * scale).round() / scale
}

impl Stat {
    /// The figure over `values`, rounded to `places` decimals; zeros for
    /// none.
    pub fn of(values: &[f64], places: i32) -> Self {
        if values.is_empty() {
            return Self {
                mean: 0.0,
                stddev: 0.0,
                min: 0.0,
                max: 0.0,
            };
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        Self {
            mean: round(mean, places),
            stddev: round(variance.sqrt(), places),
            min: round(values.iter().copied().fold(f64::INFINITY, f64::min), places),
            max: round(
                values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                places,
            ),
        }
    }
}

/// One run of one case in one arm (skill-creator's `runs[]` entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmRun {
    /// The case.
    pub eval_name: String,
    pub configuration: Configuration,
    /// From 1.
    pub run_number: usize,
    pub result: RunResult,
    /// Each grader as `{text, passed, evidence}`.
    pub expectations: Vec<Expectation>,
}

/// What one run scored and spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The share of graders that passed (the run's score), 0–1.
    pub pass_rate: f64,
    pub passed: usize,
    pub failed: usize,
    pub total: usize,
    pub time_seconds: f64,
    /// Input and output tokens the model answered with, when known (the
    /// offline run reads them from mock-model's log; `claude plugin eval`
    /// does not report them).
    pub tokens: u64,
    pub cost_usd: f64,
    /// Model turns.
    pub turns: u64,
    /// Why the run ended without grading, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One grader's verdict, in SPEC-0017's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expectation {
    pub text: String,
    pub passed: bool,
    pub evidence: String,
}

impl From<&Expectation> for Grade {
    fn from(e: &Expectation) -> Self {
        Grade::new(e.text.clone(), e.passed, e.evidence.clone())
    }
}

/// One arm's figures over a set of runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmSummary {
    pub runs: usize,
    /// Runs where every grader passed.
    pub passed: usize,
    pub pass_rate: Stat,
    pub time_seconds: Stat,
    pub tokens: Stat,
    pub cost_usd: Stat,
}

impl ArmSummary {
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a RunResult>) -> Self {
        let runs: Vec<&RunResult> = runs.into_iter().collect();
        let figure = |f: &dyn Fn(&RunResult) -> f64, places| {
            Stat::of(&runs.iter().map(|r| f(r)).collect::<Vec<f64>>(), places)
        };
        Self {
            runs: runs.len(),
            passed: runs.iter().filter(|r| r.failed == 0 && r.total > 0).count(),
            pass_rate: figure(&|r| r.pass_rate, 4),
            time_seconds: figure(&|r| r.time_seconds, 3),
            tokens: figure(&|r| r.tokens as f64, 1),
            cost_usd: figure(&|r| r.cost_usd, 6),
        }
    }

    /// Whether every run passed (and there was one).
    pub fn all_passed(&self) -> bool {
        self.runs > 0 && self.passed == self.runs
    }
}

/// With minus without, signed as skill-creator writes it (`+0.50`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArmDelta {
    pub pass_rate: String,
    pub time_seconds: String,
    pub tokens: String,
}

/// `+0.50`, `-6.6`, `+0`.
pub fn signed(v: f64, places: usize) -> String {
    let v = if round(v, places as i32) == 0.0 {
        0.0
    } else {
        v
    };
    if v < 0.0 {
        format!("{v:.places$}")
    } else {
        format!("+{v:.places$}")
    }
}

/// Both arms of a case, of a skill, or of the whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arms {
    pub with_skill: ArmSummary,
    pub without_skill: ArmSummary,
    pub delta: ArmDelta,
}

impl Arms {
    /// The arms of `runs` (those of either configuration).
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a ArmRun> + Clone) -> Self {
        let arm = |c: Configuration| {
            ArmSummary::of(
                runs.clone()
                    .into_iter()
                    .filter(move |r| r.configuration == c)
                    .map(|r| &r.result),
            )
        };
        let (with_skill, without_skill) = (
            arm(Configuration::WithSkill),
            arm(Configuration::WithoutSkill),
        );
        let delta = ArmDelta {
            pass_rate: signed(with_skill.pass_rate.mean - without_skill.pass_rate.mean, 2),
            time_seconds: signed(
                with_skill.time_seconds.mean - without_skill.time_seconds.mean,
                1,
            ),
            tokens: signed(with_skill.tokens.mean - without_skill.tokens.mean, 0),
        };
        Self {
            with_skill,
            without_skill,
            delta,
        }
    }

    /// With minus without, of the mean pass rate.
    pub fn pass_rate_delta(&self) -> f64 {
        round(
            self.with_skill.pass_rate.mean - self.without_skill.pass_rate.mean,
            4,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(case: &str, configuration: Configuration, score: f64, seconds: f64) -> ArmRun {
        let total = 4;
        let passed = (score * total as f64).round() as usize;
        ArmRun {
            eval_name: case.to_owned(),
            configuration,
            run_number: 1,
            result: RunResult {
                pass_rate: score,
                passed,
                failed: total - passed,
                total,
                time_seconds: seconds,
                tokens: 1000,
                cost_usd: 0.01,
                turns: 2,
                error: None,
            },
            expectations: Vec::new(),
        }
    }

    #[test]
    fn each_arm_is_summarised_apart_and_the_delta_is_signed() {
        let runs = [
            run("a", Configuration::WithSkill, 1.0, 2.0),
            run("a", Configuration::WithSkill, 0.5, 4.0),
            run("a", Configuration::WithoutSkill, 0.25, 1.0),
        ];
        let arms = Arms::of(&runs);
        assert_eq!(arms.with_skill.runs, 2);
        assert_eq!(arms.with_skill.passed, 1);
        assert_eq!(
            arms.with_skill.pass_rate,
            Stat {
                mean: 0.75,
                stddev: 0.25,
                min: 0.5,
                max: 1.0
            }
        );
        assert!(!arms.with_skill.all_passed());
        assert_eq!(arms.without_skill.runs, 1);
        assert_eq!(arms.delta.pass_rate, "+0.50");
        assert_eq!(arms.delta.time_seconds, "+2.0");
        assert_eq!(arms.delta.tokens, "+0");
        assert_eq!(arms.pass_rate_delta(), 0.5);
    }

    #[test]
    fn a_loss_is_negative_and_no_runs_are_zeros() {
        assert_eq!(signed(-0.333, 2), "-0.33");
        assert_eq!(signed(-0.001, 2), "+0.00");
        assert_eq!(Stat::of(&[], 2).mean, 0.0);
        let none: [ArmRun; 0] = [];
        assert!(!Arms::of(&none).with_skill.all_passed());
    }
}
