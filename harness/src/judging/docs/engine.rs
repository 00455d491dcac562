//! What the engine offers, read from the engine library itself so that a
//! SKILL.md is compared with the code and not with a copy of it: the
//! command tree, flags, defaults and values through clap's introspection of
//! `sdd_loop::cli::Cli`; the exit statuses from each command's `Exit
//! status:` help table; the gate questions and options from
//! `sdd_loop::rules::gates` ([`GateTemplate`]).
//!
//! Commands are walked generically, so a subcommand the engine gains
//! (`sdd-loop work begin`) is known here the day it lands, and one it drops
//! makes every document that still names it fail.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use clap::{ArgAction, CommandFactory};
use regex::Regex;
use sdd_loop::rules::gates::{GateName, Question, Tripped};
use sdd_loop::state::budget::Dimension;

/// A flag's default, as the engine has it.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineDefault {
    /// No default (the flag is unset unless given).
    None,
    /// A switch: off unless given.
    Off,
    /// A value, as clap or the flag's `[default: …]` help shows it.
    Value(String),
}

/// One flag of a command.
#[derive(Debug, Clone)]
pub struct Flag {
    /// Without the leading `--`.
    pub long: String,
    pub aliases: Vec<String>,
    pub short: Option<char>,
    pub takes_value: bool,
    pub default: EngineDefault,
    /// The values a `value_enum` flag accepts (empty: any value).
    pub values: Vec<String>,
}

/// One positional argument of a command.
#[derive(Debug, Clone)]
pub struct Positional {
    pub name: String,
    /// The values it accepts (empty: any value).
    pub values: Vec<String>,
}

/// A command or subcommand of `sdd-loop`.
#[derive(Debug, Clone)]
pub struct Command {
    pub name: String,
    pub aliases: Vec<String>,
    /// The words after `sdd-loop`, e.g. `["work", "begin"]`.
    pub path: Vec<String>,
    pub flags: Vec<Flag>,
    pub positionals: Vec<Positional>,
    pub subcommands: Vec<Command>,
    /// This command's own `Exit status:` table (empty when its help has none).
    pub exit_statuses: Vec<(u32, String)>,
}

impl Command {
    pub fn display(&self) -> String {
        std::iter::once("sdd-loop")
            .chain(self.path.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn subcommand(&self, name: &str) -> Option<&Command> {
        self.subcommands
            .iter()
            .find(|c| c.name == name || c.aliases.iter().any(|a| a == name))
    }

    pub fn flag(&self, long: &str) -> Option<&Flag> {
        self.flags
            .iter()
            .find(|f| f.long == long || f.aliases.iter().any(|a| a == long))
    }

    pub fn short(&self, c: char) -> Option<&Flag> {
        self.flags.iter().find(|f| f.short == Some(c))
    }

    /// This command and every command under it.
    pub fn walk(&self) -> Vec<&Command> {
        let mut out = vec![self];
        for sub in &self.subcommands {
            out.extend(sub.walk());
        }
        out
    }

    /// The command at `path` below this one.
    pub fn at(&self, path: &[String]) -> Option<&Command> {
        path.iter().try_fold(self, |c, word| c.subcommand(word))
    }
}

/// The engine's command line and exit statuses.
#[derive(Debug, Clone)]
pub struct Cli {
    pub root: Command,
}

impl Cli {
    /// Reads `sdd_loop::cli::Cli` through clap.
    pub fn read() -> Self {
        Self::from_command(sdd_loop::cli::Cli::command())
    }

    /// Reads any clap command tree as the engine's (tests give one the
    /// engine has not grown yet).
    pub fn from_command(mut cmd: clap::Command) -> Self {
        cmd.build();
        Self {
            root: command(&cmd, Vec::new()),
        }
    }

    /// The exit statuses `command` documents: its own table, else its
    /// nearest ancestor's.
    pub fn exit_statuses(&self, path: &[String]) -> Vec<(u32, String)> {
        (0..=path.len())
            .rev()
            .filter_map(|n| self.root.at(&path[..n]))
            .map(|c| c.exit_statuses.clone())
            .find(|t| !t.is_empty())
            .unwrap_or_default()
    }

    /// Every exit status any command documents.
    pub fn all_exit_statuses(&self) -> BTreeSet<u32> {
        self.root
            .walk()
            .iter()
            .flat_map(|c| c.exit_statuses.iter().map(|(code, _)| *code))
            .collect()
    }
}

fn help_default(help: &str) -> Option<String> {
    static DEFAULT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\[(?:[^\]]*;\s*)?default:\s*([^\]]+)\]").expect("a valid regex")
    });
    DEFAULT.captures(help).map(|c| c[1].trim().to_owned())
}

