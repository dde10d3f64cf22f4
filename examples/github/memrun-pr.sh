#!/usr/bin/env bash
# memrun's pull-request loop, one step per subcommand (docs/ci.md). The GitHub workflow
# memrun-pr.yml calls these steps; a test runs them locally against two commits of a
# repository, with a fake provider, no GitHub needed.
#
#   memrun-pr.sh jobs      changed arm/judge/benchmark configs -> $OUT/jobs.txt (one run's overrides a line)
#   memrun-pr.sh plan      memrun plan of each job -> $OUT/plan.md (a sticky comment)
#   memrun-pr.sh run       each job at HEAD_SHA and its baseline at BASE_SHA -> $OUT/runs/{head,base}-<n>
#   memrun-pr.sh compare   memrun compare per job -> $OUT/comments/<n>.md (sticky comments), $OUT/summary.md,
#                          $OUT/exit_code (the worst job's) and $OUT/conclusion (success | neutral | failure)
#   memrun-pr.sh all       the four in order
#
# Environment: BASE_SHA, HEAD_SHA (required: the commits to diff); MEMRUN_PR_OUT (.memrun-pr);
# MEMRUN_PR_CONF (conf: your config folder, given to memrun as --config-dir); MEMRUN_PR_BENCHMARK
# (locomo: the benchmark changed arms and judges are run on); MEMRUN_PR_ARGS (overrides for every
# plan and run, e.g. "axis=accuracy judge=gpt41 cache_dir=.memrun-cache"; a job's own keys win);
# MEMRUN_PR_GATE (a gate name or file; default $MEMRUN_PR_CONF/gates/<benchmark>.yaml when present);
# MEMRUN_PR_COMPARE_ARGS (more compare flags); MEMRUN (the memrun command, default memrun).
# Exit codes of compare: 0 pass -> success, 2 unresolved -> neutral, 1 fail, 3 refused, 4 usage
# error -> failure. The steps themselves exit 0 unless the script is misused.
set -euo pipefail

: "${BASE_SHA:?set BASE_SHA to the pull request's base commit}"
: "${HEAD_SHA:?set HEAD_SHA to the pull request's head commit}"
OUT=${MEMRUN_PR_OUT:-.memrun-pr}
CONF=${MEMRUN_PR_CONF:-conf}
BENCHMARK=${MEMRUN_PR_BENCHMARK:-locomo}
read -r -a MEMRUN_CMD <<< "${MEMRUN:-memrun}"
read -r -a ARGS <<< "${MEMRUN_PR_ARGS:-}"
read -r -a COMPARE_ARGS <<< "${MEMRUN_PR_COMPARE_ARGS:-}"
mkdir -p "$OUT"

# The job's overrides, then MEMRUN_PR_ARGS except the keys the job sets itself.
overrides() {
  local job=$1 arg key
  read -r -a own <<< "$job"
  local keys=" "
  for arg in "${own[@]}"; do keys+="${arg%%=*} "; done
  for arg in "${ARGS[@]}"; do
    key=${arg%%=*}
    [[ $keys == *" $key "* ]] || printf '%s\n' "$arg"
  done
  [[ ${#own[@]} -eq 0 ]] || printf '%s\n' "${own[@]}"
}

jobs() {
  git diff --name-only --diff-filter=AMR "$BASE_SHA" "$HEAD_SHA" -- "$CONF" | while read -r path; do
    rel=${path#"$CONF"/}
    group=${rel%%/*}
    name=$(basename "$rel" .yaml)
    [[ $rel == */* && $path == *.yaml ]] || continue
    case $group in
      arm | judge) echo "benchmark=$BENCHMARK $group=$name" ;;
      benchmark) echo "benchmark=$name" ;;
    esac
  done | sort -u > "$OUT/jobs.txt"
  echo "memrun-pr: $(wc -l < "$OUT/jobs.txt") job(s) from the changed configs under $CONF/" >&2
  sed 's/^/  /' "$OUT/jobs.txt" >&2
}

plan() {
  local n=0 job
  echo "<!-- memrun-plan -->" > "$OUT/plan.md"
  while read -r job; do
    n=$((n + 1))
    mapfile -t run_args < <(overrides "$job")
    if ! "${MEMRUN_CMD[@]}" plan --config-dir "$PWD/$CONF" "${run_args[@]}" --format markdown \
        | sed '1s/^<!-- memrun-plan: .* -->$//' >> "$OUT/plan.md"; then
      printf '\n**memrun plan failed for `%s`** (see the job log)\n' "$job" >> "$OUT/plan.md"
    fi
  done < "$OUT/jobs.txt"
  [[ $n -gt 0 ]] || echo "No arm, judge or benchmark config changed." >> "$OUT/plan.md"
}

# The base commit's config folder, for the baseline runs.
base_conf() {
  rm -rf "$OUT/base" && mkdir -p "$OUT/base"
  git archive "$BASE_SHA" "$CONF" | tar -x -C "$OUT/base"
  echo "$(cd "$OUT/base/$CONF" && pwd)"
}

# A job's baseline: the same overrides, except that a config new at HEAD (no file at BASE) has
# no baseline of its own, so the baseline runs its group's default there.
baseline_job() {
  local arg out=()
  for arg in $1; do
    local file="$CONF/${arg%%=*}/${arg#*=}.yaml"
    if git cat-file -e "$HEAD_SHA:$file" 2>/dev/null && ! git cat-file -e "$BASE_SHA:$file" 2>/dev/null; then
      continue
    fi
    out+=("$arg")
  done
  echo "${out[*]:-}"
}

run() {
  local n=0 job conf
  conf=$(base_conf)
  mkdir -p "$OUT/runs"
  while read -r job; do
    n=$((n + 1))
    mapfile -t head_args < <(overrides "$job")
    mapfile -t base_args < <(overrides "$(baseline_job "$job")")
    rm -rf "$OUT/runs/head-$n" "$OUT/runs/base-$n"
    "${MEMRUN_CMD[@]}" --config-dir "$conf" "${base_args[@]}" progress=false "hydra.run.dir=$OUT/runs/base-$n" \
      || echo "memrun-pr: the baseline of job $n ($job) exited $?" >&2
    "${MEMRUN_CMD[@]}" --config-dir "$PWD/$CONF" "${head_args[@]}" progress=false "hydra.run.dir=$OUT/runs/head-$n" \
      || echo "memrun-pr: job $n ($job) exited $?" >&2
  done < "$OUT/jobs.txt"
}

severity() { case $1 in 0) echo 0 ;; 2) echo 1 ;; 1) echo 2 ;; 3) echo 3 ;; *) echo 4 ;; esac; }

