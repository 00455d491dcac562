//! Named crash points: `SDD_LOOP_CRASH_AT=<name>` makes the engine abort
//! (`std::process::abort`, no unwinding, no cleanup — as close to SIGKILL as
//! a process can do to itself) at that step of the tick, so the crash-sweep
//! tests can prove recovery exact from every step (DESIGN §5).
//! `sdd-loop crash-points` prints the list.

/// Every crash point, in tick order, with what has happened by then.
pub const POINTS: [(&str, &str); 11] = [
    (
        "after-lock",
        "the lock is held; nothing else has been read or written",
    ),
    (
        "after-gates",
        "state loaded and every gate answered; nothing written yet",
    ),
    (
        "after-commit",
        "repairs, recovered iterations and the first budget write are on disk",
    ),
    (
        "after-journal",
        "the interrupted-iteration journal is written; the skill has not started",
    ),
    ("after-spawn", "the skill is running"),
    (
        "after-agent-usage",
        "--agent: the agent's first streamed usage is journaled; the agent is still running",
    ),
    ("after-skill", "the skill has exited; nothing accounted yet"),
    (
        "after-history",
        "the history line is appended; budget.json not yet rewritten",
    ),
    (
        "after-budget",
        "budget.json is rewritten; the journal is still present",
    ),
    (
        "after-journal-removed",
        "the tick is fully recorded; the report is not yet printed",
    ),
    (
        "before-release",
        "the report is printed; the lock is still held",
    ),
];

/// Crash points inside the wrapper's run of the skill or agent, which an
/// in-session tick (`begin` … `end`) never reaches.
pub const WRAPPER_ONLY: [&str; 3] = ["after-spawn", "after-agent-usage", "after-skill"];

/// Crash points reached only while the engine drives an agent (`--agent`):
/// a tick that runs a skill command passes them by.
pub const AGENT_ONLY: [&str; 1] = ["after-agent-usage"];

/// The armed crash point, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashPoints {
    armed: Option<&'static str>,
}

impl CrashPoints {
    pub fn none() -> Self {
        Self::default()
    }

    /// Arms `name`; an unknown name is an error listing the known ones.
    pub fn arm(name: &str) -> Result<Self, String> {
        POINTS
            .iter()
            .find(|(p, _)| *p == name)
            .map(|(p, _)| Self { armed: Some(p) })
            .ok_or_else(|| {
                format!(
                    "unknown crash point `{name}` (known: {})",
                    POINTS
                        .iter()
                        .map(|(p, _)| *p)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }

    /// Aborts the process if `name` is armed.
    pub fn hit(&self, name: &'static str) {
        debug_assert!(
            POINTS.iter().any(|(p, _)| *p == name),
            "unlisted crash point {name}"
        );
        if self.armed == Some(name) {
            std::process::abort();
        }
    }

    /// The listing printed by `sdd-loop crash-points`.
    pub fn listing() -> String {
        POINTS
            .iter()
            .map(|(p, what)| format!("{p:<22} {what}\n"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_point_lists_the_known_ones() {
        let err = CrashPoints::arm("after-lunch").unwrap_err();
        assert!(
            err.contains("after-lock") && err.contains("before-release"),
            "{err}"
        );
    }

    #[test]
    fn unarmed_points_do_nothing() {
        let c = CrashPoints::arm("before-release").unwrap();
        c.hit("after-lock");
        CrashPoints::none().hit("before-release");
        assert_eq!(CrashPoints::listing().lines().count(), POINTS.len());
    }
}
