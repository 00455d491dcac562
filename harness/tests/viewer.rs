//! The eval viewer in a real browser: `sdd-evals run` writes report.html
//! for three suite cases and one that fails on purpose; headless Chromium
//! opens it from disk and the test checks that it loads with no console
//! error or exception, shows every case, marks the failing one (first, and
//! open), and exports a reviewer's feedback as feedback.json through the
//! page's own button. It leaves a screenshot beside the report, in the
//! checkout's `target/sdd-evals-viewer/` (CI keeps it as an artifact).
//!
//! The browser is Debian's `chromium` (`$CHROME` overrides the path). When
//! it is missing the test's setup installs it with apt-get if it can (as
//! root), and otherwise fails saying how; `ci/check` installs it before the
//! tests. Chromium runs with the flags this machine needs: no sandbox (root),
//! no GPU, and no background networking (the network is closed).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::protocol::cdp::{Browser as Cdp, Input, Log, Page, Runtime};
use headless_chrome::{Browser, LaunchOptions};
use sdd_harness::cli::{Env, exit, find_workspace, main_with};

/// Named one by one, so the Tier 1 threshold (the full suite's) is not
/// applied; the real-CLI case is skipped (no agents directory is given,
/// and `claude` is not on the test's PATH).
const SUITE: [&str; 5] = [
    "evals/loop/backlog-empty.yaml",
    "evals/loop/c4-pr-budget.yaml",
    "evals/loop/c6-gates-review.yaml",
    "harness/tests/cases/fails-on-purpose.yaml",
    "evals/loop/hook-text-only-first-reply.yaml",
];

/// The browser, installed first when it is missing and this process may.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("CHROME").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let path = PathBuf::from("/usr/bin/chromium");
    if path.is_file() {
        return path;
    }
    let as_root = rustix::process::geteuid().is_root();
    let apt = Path::new("/usr/bin/apt-get").is_file();
    assert!(
        as_root && apt,
        "Chromium is not installed at {}: install Debian's `chromium` package \
         (`sudo apt-get install chromium`) or point $CHROME at a Chromium binary",
        path.display()
    );
    let apt_get = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    let install = ["install", "-y", "-q", "--no-install-recommends", "chromium"];
    if !apt_get(&install) {
        assert!(
            apt_get(&["update", "-q"]) && apt_get(&install),
            "`apt-get install chromium` failed (see its output above)"
        );
    }
    assert!(path.is_file(), "apt-get installed no {}", path.display());
    path
}

/// The checkout's root: the tests run in the package directory, also from
/// a nextest archive (`--workspace-remap`).
fn workspace() -> PathBuf {
    find_workspace(&std::env::current_dir().unwrap()).expect("run inside the workspace")
}

/// Runs `sdd-evals run` in-process on [`SUITE`], writing into `out`.
fn write_report(out: &Path) -> String {
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let code = {
        let mut env = Env {
            stdout: &mut stdout,
            stderr: &mut stderr,
            vars: BTreeMap::from([("PATH".to_owned(), std::env::var("PATH").unwrap_or_default())]),
            cwd: find_workspace(&std::env::current_dir().unwrap())
                .expect("run inside the workspace"),
            exe: std::env::current_exe().unwrap(),
            stderr_is_terminal: false,
        };
        let mut args: Vec<OsString> = ["sdd-evals", "run", "--no-build", "--out"]
            .map(OsString::from)
            .to_vec();
        args.push(out.into());
        args.extend(SUITE.map(OsString::from));
        main_with(args, &mut env)
    };
    let stderr = String::from_utf8(stderr).unwrap();
    assert_eq!(code, exit::FAILED, "one case fails on purpose:\n{stderr}");
    stderr
}

