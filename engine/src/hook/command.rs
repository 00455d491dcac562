//! What a tool call would do to the loop's world, read before it runs
//! (the `PreToolUse` hook): open a pull request, merge one, submit a
//! review, push branches, or begin a tick. Recognised:
//!
//! - in a `Bash` command line (every simple command, `$(…)` and
//!   `bash -c '…'` included, after `VAR=…`, `env`, `command`, `sudo`,
//!   `timeout`, `nice`, `nohup`, `time`, `xargs`): `gh pr create`,
//!   `gh pr merge`, `gh pr review`; `gh api` and `curl` calls that POST
//!   to `…/repos/O/R/pulls`, POST or PUT to `…/pulls/N/merge`, POST to
//!   `…/pulls/N/reviews`, and GraphQL mutations `createPullRequest`,
//!   `mergePullRequest`, `addPullRequestReview`, `submitPullRequestReview`;
//!   `hub pull-request`; `git push` (its remote and branches);
//!   `sdd-loop work|review begin`;
//! - the GitHub MCP server's tools (any server name, `mcp__*__TOOL`):
//!   `create_pull_request`, `merge_pull_request`, the review tools, and
//!   `create_branch` / `push_files`;
//! - Claude Code's `Skill` tool (`{skill, args}`) running a loop skill —
//!   the names of [`super::prompt::SKILL_NAMES`], with or without the
//!   slash — with `--loop` among its arguments (what `/loop`'s own
//!   instructions have the model do with a slash-command prompt).
//!
//! Recognition is pure — it reads words, never files or the network — so
//! it cannot fail; [`super::pre_tool`] decides. What it cannot see: a
//! command hidden behind a variable, an alias, a script file, another
//! program calling the API (docs/src/claude-code.md lists these and what still
//! catches them).

use serde_json::Value;

use super::words;
use crate::state::paths::Skill;
pub use action::{Action, Body};
use parsed::{Parsed, program};

/// Claude Code's tools that write a file, and the input field naming it.
pub const FILE_TOOLS: [(&str, &str); 4] = [
    ("Write", "file_path"),
    ("Edit", "file_path"),
    ("MultiEdit", "file_path"),
    ("NotebookEdit", "notebook_path"),
];

/// What the tool call `tool_name` with `input` does.
pub fn recognise(tool_name: &str, input: &Value) -> Vec<Action> {
    if tool_name == "Skill" {
        return in_skill(input).into_iter().collect();
    }
    if tool_name == "Bash" {
        return input
            .get("command")
            .and_then(Value::as_str)
            .map(in_bash)
            .unwrap_or_default();
    }
    if let Some((_, field)) = FILE_TOOLS.iter().find(|(t, _)| *t == tool_name) {
        return input
            .get(*field)
            .and_then(Value::as_str)
            .map(|path| {
                vec![Action::Touch {
                    via: tool_name.to_owned(),
                    path: path.to_owned(),
                    deletes: false,
                }]
            })
            .unwrap_or_default();
    }
    match tool_name.strip_prefix("mcp__") {
        Some(rest) => in_mcp(tool_name, rest.rsplit("__").next().unwrap_or(rest), input),
        None => Vec::new(),
    }
}

/// What a `Bash` command line does.
pub fn in_bash(command: &str) -> Vec<Action> {
    let mut out = Vec::new();
    line(command, &mut out, 0);
    out
}

/// Joins a relative `path` to the directory a `cd` of the line moved to.
fn under(dir: Option<&str>, path: &str) -> String {
    match dir {
        Some(d) if !path.starts_with('/') && !path.starts_with('~') => {
            format!("{}/{path}", d.trim_end_matches('/'))
        }
        _ => path.to_owned(),
    }
}

/// The actions of a command line, its redirections and `cd`s included.
fn line(text: &str, out: &mut Vec<Action>, depth: usize) {
    let parsed = words::parse(text);
    if parsed.too_deep {
        out.push(Action::Unreadable {
            why: format!(
                "command substitutions nested more than {} deep",
                words::NESTING_MAX
            ),
        });
    }
    let mut dir: Option<String> = None;
    for (i, words) in parsed.commands.iter().enumerate() {
        for (_, target) in parsed.writes.iter().filter(|(at, _)| *at == i) {
            out.push(Action::Touch {
                via: "a redirection".into(),
                path: under(dir.as_deref(), target),
                deletes: false,
            });
        }
        if words.first().is_some_and(|w| w == "cd" || w == "pushd") {
            let to = words.iter().skip(1).find(|w| !w.starts_with('-'));
            dir = to.map(|t| under(dir.as_deref(), t));
            continue;
        }
        let mut found = Vec::new();
        simple(words, &mut found, depth);
        out.extend(found.into_iter().map(|a| match a {
            Action::Touch { via, path, deletes } => Action::Touch {
                via,
                path: under(dir.as_deref(), &path),
                deletes,
            },
            other => other,
        }));
    }
    let commands = parsed.commands.len();
    for (_, target) in parsed.writes.iter().filter(|(at, _)| *at >= commands) {
        out.push(Action::Touch {
            via: "a redirection".into(),
            path: under(dir.as_deref(), target),
            deletes: false,
        });
    }
}

