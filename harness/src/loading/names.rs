//! The closed sets of names a case may use that belong to the engine —
//! gates, stop causes (and `none`), crash points — read from the engine's
//! own library, so a case can never name something the engine lacks. Both
//! the JSON Schema ([`super::schema_parts`]) and validation
//! ([`super::validate`]) list the same names from here.

use sdd_loop::os::crash;
use sdd_loop::rules::gates::GateName;
use sdd_loop::rules::stop::StopCause;

/// The stop cause of a run that did not stop.
pub const NO_STOP: &str = "none";

/// Every gate's name.
pub fn gates() -> Vec<String> {
    GateName::ALL.iter().map(|g| g.name().to_owned()).collect()
}

/// Every stop cause's name, and [`NO_STOP`].
pub fn stop_causes() -> Vec<String> {
    StopCause::ALL
        .iter()
        .map(|c| c.name().to_owned())
        .chain([NO_STOP.to_owned()])
        .collect()
}

/// Every crash point (`sdd-loop crash-points`).
pub fn crash_points() -> Vec<String> {
    crash::POINTS.iter().map(|(p, _)| (*p).to_owned()).collect()
}
