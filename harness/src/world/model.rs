//! The scripted model a real-CLI case's Claude Code or Codex talks to, and
//! the confinement that keeps them on it (issue 18).
//!
//! [`CaseModel`] is one `mock-model` server per case (in this process,
//! `sdd_mocks::model::MockModel`), serving every tick's `model:` turns in
//! order as one script, its request log written to `[ROOT]/model.log`.
//! A tick that runs no CLI has no turns, so the turns a tick's CLI took are
//! checked against the ones it was given ([`CaseModel::turns_verdict`]):
//! a CLI that asks for more, or fewer, is named with the tick.
//!
//! [`Confinement`] is what a real CLI runs with: its configuration inside
//! the sandbox (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`; the Gemini CLI's and
//! OpenCode's in the sandbox `HOME`, [`config_files`]), the base URL of the
//! case's model and a key only it accepts, telemetry, updates and
//! non-essential traffic off, and nothing but loopback reachable — every proxy variable
//! points at a closed loopback port and only `127.0.0.1` and `localhost`
//! bypass it. Both pinned CLIs honour the proxy variables (measured: a
//! base URL at a non-loopback address was requested through the proxy,
//! and so were Claude Code's `git` fetches and Codex's own update check),
//! so anything they try to reach beyond loopback fails at once instead of
//! leaving the machine.

use std::ffi::OsString;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use sdd_mocks::model::script::{Script, Turn, Untooled};
use sdd_mocks::model::turns::Outcome;
use sdd_mocks::model::{BlockingMockModel, LogEntry, MockModel};
use serde_saphyr::Spanned;

use crate::loading::case::{Auth, Case, TickSpec};
use crate::world::error::HarnessError;

/// The API key the case's model accepts (a request with another is a 401).
pub const MODEL_KEY: &str = "sdd-evals-model-key";

/// The token a subscriber's Claude Code presents (`auth: oauth`), in the
/// shape of Claude Code's own OAuth tokens; the case's model accepts only
/// it then.
pub const OAUTH_TOKEN: &str = "sk-ant-oat01-sdd-evals-model-key";

/// The variable Codex reads the key from (its provider's `env_key`).
pub const CODEX_KEY_VAR: &str = "SDD_EVALS_MODEL_KEY";

/// The FIFO a scripted command signals to be killed at: `sdd-evals-barrier`
/// (on the sandbox PATH) writes `ready <pid>` into it and blocks.
pub const BARRIER_VAR: &str = "SDD_EVALS_BARRIER";

/// The barrier helper's name on the sandbox PATH.
pub const BARRIER_BIN: &str = "sdd-evals-barrier";

/// The barrier helper: the scripted model runs it where the case kills.
pub const BARRIER_SCRIPT: &str = "#!/bin/sh\n# Written by sdd-evals: tells the harness this point is reached, then\n# waits to be killed there (docs/src/case-format.md, \"Real CLIs\").\nif [ -z \"$SDD_EVALS_BARRIER\" ]; then\n  echo \"sdd-evals-barrier: this tick has no kill: barrier\" >&2\n  exit 97\nfi\necho \"ready $$\" > \"$SDD_EVALS_BARRIER\"\nexec tail -f /dev/null\n";

/// One case's scripted model.
#[derive(Debug)]
pub struct CaseModel {
    server: BlockingMockModel,
    /// The request log, JSON lines.
    pub log_path: PathBuf,
    /// How many turns each tick was given.
    per_tick: Vec<usize>,
}

impl CaseModel {
    /// Starts the case's model with every tick's turns, when its driver
    /// runs a real CLI; `None` otherwise.
    pub fn start(case: &Case, root: &Path) -> Result<Option<Self>, HarnessError> {
        if case.driver.real_cli().is_none() {
            return Ok(None);
        }
        // A tick on several machines at once gives each machine's session
        // a model of its own ([`CaseModel::for_machine`]): not this one.
        let own = |t: &TickSpec| -> Vec<_> {
            if t.machines.is_empty() {
                t.model.clone()
            } else {
                Vec::new()
            }
        };
        let per_tick = case.ticks().iter().map(|t| own(t).len()).collect();
        let turns = case.ticks().iter().flat_map(own).collect();
        Self::serve(turns, case, root.join("model.log"), per_tick).map(Some)
    }

    /// The model of one machine's session in a tick on several machines
    /// at once: that tick's turns, played by each session from the first
    /// (their requests arrive interleaved), logged in `log_path`.
    pub fn for_machine(
        case: &Case,
        tick: &TickSpec,
        log_path: PathBuf,
    ) -> Result<Self, HarnessError> {
        Self::serve(tick.model.clone(), case, log_path, vec![tick.model.len()])
    }

