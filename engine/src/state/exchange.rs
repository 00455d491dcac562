//! The files a tick shares with its wrapped skill, one directory
//! per iteration under `.sdd/loop/{skill}.exchange/`: `request.json`
//! (written by the engine), `result.json` (written by the skill) and
//! `events.jsonl` (appended by the skill as work happens).
//!
//! [`fold_events`] turns a progress stream into the result it adds up to:
//! the recovery path for a tick whose engine was killed before it could
//! read the skill's result.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::state::budget::ModelTokens;
use crate::state::files::{self, Durability, FileError};
use crate::state::paths::StatePaths;
use crate::state::protocol::{
    Failure, ModelUsage, PROTOCOL_VERSION, PrReport, SkillEvent, SkillRequest, SkillResult,
    WorktreeReport,
};

/// One iteration's exchange directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub dir: PathBuf,
}

impl Exchange {
    pub fn for_iteration(paths: &StatePaths, iteration: u64) -> Self {
        Self {
            dir: paths.exchange_dir().join(iteration.to_string()),
        }
    }

    pub fn request_path(&self) -> PathBuf {
        self.dir.join("request.json")
    }

    pub fn result_path(&self) -> PathBuf {
        self.dir.join("result.json")
    }

    pub fn events_path(&self) -> PathBuf {
        self.dir.join("events.jsonl")
    }

    /// A fresh directory (0700) holding only the request. The request is
    /// not synced to disk: only the skill of this tick reads it, and a
    /// tick after a power failure prepares the directory afresh.
    pub fn prepare(&self, request: &SkillRequest) -> Result<(), FileError> {
        if let Some(parent) = self.dir.parent() {
            files::ensure_private_dir(parent)?;
        }
        self.remove()?;
        files::ensure_private_dir(&self.dir)?;
        let mut json = serde_json::to_vec_pretty(request).expect("requests serialise");
        json.push(b'\n');
        files::write_atomic_with(&self.request_path(), &json, Durability::Transient)
    }

    /// Removes the directory and what the skill left in it.
    pub fn remove(&self) -> Result<(), FileError> {
        match std::fs::symlink_metadata(&self.dir) {
            Ok(meta) if meta.file_type().is_symlink() => Err(FileError::Symlink {
                path: self.dir.clone(),
            }),
            Ok(_) => std::fs::remove_dir_all(&self.dir).map_err(|source| FileError::Io {
                action: "remove",
                path: self.dir.clone(),
                source,
            }),
            Err(_) => Ok(()),
        }
    }

    /// Size of the events stream (progress for the stall watchdog).
    pub fn events_len(&self) -> u64 {
        std::fs::metadata(self.events_path())
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// The skill's result, or why there is none.
    pub fn read_result(&self) -> Result<SkillResult, String> {
        let path = self.result_path();
        let bytes = match files::read_bytes(&path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(format!("no result file at {}", path.display())),
            Err(e) => return Err(e.to_string()),
        };
        let result: SkillResult = serde_json::from_slice(&bytes)
            .map_err(|e| format!("invalid result file {}: {e}", path.display()))?;
        if result.protocol != PROTOCOL_VERSION {
            return Err(format!(
                "result file {} speaks protocol {}, the engine speaks {PROTOCOL_VERSION}",
                path.display(),
                result.protocol
            ));
        }
        Ok(result)
    }

    /// The progress events; lines that do not parse (a torn last line, for
    /// one) are counted and skipped.
    pub fn read_events(&self) -> (Vec<SkillEvent>, usize) {
        let Ok(Some(bytes)) = files::read_bytes_shared(&self.events_path()) else {
            return (Vec::new(), 0);
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut skipped = 0;
        let events = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| match serde_json::from_str(l) {
                Ok(e) => Some(e),
                Err(_) => {
                    skipped += 1;
                    None
                }
            })
            .collect();
        (events, skipped)
    }
}

/// The result a stream of progress events adds up to.
pub fn fold_events(events: &[SkillEvent]) -> SkillResult {
    let mut usage: BTreeMap<String, ModelTokens> = BTreeMap::new();
    let mut prs: Vec<PrReport> = Vec::new();
    let mut result = SkillResult {
        protocol: PROTOCOL_VERSION,
        ..Default::default()
    };
    for event in events {
        match event {
            SkillEvent::Usage {
                model,
                tokens_in,
                tokens_out,
                cache_read_tokens,
                cache_write_tokens,
                cache_write_1h_tokens,
            } => usage.entry(model.clone()).or_default().add(&ModelTokens {
                tokens_in: *tokens_in,
                tokens_out: *tokens_out,
                cache_read_tokens: *cache_read_tokens,
                cache_write_tokens: *cache_write_tokens,
                cache_write_1h_tokens: *cache_write_1h_tokens,
            }),
            SkillEvent::Pr {
                number,
                branch,
                head_sha,
                state,
                opened,
            } => match prs.iter_mut().find(|p| p.number == *number) {
                Some(p) => {
                    p.head_sha_at_end = head_sha.clone().or(p.head_sha_at_end.take());
                    p.state = *state;
                    p.opened |= opened;
                }
                None => prs.push(PrReport {
                    number: *number,
                    branch: branch.clone(),
                    head_sha_at_start: if *opened { None } else { head_sha.clone() },
                    head_sha_at_end: head_sha.clone(),
                    state: *state,
                    opened: *opened,
                }),
            },
            // Counts are the skill's word: absurd ones saturate, never
            // overflow.
            SkillEvent::AgentDispatched { count } => {
                result.agents_dispatched = result.agents_dispatched.saturating_add(*count);
            }
            SkillEvent::CommentPushed { count, .. } => {
                result.comments_pushed = result.comments_pushed.saturating_add(*count);
            }
            SkillEvent::MergeAttempted { .. } => {
                result.merges_attempted = result.merges_attempted.saturating_add(1);
            }
            SkillEvent::Worktree {
                path,
                branch,
                head_sha,
            } => {
                result.worktrees.retain(|w| &w.path != path);
                result.worktrees.push(WorktreeReport {
                    path: path.clone(),
                    branch: branch.clone(),
                    head_sha: head_sha.clone(),
                });
            }
            SkillEvent::Failure { target, root_cause } => result.failures.push(Failure {
                target: target.clone(),
                root_cause: root_cause.clone(),
            }),
            SkillEvent::Progress { .. } | SkillEvent::ClaimLost { .. } => {}
        }
    }
    result.usage = usage
        .into_iter()
        .map(|(model, tokens)| ModelUsage::from_tokens(model, tokens))
        .collect();
    result.prs = prs;
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::history::PrState;
    use crate::state::paths::Skill;

    fn request() -> SkillRequest {
        SkillRequest {
            protocol: PROTOCOL_VERSION,
            skill: Skill::Work,
            iteration: 1,
            repository: None,
            issues: vec![],
            prs: vec![],
            max_new_prs: Some(1),
            no_chain: false,
            dry_run: false,
        }
    }

    #[test]
    fn prepare_writes_request_and_clears_leftovers() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(tmp.path(), Skill::Work, None);
        let ex = Exchange::for_iteration(&paths, 1);
        ex.prepare(&request()).unwrap();
        std::fs::write(ex.result_path(), "{}").unwrap();
        ex.prepare(&request()).unwrap();
        assert!(!ex.result_path().exists());
        let back: SkillRequest =
            serde_json::from_slice(&std::fs::read(ex.request_path()).unwrap()).unwrap();
        assert_eq!(back, request());
        assert_eq!(
            ex.read_result().unwrap_err(),
            format!("no result file at {}", ex.result_path().display())
        );
    }