fn number(value: Option<&Value>) -> Option<u64> {
    match value? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim_start_matches('#').parse().ok(),
        _ => None,
    }
}

/// The `Skill` tool's `{skill, args}`: a loop skill with `--loop`.
fn in_skill(input: &Value) -> Option<Action> {
    let called = input.get("skill")?.as_str()?.trim();
    let name = called.strip_prefix('/').unwrap_or(called);
    let (_, skill) = super::prompt::SKILL_NAMES
        .iter()
        .find(|(n, _)| n.strip_prefix('/') == Some(name))?;
    let args = input
        .get("args")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim();
    words::words(args)
        .iter()
        .any(|w| w == "--loop")
        .then(|| Action::LoopSkill {
            skill: *skill,
            name: name.to_owned(),
            args: args.to_owned(),
        })
}

fn in_mcp(full: &str, tool: &str, input: &Value) -> Vec<Action> {
    let pr = || {
        number(
            input
                .get("pullNumber")
                .or(input.get("pull_number"))
                .or(input.get("number")),
        )
    };
    let via = full.to_owned();
    match tool {
        "create_pull_request" => vec![Action::OpenPr {
            via,
            body: match input.get("body").and_then(Value::as_str) {
                Some(b) => Body::Text(b.to_owned()),
                None => Body::Unknown("the call gives no body".into()),
            },
        }],
        "merge_pull_request" => vec![Action::Merge { via, pr: pr() }],
        "create_pull_request_review"
        | "create_and_submit_pull_request_review"
        | "submit_pending_pull_request_review" => vec![Action::Review { via, pr: pr() }],
        "pull_request_review_write"
            if matches!(
                input.get("method").and_then(Value::as_str),
                Some("create" | "submit_pending")
            ) =>
        {
            vec![Action::Review { via, pr: pr() }]
        }
        "create_branch" | "push_files" => vec![Action::Push {
            dir: None,
            remote: None,
            branches: input
                .get("branch")
                .and_then(Value::as_str)
                .map(|b| vec![b.to_owned()]),
        }],
        _ => Vec::new(),
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The words of the command a wrapper runs, `None` when `words[0]` is no
/// wrapper.
fn unwrap(words: &[String]) -> Option<&[String]> {
    let name = program(words.first()?);
    let rest = &words[1..];
    let skip_options = |rest: &'_ [String], with_value: &[&str]| -> usize {
        let mut i = 0;
        while i < rest.len() && rest[i].starts_with('-') {
            if rest[i] == "--" {
                return i + 1;
            }
            if with_value.contains(&rest[i].as_str()) {
                i += 1;
            }
            i += 1;
        }
        i
    };
    let start = match name {
        "command" | "builtin" | "exec" | "nohup" | "time" => skip_options(rest, &[]),
        "env" => {
            let mut i = skip_options(rest, &["-u", "--unset", "-C", "--chdir", "-S"]);
            while i < rest.len() && is_assignment(&rest[i]) {
                i += 1;
            }
            i
        }
        "sudo" => skip_options(rest, &["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t"]),
        "nice" => skip_options(rest, &["-n", "--adjustment"]),
        "stdbuf" => skip_options(rest, &["-i", "-o", "-e"]),
        "xargs" => skip_options(
            rest,
            &["-I", "-n", "-L", "-P", "-s", "-d", "-E", "-a", "--arg-file"],
        ),
        "timeout" => {
            let i = skip_options(rest, &["-s", "--signal", "-k", "--kill-after"]);
            i + 1
        }
        _ => return None,
    };
    Some(rest.get(start..).unwrap_or(&[]))
}

/// How deep wrappers (`env`, `sudo`, `bash -c '…'`, `eval`, …) are read
/// inside one another.
const WRAPPERS_MAX: usize = 8;

fn simple(words: &[String], out: &mut Vec<Action>, depth: usize) {
    if depth > WRAPPERS_MAX {
        out.push(Action::Unreadable {
            why: format!("commands wrapped more than {WRAPPERS_MAX} deep"),
        });
        return;
    }
    let mut words = words;
    while words.first().is_some_and(|w| is_assignment(w)) {
        words = &words[1..];
    }
    if let Some(inner) = unwrap(words) {
        return simple(inner, out, depth + 1);
    }
    let Some(first) = words.first() else {
        return;
    };
    let args = &words[1..];
    match program(first) {
        "gh" => gh(args, out),
        "hub" if args.first().is_some_and(|a| a == "pull-request") => out.push(Action::OpenPr {
            via: "hub pull-request".into(),
            body: Body::Unknown("hub pull-request".into()),
        }),
        "curl" => curl(args, out),
        "git" => git(args, out),
        "sdd-loop" => {
            if let Some(i) = args.iter().position(|a| a == "work" || a == "review")
                && args.get(i + 1).is_some_and(|a| a == "begin")
            {
                let skill = if args[i] == "work" {
                    Skill::Work
                } else {
                    Skill::Review
                };
                out.push(Action::Begin { skill });
            }
        }
        "bash" | "sh" | "zsh" | "dash" | "ksh" => {
            // `bash -c 'CMD'`, `sh -ec 'CMD'`: the string is a command line.
            if let Some(i) = args
                .iter()
                .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
                && let Some(text) = args.get(i + 1)
            {
                line(text, out, depth + 1);
            }
        }
        "eval" => line(&args.join(" "), out, depth + 1),
        _ => touch::simple(words, out),
    }
}

/// A PR named by number, `#N` or URL (`…/pull/N`); a branch name is not a
/// number.
fn pr_number(word: Option<&String>) -> Option<u64> {
    let word = word?.trim_start_matches('#');
    if let Ok(n) = word.parse() {
        return Some(n);
    }
    let mut parts = word.trim_end_matches('/').rsplit('/');
    let last = parts.next()?;
    let before = parts.next()?;
    (before == "pull" || before == "pulls")
        .then(|| last.parse().ok())
        .flatten()
}

fn gh(args: &[String], out: &mut Vec<Action>) {
    const GLOBAL: &[&str] = &["-R", "--repo"];
    let mut rest: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if GLOBAL.contains(&args[i].as_str()) {
            i += 2;
            continue;
        }
        if args[i].starts_with("--repo=") {
            i += 1;
            continue;
        }
        rest.push(args[i].clone());
        i += 1;
    }
    match (
        rest.first().map(String::as_str),
        rest.get(1).map(String::as_str),
    ) {
        (Some("pr"), Some("create" | "new")) => {
            let p = Parsed::new(
                &rest[2..],
                &[
                    "-t",
                    "--title",
                    "-b",
                    "--body",
                    "-F",
                    "--body-file",
                    "-H",
                    "--head",
                    "-B",
                    "--base",
                    "-l",
                    "--label",
                    "-a",
                    "--assignee",
                    "-r",
                    "--reviewer",
                    "-m",
                    "--milestone",
                    "-p",
                    "--project",
                    "-T",
                    "--template",
                ],
            );
            if p.has(&["--dry-run"]) {
                return;
            }
            let body = if let Some(b) = p.value(&["-b", "--body"]) {
                Body::Text(b.to_owned())
            } else if let Some(f) = p.value(&["-F", "--body-file"]) {
                if f == "-" {
                    Body::Unknown("--body-file - (standard input)".into())
                } else {
                    Body::File(f.to_owned())
                }
            } else if let Some((flag, _)) = p.flags.iter().find(|(n, _)| {
                matches!(
                    n.as_str(),
                    "-f" | "--fill"
                        | "--fill-first"
                        | "--fill-verbose"
                        | "-e"
                        | "--editor"
                        | "-w"
                        | "--web"
                        | "-T"
                        | "--template"
                        | "--recover"
                )
            }) {
                Body::Unknown(format!("{flag} (the body is not in the command)"))
            } else {
                Body::Unknown("no --body".into())
            };
            out.push(Action::OpenPr {
                via: "gh pr create".into(),
                body,
            });
        }
        (Some("pr"), Some("merge")) => {
            let p = Parsed::new(
                &rest[2..],
                &[
                    "-t",
                    "--subject",
                    "-b",
                    "--body",
                    "-F",
                    "--body-file",
                    "--match-head-commit",
                    "-A",
                    "--author-email",
                ],
            );
            if p.has(&["--disable-auto"]) {
                return;
            }
            out.push(Action::Merge {
                via: "gh pr merge".into(),
                pr: pr_number(p.positionals.first()),
            });
        }
        (Some("pr"), Some("review")) => {
            let p = Parsed::new(&rest[2..], &["-b", "--body", "-F", "--body-file"]);
            out.push(Action::Review {
                via: "gh pr review".into(),
                pr: pr_number(p.positionals.first()),
            });
        }
        (Some("api"), _) => gh_api(&rest[1..], out),
        _ => {}
    }
}

