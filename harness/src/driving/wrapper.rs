//! The wrapper driver: each tick is `sdd-loop <skill> --loop`, the engine
//! running the fake skill as a subprocess — or, for `driver: claude|codex`,
//! driving the fake agent with `--agent` ([`super::agent`]).

use std::ffi::OsString;
use std::path::Path;

use super::record::TickRecord;
use super::tick::{self, TickRun};
use crate::loading::case::Kill;
use crate::world::error::HarnessError;
use crate::world::procs::Reaper;
use crate::world::spawn;

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// A wrapper tick: `sdd-loop <skill> --loop`, the engine running the fake
/// skill — or, for `driver: claude|codex`, driving the fake agent with
/// `--agent` ([`super::agent`]).
pub fn run(
    t: &TickRun<'_>,
    reaper: &mut Reaper,
) -> Result<(TickRecord, Option<String>), HarnessError> {
    let prepared = tick::prepare(t)?;
    let kill = t.spec.kill.as_ref().map(|k| &k.value);
    let mut args: Vec<OsString> = vec![t.case.skill.as_str().into()];
    if t.case.loop_mode {
        args.push("--loop".into());
    }
    args.extend(t.case.args.iter().map(OsString::from));
    args.extend(t.spec.args.iter().map(OsString::from));
    args.push("--answers".into());
    args.push(prepared.answers.clone().into());
    let mut env = tick::engine_env(t, &prepared.script, reaper);
    match t.case.driver.agent() {
        None => env.push((
            "SDD_LOOP_SKILL_CMD".to_owned(),
            shell_quote(&t.opts.binaries.fake_skill).into(),
        )),
        Some(kind) => super::agent::prepare(t, kind, &prepared, &mut args, &mut env)?,
    }
    let invocation = tick::engine_invocation(t, args, env);
    let before = tick::history_len(t);
    let ran = spawn::run(
        &invocation,
        tick::control(t, prepared.fifo),
        t.deadline,
        reaper,
    )
    .map_err(tick::io("run the engine"))?;
    if matches!(kill, Some(Kill::CrashPoint(_))) {
        // The aborted engine's skill may still be running: nothing of this
        // tick may outlive it.
        reaper.sweep();
    }
    let after = tick::history_len(t);
    // Kept sandboxes (`--keep`) show each tick's output beside its inputs.
    let _ = std::fs::write(prepared.dir.join("stdout.txt"), &ran.stdout);
    let _ = std::fs::write(prepared.dir.join("stderr.txt"), &ran.stderr);
    let end = tick::tick_end(&ran.ended, kill);
    let abort = tick::verdict(t, &end, &ran.stderr, ran.barrier_missed);
    Ok((
        TickRecord {
            number: t.n,
            args: t.case.args.iter().chain(&t.spec.args).cloned().collect(),
            end,
            stdout: ran.stdout,
            stderr: ran.stderr,
            lines: before..after.max(before),
            wall: ran.wall,
        },
        abort,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_quoted_for_sh() {
        assert_eq!(shell_quote(Path::new("/a b/it's")), r"'/a b/it'\''s'");
    }
}
