#!/usr/bin/env bash
# Two ready issues; the engine's tick for issue #1 crashed right after its
# skill opened PR #3 (SDD_LOOP_CRASH_AT=after-skill): the lock names a dead
# process, and nothing of iteration 1 is accounted yet.
backlog=two-ready-stories
branches=()
. "$(dirname "$0")/../world.sh"
world_start
SDD_LOOP_CRASH_AT=after-skill world_tick 134 work --max-agents 1
