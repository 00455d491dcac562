//! Spend read from Claude Code transcripts shaped like the real ones
//! (`tests/fixtures/transcripts/`, described in its README): dedupe of
//! streamed and replayed responses, the window, junk lines, subagents,
//! `auto` and the config-directory rules.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sdd_loop::budget::{Budget, Ceilings};
use sdd_loop::protocol::ModelUsage;
use sdd_loop::rates::RateTable;
use sdd_loop::transcript::{
    ClaudeDirs, Skipped, TokenTotals, TranscriptChoice, TranscriptError, Window, locate, read_spend,
};

const PROJECT: &str = "/home/me/my_app.v2";
const SLUG: &str = "-home-me-my-app-v2";
const SESSION_A: &str = "5f0c2a8e-1b7d-4c3e-9a61-0d2e8b7c4f10.jsonl";
const SESSION_B: &str = "9d4e7b21-6c3a-4f85-b2d0-7e1a5c9f3b62.jsonl";
const SESSION_C: &str = "c3a1e5f0-2d4b-4e6a-8c7d-1f2e3a4b5c6d.jsonl";
const SUBAGENT_B: &str = "9d4e7b21-6c3a-4f85-b2d0-7e1a5c9f3b62/subagents/agent-a7f3c91e.jsonl";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts")
}

fn folder() -> PathBuf {
    fixtures().join("projects").join(SLUG)
}

fn window() -> Window {
    Window {
        from: "2026-11-03T10:00:00Z".parse().unwrap(),
        to: "2026-11-03T10:30:00Z".parse().unwrap(),
    }
}

fn expected_models() -> BTreeMap<String, TokenTotals> {
    BTreeMap::from([
        (
            "claude-haiku-4-5-20251001".to_owned(),
            TokenTotals {
                input: 820,
                output: 210,
                cache_creation: 5_000,
                cache_creation_1h: 0,
                cache_read: 5_000,
            },
        ),
        (
            "claude-opus-4-5-20251101".to_owned(),
            TokenTotals {
                input: 16,
                output: 710,
                cache_creation: 3_000,
                cache_creation_1h: 3_000,
                cache_read: 45_000,
            },
        ),
        (
            "claude-sonnet-4-5-20250929".to_owned(),
            TokenTotals {
                input: 6,
                output: 330,
                cache_creation: 1_600,
                cache_creation_1h: 500,
                cache_read: 42_000,
            },
        ),
    ])
}

const EXPECTED_SKIPPED: Skipped = Skipped {
    malformed: 2,
    foreign: 2,
    other_entries: 14,
    incomplete: 3,
    synthetic: 1,
    outside_window: 7,
    streamed: 3,
    replayed: 2,
};

/// Copies the fixture config directory to a temporary one, so a test can
/// set modification times or add folders.
fn config_copy() -> (tempfile::TempDir, PathBuf) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config");
    copy(&fixtures(), &config);
    (tmp, config)
}

fn touch(path: &Path, offset_secs: u64) {
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(base + Duration::from_secs(offset_secs))
        .unwrap();
}

#[test]
fn each_response_in_the_window_counts_once() {
    let spend = read_spend(&folder().join(SESSION_B), window()).unwrap();
    assert_eq!(spend.by_model, expected_models());
    assert_eq!(spend.responses, 6);
    assert_eq!(spend.skipped, EXPECTED_SKIPPED);
    let files: Vec<(PathBuf, u64)> = spend
        .files
        .iter()
        .map(|f| {
            (
                f.path.strip_prefix(folder()).unwrap().to_owned(),
                f.responses,
            )
        })
        .collect();
    assert_eq!(
        files,
        vec![
            (PathBuf::from(SESSION_B), 3),
            (PathBuf::from(SUBAGENT_B), 2),
            (PathBuf::from(SESSION_A), 1),
            (PathBuf::from(SESSION_C), 0),
        ],
        "the chosen file first; the old session's subagents are not read"
    );
}

#[test]
fn every_line_read_is_counted_or_skipped_for_a_reason() {
    let spend = read_spend(&folder().join(SESSION_B), window()).unwrap();
    let lines: u64 = spend
        .files
        .iter()
        .map(|f| {
            std::fs::read_to_string(&f.path)
                .unwrap()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .count() as u64
        })
        .sum();
    let s = spend.skipped;
    assert_eq!(
        s.malformed
            + s.foreign
            + s.other_entries
            + s.incomplete
            + s.synthetic
            + s.outside_window
            + s.streamed
            + s.replayed
            + spend.responses,
        lines
    );
}

