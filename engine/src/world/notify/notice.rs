//! The events told to the person (docs/src/notifications.md): [`Notice`]
//! and what each carries — its title, text and ntfy headers. What leaves
//! the machine is only what these say, redacted by the sender
//! (`super::tell`); a gate's answer code is never serialised, so a notice
//! kept on disk for a retry goes without it.

use serde::{Deserialize, Serialize};

/// A gate posted on the tracker, waiting for the person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatePosted {
    /// `work` or `review`.
    pub skill: String,
    /// The gate's name (`budget-80`, `drift`, …).
    pub gate: String,
    pub question: String,
    pub options: Vec<String>,
    /// Where it was posted (the issue or PR comment's URL).
    pub link: String,
    /// The code only the person receives, to put in the answer. Sent only
    /// in the notification: never written to disk, so a notice kept for a
    /// retry goes without it (and says so).
    #[serde(skip)]
    pub code: Option<String>,
}

/// A gate asked where the loop runs (a terminal, a Claude Code session,
/// the tick's `--answer`), which nobody there has answered yet: the tick
/// exited 4 and the loop waits for that answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateAsked {
    /// `work` or `review`.
    pub skill: String,
    /// The gate's name (`budget-escalation`, …).
    pub gate: String,
    pub question: String,
    pub options: Vec<String>,
    /// Where and how to answer, one sentence (no link, no code: the
    /// answer is given where the loop runs).
    pub answer_with: String,
}

/// A run that stopped: its stop condition and final figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStopped {
    pub skill: String,
    /// The stop condition's name (`iteration-ceiling`, …).
    pub cause: String,
    /// Its message, as the final report says it.
    pub message: String,
    /// The final figures, one line each (`Iterations: 3/3`, …).
    pub figures: Vec<String>,
}

/// A usage window that makes the loop wait for its reset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowWaits {
    pub skill: String,
    /// The window's name (`5-hour`, `weekly`).
    pub window: String,
    /// Why it waits (the limit hit or the ceiling reached).
    pub reason: String,
    /// The reset the loop waits for (RFC 3339).
    pub until: String,
}

/// One event worth telling the person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Notice {
    GatePosted(GatePosted),
    GateAsked(GateAsked),
    RunStopped(RunStopped),
    WindowWaits(WindowWaits),
}

impl Notice {
    /// The event's name, as history records it.
    pub fn event(&self) -> &'static str {
        match self {
            Notice::GatePosted(_) => "gate-posted",
            Notice::GateAsked(_) => "gate-asked",
            Notice::RunStopped(_) => "run-stopped",
            Notice::WindowWaits(_) => "window-waits",
        }
    }

    /// One line, ASCII (an HTTP header carries it to ntfy).
    pub fn title(&self) -> String {
        let title = match self {
            Notice::GatePosted(g) => {
                format!("sdd-loop {}: a gate waits for you ({})", g.skill, g.gate)
            }
            Notice::GateAsked(g) => {
                format!(
                    "sdd-loop {}: a gate asks for your answer ({})",
                    g.skill, g.gate
                )
            }
            Notice::RunStopped(r) => {
                format!("sdd-loop {}: the loop stopped ({})", r.skill, r.cause)
            }
            Notice::WindowWaits(w) => format!(
                "sdd-loop {}: waiting for the {} window's reset",
                w.skill, w.window
            ),
        };
        title
            .chars()
            .map(|c| {
                if c.is_ascii() && !c.is_ascii_control() {
                    c
                } else {
                    '?'
                }
            })
            .collect()
    }

    /// The message's text.
    pub fn text(&self) -> String {
        match self {
            Notice::GatePosted(g) => {
                let mut s = format!(
                    "{}\nOptions: {}\nAnswer at: {}",
                    g.question,
                    g.options.join(" | "),
                    g.link
                );
                match &g.code {
                    Some(code) => s.push_str(&format!("\nAnswer code (yours only): {code}")),
                    None => s.push_str(
                        "\nThe answer code went with the first notification, which was not delivered; it is never kept on disk.",
                    ),
                }
                s
            }
            Notice::GateAsked(g) => format!(
                "{}\nOptions: {}\nAnswer {}",
                g.question,
                g.options.join(" | "),
                g.answer_with
            ),
            Notice::RunStopped(r) => {
                let mut s = format!("Stop cause: {} — {}", r.cause, r.message);
                for f in &r.figures {
                    s.push('\n');
                    s.push_str(f);
                }
                s
            }
            Notice::WindowWaits(w) => format!(
                "The {} window: {}. Ticks before {} wait and spend nothing.",
                w.window, w.reason, w.until
            ),
        }
    }

    /// ntfy's `Tags` (emoji short codes it shows before the title).
    pub(super) fn tags(&self) -> &'static str {
        match self {
            Notice::GatePosted(_) | Notice::GateAsked(_) => "question,sdd-loop",
            Notice::RunStopped(_) => "stop_sign,sdd-loop",
            Notice::WindowWaits(_) => "hourglass,sdd-loop",
        }
    }

    /// ntfy's `Priority` (1 to 5): a gate waits on the person.
    pub(super) fn priority(&self) -> &'static str {
        match self {
            Notice::GatePosted(_) | Notice::GateAsked(_) => "4",
            Notice::RunStopped(_) => "3",
            Notice::WindowWaits(_) => "2",
        }
    }

    pub(super) fn click(&self) -> Option<&str> {
        match self {
            Notice::GatePosted(g) if g.link.starts_with("http") => Some(&g.link),
            _ => None,
        }
    }
}
