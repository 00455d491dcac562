//! No planted secret reaches disk or a terminal (issue 10, "Leaks"): the
//! real `sdd-loop` binary against the mock tracker, one row per channel a
//! secret can come in by — the skill's stderr and stdout, its result's
//! summary and failures, the tracker's error bodies, gate answers (flags
//! and the answers file), the in-session `end` and `event` commands, and
//! the environment (the tracker token, and a `MY_API_KEY` the skill
//! echoes). Secrets are exact values the engine knows only from its
//! environment, and credential shapes (`ghp_…`, `sk-ant-…`, `AKIA…`,
//! `Authorization: Bearer …`, a PEM private key).
//!
//! After every engine process, each planted secret — and every 12-character
//! piece of it, since half a token is still a leak — must occur 0 times in
//! any file under `.sdd/` (walked recursively, read as bytes) and in the
//! process's stdout and stderr; every row ends with `status` and
//! `status --json`. Each row also names the redaction markers it must
//! produce, so a row whose secret never reached its channel fails instead
//! of passing unseen.

#[path = "tree/mod.rs"]
mod tree;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rstest::rstest;
use sdd_mocks::fixture::Backlog;
use sdd_mocks::tracker::{BlockingMockTracker, Fault, MockTracker};

// ------------------------------------------------------------ the secrets

/// The tracker token: an exact value, no known shape.
const TRACKER_TOKEN: &str = "trk-7JNk2aCWZW7xB4rku5mR";
/// `MY_API_KEY`, passed on to the skill: an exact value, no known shape.
const API_KEY: &str = "myk-OQiddWLkKI7JjdKsw6DW";

const GH_STDERR: &str = "ghp_KcBEKanD0F0rPZkcHFuep88VxcA3iMwyAs0R";
const GH_EXIT: &str = "ghp_qDlRtQxiDX3pCNycLapim86tIxX5puQJCBEe";
const GH_HTML: &str = "ghp_PLu2Gk1oApccFt0MQeI72fjyK8x6Mjh9XXgC";
const GH_ANSWER: &str = "ghp_kZm8wBACpRrjNHl3hrDtkQP80lXlEXwuBoaI";
const GH_ERROR: &str = "ghp_Tcv5upfqCzLky63FR5pVH6rHEMFekFRD5ziA";
const GH_FAILED: &str = "ghp_ILwIyFSkJCg9A1c3aCIedwfjgMD1ZFiD3BXG";
const GH_FLAG: &str = "ghp_7CvUq5YSDBvPH6HjVpuNcRmP5LK1OEbZh9sB";
const GH_YAML: &str = "ghp_22pTs4fcM6JX9g0skQEjxMz6YmwlfLmBngRt";
const GH_CUT: &str = "ghp_Yt5Rk2Mw8Nq3Lz7Hc1Vb6Xd4Fs9Gj0Pa2Ue8T";
const GH_EVENT: &str = "ghp_Wn3sQk8RfT1vHy6LmZc4Xp9Bd2Ge7Ja5Uo0K";

const ANT_STDOUT: &str = "sk-ant-api03-49D3VWS0HUBCQVJnrMxhOYOanBNA3y3Z";
const ANT_ANSWER: &str = "sk-ant-api03-PmeXBZf0dwqxDBWmOVsDSsGFG6qzCOvw";
const ANT_RESULT: &str = "sk-ant-api03-UrE5C2ELEfSIUxZUz6Yk9MAUKeM2U1tb";
const ANT_USAGE: &str = "sk-ant-api03-LuPueVzNxsMlpktgJY07doKVe8AmKKC6";

const AWS_SUMMARY: &str = "AKIABZMVM7UDDCXZUKKH";
const AWS_ANSWERS: &str = "AKIAWKB86WFZ2WDJ2422";
const AWS_REPEATED: &str = "AKIALW1V963YMG1JCLM1";
const AWS_SESSION: &str = "AKIAX9YDDKTODLGXLTCZ";

