//! One transcript file read into what counting needs ([`scan_file`]): its
//! prompts in file order, and each API response with the prompt it answers.
//!
//! A *prompt* is a `user` entry that starts a turn: its `message.content`
//! is text, or content blocks none of which is a `tool_result`, and it is
//! not marked `isMeta` (a skill's body, a command's caveat),
//! `isCompactSummary`, `isVisibleInTranscriptOnly` or `isSidechain` (a
//! subagent's task). A response *answers* the last prompt before its first
//! entry in file order — tool results, attachments, queue operations,
//! request records and the rest come between without changing that. File
//! order rather than the `parentUuid` chain: the chain is cut at a compact
//! boundary and runs through entry types that come and go between builds,
//! while Claude Code appends a session's entries in the order they happen.
//! Treating a system-made message as a prompt would hide the responses
//! after it; treating a real one as part of the turn before only charges
//! them to that turn — so only the shapes above end a turn.
//!
//! One API response is one (`message.id`, `requestId`) pair (`requestId`
//! is absent when the server sends no `request-id` header): a streamed
//! response is one entry per content block, each with a usage snapshot,
//! the last one final.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use jiff::Timestamp;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::usage::RawUsage;
use super::{TokenTotals, TranscriptError};

/// The model Claude Code writes for messages it made up itself (errors,
/// "No response requested."); they cost nothing and are skipped.
pub const SYNTHETIC_MODEL: &str = "<synthetic>";

/// Lines and entries that were not counted, by reason. Every non-blank
/// line read lands in exactly one of these or is the one counted entry of
/// a response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Not JSON (including a line torn by a write in progress).
    pub malformed: u64,
    /// JSON, but not a transcript entry (not an object, or no `type`).
    pub foreign: u64,
    /// Entries of other types: prompts, tool results, attachments,
    /// queue operations, request records, summaries, snapshots….
    pub other_entries: u64,
    /// Assistant entries without message id, model, usage or a valid
    /// timestamp.
    pub incomplete: u64,
    /// Assistant entries of the `<synthetic>` model.
    pub synthetic: u64,
    /// Entries of responses that answer no prompt of the loop's ticks
    /// (chat before the loop, chat between ticks).
    pub not_loop: u64,
    /// Entries of responses an earlier `end` counted.
    pub counted_before: u64,
    /// Earlier entries of a counted streamed response (same file).
    pub streamed: u64,
    /// Copies of a counted response in other files (resumed sessions).
    pub replayed: u64,
}

impl Skipped {
    pub(super) fn add(&mut self, other: &Skipped) {
        self.malformed += other.malformed;
        self.foreign += other.foreign;
        self.other_entries += other.other_entries;
        self.incomplete += other.incomplete;
        self.synthetic += other.synthetic;
        self.not_loop += other.not_loop;
        self.counted_before += other.counted_before;
        self.streamed += other.streamed;
        self.replayed += other.replayed;
    }
}

/// One API response: `message.id`, and `requestId` when the file has one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseKey {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}

/// A prompt: its identity (`uuid`, else `promptId`, else the file's name
/// and line), Claude Code's `promptId` (what hooks are told as
/// `prompt_id`) and when it was written.
#[derive(Debug, Clone)]
pub(super) struct Prompt {
    pub id: String,
    pub prompt_id: Option<String>,
    pub at: Option<Timestamp>,
}

/// A response as one file holds it.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    /// The earliest timestamp of its entries.
    pub first_at: Timestamp,
    pub entries: u64,
    pub model: String,
    /// The usage of its last entry.
    pub last: TokenTotals,
    /// The prompt in effect at its first entry (index into `prompts`).
    pub prompt: Option<usize>,
}

/// What one file holds.
#[derive(Debug, Default)]
pub(super) struct FileScan {
    pub prompts: Vec<Prompt>,
    pub responses: HashMap<ResponseKey, Seen>,
    pub skipped: Skipped,
    /// The first `sessionId` written in it.
    pub session: Option<String>,
}

/// One transcript line, with only the fields read; the rest (content
/// blocks, tool results) is skipped without being built.
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "type")]
    kind: Option<serde_json::Value>,
    timestamp: Option<serde_json::Value>,
    #[serde(rename = "sessionId")]
    session: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct AssistantEntry {
    #[serde(rename = "requestId")]
    request_id: Option<String>,
    message: AssistantMessage,
}

#[derive(Deserialize)]
struct AssistantMessage {
    id: String,
    model: String,
    usage: RawUsage,
}

#[derive(Deserialize)]
struct UserEntry {
    uuid: Option<serde_json::Value>,
    #[serde(rename = "promptId")]
    prompt_id: Option<serde_json::Value>,
    #[serde(rename = "isMeta")]
    is_meta: Option<serde_json::Value>,
    #[serde(rename = "isCompactSummary")]
    is_compact_summary: Option<serde_json::Value>,
    #[serde(rename = "isVisibleInTranscriptOnly")]
    transcript_only: Option<serde_json::Value>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<serde_json::Value>,
    message: Option<UserMessage>,
}

#[derive(Deserialize)]
struct UserMessage {
    content: Option<Content>,
}

