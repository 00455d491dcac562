//! Token counts as Anthropic reports them: [`RawUsage`] is `message.usage`
//! of a transcript entry or a streamed event, [`TokenTotals`] what the
//! engine keeps of it. `input` EXCLUDES the cache reads and writes, which
//! [`TokenTotals::to_usage`] folds back into `tokens_in`.

use serde::Deserialize;

use crate::state::protocol::ModelUsage;

/// Tokens one model spent, as Anthropic reports them: `input` EXCLUDES the
/// cache reads and writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenTotals {
    pub input: u64,
    pub output: u64,
    /// Cache writes, all lifetimes (`cache_creation_input_tokens`).
    pub cache_creation: u64,
    /// The part of `cache_creation` written with the 1-hour lifetime.
    pub cache_creation_1h: u64,
    pub cache_read: u64,
}

impl TokenTotals {
    /// Saturating: a transcript or an agent's stream may claim counts
    /// near `u64::MAX`, and two of them must not overflow.
    pub(crate) fn add(&mut self, other: &TokenTotals) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.cache_creation = self.cache_creation.saturating_add(other.cache_creation);
        self.cache_creation_1h = self
            .cache_creation_1h
            .saturating_add(other.cache_creation_1h);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
    }

    /// The engine's usage record: `tokens_in` is all input consumed
    /// (`input + cache_creation + cache_read`), the cache parts reported
    /// separately so they can be priced at their own rates.
    pub fn to_usage(&self, model: &str) -> ModelUsage {
        ModelUsage {
            model: model.to_owned(),
            tokens_in: self
                .input
                .saturating_add(self.cache_creation)
                .saturating_add(self.cache_read),
            tokens_out: self.output,
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_creation,
            cache_write_1h_tokens: self.cache_creation_1h,
        }
    }
}

/// `message.usage` of an assistant entry or streamed event.
#[derive(Deserialize)]
pub(crate) struct RawUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation: Option<CacheCreation>,
}

#[derive(Deserialize)]
struct CacheCreation {
    ephemeral_5m_input_tokens: Option<u64>,
    ephemeral_1h_input_tokens: Option<u64>,
}

impl RawUsage {
    pub(crate) fn totals(&self) -> TokenTotals {
        let (split_5m, split_1h) = self.cache_creation.as_ref().map_or((0, 0), |c| {
            (
                c.ephemeral_5m_input_tokens.unwrap_or(0),
                c.ephemeral_1h_input_tokens.unwrap_or(0),
            )
        });
        // The split and the total should agree; when they do not, the larger
        // reading is kept so no write goes uncounted.
        let cache_creation = self
            .cache_creation_input_tokens
            .unwrap_or(0)
            .max(split_5m.saturating_add(split_1h));
        TokenTotals {
            input: self.input_tokens.unwrap_or(0),
            output: self.output_tokens.unwrap_or(0),
            cache_creation,
            cache_creation_1h: split_1h.min(cache_creation),
            cache_read: self.cache_read_input_tokens.unwrap_or(0),
        }
    }
}