/// Values of `Authorization: Bearer …` lines (no shape of their own).
const BEARER_CAUSE: &str = "bearer-MWBewWmFkkzZW9D8Xv4cl14l";
const BEARER_TRACKER: &str = "bearer-LTAjGP4Szgz90hpgBUOtUsIP";
const BEARER_RESULT: &str = "bearer-25gw16HNEMpIsaQk9RySogGO";
const BEARER_5XX: &str = "bearer-WEgK5zLnswe4mN3JHbezZcbP";

/// The body lines of two PEM private keys (on their own, they look like
/// nothing in particular).
const KEY_LINES: [&str; 2] = [
    "3RwgTP8vcAqLzFFX1dqapdhwpXib3x1gvgW66QxeZ6+UjrHGwl6btJkNsnpKQaH2",
    "shhhBbBsN1tdVo9M77wsdZt5wR8tf+Xv8JB/TWtOOqh6gQgWkeqebU3C9lniU62N",
];
const CUT_KEY_LINES: [&str; 2] = [
    "wqZyEtWB+XyitqjY6lAb6wvUXAFQMHth+1TRaPLg0K6vo12lp7ujWkaH9k1o09CY",
    "c46/1Mt5vD8/7ZM5cV7MxECVudehv1Nvzdv7OfFecs+6Tc1THctGfsEo8LSO2QL2",
];

// ------------------------------------------------------------- the world

const BACKLOG: &str = "\
repository: acme/app
issues:
  - number: 1
    title: One
    body: \"### Acceptance Criteria\\n- one\"
  - number: 2
    title: Two
    body: \"### Acceptance Criteria\\n- two\"
";

/// One engine process: what it was asked and what it printed.
struct Ran {
    label: String,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// A project, the mock tracker (requiring [`TRACKER_TOKEN`]), and what
/// every engine process printed and left under `.sdd/`.
struct World {
    tracker: BlockingMockTracker,
    dir: tempfile::TempDir,
    ran: Vec<Ran>,
    /// Every file seen under `.sdd/` after each process: (after which
    /// process, path, bytes).
    seen: Vec<(String, PathBuf, Vec<u8>)>,
    /// The tracker URL given to the engine, when not the mock's own.
    tracker_url: Option<String>,
    /// More environment for every engine process.
    env: Vec<(String, String)>,
}

impl World {
    fn new() -> Self {
        let backlog = Backlog::parse(Path::new("leaks.yaml"), BACKLOG).unwrap();
        let tracker = MockTracker::builder()
            .backlog(backlog)
            .token(TRACKER_TOKEN)
            .start_blocking()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        Self {
            tracker,
            dir,
            ran: Vec::new(),
            seen: Vec::new(),
            tracker_url: None,
            env: Vec::new(),
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.root().join(name), text).unwrap();
    }

    /// The wrapped skill, a shell script.
    fn skill(&self, script: &str) {
        self.write("skill.sh", &format!("#!/bin/sh\n{script}"));
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sdd-loop"));
        cmd.args(args)
            .current_dir(self.root())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.root().join("home"))
            .env(
                "SDD_LOOP_TRACKER_URL",
                self.tracker_url
                    .clone()
                    .unwrap_or_else(|| self.tracker.uri()),
            )
            .env("SDD_LOOP_REPO", "acme/app")
            .env("SDD_LOOP_TRACKER_TOKEN", TRACKER_TOKEN)
            .env("SDD_LOOP_TRACKER_RETRY_BUDGET", "1")
            .env("MY_API_KEY", API_KEY)
            .env("SDD_LOOP_SKILL_CMD", "sh ./skill.sh")
            .env("SDD_LOOP_NOW", "2026-05-09T14:00:00Z")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        cmd
    }

    /// Runs the engine with `args`, which must exit `code`; then records
    /// its output and every file under `.sdd/`.
    fn run(&mut self, args: &[&str], code: i32) {
        let out = self.command(args).output().unwrap();
        self.record(args, Some(code), out);
    }

