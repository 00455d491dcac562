//! How each check kind is judged against a [`RunRecord`] — with evidence,
//! so a grade says what was seen, not only whether it matched (SPEC-0017
//! `{text, passed, evidence}`). The kinds themselves, as a case writes
//! them, are the loading stage's ([`Check`]).

use std::fmt::Write as _;
use std::sync::LazyLock;

use sdd_mocks::model::expect::Expect;
use sdd_mocks::model::request::{Api, Conversation};
use sdd_mocks::model::turns::Outcome;
use sdd_mocks::model::{LogEntry, Totals};
use sdd_mocks::tracker::pattern::RouteMatcher;
use serde_json::Value;

use super::docs;
use super::status_layout;
use crate::driving::record::RunRecord;
use crate::loading::check::{
    BudgetField, Check, Comparison, ExitCheck, GateCheck, GatesInOrder, HistoryField, ModelRequest,
    ModelRequests, ModelTotals, Notifications, OutcomeCheck, PullRequests, RepoFileContains,
    SkillDocs, Stream, TextCheck, TickRef, TrackerRequests,
};
use crate::loading::names::NO_STOP;

fn tick_of(r: &TickRef) -> Option<usize> {
    r.as_ref().map(|t| t.value)
}

/// Numbers by value, everything else structurally.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn show(v: Option<&Value>) -> String {
    v.map_or_else(|| "absent".to_owned(), Value::to_string)
}

/// Judges `actual` (found in `doc`); the verdict and what it was
/// compared with.
pub fn compare(comparison: &Comparison, actual: Option<&Value>, doc: &Value) -> (bool, String) {
    let number = actual.and_then(Value::as_f64);
    let bound = |cmp: fn(f64, f64) -> bool, limit: f64, sym: &str, against: String| {
        (
            number.is_some_and(|n| cmp(n, limit)),
            format!("{} ({sym} {against})", show(actual)),
        )
    };
    match comparison {
        Comparison::Equals(want) => (
            actual.is_some_and(|a| json_eq(a, want)),
            format!("{} (want {want})", show(actual)),
        ),
        Comparison::NotEquals(want) => (
            actual.is_some_and(|a| !json_eq(a, want)),
            format!("{} (want anything but {want})", show(actual)),
        ),
        Comparison::AtLeast(limit) => bound(|a, b| a >= b, *limit, "≥", limit.to_string()),
        Comparison::AtMost(limit) => bound(|a, b| a <= b, *limit, "≤", limit.to_string()),
        Comparison::AtLeastField(pointer) | Comparison::AtMostField(pointer) => {
            let other = doc.pointer(&pointer.value);
            let against = format!("{} = {}", pointer.value, show(other));
            let (cmp, sym): (fn(f64, f64) -> bool, &str) =
                if matches!(comparison, Comparison::AtLeastField(_)) {
                    (|a, b| a >= b, "≥")
                } else {
                    (|a, b| a <= b, "≤")
                };
            match other.and_then(Value::as_f64) {
                Some(limit) => bound(cmp, limit, sym, against),
                None => (false, format!("{} ({sym} {against})", show(actual))),
            }
        }
        Comparison::Contains(want) => {
            let passed = match (actual, want) {
                (Some(Value::Array(items)), _) => items.iter().any(|i| json_eq(i, want)),
                (Some(Value::String(s)), Value::String(w)) => s.contains(w.as_str()),
                _ => false,
            };
            (
                passed,
                format!("{} (want it to contain {want})", show(actual)),
            )
        }
        Comparison::Present(want) => (
            actual.is_some() == *want,
            format!(
                "{} (want {})",
                show(actual),
                if *want { "present" } else { "absent" }
            ),
        ),
    }
}

