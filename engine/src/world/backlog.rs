//! Backlog discovery for `/sdd:work --loop`: which open issues are workable
//! this tick, which are blocked, and whether the dependency graph has a
//! cycle (stop condition #7).
//!
//! Dependencies are written in issue bodies, one per line:
//! `Blocks: #N`, `Blocked by: #N`, `Depends on #N` (several numbers may
//! follow, comma-separated; an optional colon, bullet and bold markers are
//! allowed). An issue is *blocked* while any issue it depends on is still
//! open. It is *workable* when it is open, unblocked, not labelled
//! `in-progress` (ADR-0028 concurrency invariant), not already addressed by
//! an open pull request (`Closes #N` / `Fixes #N` / `Resolves #N` in the PR
//! body, GitHub's own linking words), and not deferred for this run.
//!
//! Acceptance criteria are *ambiguous* (the ambiguous-criteria gate) when
//! the body has no `Acceptance Criteria` heading, or the section under it is
//! empty or holds a `TBD` / `TODO` marker (`tbd` in any case; `TODO` in
//! capitals, as "todo" is a word a criterion may use).
//!
//! Every reader here is line-ending-agnostic: GitHub returns bodies written
//! or edited in its web editor with CRLF line endings, and `\r\n` (or a
//! lone `\r`) reads exactly as `\n` ([`normalize_newlines`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;

/// An open issue as the tracker reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
}

impl Issue {
    pub fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l.eq_ignore_ascii_case(label))
    }
}

/// The label that marks an issue another iteration is working on.
pub const IN_PROGRESS: &str = "in-progress";

static DEP_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?im)^[ \t>*+-]*(?:\*\*|__)?(blocks|blocked by|depends on)(?:\*\*|__)?[ \t]*:?(?:\*\*|__)?[ \t]*(.*)$")
        .expect("valid regex")
});
static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"#(\d+)").expect("valid regex"));
static CLOSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+#(\d+)")
        .expect("valid regex")
});
/// `TBD` in any case (no word of a criterion is spelled so), `TODO` in
/// capitals only: "a user can add a todo" is a criterion of a to-do app.
/// Compiled only for a section holding one of the two words (no other
/// character folds to `t`, `b` or `d`, so the look is exact).
static MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b((?i:tbd)|TODO)\b").expect("valid regex"));

