//! `sdd-loop doctor`: whether everything a loop needs is usable on this
//! machine and in this project — the engine, Claude Code, the `sdd-loop`
//! plugin (and which engine its hooks would run), the tracker
//! credentials, the claims on the shared remote, each loop's state — and
//! what to do about each part that is not. It changes nothing but one
//! probe: to know this clone may create and delete claims (issue 32) it
//! takes and releases claim `0` (never an issue's number) on the remote.
//! The plugin's launcher names it when it blocks a loop prompt. The
//! notification URLs are only read, unless `--notify-test` asks for a
//! test message to each.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use std::time::Duration;

use crate::config;
use crate::os::clock::SystemClock;
use crate::os::liveness::OsProbe;
use crate::state::paths::Skill;
use crate::world::git::{Git, GitCli};
use crate::world::tracker::token::TokenSource;
use crate::world::tracker::{self, HttpTracker, Tracker, TrackerConfig};

/// The npm command that installs the engine of this version.
pub fn install_command() -> String {
    format!("npm install -g sdd-loop@{}", env!("CARGO_PKG_VERSION"))
}

/// One part's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Usable.
    Ok,
    /// Usable, with something to know.
    Note,
    /// Not usable: `fix` says what to do.
    Fix,
}

impl Verdict {
    fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Note => "note",
            Verdict::Fix => "FIX",
        }
    }
}

/// One part of the setup.
#[derive(Debug, Clone)]
pub struct Check {
    pub part: &'static str,
    pub verdict: Verdict,
    pub detail: String,
    /// What to do (for a `Fix`, and for some notes).
    pub fix: Option<String>,
}

fn check(part: &'static str, verdict: Verdict, detail: String, fix: Option<String>) -> Check {
    Check {
        part,
        verdict,
        detail,
        fix,
    }
}

/// What the checks read: the environment and the project.
#[derive(Debug)]
pub struct Inputs<'a> {
    pub vars: &'a BTreeMap<String, String>,
    pub project: PathBuf,
    /// This binary.
    pub exe: Option<PathBuf>,
    /// `--notify-test`: post a test message to each notification URL.
    pub notify_test: bool,
}

/// Runs `program args` with the environment `vars`, at most `limit`;
/// its exit success and stdout (stderr appended), or why it did not run.
fn run(
    program: &Path,
    args: &[&str],
    vars: &BTreeMap<String, String>,
    limit: Duration,
) -> Result<(bool, String), String> {
    let out = crate::world::program::run_within(program, args, vars, limit)
        .map_err(|e| format!("{}: {e}", program.display()))?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text.trim().to_owned()))
}

fn engine(inputs: &Inputs<'_>) -> Vec<Check> {
    let here = inputs
        .exe
        .as_ref()
        .map_or_else(|| "this binary".to_owned(), |p| p.display().to_string());
    let mut checks = vec![check(
        "engine",
        Verdict::Ok,
        format!(
            "sdd-loop {} (hook protocol {}) at {here}",
            env!("CARGO_PKG_VERSION"),
            crate::hook::PROTOCOLS.map(|p| p.to_string()).join(",")
        ),
        None,
    )];
    if crate::world::program::on_path(inputs.vars, "sdd-loop").is_none() {
        checks.push(check(
            "engine",
            Verdict::Note,
            "no `sdd-loop` on this shell's PATH (the plugin's hooks also look in the npm prefixes, ${CLAUDE_PLUGIN_DATA} and ~/.cargo/bin)".to_owned(),
            Some(format!("to run it from a shell, put its directory on PATH, or install it: {}", install_command())),
        ));
    }
    checks
}

/// `shell_only`: neither Claude Code nor the plugin is here — a loop from a
/// shell or cron, which needs neither: their absence is a note.
fn claude(inputs: &Inputs<'_>, shell_only: bool) -> Check {
    let Some(exe) = crate::world::program::on_path(inputs.vars, "claude") else {
        return check(
            "claude",
            if shell_only { Verdict::Note } else { Verdict::Fix },
            "Claude Code (`claude`) is not on PATH".to_owned(),
            Some("install it: npm install -g @anthropic-ai/claude-code (the plugin needs it; a loop from a shell or cron does not)".to_owned()),
        );
    };
    match run(&exe, &["--version"], inputs.vars, Duration::from_secs(20)) {
        Ok((true, version)) => check(
            "claude",
            Verdict::Ok,
            format!(
                "Claude Code {} at {}",
                version.lines().next().unwrap_or(""),
                exe.display()
            ),
            None,
        ),
        Ok((false, out)) => check(
            "claude",
            Verdict::Fix,
            format!("{} --version failed: {out}", exe.display()),
            Some("reinstall Claude Code: npm install -g @anthropic-ai/claude-code".to_owned()),
        ),
        Err(why) => check(
            "claude",
            Verdict::Fix,
            why,
            Some("reinstall Claude Code: npm install -g @anthropic-ai/claude-code".to_owned()),
        ),
    }
}

