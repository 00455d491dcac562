//! `driver: wrapper` (the default): each tick is `sdd-loop <skill> --loop`,
//! the engine running the fake skill as its skill command.

use std::path::Path;

use super::tick::{Env, Tick, Ticked};
use crate::world::error::HarnessError;

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// A wrapper tick: `sdd-loop <skill> --loop`, the engine running the fake
/// skill (`SDD_LOOP_SKILL_CMD`).
pub fn run(tick: Tick<'_>) -> Result<Ticked, HarnessError> {
    run_with(tick, Vec::new())
}

/// A wrapper tick with `extra` variables besides the tick's own.
pub fn run_with(tick: Tick<'_>, extra: Env) -> Result<Ticked, HarnessError> {
    let args = tick.loop_args();
    let mut env = tick.env();
    env.extend(extra);
    env.push((
        "SDD_LOOP_SKILL_CMD".to_owned(),
        shell_quote(&tick.run.opts.binaries.fake_skill).into(),
    ));
    tick.run_engine(args, env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_quoted_for_sh() {
        assert_eq!(shell_quote(Path::new("/a b/it's")), r"'/a b/it'\''s'");
    }
}
