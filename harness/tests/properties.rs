//! Property tests for the case loader (`Case::parse`): whatever a scenario
//! author writes — or half-writes — is a case or a `file:line:column`
//! error, never a panic; and a case written from generated parts loads
//! back with those parts.
//!
//! Inputs are arbitrary text, YAML-looking lines in any order, and every
//! case in the repository cut, spliced and shuffled. 256 cases per
//! property by default; for a longer search:
//!
//! ```text
//! PROPTEST_CASES=10000 cargo nextest run -p sdd-harness --test properties
//! ```

mod support;

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;
use sdd_harness::loading::case::Case;
use sdd_harness::loading::fixtures::Fixtures;
use sdd_loop::rules::gates::GateName;
use sdd_loop::state::history::Outcome;

fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

static FIXTURES: LazyLock<Fixtures> = LazyLock::new(support::fixtures);

/// Every case file in the repository: the suite's and the harness's own.
static CASES: LazyLock<Vec<String>> = LazyLock::new(|| {
    let root = support::workspace();
    let mut texts = Vec::new();
    for dir in ["evals/loop", "harness/tests/cases", "harness/tests/broken"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        paths.sort();
        texts.extend(paths.iter().map(|p| std::fs::read_to_string(p).unwrap()));
    }
    assert!(!texts.is_empty(), "no case files under {}", root.display());
    texts
});

/// The fixture backlogs a case may name.
static BACKLOGS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let mut names: Vec<String> = std::fs::read_dir(FIXTURES.dir.join("backlogs"))
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            (path.extension()? == "yaml").then(|| path.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    names.sort();
    names
});

fn parse(text: &str) -> Result<Case, String> {
    Case::parse(Path::new("evals/loop/generated.yaml"), text, &FIXTURES).map_err(|e| e.render())
}

/// A repository case, changed the way an editor or a bad merge would.
fn mangled_case() -> impl Strategy<Value = String> {
    let edit = prop_oneof![
        // Cut short.
        any::<Index>().prop_map(Edit::Truncate),
        // A range deleted.
        (any::<Index>(), 0usize..80).prop_map(|(at, len)| Edit::Delete(at, len)),
        // Text inserted.
        (any::<Index>(), yaml_piece()).prop_map(|(at, text)| Edit::Insert(at, text)),
        // Two lines swapped.
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::Swap(a, b)),
        // Indentation of a line changed.
        (any::<Index>(), 0usize..6).prop_map(|(at, by)| Edit::Indent(at, by)),
    ];
    (any::<Index>(), proptest::collection::vec(edit, 1..4)).prop_map(|(which, edits)| {
        let mut text = which.get(&CASES).clone();
        for edit in edits {
            text = edit.apply(&text);
        }
        text
    })
}

#[derive(Debug, Clone)]
enum Edit {
    Truncate(Index),
    Delete(Index, usize),
    Insert(Index, String),
    Swap(Index, Index),
    Indent(Index, usize),
}

impl Edit {
    fn apply(&self, text: &str) -> String {
        let boundary = |at: &Index| {
            let chars: Vec<(usize, char)> = text.char_indices().collect();
            if chars.is_empty() {
                0
            } else {
                chars[at.index(chars.len())].0
            }
        };
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        match self {
            Edit::Truncate(at) => text[..boundary(at)].to_owned(),
            Edit::Delete(at, len) => {
                let start = boundary(at);
                let end = text[start..]
                    .char_indices()
                    .nth(*len)
                    .map_or(text.len(), |(i, _)| start + i);
                format!("{}{}", &text[..start], &text[end..])
            }
            Edit::Insert(at, piece) => {
                let at = boundary(at);
                format!("{}{piece}{}", &text[..at], &text[at..])
            }
            Edit::Swap(a, b) if !lines.is_empty() => {
                let (a, b) = (a.index(lines.len()), b.index(lines.len()));
                lines.swap(a, b);
                lines.join("\n")
            }
            Edit::Indent(at, by) if !lines.is_empty() => {
                let at = at.index(lines.len());
                lines[at] = format!("{}{}", " ".repeat(*by), lines[at].trim_start());
                lines.join("\n")
            }
            Edit::Swap(..) | Edit::Indent(..) => text.to_owned(),
        }
    }
}