    /// [`World::run`] with `stdin` piped in.
    fn run_stdin(&mut self, args: &[&str], stdin: &str, code: i32) {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        self.record(args, Some(code), out);
    }

    /// Records a finished process; `code`, if given, is the exit status
    /// it must have had.
    fn record(&mut self, args: &[&str], code: Option<i32>, out: std::process::Output) {
        let label = format!("sdd-loop {}", args.join(" "));
        assert!(
            code.is_none_or(|c| out.status.code() == Some(c)),
            "{label} exited {:?}, not {code:?}\nstdout:\n{}\nstderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for (path, bytes) in tree::files_under(&self.root().join(".sdd")) {
            self.seen.push((label.clone(), path, bytes));
        }
        self.ran.push(Ran {
            label,
            stdout: out.stdout,
            stderr: out.stderr,
        });
    }

    /// `status`, in text and JSON: it reads what the ticks left (and may
    /// find nothing, so any exit status goes).
    fn status(&mut self) {
        for args in [&["status", "work"][..], &["status", "work", "--json"]] {
            let out = self.command(args).output().unwrap();
            self.record(args, None, out);
        }
    }

    /// Every place a secret could show: (where, bytes).
    fn places(&self) -> Vec<(String, &[u8])> {
        let mut out = Vec::new();
        for r in &self.ran {
            out.push((format!("stdout of `{}`", r.label), &r.stdout[..]));
            out.push((format!("stderr of `{}`", r.label), &r.stderr[..]));
        }
        for (after, path, bytes) in &self.seen {
            let rel = path.strip_prefix(self.root()).unwrap_or(path);
            out.push((format!("{} after `{after}`", rel.display()), &bytes[..]));
        }
        out
    }
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// A secret's 12-character pieces: half a token is still a leak.
fn pieces(secret: &str) -> Vec<&str> {
    const PIECE: usize = 12;
    (0..=secret.len().saturating_sub(PIECE))
        .map(|i| &secret[i..(i + PIECE).min(secret.len())])
        .collect()
}

// ---------------------------------------------------------------- skills

/// Writes a result with `summary` and `failures` (JSON), as a skill does.
fn result_script(before: &str, summary: &str, failures: &str) -> String {
    format!(
        "{before}\ncat > \"$SDD_LOOP_RESULT\" <<EOF\n{{\"protocol\": 1, \"summary\": \"{summary}\", \"failures\": {failures},\n \"usage\": [{{\"model\": \"claude-haiku-4-7\", \"tokens_in\": 1000, \"tokens_out\": 100}}]}}\nEOF\n"
    )
}

fn pem(lines: &[&str]) -> String {
    let mut out = "-----BEGIN RSA PRIVATE KEY-----\n".to_owned();
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str("-----END RSA PRIVATE KEY-----\n");
    out
}

// ------------------------------------------------------------------ rows

/// The wrapper tick, then the same with `--json`.
fn two_ticks(w: &mut World, code: i32) {
    w.run(&["work", "--loop"], code);
    w.run(&["work", "--loop", "--json"], code);
}

fn skill_stderr(w: &mut World) {
    w.skill(&result_script(
        &format!("echo \"git push: remote rejected credentials {GH_STDERR}\" >&2"),
        "done",
        "[]",
    ));
    two_ticks(w, 0);
}

fn skill_stdout(w: &mut World) {
    w.skill(&result_script(
        &format!("echo \"calling the model API with {ANT_STDOUT}\""),
        "done",
        "[]",
    ));
    two_ticks(w, 0);
}

fn result_summary(w: &mut World) {
    w.skill(&result_script(
        "",
        &format!("Deployed the preview with {AWS_SUMMARY}"),
        "[]",
    ));
    two_ticks(w, 0);
}

fn failure_root_cause(w: &mut World) {
    w.skill(&result_script(
        "",
        "one failed",
        &format!(
            "[{{\"target\": \"#1\", \"root_cause\": \"curl -H 'Authorization: Bearer {BEARER_CAUSE}' failed\"}}]"
        ),
    ));
    two_ticks(w, 0);
}

fn private_key_on_stderr(w: &mut World) {
    w.skill(&result_script(
        &format!("cat >&2 <<'KEY'\n{}KEY", pem(&KEY_LINES)),
        "done",
        "[]",
    ));
    two_ticks(w, 0);
}

/// The skill dies in the middle of printing a key: its last stderr line,
/// the root cause of the failure, is a key's body line.
fn private_key_cut_short(w: &mut World) {
    w.skill(&format!(
        "printf '%s\\n' '-----BEGIN OPENSSH PRIVATE KEY-----' '{}' '{}' >&2\nexit 1\n",
        CUT_KEY_LINES[0], CUT_KEY_LINES[1]
    ));
    two_ticks(w, 0);
}

fn skill_exit_stderr_tail(w: &mut World) {
    w.skill(&format!(
        "echo \"fatal: could not read from remote with {GH_EXIT}\" >&2\nexit 3\n"
    ));
    two_ticks(w, 0);
}

/// The skill echoes the tracker token it inherited: on stdout, stderr, in
/// its summary and in a root cause.
fn tracker_token_echoed(w: &mut World) {
    w.skill(&result_script(
        "echo \"token=$SDD_LOOP_TRACKER_TOKEN\"\necho \"auth with $SDD_LOOP_TRACKER_TOKEN\" >&2",
        "pushed with $SDD_LOOP_TRACKER_TOKEN",
        "[{\"target\": \"#2\", \"root_cause\": \"403 for $SDD_LOOP_TRACKER_TOKEN\"}]",
    ));
    two_ticks(w, 0);
}

/// A secret-named variable the engine passes on, echoed everywhere.
fn env_api_key_echoed(w: &mut World) {
    w.skill(&result_script(
        "echo \"MY_API_KEY=$MY_API_KEY\"\necho \"key $MY_API_KEY refused\" >&2",
        "used $MY_API_KEY",
        "[{\"target\": \"#2\", \"root_cause\": \"401 for $MY_API_KEY\"}]",
    ));
    two_ticks(w, 0);
}

/// A tracker that quotes the credentials it refused, as JSON.
fn tracker_error_body_json(w: &mut World) {
    w.skill(&result_script("", "done", "[]"));
    let body = format!(
        "{{\"message\": \"Bad credentials: token {TRACKER_TOKEN} (Authorization: Bearer {BEARER_TRACKER})\"}}"
    );
    w.tracker
        .inject(Fault::error_body("GET", "**/issues", 401, body));
    two_ticks(w, 69);
}

/// A proxy's HTML error page that quotes a token (not JSON: the engine
/// shows the start of the body).
fn tracker_error_body_html(w: &mut World) {
    w.skill(&result_script("", "done", "[]"));
    let page = format!("<html><body>403 Forbidden: {GH_HTML} is not allowed</body></html>");
    w.tracker
        .inject(Fault::error_body("GET", "**/issues", 403, page));
    two_ticks(w, 69);
}

/// The engine shows the start of a page that is not JSON: a token the
/// page quotes across that cut must not be shown in part.
fn tracker_error_body_cut(w: &mut World) {
    w.skill(&result_script("", "done", "[]"));
    let page = format!("<html>{}{GH_CUT} refused</html>", "-".repeat(176));
    w.tracker
        .inject(Fault::error_body("GET", "**/issues", 403, page));
    two_ticks(w, 69);
}

/// A 5xx is retried until the retry budget runs out; its message is shown.
fn tracker_error_5xx(w: &mut World) {
    w.skill(&result_script("", "done", "[]"));
    let body = format!("{{\"message\": \"upstream said Authorization: Bearer {BEARER_5XX}\"}}");
    w.tracker
        .inject(Fault::error_body("GET", "**/issues", 502, body));
    two_ticks(w, 69);
}

/// No gate takes free text: an answer carrying a secret is refused, and
/// the refusal must not quote it.
fn gate_answer_flag(w: &mut World) {
    w.skill(&result_script("", "done", "[]"));
    let raise = format!("--answer=budget-escalation=raise max_iterations={GH_ANSWER}");
    w.run(&["work", "--loop", &raise], 64);
    let proceed = format!("--answer=ambiguous-criteria=proceed {ANT_ANSWER}");
    w.run(&["work", "--loop", "--json", &proceed], 64);
}

fn answers_file_bad_answer(w: &mut World) {
    w.skill(&result_script("", "done", "[]"));
    w.write(
        "user.yaml",
        &format!("- gate: backlog-drift\n  answer: \"continue {AWS_ANSWERS}\"\n"),
    );
    w.run(&["work", "--loop", "--answers", "user.yaml"], 65);
    w.run(&["work", "--loop", "--json", "--answers", "user.yaml"], 65);
}

/// A YAML error shows the offending line.
fn answers_file_yaml_error(w: &mut World) {
    w.skill(&result_script("", "done", "[]"));
    w.write(
        "user.yaml",
        &format!("- gate: {GH_YAML}\n  answer: continue\n"),
    );
    w.run(&["work", "--loop", "--answers", "user.yaml"], 65);
    w.run(&["work", "--loop", "--json", "--answers", "user.yaml"], 65);
}

/// The same root cause twice asks repeated-failure, whose question quotes
/// it; unanswered, `--json` prints the question.
fn repeated_failure_question(w: &mut World) {
    w.skill(&result_script(
        "",
        "failed",
        &format!("[{{\"target\": \"#1\", \"root_cause\": \"tests need {AWS_REPEATED}\"}}]"),
    ));
    w.run(&["work", "--loop"], 0);
    w.run(&["work", "--loop"], 0);
    w.run(&["work", "--loop", "--json"], 4);
    w.run(&["work", "--loop"], 4);
}

fn holder() -> String {
    std::process::id().to_string()
}

fn begin(w: &mut World) {
    let holder = holder();
    w.run(
        &["work", "begin", "--loop", "--json", "--holder-pid", &holder],
        0,
    );
}

fn end(w: &mut World, flags: &[&str], code: i32) {
    let holder = holder();
    let mut args = vec!["work", "end", "--json", "--holder-pid", &holder];
    args.extend_from_slice(flags);
    w.run(&args, code);
}

fn end_summary(w: &mut World) {
    begin(w);
    let summary = format!("--summary=Nothing opened; preview key {AWS_SESSION}");
    end(w, &[&summary], 0);
    begin(w);
    let summary = format!("--summary=echoed {API_KEY} and {TRACKER_TOKEN}");
    end(w, &[&summary], 0);
}

fn end_error(w: &mut World) {
    begin(w);
    let error = format!("--error=push failed: remote: invalid token {GH_ERROR}");
    end(w, &[&error], 0);
}

fn end_failed_flag(w: &mut World) {
    begin(w);
    let failed = format!("--failed=#1=push rejected for {GH_FAILED}");
    end(w, &[&failed], 0);
}

fn result_json() -> String {
    format!(
        "{{\"summary\": \"Opened nothing, used {ANT_RESULT}\", \"failures\": [{{\"target\": \"#2\", \"root_cause\": \"Authorization: Bearer {BEARER_RESULT}\"}}], \"usage\": [{{\"model\": \"claude-haiku-4-7\", \"tokens_in\": 10, \"tokens_out\": 1}}]}}"
    )
}

fn end_result_file(w: &mut World) {
    w.write("result.json", &result_json());
    begin(w);
    end(w, &["--result", "result.json"], 0);
}

fn end_result_stdin(w: &mut World) {
    let holder = holder();
    begin(w);
    let result = format!(
        "{{\"summary\": \"key {API_KEY}\", \"failures\": [{{\"target\": \"#1\", \"root_cause\": \"token {TRACKER_TOKEN}\"}}]}}"
    );
    w.run_stdin(
        &[
            "work",
            "end",
            "--json",
            "--holder-pid",
            &holder,
            "--result",
            "-",
        ],
        &result,
        0,
    );
}

/// Progress events appended by the session, then folded by `end`.
fn work_event(w: &mut World) {
    begin(w);
    let failure = format!(
        "{{\"event\": \"failure\", \"target\": \"#1\", \"root_cause\": \"lint needs {AWS_SESSION}\"}}"
    );
    w.run(&["work", "event", &failure], 0);
    let progress = format!("{{\"event\": \"progress\", \"message\": \"using {TRACKER_TOKEN}\"}}");
    w.run(&["work", "event", &progress], 0);
    // Refused events: the JSON error quotes what it refused.
    let unknown = format!("{{\"event\": \"{GH_EVENT}\"}}");
    w.run(&["work", "event", &unknown], 65);
    let mistyped = format!(
        "{{\"event\": \"usage\", \"model\": \"m\", \"tokens_in\": \"{API_KEY}\", \"tokens_out\": 1}}"
    );
    w.run(&["work", "event", &mistyped], 65);
    end(w, &[], 0);
}

/// Flags `end` refuses: the refusal must not quote them.
fn end_malformed_flags(w: &mut World) {
    begin(w);
    let failed = format!("--failed={GH_FLAG}");
    end(w, &[&failed], 64);
    let usage = format!("--usage={ANT_USAGE}");
    end(w, &[&usage], 64);
    end(w, &[], 0);
}

fn begin_answer_flag(w: &mut World) {
    let holder = holder();
    let answer = format!("--answer=backlog-drift=continue {AWS_SESSION}");
    w.run(
        &[
            "work",
            "begin",
            "--loop",
            "--json",
            "--holder-pid",
            &holder,
            &answer,
        ],
        64,
    );
}

fn begin_tracker_error(w: &mut World) {
    let body = format!("{{\"message\": \"token {TRACKER_TOKEN} revoked\"}}");
    w.tracker
        .inject(Fault::error_body("GET", "**/issues", 401, body));
    let holder = holder();
    w.run(
        &["work", "begin", "--loop", "--json", "--holder-pid", &holder],
        69,
    );
    w.run(&["work", "begin", "--loop", "--holder-pid", &holder], 69);
}

/// A password in the tracker URL (`https://user:password@host`): no
/// known shape, redacted as a URL's credentials.
const URL_PASSWORD: &str = "urlpw-Xq93kLmZ0aP7vB2nRt5";

/// Credentials in the tracker URL: printed in a tracker error, and on disk
/// mid-tick (the journal and request while the iteration is open).
fn tracker_url_credentials(w: &mut World) {
    let uri = w.tracker.uri();
    let (scheme, rest) = uri.split_once("://").unwrap();
    w.tracker_url = Some(format!("{scheme}://loop-bot:{URL_PASSWORD}@{rest}"));
    begin(w);
    // Mid-tick: the iteration is open, its journal and request on disk.
    w.status();
    end(w, &[], 0);
    w.tracker.inject(Fault::error_body(
        "GET",
        "**/issues",
        503,
        "{\"message\": \"down\"}",
    ));
    let holder = holder();
    w.run(
        &["work", "begin", "--loop", "--json", "--holder-pid", &holder],
        69,
    );
    w.run(&["work", "--loop"], 69);
}

/// A notification URL's topic and password (`SDD_LOOP_NOTIFY`): no
/// known shape.
const NOTIFY_TOPIC: &str = "ntfy-topic-Hh38KdLw02PqZ";
const NOTIFY_PASSWORD: &str = "ntfypw-Vb61sQeRt8ZmYx";

/// A port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A run that stops tells a notification URL that refuses the
/// connection: the failure is noted, the notice kept for a retry, and the
/// next tick retries it; the skill tries to echo the URL it cannot see.
fn notify_url_on_a_stop(w: &mut World) {
    let url = format!(
        "http://alice:{NOTIFY_PASSWORD}@127.0.0.1:{}/{NOTIFY_TOPIC}",
        closed_port()
    );
    w.env.push(("SDD_LOOP_NOTIFY".into(), url));
    w.skill(&result_script(
        "echo \"notify=$SDD_LOOP_NOTIFY\"\necho \"notify=$SDD_LOOP_NOTIFY\" >&2",
        "notified $SDD_LOOP_NOTIFY",
        "[]",
    ));
    w.run(&["work", "--loop", "--max-iterations", "1"], 0);
    w.run(&["work", "--loop"], 3);
    w.run(&["work", "--loop", "--json"], 3);
}

/// What the notification row must show: the stop's notice failed, named
/// by the target's origin alone, and it was kept.
const NOTIFY_FAILED: &str = "warning: the run-stopped notification to ntfy http://127.0.0.1:";

const GITHUB: &str = "[REDACTED:github-token]";
const URL_CREDENTIALS: &str = "[REDACTED:url-credentials]";
const ANTHROPIC: &str = "[REDACTED:anthropic-key]";
const AWS: &str = "[REDACTED:aws-access-key-id]";
const AUTHORIZATION: &str = "[REDACTED:authorization]";
const PRIVATE_KEY: &str = "[REDACTED:private-key]";
const TOKEN_ENV: &str = "[REDACTED:secret-env:SDD_LOOP_TRACKER_TOKEN]";
const API_KEY_ENV: &str = "[REDACTED:secret-env:MY_API_KEY]";

#[rstest]
#[case::skill_stderr(skill_stderr, &[GH_STDERR], &[GITHUB])]
#[case::skill_stdout(skill_stdout, &[ANT_STDOUT], &[ANTHROPIC])]
#[case::result_summary(result_summary, &[AWS_SUMMARY], &[AWS])]
#[case::failure_root_cause(failure_root_cause, &[BEARER_CAUSE], &[AUTHORIZATION])]
#[case::private_key_on_stderr(private_key_on_stderr, &KEY_LINES[..], &[PRIVATE_KEY])]
#[case::private_key_cut_short(private_key_cut_short, &CUT_KEY_LINES[..], &[PRIVATE_KEY])]
#[case::skill_exit_stderr_tail(skill_exit_stderr_tail, &[GH_EXIT], &[GITHUB])]
#[case::tracker_token_echoed(tracker_token_echoed, &[TRACKER_TOKEN], &[TOKEN_ENV])]
#[case::env_api_key_echoed(env_api_key_echoed, &[API_KEY], &[API_KEY_ENV])]
#[case::tracker_error_body_json(tracker_error_body_json, &[TRACKER_TOKEN, BEARER_TRACKER], &[TOKEN_ENV])]
#[case::tracker_error_body_html(tracker_error_body_html, &[GH_HTML], &[GITHUB])]
#[case::tracker_error_body_cut(tracker_error_body_cut, &[GH_CUT], &["HTTP 403: …"])]
#[case::tracker_error_5xx(tracker_error_5xx, &[BEARER_5XX], &[AUTHORIZATION])]
#[case::gate_answer_flag(gate_answer_flag, &[GH_ANSWER, ANT_ANSWER], &[GITHUB, ANTHROPIC])]
#[case::answers_file_bad_answer(answers_file_bad_answer, &[AWS_ANSWERS], &[AWS])]
#[case::answers_file_yaml_error(answers_file_yaml_error, &[GH_YAML], &[GITHUB])]
#[case::repeated_failure_question(repeated_failure_question, &[AWS_REPEATED], &[AWS])]
#[case::end_summary(end_summary, &[AWS_SESSION, API_KEY, TRACKER_TOKEN], &[AWS, API_KEY_ENV, TOKEN_ENV])]
#[case::end_error(end_error, &[GH_ERROR], &[GITHUB])]
#[case::end_failed_flag(end_failed_flag, &[GH_FAILED], &[GITHUB])]
#[case::end_result_file(end_result_file, &[ANT_RESULT, BEARER_RESULT], &[ANTHROPIC, AUTHORIZATION])]
#[case::end_result_stdin(end_result_stdin, &[API_KEY, TRACKER_TOKEN], &[API_KEY_ENV, TOKEN_ENV])]
#[case::work_event(work_event, &[AWS_SESSION, TRACKER_TOKEN, GH_EVENT, API_KEY], &[AWS, GITHUB, API_KEY_ENV])]
#[case::end_malformed_flags(end_malformed_flags, &[GH_FLAG, ANT_USAGE], &[GITHUB, ANTHROPIC])]
#[case::begin_answer_flag(begin_answer_flag, &[AWS_SESSION], &[AWS])]
#[case::begin_tracker_error(begin_tracker_error, &[TRACKER_TOKEN], &[TOKEN_ENV])]
#[case::tracker_url_credentials(tracker_url_credentials, &[URL_PASSWORD], &[URL_CREDENTIALS])]
#[case::notify_url_on_a_stop(notify_url_on_a_stop, &[NOTIFY_TOPIC, NOTIFY_PASSWORD], &[NOTIFY_FAILED, "work.notify.json for the next tick"])]
fn a_planted_secret_is_found_nowhere(
    #[case] act: fn(&mut World),
    #[case] secrets: &[&str],
    #[case] markers: &[&str],
) {
    let mut w = World::new();
    act(&mut w);
    w.status();

    let places = w.places();
    let mut found = Vec::new();
    for secret in secrets {
        for (place, bytes) in &places {
            let whole = count(bytes, secret.as_bytes());
            let cut = pieces(secret)
                .iter()
                .filter(|p| count(bytes, p.as_bytes()) > 0)
                .count();
            if whole + cut > 0 {
                found.push(format!(
                    "{secret:?} in {place}: {whole}× whole, {cut} of its pieces\n{}",
                    String::from_utf8_lossy(bytes)
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "planted secrets found:\n{}",
        found.join("\n")
    );
    for marker in markers {
        assert!(
            places
                .iter()
                .any(|(_, bytes)| count(bytes, marker.as_bytes()) > 0),
            "no {marker}: the secret never reached this channel\n{}",
            places
                .iter()
                .map(|(place, bytes)| format!("--- {place}\n{}", String::from_utf8_lossy(bytes)))
                .collect::<String>()
        );
    }
}

/// The work inherits the engine's environment, but never the person's
/// notification URLs: neither `SDD_LOOP_NOTIFY` nor a variable CLAUDE.md's
/// `Loop Notify` names (a model that reads the channel reads the gate's
/// person-only code).
#[test]
fn the_work_never_sees_the_notification_urls() {
    let mut w = World::new();
    w.write(
        "CLAUDE.md",
        "### SDD Configuration\n#### Loop Notify\n- TEAM_HOOK\n",
    );
    w.env.push((
        "SDD_LOOP_NOTIFY".into(),
        format!("http://127.0.0.1:{}/{NOTIFY_TOPIC}", closed_port()),
    ));
    w.env.push((
        "TEAM_HOOK".into(),
        format!("slack+http://127.0.0.1:{}/hook", closed_port()),
    ));
    w.skill(&result_script(
        "echo \"notify=${SDD_LOOP_NOTIFY-unset} hook=${TEAM_HOOK-unset} key=${MY_API_KEY:+set}\" > seen.txt",
        "done",
        "[]",
    ));
    w.run(&["work", "--loop"], 0);
    assert_eq!(
        std::fs::read_to_string(w.root().join("seen.txt")).unwrap(),
        "notify=unset hook=unset key=set\n"
    );
}
