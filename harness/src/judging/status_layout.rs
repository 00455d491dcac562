//! The status block's canonical layout (loop-telemetry.md, "Status
//! Block"; SPEC-0020 "Telemetry Schema"): every tick prints a block whose
//! required lines come in this order — the `## Loop Iteration {N}/{max} —
//! /sdd:{skill} --loop` header, `Started:`, then `Backlog:` and `Iteration
//! plan:` for work or `Tracked PR:` for review with `--pr`, `Budget
//! remaining:`, `Stop conditions evaluated:`, `Concurrency:`, `Outcome:`,
//! and `Next tick:` (or `Loop ended`). Other lines may sit between them.
//! A tick the iteration budget halts on entry runs no iteration `N` of
//! `max`, and its header says so instead: `## Loop Iteration — halted on
//! entry: iteration budget {used}/{max} — /sdd:{skill} --loop`.
//! A tick skipped because a live tick holds the lock carries the skip note
//! on its `Outcome:` line: `Outcome: Previous iteration {N-1} still active
//! (pid {P}) — skipping this tick`, under a header naming iteration `N`,
//! the skipped tick's own; one skipped because other clones hold
//! every claim it could take (issue 32) carries that note instead:
//! `Outcome: skipped — No issue claimable — other clones hold …` (a
//! review tick: `No PR claimable`).
//!
//! [`problems`] checks one block; the `status_layout` check
//! ([`crate::loading::check`]) runs it on every block every tick printed, and every
//! case is graded on it, so layout drift fails the suite.

use std::sync::LazyLock;

use regex::Regex;

static HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^## Loop Iteration (?:(?<n>\d+)/\d+|— halted on entry: iteration budget \d+/\d+) — /sdd:(?<skill>work|review) --loop$",
    )
    .expect("a valid regex")
});
static SKIP_NOTE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^Outcome: (?:Previous iteration (?<holder>\d+) still active \(pid [^)]+\) — skipping this tick|skipped — No (?:issue|PR) claimable — other clones hold )")
        .expect("a valid regex")
});

/// The status blocks of one tick's stdout: each from its `## Loop
/// Iteration` header to the next `## ` heading (the final report) or the
/// end.
pub fn blocks(stdout: &str) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in stdout.lines() {
        if line.starts_with("## Loop Iteration") {
            out.extend(current.take());
            current = Some(vec![line]);
        } else if line.starts_with("## ") {
            out.extend(current.take());
        } else if let Some(block) = current.as_mut() {
            block.push(line);
        }
    }
    out.extend(current);
    out
}

/// What a tick's block must show besides the common lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    /// The tick ran `review --pr N`.
    pub single_pr: bool,
    /// The tick was skipped on a live lock (its history line is `skipped_lock`).
    pub skipped: bool,
}

