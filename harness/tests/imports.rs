//! The harness's modules import one way (issue 17): `harness/src` is
//! grouped by the stages a case passes through — loading, the world,
//! driving, judging, reporting, with `cli` on top — and a stage may use
//! only the stages before it. Inside a stage (and inside any folder below
//! it) the files import each other without a circle.
//!
//! The graph is read from the source text, not from the compiler: every
//! `crate::…`, `super::…` and `self::…` path in code (not in comments),
//! grouped `use` trees included, resolved to the longest module it names,
//! through a module's `pub use` re-exports. A circle means a type lives in
//! the wrong file: move it down to the stage that owns it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The stages, in the order a case passes through them; each may import
/// only the ones before it.
const STAGES: [&str; 6] = ["loading", "world", "driving", "judging", "reporting", "cli"];

type Module = Vec<String>;

/// One source file: its module path and its code, comments removed.
struct Source {
    module: Module,
    code: String,
}

/// The module graph: every module, each module's `pub use` re-exports
/// (name → path), and the module each module's paths resolve to.
#[derive(Debug, Default)]
struct Graph {
    modules: BTreeSet<Module>,
    edges: BTreeSet<(Module, Module)>,
}

/// The module path of the file at `rel` (under the crate's source root,
/// whose root file is `lib.rs`, or `main.rs` for a program of its own).
fn module_of(rel: &Path, root_file: &str) -> Option<Module> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let file = parts.pop()?;
    let stem = file.strip_suffix(".rs")?;
    match stem {
        _ if parts.is_empty() && file == root_file => Some(parts),
        "main" | "lib" if parts.is_empty() => None,
        "mod" => Some(parts),
        _ => {
            parts.push(stem.to_owned());
            Some(parts)
        }
    }
}

/// Drops `//` comment lines (doc comments name modules in links, which
/// are not imports).
fn strip_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn read_sources(src: &Path, root_file: &str) -> Vec<Source> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    files
        .iter()
        .filter_map(|f| {
            let module = module_of(f.strip_prefix(src).expect("under src"), root_file)?;
            let text =
                std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            Some(Source {
                module,
                code: strip_comments(&text),
            })
        })
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Parses a `use` tree (or a plain path) at the start of `s`, after
/// `prefix`: `a::b::{c, d::{self, e}, f as g, *}`. Returns the full paths.
fn parse_tree(s: &str, prefix: &[String]) -> Vec<Module> {
    let mut out = Vec::new();
    let mut path = prefix.to_vec();
    let mut rest = s.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut end = group.len();
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end = i;
                    break;
                }
            }
            let mut depth = 0;
            let mut start = 0;
            let inner = &group[..end];
            for (i, c) in inner.char_indices().chain([(inner.len(), ',')]) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let item = inner[start..i].trim();
                        if !item.is_empty() {
                            out.extend(parse_tree(item, &path));
                        }
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return out;
        }
        let ident: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        if ident.is_empty() {
            // `*`, or the end of the path.
            out.push(path);
            return out;
        }
        if ident != "self" {
            path.push(ident.clone());
        }
        rest = &rest[ident.len()..];
        match rest.strip_prefix("::") {
            Some(next) => rest = next.trim_start(),
            None => {
                out.push(path);
                return out;
            }
        }
    }
}

/// The paths a file's code names, made absolute from the crate root.
/// Inline modules (`mod tests { … }`) are taken to run to the end of the
/// file, so `super::` inside them means the file's own module.
fn paths_in(source: &Source, children: &BTreeSet<String>) -> Vec<Module> {
    let code = &source.code;
    let inline_at = code
        .match_indices("mod ")
        .find(|(i, _)| {
            let line_start = code[..*i].rfind('\n').map_or(0, |n| n + 1);
            let before = code[line_start..*i].trim();
            let after = &code[i + 4..];
            let name: String = after.chars().take_while(|c| is_ident(*c)).collect();
            (before.is_empty() || before == "pub")
                && !name.is_empty()
                && after[name.len()..].trim_start().starts_with('{')
        })
        .map_or(code.len(), |(i, _)| i);
    let mut out = Vec::new();
    for (i, _) in code.char_indices() {
        if i > 0 && code[..i].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let rest = &code[i..];
        let inline = i >= inline_at;
        let base: Option<(Module, &str)> = if let Some(r) = rest.strip_prefix("crate::") {
            Some((Vec::new(), r))
        } else if let Some(r) = rest.strip_prefix("super::") {
            let mut m = source.module.clone();
            if !inline {
                m.pop();
            }
            Some((m, r))
        } else if let Some(r) = rest.strip_prefix("self::") {
            Some((source.module.clone(), r))
        } else if let Some(r) = rest
            .strip_prefix("use ")
            .or_else(|| rest.strip_prefix("pub use "))
        {
            // 2018 paths: `use child::…` in a module with that child.
            let first: String = r
                .trim_start()
                .chars()
                .take_while(|c| is_ident(*c))
                .collect();
            children
                .contains(&first)
                .then(|| (source.module.clone(), r))
        } else {
            None
        };
        if let Some((base, r)) = base {
            out.extend(parse_tree(r, &base));
        }
    }
    out
}

