//! `driver: wrapper` (the default): each tick is `sdd-loop <skill> --loop`,
//! the engine running the fake skill as its skill command.

use std::path::Path;

use super::record::TickRecord;
use super::tick::{self, TickRun};
use crate::world::error::HarnessError;
use crate::world::procs::Reaper;

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// A wrapper tick: `sdd-loop <skill> --loop`, the engine running the fake
/// skill (`SDD_LOOP_SKILL_CMD`).
pub fn run(
    t: &TickRun<'_>,
    reaper: &mut Reaper,
) -> Result<(TickRecord, Option<String>), HarnessError> {
    let prepared = tick::prepare(t)?;
    let (args, mut env) = tick::loop_command(t, &prepared, reaper);
    env.push((
        "SDD_LOOP_SKILL_CMD".to_owned(),
        shell_quote(&t.opts.binaries.fake_skill).into(),
    ));
    tick::run_engine(t, prepared, args, env, reaper)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_quoted_for_sh() {
        assert_eq!(shell_quote(Path::new("/a b/it's")), r"'/a b/it'\''s'");
    }
}