/// The line holding `needle` in `text`, trimmed, for evidence.
fn line_with<'t>(text: &'t str, needle: &str) -> Option<&'t str> {
    text.lines().find(|l| l.contains(needle)).map(str::trim)
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Where `needle` starts in `text`, whitespace (and so line wrapping)
/// ignored: its 1-based line number and that line, trimmed.
fn find_prose<'t>(text: &'t str, needle: &str) -> Option<(usize, &'t str)> {
    let needle = squeeze(needle);
    let lines: Vec<&str> = text.lines().collect();
    if !squeeze(text).contains(&needle) {
        return None;
    }
    (0..lines.len())
        .rev()
        .find(|&i| squeeze(&lines[i..].join(" ")).contains(&needle))
        .map(|i| (i + 1, lines[i].trim()))
}

fn gate_line(iteration: u64, gate: &Value) -> String {
    format!(
        "iteration {iteration} {}: {} → {}",
        gate["name"].as_str().unwrap_or("?"),
        gate["question"],
        gate["answer"]
    )
}

fn gate_matches(gate: &Value, name: &str, question: Option<&str>, answer: Option<&str>) -> bool {
    gate["name"].as_str() == Some(name)
        && question.is_none_or(|q| gate["question"].as_str() == Some(q))
        && answer.is_none_or(|a| gate["answer"].as_str() == Some(a))
}

fn scope(tick: Option<usize>) -> String {
    tick.map_or_else(|| "the run".to_owned(), |n| format!("tick {n}"))
}

fn stop_cause_of(line: &Value) -> &str {
    line["stop_conditions_fired"]
        .as_array()
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .unwrap_or(NO_STOP)
}

/// The verdict and its evidence.
pub fn judge(check: &Check, run: &RunRecord) -> (bool, String) {
    match check {
        Check::StopCause(want) => stop_cause(run, &want.value),
        Check::FinalIteration(want) => match run.history.last() {
            None => (false, "no history line was written".to_owned()),
            Some(line) => (
                line["iteration"].as_u64() == Some(*want),
                format!("last history line iteration = {}", line["iteration"]),
            ),
        },
        Check::Exit(c) => exit(run, c),
        Check::Outcome(c) => outcome(run, c),
        Check::Gate(c) => gate(run, c),
        Check::GatesInOrder(c) => gates_in_order(run, c),
        Check::NoGate(name) => {
            let gates = run.gates(None);
            match gates.iter().find(|(_, g)| g["name"] == name.value.as_str()) {
                Some((it, g)) => (false, format!("recorded {}", gate_line(*it, g))),
                None => (true, recorded_gates(&gates, None)),
            }
        }
        Check::Printed(c) => printed(run, c, true),
        Check::NotPrinted(c) => printed(run, c, false),
        Check::HistoryLines(c) => {
            let count = Value::from(run.history.len());
            let (passed, seen) = compare(&c.is, Some(&count), &Value::Null);
            (passed, format!("history lines: {seen}"))
        }
        Check::HistoryField(c) => history_field(run, c),
        Check::BudgetField(c) => budget_field(run, c),
        Check::LockField(c) => match &run.lock {
            None => (
                false,
                "there is no lockfile at the end of the run".to_owned(),
            ),
            Some(doc) => {
                let (passed, seen) = compare(&c.is, doc.pointer(&c.pointer.value), doc);
                (passed, format!("the lockfile {} = {seen}", c.pointer.value))
            }
        },
        Check::FilePresent(path) => file(run, path, true),
        Check::FileAbsent(path) => file(run, path, false),
        Check::RepoFileContains(c) => repo_file_contains(run, c),
        Check::SkillDocs(c) => skill_docs(run, c),
        Check::StatusLayout(c) => status_layout(run, tick_of(&c.tick)),
        Check::ModelRequest(c) => model_request(run, c),
        Check::ModelRequests(c) => model_requests(run, c),
        Check::ModelTotals(c) => model_totals(run, c),
        Check::TrackerRequests(c) => tracker_requests(run, c),
        Check::Notifications(c) => notifications(run, c),
        Check::PullRequests(c) => pull_requests(run, c),
    }
}

