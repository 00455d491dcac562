//! JSON Schemas of every file the engine reads or writes, generated from
//! the types themselves so they cannot drift: `sdd-loop schema <kind>`.

use crate::state::budget::Budget;
use crate::state::history::HistoryLine;
use crate::state::lock::LockRecord;
use crate::state::protocol::{SkillEvent, SkillRequest, SkillResult};

/// The documents with a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaKind {
    /// `.sdd/loop/{skill}.lock`
    Lock,
    /// `.sdd/loop/{skill}.budget.json`
    Budget,
    /// One line of `.sdd/loop/{skill}.history.jsonl`
    History,
    /// The request file handed to the wrapped skill (`SDD_LOOP_REQUEST`)
    SkillRequest,
    /// The result file the wrapped skill writes (`SDD_LOOP_RESULT`)
    SkillResult,
    /// One line of the skill's progress stream (`SDD_LOOP_EVENTS`)
    SkillEvent,
}

/// The schema of `kind`, pretty-printed JSON.
pub fn render(kind: SchemaKind) -> String {
    let schema = match kind {
        SchemaKind::Lock => schemars::schema_for!(LockRecord),
        SchemaKind::Budget => schemars::schema_for!(Budget),
        SchemaKind::History => schemars::schema_for!(HistoryLine),
        SchemaKind::SkillRequest => schemars::schema_for!(SkillRequest),
        SchemaKind::SkillResult => schemars::schema_for!(SkillResult),
        SchemaKind::SkillEvent => schemars::schema_for!(SkillEvent),
    };
    let mut text = serde_json::to_string_pretty(&schema).expect("schemas serialise");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_schema_is_an_object_schema_with_properties() {
        for kind in SchemaKind::value_variants() {
            let value: serde_json::Value = serde_json::from_str(&render(*kind)).unwrap();
            assert!(
                value.get("properties").is_some() || value.get("oneOf").is_some(),
                "{kind:?}: {value}"
            );
        }
    }

    #[test]
    fn budget_schema_requires_the_contract_fields() {
        let value: serde_json::Value = serde_json::from_str(&render(SchemaKind::Budget)).unwrap();
        let required: Vec<&str> = value["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for field in crate::state::budget::REQUIRED_FIELDS {
            assert!(
                required.contains(&field),
                "{field} not required in {required:?}"
            );
        }
    }
}
