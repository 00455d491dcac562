#!/usr/bin/env bash
# Two ready issues; one earlier tick of `--max-prs 1` opened PR #3 for
# issue #1, so the loop's PR budget is spent.
backlog=two-ready-stories
branches=()
. "$(dirname "$0")/../world.sh"
world_start
world_tick 0 work --max-prs 1
