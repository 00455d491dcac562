# The world of a plugin-eval case, built by its scaffold with the project's
# own binaries. Sourced by each case's `scaffold.sh`, which `claude plugin
# eval --scaffold` runs with `bash` in the run's working directory, with
# only PATH, HOME and TMPDIR of the operator's environment (measured,
# plugin-evals/README.md). The case's scaffold sets `backlog` (a name under
# fixtures/backlogs/), `branches` (the head branches of its pull requests),
# optionally `claude_md` (a name under fixtures/claude-md/; default
# agent-logins, which names the backlogs' agent logins) and `watch` (more
# tracker endpoints for the graders, `NAME=PATH ...`), then calls
# `world_start`, then any `world_*` step that leaves state behind (a tick,
# a live lock, a crash).
#
# What it builds, as the harness does for its own cases:
#   $HOME/origin.git      the bare origin (the model pushes here)
#   .  (the work dir)     a clone of it: README.md, CLAUDE.md and a
#                         .gitignore of .sdd/ on main, one commit per
#                         pull request's branch, and an empty .sdd/loop/
#                         (so the plugin's hooks act in this project)
#   mock-tracker          serving the backlog on 127.0.0.1, its head SHAs
#                         read from the origin; stopped when the process
#                         that ran the scaffold (the eval) exits
#   $HOME/.sdd-eval/world.env
#                         the tracker's address, repository and token: read
#                         by the `sdd-loop` and `gh` stand-ins
#                         (plugin-evals/bin/sdd-loop) that ci/plugin-evals
#                         puts first on PATH (Claude Code passes no SDD_*
#                         variable to a run)
#   .sdd-eval/tracker/*.json
#                         the tracker's state as the graders read it,
#                         rewritten after every `sdd-loop` and `gh` call
#                         (plugin-evals/bin/sdd-loop says why)
#
# Nothing is left running: every background process here ends when the
# eval process does (`tail --pid`, which looks every 0.2 s), or with the
# tracker.

set -euo pipefail

suite=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(dirname "$suite")
work=$(pwd)
state="$HOME/.sdd-eval"
# A token as random as a real one: the engine redacts its value from
# everything it writes, so it must not occur in a path.
token="tok_$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
# The process that ran this scaffold: the eval. Everything started here
# lives as long as it does.
owner=$PPID

world_fail() {
  echo "error: $1" >&2
  echo "help: $2" >&2
  exit 1
}

# The stand-ins ci/plugin-evals put first on PATH, and the binaries in
# their real/.
world_bins() {
  stand_in=$(command -v sdd-loop || true)
  [ -n "$stand_in" ] && [ -x "$(dirname "$stand_in")/real/mock-tracker" ] ||
    world_fail "the plugin-evals stand-ins are not on PATH (found: ${stand_in:-no sdd-loop})" \
      "run the suite with ci/plugin-evals, which builds the binaries and puts them on PATH"
  stand_ins=$(cd "$(dirname "$stand_in")" && pwd)
  real="$stand_ins/real"
}

# Git with the fixture identity and a pinned clock, as the harness's world.
world_git() {
  GIT_AUTHOR_NAME="SDD Fixture" GIT_AUTHOR_EMAIL=fixture@sdd.invalid \
    GIT_COMMITTER_NAME="SDD Fixture" GIT_COMMITTER_EMAIL=fixture@sdd.invalid \
    GIT_AUTHOR_DATE=2026-05-09T14:00:00Z GIT_COMMITTER_DATE=2026-05-09T14:00:00Z \
    git "$@"
}

