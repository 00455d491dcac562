//! Gates that reach the person (docs/src/gates-away.md): with
//! `--unattended`, a gate that no `--answer`, `--answers` entry or
//! terminal answers is posted on the tracker — on the issue or PR it
//! concerns, else on the loop's dashboard issue — and the tick waits for
//! a person's reply instead of exiting 4.
//!
//! A tick that waits does nothing else, as a tick waiting for a usage
//! window's reset does (`super::windows`): no history line, no iteration,
//! no spend; it notes why and exits 0 (`begin`: 5), so a shell loop fires
//! again. The gate is posted once ([`ask`]) and remembered in
//! `.sdd/loop/{skill}.gates.json`; each later tick reads the replies to
//! the post before anything else ([`waiting`]), says why each refused one
//! does not count (`crate::rules::replies`), and goes on once one does —
//! the gate, asked again, then takes that answer, recorded with who gave
//! it and where. Past the gate's deadline the conservative option is
//! taken and said on the tracker where the gate was asked.

use std::time::Duration;

use super::Failure;
use super::ctx::Ctx;
use crate::exit;
use crate::os::clock;
use crate::rules::gates::{Answer, GateName, Question, parse_answer};
use crate::rules::replies::{self, Judged};
use crate::state::budget::Budget;
use crate::state::history::{self, AnsweredBy};
use crate::state::paths::Skill;
use crate::state::pending::{PendingGate, PendingGates};
use crate::state::standing;
use crate::world::notify::{GatePosted, Notice};
use crate::world::tracker::Reply;

/// The label of the loop's dashboard issue.
pub const DASHBOARD_LABEL: &str = "sdd-loop-dashboard";

pub use super::awaiting::AwaitingPerson;

/// The status block of a tick that waits for a person: the iteration it
/// would have been, the budget as recorded (read, never written).
pub(crate) fn show(ctx: &mut Ctx<'_, '_>, waiting: &AwaitingPerson) -> Result<(), Failure> {
    ctx.show_waiting(
        "waiting for a person's answer to a gate",
        format!(
            "none — gate {} ({}) waits for a reply at {}",
            waiting.gate, waiting.id, waiting.url
        ),
        "lock released — the tick waits",
        "waiting for a person — nothing dispatched; no counter advanced".to_owned(),
    )
}

/// The dashboard issue's title: one per skill and repository.
pub fn dashboard_title(skill: &str) -> String {
    format!("sdd-loop {skill} dashboard")
}

fn load(ctx: &Ctx<'_, '_>) -> Result<PendingGates, Failure> {
    let path = ctx.paths.gates();
    PendingGates::load(&path).map_err(|e| {
        let shown = ctx.rel(&path);
        let full = path.display().to_string();
        Failure::new(
            exit::DATA,
            e.to_string().replace(&full, &shown),
            e.help().replace(&full, &shown),
        )
    })
}

fn save(ctx: &Ctx<'_, '_>, pending: &PendingGates) -> Result<(), Failure> {
    crate::state::files::ensure_state_dir(&ctx.paths.dir)?;
    pending.save(&ctx.paths.gates()).map_err(Failure::from)
}

/// Before the lock: a posted gate with no answer yet makes this tick wait.
/// A gate whose answer has come (or whose deadline has passed) lets the
/// tick go on, to ask it again and take that answer; its id is kept in
/// `ctx.answered_away` until then.
pub(crate) fn waiting(ctx: &mut Ctx<'_, '_>) -> Result<Option<AwaitingPerson>, Failure> {
    if !ctx.cfg.unattended || !ctx.paths.gates().exists() {
        return Ok(None);
    }
    let pending = load(ctx)?;
    let now = ctx.now();
    for gate in &pending.gates {
        let name = gate_name(ctx, gate)?;
        if read_answer(ctx, gate, true)?.is_some() || now > gate.deadline {
            ctx.answered_away.push(gate.id.clone());
            continue;
        }
        let note = format!(
            "Waiting for a person: gate {} ({}) is posted at {} — reply `{}`; nothing is done until then (deadline {})",
            gate.gate,
            gate.id,
            gate.url,
            replies::answer_text(&gate.id, &format!("<{}>", name.options().join("|"))),
            clock::format(gate.deadline)
        );
        ctx.note(note.clone());
        return Ok(Some(AwaitingPerson {
            id: gate.id.clone(),
            gate: name,
            url: gate.url.clone(),
            note,
        }));
    }
    Ok(None)
}

