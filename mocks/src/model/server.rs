//! The mock model server: [`MockModel`], a wiremock server on `127.0.0.1`
//! that answers the Messages, Responses and Gemini APIs from a [`Script`]
//! and logs every request.
//!
//! Started like the mock tracker — `MockServer::builder()` on a listener
//! bound here, never the pooled `MockServer::start()` whose recycled ports
//! let a late request reach another test's server; it serves
//! from wiremock's own thread and stops when the handle is dropped.
//! [`BlockingMockModel`] owns a runtime for callers that are not async.
//!
//! Each request, under one lock: routed ([`Route`]); checked against
//! `--api-key` when one is set (else 401); its body read as a JSON object
//! (else 400); answered by [`Turns`]; rendered by [`wire`]; logged,
//! redacted. `GET /__log` and `GET /__totals` read the log and are not
//! logged themselves.

use std::hash::{BuildHasher, Hasher};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::log::{Log, LogEntry, Redactor, Totals};
use super::request::{self, Api, CREDENTIAL_HEADERS, Route};
use super::script::Script;
use super::turns::{Answer, Decision, ErrorKind, Outcome, Turns};
use super::wire;

/// Unique response serials: a random prefix per server, then a count,
/// so two servers in one case never hand out the same id.
#[derive(Debug)]
struct Serials {
    prefix: String,
    next: u64,
}

impl Serials {
    fn new() -> Self {
        let mut random = std::collections::hash_map::RandomState::new().build_hasher();
        random.write_u32(std::process::id());
        let mut n = random.finish();
        let digits = b"0123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
        let mut prefix = String::new();
        for _ in 0..10 {
            prefix.push(char::from(digits[(n % digits.len() as u64) as usize]));
            n /= digits.len() as u64;
        }
        Self { prefix, next: 1 }
    }

    fn next(&mut self) -> String {
        let serial = format!("{}{:06}", self.prefix, self.next);
        self.next += 1;
        serial
    }
}

#[derive(Debug)]
struct State {
    turns: Turns,
    log: Log,
    serials: Serials,
    api_key: Option<String>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    #[error("cannot open the log {}: {source}", path.display())]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Configures a [`MockModel`].
#[derive(Debug)]
pub struct MockModelBuilder {
    script: Script,
    api_key: Option<String>,
    log_file: Option<PathBuf>,
    port: Option<u16>,
}

impl MockModelBuilder {
    /// Require this API key (`x-api-key` or `Authorization: Bearer`);
    /// it is redacted from the log either way.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Append every log entry to this JSON-lines file as it happens.
    pub fn log_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.log_file = Some(path.into());
        self
    }

    /// Listen on this port of 127.0.0.1 (default: a free one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    pub async fn start(self) -> Result<MockModel, StartError> {
        let port = self.port.unwrap_or(0);
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|source| StartError::Bind { port, source })?;
        let log = match &self.log_file {
            Some(path) => Log::to_file(path).map_err(|source| StartError::Log {
                path: path.clone(),
                source,
            })?,
            None => Log::default(),
        };
        let server = MockServer::builder()
            .listener(listener)
            .disable_request_recording()
            .start()
            .await;
        let state = Arc::new(Mutex::new(State {
            turns: Turns::new(self.script),
            log,
            serials: Serials::new(),
            api_key: self.api_key,
        }));
        Mock::given(wiremock::matchers::any())
            .respond_with(Responder {
                state: Arc::clone(&state),
            })
            .mount(&server)
            .await;
        Ok(MockModel { server, state })
    }

    /// Starts on a runtime the returned handle owns. Must not be called
    /// from inside a tokio runtime.
    pub fn start_blocking(self) -> Result<BlockingMockModel, StartError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| StartError::Bind {
                port: self.port.unwrap_or(0),
                source,
            })?;
        let model = runtime.block_on(self.start())?;
        Ok(BlockingMockModel {
            model: Some(model),
            runtime,
        })
    }
}

