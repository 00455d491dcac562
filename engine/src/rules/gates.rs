//! The user-prompt gates (ADR-0028 "User-prompt gates"): their
//! exact questions and options, and where answers come from.
//!
//! Seven gates, a closed set ([`GateName`]), each with the contract's
//! question text and option list. They are asked at tick entry in a fixed
//! order — the declaration order of [`GateName`] — and never debounced: the
//! same gate is asked again on every tick its trigger holds, and a resumed
//! run never replays a recorded answer.
//!
//! Answers come from, in order ([`Answerer`]): `--answer GATE=ANSWER` (this
//! tick only), `--answers FILE` (a scripted user: ordered entries, each
//! optionally matched on the question text or the iteration), an interactive
//! prompt when stdin is a terminal, else [`GateError::Unanswered`] — the
//! tick exits 4 with the question and the flag that would answer it, having
//! changed nothing. Only the gate's listed options are accepted; `raise`
//! carries the new ceilings (`raise max_iterations=10 max_dollars=40`).

use std::fmt;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::state::budget::Dimension;
use crate::yaml::{self, YamlError};

/// The gates, in the order a tick asks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateName {
    ForceUnlock,
    ResumeDivergence,
    BacklogDrift,
    RepeatedFailure,
    AmbiguousCriteria,
    BudgetEscalation,
    PostFeedbackMerge,
}

impl GateName {
    pub const ALL: [GateName; 7] = [
        GateName::ForceUnlock,
        GateName::ResumeDivergence,
        GateName::BacklogDrift,
        GateName::RepeatedFailure,
        GateName::AmbiguousCriteria,
        GateName::BudgetEscalation,
        GateName::PostFeedbackMerge,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GateName::ForceUnlock => "force-unlock",
            GateName::ResumeDivergence => "resume-divergence",
            GateName::BacklogDrift => "backlog-drift",
            GateName::RepeatedFailure => "repeated-failure",
            GateName::AmbiguousCriteria => "ambiguous-criteria",
            GateName::BudgetEscalation => "budget-escalation",
            GateName::PostFeedbackMerge => "post-feedback-merge",
        }
    }

    /// The options the gate accepts, in the contract's order.
    pub fn options(self) -> &'static [&'static str] {
        match self {
            GateName::BacklogDrift => &["re-propose", "continue", "stop"],
            GateName::AmbiguousCriteria => &["skip", "escalate", "proceed", "stop"],
            GateName::BudgetEscalation => &["continue", "raise", "stop"],
            GateName::PostFeedbackMerge => &["merge", "hold", "stop"],
            GateName::ForceUnlock => &["yes", "no", "stop"],
            GateName::RepeatedFailure => &["skip", "retry", "stop"],
            GateName::ResumeDivergence => &["re-attach", "skip", "stop"],
        }
    }

    /// The option taken when a posted gate's deadline passes with no
    /// answer (docs/src/gates-away.md): the one that changes least — stop
    /// where going on would spend or decide, skip or hold where the gate
    /// concerns one target.
    pub fn conservative(self) -> &'static str {
        match self {
            GateName::ForceUnlock => "no",
            GateName::ResumeDivergence | GateName::RepeatedFailure => "skip",
            GateName::AmbiguousCriteria => "skip",
            GateName::PostFeedbackMerge => "hold",
            GateName::BacklogDrift | GateName::BudgetEscalation => "stop",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.name() == name)
    }
}

impl fmt::Display for GateName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A question put to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub gate: GateName,
    pub text: String,
}