/// The first valid answer among the replies to `gate`'s post, noting each
/// refused one when `say` is set.
fn read_answer(
    ctx: &mut Ctx<'_, '_>,
    gate: &PendingGate,
    say: bool,
) -> Result<Option<(Answer, Reply)>, Failure> {
    let mut replies = ctx.tracker.replies(gate.posted_on, gate.posted_at)?;
    replies.sort_by_key(|r| (r.created_at, r.id));
    let mut login: Option<String> = None;
    for reply in replies {
        if replies::answer_line(&reply.body).is_none() {
            continue;
        }
        if login.is_none() {
            login = Some(ctx.tracker.login()?);
        }
        let tracker = ctx.tracker;
        let judged = replies::judge(
            &reply,
            gate,
            login.as_deref().unwrap_or_default(),
            &mut |user| tracker.permission(user).map_err(|e| e.to_string()),
        );
        match judged {
            Judged::Ignored => {}
            Judged::Answer(answer) => return Ok(Some((answer, reply))),
            Judged::Refused(why) if say => ctx.note(format!(
                "Gate {} ({}): the reply by {} ({}) does not count — {}; the gate still waits",
                gate.gate,
                gate.id,
                reply.author,
                reply.url,
                why.reason(gate)
            )),
            Judged::Refused(_) => {}
        }
    }
    Ok(None)
}

/// A gate nothing here answered, in an unattended loop: its posted answer
/// (a person's reply, or the deadline's conservative option), or — not
/// posted yet, or not answered — the tick waits (`Failure::awaiting`).
pub(crate) fn ask(
    ctx: &mut Ctx<'_, '_>,
    question: &Question,
) -> Result<(Answer, AnsweredBy), Failure> {
    let mut pending = load(ctx)?;
    let Some(gate) = pending
        .find(question.gate.name(), question.subject())
        .cloned()
    else {
        return Err(post(ctx, &mut pending, question)?);
    };
    ctx.answered_away.retain(|id| *id != gate.id);
    let answered = if ctx.now() > gate.deadline {
        Some(take_conservative(ctx, &gate, question.gate)?)
    } else {
        read_answer(ctx, &gate, false)?.map(|(answer, reply)| {
            let by = AnsweredBy {
                login: reply.author.clone(),
                url: reply.url.clone(),
                gate_id: gate.id.clone(),
            };
            ctx.note(format!(
                "Gate {} ({}) answered `{}` by {} at {}",
                gate.gate,
                gate.id,
                answer.recorded(),
                reply.author,
                reply.url
            ));
            (answer, by)
        })
    };
    let Some(answered) = answered else {
        return Err(awaiting(
            &gate,
            question.gate,
            "the gate still waits for a person's reply".into(),
        ));
    };
    pending.remove(&gate.id);
    save(ctx, &pending)?;
    if gate.subject.is_none() {
        refresh_dashboard(ctx, &pending, gate.posted_on)?;
    }
    Ok(answered)
}

