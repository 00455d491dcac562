//! What a case author would otherwise guess, taken from the engine's own
//! types: the gates with their exact questions and options
//! (`sdd_loop::rules::gates`), the stop causes (`sdd_loop::rules::stop::StopCause`), the
//! outcomes and the fields a `pointer` can name in a history line and in
//! budget.json (the engine's JSON Schemas, `sdd-loop schema`).
//!
//! [`markdown`] renders them as the reference tables of
//! `docs/src/case-format.md` (between [`BEGIN`] and [`END`]);
//! `harness/tests/reference.rs` fails when that copy drifts from the
//! engine. [`check_pointer`] walks the same schemas, so a case whose
//! `pointer` names a field that does not exist is refused when it loads,
//! with the fields that do.

use std::fmt::Write as _;
use std::sync::OnceLock;

use sdd_loop::rules::gates::{GateName, Question, Tripped};
use sdd_loop::rules::stop::StopCause;
use sdd_loop::state::budget::{Budget, Dimension};
use sdd_loop::state::history::{HistoryLine, Outcome};
use serde_json::Value;

/// The line before the generated tables in docs/src/case-format.md.
pub const BEGIN: &str = "<!-- reference: generated from the engine's types by harness/src/loading/reference.rs; harness/tests/reference.rs checks it -->";
/// The line after them.
pub const END: &str = "<!-- end of reference -->";

/// A document a `pointer` looks into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doc {
    /// One line of `{skill}.history.jsonl`.
    History,
    /// `{skill}.budget.json`.
    Budget,
}

impl Doc {
    pub fn describe(self) -> &'static str {
        match self {
            Doc::History => "a history line",
            Doc::Budget => "budget.json",
        }
    }

    fn schema(self) -> &'static Value {
        static HISTORY: OnceLock<Value> = OnceLock::new();
        static BUDGET: OnceLock<Value> = OnceLock::new();
        let (cell, make): (_, fn() -> schemars::Schema) = match self {
            Doc::History => (&HISTORY, || schemars::schema_for!(HistoryLine)),
            Doc::Budget => (&BUDGET, || schemars::schema_for!(Budget)),
        };
        cell.get_or_init(|| make().to_value())
    }
}

/// A schema node with `$ref`s and nullable `anyOf`s resolved.
fn resolve<'a>(root: &'a Value, mut node: &'a Value) -> &'a Value {
    loop {
        if let Some(name) = node["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/$defs/"))
        {
            node = &root["$defs"][name];
            continue;
        }
        let branches = node["anyOf"]
            .as_array()
            .or_else(|| node["oneOf"].as_array());
        if let Some(branch) = branches.and_then(|b| {
            b.iter().find(|v| {
                v["type"] != "null" && (v.get("$ref").is_some() || v.get("properties").is_some())
            })
        }) {
            node = branch;
            continue;
        }
        return node;
    }
}

fn is_array(node: &Value) -> bool {
    node["type"] == "array"
        || node["type"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t == "array"))
}

