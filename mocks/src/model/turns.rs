//! Which answer each request gets: [`Turns`] walks the script's turns in
//! order, one per served model request, and decides an [`Answer`] the API
//! modules then render.
//!
//! A request, in order: without `tools`, it gets the script's `untooled`
//! text and uses no turn; with no turn left, a 400 naming the script
//! file; while the turn in hand has faults left, the next fault; when the
//! turn's assertions fail, a 400 saying which (the turn stays unserved);
//! else the turn, and the next request gets the next one — a turn with a
//! `limit` as a 429 on its window. `count_tokens` gets an estimate (a
//! token per four bytes of the body) and no turn. On the Messages API
//! every answer carries the account's usage windows once a served turn
//! gave them ([`super::windows`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::expect::{self, CheckResult};
use super::faults::{FaultCounter, FaultKind, ServedFault};
use super::request::{self, Api, Conversation};
use super::script::{Call, Script, Usage};
use super::windows::{self, Windows};

/// A model response to render.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// Unique per response; the API's ids are built from it.
    pub serial: String,
    pub model: String,
    pub text: Option<String>,
    pub calls: Vec<Call>,
    pub usage: Usage,
}

/// The error kinds answered, each with its status per API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    InvalidRequest,
    Authentication,
    NotFound,
    RateLimited,
    Server,
    Overloaded,
    /// A hang's answer once it gives up: 504.
    Timeout,
}

/// What a request gets.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Reply {
        reply: Reply,
        /// A cut fault: the events (or bytes) to send, if given.
        cut: Option<Option<u32>>,
    },
    Error {
        kind: ErrorKind,
        message: String,
        retry_after: Option<u64>,
    },
    CountTokens {
        input_tokens: u64,
    },
    /// A 200 whose body is not valid JSON.
    Malformed,
    /// Nothing for `seconds`, then a 504 with `message`.
    Hang {
        seconds: u64,
        message: String,
    },
}

impl Answer {
    pub fn error(kind: ErrorKind, message: impl Into<String>) -> Self {
        Answer::Error {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }
}

/// What happened to a request, as logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A turn was served (usage returned).
    Turn,
    /// A turn with a `limit` was served: 429, the window's limit hit.
    Limited,
    /// A request without tools got the untooled text (usage returned).
    Untooled,
    CountTokens,
    /// A scripted fault was served instead of the turn.
    Fault,
    /// The turn's assertions failed: 400.
    ExpectFailed,
    /// No turn was left: 400.
    OutOfTurns,
    /// The API key did not match `--api-key`: 401.
    Unauthorized,
    /// The body was not a JSON object: 400.
    BadRequest,
    /// No such route: 404.
    NotFound,
}

/// The decision for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub answer: Answer,
    pub outcome: Outcome,
    /// The 1-based turn the request was matched to.
    pub turn: Option<usize>,
    pub fault: Option<ServedFault>,
    pub checks: Vec<CheckResult>,
    /// Headers beyond the API's own: the usage windows.
    pub headers: Vec<(String, String)>,
}

impl Decision {
    pub fn other(outcome: Outcome, answer: Answer) -> Self {
        Self {
            answer,
            outcome,
            turn: None,
            fault: None,
            checks: Vec::new(),
            headers: Vec::new(),
        }
    }
}

/// The script and how far it has got.
#[derive(Debug)]
pub struct Turns {
    script: Script,
    next: usize,
    faults: FaultCounter,
    /// The account's usage windows, as the served turns gave them.
    windows: Windows,
}

impl Turns {
    pub fn new(script: Script) -> Self {
        Self {
            script,
            next: 0,
            faults: FaultCounter::default(),
            windows: Windows::default(),
        }
    }

    /// How many turns have been served.
    pub fn served(&self) -> usize {
        self.next
    }

    pub fn script(&self) -> &Script {
        &self.script
    }

    fn model(&self, turn: Option<&str>, body: &Value) -> String {
        turn.or(self.script.model.as_deref())
            .or_else(|| body.get("model").and_then(Value::as_str))
            .unwrap_or("mock-model")
            .to_owned()
    }

    /// `count_tokens`: an estimate, using no turn.
    pub fn count_tokens(body: &[u8]) -> Decision {
        let input_tokens = u64::try_from(body.len() / 4).unwrap_or(u64::MAX).max(1);
        Decision::other(Outcome::CountTokens, Answer::CountTokens { input_tokens })
    }