fn flag(arg: &clap::Arg) -> Option<Flag> {
    let long = arg.get_long()?.to_owned();
    let takes_value = arg.get_action().takes_values();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    let help = [arg.get_help(), arg.get_long_help()]
        .into_iter()
        .flatten()
        .map(|h| h.to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let default = if matches!(arg.get_action(), ArgAction::SetTrue) {
        EngineDefault::Off
    } else if !defaults.is_empty() {
        EngineDefault::Value(defaults.join(","))
    } else if let Some(text) = help_default(&help) {
        EngineDefault::Value(text)
    } else {
        EngineDefault::None
    };
    Some(Flag {
        long,
        aliases: arg
            .get_all_aliases()
            .unwrap_or_default()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        short: arg.get_short(),
        takes_value,
        default,
        values: if takes_value {
            arg.get_possible_values()
                .iter()
                .map(|v| v.get_name().to_owned())
                .collect()
        } else {
            Vec::new()
        },
    })
}

/// The `Exit status:` table of a help text: lines `  N   what`.
pub fn exit_table(help: &str) -> Vec<(u32, String)> {
    static ROW: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^\s+(\d+)\s+(.+)$").expect("a valid regex"));
    help.lines()
        .skip_while(|l| !l.trim_start().starts_with("Exit status"))
        .skip(1)
        .map_while(|l| ROW.captures(l))
        .filter_map(|c| Some((c[1].parse().ok()?, c[2].trim().to_owned())))
        .collect()
}

fn command(cmd: &clap::Command, path: Vec<String>) -> Command {
    let help = [cmd.get_after_help(), cmd.get_after_long_help()]
        .into_iter()
        .flatten()
        .map(|h| h.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    Command {
        name: path
            .last()
            .cloned()
            .unwrap_or_else(|| "sdd-loop".to_owned()),
        aliases: cmd.get_all_aliases().map(str::to_owned).collect(),
        flags: cmd.get_arguments().filter_map(flag).collect(),
        positionals: cmd
            .get_positionals()
            .map(|a| Positional {
                name: a.get_id().to_string(),
                values: a
                    .get_possible_values()
                    .iter()
                    .map(|v| v.get_name().to_owned())
                    .collect(),
            })
            .collect(),
        // Hidden subcommands (the skill's guard) are the engine's own
        // business: a document has no reason to name them.
        subcommands: cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| {
                let mut p = path.clone();
                p.push(s.get_name().to_owned());
                command(s, p)
            })
            .collect(),
        exit_statuses: exit_table(&help),
        path,
    }
}

/// One slot of a gate question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    /// An issue or PR number (`#N`).
    Number,
    /// Free text the engine fills in, named as a document would write it.
    Free(&'static str),
    /// The budget gate's list of budgets (`iterations (4/5), …`).
    Budgets,
}

/// A gate's question as a template, with its options.
#[derive(Debug, Clone)]
pub struct GateTemplate {
    pub gate: GateName,
    pub parts: Vec<Part>,
}

/// A number no question holds by chance, and a private-use character: the
/// values a constructor is called with so that the slots can be found in
/// the text it returns.
const NUMBER: u64 = 987_654_321;
const FREE: &str = "\u{E000}";

fn template(gate: GateName, text: &str, free: &'static str) -> GateTemplate {
    let mut parts = Vec::new();
    let number = format!("#{NUMBER}");
    let mut rest = text;
    while !rest.is_empty() {
        let next = [
            (rest.find(&number), number.len()),
            (rest.find(FREE), FREE.len()),
        ]
        .into_iter()
        .filter_map(|(at, len)| at.map(|a| (a, len)))
        .min();
        match next {
            Some((at, len)) => {
                if at > 0 {
                    parts.push(Part::Text(rest[..at].to_owned()));
                }
                parts.push(if len == number.len() && rest[at..].starts_with(&number) {
                    Part::Number
                } else {
                    Part::Free(free)
                });
                rest = &rest[at + len..];
            }
            None => {
                parts.push(Part::Text(rest.to_owned()));
                rest = "";
            }
        }
    }
    GateTemplate { gate, parts }
}

impl GateTemplate {
    /// Every gate's template, built by calling its `Question` constructor.
    pub fn all() -> Vec<GateTemplate> {
        GateName::ALL.iter().map(|g| Self::of(*g)).collect()
    }

    pub fn of(gate: GateName) -> GateTemplate {
        match gate {
            GateName::ForceUnlock => template(gate, &Question::force_unlock().text, ""),
            GateName::ResumeDivergence => {
                template(gate, &Question::resume_divergence(NUMBER).text, "")
            }
            GateName::BacklogDrift => template(gate, &Question::backlog_drift().text, ""),
            GateName::RepeatedFailure => template(
                gate,
                &Question::repeated_failure(&format!("#{NUMBER}"), FREE).text,
                "{root-cause}",
            ),
            GateName::AmbiguousCriteria => {
                template(gate, &Question::ambiguous_criteria(NUMBER).text, "")
            }
            GateName::BudgetEscalation => {
                // One budget gives the wording around the list; the list
                // itself is compared by asking the engine for the same
                // budgets the document shows ([`budget_question`]).
                let one = Question::budget_escalation(&[Tripped {
                    dim: Dimension::Iterations,
                    used: 4.0,
                    max: 5.0,
                }])
                .text;
                let phrase = "iterations (4/5)";
                let (before, after) = one.split_once(phrase).unwrap_or((&one, ""));
                GateTemplate {
                    gate,
                    parts: vec![
                        Part::Text(before.to_owned()),
                        Part::Budgets,
                        Part::Text(after.to_owned()),
                    ],
                }
            }
            GateName::PostFeedbackMerge => {
                template(gate, &Question::post_feedback_merge(NUMBER).text, "")
            }
        }
    }

    pub fn options(&self) -> &'static [&'static str] {
        self.gate.options()
    }

    /// The question as a document would write it: `#N` for a number,
    /// `{root-cause}` for free text.
    pub fn display(&self) -> String {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.clone(),
                Part::Number => "#N".to_owned(),
                Part::Free(name) => (*name).to_owned(),
                Part::Budgets => "iterations (4/5)".to_owned(),
            })
            .collect()
    }
}

