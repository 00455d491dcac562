//! The usage-window budgets in a tick (docs/src/usage-windows.md): before
//! anything, the wait for a window's reset ([`waiting`]); at entry, the
//! weekly ceiling's stop ([`on_entry`]); after the work, its figures
//! recorded and what they decide ([`after_work`]).
//!
//! A tick that waits does nothing else: no lock, no history line, no
//! iteration, no spend — it prints why and until when, and exits as a
//! tick that had nothing to do (0 from a shell, `begin`'s 5), so a shell
//! loop and `/loop` simply fire again. The first tick at or after the
//! reset goes on. A tick whose work hit a limit is `errored` once, and
//! fails none of its targets: the repeated-failure gate never counts a
//! window.

use super::Failure;
use super::ctx::Ctx;
use crate::exit;
use crate::os::clock;
use crate::rules::stop::Fired;
use crate::rules::windows::{self as rules, Next, WindowCeilings};
use crate::state::journal::{Driver, Journal};
use crate::state::protocol::SkillResult;
use crate::state::windows::{
    Recorded, Wait, Window, WindowLine, WindowsLine, WindowsReport, WindowsState,
};
use crate::world::notify::{Notice, WindowWaits};

/// A tick that waits for a window's reset.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub wait: Wait,
    pub note: String,
}

/// `windows.json`, with the figures a session's statusLine recorded since.
fn load(ctx: &Ctx<'_, '_>) -> Result<WindowsState, Failure> {
    WindowsState::load_with_statusline(&ctx.paths.windows(), &ctx.paths.statusline_windows())
        .map_err(|e| {
            Failure::new(
                exit::DATA,
                format!("{}", e).replace(
                    &ctx.paths.windows().display().to_string(),
                    &ctx.rel(&ctx.paths.windows()),
                ),
                e.help().replace(
                    &ctx.paths.windows().display().to_string(),
                    &ctx.rel(&ctx.paths.windows()),
                ),
            )
        })
}

fn save(ctx: &Ctx<'_, '_>, state: &WindowsState) -> Result<(), Failure> {
    files_dir(ctx)?;
    state.save(&ctx.paths.windows()).map_err(Failure::from)
}

fn files_dir(ctx: &Ctx<'_, '_>) -> Result<(), Failure> {
    crate::state::files::ensure_state_dir(&ctx.paths.dir).map_err(Failure::from)
}

/// Before the lock: a wait still running, or the 5-hour ceiling reached
/// by the last figure read, makes this tick a wait. A window budget with
/// nothing to check it against is refused (exit 64): the work reported no
/// figure last tick, or — in a session — none was recorded at all.
pub(crate) fn waiting(ctx: &mut Ctx<'_, '_>, driver: Driver) -> Result<Option<Waiting>, Failure> {
    let path = ctx.paths.windows();
    if !ctx.cfg.windows.any() && !path.exists() {
        return Ok(None);
    }
    let mut state = load(ctx)?;
    let now = ctx.now();
    if let Some(wait) = state.wait.clone().filter(|w| w.holds_at(now)) {
        return show_wait(ctx, wait).map(Some);
    }
    for (window, ceiling) in ctx.cfg.windows.set() {
        if state.recorded(window).is_some() {
            continue;
        }
        let flag = window.flag();
        let ceiling = rules::percent(ceiling);
        if state.unreported.contains(&window) {
            return Err(Failure::new(
                exit::USAGE,
                format!(
                    "{flag} {ceiling} is set, but the last tick's work reported no {} window figure: unknown is not zero, so the loop does not start",
                    window.noun()
                ),
                "run the work in a Claude Code subscriber's session (--agent claude with CLAUDE_CODE_OAUTH_TOKEN or `claude /login`, and ANTHROPIC_API_KEY unset), have the skill report `usage_windows` in its result, or drop the window budget",
            ));
        }
        if driver == Driver::Session {
            // The statusLine records figures only where the loop's state
            // directory is: make it, so the next prompt can start.
            files_dir(ctx)?;
            return Err(Failure::new(
                exit::USAGE,
                format!(
                    "{flag} {ceiling} is set, but no {} window figure was recorded: in a Claude Code session only the statusLine command sees the windows",
                    window.noun()
                ),
                "install the statusLine in settings.json — \"statusLine\": {\"type\": \"command\", \"command\": \"sdd-loop statusline -- YOUR-STATUS-COMMAND\"} — then send the loop prompt again; or drop the window budget",
            ));
        }
    }
    if let Some(reached) = rules::reached(&state, &ctx.cfg.windows, Window::FiveHour, now) {
        let wait = Wait {
            window: Window::FiveHour,
            until: clock::format(reached.reset),
            reason: reached.phrase(),
            since: clock::format(now),
        };
        state.wait = Some(wait.clone());
        save(ctx, &state)?;
        ctx.notify(window_waits(ctx, &wait));
        return show_wait(ctx, wait).map(Some);
    }
    Ok(None)
}

