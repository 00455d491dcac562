use serde_json::json;

use super::*;

fn open(via: &str, body: Body) -> Action {
    Action::OpenPr {
        via: via.into(),
        body,
    }
}

fn text(b: &str) -> Body {
    Body::Text(b.into())
}

#[test]
fn gh_pr_create_with_each_way_of_giving_the_body() {
    assert_eq!(
        in_bash("gh pr create --title 'Add login' --body 'Closes #1'"),
        vec![open("gh pr create", text("Closes #1"))]
    );
    assert_eq!(
        in_bash("gh pr create -t x -b\"Closes #2\" -H feature/2"),
        vec![open("gh pr create", text("Closes #2"))]
    );
    assert_eq!(
        in_bash("gh pr create --body=Fixes\\ #3"),
        vec![open("gh pr create", text("Fixes #3"))]
    );
    assert_eq!(
        in_bash("gh pr create -F pr.md"),
        vec![open("gh pr create", Body::File("pr.md".into()))]
    );
    assert!(matches!(
        &in_bash("gh pr create --fill")[..],
        [Action::OpenPr { body: Body::Unknown(why), .. }] if why.contains("--fill")
    ));
    assert!(matches!(
        &in_bash("gh -R acme/app pr create --title x")[..],
        [Action::OpenPr { body: Body::Unknown(why), .. }] if why == "no --body"
    ));
    assert_eq!(in_bash("gh pr create --dry-run --title x --body y"), vec![]);
}

#[test]
fn a_compound_line_lists_every_action_in_order() {
    assert_eq!(
        in_bash(
            "cd ../wt-1 && git push -u origin feature/1-login && gh pr create --title 'Login' --body 'Closes #1' && gh pr create --title b --body 'Closes #2'"
        ),
        vec![
            Action::Push {
                dir: None,
                remote: Some("origin".into()),
                branches: Some(vec!["feature/1-login".into()]),
            },
            open("gh pr create", text("Closes #1")),
            open("gh pr create", text("Closes #2")),
        ]
    );
}

#[test]
fn wrappers_subshells_and_nested_shells_are_looked_through() {
    for line in [
        "GH_TOKEN=x gh pr merge 12 --squash",
        "env -u FOO GH_TOKEN=x gh pr merge 12",
        "timeout 30 gh pr merge 12",
        "sudo -u bot gh pr merge 12",
        "bash -c 'gh pr merge 12 --merge'",
        "sh -ec \"cd x && gh pr merge 12\"",
        "echo $(gh pr merge 12)",
        "(cd x; gh pr merge '#12')",
        "/usr/local/bin/gh pr merge https://github.com/acme/app/pull/12",
        "eval gh pr merge 12",
    ] {
        assert_eq!(
            in_bash(line),
            vec![Action::Merge {
                via: "gh pr merge".into(),
                pr: Some(12)
            }],
            "{line}"
        );
    }
    assert_eq!(
        in_bash("gh pr merge feature/x"),
        vec![Action::Merge {
            via: "gh pr merge".into(),
            pr: None
        }]
    );
    assert_eq!(in_bash("gh pr merge 12 --disable-auto"), vec![]);
}

#[test]
fn gh_api_calls_by_method_and_path() {
    assert_eq!(
        in_bash(
            "gh api repos/acme/app/pulls -f title=x -f head=feature/1 -f base=main -f 'body=Closes #1'"
        ),
        vec![open("gh api", text("Closes #1"))]
    );
    assert_eq!(
        in_bash("gh api /repos/{owner}/{repo}/pulls --input pr.json"),
        vec![open("gh api", Body::JsonFile("pr.json".into()))]
    );
    assert_eq!(in_bash("gh api repos/acme/app/pulls"), vec![], "a GET");
    assert_eq!(
        in_bash("gh api -X PUT repos/acme/app/pulls/7/merge"),
        vec![Action::Merge {
            via: "gh api".into(),
            pr: Some(7)
        }]
    );
    assert_eq!(
        in_bash("gh api --method POST repos/acme/app/pulls/7/merge"),
        vec![Action::Merge {
            via: "gh api".into(),
            pr: Some(7)
        }]
    );
    assert_eq!(
        in_bash("gh api repos/acme/app/pulls/7/reviews -f event=APPROVE"),
        vec![Action::Review {
            via: "gh api".into(),
            pr: Some(7)
        }]
    );
    assert_eq!(
        in_bash("gh api repos/acme/app/pulls/7/comments -f body=hi"),
        vec![],
        "a review comment is not a review"
    );
    assert_eq!(
        in_bash(
            "gh api graphql -f query='mutation { mergePullRequest(input: {pullRequestId: \"X\"}) { clientMutationId } }'"
        ),
        vec![Action::Merge {
            via: "gh api (GraphQL mergePullRequest)".into(),
            pr: None
        }]
    );
    assert_eq!(
        in_bash("gh api graphql -f query='query { viewer { login } }'"),
        vec![]
    );
}

