//! A usage window's limit hit in the tick's turn, as the transcript keeps
//! it (docs/src/usage-windows.md, "Where the figures come from"): after a
//! 429 on a subscriber's window, Claude Code writes its own assistant
//! entry (`isApiErrorMessage: true`, `"error": "rate_limit"`) with
//! `apiErrorParams.rate_limit_info` — `status: rejected`, `resetsAt`
//! (Unix seconds) and `rateLimitType` (`five_hour`, `seven_day`, …; no
//! percentage). Measured with Claude Code 2.1.332.
//!
//! Only a limit after the transcript's last prompt counts — the turn the
//! tick's `end` closes — and only while no response came after it: an
//! earlier tick's refusal is that tick's, never this one's.

use std::path::Path;

use serde_json::Value;

use crate::state::windows::{Limited, Window};

/// The limit the transcript's last turn ended on, if it did.
pub fn limit_hit(path: &Path) -> Option<Limited> {
    let text = std::fs::read_to_string(path).ok()?;
    limit_in_lines(&text)
}

fn is_prompt(entry: &Value) -> bool {
    match &entry["message"]["content"] {
        Value::String(_) => true,
        Value::Array(blocks) => blocks.iter().all(|b| b["type"] == "text"),
        _ => false,
    }
}

fn limit_of(entry: &Value) -> Option<Limited> {
    if entry["isApiErrorMessage"] != true {
        return None;
    }
    let info = &entry["apiErrorParams"]["rate_limit_info"];
    if info["status"] != "rejected" {
        return None;
    }
    let window = Window::from_limit_type(info["rateLimitType"].as_str().unwrap_or("five_hour"));
    let resets_at = info["resetsAt"]
        .as_i64()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .map(crate::os::clock::format);
    Some(Limited { window, resets_at })
}

fn limit_in_lines(text: &str) -> Option<Limited> {
    let mut hit = None;
    for line in text.lines() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match entry["type"].as_str() {
            Some("user") if entry["isMeta"] != true && is_prompt(&entry) => hit = None,
            Some("assistant") => hit = limit_of(&entry),
            _ => {}
        }
    }
    hit
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMPT: &str =
        r#"{"type":"user","message":{"role":"user","content":"/sdd:work --loop"}}"#;
    const TOOL_RESULT: &str = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}"#;
    const ANSWER: &str =
        r#"{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"ok"}]}}"#;
    // As Claude Code 2.1.332 wrote it after a 429 (fields trimmed).
    const REFUSAL: &str = r#"{"type":"assistant","apiError":"usage_limit_reached","apiErrorParams":{"rate_limit_info":{"status":"rejected","resetsAt":1778355060,"rateLimitType":"five_hour","isUsingOverage":false}},"error":"rate_limit","isApiErrorMessage":true,"apiErrorStatus":429,"message":{"model":"<synthetic>","content":[{"type":"text","text":"You've hit your 5-hour limit · resets 7:31pm (UTC)"}]}}"#;

    #[test]
    fn a_refusal_after_the_last_prompt_is_the_ticks_limit_with_its_reset() {
        let text = [PROMPT, ANSWER, TOOL_RESULT, REFUSAL].join("\n");
        assert_eq!(
            limit_in_lines(&text),
            Some(Limited {
                window: Window::FiveHour,
                resets_at: Some("2026-05-09T19:31:00Z".into()),
            })
        );
    }

    #[test]
    fn an_earlier_turns_refusal_or_one_answered_since_is_not_the_ticks() {
        assert_eq!(limit_in_lines(&[REFUSAL, PROMPT].join("\n")), None);
        assert_eq!(limit_in_lines(&[PROMPT, REFUSAL, ANSWER].join("\n")), None);
        let weekly = REFUSAL.replace("five_hour", "seven_day");
        assert_eq!(
            limit_in_lines(&[PROMPT, weekly.as_str()].join("\n")).map(|l| l.window),
            Some(Window::SevenDay)
        );
    }
}