compare() {
  local n=0 job code worst=0 gate=()
  rm -rf "$OUT/comments" && mkdir -p "$OUT/comments"
  : > "$OUT/summary.md"
  while read -r job; do
    n=$((n + 1))
    local bench=$BENCHMARK
    [[ $job =~ benchmark=([^ ]+) ]] && bench=${BASH_REMATCH[1]}
    gate=()
    if [[ -n ${MEMRUN_PR_GATE:-} ]]; then gate=(--gate "$MEMRUN_PR_GATE")
    elif [[ -f $CONF/gates/$bench.yaml ]]; then gate=(--gate "$CONF/gates/$bench.yaml"); fi
    # a changed judge is the treatment: the labels of the same answers under the two judges
    local judge=() marker_tail=""
    if [[ $job =~ judge=([^ ]+) ]]; then
      judge=(--treatment judge_model,judge_prompt_sha256)
      marker_tail=" judge=${BASH_REMATCH[1]}"
    fi
    set +e
    "${MEMRUN_CMD[@]}" compare "$OUT/runs/base-$n" "$OUT/runs/head-$n" --format markdown "${gate[@]}" \
      "${judge[@]}" "${COMPARE_ARGS[@]}" > "$OUT/comments/$n.md"
    code=$?
    set -e
    # one sticky comment per benchmark/arm, and per judge for judge changes (they share an arm)
    [[ -z $marker_tail ]] || sed -i "1s| -->\$|$marker_tail -->|" "$OUT/comments/$n.md"
    echo "memrun-pr: job $n ($job): compare exited $code" >&2
    { cat "$OUT/comments/$n.md"; echo; } >> "$OUT/summary.md"
    if [[ $(severity "$code") -gt $(severity "$worst") ]]; then worst=$code; fi
  done < "$OUT/jobs.txt"
  [[ $n -gt 0 ]] || echo "memrun: no arm, judge or benchmark config changed." >> "$OUT/summary.md"
  echo "$worst" > "$OUT/exit_code"
  case $worst in 0) echo success ;; 2) echo neutral ;; *) echo failure ;; esac > "$OUT/conclusion"
  if [[ -n ${GITHUB_STEP_SUMMARY:-} ]]; then cat "$OUT/summary.md" >> "$GITHUB_STEP_SUMMARY"; fi
  if [[ -n ${GITHUB_OUTPUT:-} ]]; then
    echo "exit_code=$worst" >> "$GITHUB_OUTPUT"
    echo "conclusion=$(cat "$OUT/conclusion")" >> "$GITHUB_OUTPUT"
  fi
  echo "memrun-pr: worst exit code $worst -> $(cat "$OUT/conclusion")" >&2
}

case ${1:-} in
  jobs | plan | run | compare) "$1" ;;
  all) jobs && plan && run && compare ;;
  *) echo "usage: memrun-pr.sh jobs|plan|run|compare|all (see the comments at the top)" >&2; exit 64 ;;
esac