    fn serve(
        turns: Vec<Spanned<Turn>>,
        case: &Case,
        log_path: PathBuf,
        per_tick: Vec<usize>,
    ) -> Result<Self, HarnessError> {
        let script = Script {
            model: None,
            untooled: Untooled::default(),
            turns,
            source: case.path.clone(),
        };
        let key = match case.auth {
            Auth::ApiKey => MODEL_KEY,
            Auth::Oauth => OAUTH_TOKEN,
        };
        let server = MockModel::builder(script)
            .api_key(key)
            .log_file(&log_path)
            .start_blocking()
            .map_err(|e| HarnessError::Sandbox(format!("start the case's mock model: {e}")))?;
        Ok(Self {
            server,
            log_path,
            per_tick,
        })
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// Every request so far, in order.
    pub fn log(&self) -> Vec<LogEntry> {
        self.server.log()
    }

    /// Why tick `n` (1-based) stops the case on the model's side, if it
    /// does: its CLI took more or fewer turns than the ticks up to it were
    /// given, or a request failed the script's expectations. The message
    /// quotes what the model's log says of it.
    pub fn turns_verdict(&self, n: usize) -> Option<String> {
        let given: usize = self.per_tick.iter().take(n).sum();
        let served = self.server.turns_served();
        let trouble = trouble(&self.log());
        if served == given && trouble.is_empty() {
            return None;
        }
        let mut text = if served == given {
            "the model's requests went wrong".to_owned()
        } else {
            format!(
                "the CLI took {served} model turn(s) by the end of this tick; the ticks up to it script {given}"
            )
        };
        for line in trouble {
            text.push_str("\n  mock-model: ");
            text.push_str(&line);
        }
        Some(text)
    }
}

/// What the model's log holds that a passing case never shows: failed
/// expectations, requests past the last turn, a wrong key, a body that is
/// not JSON. (A request on an unknown route is a 404 the CLI may probe
/// and go on from; the log keeps it.)
pub fn trouble(log: &[LogEntry]) -> Vec<String> {
    log.iter()
        .filter(|e| {
            matches!(
                e.outcome,
                Outcome::ExpectFailed
                    | Outcome::OutOfTurns
                    | Outcome::Unauthorized
                    | Outcome::BadRequest
            )
        })
        .fold(Vec::<(String, Vec<u64>)>::new(), |mut seen, e| {
            let what = format!(
                "{} {}: {}",
                e.method,
                e.path,
                e.error.as_deref().unwrap_or("(no message)")
            );
            match seen.iter_mut().find(|(w, _)| *w == what) {
                Some((_, seqs)) => seqs.push(e.seq),
                None => seen.push((what, vec![e.seq])),
            }
            seen
        })
        .into_iter()
        .map(|(what, seqs)| {
            let seqs: Vec<String> = seqs.iter().map(u64::to_string).collect();
            let label = if seqs.len() == 1 {
                "request"
            } else {
                "requests"
            };
            format!("{label} {} ({what})", seqs.join(", "))
        })
        .collect()
}

/// A loopback port nothing listens on: the dead proxy every request
/// beyond loopback is sent to. Bound and released, so the kernel picked
/// a free one; a connection to it is refused at once.
pub fn closed_port() -> Result<u16, HarnessError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|source| HarnessError::Io {
        what: "find a closed loopback port for the dead proxy".to_owned(),
        source,
    })?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|source| HarnessError::Io {
            what: "read the dead proxy's port".to_owned(),
            source,
        })
}

/// The environment and Codex provider arguments a real CLI runs with.
#[derive(Debug, Clone)]
pub struct Confinement {
    pub env: Vec<(String, OsString)>,
    /// `-c` pairs that point Codex at the model, as a user adds a provider.
    pub codex_config: Vec<String>,
}

