//! The contract's rules, as pure decisions over the state: the twelve
//! stop conditions ([`stop`]), the user-prompt gates ([`gates`]), cost
//! rates and the dollar estimate ([`rates`]), redaction ([`redact`]), and
//! the project's `CLAUDE.md` that configures them ([`claude_md`]), and
//! the usage-window budgets ([`windows`]), and which reply answers a
//! gate posted on the tracker ([`replies`]).

pub mod claude_md;
pub mod gates;
pub mod rates;
pub mod redact;
pub mod replies;
pub mod stop;
pub mod windows;
