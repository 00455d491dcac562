//! `--agent claude` with `fake-claude` on PATH reproduces a wrapper run's
//! budget to the token (issue: real agents as the wrapped skill, "Done
//! when"): the same case — world, ticks, actions, answers — is run once
//! with the fake skill reporting its usage through the protocol and once
//! with fake-claude streaming it, and the two budget.json files must agree
//! on every token, every model, every dollar and every PR.

mod support;

use std::collections::BTreeMap;

use sdd_harness::driving::Options;
use sdd_harness::driving::runner;
use sdd_harness::loading::case::Case;
use sdd_harness::world::bins::Binaries;
use serde_json::Value;

fn options() -> Options {
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    let binaries = Binaries::find(&std::env::current_exe().unwrap(), &vars, None)
        .unwrap_or_else(|e| panic!("{e}\nhelp: {}", e.help()));
    Options {
        fixtures: support::fixtures(),
        workspace: support::workspace(),
        binaries,
        path: std::env::var_os("PATH").unwrap_or_default(),
        keep_sandbox: false,
        sandbox_parent: sdd_harness::world::sandbox::ram_dir(),
        worlds: None,
        clis: sdd_harness::world::clis::Clis::default(),
    }
}

/// The wrapper case `text` as a `driver: claude` case: the same ticks,
/// without the protocol-only `summary` lines.
fn as_claude(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("summary:"))
        .flat_map(|l| {
            let extra = l.starts_with("skill: ").then_some("driver: claude");
            std::iter::once(l).chain(extra)
        })
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .replacen("\nid: ", "\nid: claude-twin-of-", 1)
}

fn budget_of(case: &Case, opts: &Options) -> Value {
    let run = runner::run(case, opts).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.record.aborted, None, "{}", case.id());
    run.record
        .budget
        .unwrap_or_else(|| panic!("{}: no budget.json", case.id()))
}

/// The fields that say what was spent and touched.
const ACCOUNTED: [&str; 8] = [
    "/tokens_in",
    "/tokens_out",
    "/tokens_by_model",
    "/dollars_estimate",
    "/rate_table_source",
    "/prs_touched",
    "/iterations_used",
    "/stopped",
];

#[test]
fn claude_reproduces_the_wrapper_runs_budget_to_the_token() {
    let opts = options();
    for name in [
        "c4-pr-budget",
        "c8-cost-budget",
        "c9-crash-late-reattach",
        "agent-cache-priced-exactly",
    ] {
        let path = support::workspace().join(format!("evals/loop/{name}.yaml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let (text, wrapper_text) = if text.contains("\ndriver: claude\n") {
            (text.clone(), text.replace("\ndriver: claude\n", "\n"))
        } else {
            (as_claude(&text), text.clone())
        };
        let wrapper = Case::parse(&path, &wrapper_text, &opts.fixtures)
            .unwrap_or_else(|e| panic!("{}", e.render()));
        let claude =
            Case::parse(&path, &text, &opts.fixtures).unwrap_or_else(|e| panic!("{}", e.render()));
        let (a, b) = (budget_of(&wrapper, &opts), budget_of(&claude, &opts));
        for field in ACCOUNTED {
            assert_eq!(
                a.pointer(field),
                b.pointer(field),
                "{name}: {field} differs between the wrapper run and the claude run"
            );
        }
        assert_ne!(
            a.pointer("/tokens_in"),
            Some(&Value::from(0)),
            "{name} spends"
        );
    }
}
