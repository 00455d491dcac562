//! The docs' links lead somewhere: every relative link and `#anchor` in
//! `README.md`, `evals/README.md` and the book (`docs/**/*.md`) names a
//! file that exists and, with an anchor, a heading of that file — by the
//! slug GitHub and mdBook both give it (lowercased; letters, digits, `-`
//! and `_` kept; spaces to `-`; the rest dropped; a repeated heading
//! `-1`, `-2`, …). CI does not build the book (installing mdBook costs
//! minutes), so this is what keeps its links whole.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

fn workspace() -> PathBuf {
    let here = std::env::current_dir().expect("a current directory");
    sdd_harness::cli::find_workspace(&here).expect("the tests run inside the workspace")
}

fn parser(text: &str) -> Parser<'_> {
    Parser::new_ext(
        text,
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES,
    )
}

/// The documents whose links are checked: the two READMEs and every
/// Markdown file under `docs/` but the built book.
fn documents(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "book") {
                    walk(&path, out);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut out = vec![root.join("README.md"), root.join("evals/README.md")];
    walk(&root.join("docs"), &mut out);
    out
}

/// Each heading's anchor, as GitHub and mdBook make it.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in parser(text) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let mut id = base.clone();
                let mut n = 0;
                while seen.contains(&id) {
                    n += 1;
                    id = format!("{base}-{n}");
                }
                seen.insert(id);
            }
            _ => {}
        }
    }
    seen
}

fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// `path` without `.` and `..` (the link's target need not exist for this).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Every link of `doc` that leads nowhere, as `file:line: why`.
fn broken_links(root: &Path, doc: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(doc).unwrap();
    let shown = doc.strip_prefix(root).unwrap_or(doc).display().to_string();
    let book = root.join("docs/src");
    let mut broken = Vec::new();
    for (event, range) in parser(&text).into_offset_iter() {
        let (Event::Start(Tag::Link { dest_url, .. }) | Event::Start(Tag::Image { dest_url, .. })) =
            event
        else {
            continue;
        };
        let line = text[..range.start].matches('\n').count() + 1;
        let link = dest_url.to_string();
        let has_scheme = link
            .split_once(':')
            .is_some_and(|(scheme, _)| !scheme.is_empty() && !scheme.contains('/'));
        if has_scheme {
            continue;
        }
        let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
        let target = if file.is_empty() {
            doc.to_path_buf()
        } else {
            normal(&doc.parent().unwrap().join(file))
        };
        let mut fail = |why: String| broken.push(format!("{shown}:{line}: `{link}`: {why}"));
        if !target.exists() {
            fail(format!("{} does not exist", target.display()));
            continue;
        }
        if doc.starts_with(&book) && !target.starts_with(&book) {
            fail(
                "a book page links only to pages of the book: mdBook turns the link into one \
                 to a page it never built; name the file as code instead"
                    .to_owned(),
            );
            continue;
        }
        if anchor.is_empty() {
            continue;
        }
        if target.extension().is_none_or(|e| e != "md") {
            fail(format!(
                "{} is not Markdown, so it has no anchors",
                target.display()
            ));
            continue;
        }
        let found = anchors(&std::fs::read_to_string(&target).unwrap());
        if !found.contains(anchor) {
            let near: Vec<&String> = found
                .iter()
                .filter(|a| a.contains(anchor) || anchor.contains(a.as_str()))
                .collect();
            fail(format!(
                "no heading of {} has the anchor #{anchor}{}",
                target.display(),
                if near.is_empty() {
                    String::new()
                } else {
                    format!(" (near: {near:?})")
                }
            ));
        }
    }
    broken
}

#[test]
fn every_relative_link_and_anchor_in_the_docs_resolves() {
    let root = workspace();
    let docs = documents(&root);
    assert!(
        docs.len() > 10,
        "found only {docs:?}: is the book under docs/src?"
    );
    let broken: Vec<String> = docs.iter().flat_map(|d| broken_links(&root, d)).collect();
    assert!(
        broken.is_empty(),
        "{} link(s) lead nowhere:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn every_page_of_the_book_is_in_its_summary() {
    // mdBook builds only the pages SUMMARY.md lists; a page left out is
    // never on the site, and links to it from other pages break there.
    let src = workspace().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = parser(&summary)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. }) => Some(dest_url.to_string()),
            _ => None,
        })
        .collect();
    let pages: BTreeSet<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md") && name != "SUMMARY.md")
        .collect();
    assert_eq!(
        listed, pages,
        "docs/src/SUMMARY.md and the pages in docs/src differ"
    );
}

#[test]
fn a_link_to_a_missing_file_or_heading_is_reported_with_its_line() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    std::fs::create_dir_all(root.join("docs/src")).unwrap();
    std::fs::write(
        root.join("docs/src/page.md"),
        "# A page\n\n## The `--lock` flag's modes\n\n## Again\n\n## Again\n",
    )
    .unwrap();
    std::fs::write(
        root.join("README.md"),
        "# Title\n\n[ok](docs/src/page.md#the---lock-flags-modes) [ok](docs/src/page.md#again-1)\n\
         [ok](#title) [ok](https://example.com/x.md#nowhere)\n\
         [gone](docs/src/missing.md)\n\
         [no heading](docs/src/page.md#the---lock-flag)\n\
         `[in code](nowhere.md)`\n",
    )
    .unwrap();
    std::fs::write(
        root.join("docs/src/out.md"),
        "# Out\n\n[outside the book](../../README.md)\n",
    )
    .unwrap();
    let mut broken = broken_links(root, &root.join("README.md"));
    broken.extend(broken_links(root, &root.join("docs/src/out.md")));
    assert_eq!(broken.len(), 3, "{broken:#?}");
    assert!(
        broken[0].starts_with("README.md:5: `docs/src/missing.md`: ")
            && broken[0].ends_with("does not exist"),
        "{broken:#?}"
    );
    assert!(
        broken[1].starts_with("README.md:6: `docs/src/page.md#the---lock-flag`: no heading of ")
            && broken[1].contains("(near: [\"the---lock-flags-modes\"])"),
        "{broken:#?}"
    );
    assert!(
        broken[2].starts_with("docs/src/out.md:3: `../../README.md`: a book page links only"),
        "{broken:#?}"
    );
}