impl Confinement {
    /// For the model at `uri`, with configuration under `claude_config`
    /// and `codex_home`, and the dead proxy on `proxy_port`; Claude Code
    /// signed in as `auth` says (an OAuth session has no
    /// `ANTHROPIC_API_KEY`).
    pub fn new(
        uri: &str,
        claude_config: &Path,
        codex_home: &Path,
        proxy_port: u16,
        auth: Auth,
    ) -> Self {
        let proxy = format!("http://127.0.0.1:{proxy_port}");
        let var = |k: &str, v: &dyn AsRef<std::ffi::OsStr>| (k.to_owned(), v.as_ref().to_owned());
        let mut env = vec![
            var("CLAUDE_CONFIG_DIR", &claude_config),
            var("CODEX_HOME", &codex_home),
            var("ANTHROPIC_BASE_URL", &uri),
            match auth {
                Auth::ApiKey => var("ANTHROPIC_API_KEY", &MODEL_KEY),
                Auth::Oauth => var("CLAUDE_CODE_OAUTH_TOKEN", &OAUTH_TOKEN),
            },
            var(CODEX_KEY_VAR, &MODEL_KEY),
            var("DISABLE_TELEMETRY", &"1"),
            var("DISABLE_AUTOUPDATER", &"1"),
            var("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", &"1"),
            // The Gemini CLI (real-agents.md): the key, the model's base
            // URL (it adds `/v1beta/models/…`), the project trusted
            // (else exit 55); its auth method is in settings.json.
            var("GEMINI_API_KEY", &MODEL_KEY),
            var("GOOGLE_GEMINI_BASE_URL", &uri),
            var("GEMINI_CLI_TRUST_WORKSPACE", &"true"),
            var("GEMINI_TELEMETRY_ENABLED", &"false"),
            // OpenCode: the provider is in its config; no update, no
            // models.dev fetch, no LSP download, no sharing.
            var("OPENCODE_DISABLE_AUTOUPDATE", &"1"),
            var("OPENCODE_DISABLE_MODELS_FETCH", &"1"),
            var("OPENCODE_DISABLE_LSP_DOWNLOAD", &"1"),
            var("OPENCODE_DISABLE_SHARE", &"1"),
        ];
        for name in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"] {
            env.push(var(name, &proxy));
            env.push(var(&name.to_lowercase(), &proxy));
        }
        env.push(var("NO_PROXY", &"127.0.0.1,localhost"));
        env.push(var("no_proxy", &"127.0.0.1,localhost"));
        let codex_config = vec![
            "model_provider=sdd-evals".to_owned(),
            format!(
                "model_providers.sdd-evals={{name=\"sdd-evals mock model\", base_url=\"{uri}/v1\", wire_api=\"responses\", env_key=\"{CODEX_KEY_VAR}\"}}"
            ),
        ];
        Self { env, codex_config }
    }
}

/// The configuration files the Gemini CLI and OpenCode read from `HOME`,
/// relative to it, for the model at `uri`: the Gemini CLI's auth method
/// (else exit 41, "Invalid auth method selected.") with update checks
/// off, and OpenCode's `anthropic` provider at the model with its key,
/// updates and sharing off.
pub fn config_files(uri: &str) -> Vec<(&'static str, String)> {
    let gemini = serde_json::json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
        "telemetry": {"enabled": false},
        "privacy": {"usageStatisticsEnabled": false},
    });
    let opencode = serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"anthropic": {"options": {"baseURL": format!("{uri}/v1"), "apiKey": MODEL_KEY}}},
        "autoupdate": false,
        "share": "disabled",
    });
    let text = |v: serde_json::Value| format!("{v:#}\n");
    vec![
        (".gemini/settings.json", text(gemini)),
        (".config/opencode/opencode.json", text(opencode)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_proxy_variable_points_at_the_dead_port_and_only_loopback_bypasses_it() {
        let c = Confinement::new(
            "http://127.0.0.1:4000",
            Path::new("/s/claude"),
            Path::new("/s/codex"),
            4001,
            Auth::ApiKey,
        );
        let get = |k: &str| {
            c.env
                .iter()
                .find(|(name, _)| name == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        for k in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            assert_eq!(get(k).as_deref(), Some("http://127.0.0.1:4001"), "{k}");
        }
        assert_eq!(get("NO_PROXY").as_deref(), Some("127.0.0.1,localhost"));
        assert_eq!(
            get("ANTHROPIC_BASE_URL").as_deref(),
            Some("http://127.0.0.1:4000")
        );
        assert_eq!(get("CLAUDE_CONFIG_DIR").as_deref(), Some("/s/claude"));
        assert!(c.codex_config[1].contains("base_url=\"http://127.0.0.1:4000/v1\""));
    }

    #[test]
    fn an_oauth_session_has_the_token_and_no_api_key() {
        let c = Confinement::new(
            "http://127.0.0.1:4000",
            Path::new("/s/claude"),
            Path::new("/s/codex"),
            4001,
            Auth::Oauth,
        );
        let names: Vec<&str> = c.env.iter().map(|(k, _)| k.as_str()).collect();
        assert!(names.contains(&"CLAUDE_CODE_OAUTH_TOKEN"), "{names:?}");
        assert!(!names.contains(&"ANTHROPIC_API_KEY"), "{names:?}");
    }

    #[test]
    fn the_dead_port_refuses_connections() {
        let port = closed_port().unwrap();
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    }
}
