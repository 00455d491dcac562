//! Judging a run: [`check`] judges each check kind against the
//! [`RunRecord`](crate::driving::record::RunRecord) with evidence,
//! [`grade`] turns a case's expectations and assertions into
//! `{text, passed, evidence}` grades, [`status_layout`] holds every status
//! block to the canonical layout, [`snapshot`] renders what a run printed
//! and recorded (redacted) and compares it with the stored `.snap` files,
//! and [`docs`] compares a plugin's SKILL.md documents with the engine.
//!
//! Uses loading, the world and driving. Hands on: grades and snapshot
//! states to reporting.

pub mod check;
pub mod docs;
pub mod grade;
pub mod snapshot;
pub mod status_layout;
