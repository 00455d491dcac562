#!/usr/bin/env bash
# Two ready issues (#1, #2), no PR yet, a fresh loop.
backlog=two-ready-stories
branches=()
. "$(dirname "$0")/../world.sh"
world_start