/// What an API call to `url` with `method` and fields does.
enum Endpoint {
    Pulls,
    Merge(Option<u64>),
    Reviews(Option<u64>),
    Graphql,
}

fn endpoint(url: &str) -> Option<Endpoint> {
    let path = match url.split_once("://") {
        Some((_, rest)) => rest.split_once('/').map_or("", |(_, p)| p),
        None => url,
    };
    let path = path.split(['?', '#']).next().unwrap_or("");
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.last() == Some(&"graphql") {
        return Some(Endpoint::Graphql);
    }
    // `repos/O/R/pulls`, or `repos/$REPO/pulls` with the name in a variable.
    let repos = segments.iter().position(|s| *s == "repos")?;
    let pulls = repos + segments[repos..].iter().position(|s| *s == "pulls")?;
    if !(2..=3).contains(&(pulls - repos)) {
        return None;
    }
    match &segments[pulls..] {
        ["pulls"] => Some(Endpoint::Pulls),
        ["pulls", n, "merge"] => Some(Endpoint::Merge(n.parse().ok())),
        ["pulls", n, "reviews"] | ["pulls", n, "reviews", _, "events"] => {
            Some(Endpoint::Reviews(n.parse().ok()))
        }
        _ => None,
    }
}

fn api_action(
    via: &str,
    method: &str,
    at: Endpoint,
    body: impl FnOnce() -> Body,
    query: Option<&str>,
    out: &mut Vec<Action>,
) {
    let method = method.to_ascii_uppercase();
    match at {
        Endpoint::Pulls if method == "POST" => out.push(Action::OpenPr {
            via: via.to_owned(),
            body: body(),
        }),
        Endpoint::Merge(pr) if method == "POST" || method == "PUT" => out.push(Action::Merge {
            via: via.to_owned(),
            pr,
        }),
        Endpoint::Reviews(pr) if method == "POST" => out.push(Action::Review {
            via: via.to_owned(),
            pr,
        }),
        Endpoint::Graphql if method == "POST" => {
            let q = query.unwrap_or("");
            if q.contains("createPullRequest") {
                out.push(Action::OpenPr {
                    via: format!("{via} (GraphQL createPullRequest)"),
                    body: Body::Unknown("a GraphQL mutation".into()),
                });
            }
            if q.contains("mergePullRequest") {
                out.push(Action::Merge {
                    via: format!("{via} (GraphQL mergePullRequest)"),
                    pr: None,
                });
            }
            if q.contains("addPullRequestReview") || q.contains("submitPullRequestReview") {
                out.push(Action::Review {
                    via: format!("{via} (GraphQL review)"),
                    pr: None,
                });
            }
            if query.is_none() {
                // The query is in a file: assume the worst of a mutation.
                out.push(Action::OpenPr {
                    via: format!("{via} (GraphQL from a file)"),
                    body: Body::Unknown("a GraphQL query read from a file".into()),
                });
            }
        }
        _ => {}
    }
}

