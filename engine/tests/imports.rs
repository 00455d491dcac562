//! The engine's modules import one way: its rooms, in the order
//! `engine/src/lib.rs` lists them, each use only the rooms listed before
//! it, and no modules anywhere in the crate import each other in a circle
//! (inside a room, between the files of a folder, or between rooms).
//! The order is read from `lib.rs`'s own documentation, so the list a
//! reader sees is the list this test holds the code to.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[path = "graph/mod.rs"]
mod graph;

use graph::{Graph, Module, Source, circles, find_cycle, show, strip_comments, upward};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn engine_graph() -> Graph {
    Graph::read(&src(), "lib.rs")
}

/// The graph without the unit test modules' arrows (`…::tests`): a test
/// may reach up to check what a later room makes of its module (the
/// tracker's tests: the exit status a tick gives its errors); production
/// code may not, and only production code is held to the order and to
/// having no circle.
fn production_graph() -> Graph {
    let mut graph = engine_graph();
    graph
        .edges
        .retain(|(a, _)| !a.iter().any(|seg| seg == "tests"));
    graph
}

/// The rooms in the order `lib.rs`'s `//!` lists them: each `//! - [`name`]`
/// line, first to last.
fn rooms() -> Vec<String> {
    let path = src().join("lib.rs");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.strip_prefix("//! - [`"))
        .filter_map(|l| l.split_once("`]"))
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// The arrows from a room to itself or a later one.
fn arrows_up(graph: &Graph, rooms: &[String]) -> Vec<String> {
    let order: Vec<&str> = rooms.iter().map(String::as_str).collect();
    upward(graph, &order)
        .into_iter()
        .map(|(a, b)| format!("{} uses {}", show(&a), show(&b)))
        .collect()
}

#[test]
fn lib_rs_lists_exactly_the_engine_s_rooms() {
    let rooms = rooms();
    let listed: BTreeSet<String> = rooms.iter().cloned().collect();
    assert_eq!(
        listed.len(),
        rooms.len(),
        "engine/src/lib.rs lists a room twice: {rooms:?}"
    );
    assert_eq!(
        engine_graph().top(),
        listed,
        "engine/src holds a top-level module its lib.rs does not list as a room (or lists one it does not hold): \
         add it to the list in lib.rs's `//!`, at its place in the order, or put it in the room that owns it"
    );
}

#[test]
fn rooms_import_only_the_rooms_before_them() {
    let rooms = rooms();
    let backwards = arrows_up(&production_graph(), &rooms);
    assert!(
        backwards.is_empty(),
        "an engine room imports a later one (the order engine/src/lib.rs lists is {rooms:?}); \
         move the shared type down to the room that owns it:\n  {}",
        backwards.join("\n  ")
    );
}

#[test]
fn no_modules_import_each_other_in_a_circle() {
    let found: Vec<String> = circles(&production_graph())
        .iter()
        .map(|c| format!("{c} (all of {:?})", c.members))
        .collect();
    assert!(
        found.is_empty(),
        "modules import each other in a circle; move the shared type down to a module both use:\n  {}",
        found.join("\n  ")
    );
}

/// The reliability program (the example with folders of its own): no
/// circle there either.
#[test]
fn the_reliability_program_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/reliability");
    let found: Vec<String> = circles(&Graph::read(&src, "main.rs"))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        found.is_empty(),
        "modules of engine/examples/reliability import each other in a circle:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_graph_sees_the_rooms_imports() {
    let graph = engine_graph();
    for (a, b) in [
        ("state", "os"),
        ("rules", "state"),
        ("world", "config"),
        ("skill", "rules"),
        ("agent", "transcript"),
        ("tick", "agent"),
        ("hook", "world"),
        ("cli", "tick"),
    ] {
        assert!(
            graph.uses(a, b),
            "{a} uses {b}, yet the graph has no such edge: the parser in tests/graph misses imports"
        );
    }
}

#[test]
fn a_planted_arrow_up_and_a_planted_circle_are_reported() {
    let rooms = rooms();
    let mut planted = production_graph();
    planted
        .edges
        .insert((vec!["state".into(), "budget".into()], vec!["tick".into()]));
    assert!(
        arrows_up(&planted, &rooms).contains(&"state::budget uses tick".to_owned()),
        "an arrow from state up to tick is not reported"
    );
    // `state::history::log` already uses `schema`; the way back closes a circle.
    let (log, schema): (Module, Module) = (
        vec!["state".into(), "history".into(), "log".into()],
        vec!["state".into(), "history".into(), "schema".into()],
    );
    assert!(planted.edges.contains(&(log.clone(), schema.clone())));
    planted.edges.insert((schema, log));
    assert!(
        circles(&planted)
            .iter()
            .any(|c| c.members == ["log", "schema"]),
        "schema -> log -> schema is not reported"
    );
}

