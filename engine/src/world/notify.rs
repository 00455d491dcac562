//! Notifications to the person (`docs/src/notifications.md`): a plain
//! HTTP POST to each URL the user configured, when a gate is posted on the
//! tracker or asked where the loop runs and not yet answered, a run
//! stops, or a usage window makes the loop wait.
//!
//! # API
//!
//! - [`Target::parse`] reads one configured URL (`--notify URL`,
//!   `SDD_LOOP_NOTIFY`, CLAUDE.md's `Notify` setting) and picks its format
//!   ([`Format`]): an explicit prefix `ntfy+`, `slack+` or `discord+`
//!   before `http(s)://` wins; otherwise `hooks.slack.com` is Slack,
//!   `discord.com`/`discordapp.com` under `/api/webhooks/` is Discord, and
//!   every other URL is ntfy (a plain-text POST, which most receivers
//!   accept). Credentials in the URL (`https://user:pass@host/…` becomes
//!   `Authorization: Basic`, `https://TOKEN@host/…` becomes `Bearer`) are
//!   sent as a header, never in the URL. [`Target::secrets`] is what a
//!   redactor must remove (the URL whole: an ntfy topic is its own
//!   password) and [`Target::shown`] the form safe to print.
//! - [`Notice`] is one event ([`notice`]): [`GatePosted`] (its question,
//!   options, link and the person-only code, which appears only in the
//!   notification's body and is never written to disk), [`GateAsked`]
//!   (a gate asked where the loop runs: its question, options and where
//!   to answer), [`RunStopped`] (the stop condition and the final
//!   figures) or [`WindowWaits`] (which window, why, until when).
//! - [`tell`] sends one notice to every target, redacted, all targets at
//!   once and none past `deadline`, and returns what failed; it never
//!   returns an error and never panics on a bad answer.
//! - [`test`] posts a test message (`sdd-loop doctor --notify-test`).
//! - [`Outbox`] is a tick's whole delivery: the undelivered notices kept
//!   in `.sdd/loop/{skill}.notify.json` ([`pending_path`]) are retried
//!   once, then the new ones are sent, all within [`TICK_LIMIT`]; what
//!   failed again is kept for the next tick, up to [`MAX_TICKS`] ticks.
//!
//! In a tick, a notice is queued with `Ctx::notify` (`engine/src/tick/ctx.rs`)
//! and the tick delivers once (`Ctx::deliver`): before its history line
//! is written, whose `notifications` records what was sent and what
//! failed, or at the tick's end — a queued notice is told even when the
//! tick then fails. Only a loop tick with notification URLs queues
//! anything.
//!
//! Formats: ntfy gets the text as the body with `Title`, `Tags`,
//! `Priority` and `Click` headers (ntfy's publish API); Slack gets
//! `{"text": …}` and Discord `{"content": …}` (their incoming webhooks),
//! the title in bold on the first line. Any 2xx answer is delivered;
//! anything else (another status, a refused connection, no answer in
//! time) is a [`Failure`] that names the target's shown form and why.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::rules::redact::Redactor;

mod notice;

pub use notice::{GateAsked, GatePosted, Notice, RunStopped, WindowWaits};

/// The environment variable that lists notification URLs (separated by
/// whitespace or commas). It and every variable a setting names are
/// removed from the work's environment ([`child_env_removed`]).
pub const ENV_NOTIFY: &str = "SDD_LOOP_NOTIFY";

/// The longest all of a tick's notifications may take together, from the
/// first connection to the last answer: a receiver that hangs costs a
/// tick this much and no more.
pub const TICK_LIMIT: Duration = Duration::from_secs(5);

/// How many ticks try an undelivered notice (the one it arose in and the
/// retries after) before it is given up with a note.
pub const MAX_TICKS: u32 = 3;

/// The longest excerpt of a refusing receiver's answer quoted in a failure.
const EXCERPT: usize = 200;

