//! Finding a gate's question in a document, however it is written: in a
//! table cell, a code span, quotes or plain prose, with its numbers and
//! free text as placeholders (`#N`, `#{N}`, `{N}`, `{number}`, `<N>`,
//! `{root-cause}`) or as example values (`#142`).
//!
//! Both sides are [`normalize`]d — every placeholder or example number
//! becomes one mark — and the engine's template ([`template_regex`])
//! is searched in each block. A question that is not there verbatim is
//! looked for among the document's question-like fragments by word
//! similarity ([`near`]), so a reworded question is reported as worded
//! differently, with a diff, rather than as missing.

use std::sync::LazyLock;

use regex::Regex;
use similar::{ChangeTag, TextDiff};

use super::engine::{GateTemplate, Part, budget_question};
use super::markdown::{Block, Doc, Kind};

/// What every placeholder and example number becomes.
pub const MARK: &str = "⟨⟩";

static SPACES: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\s+").expect("a valid regex"));
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"#(?:\{[^}]*\}|<[^>]*>|\d+|[A-Z]\b)|\{[^}]*\}|<[^>]*>").expect("a valid regex")
});

/// Straight quotes, single spaces (edges kept: template pieces are joined),
/// and each placeholder or `#`-number as [`MARK`].
pub fn normalize(text: &str) -> String {
    let text = text
        .replace(['\u{2018}', '\u{2019}'], "'")
        .replace(['\u{201C}', '\u{201D}'], "\"");
    let text = SPACES.replace_all(&text, " ");
    PLACEHOLDER.replace_all(&text, MARK).into_owned()
}

/// Where a gate's question was found.
#[derive(Debug, Clone)]
pub struct Found {
    /// Index of the block in [`Doc::blocks`].
    pub block: usize,
    pub line: usize,
    /// The document's question, normalized.
    pub text: String,
    /// What the engine asks for the same values, when the document's text
    /// differs from it; `None` when they agree.
    pub expected: Option<String>,
    /// The text after the question in its block (where its options are).
    pub rest: String,
}

fn mentions_gate(block: &Block, template: &GateTemplate) -> bool {
    let name = template.gate.name();
    let text = block.text.to_lowercase();
    text.contains(name) || text.contains(&name.replace('-', " "))
}

/// Every place the template's question appears verbatim (modulo
/// placeholders). For the budget gate, a listed set of budgets must also be
/// worded as the engine words it; a difference there is a [`Found`] with
/// `expected` set.
pub fn exact(doc: &Doc, template: &GateTemplate) -> Vec<Found> {
    let re = template_regex(template);
    let mut out = Vec::new();
    for (i, block) in doc.blocks.iter().enumerate() {
        if matches!(block.kind, Kind::Heading(_)) {
            continue;
        }
        let text = normalize(&block.text);
        for m in re.captures_iter(&text) {
            let whole = m.get(0).expect("group 0");
            let expected = if template.parts.contains(&Part::Budgets) {
                m.get(1)
                    .and_then(|list| budget_question(list.as_str()))
                    .map(|q| normalize(&q))
                    .filter(|q| q != whole.as_str())
            } else {
                None
            };
            out.push(Found {
                block: i,
                line: block.line,
                text: whole.as_str().to_owned(),
                expected,
                rest: text[whole.end()..].to_owned(),
            });
        }
    }
    out
}

static QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""([^"]{8,})""#).expect("a valid regex"));
static SENTENCE_END: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[.?!](?:\s|$)").expect("a valid regex"));

/// Question-like fragments of a block: code spans, quoted text, cells,
/// and runs of one to three sentences.
fn fragments(block: &Block) -> Vec<String> {
    let mut out: Vec<String> = block.code.iter().map(|c| normalize(c)).collect();
    let text = normalize(&block.text);
    out.extend(QUOTED.captures_iter(&text).map(|c| c[1].to_owned()));
    out.extend(block.cells.iter().map(|c| normalize(c)));
    let mut starts = vec![0];
    starts.extend(SENTENCE_END.find_iter(&text).map(|m| m.end()));
    for (a, &start) in starts.iter().enumerate() {
        for &end in starts.iter().skip(a + 1).take(3) {
            out.push(text[start..end].trim().to_owned());
        }
    }
    out.retain(|f| f.split_whitespace().count() >= 4);
    out
}

/// Word similarity of two texts, 0 to 1.
pub fn similarity(a: &str, b: &str) -> f32 {
    let a: Vec<&str> = a.split_whitespace().collect();
    let b: Vec<&str> = b.split_whitespace().collect();
    TextDiff::configure().diff_slices(&a, &b).ratio()
}

/// The document's closest rendering of the question when it is not there
/// verbatim: the most similar fragment, if it is similar enough to be
/// meant as this question. `taken` lists blocks already holding another
/// gate's exact question, which are not considered.
pub fn near(doc: &Doc, template: &GateTemplate, taken: &[usize]) -> Option<Found> {
    let want = normalize(&template.display());
    let mut best: Option<(f32, Found)> = None;
    for (i, block) in doc.blocks.iter().enumerate() {
        if matches!(block.kind, Kind::Heading(_)) || taken.contains(&i) {
            continue;
        }
        let bonus = if mentions_gate(block, template) {
            0.15
        } else {
            0.0
        };
        for fragment in fragments(block) {
            let score = similarity(&fragment, &want) + bonus;
            if best.as_ref().is_none_or(|(s, _)| score > *s) {
                let text = normalize(&block.text);
                let rest = text
                    .find(&fragment)
                    .map(|at| text[at + fragment.len()..].to_owned())
                    .unwrap_or_default();
                best = Some((
                    score,
                    Found {
                        block: i,
                        line: block.line,
                        text: fragment,
                        expected: Some(want.clone()),
                        rest,
                    },
                ));
            }
        }
    }
    best.filter(|(score, _)| *score >= 0.6).map(|(_, f)| f)
}

/// A word-level diff, `[-removed-]` and `{+added+}`, from the document's
/// text to the engine's.
pub fn word_diff(doc: &str, engine: &str) -> String {
    let diff = TextDiff::from_words(doc, engine);
    let mut out = String::new();
    for change in diff.iter_all_changes() {
        let value = change.value();
        match change.tag() {
            ChangeTag::Equal => out.push_str(value),
            ChangeTag::Delete => out.push_str(&format!("[-{value}-]")),
            ChangeTag::Insert => out.push_str(&format!("{{+{value}+}}")),
        }
    }
    out.replace("-][-", "").replace("+}{+", "")
}

/// The options a document lists after a question: the gate's options it
/// lacks, and — when the options sit in a table column of their own — the
/// words there that are not options.
pub fn options(doc: &Doc, found: &Found, options: &[&str]) -> (Vec<String>, Vec<String>) {
    let block = &doc.blocks[found.block];
    let mut text = found.rest.clone();
    let column = doc.header_of(block).and_then(|header| {
        header
            .iter()
            .position(|h| {
                let h = h.to_lowercase();
                h.contains("option") || h.contains("answer") || h.contains("choice")
            })
            .and_then(|i| block.cells.get(i))
    });
    if let Some(next) = doc.blocks.get(found.block + 1) {
        let lead = next.text.trim_start().to_lowercase();
        if ["option", "answer", "choice"]
            .iter()
            .any(|w| lead.starts_with(w))
        {
            text.push(' ');
            text.push_str(&next.text);
        }
    }
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let said = words(&text);
    let missing = options
        .iter()
        .filter(|o| !said.iter().any(|w| w == *o))
        .map(|o| (*o).to_owned())
        .collect();
    let extra = column
        .map(|cell| {
            words(cell)
                .into_iter()
                .filter(|w| !options.contains(&w.as_str()) && w != "or" && w != "and")
                .collect()
        })
        .unwrap_or_default();
    (missing, extra)
}

/// A template as a regex over [`normalize`]d text; a slot matches
/// the placeholder mark, free text matches anything.
pub fn template_regex(template: &GateTemplate) -> Regex {
    let mut re = String::new();
    for p in &template.parts {
        match p {
            Part::Text(t) => {
                let t = normalize(t);
                // The budget gate says `ceiling` for one budget and
                // `ceiling(s)` for several; a document may show either.
                let escaped = regex::escape(&t).replace("ceiling", r"ceiling(?:\(s\))?");
                re.push_str(&escaped);
            }
            Part::Number => re.push_str(&regex::escape(MARK)),
            Part::Free(_) | Part::Budgets => re.push_str("(.+?)"),
        }
    }
    Regex::new(&re).expect("an escaped template is a valid regex")
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use sdd_loop::rules::gates::GateName;

    use super::*;

    #[test]
    fn placeholders_and_example_numbers_read_alike() {
        for shown in [
            "PR #N has diverged",
            "PR #{N} has diverged",
            "PR {N} has diverged",
            "PR {number} has diverged",
            "PR #142 has diverged",
            "PR <N> has diverged",
        ] {
            assert_eq!(normalize(shown), "PR ⟨⟩ has diverged", "{shown}");
        }
        assert_eq!(
            normalize("Approaching iterations (4/5)."),
            "Approaching iterations (4/5)."
        );
        assert_eq!(normalize("the lock’s  “holder”"), "the lock's \"holder\"");
    }

    #[test]
    fn a_question_is_found_in_any_layout() {
        let t = GateTemplate::of(GateName::RepeatedFailure);
        for text in [
            "| gate | question | options |\n|---|---|---|\n| repeated-failure | `Issue/PR #N failed twice with: {root-cause}. Skip, retry once more, or stop the loop?` | skip, retry, stop |\n",
            "- **Repeated failure**: \"Issue/PR #44 failed twice with: tests failing in module X. Skip, retry once more, or stop the loop?\" (skip / retry / stop)\n",
            "When an issue fails twice the loop asks Issue/PR #{N} failed twice with: <root cause>. Skip,\nretry once more, or stop the loop? and accepts skip, retry or stop.\n",
        ] {
            let doc = Doc::parse(Path::new("d.md"), text);
            let found = exact(&doc, &t);
            assert_eq!(found.len(), 1, "{text}");
            assert_eq!(
                options(&doc, &found[0], t.options()).0,
                Vec::<String>::new(),
                "{text}"
            );
        }
    }

    #[test]
    fn a_reworded_question_is_near_with_a_diff() {
        let t = GateTemplate::of(GateName::AmbiguousCriteria);
        let doc = Doc::parse(
            Path::new("d.md"),
            "- ambiguous-criteria: `Issue #N has unclear criteria. Skip, escalate, or proceed with my best interpretation?` — skip, escalate, proceed, stop\n",
        );
        assert!(exact(&doc, &t).is_empty());
        let found = near(&doc, &t, &[]).expect("near");
        assert_eq!(
            word_diff(&found.text, found.expected.as_deref().unwrap()),
            "Issue ⟨⟩ has [-unclear-]{+ambiguous+} criteria. Skip, escalate, or proceed with my best interpretation?"
        );
    }
}
