//! What the fake skill reports: the [`SkillResult`] it accumulates as it
//! works, and the [`SkillEvent`] stream it appends to `SDD_LOOP_EVENTS` as
//! each action happens (one JSON line each, flushed at once, so an engine
//! killed mid-tick can recover every reported spend and PR).
//!
//! The result is written once at the end, atomically (temp file + rename),
//! or deliberately malformed or left out when the script says so.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use sdd_loop::state::protocol::{
    ChainReport, Failure, ModelUsage, PROTOCOL_VERSION, PrReport, ReviewRounds, SkillEvent,
    SkillResult, WorktreeReport,
};

use super::act::Sink;
use super::script::ResultMode;

#[derive(Debug)]
pub struct Report {
    result: SkillResult,
    events: Option<File>,
}

impl Report {
    /// Appends events to `events` when given.
    pub fn new(events: Option<&Path>) -> std::io::Result<Self> {
        let events = events
            .map(|p| OpenOptions::new().create(true).append(true).open(p))
            .transpose()?;
        Ok(Self {
            result: SkillResult {
                protocol: PROTOCOL_VERSION,
                ..SkillResult::default()
            },
            events,
        })
    }

    fn emit(&mut self, event: &SkillEvent) -> std::io::Result<()> {
        let Some(file) = &mut self.events else {
            return Ok(());
        };
        let mut line = serde_json::to_string(event).map_err(std::io::Error::other)?;
        line.push('\n');
        file.write_all(line.as_bytes())?;
        file.flush()
    }

    pub fn usage(&mut self, usage: &ModelUsage) -> std::io::Result<()> {
        match self
            .result
            .usage
            .iter_mut()
            .find(|u| u.model == usage.model)
        {
            Some(total) => {
                let mut sum = total.tokens();
                sum.add(&usage.tokens());
                *total = ModelUsage::from_tokens(usage.model.clone(), sum);
            }
            None => self.result.usage.push(usage.clone()),
        }
        self.emit(&SkillEvent::Usage {
            model: usage.model.clone(),
            tokens_in: usage.tokens_in,
            tokens_out: usage.tokens_out,
            cache_read_tokens: usage.cache_read_tokens,
            cache_write_tokens: usage.cache_write_tokens,
            cache_write_1h_tokens: usage.cache_write_1h_tokens,
        })
    }

    pub fn agents(&mut self, count: u64) -> std::io::Result<()> {
        self.result.agents_dispatched += count;
        self.emit(&SkillEvent::AgentDispatched { count })
    }

    /// Records a PR touched (merged with an earlier report of the same PR:
    /// the first start SHA is kept, the latest end SHA and state win).
    pub fn pr(&mut self, pr: PrReport) -> std::io::Result<()> {
        let event = SkillEvent::Pr {
            number: pr.number,
            branch: pr.branch.clone(),
            head_sha: pr.head_sha_at_end.clone(),
            state: pr.state,
            opened: pr.opened,
        };
        match self.result.prs.iter_mut().find(|p| p.number == pr.number) {
            Some(known) => {
                known.head_sha_at_start = known.head_sha_at_start.take().or(pr.head_sha_at_start);
                known.head_sha_at_end = pr.head_sha_at_end.or(known.head_sha_at_end.take());
                known.state = pr.state;
                known.opened |= pr.opened;
                known.branch = pr.branch;
            }
            None => self.result.prs.push(pr),
        }
        self.emit(&event)
    }

    pub fn comment(&mut self, pr: u64) -> std::io::Result<()> {
        self.result.comments_pushed += 1;
        self.emit(&SkillEvent::CommentPushed { pr, count: 1 })
    }

    pub fn merge_attempted(&mut self, pr: u64) -> std::io::Result<()> {
        self.result.merges_attempted += 1;
        self.emit(&SkillEvent::MergeAttempted { pr })
    }

    pub fn worktree(&mut self, worktree: WorktreeReport) -> std::io::Result<()> {
        let event = SkillEvent::Worktree {
            path: worktree.path.clone(),
            branch: worktree.branch.clone(),
            head_sha: worktree.head_sha.clone(),
        };
        self.result.worktrees.push(worktree);
        self.emit(&event)
    }

    pub fn failure(&mut self, failure: Failure) -> std::io::Result<()> {
        let event = SkillEvent::Failure {
            target: failure.target.clone(),
            root_cause: failure.root_cause.clone(),
        };
        self.result.failures.push(failure);
        self.emit(&event)
    }

    pub fn chain(&mut self, chain: ChainReport) {
        self.result.chain = Some(chain);
    }

