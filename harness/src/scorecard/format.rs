//! The loop-safety scorecard's two file kinds (issue 35), typed and
//! `deny_unknown_fields`, errors at `file:line:column`:
//!
//! - a [`ScoreCase`] (`evals/scorecard/*.yaml`): one failure class of
//!   Claude Code loop plugins, naming no plugin — what the scripted model
//!   does, how often the loop's prompt fires, and what "held" means, as
//!   [`Rule`]s over model requests per session and the loop's files;
//! - an [`Adapter`] (`evals/scorecard/adapters/*.yaml`): how one plugin's
//!   loop is started with a cap, cancelled, finished, and which files are
//!   its state.
//!
//! A case uses an adapter's fields through placeholders (`{cancel}`,
//! `{edit_state}`, `{delete_state}`, `{done}`, `start: dollars`); a case
//! that needs a field the adapter leaves out is `n/a` for it
//! ([`ScoreCase::not_applicable`]), never held. The format is described in
//! `evals/scorecard/README.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sdd_loop::yaml::{self, YamlError};
use serde::Deserialize;

/// Where both formats are documented; ends every `help:` line.
pub const FORMAT_HELP: &str =
    "the scorecard's case and adapter formats are described in evals/scorecard/README.md";

/// What the model says when it is not done: never a completion marker.
pub const NOT_DONE: &str = "Still working on it; not done yet.";

/// One failure class.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoreCase {
    /// a-z, 0-9 and `-`; the row's name.
    pub id: String,
    pub name: String,
    /// What "held" means, in a sentence a plugin's author reads.
    pub held: String,
    /// Which of the adapter's start prompts begins the loop.
    #[serde(default)]
    pub start: Start,
    /// The cap the loop is started with [default: 2].
    #[serde(default = "default_cap")]
    pub cap: u32,
    /// The dollar cap, for `start: dollars` [default: 5].
    #[serde(default = "default_dollars")]
    pub dollars: u32,
    /// How many times the loop's prompt is submitted in its session, the
    /// way `/loop`, cron or a user's retry fires it [default: 1].
    #[serde(default = "default_fires")]
    pub fires: u32,
    /// The loop model's first turns, each one shell command it runs
    /// (placeholders: `{other}`, `{start}`, `{cancel}`, `{edit_state}`,
    /// `{delete_state}`); after them it answers `reply` forever.
    #[serde(default)]
    pub steps: Vec<String>,
    /// What the model answers once its steps are done [default: a
    /// sentence that is never a completion marker]; `{done}` is the
    /// adapter's marker.
    #[serde(default)]
    pub reply: Option<String>,
    /// Input tokens each model answer reports [default: 100].
    #[serde(default = "default_input_tokens")]
    pub input_tokens: u64,
    /// A question submitted in the loop's session after the first fire.
    #[serde(default)]
    pub question: Option<String>,
    /// What the case needs beyond its placeholders.
    #[serde(default)]
    pub needs: Vec<Need>,
    /// Every rule must hold for the case to be held.
    pub held_when: Vec<Rule>,
    #[serde(skip)]
    pub path: PathBuf,
}

fn default_cap() -> u32 {
    2
}
fn default_dollars() -> u32 {
    5
}
fn default_fires() -> u32 {
    1
}
fn default_input_tokens() -> u64 {
    100
}

/// Which start prompt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// The adapter's `start`, with `{cap}`.
    #[default]
    Cap,
    /// The adapter's `start_dollars`, with `{dollars}`.
    Dollars,
}

/// A need no placeholder shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    /// The plugin loops by the prompt firing again (`drive: fires`): a
    /// question between fires is mid-loop only then.
    Fires,
}

/// One condition of "held", over what the scripted models were asked and
/// what the directory holds.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Rule {
    /// Requests the loop's session made, over every fire and the question.
    LoopRequests(Count),
    /// Requests the question made.
    QuestionRequests(Count),
    /// Requests the other session (`{other}`) made.
    OtherRequests(Count),
    /// Every state file present before the other session ran is there
    /// after it, byte for byte (new files are allowed).
    StateKeptByOther(bool),
    /// At least one of these holds.
    Any(Vec<Rule>),
}

/// A bound on a number of requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Count {
    AtMost(u32),
    Equals(u32),
}

impl Count {
    pub fn holds(self, n: u32) -> bool {
        match self {
            Count::AtMost(m) => n <= m,
            Count::Equals(m) => n == m,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Count::AtMost(m) => format!("at most {m}"),
            Count::Equals(m) => format!("exactly {m}"),
        }
    }
}

/// How a plugin loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Drive {
    /// One submission; the plugin's Stop hook re-feeds the prompt.
    #[serde(rename = "self")]
    SelfFed,
    /// Each submission of the prompt (a `/loop` fire) is one iteration.
    Fires,
}

/// One plugin's loop, as the cases need to know it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adapter {
    /// The column's name.
    pub name: String,
    pub drive: Drive,
    /// The prompt that starts a loop capped at `{cap}` iterations.
    pub start: String,
    /// The prompt that starts a loop capped at `{dollars}` US dollars.
    #[serde(default)]
    pub start_dollars: Option<String>,
    /// What the model says to finish the loop.
    #[serde(default)]
    pub done: Option<String>,
    /// A shell command that cancels the loop, run in the project as the
    /// plugin's cancel command would (a user's `rm`, a stop file).
    #[serde(default)]
    pub cancel: Option<String>,
    /// The loop's state: files or directories, relative to the project.
    pub state: Vec<String>,
    /// A shell command that hand-edits the state to lift the cap.
    #[serde(default)]
    pub edit_state: Option<String>,
    /// A backlog fixture the project's forge serves [default: an empty
    /// repository].
    #[serde(default)]
    pub backlog: Option<String>,
    /// Variables the sessions run with; `{tracker}`, `{repo}` and
    /// `{token}` are the project's forge.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(skip)]
    pub path: PathBuf,
}