/// A user message's content, as far as telling a prompt from a tool
/// result needs.
enum Content {
    Text,
    Blocks { tool_result: bool },
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Content, E> {
                Ok(Content::Text)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut tool_result = false;
                while let Some(block) = seq.next_element::<BlockKind>()? {
                    tool_result |= block.0;
                }
                Ok(Content::Blocks { tool_result })
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether one content block is a `tool_result`; any other value is not.
struct BlockKind(bool);

impl<'de> Deserialize<'de> for BlockKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BlockKind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BlockKind, A::Error> {
                let mut tool_result = false;
                while let Some(key) = map.next_key::<String>()? {
                    if key == "type" {
                        let kind = map.next_value::<serde_json::Value>()?;
                        tool_result = kind.as_str() == Some("tool_result");
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(BlockKind(tool_result))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BlockKind, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(BlockKind(false))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<BlockKind, E> {
                Ok(BlockKind(false))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<BlockKind, E> {
                Ok(BlockKind(false))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<BlockKind, E> {
                Ok(BlockKind(false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<BlockKind, E> {
                Ok(BlockKind(false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<BlockKind, E> {
                Ok(BlockKind(false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<BlockKind, E> {
                Ok(BlockKind(false))
            }
        }
        d.deserialize_any(V)
    }
}

fn is_true(v: &Option<serde_json::Value>) -> bool {
    v.as_ref().and_then(serde_json::Value::as_bool) == Some(true)
}

fn text(v: &Option<serde_json::Value>) -> Option<&str> {
    v.as_ref()
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
}

impl UserEntry {
    /// The prompt's identity, when this entry is one.
    fn prompt_id(&self, file: &Path, line: u64) -> Option<String> {
        let starts_turn = match self.message.as_ref().and_then(|m| m.content.as_ref()) {
            Some(Content::Text) => true,
            Some(Content::Blocks { tool_result }) => !tool_result,
            None => false,
        };
        if !starts_turn
            || is_true(&self.is_meta)
            || is_true(&self.is_compact_summary)
            || is_true(&self.transcript_only)
            || is_true(&self.is_sidechain)
        {
            return None;
        }
        Some(
            text(&self.uuid)
                .or_else(|| text(&self.prompt_id))
                .map_or_else(
                    || {
                        let name = file.file_name().unwrap_or_default().to_string_lossy();
                        format!("{name}:{line}")
                    },
                    str::to_owned,
                ),
        )
    }
}

/// Reads `path` line by line. Nothing in it is fatal: every non-blank line
/// is a prompt, an entry of a response, or counted in [`Skipped`].
pub(super) fn scan_file(path: &Path) -> Result<FileScan, TranscriptError> {
    let read_err = |source| TranscriptError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = BufReader::new(File::open(path).map_err(read_err)?);
    let mut out = FileScan::default();
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(read_err)? == 0 {
            break;
        }
        number += 1;
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let head: Head = match serde_json::from_slice(text) {
            Ok(head) => head,
            Err(_) if serde_json::from_slice::<IgnoredAny>(text).is_ok() => {
                out.skipped.foreign += 1;
                continue;
            }
            Err(_) => {
                out.skipped.malformed += 1;
                continue;
            }
        };
        if out.session.is_none() {
            out.session = text_owned(&head.session);
        }
        let at = head
            .timestamp
            .as_ref()
            .and_then(serde_json::Value::as_str)
            .and_then(|t| t.parse::<Timestamp>().ok());
        match head.kind.as_ref().and_then(serde_json::Value::as_str) {
            Some("assistant") => {}
            Some("user") => {
                out.skipped.other_entries += 1;
                let entry = serde_json::from_slice::<UserEntry>(text).ok();
                if let Some(entry) = entry
                    && let Some(id) = entry.prompt_id(path, number)
                {
                    out.prompts.push(Prompt {
                        id,
                        prompt_id: text_owned(&entry.prompt_id),
                        at,
                    });
                }
                continue;
            }
            Some(_) => {
                out.skipped.other_entries += 1;
                continue;
            }
            None => {
                out.skipped.foreign += 1;
                continue;
            }
        }
        let (Ok(entry), Some(at)) = (serde_json::from_slice::<AssistantEntry>(text), at) else {
            out.skipped.incomplete += 1;
            continue;
        };
        if entry.message.model == SYNTHETIC_MODEL {
            out.skipped.synthetic += 1;
            continue;
        }
        let totals = entry.message.usage.totals();
        let key = ResponseKey {
            message: entry.message.id,
            request: entry.request_id,
        };
        let prompt = out.prompts.len().checked_sub(1);
        match out.responses.get_mut(&key) {
            Some(seen) => {
                seen.first_at = seen.first_at.min(at);
                seen.entries += 1;
                seen.model = entry.message.model;
                seen.last = totals;
            }
            None => {
                out.responses.insert(
                    key,
                    Seen {
                        first_at: at,
                        entries: 1,
                        model: entry.message.model,
                        last: totals,
                        prompt,
                    },
                );
            }
        }
    }
    Ok(out)
}

fn text_owned(v: &Option<serde_json::Value>) -> Option<String> {
    text(v).map(str::to_owned)
}
