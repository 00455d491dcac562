//! The harness's modules import one way (issue 17): `harness/src` is
//! grouped by the stages a case passes through — loading, the world,
//! driving, judging, reporting — then the scorecard, a feature of its own,
//! with `cli` on top; a stage may use only the stages before it. Inside a
//! stage (and inside any folder below it) the files import each other
//! without a circle. The graph and how it is read: `engine/tests/graph`,
//! shared with the engine's own import test.

use std::collections::BTreeSet;
use std::path::Path;

#[path = "../../engine/tests/graph/mod.rs"]
mod graph;

use graph::{Graph, circles, show, upward};

/// The stages, in the order a case passes through them; each may import
/// only the ones before it. The scorecard is a feature of its own on top
/// of them: it shares the world and the reporting's page style.
const STAGES: [&str; 7] = [
    "loading",
    "world",
    "driving",
    "judging",
    "reporting",
    "scorecard",
    "cli",
];

fn harness_graph() -> Graph {
    Graph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), "lib.rs")
}

#[test]
fn the_crate_root_holds_exactly_the_stages() {
    let graph = harness_graph();
    let top = graph.top();
    let stages: BTreeSet<String> = STAGES.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(
        top,
        stages,
        "harness/src holds a top-level module that is not a stage: put it in the stage that owns it, or add the stage to STAGES in {}",
        file!()
    );
}

#[test]
fn stages_import_only_the_stages_before_them() {
    let backwards: Vec<String> = upward(&harness_graph(), &STAGES)
        .iter()
        .map(|(a, b)| format!("{} uses {}", show(a), show(b)))
        .collect();
    assert!(
        backwards.is_empty(),
        "a stage imports a later stage (the order is {STAGES:?}); move the shared type down to the stage that owns it:\n  {}",
        backwards.join("\n  ")
    );
}

#[test]
fn no_folder_has_an_import_circle() {
    let circles: Vec<String> = circles(&harness_graph())
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        circles.is_empty(),
        "modules import each other in a circle; move the shared type down to the module that owns it:\n  {}",
        circles.join("\n  ")
    );
}

/// The mocks: no circle there either (the engine's own test holds the
/// engine and its reliability program).
#[test]
fn the_mocks_have_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mocks/src");
    let found: Vec<String> = circles(&Graph::read(&src, "lib.rs"))
        .iter()
        .map(|c| format!("mocks/src {c}"))
        .collect();
    assert!(
        found.is_empty(),
        "modules import each other in a circle; move the shared type down to the module that owns it:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_graph_sees_the_imports_it_forbids_circles_in() {
    let graph = harness_graph();
    for (a, b) in [
        ("world", "loading"),
        ("driving", "world"),
        ("judging", "driving"),
        ("reporting", "judging"),
        ("scorecard", "reporting"),
        ("scorecard", "world"),
        ("cli", "scorecard"),
        ("cli", "reporting"),
    ] {
        assert!(
            graph.uses(a, b),
            "{a} uses {b}, yet the graph has no such edge: the parser in {} misses imports",
            file!()
        );
    }
}

/// One concept per file keeps a file short enough to read whole (issue 17:
/// none over 800 lines); a longer one holds two concepts — split them.
#[test]
fn no_source_file_is_over_800_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            (lines > 800).then(|| {
                format!(
                    "{} ({lines} lines)",
                    f.strip_prefix(&src).unwrap_or(f).display()
                )
            })
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these by concept, each part in the stage that owns it:\n  {}",
        long.join("\n  ")
    );
}
