#!/usr/bin/env bash
# Plays the agent of an in-session loop, with no harness: three ticks of
# `/loop /sdd:work --loop` against mock-tracker, each `sdd-loop work begin`
# → the work (open a PR on the tracker) → `sdd-loop work end`, answering
# the ambiguous-criteria gate by exit-and-rerun on the second. Then runs
# the same scenario as wrapper ticks (`sdd-loop work --loop` with
# ci/examples/work-skill.sh as the skill) and checks that both runs leave
# the same history and budget.json, byte for byte: the clock is frozen at
# the same instants (SDD_LOOP_NOW), and neither file records a pid.
#
# Usage: ci/in-session-agent.sh   (from anywhere; builds the binaries first)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# SDD_CI_BUILT=1: ci/check built target/debug/ already.
if [ "${SDD_CI_BUILT:-}" != 1 ]; then cargo build --quiet --locked --workspace --bins; fi
bin="$repo/target/debug"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/sdd-in-session.XXXXXX")
trap 'rm -rf "$scratch"; kill $(jobs -p) 2>/dev/null || true' EXIT
backlog="$repo/fixtures/backlogs/three-stories-one-ambiguous.yaml"
instants=(2026-05-09T14:00:00Z 2026-05-09T14:10:00Z 2026-05-09T14:20:00Z)
export SDD_LOOP_REPO=acme/app SDD_LOOP_TRACKER_TOKEN=ci-token

# A fresh mock tracker in $1/: serves until its stdin (fd 3 here) closes.
start_tracker() {
  local dir=$1
  mkfifo "$dir/tracker.in" "$dir/tracker.out"
  "$bin/mock-tracker" --backlog "$backlog" --token "$SDD_LOOP_TRACKER_TOKEN" \
    <"$dir/tracker.in" >"$dir/tracker.out" 2>"$dir/tracker.err" &
  exec 3>"$dir/tracker.in" 4<"$dir/tracker.out"
  read -r SDD_LOOP_TRACKER_URL <&4
  export SDD_LOOP_TRACKER_URL
}
stop_tracker() { exec 3>&- 4<&-; wait; }

# One field of begin's --json line: a string's text, or a number.
field() {
  local quoted
  quoted=$(sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" <<<"$2")
  if [ -n "$quoted" ]; then echo "$quoted"; else sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" <<<"$2"; fi
}

# ----------------------------------------------------------- in session
mkdir -p "$scratch/session/work" && cd "$scratch/session/work"
start_tracker "$scratch/session"
for tick in 0 1 2; do
  export SDD_LOOP_NOW=${instants[$tick]}
  answers=()
  while :; do
    set +e
    began=$("$bin/sdd-loop" work begin --loop --max-agents 1 --holder-pid $$ --json "${answers[@]}" \
      2>>"$scratch/session/reports.txt")
    code=$?
    set -e
    [ "$code" -eq 4 ] || break
    # The user, asked by the agent (AskUserQuestion): proceed.
    gate=$(field gate "$began")
    echo "tick $((tick + 1)): begin asks $gate: $(field question "$began") → proceed"
    answers+=(--answer "$gate=proceed")
  done
  [ "$code" -eq 0 ] || { echo "begin exited $code: $began" >&2; exit 1; }
  iteration=$(field iteration "$began")
  request=$(field request_file "$began")
  opened=()
  for n in $(sed -n 's/^ *"number": \([0-9][0-9]*\),*$/\1/p' "$request"); do
    reply=$(curl -sS --fail -X POST -H "Authorization: Bearer $SDD_LOOP_TRACKER_TOKEN" \
      -d "{\"title\":\"Implement #$n\",\"head\":\"feature/$n\",\"base\":\"main\",\"body\":\"Closes #$n\"}" \
      "$SDD_LOOP_TRACKER_URL/repos/$SDD_LOOP_REPO/pulls")
    opened+=(--opened "$(grep -o '"number":[0-9]*' <<<"$reply" | head -n 1 | cut -d: -f2)")
  done
  "$bin/sdd-loop" work end --iteration "$iteration" --holder-pid $$ "${opened[@]}" \
    --usage claude-sonnet-4-7:1200:300 --agents 1 --summary "Implemented the selected issue." \
    >"$scratch/session/end-$iteration.txt"
  echo "tick $((tick + 1)): iteration $iteration began, did its work (${opened[*]}), ended"
done
stop_tracker

# -------------------------------------------------------------- wrapper
mkdir -p "$scratch/wrapper/work" && cd "$scratch/wrapper/work"
start_tracker "$scratch/wrapper"
export SDD_LOOP_SKILL_CMD="$repo/ci/examples/work-skill.sh"
for tick in 0 1 2; do
  export SDD_LOOP_NOW=${instants[$tick]}
  set +e
  "$bin/sdd-loop" work --loop --max-agents 1 >/dev/null 2>&1
  code=$?
  if [ "$code" -eq 4 ]; then
    "$bin/sdd-loop" work --loop --max-agents 1 --answer ambiguous-criteria=proceed >/dev/null 2>&1
    code=$?
  fi
  set -e
  [ "$code" -eq 0 ] || { echo "wrapper tick $((tick + 1)) exited $code" >&2; exit 1; }
done
stop_tracker

# The runs did what the scenario says before they are compared.
history="$scratch/session/work/.sdd/loop/work.history.jsonl"
[ "$(grep -c '"outcome":"ok"' "$history")" -eq 3 ] || { echo "error: want 3 ok ticks" >&2; exit 1; }
grep -q '"name":"ambiguous-criteria".*"answer":"proceed"' "$history" ||
  { echo "error: the gate answer is not recorded" >&2; exit 1; }
grep -q '"prs_touched":\["#4","#5","#6"\]' "$history" ||
  { echo "error: want PRs #4, #5, #6 touched" >&2; exit 1; }

status=0
for f in work.history.jsonl work.budget.json; do
  if cmp -s "$scratch/session/work/.sdd/loop/$f" "$scratch/wrapper/work/.sdd/loop/$f"; then
    echo "same $f in both runs ($(wc -l <"$scratch/session/work/.sdd/loop/$f") lines)"
  else
    echo "error: $f differs between the in-session and the wrapper run:" >&2
    diff "$scratch/session/work/.sdd/loop/$f" "$scratch/wrapper/work/.sdd/loop/$f" >&2 || true
    status=1
  fi
done
exit $status