/// The notification of a wait that begins (once: the ticks that find it
/// running tell nobody again).
fn window_waits(ctx: &Ctx<'_, '_>, wait: &Wait) -> Notice {
    Notice::WindowWaits(WindowWaits {
        skill: ctx.cfg.skill.as_str().to_owned(),
        window: wait.window.noun().to_owned(),
        reason: wait.reason.clone(),
        until: wait.until.clone(),
    })
}

/// The note and status block of a tick that waits: the iteration it
/// would have been, the budget as recorded (read, never written).
fn show_wait(ctx: &mut Ctx<'_, '_>, wait: Wait) -> Result<Waiting, Failure> {
    let now = ctx.now();
    let note = rules::waiting_note(&wait, now);
    ctx.note(note.clone());
    ctx.show_waiting(
        "waiting for a usage window's reset",
        format!(
            "none — waiting for the {} window's reset",
            wait.window.noun()
        ),
        "lock not taken — the tick waits",
        format!(
            "waiting — nothing dispatched until {}; no counter advanced",
            wait.until
        ),
    )?;
    Ok(Waiting { wait, note })
}

/// The weekly ceiling already reached at entry: the run stops.
pub(crate) fn on_entry(ctx: &Ctx<'_, '_>) -> Result<Option<Fired>, Failure> {
    if ctx.cfg.windows.seven_day.is_none() {
        return Ok(None);
    }
    let state = load(ctx)?;
    let now = ctx.now();
    Ok(
        rules::reached(&state, &ctx.cfg.windows, Window::SevenDay, now)
            .map(|r| rules::weekly_stop(&r, now)),
    )
}

/// What the work's figures decided.
#[derive(Debug, Default)]
pub(crate) struct AfterWork {
    /// The work hit a window's limit: the tick's error when it has none,
    /// and no target failed.
    pub limited: Option<String>,
    /// The weekly ceiling's stop.
    pub fired: Option<Fired>,
}

/// After the work: records the figures it read, the tick's share of each
/// window, and a wait (a limit hit, the 5-hour ceiling reached) or the
/// weekly stop. `error` is the work's failure, whose text may be the
/// only word of a limit (a wrapped skill that ran `claude -p`).
pub(crate) fn after_work(
    ctx: &mut Ctx<'_, '_>,
    journal: &Journal,
    result: &SkillResult,
    error: Option<&str>,
) -> Result<AfterWork, Failure> {
    let ceilings = ceilings(ctx, journal);
    let now = ctx.now();
    let mut report = result.usage_windows.clone().unwrap_or_default();
    if report.limited.is_none()
        && let Some(text) = error
    {
        report.limited = rules::limit_in_text(text, now);
    }
    if report.is_empty()
        && !ceilings.any()
        && !ctx.paths.windows().exists()
        && !ctx.paths.statusline_windows().exists()
    {
        return Ok(AfterWork::default());
    }
    let mut state = load(ctx)?;
    let source = match &ctx.cfg.agent {
        Some(agent) => format!("{agent}-stream"),
        None => "skill-result".to_owned(),
    };
    let mut line = record_figures(ctx, &mut state, (&report, &ceilings), &source, now);
    line.limited = report.limited.clone();
    let mut after = AfterWork::default();
    match rules::after_work(&state, report.limited.as_ref(), &ceilings, now) {
        Next::Go => {}
        Next::Wait(wait) => {
            if report.limited.is_some() {
                after.limited = Some(format!("usage window: {}", wait.reason));
            }
            ctx.note(format!(
                "The {} window: {}; the next ticks before {} wait",
                wait.window.noun(),
                wait.reason,
                rules::reset_time(now, wait.until().unwrap_or(now))
            ));
            line.wait = Some(wait.clone());
            ctx.notify(window_waits(ctx, &wait));
            state.wait = Some(wait);
        }
        Next::Stop(fired) => after.fired = Some(fired),
    }
    save(ctx, &state)?;
    ctx.window_status = rules::status_line(&line, now);
    ctx.window_log = Some(line);
    Ok(after)
}

