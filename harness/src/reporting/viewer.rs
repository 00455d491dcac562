//! The eval viewer, `target/sdd-evals/report.html` (SPEC-0017 "Eval Viewer
//! Integration"): one self-contained page — its style and script are
//! inlined, it loads nothing — that a reviewer opens from a CI artifact.
//!
//! Per case: the prompt, the tick timeline ([`crate::reporting::timeline`]: outcome,
//! gates asked with question and answer, budget use as bars against each
//! ceiling, the stop cause), every assertion with pass/fail and evidence,
//! the snapshots' text, and a feedback box. Failing cases are marked, open
//! and sorted first. The boxes' contents export as `feedback.json`
//! (`{"reviews": [{"run_id", "feedback", "timestamp"}], "status":
//! "complete"}`, one review per case with feedback, `run_id` the case id),
//! which can be committed to `evals/feedback/`.
//!
//! A `claude plugin eval` run (`sdd-evals plugin-evals`) has two arms: the
//! skills table then adds the mean score without the plugin and the
//! difference, and each case shows both arms' scores and the baseline
//! arm's graders beside its own ([`crate::reporting::arms`]).
//!
//! Everything the page shows is escaped here ([`escape`]); the script only
//! filters and exports.

use std::fmt::Write as _;

use crate::reporting::arms::{ArmRun, Configuration};
use crate::reporting::benchmark::{self, Benchmark};
use crate::reporting::report::{CaseResult, SnapshotState};
use crate::reporting::timeline::{LineView, TickView, Usage};

const STYLE: &str = include_str!("viewer.css");
const SCRIPT: &str = include_str!("viewer.js");

