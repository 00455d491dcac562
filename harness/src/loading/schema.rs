//! `sdd-evals schema`: the case format as JSON Schema, for editors (e.g.
//! `# yaml-language-server: $schema=…` at the top of a case).

use crate::loading::case::Case;

/// The schema, pretty-printed.
pub fn render() -> String {
    let schema = schemars::schema_for!(Case);
    serde_json::to_string_pretty(&schema).unwrap_or_default()
}