// A resumed session replays earlier turns into a new file; whichever file
// is chosen, a replayed response never counts twice.
#[test]
fn the_original_session_gives_the_same_spend_as_the_resumed_one() {
    let from_a = read_spend(&folder().join(SESSION_A), window()).unwrap();
    let from_b = read_spend(&folder().join(SESSION_B), window()).unwrap();
    assert_eq!(from_a.by_model, from_b.by_model);
    assert_eq!(from_a.skipped, from_b.skipped);
    assert_eq!(from_a.files[0].path, folder().join(SESSION_A));
    assert_eq!(
        from_a.files[0].responses, 2,
        "A3 and A4 first appeared in A"
    );
}

#[test]
fn usage_records_count_cache_tokens_inside_tokens_in() {
    let spend = read_spend(&folder().join(SESSION_B), window()).unwrap();
    assert_eq!(
        spend.usage(),
        vec![
            ModelUsage {
                model: "claude-haiku-4-5-20251001".into(),
                tokens_in: 820 + 5_000 + 5_000,
                tokens_out: 210,
                cache_read_tokens: 5_000,
                cache_write_tokens: 5_000,
                cache_write_1h_tokens: 0,
            },
            ModelUsage {
                model: "claude-opus-4-5-20251101".into(),
                tokens_in: 16 + 3_000 + 45_000,
                tokens_out: 710,
                cache_read_tokens: 45_000,
                cache_write_tokens: 3_000,
                cache_write_1h_tokens: 3_000,
            },
            ModelUsage {
                model: "claude-sonnet-4-5-20250929".into(),
                tokens_in: 6 + 1_600 + 42_000,
                tokens_out: 330,
                cache_read_tokens: 42_000,
                cache_write_tokens: 1_600,
                cache_write_1h_tokens: 500,
            },
        ]
    );
}

#[test]
fn the_spend_is_priced_by_the_rows_of_the_dated_ids() {
    let spend = read_spend(&folder().join(SESSION_B), window()).unwrap();
    let mut budget = Budget::start("2026-11-03T10:00:00Z", Ceilings::default(), "x");
    for u in spend.usage() {
        budget.add_model_tokens(&u.model, &u.tokens());
    }
    let cost = RateTable::built_in().cost(&budget.tokens_by_model);
    // per Mtok: sonnet-4-5 3 / 15, read 0.30, write 3.75, 1 h 6;
    //           opus-4-5 5 / 25, read 0.50, write 6.25, 1 h 10;
    //           haiku-4-5 1 / 5, read 0.10, write 1.25, 1 h 2.
    // sonnet 6×3 + 42,000×0.3 + 1,100×3.75 + 500×6 + 330×15   = 24,693
    // opus   16×5 + 45,000×0.5 + 0 + 3,000×10 + 710×25         = 70,330
    // haiku  820×1 + 5,000×0.1 + 5,000×1.25 + 0 + 210×5        =  8,620
    //                                              ÷ 10⁶ → $0.103643
    assert_eq!(cost.dollars, 0.103643);
    assert!(cost.unknown_models.is_empty());
    assert_eq!(cost.family_notes().len(), 3, "each dated id names its row");
}

#[test]
fn auto_picks_the_newest_transcript_of_the_project() {
    let (tmp, config) = config_copy();
    let dirs = ClaudeDirs {
        config_dir: Some(config.clone()),
        home: tmp.path().join("home"),
    };
    let project_dir = config.join("projects").join(SLUG);
    touch(&project_dir.join(SESSION_A), 30);
    touch(&project_dir.join(SESSION_B), 20);
    touch(&project_dir.join(SESSION_C), 10);
    let chosen = locate(&TranscriptChoice::Auto, &dirs, Path::new(PROJECT)).unwrap();
    assert_eq!(chosen, project_dir.join(SESSION_A));
    touch(&project_dir.join(SESSION_B), 40);
    let chosen = locate(&TranscriptChoice::Auto, &dirs, Path::new(PROJECT)).unwrap();
    assert_eq!(chosen, project_dir.join(SESSION_B));
    let spend = read_spend(&chosen, window()).unwrap();
    assert_eq!(spend.by_model, expected_models());
}