/// The budget gate's question for the budgets a document lists, as the
/// engine would ask it — `None` when the list is not budgets with figures
/// (`{budgets}`, prose).
pub fn budget_question(list: &str) -> Option<String> {
    static ITEM: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^([A-Za-z]+) \((\$?\d+(?:\.\d+)?)/(\$?\d+(?:\.\d+)?)\)$")
            .expect("a valid regex")
    });
    let list = list.replace(", and ", ", ").replace(" and ", ", ");
    let tripped = list
        .split(", ")
        .map(|phrase| {
            let c = ITEM.captures(phrase.trim())?;
            let number = |s: &str| s.trim_start_matches('$').parse::<f64>().ok();
            Some(Tripped {
                dim: Dimension::from_field(&c[1])?,
                used: number(&c[2])?,
                max: number(&c[3])?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Question::budget_escalation(&tripped).text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_tree_flags_and_defaults_come_from_clap() {
        let cli = Cli::read();
        let work = cli.root.subcommand("work").expect("sdd-loop work");
        assert_eq!(work.display(), "sdd-loop work");
        let get = |name: &str| work.flag(name).unwrap_or_else(|| panic!("--{name}"));
        assert_eq!(
            get("max-iterations").default,
            EngineDefault::Value(sdd_loop::state::budget::DEFAULT_MAX_ITERATIONS.to_string())
        );
        assert_eq!(
            get("max-prs").default,
            EngineDefault::Value(sdd_loop::state::budget::DEFAULT_MAX_PRS.to_string())
        );
        assert_eq!(
            get("max-minutes").default,
            EngineDefault::Value(sdd_loop::state::budget::DEFAULT_MAX_MINUTES.to_string())
        );
        assert_eq!(
            get("max-dollars").default,
            EngineDefault::Value(sdd_loop::state::budget::DEFAULT_MAX_DOLLARS.to_string())
        );
        assert_eq!(get("lock").default, EngineDefault::Value("skip".into()));
        assert_eq!(get("lock").values, ["skip", "wait", "force"]);
        assert_eq!(get("resume").default, EngineDefault::Off);
        assert!(cli.root.subcommand("review").unwrap().flag("pr").is_some());
        assert!(work.flag("pr").is_none());
        let schema = cli.root.subcommand("schema").unwrap();
        assert!(schema.positionals[0].values.contains(&"budget".to_owned()));
    }

    #[test]
    fn every_exit_constant_is_in_the_help_table() {
        let table: Vec<u32> = cli_table();
        for code in [
            sdd_loop::exit::TICK_DONE,
            sdd_loop::exit::LOOP_ENDED,
            sdd_loop::exit::NEEDS_ANSWER,
            sdd_loop::exit::USAGE,
            sdd_loop::exit::DATA,
            sdd_loop::exit::UNAVAILABLE,
            sdd_loop::exit::INTERNAL,
            sdd_loop::exit::CANT_WRITE,
        ] {
            assert!(table.contains(&u32::from(code)), "{code} missing");
        }
    }

    fn cli_table() -> Vec<u32> {
        Cli::read()
            .exit_statuses(&[])
            .into_iter()
            .map(|(c, _)| c)
            .collect()
    }

    #[test]
    fn templates_show_slots_as_a_document_would() {
        let shown: Vec<String> = GateTemplate::all()
            .iter()
            .map(GateTemplate::display)
            .collect();
        assert!(shown.contains(
            &"Issue/PR #N failed twice with: {root-cause}. Skip, retry once more, or stop the loop?"
                .to_owned()
        ));
        assert!(shown.contains(
            &"Approaching iterations (4/5). Continue, raise ceiling, or stop?".to_owned()
        ));
        assert_eq!(
            budget_question("iterations (4/5), minutes (49/60), and dollars ($21.00/$25.00)")
                .as_deref(),
            Some(
                "Approaching iterations (4/5), minutes (49/60), and dollars ($21.00/$25.00). Continue, raise ceiling(s), or stop?"
            )
        );
        assert_eq!(budget_question("{budgets}"), None);
    }
}
