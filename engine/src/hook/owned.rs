//! The loop's state is the engine's: which paths a tool call may not
//! write, move, truncate or delete ([`super::command::Action::Touch`]),
//! and the refusal.
//!
//! Owned: everything under `.sdd/loop/` (lock, guard, budget, history,
//! journal, ledger, exchange, the hooks' own files), a budget file kept
//! elsewhere (`--budget-file`, as the witness records it), and the
//! witnesses ([`crate::state::witness::dir`]). A deleting call (`rm -r`, `mv`,
//! `git clean -x`, `find -delete`) is refused on an ancestor of these too
//! (`rm -rf .sdd`). Creating `{skill}.stop` — the graceful stop request —
//! is allowed: it only ends a loop sooner. Reading is never refused.
//!
//! A path is matched component by component against each owned path,
//! after `~`, `.` and `..` are resolved and the existing part is
//! canonicalised (symbolic links followed); a glob component (`*`, `?`,
//! `[…]`) matches as the shell would (a leading `.` only by a pattern
//! that starts with one), so `rm .sdd/loop/*` and `rm -r .sdd/*` are
//! recognised while `rm *.json` at the project root is not.

use std::path::{Component, Path, PathBuf};

use super::command::Action;
use crate::state::paths::{Skill, StatePaths};
use crate::state::witness::{self, Witness};

/// The owned paths of the project at `root`.
pub fn owned(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join(".sdd").join("loop"), witness::dir(root)];
    for skill in [Skill::Work, Skill::Review] {
        let paths = StatePaths::new(root, skill, None);
        if let Ok(Some(Witness {
            budget_file: Some(b),
            ..
        })) = Witness::load(&witness::path(&paths))
        {
            out.push(if b.is_absolute() { b } else { root.join(b) });
        }
    }
    out.into_iter().map(|p| canonical(&p)).collect()
}

/// `.` and `..` resolved without the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn is_glob(component: &str) -> bool {
    component.contains(['*', '?', '['])
}

/// The path with its longest existing literal prefix canonicalised.
fn canonical(path: &Path) -> PathBuf {
    let path = lexical(path);
    let comps: Vec<&std::ffi::OsStr> = path.iter().collect();
    let literal = comps
        .iter()
        .position(|c| is_glob(&c.to_string_lossy()))
        .unwrap_or(comps.len());
    for cut in (1..=literal).rev() {
        let prefix: PathBuf = comps[..cut].iter().collect();
        if let Ok(real) = prefix.canonicalize() {
            let mut out = real;
            for c in &comps[cut..] {
                out.push(c);
            }
            return out;
        }
    }
    path
}

/// Where `written` (as a command gave it) is, from `cwd`.
pub fn resolve(written: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let path = match (written.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if written == "~" => home.map_or_else(|| PathBuf::from("~"), Path::to_path_buf),
        _ => cwd.join(written),
    };
    canonical(&path)
}

/// Whether one path component `pattern` matches `name`, as a shell glob.
fn component_matches(pattern: &str, name: &str) -> bool {
    if !is_glob(pattern) {
        return pattern == name;
    }
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    fn go(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some(('?', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some(('[', rest)) => {
                let Some(close) = rest.iter().position(|c| *c == ']') else {
                    return n.first() == Some(&'[') && go(rest, &n[1..]);
                };
                let (set, after) = (&rest[..close], &rest[close + 1..]);
                let (negate, set) = match set.split_first() {
                    Some(('!' | '^', s)) => (true, s),
                    _ => (false, set),
                };
                let Some(c) = n.first() else {
                    return false;
                };
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= set[i] <= *c && *c <= set[i + 2];
                        i += 3;
                    } else {
                        hit |= set[i] == *c;
                        i += 1;
                    }
                }
                hit != negate && go(after, &n[1..])
            }
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

/// Whether a call touching `path` (resolved) reaches `root`: inside it or
/// it itself, or — when it deletes — an ancestor of it.
fn reaches(path: &Path, root: &Path, deletes: bool) -> bool {
    let p: Vec<String> = path
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let r: Vec<String> = root
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let common = p.len().min(r.len());
    if !(0..common).all(|i| component_matches(&p[i], &r[i])) {
        return false;
    }
    p.len() >= r.len() || deletes
}

/// The first owned path `action` touches, if any.
pub fn touched(
    action: &Action,
    cwd: &Path,
    home: Option<&Path>,
    owned: &[PathBuf],
) -> Option<PathBuf> {
    let Action::Touch { path, deletes, .. } = action else {
        return None;
    };
    let resolved = resolve(path, cwd, home);
    let loop_dir = owned.first()?;
    // Asking the loop to stop is everyone's right.
    if !deletes
        && resolved.parent() == Some(loop_dir.as_path())
        && resolved
            .file_name()
            .is_some_and(|n| n == "work.stop" || n == "review.stop")
    {
        return None;
    }
    owned
        .iter()
        .find(|root| reaches(&resolved, root, *deletes))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_one_component_as_the_shell_does() {
        assert!(component_matches("*", "loop"));
        assert!(!component_matches("*", ".sdd"));
        assert!(component_matches(".s*", ".sdd"));
        assert!(component_matches("work.*.json", "work.budget.json"));
        assert!(component_matches("w?rk.lock", "work.lock"));
        assert!(component_matches("[wr]*", "work.lock"));
        assert!(!component_matches("[!w]*", "work.lock"));
        assert!(!component_matches("*.md", "work.lock"));
    }

    #[test]
    fn what_reaches_the_loop_state() {
        let root = Path::new("/p/.sdd/loop");
        let at = |p: &str, deletes| reaches(&lexical(&Path::new("/p").join(p)), root, deletes);
        assert!(at(".sdd/loop/work.history.jsonl", false));
        assert!(at(".sdd/loop", true));
        assert!(at(".sdd/loop/*", true));
        assert!(at(".sdd", true));
        assert!(at(".sdd/*", true));
        assert!(at(".", true));
        assert!(!at(".sdd", false));
        assert!(!at("*", true));
        assert!(!at("*.json", true));
        assert!(!at("src/main.rs", true));
        assert!(at("src/../.sdd/loop/work.lock", false));
    }
}
