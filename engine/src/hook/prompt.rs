//! Which prompts start a loop tick: `/sdd:work --loop …` and
//! `/sdd:review --loop …` of the upstream `sdd` plugin, the same through
//! this plugin's own skill names (`/sdd-loop:work`, `/sdd-loop:review`),
//! and what `/loop` sends — `/loop [interval] <prompt>` typed by the user
//! and re-sent by its self-paced wakeups, or the bare prompt its cron
//! fires. `/loop`'s own parsing is followed: a leading `^\d+[smhd]$`
//! token is the interval, else a trailing `every <N><unit>` or `every <N>
//! <unit-word>` clause is.
//!
//! A skill prompt without `--loop` is not a tick (the skill runs once,
//! with no engine), and any other prompt is not either: it passes
//! untouched. The words after the skill name are `begin`'s flags, exactly
//! as typed.

use crate::state::paths::Skill;

/// The skill names a loop prompt may use.
pub const SKILL_NAMES: [(&str, Skill); 4] = [
    ("/sdd:work", Skill::Work),
    ("/sdd:review", Skill::Review),
    ("/sdd-loop:work", Skill::Work),
    ("/sdd-loop:review", Skill::Review),
];

/// A prompt that starts a tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopPrompt {
    pub skill: Skill,
    /// The skill name as typed (`/sdd:work`).
    pub name: String,
    /// `begin`'s flags: the words after the skill name (`--loop` among
    /// them).
    pub flags: Vec<String>,
    /// Sent through `/loop` (with its interval, if one was given).
    pub via_loop: Option<Option<String>>,
}

fn is_interval(word: &str) -> bool {
    let Some(unit) = word.chars().last() else {
        return false;
    };
    let digits = &word[..word.len() - unit.len_utf8()];
    matches!(unit, 's' | 'm' | 'h' | 'd')
        && !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
}

fn is_unit_word(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "s" | "sec"
            | "secs"
            | "second"
            | "seconds"
            | "m"
            | "min"
            | "mins"
            | "minute"
            | "minutes"
            | "h"
            | "hr"
            | "hrs"
            | "hour"
            | "hours"
            | "d"
            | "day"
            | "days"
    )
}

/// `every 20m` / `every 5 minutes` at the end of `words`: its length.
fn trailing_every(words: &[String]) -> Option<(usize, String)> {
    let n = words.len();
    if n >= 2 && words[n - 2].eq_ignore_ascii_case("every") && is_interval(&words[n - 1]) {
        return Some((2, words[n - 1].clone()));
    }
    if n >= 3
        && words[n - 3].eq_ignore_ascii_case("every")
        && words[n - 2].chars().all(|c| c.is_ascii_digit())
        && !words[n - 2].is_empty()
        && is_unit_word(&words[n - 1])
    {
        return Some((3, format!("{} {}", words[n - 2], words[n - 1])));
    }
    None
}

/// The tick `prompt` starts, if it starts one.
pub fn recognise(prompt: &str) -> Option<LoopPrompt> {
    let words = super::words::words(prompt.trim());
    let (mut rest, via_loop): (&[String], _) = match words.first().map(String::as_str) {
        Some("/loop") => {
            let rest = &words[1..];
            match rest.first() {
                Some(w) if is_interval(w) => (&rest[1..], Some(Some(w.clone()))),
                _ => match trailing_every(rest) {
                    Some((len, interval)) => (&rest[..rest.len() - len], Some(Some(interval))),
                    None => (rest, Some(None)),
                },
            }
        }
        _ => (&words[..], None),
    };
    let first = rest.first()?;
    let (name, skill) = SKILL_NAMES.iter().find(|(n, _)| n == first)?;
    rest = &rest[1..];
    if !rest.iter().any(|w| w == "--loop") {
        return None;
    }
    Some(LoopPrompt {
        skill: *skill,
        name: (*name).to_owned(),
        flags: rest.to_vec(),
        via_loop,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(p: &LoopPrompt) -> Vec<&str> {
        p.flags.iter().map(String::as_str).collect()
    }

    #[test]
    fn the_four_skill_names_with_loop_are_ticks() {
        for (name, skill) in SKILL_NAMES {
            let p = recognise(&format!("{name} --loop --max-prs 1")).unwrap();
            assert_eq!(
                (p.skill, flags(&p)),
                (skill, vec!["--loop", "--max-prs", "1"])
            );
            assert_eq!(p.via_loop, None);
        }
    }

    #[test]
    fn loop_resends_with_and_without_an_interval() {
        let p = recognise("/loop 5m /sdd:work --loop --max-prs 2").unwrap();
        assert_eq!(p.via_loop, Some(Some("5m".into())));
        assert_eq!(flags(&p), vec!["--loop", "--max-prs", "2"]);
        let p = recognise("/loop /sdd:review --loop --pr 142").unwrap();
        assert_eq!(p.via_loop, Some(None));
        assert_eq!(p.skill, Skill::Review);
        let p = recognise("/loop /sdd-loop:work --loop every 20m").unwrap();
        assert_eq!(p.via_loop, Some(Some("20m".into())));
        assert_eq!(flags(&p), vec!["--loop"]);
        let p = recognise("/loop /sdd:work --loop every 5 minutes").unwrap();
        assert_eq!(p.via_loop, Some(Some("5 minutes".into())));
        assert_eq!(flags(&p), vec!["--loop"]);
    }

    #[test]
    fn quoted_answers_stay_one_flag_value() {
        let p = recognise("/sdd:work --loop --answer 'budget-escalation=raise max_iterations=10'")
            .unwrap();
        assert_eq!(
            flags(&p),
            vec![
                "--loop",
                "--answer",
                "budget-escalation=raise max_iterations=10"
            ]
        );
    }

    #[test]
    fn other_prompts_pass() {
        for prompt in [
            "/sdd:work",
            "/sdd:work --max-prs 1",
            "/loop 5m /babysit-prs",
            "please run /sdd:work --loop",
            "/sdd:works --loop",
            "/sdd:plan --loop",
            "hello",
            "",
            "/loop",
        ] {
            assert_eq!(recognise(prompt), None, "{prompt:?}");
        }
    }
}
