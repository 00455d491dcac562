//! Redaction throughput: the redactor a tick builds (built-in rules, a
//! tracker token, secret environment values, two project patterns) run over
//! a skill's echoed output line by line, as the tick does — how fast, and
//! whether any planted secret got through.
//!
//! ```text
//! cargo run --release -p sdd-loop --example redact_throughput -- --mb 64
//! lines=1142683 mb=64.0 planted=5699 survived=0 secs=0.97 mb_per_sec=65.8
//! ```
//!
//! The output is synthetic but shaped like the real thing: compiler and
//! test-runner lines, git output, JSON progress lines, with a secret planted
//! every `--secret-every` lines (default 200) and a private-key block every
//! fiftieth of those. Exit status 1 if a planted secret survived.

use std::path::Path;
use std::time::Instant;

use sdd_loop::rules::claude_md::ClaudeMd;
use sdd_loop::rules::redact::Redactor;

struct Options {
    mb: f64,
    secret_every: u64,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        mb: 32.0,
        secret_every: 200,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .ok_or_else(|| format!("{name} needs a value"))
                .cloned()
        };
        match arg.as_str() {
            "--mb" => {
                opts.mb = value("--mb")?
                    .parse()
                    .ok()
                    .filter(|v: &f64| *v > 0.0)
                    .ok_or("--mb takes a positive number")?;
            }
            "--secret-every" => {
                opts.secret_every = value("--secret-every")?
                    .parse()
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or("--secret-every takes a positive whole number")?;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(opts)
}

/// xorshift64*: enough randomness for filler, and reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn alnum(&mut self, len: usize) -> String {
        const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..len)
            .map(|_| CHARS[self.below(CHARS.len() as u64) as usize] as char)
            .collect()
    }
}

const TRACKER_TOKEN: &str = "trk-0f3a9c2e7b1d4a5f";
const ENV_SECRET: &str = "db-pass-Zq81xLw0";

fn filler(rng: &mut Rng, n: u64) -> String {
    match rng.below(6) {
        0 => format!(
            "   Compiling sdd-part-{} v0.{}.{} (/work/app/crates/part-{})",
            n % 97,
            n % 13,
            n % 7,
            n % 97
        ),
        1 => format!("test tests::case_{n} ... ok ({} ms)", rng.below(900)),
        2 => format!(
            "{} feat: handle issue #{} in the backlog view",
            &format!("{:016x}", rng.next())[..10],
            n % 500
        ),
        3 => format!(
            r#"{{"event":"progress","message":"step {n} of the plan","at":"2026-05-09T14:{:02}:00Z"}}"#,
            n % 60
        ),
        4 => format!(
            "warning: unused variable `value_{}` at src/module_{}.rs:{}:9",
            n % 31,
            n % 17,
            n % 400
        ),
        _ => format!(
            "remote: Resolving deltas: {}% ({}/{}), done.",
            n % 100,
            n,
            n + 7
        ),
    }
}

/// A secret line and the text that must not reach the output.
fn secret(rng: &mut Rng, n: u64) -> (Vec<String>, String) {
    match n % 6 {
        0 => {
            let token = format!("ghp_{}", rng.alnum(36));
            (vec![format!("fatal: push with {token} rejected")], token)
        }
        1 => {
            let key = format!("AKIA{}", rng.alnum(16).to_ascii_uppercase());
            (vec![format!("aws_access_key_id = {key}")], key)
        }
        2 => (
            vec![format!("curl -H 'Authorization: Bearer {TRACKER_TOKEN}' …")],
            TRACKER_TOKEN.to_owned(),
        ),
        3 => (
            vec![format!("connecting with password {ENV_SECRET}")],
            ENV_SECRET.to_owned(),
        ),
        4 => {
            let key = format!("sk-ant-api03-{}", rng.alnum(80));
            (vec![format!(r#"{{"api_key":"{key}"}}"#)], key)
        }
        _ => {
            let body = rng.alnum(64);
            (
                vec![
                    "-----BEGIN OPENSSH PRIVATE KEY-----".to_owned(),
                    body.clone(),
                    rng.alnum(64),
                    "-----END OPENSSH PRIVATE KEY-----".to_owned(),
                ],
                body,
            )
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = match parse_args(&args) {
        Ok(o) => o,
        Err(e) => {
            #[expect(clippy::print_stderr, reason = "a stress program reports on stderr")]
            {
                eprintln!("error: {e}\nhelp: redact_throughput [--mb N] [--secret-every N]");
            }
            std::process::exit(64);
        }
    };
    let md = ClaudeMd::parse(
        Path::new("CLAUDE.md"),
        "### SDD Configuration\n### Loop Logging\n- `(?i)customer-\\d+`\n- `acme-internal\\.example`\n",
    );
    let redactor = Redactor::builder()
        .env([
            ("DATABASE_PASSWORD", ENV_SECRET),
            ("HOME", "/home/someone"),
            ("CARGO_TERM_COLOR", "always"),
        ])
        .secret("tracker-token", TRACKER_TOKEN)
        .claude_md(&md)
        .expect("the example's patterns compile")
        .build();

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let target = (opts.mb * 1024.0 * 1024.0) as usize;
    let mut lines: Vec<String> = Vec::new();
    let mut planted: Vec<String> = Vec::new();
    let mut bytes = 0;
    let mut n = 0u64;
    while bytes < target {
        n += 1;
        let new = if n.is_multiple_of(opts.secret_every) {
            let (text, secret) = secret(&mut rng, n / opts.secret_every);
            planted.push(secret);
            text
        } else {
            vec![filler(&mut rng, n)]
        };
        bytes += new.iter().map(|l| l.len() + 1).sum::<usize>();
        lines.extend(new);
    }

    let started = Instant::now();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut by_line = redactor.lines();
    for line in &lines {
        out.push(by_line.line(line).into_owned());
    }
    let secs = started.elapsed().as_secs_f64();

    let text = out.join("\n");
    let survived = planted.iter().filter(|s| text.contains(s.as_str())).count();
    let mb = bytes as f64 / (1024.0 * 1024.0);
    #[expect(clippy::print_stdout, reason = "the figures are the program's output")]
    {
        println!(
            "lines={} mb={mb:.1} planted={} survived={survived} secs={secs:.2} mb_per_sec={:.1}",
            lines.len(),
            planted.len(),
            mb / secs
        );
    }
    if survived > 0 {
        std::process::exit(1);
    }
}
