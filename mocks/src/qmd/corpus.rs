//! The fixture collections `mock-qmd` searches: `<root>/<collection>/**/*.md`
//! (`fixtures/qmd/` in this repository).
//!
//! Scoring is a small keyword match, not BM25: the share of query terms a
//! document contains, damped by how often they occur, in `0..=1` and
//! rounded to two places like qmd's JSON. Ties break on the path, so
//! results are stable across runs and machines. A document's `docid` is
//! the first six hex digits of an FNV-1a hash of its text, like qmd's
//! short content hashes (made up here: stable, not qmd's).

use std::collections::BTreeMap;
use std::path::Path;

/// One markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    pub collection: String,
    /// Relative to the collection, `/`-separated.
    pub path: String,
    pub title: String,
    pub body: String,
}

impl Doc {
    /// `qmd://{collection}/{path}`.
    pub fn uri(&self) -> String {
        format!("qmd://{}/{}", self.collection, self.path)
    }

    /// Six hex digits, e.g. `a1b2c3`.
    pub fn docid(&self) -> String {
        format!("{:016x}", crate::hash::fnv1a(self.body.as_bytes()))[..6].to_owned()
    }
}

/// A search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit<'a> {
    pub doc: &'a Doc,
    pub score: f64,
    /// 1-based line of the snippet's first line.
    pub line: usize,
    pub snippet: String,
}

/// All collections, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Corpus {
    pub collections: BTreeMap<String, Vec<Doc>>,
}

fn title_of(path: &str, body: &str) -> String {
    body.lines()
        .find_map(|l| l.strip_prefix("# "))
        .map(|t| t.trim().to_owned())
        .unwrap_or_else(|| {
            path.rsplit('/')
                .next()
                .unwrap_or(path)
                .trim_end_matches(".md")
                .to_owned()
        })
}

fn walk(
    dir: &Path,
    prefix: &str,
    out: &mut Vec<(String, std::path::PathBuf)>,
) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(&entry.path(), &rel, out)?;
        } else if name.ends_with(".md") {
            out.push((rel, entry.path()));
        }
    }
    Ok(())
}

fn terms(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| t.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect()
}

impl Corpus {
    /// Every `*.md` under each subdirectory of `root`.
    pub fn load(root: &Path) -> std::io::Result<Self> {
        let mut collections = BTreeMap::new();
        let mut dirs: Vec<_> = std::fs::read_dir(root)?.collect::<Result<_, _>>()?;
        dirs.sort_by_key(std::fs::DirEntry::file_name);
        for dir in dirs {
            if !dir.file_type()?.is_dir() {
                continue;
            }
            let collection = dir.file_name().to_string_lossy().into_owned();
            let mut files = Vec::new();
            walk(&dir.path(), "", &mut files)?;
            let docs = files
                .into_iter()
                .map(|(path, file)| {
                    let body = std::fs::read_to_string(file)?;
                    Ok(Doc {
                        collection: collection.clone(),
                        title: title_of(&path, &body),
                        path,
                        body,
                    })
                })
                .collect::<std::io::Result<Vec<_>>>()?;
            collections.insert(collection, docs);
        }
        Ok(Self { collections })
    }

    pub fn documents(&self) -> usize {
        self.collections.values().map(Vec::len).sum()
    }

    /// A document by `qmd://collection/path` or `collection/path`.
    pub fn get(&self, name: &str) -> Option<&Doc> {
        let name = name.strip_prefix("qmd://").unwrap_or(name);
        let (collection, path) = name.split_once('/')?;
        self.collections
            .get(collection)?
            .iter()
            .find(|d| d.path == path)
    }

    /// Matches for `query` in `collections` (all when empty), best first.
    pub fn search(&self, query: &str, collections: &[String], limit: usize) -> Vec<Hit<'_>> {
        let terms = terms(query);
        if terms.is_empty() {
            return Vec::new();
        }
        let mut hits: Vec<Hit<'_>> = self
            .collections
            .iter()
            .filter(|(name, _)| collections.is_empty() || collections.contains(name))
            .flat_map(|(_, docs)| docs)
            .filter_map(|doc| {
                let text = format!("{}\n{}", doc.title, doc.body).to_lowercase();
                let counts: Vec<usize> = terms
                    .iter()
                    .map(|t| text.matches(t.as_str()).count())
                    .collect();
                let matched = counts.iter().filter(|c| **c > 0).count();
                if matched == 0 {
                    return None;
                }
                let occurrences = counts.iter().sum::<usize>() as f64;
                let coverage = matched as f64 / terms.len() as f64;
                let score =
                    (coverage * (occurrences / (occurrences + 1.0)) * 100.0).round() / 100.0;
                let lines: Vec<&str> = doc.body.lines().collect();
                let first = lines
                    .iter()
                    .position(|l| {
                        let l = l.to_lowercase();
                        terms.iter().any(|t| l.contains(t.as_str()))
                    })
                    .unwrap_or(0);
                let snippet = lines
                    .iter()
                    .skip(first)
                    .take(3)
                    .copied()
                    .collect::<Vec<_>>()
                    .join("\n");
                Some(Hit {
                    doc,
                    score,
                    line: first + 1,
                    snippet,
                })
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.doc.uri().cmp(&b.doc.uri()))
        });
        hits.truncate(limit);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Corpus {
        let doc = |collection: &str, path: &str, body: &str| Doc {
            collection: collection.into(),
            path: path.into(),
            title: title_of(path, body),
            body: body.into(),
        };
        Corpus {
            collections: BTreeMap::from([
                (
                    "adr".to_owned(),
                    vec![
                        doc(
                            "adr",
                            "0024-qmd.md",
                            "# ADR-0024: qmd is required\n\nSkills hard-fail when qmd is unreachable.\n",
                        ),
                        doc(
                            "adr",
                            "0010-review.md",
                            "# ADR-0010: one review round\n\nOne review-response round per PR.\n",
                        ),
                    ],
                ),
                (
                    "specs".to_owned(),
                    vec![doc(
                        "specs",
                        "login.md",
                        "Login spec\nUsers log in with a password.\n",
                    )],
                ),
            ]),
        }
    }

    #[test]
    fn best_match_first_with_snippet_line() {
        let c = corpus();
        let hits = c.search("qmd unreachable", &[], 10);
        assert_eq!(hits[0].doc.path, "0024-qmd.md");
        assert_eq!(hits[0].line, 1);
        assert!(hits[0].score > 0.0 && hits[0].score <= 1.0);
        assert!(c.search("review", &["specs".into()], 10).is_empty());
        assert_eq!(c.search("password", &[], 10)[0].doc.title, "login");
        assert!(
            c.search("a", &[], 10).is_empty(),
            "one-letter terms are ignored"
        );
    }

    #[test]
    fn docids_are_stable_and_get_takes_both_spellings() {
        let c = corpus();
        let doc = c.get("qmd://adr/0024-qmd.md").unwrap();
        assert_eq!(doc.docid().len(), 6);
        assert_eq!(doc.docid(), c.get("adr/0024-qmd.md").unwrap().docid());
        assert!(c.get("adr/none.md").is_none());
    }
}