/// Bits of YAML, right and wrong, that a case might contain.
fn yaml_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,12}",
        Just("\n".to_owned()),
        Just(": ".to_owned()),
        Just("- ".to_owned()),
        Just("{ ".to_owned()),
        Just(" }".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("&anchor ".to_owned()),
        Just("*anchor".to_owned()),
        Just("<<: *anchor\n".to_owned()),
        Just("!!binary ".to_owned()),
        Just("\"unterminated".to_owned()),
        Just("'".to_owned()),
        Just("# comment\n".to_owned()),
        Just("\t".to_owned()),
        Just("---\n".to_owned()),
        Just("~".to_owned()),
        "[a-z_]{1,12}: [a-z0-9 ]{0,10}\n",
        "-?[0-9]{1,25}",
    ]
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A tick as generated: what its YAML says.
#[derive(Debug, Clone)]
struct GenTick {
    exit: Option<u8>,
    outcome: Option<(&'static str, Outcome)>,
    printed: Vec<String>,
    answers: Vec<(GateName, String)>,
}

fn tick() -> impl Strategy<Value = GenTick> {
    let outcome = proptest::sample::select(vec![
        ("ok", Outcome::Ok),
        ("halted", Outcome::Halted),
        ("skipped_lock", Outcome::SkippedLock),
        ("errored", Outcome::Errored),
    ]);
    let answer = (
        proptest::sample::select(GateName::ALL.to_vec()),
        any::<Index>(),
    )
        .prop_map(|(gate, pick)| {
            let option = *pick.get(gate.options());
            let answer = if option == "raise" {
                "raise max_prs=9".to_owned()
            } else {
                option.to_owned()
            };
            (gate, answer)
        });
    (
        proptest::option::of(any::<u8>()),
        proptest::option::of(outcome),
        proptest::collection::vec("\\PC{1,20}", 0..3),
        proptest::collection::vec(answer, 0..3),
    )
        .prop_map(|(exit, outcome, printed, answers)| GenTick {
            exit,
            outcome,
            printed,
            answers,
        })
}

fn render_tick(t: &GenTick) -> String {
    let mut out = "  - answers:\n".to_owned();
    if t.answers.is_empty() {
        out = "  - answers: []\n".to_owned();
    }
    for (gate, answer) in &t.answers {
        out.push_str(&format!(
            "      - gate: {gate}\n        answer: {}\n",
            quote(answer)
        ));
    }
    out.push_str("    expect:\n");
    if let Some(exit) = t.exit {
        out.push_str(&format!("      exit: {exit}\n"));
    }
    if let Some((name, _)) = t.outcome {
        out.push_str(&format!("      outcome: {name}\n"));
    }
    let printed: Vec<String> = t.printed.iter().map(|p| quote(p)).collect();
    out.push_str(&format!("      printed: [{}]\n", printed.join(", ")));
    out
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_text_is_a_case_or_an_error(text in "\\PC{0,300}") {
        let _ = parse(&text);
    }

    #[test]
    fn yaml_looking_text_is_a_case_or_an_error(pieces in proptest::collection::vec(yaml_piece(), 0..30)) {
        let _ = parse(&pieces.concat());
    }

    #[test]
    fn a_mangled_repository_case_is_a_case_or_an_error(text in mangled_case()) {
        let _ = parse(&text);
    }

    #[test]
    fn a_generated_case_loads_with_its_parts(
        id in "[a-z0-9][a-z0-9-]{0,20}",
        name in "\\PC{1,40}",
        work in any::<bool>(),
        backlog in any::<Index>(),
        ticks in proptest::collection::vec(tick(), 1..5),
    ) {
        let backlog = backlog.get(&BACKLOGS);
        let skill = if work { "work" } else { "review" };
        let mut text = format!(
            "id: {id}\nname: {}\nproves: \"a property\"\nskill: {skill}\nworld:\n  backlog: {backlog}\nticks:\n",
            quote(&name)
        );
        for t in &ticks {
            text.push_str(&render_tick(t));
        }
        let case = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(case.id(), id.as_str());
        prop_assert_eq!(&case.name, &name);
        prop_assert_eq!(case.skill.as_str(), skill);
        prop_assert_eq!(
            case.world.backlog.as_ref().map(|b| b.value.as_str()),
            Some(backlog.as_str())
        );
        prop_assert_eq!(case.ticks().len(), ticks.len());
        for (read, want) in case.ticks().iter().zip(&ticks) {
            prop_assert_eq!(read.expect.exit, want.exit);
            prop_assert_eq!(read.expect.outcome, want.outcome.map(|(_, o)| o));
            prop_assert_eq!(&read.expect.printed, &want.printed);
            let answers: Vec<(String, String)> = read
                .answers
                .iter()
                .map(|a| (a.gate.value.clone(), a.answer.value.clone()))
                .collect();
            let wanted: Vec<(String, String)> = want
                .answers
                .iter()
                .map(|(g, a)| (g.name().to_owned(), a.clone()))
                .collect();
            prop_assert_eq!(answers, wanted);
        }
    }
}

/// Deep nesting must end in an error, not a stack overflow.
#[test]
fn deeply_nested_yaml_is_an_error() {
    for open in ["[", "{a: ", "- "] {
        let text = format!("id: x\nname: {}", open.repeat(100_000));
        assert!(parse(&text).is_err(), "{open}");
    }
}
