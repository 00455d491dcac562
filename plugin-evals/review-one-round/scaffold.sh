#!/usr/bin/env bash
# Open PR #142 (closes #141): alice asked for a rename in a review
# comment, the responder (an agent login in CLAUDE.md) answered it, so a
# merge would follow human feedback.
backlog=pr-with-human-feedback
branches=(feature/141-login)
watch="reviews=pulls/142/reviews"
. "$(dirname "$0")/../world.sh"
world_start