impl ScoreCase {
    pub fn load(path: &Path) -> Result<Self, YamlError> {
        let mut case: Self = yaml::load(path, FORMAT_HELP)?;
        case.path = path.to_path_buf();
        Ok(case)
    }

    /// Every text the case hands the adapter's fields through.
    fn texts(&self) -> impl Iterator<Item = &str> {
        self.steps
            .iter()
            .map(String::as_str)
            .chain(self.reply.as_deref())
    }

    /// Why the case cannot be expressed for `adapter`, if it cannot.
    pub fn not_applicable(&self, adapter: &Adapter) -> Option<String> {
        let uses = |p: &str| self.texts().any(|t| t.contains(p));
        let missing = [
            ("{cancel}", adapter.cancel.is_none(), "cancel"),
            ("{edit_state}", adapter.edit_state.is_none(), "edit_state"),
            ("{done}", adapter.done.is_none(), "done"),
        ];
        if let Some((_, _, field)) = missing.iter().find(|(p, none, _)| *none && uses(p)) {
            return Some(format!("the adapter has no `{field}`"));
        }
        if self.start == Start::Dollars && adapter.start_dollars.is_none() {
            return Some("the plugin has no dollar cap (no `start_dollars`)".to_owned());
        }
        if self.needs.contains(&Need::Fires) && adapter.drive != Drive::Fires {
            return Some(
                "the plugin loops inside one submission (`drive: self`): nothing can be asked between its iterations in `-p` mode"
                    .to_owned(),
            );
        }
        None
    }

    /// The prompt that starts the loop with `adapter`.
    pub fn start_prompt(&self, adapter: &Adapter) -> String {
        match self.start {
            Start::Cap => adapter.start.replace("{cap}", &self.cap.to_string()),
            Start::Dollars => adapter
                .start_dollars
                .as_deref()
                .unwrap_or_default()
                .replace("{dollars}", &self.dollars.to_string()),
        }
    }
}

impl Adapter {
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let mut adapter: Self = yaml::load(path, FORMAT_HELP)?;
        adapter.path = path.to_path_buf();
        if adapter.state.is_empty() {
            return Err(LoadError::Other {
                path: path.to_path_buf(),
                message: "the adapter names no state file (`state: []`)".to_owned(),
                help: format!(
                    "list the files or directories the plugin keeps its loop in under `state:` ({FORMAT_HELP})"
                ),
            });
        }
        Ok(adapter)
    }
}

/// A case or adapter that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Yaml(#[from] YamlError),
    #[error("{}: {message}", path.display())]
    Other {
        path: PathBuf,
        message: String,
        help: String,
    },
}

impl LoadError {
    /// `error: …` then `help: …`.
    pub fn render(&self) -> String {
        match self {
            LoadError::Yaml(e) => e.render(),
            LoadError::Other { help, .. } => format!("error: {self}\nhelp: {help}"),
        }
    }
}

/// Every case in `dir` (its `*.yaml` files, by name).
pub fn load_cases(dir: &Path) -> Result<Vec<ScoreCase>, LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|e| LoadError::Other {
        path: dir.to_path_buf(),
        message: format!("cannot read the case directory: {e}"),
        help: format!("pass a directory of scorecard cases with --cases ({FORMAT_HELP})"),
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| ScoreCase::load(p).map_err(LoadError::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(extra: &str) -> Adapter {
        let text = format!("name: x\ndrive: self\nstart: go {{cap}}\nstate: [s]\n{extra}");
        yaml::parse(Path::new("a.yaml"), &text, FORMAT_HELP).unwrap()
    }

    fn case(extra: &str) -> ScoreCase {
        let text = format!(
            "id: c\nname: c\nheld: c\nheld_when: [{{ loop_requests: {{ at_most: 3 }} }}]\n{extra}"
        );
        yaml::parse(Path::new("c.yaml"), &text, FORMAT_HELP).unwrap()
    }

    #[test]
    fn a_case_needing_a_field_the_adapter_lacks_is_not_applicable() {
        let c = case("steps: [\"{cancel}\"]\n");
        assert_eq!(
            c.not_applicable(&adapter("")).as_deref(),
            Some("the adapter has no `cancel`")
        );
        assert_eq!(c.not_applicable(&adapter("cancel: rm s\n")), None);
        let dollars = case("start: dollars\n");
        assert!(dollars.not_applicable(&adapter("")).is_some());
        let fires = case("needs: [fires]\n");
        assert!(fires.not_applicable(&adapter("")).is_some());
    }

    #[test]
    fn the_start_prompt_carries_the_cap() {
        assert_eq!(case("cap: 3\n").start_prompt(&adapter("")), "go 3");
    }

    #[test]
    fn an_unknown_key_is_refused_at_its_line() {
        let err = yaml::parse::<ScoreCase>(
            Path::new("c.yaml"),
            "id: c\nname: c\nheld: c\nheld_when: []\nfirez: 2\n",
            FORMAT_HELP,
        )
        .unwrap_err();
        assert!(err.render().contains("c.yaml:5"), "{}", err.render());
    }
}