/// The named fields of an object node, in schema order.
fn fields(node: &Value) -> Vec<String> {
    node["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// A pointer that names no field of its document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    /// The part of the pointer that exists (`""` for the document).
    pub parent: String,
    /// The token that does not.
    pub token: String,
    /// The fields `parent` has (empty when it has none).
    pub fields: Vec<String>,
}

/// Whether `pointer` (RFC 6901) can name something in `doc`: every
/// object field it passes through is one the engine writes, and array
/// elements are named by index. Maps (per-model tokens) take any key.
pub fn check_pointer(doc: Doc, pointer: &str) -> Result<(), Miss> {
    let root = doc.schema();
    let mut node = root;
    let mut parent = String::new();
    for raw in pointer.split('/').skip(1) {
        let token = raw.replace("~1", "/").replace("~0", "~");
        let here = resolve(root, node);
        if is_array(here) && (token.parse::<usize>().is_ok() || token == "-") {
            node = &here["items"];
        } else if let Some(next) = here["properties"].get(&token) {
            node = next;
        } else if here["additionalProperties"].is_object() && here.get("properties").is_none() {
            node = &here["additionalProperties"];
        } else {
            return Err(Miss {
                parent,
                token,
                fields: fields(here),
            });
        }
        parent.push('/');
        parent.push_str(raw);
    }
    Ok(())
}

/// Rows of (pointer prefix, its fields) for the reference: the document's
/// own fields, then each nested object's, depth first.
fn field_rows(doc: Doc) -> Vec<(String, Vec<String>)> {
    fn walk(root: &Value, node: &Value, prefix: &str, rows: &mut Vec<(String, Vec<String>)>) {
        let here = resolve(root, node);
        let names = fields(here);
        if !names.is_empty() {
            rows.push((format!("{prefix}/"), names.clone()));
            for name in &names {
                walk(
                    root,
                    &here["properties"][name],
                    &format!("{prefix}/{name}"),
                    rows,
                );
            }
        } else if is_array(here) {
            walk(root, &here["items"], &format!("{prefix}/N"), rows);
        } else if here["additionalProperties"].is_object() {
            walk(
                root,
                &here["additionalProperties"],
                &format!("{prefix}/MODEL"),
                rows,
            );
        }
    }
    let mut rows = Vec::new();
    let root = doc.schema();
    walk(root, root, "", &mut rows);
    rows
}

/// When each gate is asked, beside the engine's own question.
fn asked_when(gate: GateName) -> &'static str {
    match gate {
        GateName::ForceUnlock => "`--lock force` and a lock is present (every time)",
        GateName::ResumeDivergence => "`--resume`: a tracked open PR's head moved since the crash",
        GateName::BacklogDrift => {
            "work: the workable issues differ from the last line's `backlog_snapshot`, not by this loop's own work"
        }
        GateName::RepeatedFailure => {
            "the same issue or PR failed in the last two ticks with the same root cause"
        }
        GateName::AmbiguousCriteria => {
            "a selected issue has no `### Acceptance Criteria`, or one holding TBD (any case) or TODO"
        }
        GateName::BudgetEscalation => {
            "a budget would reach 80% this tick (one combined prompt; not asked when a 100% stop fires)"
        }
        GateName::PostFeedbackMerge => {
            "review: the responder addressed a human's comments and a merge would follow (humans are logins not listed as agents)"
        }
    }
}

