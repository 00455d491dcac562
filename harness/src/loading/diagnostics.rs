//! What a case's errors say beyond where they are: the nearest valid name
//! ("did you mean"), the valid names listed ([`names_help`]), serde's own
//! "unknown variant / field" and wrong-type messages given the same kind
//! of `help:` ([`explain`]), the comment trap ([`comment_trap`]), and the
//! source lines quoted around any error ([`render`]).

use std::path::Path;

use sdd_mocks::yaml::YamlError;
use serde_saphyr::{Location, Spanned};

use super::case::FORMAT_HELP;

/// The name in `valid` close enough to `given` to be what was meant.
pub fn nearest<'v>(given: &str, valid: &'v [String]) -> Option<&'v str> {
    valid
        .iter()
        .map(|v| (sdd_loop::rules::gates::edit_distance(given, v), v))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, v)| *d <= 3.max(v.len() / 3))
        .map(|(_, v)| v.as_str())
}

/// `help:` text for a name that is not one of `valid`.
pub fn names_help(given: &str, valid: &[String], what: &str) -> String {
    let nearest = nearest(given, valid)
        .map(|v| format!("did you mean `{v}`? "))
        .unwrap_or_default();
    let list = if valid.is_empty() {
        "(none found)".to_owned()
    } else {
        valid.join(", ")
    };
    let what = if nearest.is_empty() {
        what.to_owned()
    } else {
        let mut chars = what.chars();
        chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default()
    };
    format!("{nearest}{what}: {list} ({FORMAT_HELP})")
}

pub fn unknown(
    path: &Path,
    s: &Spanned<String>,
    kind: &str,
    valid: &[String],
    what: &str,
) -> YamlError {
    YamlError::at(
        path,
        s.referenced,
        format!("unknown {kind} `{}`", s.value),
        names_help(&s.value, valid, what),
    )
}

