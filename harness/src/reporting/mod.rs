//! Reporting what happened: [`report`] (a case's result, the terminal
//! summary, `grading.json` and `summary.md`), [`timeline`] (each tick as a
//! reviewer reads it), [`viewer`] (the self-contained `report.html`) and
//! [`benchmark`] (`benchmark.json`, pass rates per tier and the committed
//! history under `evals/benchmarks/`), and [`timings`] (where a run's wall
//! time went, `--timings`). [`plugin_eval`] reads Claude Code's own runner
//! (`claude plugin eval --json`) into the same reports, its two arms as
//! SPEC-0017's `with_skill` / `without_skill` ([`arms`]).
//!
//! Uses every stage before it; only the command line uses it.

pub mod arms;
pub mod benchmark;
pub mod plugin_eval;
pub mod report;
pub mod timeline;
pub mod timings;
pub mod viewer;