    pub fn review_round(&mut self, pr: u64, rounds: u64) {
        match self.result.review_rounds.iter_mut().find(|r| r.pr == pr) {
            Some(r) => r.rounds += rounds,
            None => self.result.review_rounds.push(ReviewRounds { pr, rounds }),
        }
    }

    pub fn progress(&mut self, message: &str) -> std::io::Result<()> {
        self.emit(&SkillEvent::Progress {
            message: message.to_owned(),
        })
    }

    /// The result so far, with the tick's summary.
    pub fn result(&self, summary: Option<&str>) -> SkillResult {
        SkillResult {
            summary: summary.map(str::to_owned),
            ..self.result.clone()
        }
    }
}

impl Sink for Report {
    fn usage(&mut self, usage: &ModelUsage) -> std::io::Result<()> {
        Report::usage(self, usage)
    }
    fn agents(&mut self, count: u64) -> std::io::Result<()> {
        Report::agents(self, count)
    }
    fn pr(&mut self, pr: PrReport, _: &str) -> std::io::Result<()> {
        Report::pr(self, pr)
    }
    fn comment(&mut self, pr: u64, _: &str) -> std::io::Result<()> {
        Report::comment(self, pr)
    }
    fn merge_attempted(&mut self, pr: u64) -> std::io::Result<()> {
        Report::merge_attempted(self, pr)
    }
    fn worktree(&mut self, worktree: WorktreeReport) -> std::io::Result<()> {
        Report::worktree(self, worktree)
    }
    fn failure(&mut self, failure: Failure) -> std::io::Result<()> {
        Report::failure(self, failure)
    }
    fn chain(&mut self, chain: ChainReport) {
        Report::chain(self, chain);
    }
    fn review_round(&mut self, pr: u64, rounds: u64) {
        Report::review_round(self, pr, rounds);
    }
    fn report_pr(&mut self, pr: PrReport) -> std::io::Result<()> {
        Report::pr(self, pr)
    }
    fn progress(&mut self, message: &str) -> std::io::Result<()> {
        Report::progress(self, message)
    }
    fn tool(&mut self, _: &str) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes `result` to `path` as `mode` says.
pub fn write_result(path: &Path, mode: ResultMode, result: &SkillResult) -> std::io::Result<()> {
    let text = match mode {
        ResultMode::Missing => return Ok(()),
        ResultMode::Malformed => "{\"protocol\": 1, \"prs\": [".to_owned(),
        ResultMode::Write => serde_json::to_string_pretty(result).map_err(std::io::Error::other)?,
    };
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sdd_loop::state::history::PrState;

    #[test]
    fn events_are_lines_and_totals_add_up() {
        let dir = tempfile::tempdir().unwrap();
        let events = dir.path().join("events.jsonl");
        let mut r = Report::new(Some(&events)).unwrap();
        let usage = ModelUsage {
            model: "m".into(),
            tokens_in: 10,
            tokens_out: 1,
            cache_read_tokens: 6,
            cache_write_tokens: 3,
            cache_write_1h_tokens: 1,
        };
        r.usage(&usage).unwrap();
        r.usage(&usage).unwrap();
        r.pr(PrReport {
            number: 3,
            branch: "b".into(),
            head_sha_at_start: Some("a".into()),
            head_sha_at_end: Some("b".into()),
            state: PrState::Open,
            opened: false,
        })
        .unwrap();
        r.pr(PrReport {
            number: 3,
            branch: "b".into(),
            head_sha_at_start: Some("x".into()),
            head_sha_at_end: Some("c".into()),
            state: PrState::Merged,
            opened: false,
        })
        .unwrap();
        r.review_round(3, 1);
        r.review_round(3, 1);
        let result = r.result(Some("done"));
        assert_eq!(result.usage[0].tokens_in, 20);
        assert_eq!(
            (
                result.usage[0].cache_read_tokens,
                result.usage[0].cache_write_tokens,
                result.usage[0].cache_write_1h_tokens
            ),
            (12, 6, 2),
            "cache parts add up like the totals"
        );
        assert_eq!(result.prs.len(), 1);
        assert_eq!(result.prs[0].head_sha_at_start.as_deref(), Some("a"));
        assert_eq!(result.prs[0].head_sha_at_end.as_deref(), Some("c"));
        assert_eq!(result.prs[0].state, PrState::Merged);
        assert_eq!(result.review_rounds[0].rounds, 2);
        let lines: Vec<SkillEvent> = std::fs::read_to_string(&events)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);

        let out = dir.path().join("result.json");
        write_result(&out, ResultMode::Write, &result).unwrap();
        let back: SkillResult =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(back, result);
        write_result(&out, ResultMode::Malformed, &result).unwrap();
        assert!(
            serde_json::from_str::<SkillResult>(&std::fs::read_to_string(&out).unwrap()).is_err()
        );
    }
}
