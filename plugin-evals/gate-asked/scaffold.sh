#!/usr/bin/env bash
# Issue #20 has no acceptance criteria, #21 has TBD ones: the
# ambiguous-criteria gate must ask.
backlog=ambiguous-criteria
branches=()
. "$(dirname "$0")/../world.sh"
world_start