/// The deadline passed: the gate's conservative option, said where it was
/// asked.
fn take_conservative(
    ctx: &mut Ctx<'_, '_>,
    gate: &PendingGate,
    name: GateName,
) -> Result<(Answer, AnsweredBy), Failure> {
    let option = name.conservative();
    let answer = parse_answer(name, option).expect("a gate's own option parses");
    let body = format!(
        "**sdd-loop {}**: gate `{}` ({}) had no valid answer by its deadline, {}. The loop took the conservative option: `{option}`.",
        ctx.cfg.skill,
        gate.id,
        gate.gate,
        clock::format(gate.deadline)
    );
    let body = ctx.inputs.redactor.apply(&body);
    let said = ctx.tracker.post_comment(gate.posted_on, &body)?;
    ctx.note(format!(
        "Gate {} ({}) had no valid answer by its deadline {}: took the conservative option `{option}`, said at {}",
        gate.gate,
        gate.id,
        clock::format(gate.deadline),
        said.url
    ));
    Ok((
        answer,
        AnsweredBy {
            login: "deadline".into(),
            url: said.url,
            gate_id: gate.id.clone(),
        },
    ))
}

/// The waiting gate's name, or the file's refusal.
fn gate_name(ctx: &Ctx<'_, '_>, gate: &PendingGate) -> Result<GateName, Failure> {
    GateName::from_name(&gate.gate).ok_or_else(|| {
        let shown = ctx.rel(&ctx.paths.gates());
        Failure::new(
            exit::DATA,
            format!("{shown}: gate {} names `{}`, which is no gate", gate.id, gate.gate),
            format!("the gate is posted at {}; remove its entry from {shown} (or the file) and the next unanswered gate is posted again", gate.url),
        )
    })
}

fn awaiting(gate: &PendingGate, name: GateName, why: String) -> Failure {
    let mut f = Failure::new(exit::TICK_DONE, why, String::new());
    f.awaiting = Some(Box::new(AwaitingPerson {
        id: gate.id.clone(),
        gate: name,
        url: gate.url.clone(),
        note: String::new(),
    }));
    f
}

/// A stable id for a gate posted now: `g-` and 8 hex digits of what it
/// asks, where and when.
fn gate_id(ctx: &Ctx<'_, '_>, question: &Question) -> String {
    let seed = format!(
        "{}\n{}\n{}\n{}\n{}",
        ctx.cfg.skill,
        ctx.cfg.repository.as_deref().unwrap_or_default(),
        question.gate,
        question.text,
        ctx.now().as_nanosecond()
    );
    let mut hash: u32 = 0x811c_9dc5;
    for byte in seed.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    format!("g-{hash:08x}")
}

/// Posts `question` and remembers it; the tick then waits.
fn post(
    ctx: &mut Ctx<'_, '_>,
    pending: &mut PendingGates,
    question: &Question,
) -> Result<Failure, Failure> {
    let id = gate_id(ctx, question);
    let subject = question.subject();
    let target = match subject {
        Some(n) => n,
        None => dashboard(ctx, pending)?,
    };
    let text = ctx.inputs.redactor.apply(&question.text);
    let deadline = ctx.cfg.gate_deadline;
    let body = ctx
        .inputs
        .redactor
        .apply(&post_body(ctx, &id, question.gate, &text, deadline));
    let posted = ctx.tracker.post_comment(target, &body)?;
    let code = (!ctx.cfg.notify.is_empty()).then(new_code);
    let gate = PendingGate {
        id,
        gate: question.gate.name().to_owned(),
        question: text,
        subject,
        posted_on: target,
        comment_id: posted.id,
        url: posted.url.clone(),
        posted_at: posted.created_at,
        deadline: posted
            .created_at
            .checked_add(
                jiff::SignedDuration::try_from(deadline).unwrap_or(jiff::SignedDuration::MAX),
            )
            .unwrap_or(jiff::Timestamp::MAX),
        code_sha1: code.as_deref().map(replies::code_hash),
    };
    pending.gates.push(gate.clone());
    save(ctx, pending)?;
    if subject.is_none() {
        refresh_dashboard(ctx, pending, target)?;
    }
    ctx.note(format!(
        "Gate {} posted on #{target} as {} ({}): nobody here can answer it, so the loop waits for a person's reply `{}`",
        gate.gate,
        gate.id,
        gate.url,
        replies::answer_text(&gate.id, &format!("<{}>", question.options().join("|")))
    ));
    ctx.notify(Notice::GatePosted(GatePosted {
        skill: ctx.cfg.skill.as_str().to_owned(),
        gate: gate.gate.clone(),
        question: gate.question.clone(),
        options: question.options().iter().map(|o| (*o).to_owned()).collect(),
        link: gate.url.clone(),
        code,
    }));
    Ok(awaiting(
        &gate,
        question.gate,
        "the gate was posted on the tracker".into(),
    ))
}