/// `pub use` re-exports of a module: the name it exports → the full path.
fn reexports(source: &Source, children: &BTreeSet<String>) -> BTreeMap<String, Module> {
    let mut out = BTreeMap::new();
    for stmt in source.code.split(';') {
        let Some(at) = stmt.find("pub use ") else {
            continue;
        };
        let sub = Source {
            module: source.module.clone(),
            code: stmt[at..].to_owned(),
        };
        for path in paths_in(&sub, children) {
            if let Some(name) = path.last() {
                out.insert(name.clone(), path.clone());
            }
        }
    }
    out
}

impl Graph {
    fn from_sources(sources: &[Source]) -> Self {
        let modules: BTreeSet<Module> = sources.iter().map(|s| s.module.clone()).collect();
        let children = |m: &Module| -> BTreeSet<String> {
            modules
                .iter()
                .filter(|c| c.len() == m.len() + 1 && c.starts_with(m))
                .map(|c| c[m.len()].clone())
                .collect()
        };
        let exports: BTreeMap<Module, BTreeMap<String, Module>> = sources
            .iter()
            .map(|s| (s.module.clone(), reexports(s, &children(&s.module))))
            .collect();
        let resolve = |path: &Module| -> Module {
            let mut path = path.clone();
            for _ in 0..8 {
                let len = (0..=path.len())
                    .rev()
                    .find(|n| modules.contains(&path[..*n]))
                    .unwrap_or(0);
                let module = path[..len].to_vec();
                let target = path
                    .get(len)
                    .and_then(|name| exports.get(&module)?.get(name))
                    .filter(|t| **t != path[..=len]);
                match target {
                    Some(t) => {
                        let mut next = t.clone();
                        next.extend_from_slice(&path[len + 1..]);
                        path = next;
                    }
                    None => return module,
                }
            }
            path
        };
        let mut edges = BTreeSet::new();
        for s in sources {
            for path in paths_in(s, &children(&s.module)) {
                let to = resolve(&path);
                if to != s.module {
                    edges.insert((s.module.clone(), to));
                }
            }
        }
        Graph { modules, edges }
    }

    /// The edges between the children of `parent`, each standing for
    /// itself and everything below it, and `parent`'s own file (`mod.rs`,
    /// which should only wire: a child using an item defined there while
    /// `mod.rs` re-exports the child is a circle too).
    fn level(&self, parent: &Module) -> BTreeSet<(String, String)> {
        let child = |m: &Module| {
            if m == parent {
                Some("mod.rs".to_owned())
            } else {
                (m.len() > parent.len() && m.starts_with(parent)).then(|| m[parent.len()].clone())
            }
        };
        self.edges
            .iter()
            .filter_map(|(a, b)| Some((child(a)?, child(b)?)))
            .filter(|(a, b)| a != b)
            .collect()
    }

    /// The crate's top-level modules.
    fn top(&self) -> BTreeSet<String> {
        self.modules
            .iter()
            .filter(|m| m.len() == 1)
            .map(|m| m[0].clone())
            .collect()
    }

    /// Whether anything under top-level module `a` uses anything under `b`.
    fn uses(&self, a: &str, b: &str) -> bool {
        self.edges.iter().any(|(x, y)| {
            x.first().map(String::as_str) == Some(a) && y.first().map(String::as_str) == Some(b)
        })
    }

    /// Every module that has children (the crate root and each folder).
    fn folders(&self) -> Vec<Module> {
        self.modules
            .iter()
            .filter(|m| {
                self.modules
                    .iter()
                    .any(|c| c.len() == m.len() + 1 && c.starts_with(m))
            })
            .cloned()
            .collect()
    }
}

/// A circle in `edges`, as the nodes along it (first == last), if any.
fn find_cycle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
    }
    // 0 unvisited, 1 on the stack, 2 done.
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    fn visit<'a>(
        n: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        state.insert(n, 1);
        stack.push(n);
        for &m in next.get(n).into_iter().flatten() {
            match state.get(m).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|s| *s == m).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        stack[from..].iter().map(|s| (*s).to_owned()).collect();
                    cycle.push(m.to_owned());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(m, next, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n, 2);
        None
    }
    let nodes: Vec<&str> = next.keys().copied().collect();
    for n in nodes {
        if state.get(n).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, &next, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

fn harness_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    Graph::from_sources(&read_sources(&src, "lib.rs"))
}