/// `text` safe inside HTML text and quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// What the page says about the run as a whole.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    pub benchmark: &'a Benchmark,
    /// The earlier benchmark and where it came from (`--compare`).
    pub compared: Option<(&'a Benchmark, &'a str)>,
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The page for `results`, failing cases first (each group in suite order).
pub fn render(results: &[CaseResult], run: Run<'_>) -> String {
    let mut order: Vec<&CaseResult> = results.iter().collect();
    order.sort_by_key(|r| (r.passed, r.skipped.is_some()));
    let summary = &run.benchmark.run_summary;
    let failed = summary.cases - summary.passed;
    // Every case listed is counted: `cases` are the ones that ran.
    let listed = summary.cases + summary.skipped;
    let mut html = String::new();
    let _ = write!(
        html,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>Eval report: {} passed, {failed} failed, {} skipped of {listed} cases</title>\n<link rel=\"icon\" href=\"data:,\">\n\
         <style>\n{STYLE}</style>\n</head>\n<body>\n<div class=\"page\">\n<header>\n\
         <h1>sdd-loop eval report</h1>\n\
         <p class=\"run\" id=\"run-counts\"><strong>{listed} cases</strong> · <span class=\"ok-mark\">{} passed</span> · \
         <span class=\"{}\">{failed} failed</span> · <span class=\"{}\">{} skipped</span> · {:.2}s wall · {} tokens</p>\n",
        summary.passed,
        summary.skipped,
        summary.passed,
        if failed > 0 { "bad-mark" } else { "meta" },
        if summary.skipped > 0 {
            "skip-mark"
        } else {
            "meta"
        },
        summary.skipped,
        summary.wall_seconds,
        thousands(summary.tokens),
    );
    skills(&mut html, run);
    html.push_str(
        "<nav class=\"toolbar\">\
         <label><input type=\"checkbox\" id=\"only-failing\"> failing cases only</label>\
         <button type=\"button\" id=\"export-feedback\">Export feedback.json</button>\
         <span class=\"hint\" id=\"feedback-count\">no feedback written yet</span></nav>\n",
    );
    html.push_str("<ol class=\"index\">");
    for r in &order {
        let _ = write!(
            html,
            "<li><a class=\"{}\" href=\"#case-{id}\">{id}</a></li>",
            status(r),
            id = escape(&r.id)
        );
    }
    html.push_str("</ol>\n</header>\n<main>\n");
    for r in &order {
        case(&mut html, r, run.benchmark);
    }
    let _ = write!(
        html,
        "</main>\n</div>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    );
    html
}

fn skills(html: &mut String, run: Run<'_>) {
    let bench = run.benchmark;
    let two_arms = bench.skills.iter().any(|s| s.arms.is_some());
    html.push_str(
        "<table class=\"skills\"><thead><tr><th>skill</th><th class=\"num\">cases</th>\
         <th class=\"num\">pass rate</th><th class=\"num\">mean time</th>\
         <th class=\"num\">mean tokens</th>",
    );
    if two_arms {
        html.push_str(
            "<th class=\"num\">score with the plugin</th><th class=\"num\">without</th>\
             <th class=\"num\">Δ</th>",
        );
    }
    html.push_str("</tr></thead><tbody>");
    for s in &bench.skills {
        let old = run.compared.and_then(|(o, _)| o.skill(&s.skill));
        let delta = |now: f64, was: Option<f64>, unit: &str, places: usize| match was {
            Some(w) => format!(" <span class=\"meta\">({:+.places$}{unit})</span>", now - w),
            None => String::new(),
        };
        let _ = write!(
            html,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}{}</td>\
             <td class=\"num\">{:.2}s{}</td><td class=\"num\">{}{}</td>",
            escape(&s.skill),
            s.cases,
            benchmark::percent(s.pass_rate),
            delta(
                s.pass_rate * 100.0,
                old.map(|o| o.pass_rate * 100.0),
                " pts",
                1
            ),
            s.mean_wall_seconds,
            delta(
                s.mean_wall_seconds,
                old.map(|o| o.mean_wall_seconds),
                "s",
                2
            ),
            thousands(s.mean_tokens.round() as u64),
            delta(s.mean_tokens, old.map(|o| o.mean_tokens), "", 0),
        );
        if two_arms {
            match &s.arms {
                Some(a) => {
                    let _ = write!(
                        html,
                        "<td class=\"num\">{:.2}</td><td class=\"num\">{:.2}</td><td class=\"num\">{}</td>",
                        a.with_skill.pass_rate.mean,
                        a.without_skill.pass_rate.mean,
                        escape(&a.delta.pass_rate)
                    );
                }
                None => html.push_str("<td></td><td></td><td></td>"),
            }
        }
        html.push_str("</tr>");
    }
    html.push_str("</tbody></table>\n");
    if let Some((_, label)) = run.compared {
        let _ = writeln!(
            html,
            "<p class=\"meta\">Deltas are from <code>{}</code>.</p>",
            escape(label)
        );
    }
    let below = bench.below_threshold();
    if below.is_empty() {
        let _ = writeln!(
            html,
            "<p class=\"threshold{}\">{}</p>",
            if bench.selected.is_some() { "" } else { " ok" },
            escape(&bench.threshold_note())
        );
    }
    for line in below {
        let _ = writeln!(html, "<p class=\"threshold bad\">{}</p>", escape(&line));
    }
}

/// `pass`, `fail`, or `skip` (a case that did not run: never a pass).
fn status(r: &CaseResult) -> &'static str {
    match (r.passed, &r.skipped) {
        (_, Some(_)) => "skip",
        (true, None) => "pass",
        (false, None) => "fail",
    }
}