#[test]
fn an_explicit_path_is_taken_as_given() {
    let dirs = ClaudeDirs {
        config_dir: None,
        home: PathBuf::from("/nonexistent-home"),
    };
    let path = folder().join(SESSION_C);
    assert_eq!(
        locate(
            &TranscriptChoice::Path(path.clone()),
            &dirs,
            Path::new(PROJECT)
        )
        .unwrap(),
        path
    );
}

#[test]
fn claude_config_dir_overrides_the_home_directory() {
    let (tmp, config) = config_copy();
    let home = tmp.path().join("home");
    let home_folder = home.join(".claude/projects").join(SLUG);
    std::fs::create_dir_all(&home_folder).unwrap();
    std::fs::write(home_folder.join("from-home.jsonl"), "").unwrap();

    let with_override = ClaudeDirs {
        config_dir: Some(config.clone()),
        home: home.clone(),
    };
    let chosen = locate(&TranscriptChoice::Auto, &with_override, Path::new(PROJECT)).unwrap();
    assert!(
        chosen.starts_with(config.join("projects").join(SLUG)),
        "{chosen:?}"
    );

    let without = ClaudeDirs {
        config_dir: None,
        home,
    };
    let chosen = locate(&TranscriptChoice::Auto, &without, Path::new(PROJECT)).unwrap();
    assert_eq!(chosen, home_folder.join("from-home.jsonl"));
}

#[test]
fn a_project_without_transcripts_names_the_folder_and_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = ClaudeDirs {
        config_dir: Some(tmp.path().to_owned()),
        home: tmp.path().join("home"),
    };
    let err = locate(&TranscriptChoice::Auto, &dirs, Path::new("/srv/other app")).unwrap_err();
    let folder = tmp.path().join("projects/-srv-other-app");
    assert_eq!(
        err.to_string(),
        format!(
            "no Claude Code transcripts for /srv/other app: {} does not exist",
            folder.display()
        )
    );
    assert!(err.help().contains("CLAUDE_CONFIG_DIR"), "{}", err.help());
    assert!(err.help().contains("--transcript PATH"), "{}", err.help());

    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("notes.txt"), "").unwrap();
    let err = locate(&TranscriptChoice::Auto, &dirs, Path::new("/srv/other app")).unwrap_err();
    assert!(
        matches!(err, TranscriptError::NoTranscripts { .. }),
        "{err}"
    );

    let err = locate(&TranscriptChoice::Auto, &dirs, Path::new("relative/app")).unwrap_err();
    assert!(
        matches!(err, TranscriptError::RelativeProject { .. }),
        "{err}"
    );
}

#[test]
fn an_unreadable_transcript_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("gone.jsonl");
    let err = read_spend(&path, window()).unwrap_err();
    assert!(matches!(err, TranscriptError::Read { .. }), "{err}");
    assert!(
        err.to_string().starts_with(&format!(
            "cannot read the Claude Code transcript {}",
            path.display()
        )),
        "{err}"
    );
    // A directory where a transcript should be cannot be read either.
    let dir = tmp.path().join("dir.jsonl");
    std::fs::create_dir(&dir).unwrap();
    let err = read_spend(&dir, window()).unwrap_err();
    assert!(err.to_string().contains("dir.jsonl"), "{err}");
}

// Claude Code cuts a slug longer than 200 characters and appends a hash
// whose algorithm changed between builds; the folder is found by prefix.
#[test]
fn a_long_project_path_is_found_by_its_cut_slug() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = ClaudeDirs {
        config_dir: Some(tmp.path().to_owned()),
        home: tmp.path().join("home"),
    };
    let project = PathBuf::from(format!("/work/{}", "deep_dir/".repeat(30)));
    let slug = sdd_loop::transcript::project_slug(&project);
    assert!(slug.len() > 200);
    let cut = &slug[..200];
    let folder = tmp.path().join("projects").join(format!("{cut}-1k2j3h"));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("s.jsonl"), "").unwrap();
    assert_eq!(dirs.project_dir(&project).unwrap(), folder);

    std::fs::create_dir_all(tmp.path().join("projects").join(format!("{cut}-zz9"))).unwrap();
    let err = dirs.project_dir(&project).unwrap_err();
    assert!(
        matches!(err, TranscriptError::AmbiguousProjectFolder { ref candidates, .. } if candidates.len() == 2),
        "{err}"
    );
}