/// What the page reported as an error: console errors and warnings,
/// uncaught exceptions, and error log entries (a failed load, say).
fn collect_errors(tab: &headless_chrome::Tab) -> Arc<Mutex<Vec<String>>> {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&errors);
    tab.add_event_listener(Arc::new(move |event: &Event| {
        let message = match event {
            Event::RuntimeConsoleAPICalled(e)
                if matches!(
                    e.params.Type,
                    Runtime::ConsoleAPICalledEventTypeOption::Error
                        | Runtime::ConsoleAPICalledEventTypeOption::Warning
                        | Runtime::ConsoleAPICalledEventTypeOption::Assert
                ) =>
            {
                let args: Vec<String> = e
                    .params
                    .args
                    .iter()
                    .map(|a| {
                        a.value
                            .as_ref()
                            .map_or_else(|| format!("{:?}", a.description), |v| v.to_string())
                    })
                    .collect();
                Some(format!("console {:?}: {}", e.params.Type, args.join(" ")))
            }
            Event::RuntimeExceptionThrown(e) => Some(format!(
                "uncaught exception: {}",
                e.params.exception_details.text
            )),
            Event::LogEntryAdded(e) if e.params.entry.level == Log::LogEntryLevel::Error => {
                Some(format!("log error: {}", e.params.entry.text))
            }
            _ => None,
        };
        if let Some(message) = message {
            sink.lock().unwrap().push(message);
        }
    }))
    .unwrap();
    errors
}

/// The page's answer to a script returning a string.
fn eval_string(tab: &headless_chrome::Tab, script: &str) -> String {
    let value = tab.evaluate(script, false).unwrap().value;
    match value {
        Some(serde_json::Value::String(s)) => s,
        other => panic!("{script} gave {other:?}"),
    }
}

#[test]
fn the_report_loads_shows_every_case_marks_the_failure_and_exports_feedback() {
    let out = workspace().join("target").join("sdd-evals-viewer");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let stderr = write_report(&out);
    let report = out.join("report.html");
    assert!(
        report.is_file(),
        "no report.html; sdd-evals said:\n{stderr}"
    );
    let profile = tempfile::tempdir().unwrap();
    let browser = launch(profile.path());
    let downloads = out.join("downloads");
    let page = open(&browser, &report, &downloads);
    every_case_is_shown_the_failing_one_first(&page.tab);
    let note = "Iteration 2 is wrong here: the empty backlog stops at 1.";
    write_feedback(&page.tab, note);
    let png = page
        .tab
        .capture_screenshot(Page::CaptureScreenshotFormatOption::Png, None, None, true)
        .unwrap();
    std::fs::write(out.join("report.png"), png).unwrap();
    let feedback = export_feedback(&page, &downloads);
    assert_eq!(feedback["status"], "complete");
    assert_eq!(feedback["reviews"][0]["run_id"], "fails-on-purpose");
    assert_eq!(feedback["reviews"][0]["feedback"], note);
    assert_eq!(feedback["reviews"].as_array().unwrap().len(), 1);

    let errors = page.errors.lock().unwrap();
    assert!(errors.is_empty(), "the page reported errors: {errors:#?}");
}

/// Headless Chromium with the flags this machine needs and its profile in
/// `profile`.
fn launch(profile: &Path) -> Browser {
    let flags = [
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ];
    Browser::new(LaunchOptions {
        path: Some(chromium()),
        headless: true,
        sandbox: false,
        window_size: Some((1280, 1700)),
        user_data_dir: Some(profile.to_path_buf()),
        args: flags.iter().map(OsStr::new).collect(),
        idle_browser_timeout: Duration::from_secs(120),
        ..LaunchOptions::default()
    })
    .expect("Chromium starts")
}

/// The report open in a tab, with what the page reports as errors and
/// the downloads it finishes.
struct Opened {
    tab: Arc<headless_chrome::Tab>,
    errors: Arc<Mutex<Vec<String>>>,
    downloads: mpsc::Receiver<Cdp::events::DownloadProgressEventParams>,
}

/// Opens `report` in a new tab that downloads into `downloads`.
fn open(browser: &Browser, report: &Path, downloads: &Path) -> Opened {
    let tab = browser.new_tab().unwrap();
    // A shared CI machine can be slow; a page this small never needs it.
    tab.set_default_timeout(Duration::from_secs(60));
    let errors = collect_errors(&tab);
    tab.enable_log().unwrap();
    tab.enable_runtime().unwrap();
    std::fs::create_dir_all(downloads).unwrap();
    tab.call_method(Cdp::SetDownloadBehavior {
        behavior: Cdp::SetDownloadBehaviorBehaviorOption::Allow,
        browser_context_id: None,
        download_path: Some(downloads.display().to_string()),
        events_enabled: Some(true),
    })
    .unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    let done_tx = Mutex::new(done_tx);
    tab.add_event_listener(Arc::new(move |event: &Event| {
        if let Event::BrowserDownloadProgress(e) = event
            && e.params.state != Cdp::DownloadProgressEventStateOption::InProgress
        {
            let _ = done_tx.lock().unwrap().send(e.params.clone());
        }
    }))
    .unwrap();
    let url = format!("file://{}", report.display());
    tab.navigate_to(&url)
        .unwrap()
        .wait_until_navigated()
        .unwrap();
    Opened {
        tab,
        errors,
        downloads: done_rx,
    }
}