/// The ceilings the work is checked against: the tick's flags, else the
/// ones the iteration opened with (a session's `end` is given none).
fn ceilings(ctx: &Ctx<'_, '_>, journal: &Journal) -> WindowCeilings {
    if ctx.cfg.windows.any() {
        return ctx.cfg.windows;
    }
    WindowCeilings {
        five_hour: journal.window_ceilings.get(&Window::FiveHour).copied(),
        seven_day: journal.window_ceilings.get(&Window::SevenDay).copied(),
    }
}

/// Records each figure the work read; notes and logs the tick's share.
/// A budgeted window the work said nothing of is marked unreported (no
/// recorded figure either), so the next tick refuses to start on it.
fn record_figures(
    ctx: &mut Ctx<'_, '_>,
    state: &mut WindowsState,
    (report, ceilings): (&WindowsReport, &WindowCeilings),
    source: &str,
    now: jiff::Timestamp,
) -> WindowsLine {
    let started = ctx.started;
    let mut log = WindowsLine::default();
    let mut shares = Vec::new();
    for window in Window::ALL {
        let before = state.recorded(window).cloned();
        if let Some(fig) = report.figure(window) {
            let after = Recorded {
                used_percent: fig.used_percent,
                resets_at: fig.resets_at.clone(),
                read_at: clock::format(now),
                source: source.to_owned(),
            };
            let before_used = before.as_ref().map(|b| b.used_at(started));
            // The window reset during the tick: all of it is this tick's.
            let same_window = before
                .as_ref()
                .is_some_and(|b| b.resets_at == after.resets_at);
            let share = match before_used {
                Some(b) if same_window => Some((after.used_percent - b).max(0.0)),
                Some(_) => Some(after.used_percent),
                None => None,
            };
            if let Some(share) = share {
                shares.push(format!(
                    "{} of the {} window ({} → {})",
                    rules::percent(share),
                    window.noun(),
                    rules::percent(before_used.unwrap_or(0.0)),
                    rules::percent(after.used_percent)
                ));
            } else {
                shares.push(format!(
                    "the {} window at {} (no figure before this tick)",
                    window.noun(),
                    rules::percent(after.used_percent)
                ));
            }
            *log.window_mut(window) = Some(WindowLine {
                before: before_used,
                after: after.used_percent,
                this_tick: share,
                resets_at: after.resets_at.clone(),
            });
            *state.recorded_mut(window) = Some(after);
            state.unreported.retain(|w| *w != window);
        } else if let Some(b) = &before {
            *log.window_mut(window) = Some(WindowLine {
                before: Some(b.used_at(started)),
                after: b.used_at(now),
                this_tick: None,
                resets_at: b.resets_at.clone(),
            });
        } else if ceilings.get(window).is_some()
            && report.limited.is_none()
            && !state.unreported.contains(&window)
        {
            state.unreported.push(window);
            ctx.note(format!(
                "The work reported no {} window figure; {} cannot be checked, and the next tick refuses to start until one is reported",
                window.noun(),
                window.flag()
            ));
        }
    }
    if !shares.is_empty() {
        ctx.note(format!("This tick: {}", shares.join("; ")));
    }
    log
}