/// Claude Code's configuration directory.
fn claude_config(vars: &BTreeMap<String, String>) -> Option<PathBuf> {
    vars.get("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| vars.get("HOME").map(|h| Path::new(h).join(".claude")))
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

const INSTALL_PLUGIN: &str = "in Claude Code: /plugin marketplace add sdd-loop/sdd-loop, then /plugin install sdd-loop@sdd-loop (from a shell: claude plugin marketplace add sdd-loop/sdd-loop && claude plugin install sdd-loop@sdd-loop)";

/// Claude Code's list of installed plugins under `config`.
fn installed_list(config: &Path) -> PathBuf {
    config.join("plugins").join("installed_plugins.json")
}

/// The sdd-loop plugin's key and install path, if Claude Code has it.
fn installed_plugin(config: &Path) -> Option<(String, PathBuf)> {
    read_json(&installed_list(config)).and_then(|json| {
        let plugins = json.get("plugins")?.as_object()?.clone();
        plugins.into_iter().find_map(|(key, list)| {
            let path = list
                .as_array()?
                .first()?
                .get("installPath")?
                .as_str()?
                .to_owned();
            key.starts_with("sdd-loop@")
                .then(|| (key, PathBuf::from(path)))
        })
    })
}

fn plugin(inputs: &Inputs<'_>, shell_only: bool) -> Vec<Check> {
    let Some(config) = claude_config(inputs.vars) else {
        return vec![check(
            "plugin",
            Verdict::Fix,
            "neither CLAUDE_CONFIG_DIR nor HOME is set: Claude Code's plugins cannot be found"
                .to_owned(),
            Some("run it as the user who runs Claude Code".to_owned()),
        )];
    };
    let installed = installed_list(&config);
    let Some((key, path)) = installed_plugin(&config) else {
        return vec![check(
            "plugin",
            if shell_only {
                Verdict::Note
            } else {
                Verdict::Fix
            },
            format!(
                "the sdd-loop plugin is not installed for Claude Code (not in {})",
                installed.display()
            ),
            Some(INSTALL_PLUGIN.to_owned()),
        )];
    };
    let mut checks = Vec::new();
    let enabled = read_json(&config.join("settings.json"))
        .and_then(|s| s.get("enabledPlugins")?.get(&key)?.as_bool())
        .unwrap_or(true);
    if !enabled {
        checks.push(check(
            "plugin",
            Verdict::Fix,
            format!("{key} is installed but disabled"),
            Some(format!("enable it: claude plugin enable {key}")),
        ));
    }
    let launcher = path.join("hooks").join("sdd-loop-hook");
    if !launcher.is_file() {
        checks.push(check(
            "plugin",
            Verdict::Fix,
            format!(
                "{key} at {} has no hooks/sdd-loop-hook: an older plugin, whose hooks fail open without an engine",
                path.display()
            ),
            Some(format!("update it: claude plugin update {key}")),
        ));
        return checks;
    }
    match run(
        &launcher,
        &["--locate"],
        inputs.vars,
        Duration::from_secs(30),
    ) {
        Ok((true, engine)) => checks.push(check(
            "plugin",
            Verdict::Ok,
            format!(
                "{key} at {}; with this environment its hooks run {engine}",
                path.display()
            ),
            None,
        )),
        Ok((false, why)) | Err(why) => checks.push(check(
            "plugin",
            Verdict::Fix,
            format!(
                "{key} at {}: its hooks find no usable engine, so loop prompts are blocked: {}",
                path.display(),
                why.replace('\n', " ")
            ),
            Some(install_command()),
        )),
    }
    checks
}

/// The settings files Claude Code reads a statusLine from for `project`,
/// the one that wins first: the project's local, the project's, the
/// user's.
fn settings_files(config: &Path, project: &Path) -> [PathBuf; 3] {
    [
        project.join(".claude").join("settings.local.json"),
        project.join(".claude").join("settings.json"),
        config.join("settings.json"),
    ]
}

/// Whether Claude Code's statusLine runs `sdd-loop statusline` — the only
/// place a session's usage windows reach the loop's window budgets
/// (docs/src/usage-windows.md) — and, when not, the one settings line
/// that installs it, chained before the user's own status command.
fn statusline_check(inputs: &Inputs<'_>) -> Option<Check> {
    let config = claude_config(inputs.vars)?;
    let files = settings_files(&config, &inputs.project);
    let found = files.iter().find_map(|f| {
        let line = read_json(f)?.get("statusLine")?.clone();
        Some((f.clone(), line))
    });
    let own = found
        .as_ref()
        .and_then(|(_, l)| l.get("command")?.as_str().map(str::to_owned));
    if let (Some((file, _)), Some(command)) = (&found, &own)
        && super::statusline::is_installed(command)
    {
        return Some(check(
            "windows",
            Verdict::Ok,
            format!(
                "Claude Code's statusLine runs `sdd-loop statusline` ({}): a session's usage windows are recorded for --max-5h-percent and --max-week-percent",
                file.display()
            ),
            None,
        ));
    }
    let (file, whose) = match &found {
        Some((file, _)) => (file.clone(), "chained before your own status command"),
        None => (files[2].clone(), "no statusLine is set"),
    };
    Some(check(
        "windows",
        Verdict::Note,
        "Claude Code's statusLine does not run `sdd-loop statusline`: in a session, --max-5h-percent and --max-week-percent have no figure and the loop prompt is refused".to_owned(),
        Some(format!(
            "to use the window budgets in a session, set in {} ({whose}): {}",
            file.display(),
            super::statusline::install_line(own.as_deref())
        )),
    ))
}

fn tracker_check(inputs: &Inputs<'_>) -> Vec<Check> {
    let vars = inputs.vars;
    let var = |k: &str| vars.get(k).filter(|v| !v.trim().is_empty()).cloned();
    let git = GitCli {
        dir: inputs.project.clone(),
    };
    let repo = var("SDD_LOOP_REPO").or_else(|| {
        git.remote_url("origin")
            .and_then(|u| tracker::repo_from_remote(&u))
    });
    let Some(repo) = repo else {
        return vec![check(
            "tracker",
            Verdict::Fix,
            "no tracker repository: SDD_LOOP_REPO is not set and this project's origin is not on the tracker".to_owned(),
            Some("export SDD_LOOP_REPO=OWNER/NAME (or run in a clone whose origin is on GitHub)".to_owned()),
        )];
    };
    let url = var("SDD_LOOP_TRACKER_URL").unwrap_or_else(|| config::DEFAULT_TRACKER_URL.to_owned());
    let found = tracker::token::find(vars, &url);
    let token = found.as_ref().ok().map(|t| t.value.clone());
    let mut checks = Vec::new();
    if let Err(why) = &found {
        checks.push(check(
            "tracker",
            Verdict::Fix,
            format!("no token for {url} ({why}): a loop cannot open PRs, and a private repository refuses to list its issues"),
            Some("export GITHUB_TOKEN=… (a token that may read issues and open pull requests), or log in with `gh auth login`".to_owned()),
        ));
    }
    let client = HttpTracker::new(TrackerConfig {
        base_url: url.clone(),
        repo: repo.clone(),
        token: token.clone(),
        retries: 0,
        timeout: Duration::from_secs(10),
        retry_budget: Duration::from_secs(10),
        now: None,
        token_source: found.as_ref().ok().map(|t| t.source.clone()),
    });
    match client.open_pulls() {
        Ok(pulls) => checks.push(check(
            "tracker",
            Verdict::Ok,
            format!(
                "{repo} on {url} answers ({} open pull request{}){}",
                pulls.len(),
                if pulls.len() == 1 { "" } else { "s" },
                if let Ok(t) = &found {
                    format!(", with the token from {}", t.source)
                } else {
                    String::new()
                }
            ),
            None,
        )),
        Err(e) => checks.push(check(
            "tracker",
            Verdict::Fix,
            format!("{repo} on {url}: {e}"),
            Some(e.help().to_owned()),
        )),
    }
    if token.is_some() {
        match client.login() {
            Err(e) => checks.push(check(
                "tracker",
                Verdict::Fix,
                format!("the token is not accepted by {url}: {e}"),
                Some(replace_token(found.as_ref().ok().map(|t| &t.source))),
            )),
            Ok(login) => checks.push(gates_check(&client, &repo, &login)),
        }
    }
    checks
}

/// Whether gates can be posted on the tracker (`--unattended`,
/// docs/src/gates-away.md): the token's identity may comment on the
/// repository's issues.
fn gates_check(client: &HttpTracker, repo: &str, login: &str) -> Check {
    match client.permission(login) {
        Ok(p) if p != "none" => check(
            "gates",
            Verdict::Ok,
            format!(
                "the token acts as {login}, with {p} access to {repo}: an unattended loop (--unattended) can post its gates there; replies by {login} never answer them"
            ),
            None,
        ),
        Ok(p) => check(
            "gates",
            Verdict::Fix,
            format!(
                "the token acts as {login}, with {p} access to {repo}: an unattended loop cannot post its gates there"
            ),
            Some(format!(
                "give {login} at least read access to {repo} (commenting on issues), or use a token of an account that has it"
            )),
        ),
        Err(e) => check(
            "gates",
            Verdict::Fix,
            format!(
                "{login}'s access to {repo} cannot be read, so whether gates can be posted is unknown: {e}"
            ),
            Some(e.help().to_owned()),
        ),
    }
}

/// How to replace a refused token: where it came from, which wins over
/// the others (`SDD_LOOP_TRACKER_TOKEN`, then `GITHUB_TOKEN`, then `gh`).
fn replace_token(source: Option<&TokenSource>) -> String {
    match source {
        Some(TokenSource::Var(name)) if *name == "SDD_LOOP_TRACKER_TOKEN" => {
            "replace it: export SDD_LOOP_TRACKER_TOKEN=… (it wins over GITHUB_TOKEN and gh), or unset it to use those".to_owned()
        }
        Some(TokenSource::Var(name)) => format!(
            "replace it: export {name}=… (or set SDD_LOOP_TRACKER_TOKEN, which wins over it)"
        ),
        Some(TokenSource::Gh { host }) => format!(
            "log gh in again (`gh auth login --hostname {host}`), or export SDD_LOOP_TRACKER_TOKEN=…, which wins over gh"
        ),
        None => "export SDD_LOOP_TRACKER_TOKEN=… (or GITHUB_TOKEN) with a token the tracker accepts".to_owned(),
    }
}

fn state(inputs: &Inputs<'_>) -> Vec<Check> {
    let dir = inputs.project.join(".sdd").join("loop");
    if !dir.is_dir() {
        return vec![check(
            "state",
            Verdict::Ok,
            format!(
                "no loop state in {} yet: the first tick creates .sdd/loop/",
                inputs.project.display()
            ),
            None,
        )];
    }
    let mut checks = Vec::new();
    for skill in [Skill::Work, Skill::Review] {
        let name = skill.as_str();
        let glance =
            match crate::cli::status::glance(&inputs.project, skill, &SystemClock, &OsProbe) {
                Ok(glance) => glance,
                Err(why) => {
                    checks.push(check(
                        "state",
                        Verdict::Fix,
                        format!("the {name} loop's state cannot be read: {why}"),
                        Some(format!(
                            "see `sdd-loop status {name}`; the files are under {}",
                            dir.display()
                        )),
                    ));
                    continue;
                }
            };
        let mut detail = format!("the {name} loop's state is readable");
        let mut notes = Vec::new();
        if let Some(lock) = &glance.lock {
            detail.push_str(&format!("; its lock is {lock}"));
            notes.push(
                "a live holder is a tick in progress; a dead one is reaped by the next tick"
                    .to_owned(),
            );
        }
        if let Some(stopped) = &glance.stopped {
            detail.push_str(&format!("; the loop has ended: {stopped}"));
            notes.push(format!(
                "once the cause is dealt with, `--resume` reopens this run and `--fresh` starts a new one: `sdd-loop {name} --loop --fresh` from a shell or cron, the loop prompt `/sdd:{name} --loop --fresh` in Claude Code"
            ));
        }
        if glance.torn {
            detail.push_str("; the history ends in a torn line (the next tick moves it aside)");
        }
        let verdict = if glance.lock.is_some() || glance.stopped.is_some() || glance.torn {
            Verdict::Note
        } else {
            Verdict::Ok
        };
        let fix =
            (!notes.is_empty()).then(|| format!("{} (`sdd-loop status {name}`)", notes.join("; ")));
        checks.push(check("state", verdict, detail, fix));
    }
    checks
}

/// Every check, in order.
pub fn checks(inputs: &Inputs<'_>) -> Vec<Check> {
    let mut all = engine(inputs);
    // No Claude Code and no plugin: a loop from a shell or cron, which
    // needs neither (`doctor && …` in a cron job stays usable).
    let shell_only = crate::world::program::on_path(inputs.vars, "claude").is_none()
        && claude_config(inputs.vars)
            .and_then(|c| installed_plugin(&c))
            .is_none();
    all.push(claude(inputs, shell_only));
    all.extend(plugin(inputs, shell_only));
    if !shell_only {
        all.extend(statusline_check(inputs));
    }
    all.extend(tracker_check(inputs));
    all.push(claims_check(inputs));
    all.extend(notify_check(inputs));
    all.extend(state(inputs));
    all
}

/// The notification URLs (docs/src/notifications.md), when any are
/// configured: each well-formed and http(s), a variable CLAUDE.md names
/// but this shell does not set, a public ntfy topic; with
/// `--notify-test`, a test message posted to each. Without it nothing is
/// sent: a URL's only reachability check that means anything is a POST,
/// and a POST is a message the person receives.
fn notify_check(inputs: &Inputs<'_>) -> Vec<Check> {
    use crate::world::notify::{self, Target};
    let claude_md = inputs.project.join("CLAUDE.md");
    let (found, named, problems) = super::gather::notify_sources(&[], inputs.vars, &claude_md);
    let mut checks: Vec<Check> = problems
        .into_iter()
        .map(|p| check("notify", Verdict::Fix, p.message, Some(p.help)))
        .collect();
    for name in named.iter().filter(|n| !inputs.vars.contains_key(*n)) {
        checks.push(check(
            "notify",
            Verdict::Note,
            format!("{name}, named under `Loop Notify` in CLAUDE.md, is not set here: nothing is sent through it"),
            None,
        ));
    }
    let redactor = notify::with_secrets(
        crate::rules::redact::Redactor::builder(),
        &found.iter().map(|s| s.url.clone()).collect::<Vec<_>>(),
    )
    .build();
    for source in &found {
        let target = match Target::parse(&source.url) {
            Ok(t) => t,
            Err(e) => {
                checks.push(check(
                    "notify",
                    Verdict::Fix,
                    format!("{e} (from {})", source.from),
                    Some(e.help().to_owned()),
                ));
                continue;
            }
        };
        let shown = format!("{} (from {})", target.shown(), source.from);
        if target.is_public_ntfy() {
            checks.push(check(
                "notify",
                Verdict::Note,
                format!("{shown}: a topic on ntfy.sh without credentials can be read by anyone who knows its name"),
                Some("a gate's person-only code sent there is no secret: rely on the author check (a reply from an account other than the loop's), or use a topic with access control (docs/src/notifications.md)".to_owned()),
            ));
        }
        checks.push(if inputs.notify_test {
            match notify::test(&target, &redactor, notify::TICK_LIMIT) {
                Ok(()) => check("notify", Verdict::Ok, format!("{shown}: a test message was delivered"), None),
                Err(why) => check(
                    "notify",
                    Verdict::Fix,
                    format!("{shown}: the test message was not delivered: {why}"),
                    Some("check the URL and that its receiver answers a POST with 2xx; a failed notification never fails a tick, but nobody is told".to_owned()),
                ),
            }
        } else {
            check(
                "notify",
                Verdict::Ok,
                format!("{shown}: well-formed; not sent (`sdd-loop doctor --notify-test` posts a test message)"),
                None,
            )
        });
    }
    checks
}

/// Whether ticks can claim work on the shared remote: the remote is the
/// one a tick would pick (the tracker's repository), it is reached
/// without a prompt, and a claim can be created and deleted there. The
/// probe is a claim of this run's own, so two `doctor`s at once never
/// refuse each other's; the claims held now are listed with their
/// holders.
fn claims_check(inputs: &Inputs<'_>) -> Check {
    use crate::world::claim::{Holder, Outcome, RefWrite, Remote, Timing};
    let off = |detail: String| check("claims", Verdict::Ok, detail, None);
    let git = GitCli {
        dir: inputs.project.clone(),
    };
    let remotes = git.remotes();
    let repository = super::gather::repository_at(inputs.vars, &inputs.project);
    let picked = super::gather::claim_remote_at(
        inputs.vars,
        &inputs.project,
        "origin",
        repository.as_deref(),
    );
    let name = match picked {
        Ok(Some(name)) => name,
        Ok(None) if inputs.vars.get("SDD_LOOP_CLAIM_REMOTE").map(String::as_str) == Some("off") => {
            return off("off (SDD_LOOP_CLAIM_REMOTE=off): safe only while no other clone works this backlog".into());
        }
        Ok(None) => {
            return off(
                "off: this checkout has no remote, so no other clone to share a backlog with"
                    .into(),
            );
        }
        Err((message, help)) => {
            return check(
                "claims",
                Verdict::Fix,
                format!("{message} (ticks exit 64)"),
                Some(help),
            );
        }
    };
    let chosen = if remotes.iter().any(|r| r == "origin")
        && name != "origin"
        && !inputs.vars.contains_key("SDD_LOOP_CLAIM_REMOTE")
    {
        " (the tracker's repository; `origin` is another)".to_owned()
    } else {
        String::new()
    };
    let remote = Remote {
        dir: inputs.project.clone(),
        remote: name.clone(),
        vars: inputs.vars.clone(),
        limit: super::gather::claim_timeout(inputs.vars),
    };
    let fix = |detail: String| {
        check(
            "claims",
            Verdict::Fix,
            detail,
            Some(format!(
                "ticks exit 69 until this clone can push refs under {}/ on `{name}` without a prompt (credentials, or the host's rules), or set SDD_LOOP_CLAIM_REMOTE=off when no other clone works this backlog",
                crate::world::claim::NAMESPACE
            )),
        )
    };
    let now = crate::os::clock::Clock::now(&SystemClock);
    let held: Vec<String> = match remote.read(Skill::Work) {
        Ok(seen) => seen
            .iter()
            .map(|(n, s)| match &s.lease {
                Some(l) => format!(
                    "#{n} by {} until {}{}",
                    l.holder,
                    crate::os::clock::format(l.expires_at),
                    if l.expires_at <= now { " (lapsed)" } else { "" }
                ),
                None => format!("#{n} by a ref that is not a lease"),
            })
            .collect(),
        Err(e) => return fix(format!("cannot read claims on `{name}`: {e}")),
    };
    let host = super::gather::host(inputs.vars);
    let holder = Holder {
        clone_id: crate::world::claim::known_clone_id(&inputs.project, &host),
        host,
        clone: crate::world::claim::clone_name(&inputs.project),
        pid: std::process::id(),
        session: None,
    };
    let probe = crate::world::claim::probe_ref(Skill::Work);
    let lease = Timing::default().lease(Skill::Work, 0, &holder, now);
    let taken = match remote.push_refs(&[RefWrite {
        name: probe.clone(),
        lease: Some(lease),
        expected: String::new(),
    }]) {
        Ok(o) => o,
        Err(e) => return fix(format!("cannot push a claim to `{name}`: {e}")),
    };
    let commit = match taken.into_iter().next() {
        Some(Outcome::Done { commit: Some(c) }) => c,
        Some(Outcome::Refused { reason }) => {
            return fix(format!(
                "`{name}` refused the probe claim {probe}: {reason}"
            ));
        }
        _ => return fix(format!("`{name}` did not answer for the probe claim")),
    };
    let released = remote.push_refs(&[RefWrite {
        name: probe.clone(),
        lease: None,
        expected: commit,
    }]);
    let listed = if held.is_empty() {
        "no work claim held now".to_owned()
    } else {
        format!("work claims held now: {}", held.join("; "))
    };
    match released {
        Ok(o) if matches!(o.first(), Some(Outcome::Done { .. })) => check(
            "claims",
            Verdict::Ok,
            format!("on `{name}`{chosen}: a claim can be created and released ({listed})"),
            None,
        ),
        Ok(_) | Err(_) => fix(format!(
            "`{name}` let a claim be created but not deleted ({probe})"
        )),
    }
}

/// Prints the checks (text or one JSON object); 0 when nothing needs
/// fixing, else 1.
pub fn report(checks: &[Check], project: &Path, json: bool, out: &mut dyn Write) -> u8 {
    let usable = checks.iter().all(|c| c.verdict != Verdict::Fix);
    let text = if json {
        let list: Vec<serde_json::Value> = checks
            .iter()
            .map(|c| {
                serde_json::json!({
                    "part": c.part,
                    "verdict": c.verdict.word().to_ascii_lowercase(),
                    "detail": c.detail,
                    "fix": c.fix,
                })
            })
            .collect();
        format!(
            "{}\n",
            serde_json::json!({"project": project, "usable": usable, "checks": list})
        )
    } else {
        let mut text = format!("sdd-loop doctor: {}\n", project.display());
        for c in checks {
            text.push_str(&format!(
                "{:<5} {:<8} {}\n",
                c.verdict.word(),
                c.part,
                c.detail
            ));
            if let Some(fix) = &c.fix {
                text.push_str(&format!("{:<14} → {fix}\n", ""));
            }
        }
        text.push_str(if usable {
            "Everything a loop needs is usable here.\n"
        } else {
            "Not usable yet: do what each FIX line says, then run `sdd-loop doctor` again.\n"
        });
        text
    };
    let _ = out.write_all(text.as_bytes());
    if usable { 0 } else { 1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::budget::{Budget, Ceilings, RunStop};
    use crate::state::paths::StatePaths;

    // Regression: a refused SDD_LOOP_TRACKER_TOKEN was to be replaced by
    // exporting GITHUB_TOKEN, which it wins over: the fix changed nothing.
    #[test]
    fn a_refused_token_is_replaced_where_it_came_from() {
        let var = replace_token(Some(&TokenSource::Var("SDD_LOOP_TRACKER_TOKEN")));
        assert!(
            var.starts_with("replace it: export SDD_LOOP_TRACKER_TOKEN=…"),
            "{var}"
        );
        let github = replace_token(Some(&TokenSource::Var("GITHUB_TOKEN")));
        assert!(
            github.starts_with("replace it: export GITHUB_TOKEN=…"),
            "{github}"
        );
        let gh = replace_token(Some(&TokenSource::Gh {
            host: "github.com".into(),
        }));
        assert!(gh.contains("gh auth login --hostname github.com"), "{gh}");
    }

    #[test]
    fn the_statusline_is_found_where_claude_code_reads_it_or_its_settings_line_is_given() {
        let tmp = tempfile::tempdir().unwrap();
        let (config, project) = (tmp.path().join("config"), tmp.path().join("project"));
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        std::fs::create_dir_all(&config).unwrap();
        let vars = BTreeMap::from([("CLAUDE_CONFIG_DIR".to_owned(), config.display().to_string())]);
        let inputs = Inputs {
            vars: &vars,
            project: project.clone(),
            exe: None,
            notify_test: false,
        };
        let none = statusline_check(&inputs).unwrap();
        assert_eq!(none.verdict, Verdict::Note);
        let fix = none.fix.unwrap();
        assert!(
            fix.contains(&config.join("settings.json").display().to_string()),
            "{fix}"
        );
        assert!(
            fix.ends_with(r#""statusLine": {"type":"command","command":"sdd-loop statusline"}"#),
            "{fix}"
        );
        std::fs::write(
            config.join("settings.json"),
            r#"{"statusLine": {"type": "command", "command": "~/.claude/my-status.sh"}}"#,
        )
        .unwrap();
        let own = statusline_check(&inputs).unwrap();
        assert_eq!(own.verdict, Verdict::Note);
        assert!(own.fix.unwrap().ends_with(
            r#"{"type":"command","command":"sdd-loop statusline -- ~/.claude/my-status.sh"}"#
        ));
        // The project's own settings win over the user's.
        std::fs::write(
            project.join(".claude").join("settings.json"),
            r#"{"statusLine": {"type": "command", "command": "sdd-loop statusline -- ~/.claude/my-status.sh"}}"#,
        )
        .unwrap();
        let installed = statusline_check(&inputs).unwrap();
        assert_eq!(installed.verdict, Verdict::Ok, "{}", installed.detail);
        assert!(installed.detail.contains(".claude/settings.json"));
    }

    // Regression: doctor printed the lock and the run's stop as raw JSON
    // (`its lock is held: {"pid":…}`, `the loop has ended ({"cause":…})`);
    // and it said a new run starts with `/sdd:work --loop`, which an ended
    // run refuses (exit 3): `--fresh` starts one.
    #[test]
    fn a_held_lock_and_an_ended_run_are_told_in_sentences() {
        let tmp = tempfile::tempdir().unwrap();
        let paths = StatePaths::new(tmp.path(), Skill::Work, None);
        crate::state::files::ensure_private_dir(&paths.dir).unwrap();
        let me = std::process::id();
        std::fs::write(
            paths.lock(),
            format!(
                r#"{{"pid":{me},"iteration":3,"started_at":"2026-05-09T14:50:00Z","skill":"work"}}"#
            ),
        )
        .unwrap();
        let mut budget = Budget::start(
            "2026-05-09T14:00:00Z",
            Ceilings::default(),
            "built-in default",
        );
        budget.iterations_used = 2;
        budget.stopped = Some(RunStop {
            cause: "prior_gate_stop".into(),
            iteration: 2,
            gate: Some("backlog-drift".into()),
        });
        budget.save(paths.budget()).unwrap();
        let vars = BTreeMap::new();
        let checks = state(&Inputs {
            vars: &vars,
            project: tmp.path().to_path_buf(),
            exe: None,
            notify_test: false,
        });
        let work = &checks[0];
        assert_eq!(work.verdict, Verdict::Note);
        assert_eq!(
            work.detail,
            format!(
                "the work loop's state is readable; its lock is held by pid {me} (alive), iteration 3, since 2026-05-09T14:50:00Z; the loop has ended: prior_gate_stop in iteration 2 (gate backlog-drift)"
            )
        );
        let fix = work.fix.as_deref().unwrap();
        assert!(
            fix.contains("a dead one is reaped by the next tick")
                && fix.contains("`sdd-loop work --loop --fresh` from a shell or cron")
                && fix.contains("`/sdd:work --loop --fresh` in Claude Code"),
            "both notes: {fix}"
        );
        let mut out = Vec::new();
        report(&checks, tmp.path(), false, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('{'), "no JSON in the text: {text}");
        assert_eq!(checks[1].detail, "the review loop's state is readable");
    }

    #[test]
    fn no_notification_url_adds_no_line() {
        let tmp = tempfile::tempdir().unwrap();
        let vars = BTreeMap::new();
        let inputs = Inputs {
            vars: &vars,
            project: tmp.path().to_path_buf(),
            exe: None,
            notify_test: false,
        };
        assert!(notify_check(&inputs).is_empty());
    }

    #[test]
    fn notification_urls_are_checked_for_form_and_never_shown_whole() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("CLAUDE.md"),
            "### SDD Configuration\n#### Loop Notify\n- TEAM_HOOK\n",
        )
        .unwrap();
        let vars: BTreeMap<String, String> = [(
            "SDD_LOOP_NOTIFY".to_owned(),
            "https://ntfy.sh/my-secret-topic ftp://u:p@host/x".to_owned(),
        )]
        .into();
        let checks = notify_check(&Inputs {
            vars: &vars,
            project: tmp.path().to_path_buf(),
            exe: None,
            notify_test: false,
        });
        let lines: Vec<(Verdict, &str)> = checks
            .iter()
            .map(|c| (c.verdict, c.detail.as_str()))
            .collect();
        assert_eq!(
            lines,
            [
                (
                    Verdict::Note,
                    "TEAM_HOOK, named under `Loop Notify` in CLAUDE.md, is not set here: nothing is sent through it"
                ),
                (
                    Verdict::Note,
                    "ntfy https://ntfy.sh/… (from SDD_LOOP_NOTIFY): a topic on ntfy.sh without credentials can be read by anyone who knows its name"
                ),
                (
                    Verdict::Ok,
                    "ntfy https://ntfy.sh/… (from SDD_LOOP_NOTIFY): well-formed; not sent (`sdd-loop doctor --notify-test` posts a test message)"
                ),
                (
                    Verdict::Fix,
                    "notification URL ftp://… is not an http:// or https:// URL (from SDD_LOOP_NOTIFY)"
                ),
            ]
        );
    }
}