/// Every case is on the page, the failing one first and open, each
/// status with its own colour, the counts and the failed assertion with
/// its evidence.
fn every_case_is_shown_the_failing_one_first(tab: &headless_chrome::Tab) {
    let cases: Vec<(String, String, bool, f64)> = serde_json::from_str(&eval_string(
        tab,
        "JSON.stringify(Array.from(document.querySelectorAll('details.case')).map(c => \
         [c.dataset.case, c.dataset.status, c.open, c.querySelector('summary').getBoundingClientRect().height]))",
    ))
    .unwrap();
    let ids: Vec<&str> = cases.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        ids,
        [
            "fails-on-purpose",
            "hook-text-only-first-reply",
            "backlog-empty",
            "c4-pr-budget",
            "c6-gates-review"
        ],
        "every case, the failing one first"
    );
    assert_eq!((cases[0].1.as_str(), cases[0].2), ("fail", true));
    assert_eq!(cases[1].1, "skip");
    assert!(cases[2..].iter().all(|c| c.1 == "pass" && !c.2));
    // A skipped case is not drawn as a pass: its edge has its own colour.
    let edges: Vec<String> = serde_json::from_str(&eval_string(
        tab,
        "JSON.stringify(['fails-on-purpose', 'hook-text-only-first-reply', 'backlog-empty'].map(id => \
         getComputedStyle(document.getElementById('case-' + id)).borderLeftColor))",
    ))
    .unwrap();
    assert!(
        edges[0] != edges[1] && edges[1] != edges[2] && edges[0] != edges[2],
        "fail, skip and pass edges differ: {edges:?}"
    );
    assert!(
        cases.iter().all(|c| c.3 > 0.0),
        "every case is shown: {cases:?}"
    );
    let text = eval_string(tab, "document.body.innerText");
    assert_eq!(
        eval_string(tab, "document.getElementById('run-counts').innerText")
            .split(" · ")
            .take(4)
            .collect::<Vec<_>>(),
        ["5 cases", "3 passed", "1 failed", "1 skipped"],
        "the header counts every case it lists"
    );
    assert!(
        text.contains("the last history line is iteration 2"),
        "the failed assertion is listed"
    );
    assert!(
        text.contains("last history line iteration = 1"),
        "with its evidence"
    );
    assert!(
        text.contains("The Tier 1 pass-rate threshold (80%) applies to the full suite; this run of 5 case(s) selected by name is not held to it."),
        "the threshold is the full suite's: {text}"
    );
    assert!(!text.contains("pass rate is 75%"), "{text}");
}

/// A reviewer writes `note` as the failing case's feedback.
fn write_feedback(tab: &headless_chrome::Tab, note: &str) {
    tab.find_element("textarea[data-case='fails-on-purpose']")
        .unwrap()
        .click()
        .unwrap();
    // Typed as one text input, the way a paste or an input method
    // commits it (per-key events take seconds per sentence).
    tab.call_method(Input::InsertText {
        text: note.to_owned(),
    })
    .unwrap();
    assert_eq!(
        eval_string(tab, "document.getElementById('feedback-count').textContent"),
        "1 case(s) with feedback"
    );
}

/// Exports the feedback with the page's own button; what it saved.
fn export_feedback(page: &Opened, downloads: &Path) -> serde_json::Value {
    page.tab
        .find_element("#export-feedback")
        .unwrap()
        .click()
        .unwrap();
    let download = page
        .downloads
        .recv_timeout(Duration::from_secs(30))
        .expect("the export button downloads a file");
    assert_eq!(
        download.state,
        Cdp::DownloadProgressEventStateOption::Completed
    );
    let saved = download
        .file_path
        .map(PathBuf::from)
        .unwrap_or_else(|| downloads.join("feedback.json"));
    assert_eq!(saved.file_name().unwrap(), "feedback.json");
    serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap()
}
