//! The mock model (issue 18): `mock-model`, a scripted model server for
//! the real Claude Code, Codex, Gemini CLI and OpenCode run offline — the
//! Anthropic Messages API (`POST /v1/messages`, streamed and plain,
//! `count_tokens`), the OpenAI Responses API (`POST /v1/responses`) and
//! the Gemini API (`POST /v1beta/models/{model}:streamGenerateContent`,
//! `:generateContent`, `:countTokens`), in the shapes measured in
//! `reference/real-agents.md`.
//!
//! A [`script`] gives the conversation's turns: text, tool calls (Claude
//! Code's `Bash`, Codex's `exec_command`), usage, assertions on the
//! request ([`expect`], read through [`request`]) and faults before the
//! turn ([`faults`]), the account's usage windows and a 429 on one
//! ([`windows`]). [`turns`] decides each request's answer,
//! [`anthropic`], [`openai`] and [`gemini`] give it its API's shape, [`wire`] makes
//! it an HTTP response, [`server`] serves it and [`log`] records it,
//! credentials redacted. [`standalone`] is the binary. Format, flags and
//! log: `fixtures/model/README.md`.

pub mod anthropic;
pub mod expect;
pub mod faults;
pub mod gemini;
pub mod log;
pub mod openai;
pub mod request;
pub mod script;
pub mod server;
pub mod standalone;
pub mod turns;
pub mod windows;
pub mod wire;

pub use log::{LogEntry, Totals};
pub use script::{Call, Script, Usage};
pub use server::{BlockingMockModel, MockModel, MockModelBuilder, StartError};