fn case(html: &mut String, r: &CaseResult, bench: &Benchmark) {
    let status = status(r);
    let id = escape(&r.id);
    let passed = r.expectations.iter().filter(|g| g.ok()).count();
    let _ = write!(
        html,
        "<details class=\"case {status}\" id=\"case-{id}\" data-case=\"{id}\" data-status=\"{status}\"{}>\n\
         <summary><span class=\"badge {status}\">{}</span> <h2 class=\"mono\">{id}</h2>\
         <span class=\"meta\">{} · {} tick(s) · {:.2}s · {} tokens · {passed}/{} checks</span>\
         <span class=\"title\">{}</span></summary>\n<div class=\"body\">\n",
        if r.passed { "" } else { " open" },
        status.to_uppercase(),
        escape(&r.skill),
        r.ticks,
        r.wall.as_secs_f64(),
        thousands(r.tokens_in + r.tokens_out),
        r.expectations.len(),
        escape(&r.name),
    );
    if let Some(why) = &r.skipped {
        let _ = writeln!(
            html,
            "<p class=\"threshold\">Skipped — not run, never counted as passed: {}</p>",
            escape(why)
        );
    }
    if !r.proves.is_empty() {
        let _ = writeln!(
            html,
            "<p class=\"meta\">Proves: {} · <code>{}</code></p>",
            escape(&r.proves),
            escape(&r.file)
        );
    }
    if let Some(prompt) = &r.prompt {
        let _ = writeln!(
            html,
            "<p class=\"prompt\">Prompt: <code>{}</code></p>",
            escape(prompt)
        );
    }
    if !r.timeline.is_empty() {
        html.push_str("<h3>Ticks</h3>\n<ol class=\"ticks\">\n");
        for tick in &r.timeline {
            tick_view(html, tick);
        }
        html.push_str("</ol>\n");
    }
    let _ = write!(
        html,
        "<h3>Assertions ({passed} of {} hold)</h3>\n<table class=\"assertions\"><tbody>\n",
        r.expectations.len()
    );
    for g in &r.expectations {
        let (mark, class) = if g.ok() {
            ("✓", "ok-mark")
        } else {
            ("✗", "bad-mark")
        };
        let known = g.known_failure.as_deref().map_or(String::new(), |k| {
            format!(
                " <span class=\"badge known\">known failure</span> <span class=\"meta\">{}</span>",
                escape(k)
            )
        });
        let _ = writeln!(
            html,
            "<tr class=\"{}\"><td class=\"{class}\">{mark}</td><td>{}{known}<div class=\"evidence\">{}</div></td></tr>",
            if g.ok() { "good" } else { "bad" },
            escape(&g.text),
            escape(&g.evidence)
        );
    }
    html.push_str("</tbody></table>\n");
    baseline(html, r, bench);
    if !r.snapshots.is_empty() {
        html.push_str("<h3>Snapshots</h3>\n<div class=\"snapshots\">\n");
        for s in &r.snapshots {
            let (badge, word) = match &s.state {
                SnapshotState::Matches => ("pass", "matches the stored one".to_owned()),
                SnapshotState::Accepted(path) => {
                    ("known", format!("new, written to {}", path.display()))
                }
                SnapshotState::Missing => ("fail", "not stored yet".to_owned()),
                SnapshotState::Differs => ("fail", "differs from the stored one".to_owned()),
                SnapshotState::Unreadable => ("fail", "the stored one is unreadable".to_owned()),
                SnapshotState::Skipped => ("plain", "not compared".to_owned()),
            };
            let _ = writeln!(
                html,
                "<details><summary><code>{}</code> <span class=\"badge {badge}\">{}</span></summary><pre>{}</pre></details>",
                escape(&s.name),
                escape(&word),
                escape(&s.text)
            );
        }
        html.push_str("</div>\n");
    }
    if let Some(dir) = &r.sandbox {
        let _ = writeln!(
            html,
            "<p class=\"meta\">Sandbox kept at <code>{}</code></p>",
            escape(&dir.display().to_string())
        );
    }
    let _ = write!(
        html,
        "<h3>Feedback</h3>\n<div class=\"feedback\"><textarea data-case=\"{id}\" \
         aria-label=\"Feedback on {id}\" placeholder=\"What a human reviewer noticed about {id} \
         (exported to feedback.json)\"></textarea></div>\n</div>\n</details>\n"
    );
}