    /// The answer to a model request (`/v1/messages`, `/v1/responses`),
    /// with the usage windows' headers on the Messages API.
    pub fn answer(&mut self, api: Api, body: &Value, serial: &str) -> Decision {
        let mut decision = self.decide(api, body, serial);
        if api != Api::Anthropic {
            decision.headers.clear();
        } else if decision.outcome != Outcome::Limited {
            decision.headers = windows::headers(&self.windows, None);
        }
        decision
    }

    fn decide(&mut self, api: Api, body: &Value, serial: &str) -> Decision {
        if !request::offers_tools(body) {
            let reply = Reply {
                serial: serial.to_owned(),
                model: self.model(None, body),
                text: Some(self.script.untooled.text.clone()),
                calls: Vec::new(),
                usage: self.script.untooled.usage,
            };
            return Decision::other(Outcome::Untooled, Answer::Reply { reply, cut: None });
        }
        let source = self.script.source.display().to_string();
        let Some(turn) = self.script.turns.get(self.next) else {
            let message = format!(
                "mock-model: the script {source} has no turn left ({} served) for this request; \
                 add a turn to the script, or find why the CLI asked again",
                self.script.turns.len()
            );
            return Decision::other(
                Outcome::OutOfTurns,
                Answer::error(ErrorKind::InvalidRequest, message),
            );
        };
        let number = self.next + 1;
        let line = turn.referenced.line();
        let turn = turn.value.clone();
        if let Some(fault) = self.faults.next(self.next, &turn.faults) {
            let answer = match fault.kind {
                FaultKind::Cut => Answer::Reply {
                    reply: self.reply(&turn, body, serial),
                    cut: Some(fault.after_events),
                },
                FaultKind::Malformed => Answer::Malformed,
                FaultKind::Hang => Answer::Hang {
                    seconds: fault.seconds.unwrap_or(super::faults::HANG_SECONDS),
                    message: format!(
                        "mock-model: scripted hang (attempt {} of {}) before turn {number} of {source}",
                        fault.attempt, fault.of
                    ),
                },
                kind => Answer::Error {
                    kind: match kind {
                        FaultKind::RateLimited => ErrorKind::RateLimited,
                        FaultKind::ServerError => ErrorKind::Server,
                        _ => ErrorKind::Overloaded,
                    },
                    message: format!(
                        "mock-model: scripted {} (attempt {} of {}) before turn {number} of {source}",
                        kind.name(),
                        fault.attempt,
                        fault.of
                    ),
                    retry_after: fault.retry_after,
                },
            };
            return Decision {
                answer,
                outcome: Outcome::Fault,
                turn: Some(number),
                fault: Some(fault),
                checks: Vec::new(),
                headers: Vec::new(),
            };
        }
        let checks = turn.expect.check(&Conversation::of(api, body));
        if let Some(failed) = expect::failure_message(&checks) {
            let message = format!(
                "mock-model: turn {number} of {source} (line {line}) did not get the request \
                 it expects: {failed}"
            );
            return Decision {
                answer: Answer::error(ErrorKind::InvalidRequest, message),
                outcome: Outcome::ExpectFailed,
                turn: Some(number),
                fault: None,
                checks,
                headers: Vec::new(),
            };
        }
        self.next += 1;
        if let Some(w) = &turn.windows {
            self.windows.update(w);
        }
        if let Some(window) = turn.limit {
            return Decision {
                answer: Answer::error(ErrorKind::RateLimited, windows::limit_message(window)),
                outcome: Outcome::Limited,
                turn: Some(number),
                fault: None,
                checks,
                headers: windows::headers(&self.windows, Some(window)),
            };
        }
        Decision {
            answer: Answer::Reply {
                reply: self.reply(&turn, body, serial),
                cut: None,
            },
            outcome: Outcome::Turn,
            turn: Some(number),
            fault: None,
            checks,
            headers: Vec::new(),
        }
    }

    fn reply(&self, turn: &super::script::Turn, body: &Value, serial: &str) -> Reply {
        Reply {
            serial: serial.to_owned(),
            model: self.model(turn.model.as_deref(), body),
            text: turn.text.clone(),
            calls: turn.calls.clone(),
            usage: turn.usage,
        }
    }
}
