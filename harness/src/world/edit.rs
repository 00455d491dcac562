//! A user's hand edits of the files in the project, between ticks: one
//! field of a JSON (or JSON-lines) file changed or removed in place
//! (`before: [{ edit: … }]`), and a file cut short as a torn write leaves
//! it (`before: [{ truncate: … }]`). The rest of the file is left as it
//! was: other lines byte for byte, other fields in their order, a
//! pretty-printed document pretty-printed again.
//!
//! Whether the edit names real fields was checked when the case loaded;
//! what is in the file is known only now, so a pointer that finds nothing
//! here says what the file holds there.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::loading::case::{self, Edit, Truncate};

/// The file an edit names: a state file of `skill` by name, or a path in
/// `project`; and whether it holds JSON lines.
pub fn resolve(project: &Path, skill: &str, file: &str) -> (PathBuf, bool) {
    match case::state_file(file).filter(|_| case::names_state_file(file)) {
        Some((suffix, lines)) => (
            project
                .join(".sdd")
                .join("loop")
                .join(format!("{skill}.{suffix}")),
            lines,
        ),
        None => (project.join(file), file.ends_with(".jsonl")),
    }
}

/// Applies `edit` to the file in `project`.
pub fn apply_edit(project: &Path, skill: &str, edit: &Edit) -> Result<(), String> {
    let (path, lines) = resolve(project, skill, &edit.file.value);
    let shown = shown(project, &path);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("edit: cannot read {shown}: {e} (has a tick written it yet?)"))?;
    let op = match (&edit.set, edit.remove.as_ref().is_some_and(|r| r.value)) {
        (Some(value), _) => Op::Set(value.clone()),
        (None, true) => Op::Remove,
        (None, false) => return Err("edit: neither `set` nor `remove: true`".to_owned()),
    };
    let line = edit.line.as_ref().map(|l| l.value);
    let new = if lines {
        edit_line(&text, line, &edit.pointer.value, &op)
    } else {
        edit_document(&text, &edit.pointer.value, &op)
    }
    .map_err(|e| format!("edit of {shown}: {e}"))?;
    std::fs::write(&path, new).map_err(|e| format!("edit: cannot write {shown}: {e}"))
}

/// Applies `truncate` to the file in `project`.
pub fn apply_truncate(project: &Path, skill: &str, truncate: &Truncate) -> Result<(), String> {
    let (path, _) = resolve(project, skill, &truncate.file.value);
    let shown = shown(project, &path);
    let bytes = std::fs::read(&path)
        .map_err(|e| format!("truncate: cannot read {shown}: {e} (has a tick written it yet?)"))?;
    let kept = cut(&bytes, truncate.drop.as_ref().map(|d| d.value))
        .map_err(|e| format!("truncate {shown}: {e}"))?;
    std::fs::write(&path, kept).map_err(|e| format!("truncate: cannot write {shown}: {e}"))
}

fn shown(project: &Path, path: &Path) -> String {
    path.strip_prefix(project)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// What an edit does at its pointer.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Set(Value),
    Remove,
}

/// `text` (one JSON document) with the field at `pointer` changed, in the
/// document's own style: pretty-printed when it was on several lines,
/// else on one; its final newline kept.
pub fn edit_document(text: &str, pointer: &str, op: &Op) -> Result<String, String> {
    let mut doc: Value = serde_json::from_str(text).map_err(|e| format!("it is not JSON ({e})"))?;
    apply(&mut doc, pointer, op)?;
    let mut out = if text.trim().contains('\n') {
        serde_json::to_string_pretty(&doc)
    } else {
        serde_json::to_string(&doc)
    }
    .map_err(|e| e.to_string())?;
    if text.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// `text` (JSON lines) with line `line` (from 1; default: the last)
/// edited; every other line byte for byte.
pub fn edit_line(
    text: &str,
    line: Option<usize>,
    pointer: &str,
    op: &Op,
) -> Result<String, String> {
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    let count = lines.iter().filter(|l| !l.trim().is_empty()).count();
    let index = match line {
        None => lines
            .iter()
            .rposition(|l| !l.trim().is_empty())
            .ok_or("the file has no line to edit")?,
        Some(n) => lines
            .iter()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .nth(n.saturating_sub(1))
            .map(|(i, _)| i)
            .ok_or_else(|| format!("there is no line {n}: the file has {count} line(s)"))?,
    };
    let number = lines[..=index]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .count();
    let old = lines[index];
    let body = old.trim_end_matches(['\n', '\r']);
    let mut doc: Value =
        serde_json::from_str(body).map_err(|e| format!("line {number} is not JSON ({e})"))?;
    apply(&mut doc, pointer, op).map_err(|e| format!("line {number}: {e}"))?;
    let mut new = serde_json::to_string(&doc).map_err(|e| e.to_string())?;
    new.push_str(&old[body.len()..]);
    lines[index] = &new;
    Ok(lines.concat())
}

/// Sets or removes the value at `pointer` in `doc`.
pub fn apply(doc: &mut Value, pointer: &str, op: &Op) -> Result<(), String> {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return Err(format!("`{pointer}` is not a JSON pointer"));
    };
    let token = last.replace("~1", "/").replace("~0", "~");
    if doc.pointer(parent).is_none() {
        return Err(format!(
            "nothing at `{parent}` to hold `{token}`{}",
            deepest(doc, parent)
        ));
    }
    let Some(holder) = doc.pointer_mut(parent) else {
        return Err(format!("nothing at `{parent}`"));
    };
    match (holder, op) {
        (Value::Object(map), Op::Set(value)) => {
            map.insert(token, value.clone());
            Ok(())
        }
        (Value::Object(map), Op::Remove) => match map.shift_remove(&token) {
            Some(_) => Ok(()),
            None => Err(format!(
                "there is no `{token}` to remove at `{}`; it has: {}",
                at(parent),
                map.keys().cloned().collect::<Vec<_>>().join(", ")
            )),
        },
        (Value::Array(items), op) => {
            let len = items.len();
            let index = if token == "-" && matches!(op, Op::Set(_)) {
                len
            } else {
                token
                    .parse::<usize>()
                    .ok()
                    .filter(|i| *i < len || (*i == len && matches!(op, Op::Set(_))))
                    .ok_or_else(|| {
                        format!(
                            "`{}` is an array of {len} element(s), numbered from 0: there is no element `{token}`",
                            at(parent)
                        )
                    })?
            };
            match op {
                Op::Set(value) if index == len => items.push(value.clone()),
                Op::Set(value) => items[index] = value.clone(),
                Op::Remove => {
                    items.remove(index);
                }
            }
            Ok(())
        }
        (other, _) => Err(format!("`{}` is {other}, which has no fields", at(parent))),
    }
}

