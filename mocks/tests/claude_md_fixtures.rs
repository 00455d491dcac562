//! The `fixtures/claude-md/` files mean to the engine what their names
//! say: read here with the engine's own parsers, so a drift between the
//! fixtures and `claude_md.rs`, `rates.rs` or `redact.rs` fails here first.

use std::path::{Path, PathBuf};

use sdd_loop::rules::claude_md::ClaudeMd;
use sdd_loop::rules::rates::{RateSource, RateTable};
use sdd_loop::rules::redact::Redactor;

fn load(name: &str) -> ClaudeMd {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/claude-md")
        .join(name);
    ClaudeMd::load(&path).unwrap()
}

#[test]
fn no_sdd_config_means_built_in_rates_no_project_redaction_no_agents() {
    let md = load("no-sdd-config.md");
    let rates = RateTable::from_claude_md(&md).unwrap();
    assert_eq!(rates.source, RateSource::BuiltIn);
    assert_eq!(Redactor::from_claude_md(&md).unwrap().project_patterns(), 0);
    assert!(md.agent_logins().is_empty());
}

#[test]
fn nested_and_sibling_rate_tables() {
    for name in [
        "loop-cost-rates.md",
        "loop-cost-rates-sibling.md",
        "full-config.md",
    ] {
        let rates = RateTable::from_claude_md(&load(name)).unwrap();
        assert_eq!(rates.source, RateSource::ClaudeMd, "{name}");
        let opus = rates.rate("claude-opus-4-7").unwrap();
        assert_eq!(
            (opus.input, opus.output),
            (15.0, 75.0),
            "{name}: not the fenced example"
        );
    }
    let nested = RateTable::from_claude_md(&load("loop-cost-rates.md")).unwrap();
    assert!(nested.rate("fake-cheap-model").is_some());
    assert!(
        nested.rate("not").is_none(),
        "the table outside the block is ignored"
    );
}

#[test]
fn logging_patterns_redact_after_the_built_in_rules() {
    let redactor = Redactor::from_claude_md(&load("loop-logging.md")).unwrap();
    assert_eq!(redactor.project_patterns(), 3);
    // The file's own `ghp_` pattern is shadowed: the built-in GitHub-token
    // rule runs first and names the kind.
    let token = format!("ghp_{}", "a".repeat(36));
    assert_eq!(
        redactor.apply(&format!(
            "Issue for Customer-42 leaked {token} on acme-internal.example"
        )),
        "Issue for [REDACTED] leaked [REDACTED:github-token] on [HOST]"
    );
}

#[test]
fn agent_logins_bullets() {
    assert_eq!(
        load("agent-logins.md").agent_logins(),
        vec!["sdd-worker", "sdd-responder", "sdd-reviewer"]
    );
    assert_eq!(
        load("full-config.md").agent_logins(),
        vec!["sdd-worker", "sdd-responder"]
    );
}