/// A fresh answer code, sent only in the person's notification: 16 hex
/// digits from the system's random source.
fn new_code() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        // No random source: the time and the process, hashed — still
        // never written anywhere but the notification.
        let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        bytes.copy_from_slice(&replies::code_hash(&seed).as_bytes()[..8]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn post_body(
    ctx: &Ctx<'_, '_>,
    id: &str,
    gate: GateName,
    question: &str,
    deadline: Duration,
) -> String {
    let options: Vec<String> = gate.options().iter().map(|o| format!("`{o}`")).collect();
    let raise = if gate == GateName::BudgetEscalation {
        format!(
            " (`raise` takes the new ceilings: `{}`)",
            replies::answer_text(id, "raise max_iterations=10")
        )
    } else {
        String::new()
    };
    format!(
        "**sdd-loop {skill} asks** — gate `{gate}`, id `{id}`\n\n> {question}\n\nOptions: {options}{raise}.\n\nAnswer with a reply whose first line is\n\n    {example}\n\nOnly a reply written after this comment, within {hours} h, by someone with write access to the repository counts — never one written with the loop's own token. With no answer by then, the loop takes `{conservative}`.",
        skill = ctx.cfg.skill,
        options = options.join(", "),
        example = replies::answer_text(id, "<option>"),
        hours = deadline.as_secs().div_ceil(3600),
        conservative = gate.conservative(),
    )
}

/// The dashboard issue's number: found by its label and title, else opened.
fn dashboard(ctx: &mut Ctx<'_, '_>, pending: &PendingGates) -> Result<u64, Failure> {
    let title = dashboard_title(ctx.cfg.skill.as_str());
    if let Some(n) = ctx.tracker.find_issue(DASHBOARD_LABEL, &title)? {
        return Ok(n);
    }
    let body = dashboard_body(ctx, pending);
    let opened = ctx.tracker.open_issue(&title, &body, &[DASHBOARD_LABEL])?;
    ctx.note(format!(
        "Opened the loop's dashboard issue #{} ({})",
        opened.number, opened.url
    ));
    Ok(opened.number)
}

fn refresh_dashboard(
    ctx: &mut Ctx<'_, '_>,
    pending: &PendingGates,
    number: u64,
) -> Result<(), Failure> {
    let body = dashboard_body(ctx, pending);
    ctx.tracker.edit_issue_body(number, &body)?;
    Ok(())
}

/// The dashboard's body: what waits for a person, the budgets, the claims
/// this clone holds, the last ticks — the run's state as `budget.json`,
/// the standing claims and history hold it.
fn dashboard_body(ctx: &Ctx<'_, '_>, pending: &PendingGates) -> String {
    let mut text = format!(
        "The state of the `sdd-loop {}` loop on this repository, kept by the loop. Answer a gate by replying to its comment as it says.\n\n## Waiting for a person\n\n",
        ctx.cfg.skill
    );
    if pending.gates.is_empty() {
        text.push_str("Nothing waits.\n");
    }
    for g in &pending.gates {
        text.push_str(&format!(
            "- `{}` {} — {} ([asked here]({}); deadline {})\n",
            g.id,
            g.gate,
            g.question,
            g.url,
            clock::format(g.deadline)
        ));
    }
    text.push_str("\n## Budgets\n\n");
    match Budget::load(ctx.paths.budget()).ok().flatten() {
        Some(b) => text.push_str(&format!(
            "- iterations {}/{}\n- PRs {}/{}\n- minutes {}/{}\n- dollars ${:.2}/${:.2}\n",
            b.iterations_used,
            b.max_iterations,
            b.prs_touched.len(),
            b.max_prs,
            b.minutes_elapsed,
            b.max_minutes,
            b.dollars_estimate,
            b.max_dollars
        )),
        None => text.push_str("No run recorded yet.\n"),
    }
    text.push_str("\n## Claims\n\n");
    text.push_str(&claims_held(ctx));
    text.push_str("\n## Last ticks\n\n");
    let tail = history::read_tail(&ctx.paths.history(), 5).unwrap_or_default();
    if tail.lines.is_empty() {
        text.push_str("None yet.\n");
    }
    for l in &tail.lines {
        text.push_str(&format!(
            "- iteration {} · {} · {}\n",
            l.line.iteration.unwrap_or(0),
            l.line.outcome.map_or("?", |o| o.as_str()),
            l.line.ended_at.as_deref().unwrap_or("?")
        ));
    }
    ctx.inputs.redactor.apply(&text)
}

/// The dashboard's claims: those this clone holds on the shared remote —
/// left standing by earlier work, and any this tick has taken — whose
/// lease has not ended, each with the lease's end (docs/src/claims.md).
fn claims_held(ctx: &Ctx<'_, '_>) -> String {
    let skill = ctx.cfg.skill;
    let kind = match skill {
        Skill::Work => "issue",
        Skill::Review => "PR",
    };
    let now = ctx.now();
    let mut all = standing::Standing::load(&standing::path(&ctx.cfg.root, skill));
    if let Some(taken) = &ctx.claims {
        all.add(&taken.held);
    }
    let held: Vec<String> = all
        .claims
        .iter()
        .filter_map(|c| match c.expires_at.parse::<jiff::Timestamp>() {
            Ok(until) if until <= now => None,
            Ok(until) => Some(format!(
                "- {kind} #{} — lease until {}\n",
                c.number,
                clock::format(until)
            )),
            Err(_) => Some(format!("- {kind} #{} — lease end unknown\n", c.number)),
        })
        .collect();
    if held.is_empty() {
        "None held.\n".to_owned()
    } else {
        held.concat()
    }
}

/// After a tick that went past its gates: a gate whose answer came but
/// which the tick did not ask again (its trigger has gone) is forgotten,
/// so an old answer never answers a later question.
pub(crate) fn forget_unasked(ctx: &mut Ctx<'_, '_>) -> Result<(), Failure> {
    if ctx.answered_away.is_empty() {
        return Ok(());
    }
    let mut pending = load(ctx)?;
    for id in std::mem::take(&mut ctx.answered_away) {
        if let Some(g) = pending.gates.iter().find(|g| g.id == id).cloned() {
            ctx.note(format!(
                "Gate {} ({}) was not asked again this tick (its trigger has gone): its post no longer waits",
                g.gate, g.id
            ));
            pending.remove(&id);
        }
    }
    save(ctx, &pending)
}

/// A gate answered here (a flag, the answers file, a terminal) that was
/// also posted: its post no longer waits.
pub(crate) fn answered_here(ctx: &mut Ctx<'_, '_>, question: &Question) -> Result<(), Failure> {
    if !ctx.paths.gates().exists() {
        return Ok(());
    }
    let mut pending = load(ctx)?;
    let Some(gate) = pending
        .find(question.gate.name(), question.subject())
        .cloned()
    else {
        return Ok(());
    };
    pending.remove(&gate.id);
    ctx.answered_away.retain(|id| *id != gate.id);
    save(ctx, &pending)?;
    if gate.subject.is_none() {
        refresh_dashboard(ctx, &pending, gate.posted_on)?;
    }
    ctx.note(format!(
        "Gate {} ({}) was answered here: its post ({}) no longer waits",
        gate.gate, gate.id, gate.url
    ));
    Ok(())
}