fn stop_cause(run: &RunRecord, want: &str) -> (bool, String) {
    match run.history.last() {
        None => (false, "no history line was written".to_owned()),
        Some(line) => (
            stop_cause_of(line) == want,
            format!(
                "last history line (iteration {}) stop_conditions_fired = {}",
                line["iteration"], line["stop_conditions_fired"]
            ),
        ),
    }
}

fn exit(run: &RunRecord, c: &ExitCheck) -> (bool, String) {
    let tick = match tick_of(&c.tick) {
        Some(n) => run.tick(n),
        None => run.last_tick(),
    };
    match tick {
        None => (false, format!("{} did not run", scope(tick_of(&c.tick)))),
        Some(t) => (
            t.end.code() == Some(c.code),
            format!("tick {}: {}", t.number, t.end),
        ),
    }
}

fn outcome(run: &RunRecord, c: &OutcomeCheck) -> (bool, String) {
    let number = tick_of(&c.tick).unwrap_or(run.ticks.len());
    match run.lines(Some(number)).last() {
        None => (false, format!("tick {number} appended no history line")),
        Some(line) => (
            line["outcome"].as_str() == Some(c.is.as_str()),
            format!(
                "tick {number} appended iteration {} with outcome {}",
                line["iteration"], line["outcome"]
            ),
        ),
    }
}

fn gate(run: &RunRecord, c: &GateCheck) -> (bool, String) {
    let tick = tick_of(&c.tick);
    let gates = run.gates(tick);
    let found = gates
        .iter()
        .find(|(_, g)| gate_matches(g, &c.name.value, c.question.as_deref(), c.answer.as_deref()));
    match found {
        Some((it, g)) => (true, format!("recorded {}", gate_line(*it, g))),
        None => (
            false,
            format!(
                "{}; the case expects {}",
                recorded_gates(&gates, tick),
                wanted_gate(&c.name.value, c.question.as_deref(), c.answer.as_deref())
            ),
        ),
    }
}

/// A gate as the case wants it, quoted as [`gate_line`] quotes a recorded
/// one: what a mismatch is shown beside.
fn wanted_gate(name: &str, question: Option<&str>, answer: Option<&str>) -> String {
    let mut out = name.to_owned();
    if let Some(q) = question {
        let _ = write!(out, ": {}", Value::from(q));
    }
    if let Some(a) = answer {
        let _ = write!(out, " → {}", Value::from(a));
    }
    out
}

fn gates_in_order(run: &RunRecord, c: &GatesInOrder) -> (bool, String) {
    let tick = tick_of(&c.tick);
    let gates = run.gates(tick);
    let passed = gates.len() == c.gates.len()
        && gates.iter().zip(&c.gates).all(|((_, g), want)| {
            gate_matches(
                g,
                &want.name.value,
                want.question.as_deref(),
                want.answer.as_deref(),
            )
        });
    let mut evidence = recorded_gates(&gates, tick);
    if !passed {
        let wanted: Vec<String> = c
            .gates
            .iter()
            .map(|g| wanted_gate(&g.name.value, g.question.as_deref(), g.answer.as_deref()))
            .collect();
        let _ = write!(
            evidence,
            "; the case expects, in order: {}",
            wanted.join("; ")
        );
    }
    (passed, evidence)
}

/// `printed` (`want_present`) or `not_printed`.
fn printed(run: &RunRecord, c: &TextCheck, want_present: bool) -> (bool, String) {
    let tick = tick_of(&c.tick);
    let on = match c.stream {
        Stream::Stdout => "",
        Stream::Stderr => " on stderr",
    };
    let hit = run
        .ticks
        .iter()
        .filter(|t| tick.is_none_or(|n| t.number == n))
        .find_map(|t| {
            let text = match c.stream {
                Stream::Stdout => &t.stdout,
                Stream::Stderr => &t.stderr,
            };
            line_with(text, &c.text).map(|l| (t.number, l))
        });
    match hit {
        Some((n, line)) => (want_present, format!("tick {n} printed{on}: {line}")),
        None => (
            !want_present,
            format!(
                "{} printed nothing{on} containing {:?}{}",
                scope(tick),
                c.text,
                stderr_tail(run, tick, c.stream)
            ),
        ),
    }
}