fn gh_api(args: &[String], out: &mut Vec<Action>) {
    let p = Parsed::new(
        args,
        &[
            "-X",
            "--method",
            "-f",
            "--raw-field",
            "-F",
            "--field",
            "--input",
            "-H",
            "--header",
            "-p",
            "--preview",
            "-q",
            "--jq",
            "-t",
            "--template",
            "--cache",
            "--hostname",
        ],
    );
    let Some(at) = p.positionals.first().and_then(|u| endpoint(u)) else {
        return;
    };
    let fields: Vec<&str> = p.values(&["-f", "--raw-field", "-F", "--field"]).collect();
    let method =
        p.value(&["-X", "--method"])
            .unwrap_or(if fields.is_empty() && !p.has(&["--input"]) {
                "GET"
            } else {
                "POST"
            });
    let field = |name: &str| {
        fields
            .iter()
            .rev()
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
    };
    let body = || match (field("body"), p.value(&["--input"])) {
        (Some(b), _) => match b.strip_prefix('@') {
            Some(file) => Body::File(file.to_owned()),
            None => Body::Text(b.to_owned()),
        },
        (None, Some(input)) if input != "-" => Body::JsonFile(input.to_owned()),
        _ => Body::Unknown("no body field".into()),
    };
    let query = match field("query") {
        Some(q) if q.starts_with('@') => None,
        Some(q) => Some(q),
        None => Some(""),
    };
    api_action("gh api", method, at, body, query, out);
}