/// `text` with every `\r\n` and lone `\r` turned into `\n`: tracker text
/// read the same whichever line endings the editor that wrote it used.
pub fn normalize_newlines(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\r') {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// A title as one line: around line breaks (a stray `\r` included) the
/// text is trimmed and joined with a space, so a gate question or status
/// block quoting it stays on one line; a title without one is kept as is.
pub fn one_line(title: &str) -> String {
    if !title.contains(['\r', '\n']) {
        return title.to_owned();
    }
    title
        .split(['\r', '\n'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The dependency lines of one body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dependencies {
    /// Issues this one waits for (`Blocked by`, `Depends on`).
    pub waits_for: BTreeSet<u64>,
    /// Issues that wait for this one (`Blocks`).
    pub blocks: BTreeSet<u64>,
}

pub fn dependencies(body: &str) -> Dependencies {
    let mut deps = Dependencies::default();
    if !may_name_dependencies(body) {
        return deps;
    }
    let body = normalize_newlines(body);
    for cap in DEP_LINE.captures_iter(&body) {
        let numbers = NUMBER
            .captures_iter(&cap[2])
            .filter_map(|n| n[1].parse::<u64>().ok());
        if cap[1].eq_ignore_ascii_case("blocks") {
            deps.blocks.extend(numbers);
        } else {
            deps.waits_for.extend(numbers);
        }
    }
    deps
}

/// Whether `body` can hold a dependency line: [`DEP_LINE`] matches only
/// text holding `block` or `depends on` in some case — its `(?i)` also
/// takes the Kelvin sign for `k` and the long s for `s`. Asked first, so a
/// backlog that names no dependency never compiles the pattern (5 million
/// instructions, issue 34).
fn may_name_dependencies(body: &str) -> bool {
    body.contains(['\u{212A}', '\u{17F}'])
        || holds_any_case(body, "block")
        || holds_any_case(body, "depends on")
}

/// Whether `text` holds `needle`, ASCII case aside.
fn holds_any_case(text: &str, needle: &str) -> bool {
    text.as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Issue numbers a PR body says it closes.
pub fn closes(pr_body: &str) -> BTreeSet<u64> {
    CLOSING
        .captures_iter(&normalize_newlines(pr_body))
        .filter_map(|c| c[1].parse().ok())
        .collect()
}

/// Whether an issue's acceptance criteria are missing or unfinished: no
/// `## Acceptance Criteria` heading (levels 2 to 6, any case, a colon or
/// closing `#`s allowed), nothing under it before the next heading of its
/// level or above, or a `TBD`/`TODO` there.
///
/// Read line by line rather than with patterns: every work tick reads
/// every ready issue, and compiling the heading patterns was a tenth of a
/// no-op tick's CPU (issue 34). The test module keeps the patterns as the
/// oracle the scan is checked against.
pub fn criteria_ambiguous(body: &str) -> bool {
    let body = normalize_newlines(body);
    let body = body.as_ref();
    let Some((depth, start)) = lines_at(body)
        .find_map(|(at, line)| criteria_heading(line).map(|depth| (depth, at + line.len())))
    else {
        return true;
    };
    let rest = &body[start..];
    let end = lines_at(rest)
        .find(|(_, line)| heading_level(line).is_some_and(|level| level <= depth))
        .map_or(rest.len(), |(at, _)| at);
    let section = &rest[..end];
    section.trim().is_empty() || (may_hold_marker(section) && MARKER.is_match(section))
}

/// Each line of `text` (without its `\n`) and where it starts.
fn lines_at(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n').scan(0, |at, line| {
        let start = *at;
        *at += line.len() + 1;
        Some((start, line))
    })
}

/// The `#`s a line starts with, when followed by a space or a tab.
fn hashes_then_blank(line: &str) -> Option<(usize, &str)> {
    let level = line.bytes().take_while(|&b| b == b'#').count();
    let after = &line[level..];
    let rest = after.trim_start_matches([' ', '\t']);
    (rest.len() < after.len()).then_some((level, rest))
}

/// The level of a Markdown heading line with some text (`## Notes`).
fn heading_level(line: &str) -> Option<usize> {
    let (level, rest) = hashes_then_blank(line)?;
    ((1..=6).contains(&level) && rest.chars().next().is_some_and(|c| !c.is_whitespace()))
        .then_some(level)
}

/// The level of an `## Acceptance Criteria` heading line (2 to 6; any
/// case; `:` and closing `#`s allowed).
fn criteria_heading(line: &str) -> Option<usize> {
    const TITLE: &str = "acceptance criteria";
    let (level, rest) = hashes_then_blank(line)?;
    if !(2..=6).contains(&level)
        || !rest
            .get(..TITLE.len())
            .is_some_and(|t| t.eq_ignore_ascii_case(TITLE))
    {
        return None;
    }
    let blank = [' ', '\t'];
    let tail = rest[TITLE.len()..].trim_start_matches(blank);
    let tail = tail
        .strip_prefix(':')
        .unwrap_or(tail)
        .trim_start_matches(blank);
    tail.trim_start_matches('#')
        .trim_start_matches(blank)
        .is_empty()
        .then_some(level)
}

/// Whether `text` holds `tbd` (any ASCII case) or `TODO`.
fn may_hold_marker(text: &str) -> bool {
    text.contains("TODO") || holds_any_case(text, "tbd")
}

/// The backlog as this tick sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Open issues, by number.
    pub issues: BTreeMap<u64, Issue>,
    /// Workable issue numbers, ascending.
    pub workable: Vec<u64>,
    /// Open issues waiting for another open issue.
    pub blocked: Vec<u64>,
    /// Open issues labelled in-progress.
    pub in_progress: Vec<u64>,
    /// Open issues an open PR already closes.
    pub has_open_pr: Vec<u64>,
    /// Otherwise workable issues deferred for this run.
    pub deferred: Vec<u64>,
    /// Cycles among open issues, each as the issue numbers around it.
    pub cycles: Vec<Vec<u64>>,
}

impl Backlog {
    /// Classifies `issues` (open, not PRs). `linked` are issues open PRs
    /// close; `deferred` were deferred for this run (repeated-failure skip).
    pub fn discover(issues: Vec<Issue>, linked: &BTreeSet<u64>, deferred: &BTreeSet<u64>) -> Self {
        let issues: BTreeMap<u64, Issue> = issues.into_iter().map(|i| (i.number, i)).collect();
        // waits[n] = open issues n waits for.
        let mut waits: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
        for issue in issues.values() {
            let deps = dependencies(&issue.body);
            for w in deps.waits_for {
                if w != issue.number && issues.contains_key(&w) {
                    waits.entry(issue.number).or_default().insert(w);
                }
            }
            for b in deps.blocks {
                if b != issue.number && issues.contains_key(&b) {
                    waits.entry(b).or_default().insert(issue.number);
                }
            }
        }
        let mut backlog = Backlog {
            cycles: cycles(&waits),
            ..Default::default()
        };
        for (n, issue) in &issues {
            if issue.has_label(IN_PROGRESS) {
                backlog.in_progress.push(*n);
            } else if waits.get(n).is_some_and(|w| !w.is_empty()) {
                backlog.blocked.push(*n);
            } else if linked.contains(n) {
                backlog.has_open_pr.push(*n);
            } else if deferred.contains(n) {
                backlog.deferred.push(*n);
            } else {
                backlog.workable.push(*n);
            }
        }
        backlog.issues = issues;
        backlog
    }

    /// `#50 ↔ #51` for two issues, `#1 → #2 → #3 → #1` for longer cycles;
    /// several cycles are joined with `; `.
    pub fn cycle_text(&self) -> Option<String> {
        if self.cycles.is_empty() {
            return None;
        }
        let parts: Vec<String> = self
            .cycles
            .iter()
            .map(|c| match c.as_slice() {
                [a, b] => format!("#{a} ↔ #{b}"),
                _ => {
                    let mut s: Vec<String> = c.iter().map(|n| format!("#{n}")).collect();
                    s.push(format!("#{}", c[0]));
                    s.join(" → ")
                }
            })
            .collect();
        Some(parts.join("; "))
    }

    /// The contract's line for condition #7.
    pub fn cycle_message(&self) -> Option<String> {
        self.cycle_text()
            .map(|t| format!("Dependency cycle detected: {t} — please resolve manually"))
    }

    /// The set recorded in `backlog_snapshot` and compared for drift:
    /// workable issues plus those this run deferred (a deferral is the
    /// loop's own decision, not a change in the backlog).
    pub fn snapshot(&self) -> Vec<u64> {
        let mut s: Vec<u64> = self
            .workable
            .iter()
            .chain(&self.deferred)
            .copied()
            .collect();
        s.sort_unstable();
        s
    }

    /// `12 unblocked, 4 blocked, 0 in-progress` for the status block.
    pub fn summary(&self) -> String {
        format!(
            "{} unblocked, {} blocked, {} in-progress",
            self.workable.len(),
            self.blocked.len(),
            self.in_progress.len()
        )
    }
}

/// Whether the backlog drifted since the previous tick: an issue appeared
/// that was not workable then, or one disappeared that the loop did not
/// dispatch and that no one is working. An issue leaving the workable set
/// for work is no drift: one the loop dispatched, or one that now has an
/// open PR or the in-progress label (`in_flight`) — another clone's work
/// under a claim, or a sibling worktree's; an issue closed or edited
/// away is.
pub fn drifted(previous: &[u64], dispatched: &[u64], now: &[u64], in_flight: &[u64]) -> bool {
    let appeared = now.iter().any(|n| !previous.contains(n));
    let vanished = previous
        .iter()
        .any(|n| !now.contains(n) && !dispatched.contains(n) && !in_flight.contains(n));
    appeared || vanished
}

/// Elementary cycles, one per strongly connected component with more than
/// one issue, each listed from its smallest number following dependency
/// edges.
fn cycles(waits: &BTreeMap<u64, BTreeSet<u64>>) -> Vec<Vec<u64>> {
    let nodes: BTreeSet<u64> = waits
        .iter()
        .flat_map(|(k, v)| std::iter::once(*k).chain(v.iter().copied()))
        .collect();
    let mut seen: BTreeSet<u64> = BTreeSet::new();
    let mut found = Vec::new();
    for &start in &nodes {
        if seen.contains(&start) {
            continue;
        }
        // Walk from `start` looking for a path back to it, smallest first.
        if let Some(path) = path_back(waits, start) {
            seen.extend(path.iter().copied());
            found.push(path);
        }
    }
    found
}

fn path_back(waits: &BTreeMap<u64, BTreeSet<u64>>, start: u64) -> Option<Vec<u64>> {
    let mut stack = vec![(start, vec![start])];
    let mut visited = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for &next in waits.get(&node).into_iter().flatten().rev() {
            if next == start {
                return Some(path);
            }
            if next > start && visited.insert(next) {
                let mut p = path.clone();
                p.push(next);
                stack.push((next, p));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(number: u64, body: &str, labels: &[&str]) -> Issue {
        Issue {
            number,
            title: format!("Issue {number}"),
            body: body.into(),
            labels: labels.iter().map(|l| (*l).to_owned()).collect(),
        }
    }

    #[test]
    fn dependency_lines() {
        let d = dependencies(
            "Intro mentions #9\nBlocked by: #1, #2\n- **Depends on** #3\nBlocks: #4\ndepends on #5\n",
        );
        assert_eq!(d.waits_for, BTreeSet::from([1, 2, 3, 5]));
        assert_eq!(d.blocks, BTreeSet::from([4]));
    }

    #[test]
    fn classification() {
        let b = Backlog::discover(
            vec![
                issue(1, "### Acceptance Criteria\n- x", &[]),
                issue(2, "Blocked by: #1", &[]),
                issue(3, "Depends on #99", &[]),
                issue(4, "", &["in-progress"]),
                issue(5, "Blocks: #6", &[]),
                issue(6, "", &[]),
                issue(7, "", &[]),
                issue(8, "", &[]),
            ],
            &BTreeSet::from([7]),
            &BTreeSet::from([8]),
        );
        assert_eq!(b.workable, vec![1, 3, 5]);
        assert_eq!(b.blocked, vec![2, 6]);
        assert_eq!(b.in_progress, vec![4]);
        assert_eq!(b.has_open_pr, vec![7]);
        assert_eq!(b.summary(), "3 unblocked, 2 blocked, 1 in-progress");
        assert!(b.cycles.is_empty());
    }

    #[test]
    fn two_cycle_uses_the_contract_arrow() {
        let b = Backlog::discover(
            vec![
                issue(50, "Blocked by: #51", &[]),
                issue(51, "Blocked by: #50", &[]),
            ],
            &BTreeSet::new(),
            &BTreeSet::new(),
        );
        assert_eq!(
            b.cycle_message().unwrap(),
            "Dependency cycle detected: #50 ↔ #51 — please resolve manually"
        );
    }

    #[test]
    fn longer_cycle_through_blocks_lines_names_every_edge() {
        let b = Backlog::discover(
            vec![
                issue(1, "Depends on #2", &[]),
                issue(2, "Depends on #3", &[]),
                issue(3, "", &[]),
                issue(4, "Blocks: #3", &[]),
                issue(5, "Blocks: #4", &[]),
                issue(6, "Depends on #1", &[]),
            ],
            &BTreeSet::new(),
            &BTreeSet::new(),
        );
        assert!(b.cycles.is_empty(), "{:?}", b.cycles);
        let b = Backlog::discover(
            vec![
                issue(1, "Depends on #2", &[]),
                issue(2, "Depends on #3", &[]),
                issue(3, "Depends on #1", &[]),
            ],
            &BTreeSet::new(),
            &BTreeSet::new(),
        );
        assert_eq!(b.cycle_text().unwrap(), "#1 → #2 → #3 → #1");
    }

    #[test]
    fn closed_blockers_do_not_block() {
        let b = Backlog::discover(
            vec![issue(2, "Blocked by: #1", &[])],
            &BTreeSet::new(),
            &BTreeSet::new(),
        );
        assert_eq!(b.workable, vec![2]);
    }

    #[test]
    fn drift_ignores_what_the_loop_itself_took() {
        assert!(!drifted(&[1, 2], &[1], &[2], &[]), "#1 was dispatched");
        assert!(drifted(&[1, 2], &[], &[2], &[]), "#1 vanished on its own");
        assert!(drifted(&[1, 2], &[1], &[2, 3], &[]), "#3 is new");
        assert!(!drifted(&[1, 2], &[], &[1, 2], &[]));
    }

    #[test]
    fn drift_ignores_what_another_clone_took() {
        assert!(!drifted(&[1, 2], &[], &[2], &[1]), "#1 is being worked");
        assert!(drifted(&[1, 2], &[], &[2, 3], &[1]), "#3 is new");
        assert!(drifted(&[1, 2], &[], &[], &[1]), "#2 vanished on its own");
    }

    #[test]
    fn pr_closing_keywords() {
        assert_eq!(
            closes("Closes #12 and fixes #13. Resolved: #14. Mentions #15"),
            BTreeSet::from([12, 13, 14])
        );
    }

    #[test]
    fn ambiguity() {
        assert!(criteria_ambiguous("No criteria here"));
        assert!(!criteria_ambiguous("### Acceptance Criteria\n- logs in\n"));
        assert!(criteria_ambiguous("### Acceptance Criteria\n- TBD\n"));
        assert!(criteria_ambiguous(
            "## Acceptance Criteria\n\n## Notes\nTODO later"
        ));
        assert!(!criteria_ambiguous(
            "## Acceptance Criteria\n- works\n## Notes\nTODO later"
        ));
        assert!(criteria_ambiguous(
            "### Acceptance Criteria\n#### Sub\nTODO"
        ));
        assert!(!criteria_ambiguous("#### acceptance criteria:\n- ok"));
        // A marker is a marker in lower case too; a to-do app's criteria
        // are not.
        assert!(criteria_ambiguous("### Acceptance Criteria\n- tbd\n"));
        assert!(criteria_ambiguous(
            "### Acceptance Criteria\n- Tbd: limits\n"
        ));
        assert!(!criteria_ambiguous(
            "### Acceptance Criteria\n- a user can add a todo item\n"
        ));
    }

    /// The patterns `criteria_ambiguous` once used, kept as its oracle.
    fn criteria_ambiguous_by_patterns(body: &str) -> bool {
        let heading =
            Regex::new(r"(?im)^(#{2,6})[ \t]+acceptance criteria[ \t]*:?[ \t]*#*[ \t]*$").unwrap();
        let any_heading = Regex::new(r"(?m)^(#{1,6})[ \t]+\S").unwrap();
        let body = normalize_newlines(body);
        let Some(found) = heading.captures(&body) else {
            return true;
        };
        let depth = found[1].len();
        let rest = &body[found.get(0).unwrap().end()..];
        let end = any_heading
            .captures_iter(rest)
            .find(|c| c[1].len() <= depth)
            .map_or(rest.len(), |c| c.get(0).unwrap().start());
        let section = &rest[..end];
        section.trim().is_empty() || MARKER.is_match(section)
    }

    proptest::proptest! {
        #[test]
        fn the_line_scan_reads_criteria_as_the_patterns_did(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "#", "##", "###", "####", "#######", " ", "\t", "\n", "\r", ":",
                    "Acceptance Criteria", "acceptance criteria", "ACCEPTANCE CRITERIA",
                    "acceptance  criteria", "Notes", "- works", "TBD", "tbd", "TODO",
                    "todo", "xTBD", "\u{a0}", "é", "_", "Tbd.",
                ]),
                0..24,
            )
        ) {
            let body: String = parts.concat();
            proptest::prop_assert_eq!(
                criteria_ambiguous(&body),
                criteria_ambiguous_by_patterns(&body),
                "{:?}", body
            );
        }
    }

    fn crlf(text: &str) -> String {
        text.replace('\n', "\r\n")
    }

    #[test]
    fn crlf_bodies_read_as_lf() {
        let lf = [
            "Users sign in.\n\n### Acceptance Criteria\n- a user can log in\n",
            "### Acceptance Criteria\n- TBD\n",
            "No criteria here\n",
            "## Acceptance Criteria\n\n## Notes\nTODO later\n",
            "## Acceptance Criteria\n- works\n## Notes\nTODO later",
        ];
        for body in lf {
            assert_eq!(
                criteria_ambiguous(&crlf(body)),
                criteria_ambiguous(body),
                "{body:?}"
            );
            assert_eq!(
                criteria_ambiguous(&body.replace('\n', "\r")),
                criteria_ambiguous(body),
                "old Mac line endings: {body:?}"
            );
        }
        assert!(!criteria_ambiguous(&crlf(lf[0])));
    }

    #[test]
    fn a_dependency_line_spelt_with_the_kelvin_sign_or_the_long_s_still_counts() {
        // `(?i)` folds them to `k` and `s`: the word check that spares
        // compiling the pattern must not skip them.
        let deps = dependencies("Bloc\u{212A}ed by #4\nDepend\u{17F} on #5\n");
        assert_eq!(deps.waits_for, BTreeSet::from([4, 5]));
        assert_eq!(
            dependencies("no dependencies here"),
            Dependencies::default()
        );
    }

    #[test]
    fn a_crlf_dependency_chain_reads_as_lf() {
        let bodies = [
            (1, "### Acceptance Criteria\n- first\n"),
            (2, "Blocked by: #1\n\n### Acceptance Criteria\n- second\n"),
            (3, "- **Depends on** #2\nBlocks: #4\n"),
            (4, "Intro\n"),
        ];
        let build = |f: &dyn Fn(&str) -> String| {
            Backlog::discover(
                bodies.iter().map(|(n, b)| issue(*n, &f(b), &[])).collect(),
                &BTreeSet::new(),
                &BTreeSet::new(),
            )
        };
        let lf = build(&|b| b.to_owned());
        let windows = build(&|b| crlf(b));
        assert_eq!(lf.workable, vec![1]);
        assert_eq!(lf.blocked, vec![2, 3, 4]);
        assert_eq!(
            (windows.workable, windows.blocked, windows.cycles),
            (lf.workable, lf.blocked, lf.cycles)
        );
        assert_eq!(
            dependencies("Blocked by: #1, #2\r\nBlocks: #4\r\n"),
            dependencies("Blocked by: #1, #2\nBlocks: #4\n")
        );
    }

    #[test]
    fn closing_keywords_read_the_same_in_crlf() {
        let body = "Implements the login page.\n\nCloses #1\nFixes: #7\n";
        assert_eq!(closes(&crlf(body)), BTreeSet::from([1, 7]));
        assert_eq!(closes(&crlf(body)), closes(body));
    }

    #[test]
    fn titles_are_one_line() {
        assert_eq!(one_line("Add login page\r"), "Add login page");
        assert_eq!(one_line(" Two\r\nlines "), "Two lines");
        assert_eq!(one_line("plain"), "plain");
    }
}