/// How a target wants its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// The text as the body, the rest as ntfy's headers.
    Ntfy,
    /// `{"text": "…"}` (Slack's incoming webhooks, Mattermost, Rocket.Chat).
    Slack,
    /// `{"content": "…"}` (Discord's webhooks).
    Discord,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Ntfy => "ntfy",
            Format::Slack => "slack",
            Format::Discord => "discord",
        }
    }
}

/// Why a configured notification URL cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("notification URL {shown} is not an http:// or https:// URL")]
    Scheme { shown: String },
    #[error("notification URL {shown} has no host")]
    NoHost { shown: String },
    #[error("notification URL {shown} has an unknown format prefix {prefix:?}")]
    Prefix { shown: String, prefix: String },
}

impl TargetError {
    pub fn help(&self) -> &'static str {
        match self {
            TargetError::Scheme { .. } | TargetError::NoHost { .. } => {
                "give a full URL such as https://ntfy.sh/YOUR-TOPIC or https://hooks.slack.com/services/…, optionally prefixed ntfy+, slack+ or discord+ (docs/src/notifications.md)"
            }
            TargetError::Prefix { .. } => {
                "the prefixes are ntfy+, slack+ and discord+ (for example slack+https://chat.example/hooks/…)"
            }
        }
    }
}

/// One notification URL, read.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    format: Format,
    /// The URL posted to, without the prefix and the credentials.
    url: String,
    /// The `Authorization` header the URL's credentials make.
    auth: Option<String>,
    /// The URL as configured.
    raw: String,
    /// `scheme://host`, what is printed.
    origin: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("format", &self.format)
            .field("shown", &self.shown())
            .finish_non_exhaustive()
    }
}

impl Target {
    /// Reads one configured URL.
    pub fn parse(configured: &str) -> Result<Self, TargetError> {
        let raw = configured.trim().to_owned();
        let (prefix, rest) = match raw.split_once("+http") {
            Some((p, r)) if !p.contains('/') && !p.contains(':') => {
                (Some(p.to_ascii_lowercase()), format!("http{r}"))
            }
            _ => (None, raw.clone()),
        };
        let (scheme, after) = match rest.split_once("://") {
            Some((s, a)) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https") => {
                (s.to_ascii_lowercase(), a)
            }
            _ => {
                return Err(TargetError::Scheme {
                    shown: shown_unparsed(&raw),
                });
            }
        };
        let (authority, path) = match after.find(['/', '?', '#']) {
            Some(i) => after.split_at(i),
            None => (after, ""),
        };
        let (userinfo, host) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if host.is_empty() || host.starts_with(':') {
            return Err(TargetError::NoHost {
                shown: format!("{scheme}://…"),
            });
        }
        let origin = format!("{scheme}://{host}");
        let format = match prefix.as_deref() {
            Some("ntfy") => Format::Ntfy,
            Some("slack") => Format::Slack,
            Some("discord") => Format::Discord,
            Some(other) => {
                return Err(TargetError::Prefix {
                    shown: origin,
                    prefix: other.to_owned(),
                });
            }
            None => guess_format(host, path),
        };
        Ok(Self {
            format,
            url: format!("{origin}{path}"),
            auth: userinfo.filter(|u| !u.is_empty()).map(authorization),
            raw,
            origin,
        })
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// The URL posted to (credentials removed, still secret: a topic or a
    /// webhook path is a password).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What is printed for this target: its format and `scheme://host`,
    /// never its path, query or credentials.
    pub fn shown(&self) -> String {
        format!("{} {}/…", self.format.as_str(), self.origin)
    }

    /// Every value a redactor must remove: the URL as configured, the URL
    /// posted to and the credentials' header value.
    pub fn secrets(&self) -> Vec<String> {
        let mut all = vec![self.raw.clone(), self.url.clone()];
        all.extend(self.auth.clone());
        all
    }

    /// A topic on the public ntfy.sh server, sent without credentials:
    /// anyone who knows its name can read it.
    pub fn is_public_ntfy(&self) -> bool {
        self.format == Format::Ntfy
            && self.auth.is_none()
            && (self.origin == "https://ntfy.sh" || self.origin == "http://ntfy.sh")
    }
}

