//! Exit codes of `sdd-loop`, so a shell loop such as
//! `while sdd-loop work --loop; do sleep 60; done` is a valid `/loop`:
//! 0 continues, 3 ends the loop, 4 asks for an answer, 64+ are errors in
//! BSD sysexits style. The in-session halves add two: `begin` exits 5 when
//! there is nothing for the agent to do this tick, and `end` / `event`
//! exit 66 when no iteration is open (a tick whose lock was taken over
//! while its skill ran, too). 75 (`EX_TEMPFAIL`) is transient:
//! GitHub's rate limit ran out, nothing changed, a later tick may pass.

/// The tick finished; the loop continues. A tick that waits for a usage
/// window's reset exits here too: it did nothing, and the shell loop's
/// next tick after the reset goes on (docs/src/usage-windows.md). So does
/// an `--unattended` tick that posted a gate on the tracker or waits for
/// a person's reply to one (docs/src/gates-away.md).
pub const TICK_DONE: u8 = 0;
/// The loop ended (a stop condition fired; the final report was printed).
pub const LOOP_ENDED: u8 = 3;
/// A gate needs an answer and none could be had; nothing was changed.
pub const NEEDS_ANSWER: u8 = 4;
/// `begin` only: nothing for the agent to do this tick — another tick
/// holds the lock, or nothing was selected; the tick is recorded.
pub const NOTHING_TO_DO: u8 = 5;
/// Command-line usage error (`EX_USAGE`); also a wrapper tick whose skill
/// command could not be started: the setting is at fault (its iteration
/// is recorded errored, with no issue blamed).
pub const USAGE: u8 = 64;
/// A data file is malformed: budget, history, CLAUDE.md, answers (`EX_DATAERR`).
pub const DATA: u8 = 65;
/// `end` / `event`: no iteration is open — none was begun, it was already
/// ended, or another tick recovered it; nothing was changed (`EX_NOINPUT`).
/// Also a wrapper tick whose lock another tick took while its skill ran
/// (`--lock force`): that tick (or the next, if it stops first) records
/// the iteration, and a shell loop that exits here leaves the loop to it.
pub const NOT_OPEN: u8 = 66;
/// The tracker or git is unavailable (`EX_UNAVAILABLE`).
pub const UNAVAILABLE: u8 = 69;
/// GitHub's primary rate limit is used up; nothing was changed and the
/// next tick after the reset may pass (`EX_TEMPFAIL`).
pub const RATE_LIMITED: u8 = 75;
/// An internal error (`EX_SOFTWARE`).
pub const INTERNAL: u8 = 70;
/// State cannot be written (`EX_CANTCREAT`).
pub const CANT_WRITE: u8 = 73;

/// The table printed at the end of `--help`.
pub const HELP_TABLE: &str = "\
Exit status:
  0   tick done, the loop continues (a tick waiting for a usage window's reset, or for a reply to a posted gate, too)
  3   loop ended (a stop condition fired; final report printed)
  4   a gate needs an answer and none could be had (nothing was changed)
  5   begin: nothing to do this tick (lock held elsewhere, or nothing selected)
  64  usage error; a skill command that could not be started (its iteration is recorded)
  65  malformed data file (budget.json, history, CLAUDE.md, answers file)
  66  end/event: no open iteration; a tick whose lock was forced (--lock force)
  69  tracker or git unavailable
  70  internal error
  73  cannot write loop state
  75  GitHub's rate limit is used up; nothing was changed, run again after the reset";