impl Question {
    pub fn options(&self) -> &'static [&'static str] {
        self.gate.options()
    }

    /// The issue or PR the question concerns (the first `#N` in it), or
    /// `None` for a run-wide gate (budgets, drift, the lock).
    pub fn subject(&self) -> Option<u64> {
        let at = self.text.find('#')?;
        let digits: String = self.text[at + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    }

    pub fn backlog_drift() -> Self {
        Self {
            gate: GateName::BacklogDrift,
            text: "Backlog changed since last iteration. Re-propose the next batch?".into(),
        }
    }

    pub fn ambiguous_criteria(issue: u64) -> Self {
        Self {
            gate: GateName::AmbiguousCriteria,
            text: format!(
                "Issue #{issue} has ambiguous criteria. Skip, escalate, or proceed with my best interpretation?"
            ),
        }
    }

    /// The one combined prompt for every budget that tripped 80%.
    pub fn budget_escalation(tripped: &[Tripped]) -> Self {
        let items: Vec<String> = tripped.iter().map(Tripped::phrase).collect();
        let (list, ceiling) = match items.as_slice() {
            [one] => (one.clone(), "ceiling"),
            [a, b] => (format!("{a} and {b}"), "ceiling(s)"),
            [init @ .., last] => (format!("{}, and {last}", init.join(", ")), "ceiling(s)"),
            [] => (String::new(), "ceiling"),
        };
        Self {
            gate: GateName::BudgetEscalation,
            text: format!("Approaching {list}. Continue, raise {ceiling}, or stop?"),
        }
    }

    pub fn post_feedback_merge(pr: u64) -> Self {
        Self {
            gate: GateName::PostFeedbackMerge,
            text: format!(
                "Responder addressed human feedback on PR #{pr}. Merge now or hold for human re-review?"
            ),
        }
    }

    pub fn force_unlock() -> Self {
        Self {
            gate: GateName::ForceUnlock,
            text: "Force-unlock previous iteration's lock? This may corrupt in-flight work.".into(),
        }
    }

    /// `target` is `#N`.
    pub fn repeated_failure(target: &str, root_cause: &str) -> Self {
        Self {
            gate: GateName::RepeatedFailure,
            text: format!(
                "Issue/PR {target} failed twice with: {root_cause}. Skip, retry once more, or stop the loop?"
            ),
        }
    }

    pub fn resume_divergence(pr: u64) -> Self {
        Self {
            gate: GateName::ResumeDivergence,
            text: format!(
                "PR #{pr} has diverged since the prior iteration crashed — re-attach, skip, or stop the loop?"
            ),
        }
    }
}

/// A budget at or past 80% this tick: its dimension and the values shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tripped {
    pub dim: Dimension,
    pub used: f64,
    pub max: f64,
}

impl Tripped {
    /// `iterations (4/5)`, `dollars ($21.00/$25.00)`.
    pub fn phrase(&self) -> String {
        match self.dim {
            Dimension::Dollars => format!("dollars (${:.2}/${:.2})", self.used, self.max),
            dim => format!("{} ({}/{})", dim.noun(), self.used as u64, self.max as u64),
        }
    }
}

/// An accepted answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The chosen option, as the gate spells it.
    pub option: &'static str,
    /// For `raise`: the new ceilings.
    pub raises: Vec<(Dimension, f64)>,
}

impl Answer {
    pub fn is(&self, option: &str) -> bool {
        self.option == option
    }

    /// The answer as recorded in history: the option, then any ceilings.
    pub fn recorded(&self) -> String {
        let mut text = self.option.to_owned();
        for (dim, value) in &self.raises {
            text.push_str(&format!(" {}={}", dim.field(), value));
        }
        text
    }
}

/// Why an answer was refused or could not be had.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GateError {
    #[error("gate {} needs an answer and none could be had: {}", question.gate, question.text)]
    Unanswered { question: Question },
    #[error("{source_name}: `{given}` is not an answer to gate {gate}: {detail}")]
    BadAnswer {
        gate: GateName,
        given: String,
        source_name: String,
        detail: String,
    },
}

impl GateError {
    /// The `help:` line: how to answer.
    pub fn help(&self) -> String {
        match self {
            GateError::Unanswered { question } => format!(
                "answer it with --answer {}=<{}> (options: {}), or with an entry in --answers FILE",
                question.gate,
                question.options().join("|"),
                question.options().join(", ")
            ),
            GateError::BadAnswer { gate, .. } => {
                let example = if *gate == GateName::BudgetEscalation {
                    " (raise takes new ceilings: `raise max_iterations=10`)"
                } else {
                    ""
                };
                format!(
                    "gate {gate} accepts: {}{example}",
                    gate.options().join(", ")
                )
            }
        }
    }
}