/// Reads every URL of a list (whitespace or commas between them).
pub fn parse_list(list: &str) -> Result<Vec<Target>, TargetError> {
    list.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
        .map(Target::parse)
        .collect()
}

/// `builder` with every secret of `urls` (each URL whole and, when it
/// reads, its parts [`Target::secrets`]): what a redactor needs so that
/// no notification URL is ever printed or written.
pub fn with_secrets(
    mut builder: crate::rules::redact::RedactorBuilder,
    urls: &[String],
) -> crate::rules::redact::RedactorBuilder {
    for url in urls.iter().filter(|u| !u.trim().is_empty()) {
        builder = builder.secret("notify-url", url);
        if let Ok(target) = Target::parse(url) {
            for secret in target.secrets() {
                builder = builder.secret("notify-url", &secret);
            }
        }
    }
    builder
}

/// The variables removed from the work's environment: [`ENV_NOTIFY`] and
/// `named` (variables a setting names as holding notification URLs).
pub fn child_env_removed(named: &[String]) -> Vec<String> {
    let mut all = vec![ENV_NOTIFY.to_owned()];
    for n in named {
        if !all.contains(n) {
            all.push(n.clone());
        }
    }
    all
}

fn guess_format(host: &str, path: &str) -> Format {
    let host = host
        .rsplit_once(':')
        .map_or(host, |(h, _)| h)
        .to_ascii_lowercase();
    if host == "hooks.slack.com" {
        Format::Slack
    } else if (host == "discord.com"
        || host.ends_with(".discord.com")
        || host == "discordapp.com"
        || host.ends_with(".discordapp.com"))
        && path.starts_with("/api/webhooks/")
    {
        Format::Discord
    } else {
        Format::Ntfy
    }
}

/// What may be printed of a URL that could not be read: its scheme, if it
/// has one.
fn shown_unparsed(raw: &str) -> String {
    match raw.split_once("://") {
        Some((scheme, _)) if scheme.len() < 20 => format!("{scheme}://…"),
        _ => "(not a URL)".to_owned(),
    }
}

/// `user:password` is Basic, a lone value a Bearer token.
fn authorization(userinfo: &str) -> String {
    let decoded = percent_decode(userinfo);
    if decoded.contains(':') {
        format!("Basic {}", base64(decoded.as_bytes()))
    } else {
        format!("Bearer {decoded}")
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (k, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if k <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A notification that did not arrive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The target's position in the configured list.
    pub target: usize,
    /// [`Target::shown`].
    pub shown: String,
    /// Why, redacted: `HTTP 500: …`, `no answer within 5 s`, `refused: …`.
    pub detail: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.shown, self.detail)
    }
}

/// Sends `notice` to every target at once, redacted with `redactor`, none
/// past `deadline`; returns what failed (empty: every target answered 2xx).
pub fn tell(
    targets: &[Target],
    notice: &Notice,
    redactor: &Redactor,
    deadline: Instant,
) -> Vec<Failure> {
    let all: Vec<usize> = (0..targets.len()).collect();
    send_all(targets, &[(notice, all)], redactor, deadline)
        .into_iter()
        .map(|(_, f)| f)
        .collect()
}

/// Sends each notice to the targets listed with it: one thread per
/// target, its notices in order; returns each failure with its notice's
/// position.
fn send_all(
    targets: &[Target],
    notices: &[(&Notice, Vec<usize>)],
    redactor: &Redactor,
    deadline: Instant,
) -> Vec<(usize, Failure)> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = targets
            .iter()
            .enumerate()
            .map(|(t, target)| {
                scope.spawn(move || {
                    let mut failed = Vec::new();
                    for (n, (notice, to)) in notices.iter().enumerate() {
                        if !to.contains(&t) {
                            continue;
                        }
                        if let Err(detail) = post_notice(target, notice, redactor, deadline) {
                            failed.push((
                                n,
                                Failure {
                                    target: t,
                                    shown: target.shown(),
                                    detail: redactor.apply(&detail),
                                },
                            ));
                        }
                    }
                    failed
                })
            })
            .collect();
        let mut all: Vec<(usize, Failure)> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect();
        all.sort_by_key(|(n, f)| (*n, f.target));
        all
    })
}

