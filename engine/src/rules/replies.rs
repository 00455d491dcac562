//! Which reply answers a gate posted on the tracker (docs/src/gates-away.md):
//! [`judge`] takes one reply to the post and says whether it is the answer,
//! why it is refused, or that it is no answer at all (a comment that does
//! not start with `/answer`).
//!
//! An answer is the line `/answer ID OPTION` (with `raise`, the new
//! ceilings after it). It counts only when every one of these holds, in
//! this order: it names this gate's id (an answer to an older gate, or to
//! another loop's, is refused); it was written after the post — its
//! creation time, not its last edit, so an older comment edited into an
//! answer is refused; it came before the deadline; its option is one the
//! gate lists; its author is not the identity the loop's token acts as
//! (the loop's own work holds that token and could write the answer
//! itself); and its author has write access to the repository. The first
//! reply that passes, by creation time, wins; the tick leaves the rest.

use crate::rules::gates::{Answer, GateName, parse_answer};
use crate::state::pending::PendingGate;

/// A conversation comment with its times and address: a reply to a
/// posted gate (docs/src/gates-away.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub id: u64,
    pub author: String,
    pub body: String,
    pub created_at: jiff::Timestamp,
    pub updated_at: jiff::Timestamp,
    /// `html_url`: where a person reads it.
    pub url: String,
}

/// The reply that answers a posted gate: `/answer ID OPTION`.
pub fn answer_text(id: &str, option: &str) -> String {
    format!("/answer {id} {option}")
}