mod synthetic {
    use super::*;

    fn source(module: &str, code: &str) -> Source {
        Source {
            module: if module.is_empty() {
                Vec::new()
            } else {
                module.split("::").map(str::to_owned).collect()
            },
            code: strip_comments(code),
        }
    }

    fn edges(pairs: &[(&str, &str)]) -> BTreeSet<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn a_circle_is_found() {
        let cycle = find_cycle(&edges(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]));
        assert_eq!(cycle.map(|c| c.len()), Some(4), "a -> b -> c -> a");
    }

    #[test]
    fn a_graph_without_a_circle_passes() {
        assert_eq!(
            find_cycle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])),
            None
        );
    }

    #[test]
    fn a_circle_is_reported_whole_and_each_one_apart() {
        let sources = [
            source("", "pub mod room;"),
            source(
                "room",
                "pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod e;",
            ),
            source("room::a", "use super::b::X;"),
            source("room::b", "use super::c::Y;"),
            source("room::c", "use super::a::Z;"),
            source("room::d", "use super::e::V;"),
            source("room::e", "use super::d::W;"),
        ];
        let found = circles(&Graph::from_sources(&sources));
        let members: Vec<Vec<String>> = found.iter().map(|c| c.members.clone()).collect();
        assert_eq!(members, [vec!["a", "b", "c"], vec!["d", "e"]], "{found:?}");
        assert_eq!(found[0].path.first(), found[0].path.last());
    }

    #[test]
    fn a_child_using_what_its_mod_rs_defines_is_a_circle() {
        let sources = [
            source("", "pub mod stage;"),
            source("stage", "pub mod a;\npub use a::Thing;\npub struct Shared;"),
            source("stage::a", "use super::Shared;\npub struct Thing;"),
        ];
        let graph = Graph::from_sources(&sources);
        let level = graph.level(&vec!["stage".to_owned()]);
        assert_eq!(level, edges(&[("a", "mod.rs"), ("mod.rs", "a")]));
        assert!(find_cycle(&level).is_some());
    }

    #[test]
    fn grouped_uses_and_inline_paths_become_edges() {
        let sources = [
            source("", "pub mod one;\npub mod two;"),
            source("one", "pub mod a;\npub mod b;\npub use a::Thing;"),
            source(
                "one::a",
                "use super::b::{self, Other};\n// use crate::two::x; a comment is no import",
            ),
            source("one::b", "fn f() { crate::two::c::go(); }"),
            source("two", "pub mod c;"),
            source(
                "two::c",
                "use crate::{one::{Thing as T}, two};\n#[cfg(test)]\nmod tests {\n    use super::*;\n}",
            ),
        ];
        let graph = Graph::from_sources(&sources);
        let level = graph.level(&Vec::new());
        assert_eq!(level, edges(&[("one", "two"), ("two", "one")]));
        assert!(find_cycle(&level).is_some(), "one <-> two is a circle");
        let in_one = graph.level(&vec!["one".to_owned()]);
        assert_eq!(in_one, edges(&[("a", "b"), ("mod.rs", "a")]));
        assert!(
            graph.edges.contains(&(
                vec!["two".into(), "c".into()],
                vec!["one".into(), "a".into()]
            )),
            "the re-export `one::Thing` resolves to `one::a`: {:?}",
            graph.edges
        );
    }

    #[test]
    fn a_child_named_in_code_and_a_module_from_elsewhere_are_edges() {
        let sources = [
            source("", "pub mod room;"),
            source(
                "room",
                "mod a;\n#[path = \"../x.rs\"]\nmod far;\npub use far::Thing;\nfn go() { a::run(); crate::other::a::no(); }",
            ),
            source("room::a", "use super::Thing;\npub fn run() {}"),
        ];
        let level = Graph::from_sources(&sources).level(&vec!["room".to_owned()]);
        assert_eq!(
            level,
            edges(&[("a", "far"), ("mod.rs", "a"), ("mod.rs", "far")]),
            "`a::run()` in room is an arrow to room::a; `far` is a module though its file is elsewhere"
        );
    }

    #[test]
    fn the_rooms_are_read_from_lib_rs_in_order() {
        let rooms = rooms();
        let at = |r: &str| rooms.iter().position(|x| x == r);
        assert!(at("os") < at("state") && at("state") < at("tick") && at("tick") < at("cli"));
        assert!(at("exit").is_some() && at("yaml").is_some() && at("config").is_some());
    }
}