/// Rewrites the `help:` of serde's "unknown variant" and "unknown field"
/// errors to list the valid names and suggest the nearest, and says what
/// a scalar of the wrong type should have been.
pub fn explain(mut err: YamlError) -> YamlError {
    let wanted = match err.message.as_str() {
        "invalid u8" | "invalid u16" | "invalid u32" | "invalid u64" | "invalid usize" => {
            Some("a whole number (0 or more)")
        }
        "invalid i8" | "invalid i16" | "invalid i32" | "invalid i64" => Some("a whole number"),
        "invalid f32" | "invalid f64" => Some("a number"),
        "invalid bool" => Some("`true` or `false`"),
        _ => None,
    };
    if let Some(wanted) = wanted {
        err.help = format!("write {wanted} here ({FORMAT_HELP})");
        return err;
    }
    let is_variant = err.message.contains("unknown variant");
    if !(is_variant || err.message.contains("unknown field")) {
        return err;
    }
    let given = err.message.split('`').nth(1).unwrap_or_default().to_owned();
    let Some((_, expected)) = err.message.split_once("expected ") else {
        return err;
    };
    let expected = expected.strip_prefix("one of ").unwrap_or(expected);
    let valid: Vec<String> = expected
        .split(", ")
        .flat_map(|s| s.split(" or "))
        .map(|s| s.trim().trim_matches('`').to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    let what = if is_variant {
        "the valid names are"
    } else {
        "the accepted keys are"
    };
    err.help = names_help(&given, &valid, what);
    err
}

/// The full diagnostic for `err` about `file`: [`YamlError::render`], plus
/// the source lines around the position for errors found after parsing
/// (which the parser could not quote), so every error reads the same way.
pub fn render(err: &YamlError, file: &Path) -> String {
    let base = err.render();
    // The parser's own snippet is already there; its gutter widens with
    // the line number (`  --> ` from line 10), so look for the arrow alone.
    let quoted = base.lines().any(|l| l.trim_start().starts_with("--> "));
    if err.line == 0 || quoted {
        return base;
    }
    let Ok(text) = std::fs::read_to_string(file) else {
        return base;
    };
    let lines: Vec<&str> = text.lines().collect();
    let at = usize::try_from(err.line).unwrap_or(usize::MAX);
    if at > lines.len() {
        return base;
    }
    let width = (at + 1).min(lines.len()).to_string().len();
    let gutter = " ".repeat(width);
    let mut snippet = format!(
        "{gutter}--> {}:{}:{}\n{gutter} |\n",
        err.path.display(),
        err.line,
        err.column
    );
    for n in at.saturating_sub(2).max(1)..=at {
        snippet.push_str(&format!("{n:>width$} | {}\n", lines[n - 1]));
    }
    let caret = " ".repeat(usize::try_from(err.column).unwrap_or(1).saturating_sub(1));
    snippet.push_str(&format!("{gutter} | {caret}^ {}\n", err.message));
    if let Some(next) = lines.get(at) {
        snippet.push_str(&format!("{:>width$} | {next}\n", at + 1));
    }
    match base.split_once('\n') {
        Some((first, rest)) => format!("{first}\n{snippet}{rest}"),
        None => base,
    }
}

/// A `#` right after a space starts a YAML comment, so `text: stop
/// condition #12 fires` loads as `stop condition`. Comments are written
/// `# like this`; a `#` glued to a word (`#12`, `#N`) after a space in an
/// unquoted value is almost always this mistake, so it is refused. Block
/// scalars (`|`, `>`) and quoted strings are left alone.
pub fn comment_trap(path: &Path, text: &str) -> Result<(), YamlError> {
    let mut block_indent: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start().len();
        if let Some(b) = block_indent {
            if line.trim().is_empty() || indent > b {
                continue;
            }
            block_indent = None;
        }
        let (mut single, mut double, mut prev) = (false, false, ' ');
        let chars: Vec<char> = line.chars().collect();
        for (col, &c) in chars.iter().enumerate() {
            match c {
                '\'' if !double => single = !single,
                '"' if !single && prev != '\\' => double = !double,
                '#' if !single && !double && (prev == ' ' || prev == '\t') => {
                    let glued = chars
                        .get(col + 1)
                        .is_some_and(|n| !n.is_whitespace() && *n != '#');
                    let whole_line = line[..line.char_indices().nth(col).map_or(0, |(b, _)| b)]
                        .trim()
                        .is_empty();
                    if glued && !whole_line {
                        let word: String = chars[col..]
                            .iter()
                            .take_while(|c| !c.is_whitespace())
                            .collect();
                        let mut err = YamlError::at(
                            path,
                            Location::UNKNOWN,
                            format!(
                                "`{word}` starts a YAML comment here, so the rest of this line is dropped"
                            ),
                            format!(
                                "quote the value (`\"… {word} …\"`), or write a comment as `# text` ({FORMAT_HELP})"
                            ),
                        );
                        (err.line, err.column) = (i as u64 + 1, col as u64 + 1);
                        return Err(err);
                    }
                    break;
                }
                _ => {}
            }
            prev = c;
        }
        let code = line.split(" #").next().unwrap_or(line).trim_end();
        if code.ends_with('|')
            || code.ends_with('>')
            || code.ends_with("|-")
            || code.ends_with(">-")
        {
            block_indent = Some(indent);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glued_hash_after_a_space_is_a_comment_trap() {
        let trap =
            |text: &str| comment_trap(Path::new("c.yaml"), text).map_err(|e| (e.line, e.column));
        assert_eq!(trap("text: stop condition #12 fires\n"), Err((1, 22)));
        assert_eq!(trap("- { body: Closes #1 }\n"), Err((1, 18)));
        for fine in [
            "# a comment line\n#another\n",
            "text: fine # a real comment\n",
            "body: \"Closes #1\"\n",
            "body: 'Closes #1'\n",
            "url: a#b\n",
            "body: |\n  Closes #1\n  ### Acceptance Criteria\nnext: ok\n",
        ] {
            assert_eq!(trap(fine), Ok(()), "{fine}");
        }
        assert_eq!(
            trap("body: |\n  #1 inside\nafter: value #2\n"),
            Err((3, 14)),
            "the block ends with its indentation"
        );
    }

    #[test]
    fn suggestions_pick_the_nearest_name() {
        let valid = super::super::names::gates();
        let help = names_help("backlog-drfit", &valid, "the gates are");
        assert!(help.starts_with("did you mean `backlog-drift`?"), "{help}");
        assert!(help.contains("force-unlock, resume-divergence"), "{help}");
        let help = names_help("zzzzzzzzzzzzzzzzz", &valid, "the gates are");
        assert!(help.starts_with("the gates are:"), "{help}");
    }
}
