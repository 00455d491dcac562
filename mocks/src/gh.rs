//! `fake-gh`: the part of GitHub's `gh` CLI an agent uses to open, merge
//! and comment on pull requests, against the mock tracker.
//!
//! A real agent (Claude Code, Codex) driven by a scripted model runs real
//! shell commands; the scripted model types what a person would — `git
//! push -u origin feature/1-login && gh pr create --title … --body …` —
//! and this stand-in, installed as `gh` on the agent's `PATH`, turns the
//! `gh` half into the same REST calls the real CLI makes. Subcommands:
//! `pr create` (`--body B` or `--body-file F`, `-` for standard input;
//! head defaults to the current branch, base to `main`; prints
//! the PR's URL), `pr merge N`, `pr comment N --body B`, and `api [-X
//! METHOD] PATH [-f key=value]…` (POST when a field is given, as `gh`
//! does). The tracker comes from `SDD_LOOP_TRACKER_URL`, the repository
//! from `GH_REPO` or `SDD_LOOP_REPO`, the token from `GH_TOKEN`,
//! `GITHUB_TOKEN` or `SDD_LOOP_TRACKER_TOKEN`. Errors go to stderr prefixed
//! `[fake-gh]`; the exit status is 1 for a failed call (as `gh`'s) and 2
//! for a usage error.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;
use serde_json::{Map, Value};

use crate::skill::client::{Merge, TrackerClient};

/// Where `fake-gh` finds its world (the binary reads the environment).
#[derive(Debug, Clone, Default)]
pub struct GhEnv {
    pub tracker_url: Option<String>,
    pub repo: Option<String>,
    pub token: Option<String>,
}

#[derive(Debug, Parser)]
#[command(
    name = "gh",
    about = "fake-gh: GitHub's gh CLI, the pull-request subset, against the mock tracker"
)]
struct GhArgs {
    #[command(subcommand)]
    command: Top,
}

#[derive(Debug, clap::Subcommand)]
enum Top {
    /// Pull requests.
    #[command(subcommand)]
    Pr(Pr),
    /// A REST call, as `gh api`.
    Api(ApiArgs),
}

#[derive(Debug, clap::Subcommand)]
enum Pr {
    /// Open a pull request.
    Create {
        #[arg(short = 't', long)]
        title: String,
        #[arg(short = 'b', long, default_value = "", conflicts_with = "body_file")]
        body: String,
        /// The body from a file (`-` standard input), as `gh` reads it.
        #[arg(short = 'F', long)]
        body_file: Option<PathBuf>,
        #[arg(short = 'H', long)]
        head: Option<String>,
        #[arg(short = 'B', long, default_value = "main")]
        base: String,
    },
    /// Merge a pull request.
    Merge {
        number: u64,
        #[arg(long)]
        merge: bool,
        #[arg(long)]
        squash: bool,
        #[arg(long)]
        rebase: bool,
        #[arg(short = 'd', long = "delete-branch")]
        delete_branch: bool,
    },
    /// Comment on a pull request.
    Comment {
        number: u64,
        #[arg(short = 'b', long)]
        body: String,
    },
}

#[derive(Debug, clap::Args)]
struct ApiArgs {
    /// `repos/OWNER/REPO/…`, with or without a leading `/`.
    path: String,
    #[arg(short = 'X', long = "method")]
    method: Option<String>,
    /// A string field of the JSON body.
    #[arg(short = 'f', long = "raw-field", value_name = "KEY=VALUE")]
    fields: Vec<String>,
}