/// The hex SHA-1 of an answer code, as `.sdd/loop/{skill}.gates.json`
/// keeps it.
pub fn code_hash(code: &str) -> String {
    use sha1::{Digest, Sha1};
    Sha1::digest(code.trim().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The answer without its `code=…` word, and the code.
fn split_code(text: &str) -> (String, Option<&str>) {
    let mut code = None;
    let rest: Vec<&str> = text
        .split_whitespace()
        .filter(|w| match w.strip_prefix("code=") {
            Some(c) => {
                code = Some(c);
                false
            }
            None => true,
        })
        .collect();
    (rest.join(" "), code)
}

/// `(id, answer)` from a reply whose first non-empty line is `/answer …`.
pub fn answer_line(body: &str) -> Option<(&str, &str)> {
    let line = body.lines().map(str::trim).find(|l| !l.is_empty())?;
    let rest = line.strip_prefix("/answer")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim_start();
    let (id, answer) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    Some((id, answer.trim()))
}

/// Why a reply does not answer the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// It names another gate's id.
    OtherGate(String),
    /// It was created before the post (and edited since).
    BeforePost,
    /// It came after the deadline.
    AfterDeadline,
    /// Its option is not one of the gate's.
    NotAnAnswer(String),
    /// Its author is the loop's own token identity.
    LoopsOwnToken,
    /// Its author's permission is below write.
    NoWriteAccess(String),
    /// The permission could not be read.
    PermissionUnknown(String),
}

impl Refusal {
    pub fn reason(&self, gate: &PendingGate) -> String {
        match self {
            Refusal::OtherGate(other) => {
                format!("it answers gate {other}, not the waiting gate {}", gate.id)
            }
            Refusal::BeforePost => {
                "it was written before the gate was posted (an older comment edited since)".into()
            }
            Refusal::AfterDeadline => "it came after the gate's deadline".into(),
            Refusal::NotAnAnswer(detail) => format!("it is not an answer: {detail}"),
            Refusal::LoopsOwnToken if gate.code_sha1.is_some() => {
                "its author is the identity the loop's token acts as, which the loop's own work holds, and it carries no `code=` that matches the one sent only to the person".into()
            }
            Refusal::LoopsOwnToken => {
                "its author is the identity the loop's token acts as, which the loop's own work holds".into()
            }
            Refusal::NoWriteAccess(p) => {
                format!("its author has {p} access to the repository, not write")
            }
            Refusal::PermissionUnknown(e) => format!("its author's permission could not be read: {e}"),
        }
    }
}

/// What one reply is to the gate.
#[derive(Debug, Clone, PartialEq)]
pub enum Judged {
    /// Not an `/answer` line, or the post itself.
    Ignored,
    Refused(Refusal),
    Answer(Answer),
}

/// Judges `reply` to `gate`; `loop_login` is who the loop's token acts as,
/// `permission` reads an author's permission (asked only when the other
/// checks pass).
pub fn judge(
    reply: &Reply,
    gate: &PendingGate,
    loop_login: &str,
    permission: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Judged {
    if reply.id == gate.comment_id {
        return Judged::Ignored;
    }
    let Some((id, text)) = answer_line(&reply.body) else {
        return Judged::Ignored;
    };
    if id != gate.id {
        return Judged::Refused(Refusal::OtherGate(id.to_owned()));
    }
    if reply.created_at <= gate.posted_at {
        return Judged::Refused(Refusal::BeforePost);
    }
    if reply.created_at > gate.deadline {
        return Judged::Refused(Refusal::AfterDeadline);
    }
    let Some(name) = GateName::from_name(&gate.gate) else {
        return Judged::Refused(Refusal::NotAnAnswer(format!(
            "the waiting gate's name `{}` is not a gate this engine knows",
            gate.gate
        )));
    };
    let (text, code) = split_code(text);
    let answer = match parse_answer(name, &text) {
        Ok(a) => a,
        Err(detail) => return Judged::Refused(Refusal::NotAnAnswer(detail)),
    };
    if reply.author.eq_ignore_ascii_case(loop_login) {
        let coded = matches!((&gate.code_sha1, code), (Some(h), Some(c)) if *h == code_hash(c));
        if !coded {
            return Judged::Refused(Refusal::LoopsOwnToken);
        }
    }
    match permission(&reply.author) {
        Ok(p) if matches!(p.as_str(), "admin" | "maintain" | "write") => Judged::Answer(answer),
        Ok(p) => Judged::Refused(Refusal::NoWriteAccess(p)),
        Err(e) => Judged::Refused(Refusal::PermissionUnknown(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> PendingGate {
        PendingGate {
            id: "g-0000abcd".into(),
            gate: GateName::BudgetEscalation.name().into(),
            question: "Approaching minutes (25/30). Continue, raise ceiling, or stop?".into(),
            subject: None,
            posted_on: 7,
            comment_id: 100,
            url: "u".into(),
            posted_at: "2026-05-09T14:00:00Z".parse().unwrap(),
            deadline: "2026-05-10T14:00:00Z".parse().unwrap(),
            code_sha1: None,
        }
    }

    fn reply(author: &str, body: &str, created: &str) -> Reply {
        Reply {
            id: 101,
            author: author.into(),
            body: body.into(),
            created_at: created.parse().unwrap(),
            updated_at: "2026-05-09T15:00:00Z".parse().unwrap(),
            url: "r".into(),
        }
    }

    fn judged(r: &Reply, perm: &str) -> Judged {
        let perm = perm.to_owned();
        judge(r, &gate(), "sdd-bot", &mut |_| Ok(perm.clone()))
    }

    #[test]
    fn a_collaborators_answer_after_the_post_is_taken() {
        let r = reply(
            "alice",
            "/answer g-0000abcd continue\nthanks",
            "2026-05-09T14:05:00Z",
        );
        let Judged::Answer(a) = judged(&r, "write") else {
            panic!()
        };
        assert_eq!(a.option, "continue");
        let r = reply(
            "alice",
            "/answer g-0000abcd raise max_minutes=60",
            "2026-05-09T14:05:00Z",
        );
        assert!(matches!(judged(&r, "admin"), Judged::Answer(a) if a.raises.len() == 1));
    }

    #[test]
    fn each_refusal_is_told_apart() {
        let at = "2026-05-09T14:05:00Z";
        let cases = [
            (
                reply("alice", "/answer g-0000ffff continue", at),
                "write",
                Refusal::OtherGate("g-0000ffff".into()),
            ),
            (
                reply(
                    "alice",
                    "/answer g-0000abcd continue",
                    "2026-05-09T13:00:00Z",
                ),
                "write",
                Refusal::BeforePost,
            ),
            (
                reply(
                    "alice",
                    "/answer g-0000abcd continue",
                    "2026-05-10T15:00:00Z",
                ),
                "write",
                Refusal::AfterDeadline,
            ),
            (
                reply("alice", "/answer g-0000abcd maybe", at),
                "write",
                Refusal::NotAnAnswer("expected one of continue, raise, stop".into()),
            ),
            (
                reply("SDD-bot", "/answer g-0000abcd continue", at),
                "admin",
                Refusal::LoopsOwnToken,
            ),
            (
                reply("mallory", "/answer g-0000abcd continue", at),
                "read",
                Refusal::NoWriteAccess("read".into()),
            ),
        ];
        for (r, perm, want) in cases {
            assert_eq!(judged(&r, perm), Judged::Refused(want), "{}", r.body);
        }
    }

    #[test]
    fn the_loops_own_identity_answers_only_with_the_code_sent_to_the_person() {
        let mut g = gate();
        g.code_sha1 = Some(code_hash("5f0c1e9a7b2d4c68"));
        let at = "2026-05-09T14:05:00Z";
        let judged = |body: &str| {
            judge(&reply("sdd-bot", body, at), &g, "sdd-bot", &mut |_| {
                Ok("admin".into())
            })
        };
        assert!(matches!(
            judged("/answer g-0000abcd continue code=5f0c1e9a7b2d4c68"),
            Judged::Answer(a) if a.option == "continue"
        ));
        for body in [
            "/answer g-0000abcd continue",
            "/answer g-0000abcd continue code=0000000000000000",
        ] {
            assert_eq!(
                judged(body),
                Judged::Refused(Refusal::LoopsOwnToken),
                "{body}"
            );
        }
        // Without a code on file, the loop's identity never answers.
        let r = reply(
            "sdd-bot",
            "/answer g-0000abcd continue code=5f0c1e9a7b2d4c68",
            at,
        );
        assert_eq!(
            judge(&r, &gate(), "sdd-bot", &mut |_| Ok("admin".into())),
            Judged::Refused(Refusal::LoopsOwnToken)
        );
    }

    #[test]
    fn comments_that_are_no_answer_and_the_post_itself_are_ignored() {
        let mut post = reply(
            "sdd-bot",
            "/answer g-0000abcd continue",
            "2026-05-09T14:00:00Z",
        );
        post.id = 100;
        assert_eq!(judged(&post, "admin"), Judged::Ignored);
        for body in [
            "looks fine",
            "/answered it",
            "see `/answer g-0000abcd continue`",
        ] {
            assert_eq!(
                judged(&reply("alice", body, "2026-05-09T14:05:00Z"), "write"),
                Judged::Ignored
            );
        }
    }
}