world_start() {
  : "${backlog:?set backlog=NAME in the scaffold.sh of the case (fixtures/backlogs/NAME.yaml)}"
  local file="$repo_root/fixtures/backlogs/$backlog.yaml"
  [ -f "$file" ] || world_fail "no backlog $file" "name one of fixtures/backlogs/*.yaml in the case's scaffold.sh"
  world_bins
  mkdir -p "$state" .sdd-eval/tracker

  local origin="$HOME/origin.git" branch
  world_git init --quiet --bare --initial-branch main "$origin"
  world_git init --quiet --initial-branch main .
  printf '# acme/app\n' >README.md
  printf '.sdd/\n' >.gitignore
  printf '.sdd-eval/\n' >>.git/info/exclude
  cp "$repo_root/fixtures/claude-md/${claude_md:-agent-logins}.md" CLAUDE.md
  world_git add README.md .gitignore CLAUDE.md
  world_git commit --quiet -m "Initial commit"
  world_git remote add origin "$origin"
  world_git push --quiet origin main
  for branch in "${branches[@]}"; do
    world_git checkout --quiet -B "$branch" main
    mkdir -p .fixture
    printf '%s\n' "$branch" >".fixture/${branch//\//-}.log"
    world_git add .fixture
    world_git commit --quiet -m "Work on $branch"
    world_git push --quiet origin "HEAD:refs/heads/$branch"
  done
  world_git checkout --quiet main
  world_git fetch --quiet origin
  # The model's own commits need an identity; the run's HOME has none.
  git config user.name "SDD Agent"
  git config user.email agent@sdd.invalid
  mkdir -p -m 0700 .sdd .sdd/loop

  # The tracker stops when its stdin closes: when `tail` sees the eval
  # exit. Its URL comes through a FIFO; `cat` keeps reading it so the
  # tracker never writes to a closed pipe, and ends with it.
  mkfifo "$state/tracker.out"
  tail --pid="$owner" -s 0.2 -f /dev/null 2>/dev/null |
    "$real/mock-tracker" --backlog "$file" --token "$token" --origin "$origin" \
      >"$state/tracker.out" 2>"$state/tracker.err" &
  local url
  exec 4<"$state/tracker.out"
  read -r url <&4 || world_fail "mock-tracker did not start: $(cat "$state/tracker.err")" \
    "run it by hand: mock-tracker --backlog $file"
  cat <&4 >/dev/null 2>&1 &
  exec 4<&-

  cat >"$state/world.env" <<ENV
SDD_LOOP_TRACKER_URL=$url
SDD_LOOP_REPO=acme/app
SDD_LOOP_TRACKER_TOKEN=$token
SDD_EVAL_TRACKER_STATE=$work/.sdd-eval/tracker
SDD_EVAL_WATCH="pulls=pulls?state=all ${watch:-}"
ENV
  world_snapshot
}

# The tracker's state into .sdd-eval/tracker/ now (the stand-ins do it
# after every call).
world_snapshot() {
  "$stand_ins/sdd-loop" --sdd-eval-snapshot
}

# One whole tick run by the engine before the case starts, with a wrapped
# skill that opens a PR for each selected issue (bin/tick-skill):
# `world_tick STATUS SKILL FLAGS...` fails the scaffold unless the tick
# exits STATUS (134 for one aborted at SDD_LOOP_CRASH_AT). The caller's
# environment passes through (SDD_LOOP_CRASH_AT=after-skill world_tick …).
world_tick() {
  local want=$1 skill=$2 status=0
  shift 2
  SDD_LOOP_SKILL_CMD="$suite/bin/tick-skill" "$stand_ins/sdd-loop" "$skill" --loop "$@" \
    >>"$state/ticks.log" 2>&1 || status=$?
  [ "$status" = "$want" ] ||
    world_fail "the scaffold's tick ($skill --loop $*) exited $status, not $want: $(tail -n 5 "$state/ticks.log")" \
      "run the scaffold by hand to see the whole log ($state/ticks.log)"
}

# A live lock: another session's `begin` holding the lock. The holder is
# a process that lives as long as the eval (the `tail` below).
world_live_lock() {
  local skill=$1
  shift
  tail --pid="$owner" -s 0.2 -f /dev/null >/dev/null 2>&1 &
  local holder=$!
  "$stand_ins/sdd-loop" "$skill" begin --loop --json --holder-pid "$holder" "$@" \
    >>"$state/ticks.log" 2>&1
}