    #[test]
    fn invalid_and_wrong_protocol_results_say_why() {
        let tmp = tempfile::tempdir().unwrap();
        let ex = Exchange {
            dir: tmp.path().to_path_buf(),
        };
        std::fs::write(ex.result_path(), "{\"protocol\": 1, \"bogus\": 2}").unwrap();
        assert!(
            ex.read_result()
                .unwrap_err()
                .contains("unknown field `bogus`")
        );
        std::fs::write(ex.result_path(), "{\"protocol\": 9}").unwrap();
        assert!(ex.read_result().unwrap_err().contains("protocol 9"));
    }

    #[test]
    fn events_fold_into_a_result_and_torn_lines_are_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let ex = Exchange {
            dir: tmp.path().to_path_buf(),
        };
        std::fs::write(
            ex.events_path(),
            concat!(
                "{\"event\":\"usage\",\"model\":\"m\",\"tokens_in\":10,\"tokens_out\":1}\n",
                "{\"event\":\"pr\",\"number\":5,\"branch\":\"f/5\",\"head_sha\":\"a1\",\"state\":\"open\",\"opened\":true}\n",
                "{\"event\":\"usage\",\"model\":\"m\",\"tokens_in\":5,\"tokens_out\":2,\"cache_read_tokens\":4}\n",
                "{\"event\":\"pr\",\"number\":5,\"branch\":\"f/5\",\"head_sha\":\"a2\",\"state\":\"open\"}\n",
                "{\"event\":\"agent_dispatched\",\"count\":2}\n",
                "{\"event\":\"comment_pushed\",\"pr\":5}\n",
                "{\"event\":\"merge_attempted\",\"pr\":5}\n",
                "{\"event\":\"failure\",\"target\":\"#3\",\"root_cause\":\"tests\"}\n",
                "{\"event\":\"usa"
            ),
        )
        .unwrap();
        let (events, skipped) = ex.read_events();
        assert_eq!(skipped, 1);
        let r = fold_events(&events);
        assert_eq!(
            r.usage,
            vec![ModelUsage {
                model: "m".into(),
                tokens_in: 15,
                tokens_out: 3,
                cache_read_tokens: 4,
                ..ModelUsage::default()
            }]
        );
        assert_eq!(r.prs.len(), 1);
        assert_eq!(r.prs[0].head_sha_at_end.as_deref(), Some("a2"));
        assert!(r.prs[0].opened);
        assert_eq!(r.prs[0].state, PrState::Open);
        assert_eq!(
            (r.agents_dispatched, r.comments_pushed, r.merges_attempted),
            (2, 1, 1)
        );
        assert_eq!(r.failures.len(), 1);
    }
}
