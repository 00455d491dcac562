#!/usr/bin/env bash
# Two ready issues; another session began iteration 1 and is still alive:
# it holds the lock.
backlog=two-ready-stories
branches=()
. "$(dirname "$0")/../world.sh"
world_start
world_live_lock work
