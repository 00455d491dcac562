//! JSON Schema fragments for the parts of a case whose types live in
//! `sdd-mocks` (the fake-skill script entry, world changes, faults, qmd
//! states), which do not derive `JsonSchema`. They describe the shape an
//! editor needs and point at `fixtures/README.md`, the format's reference;
//! the parser itself stays the one in `sdd-mocks`.

use schemars::{Schema, SchemaGenerator, json_schema};

pub fn qmd_state(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "mock-qmd's state: `up`, `down` or `{ slow: MS }` (fixtures/README.md)",
        "oneOf": [
            { "type": "string", "enum": ["up", "down"] },
            {
                "type": "object",
                "properties": { "slow": { "type": "integer", "minimum": 0 } },
                "required": ["slow"],
                "additionalProperties": false
            }
        ]
    })
}

pub fn skill_entry(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "A fake-skill script entry (fixtures/README.md, \"Script\"). `iteration` is ignored: the entry runs on its tick.",
        "type": "object",
        "properties": {
            "actions": {
                "type": "array",
                "items": {
                    "description": "One action, externally tagged: qmd, usage, agents, open_pr, open_pr_per_issue, push, force_push, comment, reply, merge, add_labels, remove_label, worktree, failure, chain, review_round, report_pr, progress, stderr, barrier, hang",
                    "oneOf": [
                        { "type": "string", "enum": ["hang"] },
                        {
                            "type": "object",
                            "minProperties": 1,
                            "maxProperties": 1,
                            "propertyNames": {
                                "enum": [
                                    "qmd", "usage", "agents", "open_pr", "open_pr_per_issue", "push", "force_push",
                                    "comment", "reply", "merge", "add_labels", "remove_label",
                                    "worktree", "failure", "chain", "review_round", "report_pr",
                                    "progress", "stderr", "barrier"
                                ]
                            }
                        }
                    ]
                }
            },
            "summary": { "type": "string" },
            "result": { "type": "string", "enum": ["write", "missing", "malformed"] },
            "exit": { "type": "integer", "minimum": 0, "maximum": 255 },
            "iteration": { "type": "integer" }
        },
        "additionalProperties": false
    })
}

pub fn agent_stream(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "How the fake agent's stream reports the tick (fixtures/README.md, \"Fake agents\"); `driver: claude|codex` only",
        "type": "object",
        "properties": {
            "end": {
                "type": "string",
                "enum": [
                    "success", "error_during_execution", "error_max_turns", "error_max_budget_usd",
                    "error_max_structured_output_retries", "turn_failed", "error", "no_result"
                ]
            },
            "message": { "type": "string" },
            "errors": { "type": "array", "items": { "type": "string" } },
            "is_error": { "type": "boolean" },
            "permission_denials": { "type": "array", "items": { "type": "string" } },
            "num_turns": { "type": "integer", "minimum": 0 },
            "helpers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["model", "tokens_in", "tokens_out"],
                    "properties": {
                        "model": { "type": "string" },
                        "tokens_in": { "type": "integer" },
                        "tokens_out": { "type": "integer" },
                        "cache_read_tokens": { "type": "integer" },
                        "cache_write_tokens": { "type": "integer" },
                        "cache_write_1h_tokens": { "type": "integer" }
                    },
                    "additionalProperties": false
                }
            },
            "cost_factor": { "type": "number", "minimum": 0 },
            "windows": {
                "description": "Claude: a subscriber's usage windows, one rate_limit_event before the result",
                "type": "object",
                "properties": {
                    "five_hour": {
                        "type": "object",
                        "required": ["utilization", "resets_at"],
                        "properties": {
                            "utilization": { "type": "number", "minimum": 0, "maximum": 1 },
                            "resets_at": { "type": "string", "format": "date-time" }
                        },
                        "additionalProperties": false
                    },
                    "seven_day": {
                        "type": "object",
                        "required": ["utilization", "resets_at"],
                        "properties": {
                            "utilization": { "type": "number", "minimum": 0, "maximum": 1 },
                            "resets_at": { "type": "string", "format": "date-time" }
                        },
                        "additionalProperties": false
                    }
                },
                "additionalProperties": false
            },
            "rate_limited": {
                "description": "Claude: the API answered 429 on a window",
                "type": "object",
                "required": ["window", "resets_at", "message"],
                "properties": {
                    "window": { "enum": ["five_hour", "seven_day"] },
                    "resets_at": { "type": "string", "format": "date-time" },
                    "message": { "type": "string" }
                },
                "additionalProperties": false
            }
        },
        "additionalProperties": false
    })
}