/// What one POST carries, whatever the format.
struct Message<'a> {
    title: String,
    text: String,
    tags: &'static str,
    priority: &'static str,
    click: Option<&'a str>,
}

/// Posts a test message to `target` (`sdd-loop doctor --notify-test`):
/// `Ok` on a 2xx answer within `limit`, else why not.
pub fn test(target: &Target, redactor: &Redactor, limit: Duration) -> Result<(), String> {
    let message = Message {
        title: "sdd-loop doctor: a test notification".to_owned(),
        text: "This URL will be told when a gate waits for you, the loop stops, or a usage window makes it wait.".to_owned(),
        tags: "white_check_mark,sdd-loop",
        priority: "2",
        click: None,
    };
    post(target, &message, redactor, Instant::now() + limit)
}

/// One POST of `notice`, given what is left until `deadline`.
fn post_notice(
    target: &Target,
    notice: &Notice,
    redactor: &Redactor,
    deadline: Instant,
) -> Result<(), String> {
    let message = Message {
        title: notice.title(),
        text: notice.text(),
        tags: notice.tags(),
        priority: notice.priority(),
        click: notice.click(),
    };
    post(target, &message, redactor, deadline)
}

/// One POST, redacted, given what is left until `deadline`.
fn post(
    target: &Target,
    message: &Message<'_>,
    redactor: &Redactor,
    deadline: Instant,
) -> Result<(), String> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(format!(
            "not sent: the {} s for a tick's notifications had run out",
            TICK_LIMIT.as_secs()
        ));
    }
    let title = redactor.apply(&message.title);
    let text = redactor.apply(&message.text);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(left))
        .user_agent("sdd-loop")
        .build()
        .into();
    let mut req = agent.post(target.url());
    if let Some(auth) = &target.auth {
        req = req.header("Authorization", auth);
    }
    let result = match target.format {
        Format::Ntfy => {
            req = req
                .header("Title", &title)
                .header("Tags", message.tags)
                .header("Priority", message.priority)
                .header("Content-Type", "text/plain; charset=utf-8");
            if let Some(click) = message.click {
                req = req.header("Click", click);
            }
            req.send(text.as_bytes())
        }
        Format::Slack => req.send_json(serde_json::json!({ "text": format!("*{title}*\n{text}") })),
        Format::Discord => {
            req.send_json(serde_json::json!({ "content": format!("**{title}**\n{text}") }))
        }
    };
    let mut response = result.map_err(|e| match e {
        ureq::Error::Timeout(_) => format!(
            "no answer within the {} s for a tick's notifications",
            TICK_LIMIT.as_secs()
        ),
        other => format!("unreachable: {other}"),
    })?;
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(());
    }
    let body = response.body_mut().read_to_string().unwrap_or_default();
    let excerpt: String = body.trim().chars().take(EXCERPT).collect();
    Err(if excerpt.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {excerpt}")
    })
}

/// The file that keeps undelivered notices: `.sdd/loop/{skill}.notify.json`.
pub fn pending_path(state_dir: &Path, skill: &str) -> PathBuf {
    state_dir.join(format!("{skill}.notify.json"))
}

/// A notice kept for a retry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kept {
    pub notice: Notice,
    /// The positions, in the configured list, of the targets it did not
    /// reach (positions, not URLs: the URLs are secrets).
    pub targets: Vec<usize>,
    /// How many ticks have tried it.
    pub ticks: u32,
    /// When it first failed (RFC 3339).
    pub since: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeptFile {
    version: u32,
    kept: Vec<Kept>,
}

/// What one tick's delivery did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// Posts made this tick (one per notice and target, retries
    /// included), and how many of them were delivered.
    pub sent: usize,
    pub delivered: usize,
    /// Every failure, in order: retries first.
    pub failures: Vec<(String, Failure)>,
    /// Notices kept for the next tick.
    pub kept: usize,
    /// Notices given up after [`MAX_TICKS`] ticks, by event.
    pub given_up: Vec<String>,
    /// The kept file could not be read or written (it is then left as it
    /// was, or removed when unreadable).
    pub file_error: Option<String>,
}

