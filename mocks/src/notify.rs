//! The notification receiver: [`Receiver`], a wiremock server on
//! `127.0.0.1` that records every request it is sent (method, path,
//! headers, body) and answers as scripted — `204`, another status
//! ([`Answer::Status`]), or nothing at all for ten minutes
//! ([`Answer::Hang`]: the engine's own time limit must end the wait). It
//! stands for the person's ntfy topic or chat webhook
//! (docs/src/notifications.md). Started like the mock tracker, on a
//! listener bound here, on a runtime the handle owns; it stops when the
//! handle is dropped, a hung answer with it.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// How the receiver answers every POST.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Answer {
    /// `204 No Content`.
    #[default]
    Accept,
    /// This status, with a short body.
    Status(u16),
    /// No answer (for ten minutes, or until the receiver stops).
    Hang,
}

/// How long a hung answer is held back: longer than any case runs.
const HANG: Duration = Duration::from_secs(600);

/// One request the receiver was sent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Received {
    pub method: String,
    /// The path and query, as sent.
    pub path: String,
    /// Header names lowercased; values as sent (lossy UTF-8).
    pub headers: BTreeMap<String, String>,
    /// The body (lossy UTF-8).
    pub body: String,
}

impl Received {
    /// Everything a person would read: the headers' values and the body.
    pub fn text(&self) -> String {
        let mut all: Vec<&str> = self.headers.values().map(String::as_str).collect();
        all.push(&self.body);
        all.join("\n")
    }
}

#[derive(Debug)]
struct Recorder {
    answer: Answer,
    log: Arc<Mutex<Vec<Received>>>,
}

impl Respond for Recorder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let headers = request
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let path = match request.url.query() {
            Some(q) => format!("{}?{q}", request.url.path()),
            None => request.url.path().to_owned(),
        };
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Received {
                method: request.method.as_str().to_owned(),
                path,
                headers,
                body: String::from_utf8_lossy(&request.body).into_owned(),
            });
        match self.answer {
            Answer::Accept => ResponseTemplate::new(204),
            Answer::Status(status) => {
                ResponseTemplate::new(status).set_body_string("the receiver refused it")
            }
            Answer::Hang => ResponseTemplate::new(204).set_delay(HANG),
        }
    }
}

/// A running receiver; stops on drop.
#[derive(Debug)]
pub struct Receiver {
    server: Option<MockServer>,
    runtime: tokio::runtime::Runtime,
    log: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    /// Starts a receiver answering `answer`, on a runtime of its own. Must
    /// not be called from inside a tokio runtime.
    pub fn start(answer: Answer) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let server = runtime.block_on(async {
            let server = MockServer::builder()
                .listener(listener)
                .disable_request_recording()
                .start()
                .await;
            Mock::given(wiremock::matchers::any())
                .respond_with(Recorder {
                    answer,
                    log: Arc::clone(&log),
                })
                .mount(&server)
                .await;
            server
        });
        Ok(Self {
            server: Some(server),
            runtime,
            log,
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn uri(&self) -> String {
        self.server
            .as_ref()
            .map(MockServer::uri)
            .unwrap_or_default()
    }

    /// Every request so far, in the order they arrived.
    pub fn received(&self) -> Vec<Received> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _guard = self.runtime.enter();
        self.server.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(uri: &str, body: &str, limit: Duration) -> Result<u16, String> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(limit))
            .build()
            .into();
        agent
            .post(&format!("{uri}/topic?x=1"))
            .header("Title", "hello")
            .send(body.as_bytes())
            .map(|r| r.status().as_u16())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn it_records_what_it_is_sent_and_answers_as_scripted() {
        let ok = Receiver::start(Answer::Accept).unwrap();
        assert_eq!(post(&ok.uri(), "body one", Duration::from_secs(5)), Ok(204));
        let got = ok.received();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].path, "/topic?x=1");
        assert_eq!(got[0].headers["title"], "hello");
        assert_eq!(got[0].body, "body one");
        assert!(got[0].text().contains("hello\n") && got[0].text().ends_with("body one"));

        let refusing = Receiver::start(Answer::Status(500)).unwrap();
        assert_eq!(post(&refusing.uri(), "x", Duration::from_secs(5)), Ok(500));
        assert_eq!(refusing.received().len(), 1);
    }

    #[test]
    fn a_hung_answer_ends_with_the_senders_limit_and_the_request_is_recorded() {
        let hung = Receiver::start(Answer::Hang).unwrap();
        let started = std::time::Instant::now();
        assert!(post(&hung.uri(), "x", Duration::from_millis(300)).is_err());
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(hung.received().len(), 1);
        drop(hung);
    }
}