fn at(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the document"
    } else {
        pointer
    }
}

/// For a parent pointer that finds nothing: what its deepest existing part
/// holds.
fn deepest(doc: &Value, pointer: &str) -> String {
    let mut node = doc;
    let mut place = String::new();
    for token in pointer.split('/').skip(1) {
        match node.pointer(&format!("/{}", token)) {
            Some(next) => {
                node = next;
                place.push('/');
                place.push_str(token);
            }
            None => break,
        }
    }
    match node {
        Value::Object(map) => format!(
            "; {} has: {}",
            at(&place),
            map.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
        other => format!("; {} is {other}", at(&place)),
    }
}

/// `bytes` without their last `drop` bytes; by default without the second
/// half of the last line and its newline, as a write torn mid-line leaves
/// a file.
pub fn cut(bytes: &[u8], drop: Option<u64>) -> Result<Vec<u8>, String> {
    let keep = match drop {
        Some(n) => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            if n > bytes.len() {
                return Err(format!(
                    "cannot drop {n} bytes: the file has {}",
                    bytes.len()
                ));
            }
            bytes.len() - n
        }
        None => {
            let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
            let start = body.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let last = body.len() - start;
            if last < 2 {
                return Err("its last line is too short to tear in half".to_owned());
            }
            start + last / 2
        }
    };
    Ok(bytes[..keep].to_vec())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_field_is_set_in_place_and_the_style_kept() {
        let pretty = "{\n  \"max_iterations\": 5,\n  \"iterations_used\": 2\n}\n";
        assert_eq!(
            edit_document(pretty, "/max_iterations", &Op::Set(json!(2))).unwrap(),
            "{\n  \"max_iterations\": 2,\n  \"iterations_used\": 2\n}\n"
        );
        assert_eq!(
            edit_document("{\"a\":1,\"b\":{}}", "/b/c", &Op::Set(json!(null))).unwrap(),
            "{\"a\":1,\"b\":{\"c\":null}}",
            "a missing field is added, null is a value"
        );
        assert_eq!(
            edit_document("{\"a\":1,\"b\":2}", "/a", &Op::Remove).unwrap(),
            "{\"b\":2}"
        );
        let e = edit_document("{\"a\":1,\"b\":2}", "/c", &Op::Remove).unwrap_err();
        assert_eq!(
            e,
            "there is no `c` to remove at `the document`; it has: a, b"
        );
        let e = edit_document("{\"a\":{\"x\":1}}", "/a/y/z", &Op::Set(json!(1))).unwrap_err();
        assert_eq!(e, "nothing at `/a/y` to hold `z`; /a has: x");
    }

    #[test]
    fn one_line_of_json_lines_is_edited_and_the_others_kept_byte_for_byte() {
        let text = "{\"iteration\":1, \"outcome\":\"ok\"}\n{\"iteration\":2,\"outcome\":\"ok\"}\n";
        assert_eq!(
            edit_line(text, None, "/outcome", &Op::Set(json!("errored"))).unwrap(),
            "{\"iteration\":1, \"outcome\":\"ok\"}\n{\"iteration\":2,\"outcome\":\"errored\"}\n"
        );
        assert_eq!(
            edit_line(text, Some(1), "/iteration", &Op::Remove).unwrap(),
            "{\"outcome\":\"ok\"}\n{\"iteration\":2,\"outcome\":\"ok\"}\n"
        );
        assert_eq!(
            edit_line(text, Some(3), "/outcome", &Op::Remove).unwrap_err(),
            "there is no line 3: the file has 2 line(s)"
        );
        assert_eq!(
            edit_line("{\"gates\":[1,2]}\n", None, "/gates/0", &Op::Remove).unwrap(),
            "{\"gates\":[2]}\n"
        );
        assert_eq!(
            edit_line("{\"gates\":[1]}\n", None, "/gates/-", &Op::Set(json!(3))).unwrap(),
            "{\"gates\":[1,3]}\n"
        );
    }

    #[test]
    fn a_torn_tail_keeps_half_the_last_line() {
        assert_eq!(
            cut(b"{\"a\":1}\n{\"b\":22}\n", None).unwrap(),
            b"{\"a\":1}\n{\"b\""
        );
        assert_eq!(cut(b"abcdef", Some(2)).unwrap(), b"abcd");
        assert!(cut(b"ab", Some(3)).is_err());
        assert!(cut(b"x\n", None).is_err());
    }
}