/// A two-arm case's scores, and the graders of its runs without the
/// plugin.
fn baseline(html: &mut String, r: &CaseResult, bench: &Benchmark) {
    let Some(arms) = bench
        .cases
        .iter()
        .find(|c| c.id == r.id)
        .and_then(|c| c.arms.as_ref())
    else {
        return;
    };
    let _ = writeln!(
        html,
        "<h3>With and without the plugin</h3>\n<p class=\"meta\">Mean score {:.2} with the plugin \
         ({} run(s), {} passed), {:.2} without ({} run(s), {} passed): Δ {}.</p>",
        arms.with_skill.pass_rate.mean,
        arms.with_skill.runs,
        arms.with_skill.passed,
        arms.without_skill.pass_rate.mean,
        arms.without_skill.runs,
        arms.without_skill.passed,
        escape(&arms.delta.pass_rate)
    );
    let without: Vec<&ArmRun> = bench
        .runs
        .iter()
        .filter(|run| run.eval_name == r.id && run.configuration == Configuration::WithoutSkill)
        .collect();
    for run in without {
        let _ = writeln!(
            html,
            "<table class=\"assertions\"><caption class=\"meta\">Run {} {}: score {:.2}{}</caption><tbody>",
            run.run_number,
            Configuration::WithoutSkill.label(),
            run.result.pass_rate,
            run.result
                .error
                .as_deref()
                .map_or(String::new(), |e| format!(" — {}", escape(e)))
        );
        for e in &run.expectations {
            let (mark, class, row) = if e.passed {
                ("✓", "ok-mark", "good")
            } else {
                ("✗", "bad-mark", "bad")
            };
            let _ = writeln!(
                html,
                "<tr class=\"{row}\"><td class=\"{class}\">{mark}</td><td>{}<div class=\"evidence\">{}</div></td></tr>",
                escape(&e.text),
                escape(&e.evidence)
            );
        }
        html.push_str("</tbody></table>\n");
    }
}

fn tick_view(html: &mut String, tick: &TickView) {
    let _ = writeln!(
        html,
        "<li class=\"tick\"><div class=\"tick-head\">Tick {} <span class=\"meta\">· {}</span></div>",
        tick.number,
        escape(&tick.end)
    );
    if tick.lines.is_empty() {
        html.push_str("<div class=\"meta\">appended no history line</div>\n");
    }
    for line in &tick.lines {
        line_view(html, line);
    }
    html.push_str("</li>\n");
}

fn line_view(html: &mut String, line: &LineView) {
    let outcome = line.outcome.as_deref().unwrap_or("?");
    let badge = match outcome {
        "ok" => "pass",
        "halted" => "known",
        "errored" => "fail",
        _ => "plain",
    };
    let _ = write!(
        html,
        "<div class=\"line\">iteration {} <span class=\"badge {badge}\">{}</span>",
        line.iteration.map_or("?".to_owned(), |i| i.to_string()),
        escape(outcome)
    );
    if !line.stops.is_empty() {
        let _ = write!(
            html,
            " <span class=\"stop\">stop: {}</span>",
            escape(&line.stops.join(", "))
        );
    }
    if line.gates.is_empty() {
        html.push_str(" <span class=\"meta\">· no gate asked</span>");
    } else {
        html.push_str("<ul class=\"gates\">");
        for g in &line.gates {
            let _ = write!(
                html,
                "<li><span class=\"gate-name\">{}</span>: “{}” → <span class=\"answer\">{}</span></li>",
                escape(&g.name),
                escape(&g.question),
                escape(&g.answer)
            );
        }
        html.push_str("</ul>");
    }
    if !line.windows.is_empty() {
        let _ = write!(
            html,
            "<div class=\"windows meta\">usage windows: {}</div>",
            escape(&line.windows.join(" · "))
        );
    }
    if !line.budget.is_empty() {
        html.push_str("<div class=\"budget\">");
        for u in &line.budget {
            bar(html, u);
        }
        html.push_str("</div>");
    }
    html.push_str("</div>\n");
}