/// Runs one `gh` command line (`args` without the program name); its exit
/// status. What `gh` prints goes to `out`, diagnostics to `err`.
pub fn run(
    args: &[OsString],
    env: &GhEnv,
    cwd: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let argv = std::iter::once(OsString::from("gh")).chain(args.iter().cloned());
    let parsed = match GhArgs::try_parse_from(argv) {
        Ok(p) => p,
        Err(e) => {
            let _ = write!(err, "{}", e.render());
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match execute(parsed.command, env, cwd, out) {
        Ok(()) => 0,
        Err(message) => {
            let _ = writeln!(err, "[fake-gh] {message}");
            1
        }
    }
}

fn configured(env: &GhEnv) -> Result<(&str, &str), String> {
    let url = env
        .tracker_url
        .as_deref()
        .ok_or("SDD_LOOP_TRACKER_URL is not set: fake-gh talks only to the mock tracker")?;
    let repo = env
        .repo
        .as_deref()
        .ok_or("no repository: set GH_REPO or SDD_LOOP_REPO (owner/name)")?;
    Ok((url, repo))
}

fn execute(command: Top, env: &GhEnv, cwd: &Path, out: &mut dyn Write) -> Result<(), String> {
    let (url, repo) = configured(env)?;
    let client = TrackerClient::new(url, repo, env.token.clone());
    let say =
        |out: &mut dyn Write, text: String| writeln!(out, "{text}").map_err(|e| e.to_string());
    match command {
        Top::Pr(Pr::Create {
            title,
            body,
            body_file,
            head,
            base,
        }) => {
            let body = match body_file {
                None => body,
                Some(f) if f.as_os_str() == "-" => {
                    let mut text = String::new();
                    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                        .map_err(|e| format!("read the body from standard input: {e}"))?;
                    text
                }
                Some(f) => std::fs::read_to_string(cwd.join(&f))
                    .map_err(|e| format!("read the body file {}: {e}", f.display()))?,
            };
            let head = match head {
                Some(h) => h,
                None => current_branch(cwd)?,
            };
            let number = client
                .create_pull(&title, &head, &base, &body)
                .map_err(|e| format!("pull request create failed: {e}"))?;
            say(out, format!("https://github.com/{repo}/pull/{number}"))
        }
        Top::Pr(Pr::Merge { number, .. }) => match client
            .merge(number)
            .map_err(|e| e.to_string())?
        {
            Merge::Merged { sha } => say(out, format!("✓ Merged pull request #{number} ({sha})")),
            Merge::Refused { message } => Err(format!(
                "Pull request #{number} is not mergeable: {message}"
            )),
        },
        Top::Pr(Pr::Comment { number, body }) => {
            client.comment(number, &body).map_err(|e| e.to_string())?;
            say(
                out,
                format!("https://github.com/{repo}/pull/{number}#issuecomment"),
            )
        }
        Top::Api(api) => {
            let text = call_api(url, env.token.as_deref(), &api)?;
            say(out, text)
        }
    }
}

fn current_branch(cwd: &Path) -> Result<String, String> {
    let output = std::process::Command::new("git")
        .args(["rev-parse", "--abbrev-ref", "HEAD"])
        .current_dir(cwd)
        .output()
        .map_err(|e| format!("cannot run git to find the current branch: {e}"))?;
    let branch = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || branch.is_empty() || branch == "HEAD" {
        return Err("could not determine the current branch: pass --head BRANCH".into());
    }
    Ok(branch)
}

fn call_api(base: &str, token: Option<&str>, api: &ApiArgs) -> Result<String, String> {
    let mut body = Map::new();
    for field in &api.fields {
        let (key, value) = field
            .split_once('=')
            .ok_or_else(|| format!("field {field:?} is not KEY=VALUE"))?;
        body.insert(key.to_owned(), Value::String(value.to_owned()));
    }
    let method = api
        .method
        .clone()
        .unwrap_or_else(|| if body.is_empty() { "GET" } else { "POST" }.to_owned())
        .to_ascii_uppercase();
    let url = format!(
        "{}/{}",
        base.trim_end_matches('/'),
        api.path.trim_start_matches('/')
    );
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .new_agent();
    let auth = token.map(|t| format!("Bearer {t}"));
    let response = match method.as_str() {
        "GET" | "DELETE" => {
            let mut req = if method == "GET" {
                agent.get(&url)
            } else {
                agent.delete(&url)
            };
            if let Some(a) = &auth {
                req = req.header("Authorization", a);
            }
            req.call()
        }
        "POST" | "PUT" | "PATCH" => {
            let mut req = match method.as_str() {
                "POST" => agent.post(&url),
                "PUT" => agent.put(&url),
                _ => agent.patch(&url),
            };
            if let Some(a) = &auth {
                req = req.header("Authorization", a);
            }
            req.send_json(Value::Object(body))
        }
        other => return Err(format!("unsupported method {other}")),
    };
    let mut response = response.map_err(|e| format!("{method} {url}: {e}"))?;
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .read_to_string()
        .map_err(|e| format!("{method} {url}: {e}"))?;
    if !(200..300).contains(&status) {
        return Err(format!("{method} {url}: HTTP {status}: {text}"));
    }
    Ok(text)
}
