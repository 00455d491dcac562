//! `sdd-evals docs`: the reader accepts a complete document in another
//! author's layout, names what an incomplete one leaves out, and reports
//! every statement that disagrees with the engine at `file:line`. The
//! plugin checkouts are in `tests/docs/`; each report is a snapshot.

use std::collections::BTreeMap;
use std::path::Path;

use rstest::rstest;
use sdd_harness::cli::{Env, exit, find_workspace, main_with};
use sdd_harness::judging::docs::{self, compare, engine, markdown::Doc};
use sdd_loop::state::paths::Skill;

fn workspace() -> std::path::PathBuf {
    find_workspace(&std::env::current_dir().unwrap()).expect("the tests run inside the workspace")
}

fn report(root: &str, skill: Skill) -> docs::Report {
    let shown = Path::new("harness/tests/docs").join(root);
    docs::check(
        &workspace().join(&shown),
        &shown,
        skill,
        &engine::Cli::read(),
    )
    .expect("the fixture documents exist")
}

#[test]
fn this_repositorys_skills_agree_with_the_engine() {
    for skill in [Skill::Work, Skill::Review] {
        let r = docs::check(&workspace(), Path::new("."), skill, &engine::Cli::read()).unwrap();
        assert!(r.passed(), "{}", r.render());
        assert!(r.flags >= 8 && r.gates >= 1, "{}", r.render());
    }
}

#[test]
fn a_complete_document_in_another_layout_passes() {
    for skill in [Skill::Work, Skill::Review] {
        let r = report("complete", skill);
        assert!(r.passed(), "{}", r.render());
    }
    let work = report("complete", Skill::Work);
    assert_eq!((work.flags, work.gates, work.exits), (9, 6, 1));
}

#[rstest]
#[case::incomplete("incomplete")]
#[case::drifted("drifted")]
fn every_difference_is_named_at_its_line(#[case] root: &str) {
    let text: String = [Skill::Work, Skill::Review]
        .into_iter()
        .map(|s| report(root, s).render())
        .collect();
    assert!(
        text.lines().filter(|l| !l.starts_with("    ")).all(|l| l
            .starts_with(&format!("harness/tests/docs/{root}/skills/"))
            && l.split(':')
                .nth(1)
                .is_some_and(|n| n.parse::<usize>().is_ok())),
        "every difference starts with file:line:\n{text}"
    );
    insta::assert_snapshot!(root, text);
}

fn doc(text: &str) -> Doc {
    Doc::parse(Path::new("SKILL.md"), text)
}

const WORK: &str = "\
# /sdd:work

## Loop mode: `/sdd:work --loop` (ADR-0028)
";

#[test]
fn a_command_the_engine_lacks_fails_and_one_it_gains_passes() {
    let text = format!(
        "{WORK}\nEach tick: `sdd-loop work begin --loop --holder-pid 1`, then `sdd-loop work finish`.\n"
    );
    let today = compare::compare(&doc(&text), Skill::Work, &engine::Cli::read());
    let said = today.render();
    assert!(
        said.contains("command sdd-loop work finish: the engine has no such command"),
        "{said}"
    );

    // An engine that has grown `work begin` (and nothing called `finish`):
    // the same walk through clap finds it.
    let grown = clap::Command::new("sdd-loop").subcommand(
        clap::Command::new("work")
            .arg(
                clap::Arg::new("loop")
                    .long("loop")
                    .action(clap::ArgAction::SetTrue),
            )
            .subcommand(
                clap::Command::new("begin")
                    .arg(
                        clap::Arg::new("loop")
                            .long("loop")
                            .action(clap::ArgAction::SetTrue),
                    )
                    .arg(clap::Arg::new("holder-pid").long("holder-pid")),
            ),
    );
    let later = compare::compare(&doc(&text), Skill::Work, &engine::Cli::from_command(grown));
    let said = later.render();
    assert!(!said.contains("work begin"), "{said}");
    assert!(
        said.contains("command sdd-loop work finish: the engine has no such command (its subcommands are begin)"),
        "{said}"
    );
}

fn call(cwd: &Path, args: &[&str]) -> (u8, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = {
        let mut env = Env {
            stdout: &mut out,
            stderr: &mut err,
            vars: BTreeMap::new(),
            cwd: cwd.to_path_buf(),
            exe: std::env::current_exe().unwrap(),
            stderr_is_terminal: false,
        };
        main_with(
            std::iter::once("sdd-evals")
                .chain(args.iter().copied())
                .map(Into::into),
            &mut env,
        )
    };
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn the_docs_command_exits_by_what_it_found() {
    let root = workspace();
    let (code, out, err) = call(&root, &["docs"]);
    assert_eq!(code, exit::OK, "{out}{err}");
    assert!(
        out.starts_with("skills/work/SKILL.md: as the engine has it"),
        "{out}"
    );

    let (code, out, err) = call(
        &root,
        &[
            "docs",
            "--plugin-root",
            "harness/tests/docs/drifted",
            "--skill",
            "review",
        ],
    );
    assert_eq!(code, exit::FAILED, "{out}{err}");
    assert!(
        out.contains("harness/tests/docs/drifted/skills/review/SKILL.md:14: flag --lock"),
        "{out}"
    );
    assert!(err.contains("difference(s)"), "{err}");

    let (code, _, err) = call(&root, &["docs", "--plugin-root", "nowhere"]);
    assert_eq!(code, exit::USAGE);
    assert!(
        err.contains("error: cannot read nowhere/skills/work/SKILL.md"),
        "{err}"
    );
    assert!(err.contains("help: a plugin checkout holds"), "{err}");
}