fn bar(html: &mut String, u: &Usage) {
    let f = u.fraction();
    let class = if f >= 1.0 {
        "bar full"
    } else if f >= 0.8 {
        "bar high"
    } else {
        "bar"
    };
    let _ = write!(
        html,
        "<div><div class=\"bar-label\">{} {}</div><div class=\"{class}\" role=\"meter\" \
         aria-valuenow=\"{:.0}\" aria-valuemin=\"0\" aria-valuemax=\"100\"><span style=\"width:{:.1}%\"></span></div></div>",
        u.dimension,
        escape(&u.label()),
        f * 100.0,
        f * 100.0
    );
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::judging::grade::Grade;
    use crate::reporting::timeline::GateView;

    fn result(id: &str, passed: bool) -> CaseResult {
        CaseResult {
            id: id.to_owned(),
            name: format!("{id} <name>"),
            proves: "ADR-0028 confirmation 4".to_owned(),
            file: format!("evals/loop/{id}.yaml"),
            skill: "work".to_owned(),
            prompt: Some("/loop /sdd:work --loop".to_owned()),
            passed,
            skipped: None,
            expectations: vec![Grade::new("a check", passed, "what was seen")],
            ticks: 1,
            wall: Duration::from_millis(120),
            tokens_in: 1000,
            tokens_out: 100,
            sandbox: None,
            timeline: vec![TickView {
                number: 1,
                end: "exit 0".to_owned(),
                lines: vec![LineView {
                    iteration: Some(1),
                    outcome: Some("ok".to_owned()),
                    gates: vec![GateView {
                        name: "budget-escalation".to_owned(),
                        question: "Approaching PRs (1/1). Continue, raise ceiling, or stop?"
                            .to_owned(),
                        answer: "continue".to_owned(),
                    }],
                    budget: vec![Usage {
                        dimension: "PRs",
                        used: 1.0,
                        max: 1.0,
                    }],
                    stops: Vec::new(),
                    windows: vec![
                        "5-hour 55% → 80% (this tick 25%), resets 2026-05-09T19:00:00Z".to_owned(),
                    ],
                }],
            }],
            snapshots: Vec::new(),
            phases: Default::default(),
        }
    }

    #[test]
    fn failing_cases_come_first_and_everything_is_escaped() {
        let results = [result("passes", true), result("fails", false)];
        let bench = Benchmark::new(&results, Duration::from_secs(1));
        let html = render(
            &results,
            Run {
                benchmark: &bench,
                compared: None,
            },
        );
        let fails = html.find("data-case=\"fails\"").unwrap();
        let passes = html.find("data-case=\"passes\"").unwrap();
        assert!(fails < passes, "the failing case is first");
        assert!(html.contains("fails &lt;name&gt;"), "names are escaped");
        assert!(!html.contains("<name>"));
        assert!(html.contains("Approaching PRs (1/1). Continue, raise ceiling, or stop?"));
        assert!(html.contains("PRs 1/1"));
        assert!(html.contains(
            "usage windows: 5-hour 55% → 80% (this tick 25%), resets 2026-05-09T19:00:00Z"
        ));
        assert!(html.contains("Tier 1 skill &#39;work&#39; pass rate is 50% (threshold: 80%)"));
        assert!(
            !html.contains("src=") && !html.contains("http"),
            "self-contained: nothing is loaded"
        );
    }

    #[test]
    fn the_header_counts_every_case_listed_and_skipped_ones_look_skipped() {
        let mut skipped = result("needs-claude", false);
        skipped.skipped = Some("claude is not installed".to_owned());
        let results = [result("passes", true), result("fails", false), skipped];
        let bench = Benchmark::new(&results, Duration::from_secs(1));
        let html = render(
            &results,
            Run {
                benchmark: &bench,
                compared: None,
            },
        );
        assert!(
            html.contains("<strong>3 cases</strong> · <span class=\"ok-mark\">1 passed</span> · <span class=\"bad-mark\">1 failed</span> · <span class=\"skip-mark\">1 skipped</span>"),
            "{html}"
        );
        assert!(
            html.contains("<title>Eval report: 1 passed, 1 failed, 1 skipped of 3 cases</title>")
        );
        assert!(html.contains("<details class=\"case skip\""));
        assert!(html.contains("<span class=\"badge skip\">SKIP</span>"));
        assert!(STYLE.contains(".case.skip { border-left-color: var(--skip)"));
    }
}