pub fn world_change(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "A tracker change (fixtures/README.md, \"World changes\")",
        "type": "object",
        "minProperties": 1,
        "maxProperties": 1,
        "propertyNames": {
            "enum": [
                "add_issue", "close_issue", "merge_pr", "close_pr", "add_review_comment",
                "reply_to_review_comment", "add_issue_comment", "add_review", "set_labels",
                "add_labels", "remove_label", "set_head_sha", "reply_to_gate"
            ]
        }
    })
}

pub fn fault(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "A tracker fault (fixtures/README.md, \"Faults\")",
        "type": "object",
        "properties": {
            "method": { "type": "string" },
            "path": { "type": "string" },
            "fault": {
                "oneOf": [
                    { "type": "string", "enum": ["malformed"] },
                    {
                        "type": "object",
                        "minProperties": 1,
                        "maxProperties": 1,
                        "propertyNames": { "enum": ["status", "rate_limited", "primary_rate_limit", "secondary_rate_limit", "delay_ms", "error_body"] }
                    }
                ]
            },
            "times": { "type": "integer", "minimum": 0 }
        },
        "required": ["path", "fault"],
        "additionalProperties": false
    })
}

fn names(description: &str, names: Vec<String>) -> Schema {
    json_schema!({
        "description": description,
        "type": "string",
        "enum": names
    })
}

pub fn gate_name(_: &mut SchemaGenerator) -> Schema {
    names("A gate (sdd_loop::rules::gates)", super::names::gates())
}

pub fn stop_cause(_: &mut SchemaGenerator) -> Schema {
    names(
        "A stop cause (sdd_loop::rules::stop), or `none` for a run that did not stop",
        super::names::stop_causes(),
    )
}

pub fn crash_point(_: &mut SchemaGenerator) -> Schema {
    names(
        "A crash point (`sdd-loop crash-points`)",
        super::names::crash_points(),
    )
}

pub fn covers(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "SPEC-0020 requirement titles (verbatim) and ADR-0028 confirmations (`confirmation 4`) the case proves",
        "type": "array",
        "items": { "type": "string", "enum": crate::loading::requirements::names() },
        "uniqueItems": true
    })
}

pub fn model_turns(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "The scripted model's turns this tick's real CLI gets, in mock-model's turn format (fixtures/model/README.md); real-CLI drivers only",
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "text": { "type": "string" },
                "calls": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "minProperties": 1,
                        "maxProperties": 1,
                        "propertyNames": { "enum": ["bash", "tool"] }
                    }
                },
                "usage": {
                    "type": "object",
                    "properties": {
                        "input": { "type": "integer", "minimum": 0 },
                        "output": { "type": "integer", "minimum": 0 },
                        "cache_read": { "type": "integer", "minimum": 0 },
                        "cache_creation": { "type": "integer", "minimum": 0 },
                        "reasoning": { "type": "integer", "minimum": 0 }
                    },
                    "additionalProperties": false
                },
                "model": { "type": "string" },
                "expect": {
                    "type": "object",
                    "properties": {
                        "last_tool_result_contains": { "type": "string" },
                        "system_contains": { "type": "string" },
                        "user_contains": { "type": "string" }
                    },
                    "additionalProperties": false
                },
                "faults": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "fault": { "type": "string", "enum": ["rate_limited", "server_error", "overloaded", "cut"] },
                            "times": { "type": "integer", "minimum": 1 },
                            "retry_after": { "type": "integer", "minimum": 0 },
                            "after_events": { "type": "integer", "minimum": 0 }
                        },
                        "required": ["fault"],
                        "additionalProperties": false
                    }
                }
            },
            "additionalProperties": false
        }
    })
}