/// Every import circle inside a folder of `graph`, one line each.
fn circles(graph: &Graph) -> Vec<String> {
    graph
        .folders()
        .iter()
        .filter_map(|f| {
            let cycle = find_cycle(&graph.level(f))?;
            Some(format!("in {}: {}", show(f), cycle.join(" -> ")))
        })
        .collect()
}

fn show(m: &Module) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
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
    let graph = harness_graph();
    let order = |s: &str| STAGES.iter().position(|x| *x == s);
    let backwards: Vec<String> = graph
        .edges
        .iter()
        .filter(|(a, b)| {
            let (Some(sa), Some(sb)) = (a.first(), b.first()) else {
                return false;
            };
            sa != sb && order(sa) <= order(sb)
        })
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
    let circles = circles(&harness_graph());
    assert!(
        circles.is_empty(),
        "modules import each other in a circle; move the shared type down to the module that owns it:\n  {}",
        circles.join("\n  ")
    );
}

/// The mocks and the engine's reliability program (the example with
/// folders of its own): no circle there either.
#[test]
fn the_mocks_and_the_reliability_program_have_no_import_circle() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for (dir, root_file) in [
        ("mocks/src", "lib.rs"),
        ("engine/examples/reliability", "main.rs"),
    ] {
        let src = workspace.join(dir);
        if !src.join(root_file).exists() {
            continue;
        }
        let graph = Graph::from_sources(&read_sources(&src, root_file));
        found.extend(
            circles(&graph)
                .into_iter()
                .map(|c| format!("{dir} ({root_file}) {c}")),
        );
    }
    assert!(
        found.is_empty(),
        "modules import each other in a circle; move the shared type down to the module that owns it:\n  {}",
        found.join("\n  ")
    );
}

/// The engine's rooms (issue 34), in the order they may import each
/// other: each uses only the ones before it. `exit` and `yaml` are leaves
/// every room may use; `config` (a tick's settings, gathered by the command
/// line) sits above the rules it names.
const ENGINE_ROOMS: [&str; 13] = [
    "exit",
    "yaml",
    "os",
    "state",
    "rules",
    "config",
    "world",
    "skill",
    "transcript",
    "agent",
    "tick",
    "hook",
    "cli",
];

fn engine_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/src");
    Graph::from_sources(&read_sources(&src, "lib.rs"))
}

/// The arrows from a room to itself or a later one in `order`. A unit
/// test module (`…::tests`) may reach up to check what a later room makes
/// of its module (the tracker's tests: the exit status a tick gives its
/// errors); production code may not.
fn upward(graph: &Graph, order: &[&str]) -> Vec<String> {
    let rank = |s: &str| order.iter().position(|x| *x == s);
    graph
        .edges
        .iter()
        .filter(|(a, _)| !a.iter().any(|seg| seg == "tests"))
        .filter(|(a, b)| {
            let (Some(ra), Some(rb)) = (a.first(), b.first()) else {
                return false;
            };
            ra != rb && rank(ra) <= rank(rb)
        })
        .map(|(a, b)| format!("{} uses {}", show(a), show(b)))
        .collect()
}

#[test]
fn the_engine_s_top_level_holds_exactly_its_rooms() {
    let graph = engine_graph();
    let top = graph.top();
    let rooms: BTreeSet<String> = ENGINE_ROOMS.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(
        top,
        rooms,
        "engine/src holds a top-level module that is not a room: put it in the room that owns it, or add the room to ENGINE_ROOMS in {}",
        file!()
    );
}

#[test]
fn engine_rooms_import_only_the_rooms_before_them() {
    let backwards = upward(&engine_graph(), &ENGINE_ROOMS);
    assert!(
        backwards.is_empty(),
        "an engine room imports a later one (the order is {ENGINE_ROOMS:?}); move the shared type down to the room that owns it:\n  {}",
        backwards.join("\n  ")
    );
}

#[test]
fn the_engine_graph_sees_its_rooms_imports() {
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
            "{a} uses {b}, yet the graph has no such edge: the parser in {} misses imports",
            file!()
        );
    }
    // And the check sees an upward arrow when there is one.
    let mut added = graph;
    added
        .edges
        .insert((vec!["state".into(), "budget".into()], vec!["tick".into()]));
    assert!(
        upward(&added, &ENGINE_ROOMS).contains(&"state::budget uses tick".to_owned()),
        "an arrow from state up to tick is not reported"
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

#[cfg(test)]
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
    fn a_graph_without_a_circle_passes() {
        assert_eq!(
            find_cycle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])),
            None
        );
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
}