/// How `block` departs from the canonical layout; empty when it follows it.
pub fn problems(block: &[&str], tick: Tick) -> Vec<String> {
    let Some(header) = block.first() else {
        return vec!["the block is empty".to_owned()];
    };
    let Some(found) = HEADER.captures(header) else {
        return vec![format!(
            "the header `{header}` is not `## Loop Iteration {{N}}/{{max}} — /sdd:{{skill}} --loop` (nor, on a tick the iteration budget halts on entry, `## Loop Iteration — halted on entry: iteration budget {{used}}/{{max}} — /sdd:{{skill}} --loop`)"
        )];
    };
    let skill = &found["skill"];
    let mut required: Vec<&[&str]> = vec![&["Started:"]];
    if skill == "work" {
        required.push(&["Backlog:"]);
        required.push(&["Iteration plan:"]);
    } else if tick.single_pr {
        required.push(&["Tracked PR:"]);
    }
    required.extend([
        &["Budget remaining:"][..],
        &["Stop conditions evaluated:"],
        &["Concurrency:"],
        &["Outcome:"],
        &["Next tick:", "Loop ended"],
    ]);
    let mut out = Vec::new();
    let mut at = 1;
    for labels in required {
        let is = |l: &&str| labels.iter().any(|p| l.starts_with(p));
        match block[at..].iter().position(is) {
            Some(p) => at += p + 1,
            None if block[1..at].iter().any(is) => {
                out.push(format!("`{}` is out of order", labels[0]));
            }
            None => out.push(format!("lacks the `{}` line", labels.join("` or `"))),
        }
    }
    if tick.skipped
        && let Some(outcome) = block.iter().find(|l| l.starts_with("Outcome:"))
    {
        match SKIP_NOTE.captures(outcome) {
            None => out.push(format!(
                "a skipped tick's `Outcome:` line must carry the skip note `Previous iteration N still active (pid P) — skipping this tick`; it reads `{outcome}`"
            )),
            Some(note) => {
                let holder = note.name("holder").and_then(|m| m.as_str().parse::<u64>().ok());
                let own = found.name("n").and_then(|m| m.as_str().parse::<u64>().ok());
                if let (Some(holder), Some(own)) = (holder, own)
                    && own != holder.saturating_add(1)
                {
                    out.push(format!(
                        "a skipped tick's header names its own iteration, the one after the holder's: `## Loop Iteration {}/…` above `Previous iteration {holder} still active`; it reads `{header}`",
                        holder.saturating_add(1)
                    ));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORK: &str = "\
Reaped stale lock for pid 7

## Loop Iteration 2/5 — /sdd:work --loop

Started: 2026-05-09T14:05:00Z
Backlog: 1 unblocked, 0 blocked, 0 in-progress
Iteration plan: implement #2
Budget remaining: 3 iterations, 19 PRs, 60 minutes, $23.57
Stop conditions evaluated: none triggered
Concurrency: lock acquired

Outcome: no changes reported.

Next tick: scheduled by /loop

## Loop Ended — /sdd:work --loop

Stop cause: …
";

    const PLAIN: Tick = Tick {
        single_pr: false,
        skipped: false,
    };

    #[test]
    fn a_canonical_block_passes_and_the_report_is_not_part_of_it() {
        let found = blocks(WORK);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].last(), Some(&""));
        assert_eq!(problems(&found[0], PLAIN), Vec::<String>::new());
    }

    #[test]
    fn missing_and_reordered_lines_are_named() {
        let swapped = WORK.replace(
            "Stop conditions evaluated: none triggered\nConcurrency: lock acquired",
            "Concurrency: lock acquired\nStop conditions evaluated: none triggered",
        );
        assert_eq!(
            problems(&blocks(&swapped)[0], PLAIN),
            ["`Concurrency:` is out of order"]
        );
        let review = "## Loop Iteration 1/5 — /sdd:review --loop\nStarted: x\nBudget remaining: x\nStop conditions evaluated: x\nConcurrency: x\nOutcome: x\nLoop ended\n";
        assert_eq!(problems(&blocks(review)[0], PLAIN), Vec::<String>::new());
        let single = Tick {
            single_pr: true,
            skipped: false,
        };
        assert_eq!(
            problems(&blocks(review)[0], single),
            ["lacks the `Tracked PR:` line"]
        );
    }

    #[test]
    fn a_tick_halted_on_entry_by_the_iteration_budget_has_its_own_header() {
        let block = "## Loop Iteration — halted on entry: iteration budget 2/2 — /sdd:review --loop\nStarted: x\nBudget remaining: x\nStop conditions evaluated: iteration_budget (#3) triggered\nConcurrency: x\nOutcome: halted\nNext tick: Loop ended\n";
        assert_eq!(problems(&blocks(block)[0], PLAIN), Vec::<String>::new());
        let vague = block.replace("iteration budget 2/2", "budget");
        assert_eq!(problems(&blocks(&vague)[0], PLAIN).len(), 1);
    }

    #[test]
    fn a_tick_skipped_on_other_clones_claims_carries_that_note() {
        let skipped = Tick {
            single_pr: true,
            skipped: true,
        };
        let block = "## Loop Iteration 1/5 — /sdd:review --loop\nStarted: x\nTracked PR: #142\nBudget remaining: x\nStop conditions evaluated: none\nConcurrency: lock acquired\nOutcome: skipped — No PR claimable — other clones hold #142 (b, until 14:15); no counter advanced\nNext tick: scheduled by /loop\n";
        assert_eq!(problems(&blocks(block)[0], skipped), Vec::<String>::new());
    }

    #[test]
    fn a_skipped_tick_carries_the_note_on_its_outcome() {
        let skipped = Tick {
            single_pr: false,
            skipped: true,
        };
        let block = "## Loop Iteration 4/5 — /sdd:review --loop\nStarted: x\nBudget remaining: x\nStop conditions evaluated: none\nConcurrency: Previous iteration 3 still active (pid 12) — skipping this tick\nOutcome: skipped — no counter advanced\nNext tick: scheduled by /loop\n";
        let found = problems(&blocks(block)[0], skipped);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("it reads `Outcome: skipped — no counter advanced`"));
        let fixed = block.replace(
            "Outcome: skipped — no counter advanced",
            "Outcome: Previous iteration 3 still active (pid 12) — skipping this tick",
        );
        assert_eq!(problems(&blocks(&fixed)[0], skipped), Vec::<String>::new());
        // The header is the skipped tick's own iteration, not the holder's.
        let holders = fixed.replace("## Loop Iteration 4/5", "## Loop Iteration 3/5");
        let found = problems(&blocks(&holders)[0], skipped);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("`## Loop Iteration 4/…` above `Previous iteration 3 still active`")
        );
    }
}
