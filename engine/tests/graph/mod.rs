//! An import graph read from a crate's source text, and the checks the
//! import tests make of it: no arrow up a list of rooms, no circle inside
//! any folder. Shared by the test crates that include it (`#[path]`):
//! `engine/tests/imports.rs` and `harness/tests/imports.rs`.
//!
//! The graph is read from the source text, not from the compiler: every
//! `crate::…`, `super::…` and `self::…` path in code (not in comments),
//! and every `child::…` path in a module with that child, grouped `use`
//! trees included, resolved to the longest module it names, through a
//! module's `pub use` re-exports; a module whose file lives elsewhere
//! (`#[path]`) is a leaf. A circle means a type lives in
//! the wrong file: move it down to the module that owns it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root (empty for the root).
pub type Module = Vec<String>;

/// One source file: its module path and its code, comments removed.
pub struct Source {
    pub module: Module,
    pub code: String,
}

/// The module graph: every module, each module's `pub use` re-exports
/// (name → path), and the module each module's paths resolve to.
#[derive(Debug, Default)]
pub struct Graph {
    pub modules: BTreeSet<Module>,
    pub edges: BTreeSet<(Module, Module)>,
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
pub fn strip_comments(text: &str) -> String {
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
        } else if !code[..i].ends_with("::") {
            // 2018 paths in code: `child::item(…)` in a module with that
            // child, without a `use`.
            let first: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            (children.contains(&first) && rest[first.len()..].starts_with("::"))
                .then(|| (source.module.clone(), rest))
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
    /// The graph of the crate whose sources are under `src`, rooted at
    /// `root_file` (`lib.rs`, or `main.rs` for a program of its own).
    pub fn read(src: &Path, root_file: &str) -> Self {
        Self::from_sources(&read_sources(src, root_file))
    }

    pub fn from_sources(sources: &[Source]) -> Self {
        let mut modules: BTreeSet<Module> = sources.iter().map(|s| s.module.clone()).collect();
        // A module whose file lives elsewhere (`#[path = "…"] mod name;`)
        // is a leaf of the graph: paths into it end there.
        for s in sources {
            for line in s.code.lines() {
                let t = line.trim();
                let t = ["pub ", "pub(crate) ", "pub(super) "]
                    .iter()
                    .find_map(|p| t.strip_prefix(p))
                    .unwrap_or(t);
                if let Some(name) = t.strip_prefix("mod ").and_then(|r| r.strip_suffix(';'))
                    && !name.is_empty()
                    && name.chars().all(is_ident)
                {
                    let mut m = s.module.clone();
                    m.push(name.to_owned());
                    modules.insert(m);
                }
            }
        }
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
    pub fn level(&self, parent: &Module) -> BTreeSet<(String, String)> {
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
    pub fn top(&self) -> BTreeSet<String> {
        self.modules
            .iter()
            .filter(|m| m.len() == 1)
            .map(|m| m[0].clone())
            .collect()
    }

    /// Whether anything under top-level module `a` uses anything under `b`.
    pub fn uses(&self, a: &str, b: &str) -> bool {
        self.edges.iter().any(|(x, y)| {
            x.first().map(String::as_str) == Some(a) && y.first().map(String::as_str) == Some(b)
        })
    }

    /// Every module that has children (the crate root and each folder).
    pub fn folders(&self) -> Vec<Module> {
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
pub fn find_cycle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
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

/// Modules mutually reachable in one folder's `level`: an import circle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    /// The folder whose children import each other.
    pub folder: Module,
    /// The children in the circle, sorted (`mod.rs` for the folder's own
    /// file).
    pub members: Vec<String>,
    /// One way round it (first == last).
    pub path: Vec<String>,
}

impl std::fmt::Display for Circle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "in {}: {}", show(&self.folder), self.path.join(" -> "))
    }
}

/// Every import circle in every folder of `graph`: each set of children
/// that reach each other, whole, so a file joining a circle changes it.
pub fn circles(graph: &Graph) -> Vec<Circle> {
    let mut out = Vec::new();
    for folder in graph.folders() {
        let level = graph.level(&folder);
        let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (a, b) in &level {
            next.entry(a).or_default().insert(b);
        }
        let reach = |from: &str| -> BTreeSet<String> {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from];
            while let Some(n) = todo.pop() {
                for &m in next.get(n).into_iter().flatten() {
                    if seen.insert(m.to_owned()) {
                        todo.push(m);
                    }
                }
            }
            seen
        };
        let reached: BTreeMap<&str, BTreeSet<String>> =
            next.keys().map(|n| (*n, reach(n))).collect();
        let mut placed: BTreeSet<String> = BTreeSet::new();
        for (n, from_n) in &reached {
            if placed.contains(*n) || !from_n.contains(*n) {
                continue;
            }
            let members: Vec<String> = from_n
                .iter()
                .filter(|m| reached.get(m.as_str()).is_some_and(|r| r.contains(*n)))
                .cloned()
                .collect();
            placed.extend(members.iter().cloned());
            let inside: BTreeSet<(String, String)> = level
                .iter()
                .filter(|(a, b)| members.contains(a) && members.contains(b))
                .cloned()
                .collect();
            let path = find_cycle(&inside).unwrap_or_default();
            out.push(Circle {
                folder: folder.clone(),
                members,
                path,
            });
        }
    }
    out
}

/// The arrows from a room to itself-or-a-later one in `order`, between
/// top-level modules (each standing for everything below it).
pub fn upward(graph: &Graph, order: &[&str]) -> Vec<(Module, Module)> {
    let rank = |s: &str| order.iter().position(|x| *x == s);
    graph
        .edges
        .iter()
        .filter(|(a, b)| {
            let (Some(ra), Some(rb)) = (a.first(), b.first()) else {
                return false;
            };
            ra != rb && rank(ra) <= rank(rb)
        })
        .cloned()
        .collect()
}

/// A module path as the messages show it (`crate` for the root).
pub fn show(m: &Module) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}
