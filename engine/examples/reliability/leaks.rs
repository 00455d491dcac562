//! Family `secret leaks` (issue "no secret persisted", Done-when): a
//! distinct secret is planted in each place a tick reads text from — the
//! skill's stderr and stdout, its summary, a failure's root cause, a
//! progress event, a gate answer (`--answer` and an `--answers` file), a
//! tracker error body, the tracker token and a `*_TOKEN` environment
//! variable (both echoed by the skill) — and every output of every tick
//! and every file under `.sdd/` (after each tick that ended by itself) is
//! searched for each one. A violation is one occurrence.
//!
//! The secrets are credential shapes where the surface calls for one and
//! plain random text for the token and the environment value (only their
//! exact values can be recognised). Each is searched for whole and by its
//! random tail, so a redaction that leaves part of it behind counts too.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use crate::world::{self, Fault, Project, Ran, Tracker};
use crate::{Ctx, Row, SplitMix};

/// One planted secret: where it was planted, its text, and the tail
/// searched for.
struct Planted {
    surface: &'static str,
    text: String,
    tail: String,
    /// The text just before it where it is planted: followed by
    /// `[REDACTED` in some output, it shows the secret reached the engine
    /// and was redacted (not merely dropped).
    context: &'static str,
}

fn random(rng: &mut SplitMix, alphabet: &[u8], n: usize) -> String {
    (0..n)
        .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize] as char)
        .collect()
}

