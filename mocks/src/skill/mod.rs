//! The fake skill: the wrapped skill for tests. Per invocation
//! it follows a YAML script — call qmd, open/push/comment/merge through the
//! mock tracker and real git, report usage and failures, print stderr,
//! exit with a code, or block on a barrier so a test can SIGKILL the
//! engine at an exact moment — speaking the engine's protocol
//! (`sdd_loop::state::protocol`).

pub mod act;
pub mod barrier;
pub mod client;
pub mod counter;
pub mod exit;
pub mod report;
pub mod run;
pub mod script;

pub use run::{SkillEnv, run};
pub use script::{Action, QmdCall, ResultMode, Script, Tick};

pub const ENV_SCRIPT: &str = "FAKE_SKILL_SCRIPT";
pub const ENV_COUNTER: &str = "FAKE_SKILL_COUNTER";
pub const ENV_TRACKER_URL: &str = "SDD_LOOP_TRACKER_URL";
pub const ENV_REPO: &str = "SDD_LOOP_REPO";
pub const ENV_TRACKER_TOKEN: &str = "SDD_LOOP_TRACKER_TOKEN";
pub const ENV_GITHUB_TOKEN: &str = "GITHUB_TOKEN";