/// The question as the engine words it, with `N` for a number and
/// `{root-cause}` for the failure's root cause.
fn question(gate: GateName) -> Vec<String> {
    const N: u64 = 987_654_321;
    let n = |q: Question| q.text.replace(&N.to_string(), "N");
    let tripped = |dim, used, max| Tripped { dim, used, max };
    match gate {
        GateName::ForceUnlock => vec![Question::force_unlock().text],
        GateName::ResumeDivergence => vec![n(Question::resume_divergence(N))],
        GateName::BacklogDrift => vec![Question::backlog_drift().text],
        GateName::RepeatedFailure => {
            vec![Question::repeated_failure("#N", "{root-cause}").text]
        }
        GateName::AmbiguousCriteria => vec![n(Question::ambiguous_criteria(N))],
        GateName::BudgetEscalation => vec![
            Question::budget_escalation(&[tripped(Dimension::Prs, 1.0, 1.0)]).text,
            Question::budget_escalation(&[
                tripped(Dimension::Iterations, 4.0, 5.0),
                tripped(Dimension::Minutes, 49.0, 60.0),
                tripped(Dimension::Dollars, 21.0, 25.0),
            ])
            .text,
        ],
        GateName::PostFeedbackMerge => vec![n(Question::post_feedback_merge(N))],
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn code_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The reference tables, as markdown (without the markers).
pub fn markdown() -> String {
    let mut md = String::new();
    md.push_str(
        "### Gates\n\n\
         Asked in this order; `answers:` entries name the gate and one of its options \
         (`raise` takes new ceilings: `raise max_iterations=10 max_dollars=40`).\n\n\
         | gate | asked when | question (exact; `N` a number) | options |\n|---|---|---|---|\n",
    );
    for gate in GateName::ALL {
        let questions: Vec<String> = question(gate)
            .iter()
            .map(|q| format!("`{}`", cell(q)))
            .collect();
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {} |",
            gate.name(),
            cell(asked_when(gate)),
            questions.join(" or, for several budgets, "),
            gate.options()
                .iter()
                .map(|o| format!("`{o}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    md.push_str(
        "\n### Stop causes\n\n\
         What `stop_cause:` names: the first of the last history line's `stop_conditions_fired`, \
         or `none`. A gate answered `stop` records `prior_gate_stop`, but for the \
         repeated-failure gate, whose stop is condition #6's own: `repeated_failure`.\n\n\
         | stop cause | ADR-0028 # | when |\n|---|--:|---|\n",
    );
    let mut causes = StopCause::ALL;
    causes.sort_by_key(|c| c.number());
    for cause in causes {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} |",
            cause.name(),
            cause.number(),
            cell(cause.prose())
        );
    }
    md.push_str("| `none` | | the loop did not stop |\n");
    md.push_str(
        "\n### Outcomes\n\nWhat `outcome:` names: a history line's `outcome`.\n\n\
         | outcome | meaning |\n|---|---|\n",
    );
    let outcome = schemars::schema_for!(Outcome).to_value();
    for variant in outcome["oneOf"].as_array().into_iter().flatten() {
        let _ = writeln!(
            md,
            "| `{}` | {} |",
            variant["const"].as_str().unwrap_or("?"),
            cell(variant["description"].as_str().unwrap_or(""))
        );
    }
    for (doc, check, title) in [
        (Doc::History, "history_field", "A history line"),
        (Doc::Budget, "budget_field", "budget.json"),
    ] {
        let _ = write!(
            md,
            "\n### {title}: what a `{check}` pointer can name\n\n\
             `N` is an array index from 0, `MODEL` a model name as the skill reported it.\n\n\
             | under | fields |\n|---|---|\n"
        );
        for (prefix, names) in field_rows(doc) {
            let _ = writeln!(md, "| `{prefix}` | {} |", code_list(&names));
        }
    }
    md
}

/// `readme` with the text between [`BEGIN`] and [`END`] replaced by
/// [`markdown`]; `None` when the markers are missing.
pub fn splice(readme: &str) -> Option<String> {
    let start = readme.find(BEGIN)? + BEGIN.len();
    let end = start + readme[start..].find(END)?;
    Some(format!(
        "{}\n\n{}\n{}",
        &readme[..start],
        markdown(),
        &readme[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_are_checked_against_the_engines_schemas() {
        for ok in [
            "/budget_snapshot/prs_touched_total",
            "/gates/0/answer",
            "/tracked_prs/0/number",
            "/stop_conditions_fired",
            "/budget_snapshot/tokens_by_model/claude-opus-4-7/tokens_in",
            "",
        ] {
            assert_eq!(check_pointer(Doc::History, ok), Ok(()), "{ok}");
        }
        assert_eq!(check_pointer(Doc::Budget, "/stopped/cause"), Ok(()));
        assert_eq!(check_pointer(Doc::Budget, "/deferred/0"), Ok(()));
        let miss = check_pointer(Doc::History, "/budget_snapshot/prs_touched_totl").unwrap_err();
        assert_eq!(miss.parent, "/budget_snapshot");
        assert_eq!(miss.token, "prs_touched_totl");
        assert!(miss.fields.contains(&"prs_touched_total".to_owned()));
        let miss = check_pointer(Doc::Budget, "/iterations").unwrap_err();
        assert_eq!(
            (miss.parent.as_str(), miss.token.as_str()),
            ("", "iterations")
        );
        let miss = check_pointer(Doc::History, "/gates/name").unwrap_err();
        assert_eq!(miss.parent, "/gates", "an array is indexed");
    }

    #[test]
    fn the_tables_quote_the_engines_questions() {
        let md = markdown();
        assert!(md.contains("`Approaching PRs (1/1). Continue, raise ceiling, or stop?`"));
        assert!(md.contains(
            "`Approaching iterations (4/5), minutes (49/60), and dollars ($21.00/$25.00). Continue, raise ceiling(s), or stop?`"
        ));
        assert!(md.contains("`Issue #N has ambiguous criteria."), "{md}");
        assert!(md.contains("| `prs_touched_budget` | 4 |"));
        assert!(
            md.contains("| `user_interrupt` | 8 | user interrupt |\n| `lock_contention` | 9 |"),
            "in ADR-0028's order"
        );
        assert!(md.contains("| `skipped_lock` | Another tick held the lock; nothing advanced. |"));
        assert!(md.contains("| `/budget_snapshot/` |"));
        assert!(md.contains("| `/gates/N/` | `name`, `question`, `answer`, `at`, `answered_by` |"));
    }

    #[test]
    fn splicing_replaces_only_the_marked_part() {
        let readme = format!("intro\n{BEGIN}\nold tables\n{END}\nafter\n");
        let spliced = splice(&readme).unwrap();
        assert!(spliced.starts_with(&format!("intro\n{BEGIN}\n\n### Gates")));
        assert!(spliced.ends_with(&format!("\n{END}\nafter\n")));
        assert_eq!(splice(&spliced).unwrap(), spliced, "idempotent");
        assert_eq!(splice("no markers"), None);
    }
}