fn curl(args: &[String], out: &mut Vec<Action>) {
    let data = &[
        "-d",
        "--data",
        "--data-raw",
        "--data-binary",
        "--data-ascii",
        "--data-urlencode",
        "--json",
        "-F",
        "--form",
    ];
    let mut valued: Vec<&str> = vec![
        "-X",
        "--request",
        "-H",
        "--header",
        "-u",
        "--user",
        "-o",
        "--output",
        "-w",
        "--write-out",
        "-A",
        "--user-agent",
        "-e",
        "--referer",
        "--url",
        "-m",
        "--max-time",
        "--connect-timeout",
        "-b",
        "--cookie",
        "-c",
        "--cookie-jar",
        "-K",
        "--config",
        "--retry",
        "-x",
        "--proxy",
        "--cacert",
        "--cert",
        "--key",
        "-T",
        "--upload-file",
    ];
    valued.extend_from_slice(data);
    let p = Parsed::new(args, &valued);
    let urls = p
        .values(&["--url"])
        .map(str::to_owned)
        .chain(p.positionals.iter().cloned());
    let payloads: Vec<&str> = p.values(data).collect();
    let method = p
        .value(&["-X", "--request"])
        .unwrap_or(if payloads.is_empty() { "GET" } else { "POST" })
        .to_owned();
    for url in urls {
        let Some(at) = endpoint(&url) else {
            continue;
        };
        let body = || match payloads.last() {
            Some(d) => match d.strip_prefix('@') {
                Some(file) => Body::JsonFile(file.to_owned()),
                None => match serde_json::from_str::<Value>(d) {
                    Ok(v) => match v.get("body").and_then(Value::as_str) {
                        Some(b) => Body::Text(b.to_owned()),
                        None => Body::Unknown("the JSON payload has no body".into()),
                    },
                    Err(_) => Body::Unknown("the payload is not JSON".into()),
                },
            },
            None => Body::Unknown("no payload".into()),
        };
        let query = payloads
            .last()
            .filter(|d| !d.starts_with('@'))
            .copied()
            .or(if payloads.is_empty() { Some("") } else { None });
        api_action("curl", &method, at, body, query, out);
    }
}

fn git(args: &[String], out: &mut Vec<Action>) {
    let mut dir = None;
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        match args[i].as_str() {
            "-C" => {
                dir = args.get(i + 1).cloned();
                i += 1;
            }
            "-c" | "--git-dir" | "--work-tree" | "--namespace" => i += 1,
            _ => {}
        }
        i += 1;
    }
    if args.get(i).map(String::as_str) != Some("push") {
        let mut found = Vec::new();
        touch::git(&args[i.min(args.len())..], &mut found);
        out.extend(found.into_iter().map(|a| match (a, dir.as_deref()) {
            (Action::Touch { via, path, deletes }, Some(d)) => Action::Touch {
                via,
                path: under(Some(d), &path),
                deletes,
            },
            (a, _) => a,
        }));
        return;
    }
    let p = Parsed::new(
        &args[i + 1..],
        &["-o", "--push-option", "--repo", "--receive-pack", "--exec"],
    );
    if p.has(&["-d", "--delete", "-n", "--dry-run"])
        || (p.has(&["--tags"]) && p.positionals.len() < 2 && !p.has(&["--all", "--mirror"]))
    {
        return;
    }
    let remote = p.positionals.first().cloned();
    let branches = if p.has(&["--all", "--mirror", "--branches"]) {
        None
    } else {
        Some(
            p.positionals
                .iter()
                .skip(1)
                .filter_map(|spec| {
                    let spec = spec.trim_start_matches('+');
                    let dst = match spec.split_once(':') {
                        Some((_, "")) => return None,
                        Some(("", _)) => return None,
                        Some((_, dst)) => dst,
                        None => spec,
                    };
                    Some(dst.trim_start_matches("refs/heads/").to_owned())
                })
                .collect(),
        )
    };
    out.push(Action::Push {
        dir,
        remote,
        branches,
    });
}

mod action;
mod parsed;
mod touch;

#[cfg(test)]
mod tests;