/// Parses an answer against `gate`'s options.
pub fn parse_answer(gate: GateName, text: &str) -> Result<Answer, String> {
    let mut words = text.split_whitespace();
    let first = words.next().ok_or("the answer is empty")?;
    let option = gate
        .options()
        .iter()
        .copied()
        .find(|o| o.eq_ignore_ascii_case(first))
        .ok_or_else(|| format!("expected one of {}", gate.options().join(", ")))?;
    let rest: Vec<&str> = words.collect();
    if option != "raise" {
        if !rest.is_empty() {
            return Err(format!("`{option}` takes nothing after it"));
        }
        return Ok(Answer {
            option,
            raises: Vec::new(),
        });
    }
    let mut raises = Vec::new();
    for pair in rest {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("`{pair}` is not a ceiling like max_iterations=10"))?;
        let dim = Dimension::from_field(key).ok_or_else(|| {
            format!("`{key}` is not a budget (max_iterations, max_prs, max_minutes, max_dollars)")
        })?;
        let value: f64 = value
            .trim_start_matches('$')
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| format!("`{value}` is not a positive number"))?;
        raises.push((dim, value));
    }
    if raises.is_empty() {
        return Err("raise needs the new ceiling(s), e.g. `raise max_iterations=10`".into());
    }
    Ok(Answer { option, raises })
}

/// `--answer GATE=ANSWER`.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerFlag {
    pub gate: GateName,
    pub answer: String,
}