#[test]
fn curl_against_the_api_is_recognised() {
    // The measured case: a PR opened with curl and never reported.
    assert_eq!(
        in_bash(
            r#"curl -sS --fail -X POST -H "Authorization: Bearer $TOKEN" -d "{\"title\":\"x\",\"head\":\"feature/$n\",\"base\":\"main\",\"body\":\"Closes #$n\"}" "$SDD_LOOP_TRACKER_URL/repos/$SDD_LOOP_REPO/pulls""#
        ),
        vec![open("curl", text("Closes #$n"))],
        "a URL and a repository behind variables: the path still shows"
    );
    assert_eq!(
        in_bash(
            r#"curl -sS -d '{"title":"x","head":"feature/1","base":"main","body":"Closes #1"}' http://127.0.0.1:4567/repos/acme/app/pulls"#
        ),
        vec![open("curl", text("Closes #1"))]
    );
    assert_eq!(
        in_bash("curl -X PUT https://api.github.com/repos/acme/app/pulls/3/merge"),
        vec![Action::Merge {
            via: "curl".into(),
            pr: Some(3)
        }]
    );
    assert_eq!(
        in_bash("curl https://api.github.com/repos/acme/app/pulls?state=open"),
        vec![]
    );
}

#[test]
fn git_push_names_its_remote_and_branches() {
    assert_eq!(
        in_bash("git -C ../wt push origin HEAD:refs/heads/feature/2 +feature/3"),
        vec![Action::Push {
            dir: Some("../wt".into()),
            remote: Some("origin".into()),
            branches: Some(vec!["feature/2".into(), "feature/3".into()]),
        }]
    );
    assert_eq!(
        in_bash("git push"),
        vec![Action::Push {
            dir: None,
            remote: None,
            branches: Some(vec![]),
        }]
    );
    assert_eq!(
        in_bash("git push --all origin"),
        vec![Action::Push {
            dir: None,
            remote: Some("origin".into()),
            branches: None,
        }]
    );
    for quiet in [
        "git push --delete origin old",
        "git push origin :old",
        "git push --dry-run origin x",
        "git push --tags",
        "git status",
    ] {
        let found = in_bash(quiet);
        assert!(
            found.is_empty()
                || found
                    == vec![Action::Push {
                        dir: None,
                        remote: Some("origin".into()),
                        branches: Some(vec![])
                    }],
            "{quiet}: {found:?}"
        );
    }
}

#[test]
fn begin_is_recognised_and_everything_else_is_not() {
    assert_eq!(
        in_bash("sdd-loop work begin --loop --json"),
        vec![Action::Begin { skill: Skill::Work }]
    );
    assert_eq!(in_bash("sdd-loop work end --transcript auto"), vec![]);
    for harmless in [
        "gh pr list",
        "gh pr view 3",
        "echo gh pr create",
        "cat <<EOF\ngh pr merge 1\nEOF",
        "grep -r 'gh pr create' .",
        "cargo test",
        "",
    ] {
        assert_eq!(in_bash(harmless), vec![], "{harmless}");
    }
}

#[test]
fn github_mcp_tools_by_name_on_any_server() {
    assert_eq!(
        recognise(
            "mcp__github__create_pull_request",
            &json!({"owner": "acme", "repo": "app", "title": "x", "head": "f", "base": "main", "body": "Closes #4"})
        ),
        vec![open("mcp__github__create_pull_request", text("Closes #4"))]
    );
    assert_eq!(
        recognise(
            "mcp__plugin_github_github__merge_pull_request",
            &json!({"owner": "acme", "repo": "app", "pullNumber": 9})
        ),
        vec![Action::Merge {
            via: "mcp__plugin_github_github__merge_pull_request".into(),
            pr: Some(9)
        }]
    );
    assert_eq!(
        recognise(
            "mcp__github__pull_request_review_write",
            &json!({"method": "create", "pullNumber": "9", "event": "APPROVE"})
        ),
        vec![Action::Review {
            via: "mcp__github__pull_request_review_write".into(),
            pr: Some(9)
        }]
    );
    assert_eq!(
        recognise("mcp__github__get_pull_request", &json!({"pullNumber": 9})),
        vec![]
    );
    assert_eq!(recognise("Read", &json!({"file_path": "x"})), vec![]);
}

#[test]
fn the_skill_tool_running_a_loop_skill_with_loop_is_recognised() {
    let skill = |skill: Skill, name: &str, args: &str| Action::LoopSkill {
        skill,
        name: name.into(),
        args: args.into(),
    };
    assert_eq!(
        recognise(
            "Skill",
            &json!({"skill": "sdd-loop:work", "args": "--loop --max-iterations 2"})
        ),
        vec![skill(
            Skill::Work,
            "sdd-loop:work",
            "--loop --max-iterations 2"
        )]
    );
    assert_eq!(
        recognise(
            "Skill",
            &json!({"skill": "/sdd:review", "args": " --pr 142 --loop "})
        ),
        vec![skill(Skill::Review, "sdd:review", "--pr 142 --loop")]
    );
    for input in [
        json!({"skill": "sdd-loop:work"}),
        json!({"skill": "sdd:work", "args": "--max-prs 1"}),
        json!({"skill": "sdd:work", "args": "--loopy"}),
        json!({"skill": "sdd:plan", "args": "--loop"}),
        json!({"skill": "loop", "args": "/sdd:work --loop"}),
        json!({"args": "--loop"}),
    ] {
        assert_eq!(recognise("Skill", &input), vec![], "{input}");
    }
}
