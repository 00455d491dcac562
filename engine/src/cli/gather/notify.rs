//! The notification URLs of a tick (docs/src/notifications.md): every
//! `--notify URL`, the URLs in `SDD_LOOP_NOTIFY`, and the URLs in each
//! variable CLAUDE.md's `Loop Notify` sub-block names — all of them, in
//! that order, each once. CLAUDE.md names variables and never holds a URL:
//! the work reads CLAUDE.md, and a URL there would hand it the channel
//! (and the gate's person-only code). A named variable that is not set is
//! skipped (`doctor` says so), so a CLAUDE.md shared by a team does not
//! stop the loops of those who set none.

use std::collections::BTreeMap;
use std::path::Path;

use crate::rules::claude_md::ClaudeMd;
use crate::world::notify::{self, ENV_NOTIFY, Target};

/// A setting that cannot be used: the message and its `help:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub message: String,
    pub help: String,
}

impl Problem {
    fn invalid(message: impl Into<String>, help: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            help: help.into(),
        }
    }
}

/// The URLs and the variables that hold them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Notify {
    pub urls: Vec<String>,
    /// [`ENV_NOTIFY`] and the variables CLAUDE.md names.
    pub vars: Vec<String>,
}

/// One configured URL and where it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    pub url: String,
    /// `--notify`, `SDD_LOOP_NOTIFY`, `NAME (named by CLAUDE.md:LINE)`.
    pub from: String,
}

/// Every configured URL with its source; a URL written in CLAUDE.md (not
/// a variable's name) is a problem.
pub(crate) fn sources(
    flags: &[String],
    vars: &BTreeMap<String, String>,
    claude_md: &Path,
) -> (Vec<Source>, Vec<String>, Vec<Problem>) {
    let mut found: Vec<Source> = flags
        .iter()
        .map(|u| Source {
            url: u.trim().to_owned(),
            from: "--notify".to_owned(),
        })
        .collect();
    let mut named = Vec::new();
    let mut problems = Vec::new();
    let from_var = |name: &str, from: String, found: &mut Vec<Source>| {
        if let Some(list) = vars.get(name) {
            found.extend(split(list).map(|url| Source {
                url,
                from: from.clone(),
            }));
        }
    };
    from_var(ENV_NOTIFY, ENV_NOTIFY.to_owned(), &mut found);
    let md = ClaudeMd::load(claude_md).unwrap_or_default();
    for (line, name) in md.notify_vars() {
        let at = format!("{}:{line}", claude_md.display());
        if name.contains("://") || !is_var_name(&name) {
            problems.push(Problem::invalid(
                format!("{at}: `Loop Notify` lists {}, not the name of an environment variable", if name.contains("://") { "a URL" } else { "a value" }),
                "the work reads CLAUDE.md: put the URL in an environment variable and list the variable's name (`- NTFY_URL`), or pass --notify URL / SDD_LOOP_NOTIFY",
            ));
            continue;
        }
        named.push(name.clone());
        from_var(&name, format!("{name} (named at {at})"), &mut found);
    }
    let mut seen = std::collections::BTreeSet::new();
    found.retain(|s| !s.url.is_empty() && seen.insert(s.url.clone()));
    (found, named, problems)
}

/// The tick's notification settings, or the problems with them.
pub(crate) fn gather(
    flags: &[String],
    vars: &BTreeMap<String, String>,
    claude_md: &Path,
) -> Result<Notify, Vec<Problem>> {
    let (found, named, mut problems) = sources(flags, vars, claude_md);
    for s in &found {
        if let Err(e) = Target::parse(&s.url) {
            problems.push(Problem::invalid(format!("{e} (from {})", s.from), e.help()));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Notify {
        urls: found.into_iter().map(|s| s.url).collect(),
        vars: notify::child_env_removed(&named),
    })
}

fn split(list: &str) -> impl Iterator<Item = String> + '_ {
    list.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn is_var_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn md(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("CLAUDE.md");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn flags_the_variable_and_named_variables_add_up_once_each() {
        let (_d, path) = md("### SDD Configuration\n#### Loop Notify\n- `MY_SLACK`\n- UNSET_ONE\n");
        let got = gather(
            &["https://ntfy.sh/a".into()],
            &vars(&[
                (ENV_NOTIFY, "https://ntfy.sh/a, https://ntfy.sh/b"),
                ("MY_SLACK", "https://hooks.slack.com/services/x"),
            ]),
            &path,
        )
        .unwrap();
        assert_eq!(
            got.urls,
            [
                "https://ntfy.sh/a",
                "https://ntfy.sh/b",
                "https://hooks.slack.com/services/x"
            ]
        );
        assert_eq!(got.vars, [ENV_NOTIFY, "MY_SLACK", "UNSET_ONE"]);
    }

    #[test]
    fn a_url_in_claude_md_is_refused_without_quoting_it() {
        let (_d, path) =
            md("### SDD Configuration\n#### Loop Notify\n- https://ntfy.sh/secret-topic\n");
        let problems = gather(&[], &vars(&[]), &path).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.ends_with(
                "CLAUDE.md:3: `Loop Notify` lists a URL, not the name of an environment variable"
            ),
            "{problems:?}"
        );
        assert!(!problems[0].message.contains("secret-topic"));
    }

    #[test]
    fn a_bad_url_names_its_source_not_its_secret() {
        let problems = gather(
            &[],
            &vars(&[(ENV_NOTIFY, "ftp://user:pw@host/topic")]),
            Path::new("/nonexistent/CLAUDE.md"),
        )
        .unwrap_err();
        assert_eq!(
            problems[0].message,
            "notification URL ftp://… is not an http:// or https:// URL (from SDD_LOOP_NOTIFY)"
        );
    }
}
