#!/bin/sh
# A wrapped /sdd:work skill in a few lines of shell: the protocol by
# example (docs/src/wrapped-skill.md).
#
# The engine runs it once per tick with three paths in the environment:
#   SDD_LOOP_REQUEST  the request: the issues to implement this tick
#   SDD_LOOP_EVENTS   progress events, appended as work happens (optional;
#                     what a killed tick's recovery reads)
#   SDD_LOOP_RESULT   the result, written before exiting
# It "implements" each issue by pushing a branch (in a clone with an
# origin) and opening a PR on the tracker (the engine passes on the tracker
# settings it resolved: SDD_LOOP_TRACKER_URL, SDD_LOOP_REPO and
# SDD_LOOP_TRACKER_TOKEN, a token lent by gh included), and reports the PRs
# and its usage.
# A real skill exits 78 (or prints `qmd-unreachable` on stderr) when qmd is
# down, and reports failures with their root causes.
set -eu

issues=$(sed -n 's/^ *"number": \([0-9][0-9]*\),*$/\1/p' "$SDD_LOOP_REQUEST")
prs=""
for n in $issues; do
  # The PR's branch: one commit on HEAD, pushed without touching the
  # working tree (a tracker refuses a PR whose branch it does not have).
  if git remote get-url origin >/dev/null 2>&1; then
    commit=$(GIT_AUTHOR_NAME="${GIT_AUTHOR_NAME:-work-skill}" GIT_AUTHOR_EMAIL="${GIT_AUTHOR_EMAIL:-work-skill@localhost}" \
      GIT_COMMITTER_NAME="${GIT_COMMITTER_NAME:-work-skill}" GIT_COMMITTER_EMAIL="${GIT_COMMITTER_EMAIL:-work-skill@localhost}" \
      git commit-tree "HEAD^{tree}" -p HEAD -m "Implement #$n")
    git push -q origin "$commit:refs/heads/feature/$n"
  fi
  reply=$(curl -sS --fail -X POST \
    -H "Authorization: Bearer $SDD_LOOP_TRACKER_TOKEN" \
    -d "{\"title\":\"Implement #$n\",\"head\":\"feature/$n\",\"base\":\"main\",\"body\":\"Closes #$n\"}" \
    "$SDD_LOOP_TRACKER_URL/repos/$SDD_LOOP_REPO/pulls")
  pr=$(printf '%s' "$reply" | grep -o '"number":[0-9]*' | head -n 1 | cut -d: -f2)
  sha=$(printf '%s' "$reply" | grep -o '"sha":"[0-9a-f]*"' | head -n 1 | cut -d'"' -f4)
  event="{\"number\":$pr,\"branch\":\"feature/$n\",\"head_sha_at_end\":\"$sha\",\"state\":\"open\",\"opened\":true}"
  # Reported as it happens: if the engine is killed now, this PR is not lost.
  printf '{"event":"pr","number":%s,"branch":"feature/%s","head_sha":"%s","state":"open","opened":true}\n' \
    "$pr" "$n" "$sha" >> "$SDD_LOOP_EVENTS"
  prs="${prs:+$prs,}$event"
  echo "opened PR #$pr for issue #$n" >&2
done

cat > "$SDD_LOOP_RESULT" <<JSON
{
  "protocol": 1,
  "prs": [$prs],
  "usage": [{"model": "claude-sonnet-4-7", "tokens_in": 1200, "tokens_out": 300}],
  "agents_dispatched": 1,
  "summary": "Implemented the selected issue."
}
JSON
