//! Unit tests of `gates.rs`.

use super::*;

#[test]
fn exact_contract_questions() {
    assert_eq!(
        Question::backlog_drift().text,
        "Backlog changed since last iteration. Re-propose the next batch?"
    );
    assert_eq!(
        Question::ambiguous_criteria(149).text,
        "Issue #149 has ambiguous criteria. Skip, escalate, or proceed with my best interpretation?"
    );
    assert_eq!(
        Question::post_feedback_merge(142).text,
        "Responder addressed human feedback on PR #142. Merge now or hold for human re-review?"
    );
    assert_eq!(
        Question::force_unlock().text,
        "Force-unlock previous iteration's lock? This may corrupt in-flight work."
    );
    assert_eq!(
        Question::repeated_failure("#7", "tests failed").text,
        "Issue/PR #7 failed twice with: tests failed. Skip, retry once more, or stop the loop?"
    );
    assert_eq!(
        Question::resume_divergence(142).text,
        "PR #142 has diverged since the prior iteration crashed — re-attach, skip, or stop the loop?"
    );
}

#[test]
fn exact_options() {
    let opts: Vec<_> = GateName::ALL
        .iter()
        .map(|g| g.options().join(","))
        .collect();
    assert_eq!(
        opts,
        [
            "yes,no,stop",
            "re-attach,skip,stop",
            "re-propose,continue,stop",
            "skip,retry,stop",
            "skip,escalate,proceed,stop",
            "continue,raise,stop",
            "merge,hold,stop"
        ]
    );
}

fn t(dim: Dimension, used: f64, max: f64) -> Tripped {
    Tripped { dim, used, max }
}

#[test]
fn budget_prompt_single_and_batched() {
    assert_eq!(
        Question::budget_escalation(&[t(Dimension::Iterations, 4.0, 5.0)]).text,
        "Approaching iterations (4/5). Continue, raise ceiling, or stop?"
    );
    assert_eq!(
        Question::budget_escalation(&[
            t(Dimension::Iterations, 4.0, 5.0),
            t(Dimension::Minutes, 49.0, 60.0),
            t(Dimension::Dollars, 21.0, 25.0),
        ])
        .text,
        "Approaching iterations (4/5), minutes (49/60), and dollars ($21.00/$25.00). Continue, raise ceiling(s), or stop?"
    );
    assert_eq!(
        Question::budget_escalation(&[
            t(Dimension::Prs, 16.0, 20.0),
            t(Dimension::Minutes, 49.0, 60.0),
        ])
        .text,
        "Approaching PRs (16/20) and minutes (49/60). Continue, raise ceiling(s), or stop?"
    );
}

#[test]
fn answers_are_validated_against_options() {
    assert_eq!(
        parse_answer(GateName::BacklogDrift, "Continue")
            .unwrap()
            .option,
        "continue"
    );
    assert!(
        parse_answer(GateName::BacklogDrift, "maybe")
            .unwrap_err()
            .contains("re-propose")
    );
    assert!(parse_answer(GateName::BacklogDrift, "continue now").is_err());
    let raise = parse_answer(
        GateName::BudgetEscalation,
        "raise max_iterations=10 dollars=$40",
    )
    .unwrap();
    assert_eq!(
        raise.raises,
        vec![(Dimension::Iterations, 10.0), (Dimension::Dollars, 40.0)]
    );
    assert_eq!(raise.recorded(), "raise max_iterations=10 max_dollars=40");
    assert!(parse_answer(GateName::BudgetEscalation, "raise").is_err());
    assert!(parse_answer(GateName::BudgetEscalation, "raise speed=2").is_err());
}

#[test]
fn answer_flag_parses_and_suggests() {
    let f: AnswerFlag = "backlog-drift=continue".parse().unwrap();
    assert_eq!(f.gate, GateName::BacklogDrift);
    let err = "backlog-drfit=continue".parse::<AnswerFlag>().unwrap_err();
    assert!(err.contains("did you mean `backlog-drift`"), "{err}");
    assert!("force-unlock=maybe".parse::<AnswerFlag>().is_err());
}

#[test]
fn sources_in_order_flags_then_script_then_prompt() {
    let script = Script::parse(
            Path::new("a.yaml"),
            "- gate: ambiguous-criteria\n  match: '#2'\n  answer: proceed\n- gate: ambiguous-criteria\n  answer: escalate\n",
        )
        .unwrap();
    struct Says(Vec<String>);
    impl Prompt for Says {
        fn ask(&mut self, _: &Question) -> Option<String> {
            self.0.pop()
        }
    }
    let mut prompt = Says(vec!["stop".into()]);
    let mut a = Answerer::new(
        vec!["backlog-drift=continue".parse().unwrap()],
        script,
        &mut prompt,
        1,
    );
    assert_eq!(
        a.answer(&Question::backlog_drift()).unwrap().option,
        "continue"
    );
    // The flag keeps answering its gate within the tick.
    assert_eq!(
        a.answer(&Question::backlog_drift()).unwrap().option,
        "continue"
    );
    assert_eq!(
        a.answer(&Question::ambiguous_criteria(1)).unwrap().option,
        "escalate"
    );
    assert_eq!(
        a.answer(&Question::ambiguous_criteria(2)).unwrap().option,
        "proceed"
    );
    assert_eq!(
        a.answer(&Question::ambiguous_criteria(3)).unwrap().option,
        "stop"
    );
    assert_eq!(
        a.answer(&Question::ambiguous_criteria(4)).unwrap_err(),
        GateError::Unanswered {
            question: Question::ambiguous_criteria(4)
        }
    );
}

#[test]
fn script_entries_can_be_bound_to_an_iteration() {
    let script = Script::parse(
        Path::new("a.yaml"),
        "- gate: backlog-drift\n  iteration: 2\n  answer: stop\n",
    )
    .unwrap();
    let mut none = NoPrompt;
    let mut a = Answerer::new(vec![], script.clone(), &mut none, 1);
    assert!(a.answer(&Question::backlog_drift()).is_err());
    let mut none = NoPrompt;
    let mut a = Answerer::new(vec![], script, &mut none, 2);
    assert!(a.answer(&Question::backlog_drift()).unwrap().is("stop"));
}

#[test]
fn bad_script_points_at_the_file() {
    let err = Script::parse(
        Path::new("a.yaml"),
        "- gate: backlog-drfit\n  answer: stop\n",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("a.yaml:1:9: unknown variant `backlog-drfit`"),
        "{err}"
    );
    let err = Script::parse(
        Path::new("a.yaml"),
        "- gate: backlog-drift\n  answer: perhaps\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("entry 1"), "{err}");
}

#[test]
fn unanswered_help_names_the_flag() {
    let err = GateError::Unanswered {
        question: Question::force_unlock(),
    };
    assert_eq!(
        err.help(),
        "answer it with --answer force-unlock=<yes|no|stop> (options: yes, no, stop), or with an entry in --answers FILE"
    );
}

#[test]
fn line_prompt_repeats_until_valid() {
    let mut out = Vec::new();
    let mut p = LinePrompt {
        input: std::io::Cursor::new(b"perhaps\nhold\n".to_vec()),
        output: &mut out,
    };
    assert_eq!(
        p.ask(&Question::post_feedback_merge(3)).as_deref(),
        Some("hold")
    );
    let shown = String::from_utf8(out).unwrap();
    assert!(
        shown.contains("expected one of merge, hold, stop"),
        "{shown}"
    );
    let mut p = LinePrompt {
        input: std::io::Cursor::new(Vec::new()),
        output: Vec::new(),
    };
    assert_eq!(p.ask(&Question::force_unlock()), None);
}