#[derive(Debug)]
struct Responder {
    state: Arc<Mutex<State>>,
}

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let method = request.method.as_str().to_owned();
        let path = request.url.path().to_owned();
        let route = Route::of(&method, &path);
        let mut state = lock(&self.state);
        match route {
            Route::Log => {
                return ResponseTemplate::new(200)
                    .set_body_raw(state.log.jsonl(), "application/x-ndjson");
            }
            Route::Totals => {
                return ResponseTemplate::new(200).set_body_json(Totals::of(state.log.entries()));
            }
            _ => {}
        }
        let state = &mut *state;
        let serial = state.serials.next();
        let request_id = format!("req_01{serial}");
        let headers: Vec<(String, String)> = request
            .headers
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_owned(), value)
            })
            .collect();
        let credential = request::credential(&headers);
        let presented = credential.as_ref().map(|(_, key)| key.as_str());
        let body: Option<Value> = serde_json::from_slice(&request.body)
            .ok()
            .filter(Value::is_object);

        let api = route.api(&path);
        let decision = match (route, api) {
            (Route::Unknown, _) | (_, None) => {
                let message = format!("mock-model: no route for {method} {path}");
                Decision::other(
                    Outcome::NotFound,
                    Answer::error(ErrorKind::NotFound, message),
                )
            }
            _ if state.api_key.is_some() && presented != state.api_key.as_deref() => {
                let message = "mock-model: the API key is not the one given with --api-key";
                Decision::other(
                    Outcome::Unauthorized,
                    Answer::error(ErrorKind::Authentication, message),
                )
            }
            (_, Some(api)) => match &body {
                None => {
                    let message = "mock-model: the request body is not a JSON object";
                    Decision::other(
                        Outcome::BadRequest,
                        Answer::error(ErrorKind::InvalidRequest, message),
                    )
                }
                Some(_) if matches!(route, Route::CountTokens | Route::GeminiCountTokens) => {
                    Turns::count_tokens(&request.body)
                }
                Some(body) if api == Api::Gemini && body.get("model").is_none() => {
                    // Gemini names the model in the path, not the body.
                    let mut body = body.clone();
                    if let Some((model, _)) = request::gemini_action(&path) {
                        body["model"] = Value::String(model.to_owned());
                    }
                    state.turns.answer(api, &body, &serial)
                }
                Some(body) => state.turns.answer(api, body, &serial),
            },
        };
        let streamed = route.streams() || body.as_ref().is_some_and(request::streams);
        let wire = wire::render(
            api.unwrap_or(Api::Anthropic),
            &decision.answer,
            streamed,
            &request_id,
        );

        let redactor = Redactor::new([state.api_key.as_deref(), presented]);
        let mut logged_body = body
            .unwrap_or_else(|| Value::String(String::from_utf8_lossy(&request.body).into_owned()));
        redactor.json(&mut logged_body);
        let mut fault = decision.fault;
        if let (Some(fault), Some(sent)) = (&mut fault, wire.cut_at) {
            fault.after_events = Some(sent);
        }
        let entry = LogEntry {
            seq: state.log.next_seq(),
            at: jiff::Timestamp::now(),
            api,
            method,
            path,
            query: request.url.query().map(|q| redactor.text(q)),
            outcome: decision.outcome,
            turn: decision.turn,
            fault,
            checks: decision.checks,
            status: wire.status,
            stream: wire.stream,
            model: wire.model.clone(),
            usage: wire.usage,
            response_id: wire.response_id.clone(),
            request_id,
            error: wire.error.clone(),
            credential: credential.map(|(header, _)| header),
            headers: headers
                .iter()
                .filter(|(name, _)| !CREDENTIAL_HEADERS.contains(&name.as_str()))
                .map(|(name, value)| (name.clone(), redactor.text(value)))
                .collect(),
            body: logged_body,
        };
        state.log.push(entry);

        let mut template = ResponseTemplate::new(wire.status);
        if let Some(delay) = wire.delay {
            // Served from wiremock's own tasks: a held-back answer keeps
            // no other request waiting.
            template = template.set_delay(delay);
        }
        for (name, value) in &wire.headers {
            template = template.insert_header(*name, value.as_str());
        }
        for (name, value) in &decision.headers {
            template = template.insert_header(name.as_str(), value.as_str());
        }
        template.set_body_raw(wire.body, wire.content_type)
    }
}

/// A running mock model; stops when dropped.
#[derive(Debug)]
pub struct MockModel {
    server: MockServer,
    state: Arc<Mutex<State>>,
}

impl MockModel {
    pub fn builder(script: Script) -> MockModelBuilder {
        MockModelBuilder {
            script,
            api_key: None,
            log_file: None,
            port: None,
        }
    }

    /// The base URL, e.g. `http://127.0.0.1:4567` (no trailing slash):
    /// Claude Code's `ANTHROPIC_BASE_URL` and the Gemini CLI's
    /// `GOOGLE_GEMINI_BASE_URL`; Codex's and OpenCode's base URL is it +
    /// `/v1`.
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    pub fn address(&self) -> SocketAddr {
        *self.server.address()
    }

    /// Every request so far, oldest first.
    pub fn log(&self) -> Vec<LogEntry> {
        lock(&self.state).log.entries().to_vec()
    }

    pub fn totals(&self) -> Totals {
        Totals::of(lock(&self.state).log.entries())
    }

    /// How many of the script's turns have been served.
    pub fn turns_served(&self) -> usize {
        lock(&self.state).turns.served()
    }

    /// How many turns the script has.
    pub fn turns_total(&self) -> usize {
        lock(&self.state).turns.script().turns.len()
    }

    /// The first failure to append to the log file, if any.
    pub fn log_write_error(&self) -> Option<String> {
        lock(&self.state).log.write_error().map(str::to_owned)
    }
}

/// A [`MockModel`] with its own runtime, for non-async callers; derefs to
/// the server. Stops when dropped.
#[derive(Debug)]
pub struct BlockingMockModel {
    model: Option<MockModel>,
    runtime: tokio::runtime::Runtime,
}

impl std::ops::Deref for BlockingMockModel {
    type Target = MockModel;
    fn deref(&self) -> &MockModel {
        self.model
            .as_ref()
            .expect("the server lives until the handle is dropped")
    }
}

impl Drop for BlockingMockModel {
    fn drop(&mut self) {
        let _guard = self.runtime.enter();
        self.model.take();
    }
}