fn plant(
    rng: &mut SplitMix,
    (surface, context): (&'static str, &'static str),
    prefix: &str,
    alphabet: &[u8],
    n: usize,
) -> Planted {
    let body = random(rng, alphabet, n);
    Planted {
        surface,
        text: format!("{prefix}{body}"),
        tail: body[n - 14..].to_owned(),
        context,
    }
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &[u8] = b"0123456789abcdef";
const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn planted() -> Vec<Planted> {
    let mut rng = SplitMix::new(0x5ec7e7);
    vec![
        plant(
            &mut rng,
            (
                "tracker token (echoed by the skill)",
                "SDD_LOOP_TRACKER_TOKEN=",
            ),
            "",
            HEX,
            40,
        ),
        plant(
            &mut rng,
            (
                "DEPLOY_API_TOKEN env (echoed by the skill)",
                "DEPLOY_API_TOKEN=",
            ),
            "",
            ALNUM,
            32,
        ),
        plant(
            &mut rng,
            ("skill stderr", "retrying with "),
            "ghp_",
            ALNUM,
            36,
        ),
        plant(
            &mut rng,
            ("skill stdout", "using key "),
            "sk-ant-api03-",
            ALNUM,
            48,
        ),
        plant(
            &mut rng,
            ("result summary", "token was "),
            "github_pat_",
            ALNUM,
            60,
        ),
        plant(
            &mut rng,
            ("failure root cause", "bad credentials "),
            "AKIA",
            UPPER,
            16,
        ),
        plant(
            &mut rng,
            ("progress event", "pushing with "),
            "sk-proj-",
            ALNUM,
            40,
        ),
        plant(
            &mut rng,
            ("--answer value", "budget-escalation="),
            "ghs_",
            ALNUM,
            36,
        ),
        plant(
            &mut rng,
            ("--answer gate name", "value '"),
            "gho_",
            ALNUM,
            36,
        ),
        plant(
            &mut rng,
            ("--answers file", "`continue "),
            "xoxb-",
            ALNUM,
            40,
        ),
        plant(
            &mut rng,
            ("tracker error body", "token "),
            "ghu_",
            ALNUM,
            36,
        ),
    ]
}

fn count(haystack: &[u8], needle: &str) -> usize {
    let needle = needle.as_bytes();
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[derive(Default)]
struct Found {
    /// `(surface, where)` → occurrences.
    hits: BTreeMap<(&'static str, String), usize>,
    /// Surfaces whose secret was seen redacted somewhere.
    redacted: std::collections::BTreeSet<&'static str>,
    places: usize,
}

impl Found {
    fn search(&mut self, secrets: &[Planted], place: &str, bytes: &[u8]) {
        self.places += 1;
        for s in secrets {
            if count(bytes, &format!("{}[REDACTED", s.context)) > 0 {
                self.redacted.insert(s.surface);
            }
            let n = count(bytes, &s.text).max(count(bytes, &s.tail));
            if n > 0 {
                *self.hits.entry((s.surface, place.to_owned())).or_default() += n;
            }
        }
    }

    fn output(&mut self, secrets: &[Planted], tick: &str, ran: &Ran) {
        self.search(secrets, &format!("{tick}: stdout"), &ran.stdout);
        self.search(secrets, &format!("{tick}: stderr"), &ran.stderr);
    }

    fn state(&mut self, secrets: &[Planted], tick: &str, p: &Project) {
        let mut files = Vec::new();
        files_under(&p.root().join(".sdd"), &mut files);
        for f in files {
            let bytes = std::fs::read(&f).unwrap_or_default();
            let name = f.strip_prefix(p.root()).unwrap_or(&f).display().to_string();
            self.search(secrets, &format!("after {tick}: {name}"), &bytes);
        }
    }
}

pub fn run(ctx: &Ctx) -> Row {
    let secrets = planted();
    let secret = |surface: &str| {
        secrets
            .iter()
            .find(|s| s.surface.starts_with(surface))
            .map(|s| s.text.clone())
            .expect("planted")
    };
    let tracker = Tracker::start();
    let mut p = Project::new(&ctx.engine, &tracker);
    p.set("SDD_LOOP_TRACKER_TOKEN", secret("tracker token"));
    p.set("DEPLOY_API_TOKEN", secret("DEPLOY_API_TOKEN"));
    p.set("REL_MODE", "leak");
    p.set("REL_LEAK_ECHO", "SDD_LOOP_TRACKER_TOKEN,DEPLOY_API_TOKEN");
    p.set("REL_LEAK_STDERR", secret("skill stderr"));
    p.set("REL_LEAK_STDOUT", secret("skill stdout"));
    p.set("REL_LEAK_SUMMARY", secret("result summary"));
    p.set("REL_LEAK_CAUSE", secret("failure root cause"));
    p.set("REL_LEAK_EVENT", secret("progress event"));
    // The same root cause twice asks the repeated-failure gate.
    let tick = |p: &Project| {
        let mut cmd = p.tick();
        cmd.args(["--answer", "repeated-failure=retry"]);
        cmd
    };
    let answers = p.root().join("answers.yaml");
    std::fs::write(
        &answers,
        format!(
            "- gate: budget-escalation\n  answer: \"continue {}\"\n",
            secret("--answers file")
        ),
    )
    .expect("answers file");

    let mut found = Found::default();
    let mut problems = Vec::new();
    let mut expect = |name: &str, ran: &Ran, code: i32, found: &mut Found| {
        found.output(&secrets, name, ran);
        if ran.code() != Some(code) {
            problems.push(format!(
                "{name}: {} (expected exit {code}): {}",
                ran.how(),
                ran.output()
            ));
        }
    };

    let ran = world::run(tick(&p));
    expect("leaking tick", &ran, 0, &mut found);
    found.state(&secrets, "leaking tick", &p);

    let mut json = tick(&p);
    json.arg("--json");
    let ran = world::run(json);
    expect("leaking tick --json", &ran, 0, &mut found);
    found.state(&secrets, "leaking tick --json", &p);

    let mut crashed = tick(&p);
    crashed.env("SDD_LOOP_CRASH_AT", "after-skill");
    let ran = world::run(crashed);
    found.output(&secrets, "tick crashed after its skill", &ran);
    let ran = world::run(tick(&p));
    expect("recovering tick", &ran, 0, &mut found);
    found.state(&secrets, "recovering tick", &p);

    let ran = world::run(p.command(&["status", "work"]));
    expect("sdd-loop status work", &ran, 0, &mut found);

    for (name, value) in [
        (
            "--answer value",
            format!("budget-escalation={}", secret("--answer value")),
        ),
        (
            "--answer gate name",
            format!("{}=continue", secret("--answer gate name")),
        ),
    ] {
        let mut cmd = p.tick();
        cmd.arg("--answer").arg(value);
        let ran = world::run(cmd);
        expect(name, &ran, 64, &mut found);
    }
    let mut cmd = p.tick();
    cmd.arg("--answers").arg(&answers);
    let ran = world::run(cmd);
    expect("--answers file", &ran, 65, &mut found);
    found.state(&secrets, "--answers file", &p);

    tracker.set_fault(Fault::Status(
        422,
        format!(
            "{{\"message\": \"Validation Failed: token {} is not allowed\"}}",
            secret("tracker error body")
        ),
    ));
    let ran = world::run(tick(&p));
    tracker.set_fault(Fault::None);
    expect("tracker error body", &ran, 69, &mut found);
    found.state(&secrets, "tracker error body", &p);

    let occurrences: usize = found.hits.values().sum();
    let mut report: Vec<String> = found
        .hits
        .iter()
        .map(|((surface, place), n)| format!("{surface}: {n}× in {place}"))
        .collect();
    report.extend(problems.iter().cloned());
    let unseen: Vec<&str> = secrets
        .iter()
        .map(|s| s.surface)
        .filter(|s| !found.redacted.contains(s))
        .collect();
    if !unseen.is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "[secret leaks] never printed or stored (so not seen redacted): {}",
            unseen.join(", ")
        );
    }
    crate::report_problems("secret leaks", &report);
    Row {
        family: "secret leaks",
        what: "a distinct secret planted in each of: skill stderr, stdout, summary, root cause, progress event, `--answer` (value and gate), `--answers` file, tracker error body, tracker token and a `*_TOKEN` variable echoed by the skill; searched in every output and every file under `.sdd/`".into(),
        trials: format!("{} secrets, {} outputs and files searched", secrets.len(), found.places),
        result: format!(
            "found {occurrences} times; {} of {} seen replaced by a `[REDACTED:…]` marker, the others never printed or stored",
            found.redacted.len(),
            secrets.len()
        ),
        violations: Some((occurrences + problems.len()) as u64),
        secs: 0.0,
    }
}
