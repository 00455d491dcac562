//! A pre-existing lock's `pid:` in a case: `live`, `dead` or a number,
//! read with its own visitor so the error names the three forms.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, Deserializer, Unexpected, Visitor};

/// The process a pre-existing lock names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidSpec {
    /// A real child process that blocks until the case ends.
    Live,
    /// The pid of a child that has exited and been reaped.
    Dead,
    /// This exact pid.
    Number(u32),
}

impl<'de> Deserialize<'de> for PidSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PidVisitor;
        const EXPECTED: &str = "`live`, `dead` or a process id";
        impl Visitor<'_> for PidVisitor {
            type Value = PidSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PidSpec, E> {
                match v {
                    "live" => Ok(PidSpec::Live),
                    "dead" => Ok(PidSpec::Dead),
                    _ => Err(E::invalid_value(Unexpected::Str(v), &EXPECTED)),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<PidSpec, E> {
                u32::try_from(v)
                    .ok()
                    .filter(|pid| *pid > 0 && *pid <= i32::MAX as u32)
                    .map(PidSpec::Number)
                    .ok_or_else(|| E::invalid_value(Unexpected::Unsigned(v), &EXPECTED))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PidSpec, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::invalid_value(Unexpected::Signed(v), &EXPECTED)),
                }
            }
        }
        deserializer.deserialize_any(PidVisitor)
    }
}

impl JsonSchema for PidSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PidSpec".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "`live` (a real blocked child process), `dead` (a reaped child's pid) or a process id",
            "oneOf": [
                { "type": "string", "enum": ["live", "dead"] },
                { "type": "integer", "minimum": 1 }
            ]
        })
    }
}
