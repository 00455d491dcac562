//! A documented default against the engine's, compared by meaning:
//! numbers by value, words without case, `{skill}` filled in, "unset" and
//! "off" alike, and a default described in words (one the engine
//! computes) taken as a description rather than a value.

use sdd_loop::state::paths::Skill;

use super::engine::EngineDefault;
use super::reader::Value;

pub fn engine_default_note(default: &EngineDefault, skill: Skill) -> String {
    match default {
        EngineDefault::Value(v) => format!(
            " (the engine's default: {})",
            v.replace("{skill}", skill.as_str())
        ),
        _ => String::new(),
    }
}

/// Why a documented default differs from the engine's, if it does.
pub fn default_differs(doc: &Value, engine: &EngineDefault, skill: Skill) -> Option<String> {
    let engine_value = match engine {
        EngineDefault::None => Value::Unset,
        EngineDefault::Off => Value::Off,
        EngineDefault::Value(v) => Value::parse(&v.replace("{skill}", skill.as_str())),
    };
    let doc = match doc {
        Value::Text(t) => Value::Text(t.replace("{skill}", skill.as_str())),
        other => other.clone(),
    };
    let same = match (&doc, &engine_value) {
        (Value::Number(a), Value::Number(b)) => (a - b).abs() < 1e-9,
        (Value::Text(a), Value::Text(b)) => a.eq_ignore_ascii_case(b),
        (Value::Unset, Value::Off) | (Value::Off, Value::Unset) => true,
        // Words for a default the engine computes ("defaults to the
        // session's process") are a description, not a value to compare.
        (Value::Text(_), Value::Unset) => true,
        (a, b) => a == b,
    };
    if same {
        return None;
    }
    Some(match engine_value {
        Value::Unset => format!("the document gives it a default ({doc}); the engine has none"),
        e => format!("the default is documented as {doc}; the engine's is {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_compare_by_meaning() {
        let v = |s: &str| EngineDefault::Value(s.to_owned());
        assert_eq!(
            default_differs(&Value::Number(5.0), &v("5"), Skill::Work),
            None
        );
        assert_eq!(
            default_differs(&Value::Number(25.0), &v("25"), Skill::Work),
            None
        );
        assert_eq!(
            default_differs(
                &Value::Text(".sdd/loop/work.budget.json".into()),
                &v(".sdd/loop/{skill}.budget.json"),
                Skill::Work
            ),
            None
        );
        assert_eq!(
            default_differs(&Value::Unset, &EngineDefault::Off, Skill::Work),
            None
        );
        assert_eq!(
            default_differs(
                &Value::Text("the".into()),
                &EngineDefault::None,
                Skill::Work
            ),
            None,
            "a computed default described in words"
        );
        assert!(default_differs(&Value::Number(0.0), &EngineDefault::None, Skill::Work).is_some());
        assert_eq!(
            default_differs(&Value::Number(10.0), &v("20"), Skill::Work).as_deref(),
            Some("the default is documented as 10; the engine's is 20")
        );
    }
}