fn history_field(run: &RunRecord, c: &HistoryField) -> (bool, String) {
    let (number, line) = match &c.line {
        Some(n) => (
            n.value,
            n.value.checked_sub(1).and_then(|i| run.history.get(i)),
        ),
        None => (run.history.len(), run.history.last()),
    };
    match line {
        None => (false, format!("there is no history line {number}")),
        Some(line) => {
            let (passed, seen) = compare(&c.is, line.pointer(&c.pointer.value), line);
            (
                passed,
                format!(
                    "history line {number} {} = {seen}{}",
                    c.pointer.value,
                    what_is_there(line, &c.pointer.value)
                ),
            )
        }
    }
}

fn budget_field(run: &RunRecord, c: &BudgetField) -> (bool, String) {
    match &run.budget {
        None => (false, "there is no budget.json".to_owned()),
        Some(doc) => {
            let (passed, seen) = compare(&c.is, doc.pointer(&c.pointer.value), doc);
            (
                passed,
                format!(
                    "budget.json {} = {seen}{}",
                    c.pointer.value,
                    what_is_there(doc, &c.pointer.value)
                ),
            )
        }
    }
}

/// `file_present` (`want_present`) or `file_absent`.
fn file(run: &RunRecord, path: &str, want_present: bool) -> (bool, String) {
    let present = run.files.contains(path.trim_end_matches('/'));
    (
        present == want_present,
        format!(
            "{path} is {} in the project",
            if present { "present" } else { "absent" }
        ),
    )
}

fn repo_file_contains(run: &RunRecord, c: &RepoFileContains) -> (bool, String) {
    match std::fs::read_to_string(run.workspace.join(&c.path.value)) {
        Err(e) => (false, format!("cannot read {}: {e}", c.path.value)),
        Ok(text) => match find_prose(&text, &c.text) {
            Some((n, line)) => (true, format!("{}:{n}: {line}", c.path.value)),
            None => (
                false,
                format!("{} does not contain {:?}", c.path.value, c.text),
            ),
        },
    }
}

fn skill_docs(run: &RunRecord, c: &SkillDocs) -> (bool, String) {
    let shown = c
        .plugin_root
        .as_ref()
        .map_or_else(|| std::path::PathBuf::from("."), |p| p.value.clone().into());
    // The engine's command line is the same for every case: read
    // through clap once a run, not once a case.
    static CLI: LazyLock<docs::engine::Cli> = LazyLock::new(docs::engine::Cli::read);
    let cli = &*CLI;
    match docs::check(&run.workspace.join(&shown), &shown, c.skill, cli) {
        Ok(report) => (report.passed(), report.render().trim_end().to_owned()),
        Err(e) => (false, format!("{e} ({})", e.help())),
    }
}

fn model_requests(run: &RunRecord, c: &ModelRequests) -> (bool, String) {
    let want = c.outcome.as_ref().map(|o| o.value.as_str());
    let count = model_entries(run, tick_of(&c.tick))
        .iter()
        .filter(|e| want.is_none_or(|w| outcome_name(e) == w))
        .count();
    let (passed, seen) = compare(&c.is, Some(&Value::from(count)), &Value::Null);
    (
        passed,
        format!(
            "model requests{} in {}: {seen}",
            want.map(|w| format!(" answered `{w}`")).unwrap_or_default(),
            scope(tick_of(&c.tick))
        ),
    )
}