/// A tick's notifications: the kept ones retried once, the new ones sent,
/// what failed kept for the next tick.
#[derive(Debug)]
pub struct Outbox<'a> {
    pub targets: &'a [Target],
    /// [`pending_path`].
    pub path: PathBuf,
    pub redactor: &'a Redactor,
    /// How long all of it may take ([`TICK_LIMIT`]).
    pub limit: Duration,
}

impl Outbox<'_> {
    /// Retries the kept notices and sends `new` (stamped `now` if they
    /// fail). With no targets, does nothing and leaves the file alone.
    pub fn deliver(&self, new: &[Notice], now: &str) -> Delivery {
        let mut delivery = Delivery::default();
        if self.targets.is_empty() {
            return delivery;
        }
        let (kept, file_error) = self.load();
        delivery.file_error = file_error;
        if kept.is_empty() && new.is_empty() {
            return delivery;
        }
        let all_targets: Vec<usize> = (0..self.targets.len()).collect();
        let mut jobs: Vec<(Notice, Vec<usize>, u32, String)> = kept
            .into_iter()
            .map(|k| {
                let to = k
                    .targets
                    .into_iter()
                    .filter(|t| *t < self.targets.len())
                    .collect();
                (k.notice, to, k.ticks, k.since)
            })
            .collect();
        jobs.extend(
            new.iter()
                .map(|n| (n.clone(), all_targets.clone(), 0, now.to_owned())),
        );
        let refs: Vec<(&Notice, Vec<usize>)> =
            jobs.iter().map(|(n, t, _, _)| (n, t.clone())).collect();
        let deadline = Instant::now() + self.limit;
        let failures = send_all(self.targets, &refs, self.redactor, deadline);
        drop(refs);
        let events: Vec<&'static str> = jobs.iter().map(|(n, _, _, _)| n.event()).collect();
        delivery.sent = jobs.iter().map(|(_, t, _, _)| t.len()).sum();
        delivery.delivered = delivery.sent - failures.len();
        let mut next = Vec::new();
        for (n, (notice, _, ticks, since)) in jobs.into_iter().enumerate() {
            let missed: Vec<usize> = failures
                .iter()
                .filter(|(i, _)| *i == n)
                .map(|(_, f)| f.target)
                .collect();
            if missed.is_empty() {
                continue;
            }
            if ticks + 1 >= MAX_TICKS {
                delivery.given_up.push(notice.event().to_owned());
            } else {
                next.push(Kept {
                    notice,
                    targets: missed,
                    ticks: ticks + 1,
                    since,
                });
            }
        }
        delivery.failures = failures
            .into_iter()
            .map(|(n, f)| (events[n].to_owned(), f))
            .collect();
        delivery.kept = next.len();
        if let Err(e) = self.save(next) {
            delivery.file_error = Some(e);
        }
        delivery
    }

    fn load(&self) -> (Vec<Kept>, Option<String>) {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => match serde_json::from_str::<KeptFile>(&text) {
                Ok(file) => (file.kept, None),
                Err(e) => (
                    Vec::new(),
                    Some(format!(
                        "{} is not a list of kept notifications ({e}); its notices are dropped",
                        self.path.display()
                    )),
                ),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Vec::new(), None),
            Err(e) => (
                Vec::new(),
                Some(format!("cannot read {}: {e}", self.path.display())),
            ),
        }
    }

    fn save(&self, kept: Vec<Kept>) -> Result<(), String> {
        if kept.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(format!("cannot remove {}: {e}", self.path.display()))
                }
                _ => Ok(()),
            };
        }
        let file = KeptFile { version: 1, kept };
        let mut json = serde_json::to_value(&file).map_err(|e| e.to_string())?;
        self.redactor.redact_json(&mut json);
        let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n";
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &self.path))
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

#[cfg(test)]
mod tests;
