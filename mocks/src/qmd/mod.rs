//! `mock-qmd`: installed as `qmd` on the sandbox PATH, it
//! answers the verbs the skills use from fixture collections, and behaves
//! up, down or slow per tick as a state file says.

pub mod cli;
pub mod corpus;
pub mod state;

pub use cli::{ENV_FIXTURES, ENV_STATE, QmdEnv, run};
pub use corpus::Corpus;
pub use state::QmdState;