fn model_totals(run: &RunRecord, c: &ModelTotals) -> (bool, String) {
    let entries = model_entries(run, tick_of(&c.tick));
    let mut totals = serde_json::to_value(Totals::of(entries)).unwrap_or_default();
    let (tokens_in, tokens_out) = engine_tokens(entries);
    if let Some(map) = totals.as_object_mut() {
        map.insert("tokens_in".to_owned(), tokens_in.into());
        map.insert("tokens_out".to_owned(), tokens_out.into());
    }
    let (passed, seen) = compare(&c.is, totals.pointer(&c.pointer.value), &totals);
    (
        passed,
        format!(
            "the model's totals in {} {} = {seen} (totals: {totals})",
            scope(tick_of(&c.tick)),
            c.pointer.value
        ),
    )
}

fn tracker_requests(run: &RunRecord, c: &TrackerRequests) -> (bool, String) {
    let route = RouteMatcher::new(c.method.as_deref().unwrap_or("*"), &c.path);
    let count = run
        .requests
        .iter()
        .filter(|r| route.matches(&r.method, &r.path))
        .count();
    let count = Value::from(count);
    let (passed, seen) = compare(&c.is, Some(&count), &Value::Null);
    (
        passed,
        format!(
            "{} {} requests: {seen}",
            c.method.as_deref().unwrap_or("*"),
            c.path
        ),
    )
}

fn notifications(run: &RunRecord, c: &Notifications) -> (bool, String) {
    let texts: Vec<String> = run.notifications.iter().map(|r| r.text()).collect();
    let mut passed = true;
    let mut evidence = Vec::new();
    if let Some(is) = &c.is {
        let (ok, seen) = compare(is, Some(&Value::from(texts.len())), &Value::Null);
        passed &= ok;
        evidence.push(format!("notifications received: {seen}"));
    }
    for want in &c.contains {
        let found = texts.iter().position(|t| t.contains(want.as_str()));
        passed &= found.is_some();
        evidence.push(match found {
            Some(i) => format!("{want:?} in notification {}", i + 1),
            None => format!("{want:?} in no notification"),
        });
    }
    for unwanted in &c.not_contains {
        let found = texts.iter().position(|t| t.contains(unwanted.as_str()));
        passed &= found.is_none();
        evidence.push(match found {
            Some(i) => format!("{unwanted:?} in notification {}: {}", i + 1, texts[i]),
            None => format!("{unwanted:?} in none of {}", texts.len()),
        });
    }
    (passed, evidence.join("; "))
}

fn pull_requests(run: &RunRecord, c: &PullRequests) -> (bool, String) {
    let matching: Vec<String> = run
        .pulls
        .iter()
        .filter(|p| c.closes.is_none_or(|n| p.closes.contains(&n)))
        .map(|p| format!("#{} ({})", p.number, p.branch))
        .collect();
    let count = Value::from(matching.len());
    let (passed, seen) = compare(&c.is, Some(&count), &Value::Null);
    let which = c.closes.map_or_else(
        || "pull requests".to_owned(),
        |n| format!("pull requests closing #{n}"),
    );
    (passed, format!("{which}: {seen} [{}]", matching.join(", ")))
}

/// For a text not found on stderr: the last lines the tick (or the last
/// tick) printed there, so the evidence shows what was said instead.
fn stderr_tail(run: &RunRecord, tick: Option<usize>, stream: Stream) -> String {
    if stream != Stream::Stderr {
        return String::new();
    }
    let Some(t) = tick.map_or_else(|| run.last_tick(), |n| run.tick(n)) else {
        return String::new();
    };
    let lines: Vec<&str> = t.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return format!("; tick {}'s stderr is empty", t.number);
    }
    let tail = &lines[lines.len().saturating_sub(4)..];
    format!("; tick {}'s stderr ends: {}", t.number, tail.join(" ⏎ "))
}