fn suggest(name: &str) -> String {
    let best = GateName::ALL
        .iter()
        .map(|g| (edit_distance(name, g.name()), g.name()))
        .min_by_key(|(d, _)| *d);
    match best {
        Some((d, g)) if d <= 4 => format!(" — did you mean `{g}`?"),
        _ => format!(
            " (gates: {})",
            GateName::ALL
                .iter()
                .map(|g| g.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Levenshtein distance, for "did you mean" suggestions (also used by the
/// scenario harness for its own names).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

impl std::str::FromStr for AnswerFlag {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (gate, answer) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}` is not GATE=ANSWER, e.g. backlog-drift=continue"))?;
        let gate = GateName::from_name(gate.trim())
            .ok_or_else(|| format!("unknown gate `{gate}`{}", suggest(gate.trim())))?;
        parse_answer(gate, answer).map_err(|e| format!("{gate}={answer}: {e}"))?;
        Ok(Self {
            gate,
            answer: answer.trim().to_owned(),
        })
    }
}

/// One entry of an `--answers` file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedAnswer {
    /// The gate this answers.
    pub gate: GateName,
    /// The answer, as typed at the prompt.
    pub answer: String,
    /// Answer only a question containing this text (e.g. `"#149"`).
    #[serde(default, rename = "match")]
    pub matches: Option<String>,
    /// Answer only in this iteration.
    #[serde(default)]
    pub iteration: Option<u64>,
}

/// A scripted user: the entries of an `--answers` file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Script {
    pub path: PathBuf,
    pub entries: Vec<ScriptedAnswer>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read answers file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Yaml(#[from] YamlError),
    #[error("{}: entry {index} (gate {gate}): `{answer}` is not an answer: {detail}", path.display())]
    Answer {
        path: PathBuf,
        index: usize,
        gate: GateName,
        answer: String,
        detail: String,
    },
}

impl Script {
    /// Reads and validates an answers file: a YAML list of
    /// `{gate, answer, match?, iteration?}`.
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Self, ScriptError> {
        let entries: Vec<ScriptedAnswer> = if text.trim().is_empty() {
            Vec::new()
        } else {
            yaml::parse(
                path,
                text,
                "an answers file is a YAML list of `- gate: NAME` and `answer: OPTION` entries, optionally with `match: TEXT` and `iteration: N`",
            )?
        };
        for (i, e) in entries.iter().enumerate() {
            parse_answer(e.gate, &e.answer).map_err(|detail| ScriptError::Answer {
                path: path.to_path_buf(),
                index: i + 1,
                gate: e.gate,
                answer: e.answer.clone(),
                detail,
            })?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            entries,
        })
    }
}

/// The interactive prompt, when there is a person to ask.
pub trait Prompt {
    /// Asks `question`; `None` when no answer can be had (end of input).
    fn ask(&mut self, question: &Question) -> Option<String>;
}

/// No person to ask (stdin is not a terminal).
#[derive(Debug, Default)]
pub struct NoPrompt;

impl Prompt for NoPrompt {
    fn ask(&mut self, _: &Question) -> Option<String> {
        None
    }
}

/// Asks on a terminal: the question and options on `output`, the answer
/// from `input`; repeats until the answer is one of the options.
#[derive(Debug)]
pub struct LinePrompt<R, W> {
    pub input: R,
    pub output: W,
}

impl<R: BufRead, W: Write> Prompt for LinePrompt<R, W> {
    fn ask(&mut self, question: &Question) -> Option<String> {
        loop {
            let _ = write!(
                self.output,
                "\n? [{}] {}\n  ({}) > ",
                question.gate,
                question.text,
                question.options().join(" / ")
            );
            let _ = self.output.flush();
            let mut line = String::new();
            match self.input.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
            match parse_answer(question.gate, line.trim()) {
                Ok(_) => return Some(line.trim().to_owned()),
                Err(detail) => {
                    let _ = writeln!(self.output, "  {detail}");
                }
            }
        }
    }
}

/// Answers gates for one tick from the three sources, in order.
pub struct Answerer<'a> {
    flags: Vec<AnswerFlag>,
    flag_uses: Vec<bool>,
    script: Script,
    script_uses: Vec<bool>,
    prompt: &'a mut dyn Prompt,
    iteration: u64,
}

impl fmt::Debug for Answerer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Answerer")
            .field("flags", &self.flags)
            .field("script", &self.script)
            .field("iteration", &self.iteration)
            .finish_non_exhaustive()
    }
}

impl<'a> Answerer<'a> {
    pub fn new(
        flags: Vec<AnswerFlag>,
        script: Script,
        prompt: &'a mut dyn Prompt,
        iteration: u64,
    ) -> Self {
        let (flag_uses, script_uses) =
            (vec![false; flags.len()], vec![false; script.entries.len()]);
        Self {
            flags,
            flag_uses,
            script,
            script_uses,
            prompt,
            iteration,
        }
    }

    /// The iteration scripted entries are matched against.
    pub fn set_iteration(&mut self, iteration: u64) {
        self.iteration = iteration;
    }

    fn take_flag(&mut self, gate: GateName) -> Option<String> {
        let matching: Vec<usize> = (0..self.flags.len())
            .filter(|i| self.flags[*i].gate == gate)
            .collect();
        // Several flags for one gate answer its questions in order; the last
        // keeps answering further questions of that gate this tick.
        let pick = matching
            .iter()
            .copied()
            .find(|i| !self.flag_uses[*i])
            .or_else(|| matching.last().copied())?;
        self.flag_uses[pick] = true;
        Some(self.flags[pick].answer.clone())
    }

    fn take_scripted(&mut self, question: &Question) -> Option<String> {
        let iteration = self.iteration;
        let pick = self.script.entries.iter().enumerate().position(|(i, e)| {
            !self.script_uses[i]
                && e.gate == question.gate
                && e.iteration.is_none_or(|it| it == iteration)
                && e.matches
                    .as_deref()
                    .is_none_or(|m| question.text.contains(m))
        })?;
        self.script_uses[pick] = true;
        Some(self.script.entries[pick].answer.clone())
    }

    /// Answers `question`, or says why it cannot be.
    pub fn answer(&mut self, question: &Question) -> Result<Answer, GateError> {
        let (text, source_name) = if let Some(text) = self.take_flag(question.gate) {
            (text, "--answer".to_owned())
        } else if let Some(text) = self.take_scripted(question) {
            (text, self.script.path.display().to_string())
        } else if let Some(text) = self.prompt.ask(question) {
            (text, "the prompt".to_owned())
        } else {
            return Err(GateError::Unanswered {
                question: question.clone(),
            });
        };
        parse_answer(question.gate, &text).map_err(|detail| GateError::BadAnswer {
            gate: question.gate,
            given: text,
            source_name,
            detail,
        })
    }
}

#[cfg(test)]
mod tests;
