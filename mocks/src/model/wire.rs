//! An [`Answer`] as the HTTP response one API sends: status, headers and
//! body — server-sent events (`event:` and `data:` lines, a blank line
//! after each) when the request streams, else JSON — and what the log
//! records of it.
//!
//! Every response carries a `request-id` header (`req_…`, unique, as the
//! Anthropic API sends; Claude Code copies it into its transcript as
//! `requestId`); Responses API answers repeat it as `x-request-id`, as
//! OpenAI's do. A 429 carries `retry-after`. A cut answer is its first
//! events ([`faults::cut_point`]), or for JSON its first bytes; its
//! usage is what the events sent carried (on the Messages API,
//! `message_start`'s: Claude Code 2.1.328 keeps a cut message and counts
//! it), and none for cut JSON or a Responses stream (whose usage comes
//! only in `response.completed`).

use serde_json::Value;

use super::faults;
use super::request::Api;
use super::script::Usage;
use super::turns::{Answer, ErrorKind};
use super::{anthropic, gemini, openai};

/// The HTTP response, and what the log keeps of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Wire {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub content_type: &'static str,
    pub body: String,
    pub stream: bool,
    pub model: Option<String>,
    pub response_id: Option<String>,
    /// The usage the answer carried (a complete reply, or what the
    /// events of a cut stream carried).
    pub usage: Option<Usage>,
    /// For a cut: how many events (or bytes) were sent.
    pub cut_at: Option<u32>,
    pub error: Option<String>,
    /// How long the answer is held back (a hang).
    pub delay: Option<std::time::Duration>,
}

const SSE: &str = "text/event-stream; charset=utf-8";
const JSON: &str = "application/json";

fn sse<'a>(events: impl IntoIterator<Item = &'a (&'static str, Value)>) -> String {
    events
        .into_iter()
        .map(|(name, data)| {
            if name.is_empty() {
                // Gemini's stream: data lines only, CRLF-terminated.
                format!("data: {data}\r\n\r\n")
            } else {
                format!("event: {name}\ndata: {data}\n\n")
            }
        })
        .collect()
}

fn cut_prefix(text: &str, after: Option<u32>) -> (String, u32) {
    let mut at = faults::cut_point(after, text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    (text[..at].to_owned(), u32::try_from(at).unwrap_or(u32::MAX))
}

/// Renders `answer` for `api`; `stream` is the request's `"stream"`.
pub fn render(api: Api, answer: &Answer, stream: bool, request_id: &str) -> Wire {
    let mut headers = vec![("request-id", request_id.to_owned())];
    if api == Api::Openai {
        headers.push(("x-request-id", request_id.to_owned()));
    }
    let mut wire = Wire {
        status: 200,
        headers,
        content_type: JSON,
        body: String::new(),
        stream: false,
        model: None,
        response_id: None,
        usage: None,
        cut_at: None,
        error: None,
        delay: None,
    };
    match answer {
        Answer::Reply { reply, cut } => {
            wire.model = Some(reply.model.clone());
            wire.response_id = Some(match api {
                Api::Anthropic => anthropic::message_id(reply),
                Api::Openai => openai::response_id(reply),
                Api::Gemini => gemini::response_id(reply),
            });
            let usage = match api {
                Api::Anthropic => reply.usage.for_anthropic(),
                Api::Openai | Api::Gemini => reply.usage,
            };
            if stream {
                let events = match api {
                    Api::Anthropic => anthropic::events(reply),
                    Api::Openai => openai::events(reply),
                    Api::Gemini => gemini::events(reply),
                };
                wire.stream = true;
                wire.content_type = SSE;
                if let Some(after) = cut {
                    let sent = faults::cut_point(*after, events.len());
                    wire.body = sse(&events[..sent]);
                    if api == Api::Anthropic {
                        wire.usage = anthropic::usage_seen(&events[..sent]);
                    }
                    wire.cut_at = Some(u32::try_from(sent).unwrap_or(u32::MAX));
                } else {
                    wire.body = sse(&events);
                    wire.usage = Some(usage);
                }
            } else {
                let whole = match api {
                    Api::Anthropic => anthropic::message(reply),
                    Api::Openai => openai::response(reply),
                    Api::Gemini => gemini::response(reply),
                }
                .to_string();
                if let Some(after) = cut {
                    let (body, sent) = cut_prefix(&whole, *after);
                    wire.body = body;
                    wire.cut_at = Some(sent);
                } else {
                    wire.body = whole;
                    wire.usage = Some(usage);
                }
            }
        }
        Answer::Error {
            kind,
            message,
            retry_after,
        } => {
            let (status, body) = match api {
                Api::Anthropic => anthropic::error(*kind, message, request_id),
                Api::Openai => openai::error(*kind, message),
                Api::Gemini => gemini::error(*kind, message),
            };
            wire.status = status;
            wire.body = body.to_string();
            wire.error = Some(message.clone());
            if let Some(seconds) = retry_after {
                wire.headers.push(("retry-after", seconds.to_string()));
            }
        }
        Answer::Malformed => {
            // The first event (or the start of the JSON) with its JSON
            // broken off: what a proxy that mangles bodies would send.
            wire.stream = stream;
            wire.error = Some("mock-model: scripted malformed body".to_owned());
            wire.body = match (api, stream) {
                (Api::Gemini, true) => "data: {\"candidates\": [{\"content\": \r\n\r\n".to_owned(),
                (Api::Anthropic, true) => {
                    "event: message_start\ndata: {\"type\": \"message_start\", \"message\": \n\n"
                        .to_owned()
                }
                (Api::Openai, true) => {
                    "event: response.created\ndata: {\"type\": \"response.created\", \"response\": \n\n"
                        .to_owned()
                }
                (_, false) => "{\"id\": \"".to_owned(),
            };
            if stream {
                wire.content_type = SSE;
            }
        }
        Answer::Hang { seconds, message } => {
            let (status, body) = match api {
                Api::Anthropic => anthropic::error(ErrorKind::Timeout, message, request_id),
                Api::Openai => openai::error(ErrorKind::Timeout, message),
                Api::Gemini => gemini::error(ErrorKind::Timeout, message),
            };
            wire.status = status;
            wire.body = body.to_string();
            wire.error = Some(message.clone());
            wire.delay = Some(std::time::Duration::from_secs(*seconds));
        }
        Answer::CountTokens { input_tokens } => {
            wire.body = match api {
                Api::Gemini => gemini::count_tokens(*input_tokens),
                _ => anthropic::count_tokens(*input_tokens),
            }
            .to_string();
        }
    }
    wire
}