/// The scripted model's log, or the part of it tick `tick` made.
fn model_entries(run: &RunRecord, tick: Option<usize>) -> &[LogEntry] {
    match tick {
        None => &run.model_log,
        Some(n) => run
            .tick(n)
            .and_then(|t| run.model_log.get(t.model_requests.clone()))
            .unwrap_or(&[]),
    }
}

/// The usage `entries` returned as the engine counts it: `tokens_in` with
/// the cache reads and writes (on the Messages API they are apart from
/// `input_tokens`; on the Responses and Gemini APIs cached tokens are a
/// part of the input already), and `tokens_out` (on the Gemini API with
/// the thoughts, which are apart from the candidates and billed as
/// output).
fn engine_tokens(entries: &[LogEntry]) -> (u64, u64) {
    entries
        .iter()
        .filter_map(|e| e.usage.map(|u| (e.api, u)))
        .fold((0, 0), |(i, o), (api, u)| {
            let (input, output) = match api {
                Some(Api::Openai) => (u.input, u.output),
                Some(Api::Gemini) => (u.input, u.output + u.reasoning),
                _ => (u.input + u.cache_read + u.cache_creation, u.output),
            };
            (i + input, o + output)
        })
}

/// A log entry's outcome as the log writes it (`expect_failed`, …).
fn outcome_name(entry: &LogEntry) -> String {
    serde_json::to_value(entry.outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn model_request(run: &RunRecord, c: &ModelRequest) -> (bool, String) {
    let Some(entry) = run
        .model_log
        .iter()
        .find(|e| e.turn == Some(c.turn) && e.outcome == Outcome::Turn)
    else {
        let served = run
            .model_log
            .iter()
            .filter(|e| e.outcome == Outcome::Turn)
            .count();
        return (
            false,
            format!(
                "the model served no turn {} ({served} turn(s) served)",
                c.turn
            ),
        );
    };
    let Some(api) = entry.api else {
        return (false, format!("request {} was on no model API", entry.seq));
    };
    let expect = Expect {
        last_tool_result_contains: c.last_tool_result_contains.clone(),
        system_contains: c.system_contains.clone(),
        user_contains: c.user_contains.clone(),
    };
    let results = expect.check(&Conversation::of(api, &entry.body));
    let passed = results.iter().all(|r| r.passed);
    let evidence = results
        .iter()
        .map(|r| match (&r.found, r.passed) {
            (_, true) => format!(
                "turn {} (request {}): {} {:?}: yes",
                c.turn, entry.seq, r.check, r.expected
            ),
            (Some(found), false) => format!(
                "turn {} (request {}): {} {:?}: no — {found}",
                c.turn, entry.seq, r.check, r.expected
            ),
            (None, false) => format!(
                "turn {} (request {}): {} {:?}: no",
                c.turn, entry.seq, r.check, r.expected
            ),
        })
        .collect::<Vec<_>>()
        .join("\n");
    (passed, evidence)
}

fn status_layout(run: &RunRecord, tick: Option<usize>) -> (bool, String) {
    let mut problems = Vec::new();
    let mut checked = 0;
    for t in run
        .ticks
        .iter()
        .filter(|t| tick.is_none_or(|n| t.number == n))
    {
        let blocks = status_layout::blocks(&t.stdout);
        let printed_report = matches!(t.end.code(), Some(0 | 3));
        if blocks.is_empty()
            && printed_report
            && !t.from_hooks
            && !t.args.iter().any(|a| a == "--json")
        {
            problems.push(format!("tick {} printed no status block", t.number));
        }
        let shape = status_layout::Tick {
            single_pr: t.args.iter().any(|a| a == "--pr" || a.starts_with("--pr=")),
            skipped: run
                .lines_of(t)
                .iter()
                .any(|l| l["outcome"] == "skipped_lock"),
        };
        for (i, block) in blocks.iter().enumerate() {
            checked += 1;
            for p in status_layout::problems(block, shape) {
                problems.push(format!(
                    "tick {} block {} ({}): {p}",
                    t.number,
                    i + 1,
                    block[0]
                ));
            }
        }
    }
    if problems.is_empty() {
        (
            true,
            format!(
                "{checked} status block(s) in {} follow the layout",
                scope(tick)
            ),
        )
    } else {
        (false, problems.join("\n"))
    }
}

/// For a pointer that finds nothing in `doc`: what its deepest existing
/// part holds (`; /budget_snapshot has: iterations_used, …`), so the
/// evidence shows what could have been named. Empty when it finds a value.
fn what_is_there(doc: &Value, pointer: &str) -> String {
    if doc.pointer(pointer).is_some() {
        return String::new();
    }
    let mut at = String::new();
    let mut node = doc;
    for token in pointer.split('/').skip(1) {
        match node.pointer(&format!("/{token}")) {
            Some(next) => {
                node = next;
                at.push('/');
                at.push_str(token);
            }
            None => break,
        }
    }
    let place = if at.is_empty() {
        "the document".to_owned()
    } else {
        at
    };
    match node {
        Value::Object(map) => format!(
            "; {place} has: {}",
            map.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
        Value::Array(items) => format!(
            "; {place} is an array of {} element(s), numbered from 0",
            items.len()
        ),
        other => format!("; {place} is {other}, which has no fields"),
    }
}

fn recorded_gates(gates: &[(u64, &Value)], tick: Option<usize>) -> String {
    if gates.is_empty() {
        return format!("{} recorded no gate", scope(tick));
    }
    let mut out = format!("{} recorded: ", scope(tick));
    for (i, (it, g)) in gates.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        let _ = write!(out, "{}", gate_line(*it, g));
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cmp(yaml: &str) -> Comparison {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn prose_is_found_across_line_breaks() {
        let text = "# Title\n\nEvery tick runs **at most\none review-response round** per PR.\n";
        assert_eq!(
            find_prose(text, "at most one review-response round"),
            Some((3, "Every tick runs **at most"))
        );
        assert_eq!(find_prose(text, "# Title"), Some((1, "# Title")));
        assert_eq!(find_prose(text, "two rounds"), None);
    }

    #[test]
    fn a_pointer_that_finds_nothing_says_what_is_there() {
        let doc = json!({"budget_snapshot": {"iterations_used": 1, "max_prs": 1}, "gates": []});
        assert_eq!(
            what_is_there(&doc, "/budget_snapshot/prs_touched_totl"),
            "; /budget_snapshot has: iterations_used, max_prs"
        );
        assert_eq!(
            what_is_there(&doc, "/nope"),
            "; the document has: budget_snapshot, gates"
        );
        assert_eq!(
            what_is_there(&doc, "/gates/0/name"),
            "; /gates is an array of 0 element(s), numbered from 0"
        );
        assert_eq!(what_is_there(&doc, "/budget_snapshot/max_prs"), "");
    }

    #[test]
    fn numbers_compare_by_value_and_fields_by_pointer() {
        let doc = json!({"dollars_estimate": 0.09, "max_dollars": 0.01, "n": 2});
        let d = doc.pointer("/dollars_estimate");
        assert!(compare(&cmp("at_least_field: /max_dollars"), d, &doc).0);
        assert!(!compare(&cmp("at_most_field: /max_dollars"), d, &doc).0);
        assert!(compare(&cmp("equals: 2.0"), doc.pointer("/n"), &doc).0);
        assert!(compare(&cmp("at_least: 0.05"), d, &doc).0);
        let (passed, seen) = compare(&cmp("at_least_field: /nope"), d, &doc);
        assert!(!passed);
        assert_eq!(seen, "0.09 (≥ /nope = absent)");
        assert!(compare(&cmp("present: false"), doc.pointer("/x"), &doc).0);
        assert!(compare(&cmp("contains: \"#3\""), Some(&json!(["#3"])), &doc).0);
    }
}
