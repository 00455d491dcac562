//! Issue 19's obedient-model case against its wrapper twin: the history
//! and budget `hook-obedient` (a real Claude Code session, the plugin's
//! hooks beginning and ending each tick) stored equal those of
//! `hook-obedient-wrapper` (the engine running the fake skill) but for
//! spend and head SHAs — the model's commits are not the fake skill's.
//! Times and pids are equal already: the clock is the case's, pids are
//! redacted. Both snapshots are read as stored, so the comparison holds
//! whether or not the real CLI is installed here.

use sdd_harness::cli::find_workspace;
use serde_json::Value;

/// A stored snapshot's JSON (after insta's header).
fn snapshot(name: &str) -> Value {
    let here = std::env::current_dir().expect("a current directory");
    let workspace = find_workspace(&here).expect("the tests run inside the workspace");
    let path = workspace.join(format!("evals/loop/snapshots/{name}.snap"));
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let body = text.splitn(3, "---\n").nth(2).expect("an insta header");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `value` without what may differ: spend and head SHAs.
fn without_spend_and_shas(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|k, _| {
                !(k.starts_with("tokens_")
                    || k.starts_with("dollars_")
                    || k.starts_with("head_sha_"))
            });
            map.values_mut().for_each(without_spend_and_shas);
        }
        Value::Array(items) => items.iter_mut().for_each(without_spend_and_shas),
        _ => {}
    }
}

#[test]
fn the_hooks_record_what_the_wrapper_records_but_spend_and_shas() {
    for kind in ["history", "budget"] {
        let mut hooks = snapshot(&format!("hook-obedient__{kind}"));
        let mut wrapper = snapshot(&format!("hook-obedient-wrapper__{kind}"));
        let spent = hooks
            .pointer("/0/tokens_in_this_iter")
            .or(hooks.get("tokens_in"));
        assert!(
            spent.and_then(Value::as_u64).is_some_and(|n| n > 0),
            "hook-obedient__{kind} records no spend"
        );
        without_spend_and_shas(&mut hooks);
        without_spend_and_shas(&mut wrapper);
        assert_eq!(
            hooks, wrapper,
            "{kind}: hook-obedient differs from its wrapper twin"
        );
    }
}
