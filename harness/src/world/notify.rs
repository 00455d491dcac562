//! What the notification receiver (`world.notify`) recorded, read as the
//! person reads it: [`answer_code`] finds the answer code a posted gate
//! was told with (docs/src/gates-away.md, "Not answerable by the loop's
//! own work"). A scripted reply by the loop's own identity
//! (`reply_to_gate: { code: from_notification }`) takes its code from
//! here — from what the person received — never from the engine's state,
//! which keeps only the code's hash.

use sdd_mocks::notify::Received;

/// The line of a gate's notification that names the post.
const LINK: &str = "Answer at: ";
/// The line that carries the code.
const CODE: &str = "Answer code (yours only): ";

/// The answer code the notification of the gate posted at `post` (the
/// post comment's address) carried: the first one the receiver recorded.
/// `received` is `None` without a receiver.
pub fn answer_code(received: Option<&[Received]>, post: &str) -> Result<String, String> {
    let Some(received) = received else {
        return Err(
            "the case has no notification receiver to read it from: add `notify: {}` under `world:`"
                .to_owned(),
        );
    };
    received
        .iter()
        .flat_map(|r| texts(&r.body))
        .find_map(|text| code_for(&text, post))
        .ok_or_else(|| {
            format!(
                "none of the {} notification(s) the receiver recorded names that post with an answer code",
                received.len()
            )
        })
}

/// A body's texts: an ntfy message's body, or every string of a webhook's
/// JSON (Slack's `text`, Discord's `content`).
fn texts(body: &str) -> Vec<String> {
    fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    match serde_json::from_str::<serde_json::Value>(body) {
        Ok(json) => {
            let mut out = Vec::new();
            strings(&json, &mut out);
            out
        }
        Err(_) => vec![body.to_owned()],
    }
}

fn code_for(text: &str, post: &str) -> Option<String> {
    let mut lines = text.lines().map(str::trim);
    lines
        .by_ref()
        .find(|l| l.strip_prefix(LINK) == Some(post))?;
    lines
        .find_map(|l| l.strip_prefix(CODE))
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const POST: &str = "http://127.0.0.1:4000/acme/app/issues/6#issuecomment-1";

    fn sent(body: &str) -> Received {
        Received {
            method: "POST".into(),
            path: "/topic".into(),
            headers: BTreeMap::new(),
            body: body.into(),
        }
    }

    #[test]
    fn the_code_is_read_from_the_notification_that_names_the_post() {
        let other = sent(&format!(
            "Q?\nOptions: continue | stop\nAnswer at: {POST}0\nAnswer code (yours only): 1111111111111111"
        ));
        let ntfy = sent(&format!(
            "Q?\nOptions: continue | stop\nAnswer at: {POST}\nAnswer code (yours only): 5f0c1e9a7b2d4c68"
        ));
        assert_eq!(
            answer_code(Some(&[other.clone(), ntfy]), POST),
            Ok("5f0c1e9a7b2d4c68".to_owned()),
            "not the code of the post whose address only begins the same"
        );
        let slack = sent(
            &serde_json::json!({ "text": format!("*title*\nAnswer at: {POST}\nAnswer code (yours only): 0123456789abcdef") })
                .to_string(),
        );
        assert_eq!(
            answer_code(Some(&[slack]), POST),
            Ok("0123456789abcdef".to_owned())
        );
        let err = answer_code(Some(&[other]), POST).unwrap_err();
        assert!(err.contains("none of the 1 notification(s)"), "{err}");
    }

    #[test]
    fn a_resent_notification_without_the_code_gives_none() {
        let resent = sent(&format!(
            "Q?\nAnswer at: {POST}\nThe answer code went with the first notification, which was not delivered; it is never kept on disk."
        ));
        assert!(answer_code(Some(&[resent]), POST).is_err());
        let err = answer_code(None, POST).unwrap_err();
        assert!(err.contains("`notify: {}` under `world:`"), "{err}");
    }
}
