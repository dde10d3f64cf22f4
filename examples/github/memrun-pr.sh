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
# error -> failure. The steps themselves exit 0 unless the script is misused, or exit 65 when a
# changed config's name is refused (one line on stderr).
#
# Names from the diff are data, never code: each is checked against NAME_RE before it is used,
# and no value derived from a file name, a config or a dataset is given to a shell (eval, an
# unquoted expansion), sed or any other interpreter here.
set -euo pipefail

: "${BASE_SHA:?set BASE_SHA to the base commit of the pull request}"
: "${HEAD_SHA:?set HEAD_SHA to the head commit of the pull request}"
OUT=${MEMRUN_PR_OUT:-.memrun-pr}
CONF=${MEMRUN_PR_CONF:-conf}
BENCHMARK=${MEMRUN_PR_BENCHMARK:-locomo}
read -r -a MEMRUN_CMD <<< "${MEMRUN:-memrun}"
read -r -a ARGS <<< "${MEMRUN_PR_ARGS:-}"
read -r -a COMPARE_ARGS <<< "${MEMRUN_PR_COMPARE_ARGS:-}"
mkdir -p "$OUT"
# A config name memrun runs: letters, digits, _ and - (Hydra's group option, a sticky marker's tail).
NAME_RE='^[A-Za-z0-9_][A-Za-z0-9_-]*$'
# A line of jobs.txt: the only shapes jobs writes.
JOB_RE='^benchmark=[A-Za-z0-9_][A-Za-z0-9_-]*( (arm|judge)=[A-Za-z0-9_][A-Za-z0-9_-]*)?$'

refuse() {  # one line on stderr, exit 65; %q keeps a name with newlines or controls on one line
  printf 'memrun-pr: refused: %q %s\n' "$1" "$2" >&2
  exit 65
}

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

# The changed arm, judge and benchmark configs, one job a line. git diff -z: names as bytes,
# whatever they hold (newlines included); each is checked before it becomes an override.
jobs() {
  local path rel group name
  git diff -z --name-only --diff-filter=AMR "$BASE_SHA" "$HEAD_SHA" -- "$CONF" > "$OUT/changed"
  : > "$OUT/jobs.new"
  while IFS= read -r -d '' path; do
    rel=${path#"$CONF"/}
    group=${rel%%/*}
    case $group in arm | judge | benchmark) ;; *) continue ;; esac
    [[ $rel == */* && $path == *.yaml ]] || continue
    name=${rel#*/}
    name=${name%.yaml}
    if [[ $name == */* ]]; then  # a nested group's option (arm/embedder/x.yaml): used by configs, not a run
      [[ ${name//[A-Za-z0-9_\/-]/} == "" ]] || refuse "$path" "is not a config name memrun-pr accepts (letters, digits, _ and - only); rename the file"
      continue
    fi
    [[ $name =~ $NAME_RE ]] || refuse "$path" "is not a config name memrun-pr accepts (letters, digits, _ and - only); rename the file"
    case $group in
      arm | judge) printf 'benchmark=%s %s=%s\n' "$BENCHMARK" "$group" "$name" ;;
      benchmark) printf 'benchmark=%s\n' "$name" ;;
    esac >> "$OUT/jobs.new"
  done < "$OUT/changed"
  sort -u "$OUT/jobs.new" > "$OUT/jobs.txt"
  rm -f "$OUT/jobs.new" "$OUT/changed"
  echo "memrun-pr: $(wc -l < "$OUT/jobs.txt") job(s) from the changed configs under $CONF/" >&2
  sed 's/^/  /' "$OUT/jobs.txt" >&2
}

# Every line of jobs.txt checked again before a step uses it (a step may run on a file it did
# not write).
check_jobs() {
  local job
  while IFS= read -r job; do
    [[ $job =~ $JOB_RE ]] || refuse "$job" "in $OUT/jobs.txt is not a job memrun-pr writes; run memrun-pr.sh jobs"
  done < "$OUT/jobs.txt"
}

plan() {
  local n=0 job
  check_jobs
  echo "<!-- memrun-plan -->" > "$OUT/plan.md"
  while read -r job; do
    n=$((n + 1))
    mapfile -t run_args < <(overrides "$job")
    if ! "${MEMRUN_CMD[@]}" plan --config-dir "$PWD/$CONF" "${run_args[@]}" --format markdown \
        | sed '1s/^<!-- memrun-plan: .* -->$//' >> "$OUT/plan.md"; then
      printf '\n**memrun plan failed for %s** (see the job log)\n' "$job" >> "$OUT/plan.md"
    fi
  done < "$OUT/jobs.txt"
  [[ $n -gt 0 ]] || echo "No arm, judge or benchmark config changed." >> "$OUT/plan.md"
}

# The base commit's config folder, for the baseline runs: a worktree of the repository at
# BASE_SHA, so that the baseline's instrument records BASE_SHA as its configs' commit.
base_conf() {
  if [[ -e $OUT/base ]]; then git worktree remove --force "$OUT/base" 2>/dev/null || rm -rf "$OUT/base"; fi
  git worktree prune
  git worktree add --quiet --detach "$OUT/base" "$BASE_SHA" >&2
  (cd "$OUT/base/$CONF" && pwd)
}

# A job's baseline: the same overrides, except that a config new at HEAD (no file at BASE) has
# no baseline of its own, so the baseline runs its group's default there.
baseline_job() {
  local arg out=() args
  read -r -a args <<< "$1"
  for arg in "${args[@]}"; do
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
  check_jobs
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

# Add a tail to the marker on the first line of a comment file, as data: no sed program is
# built from it.
retail_marker() {
  local file=$1 tail=$2 first
  IFS= read -r first < "$file" || true
  [[ $first == *" -->" ]] || return 0
  { printf '%s%s -->\n' "${first% -->}" "$tail"; tail -n +2 "$file"; } > "$file.new"
  mv "$file.new" "$file"
}

severity() { case $1 in 0) echo 0 ;; 2) echo 1 ;; 1) echo 2 ;; 3) echo 3 ;; *) echo 4 ;; esac; }

compare() {
  local n=0 job code worst=0 gate=()
  check_jobs
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
      judge=(--treatment "judge_model,judge_prompt_sha256")
      marker_tail=" judge=${BASH_REMATCH[1]}"
    elif [[ $job =~ arm= ]]; then
      # a changed arm config is the treatment: its scoring, fusion, tie settings and depth may be what changed
      judge=(--treatment "lexical_scoring,fusion,ties,top_k")
    fi
    set +e
    "${MEMRUN_CMD[@]}" compare "$OUT/runs/base-$n" "$OUT/runs/head-$n" --format markdown --flips "${gate[@]}" \
      "${judge[@]}" "${COMPARE_ARGS[@]}" > "$OUT/comments/$n.md"
    code=$?
    set -e
    # one sticky comment per benchmark/arm, and per judge for judge changes (they share an arm)
    [[ -z $marker_tail ]] || retail_marker "$OUT/comments/$n.md" "$marker_tail"
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
