#!/usr/bin/env bash
# Re-measure a committed full run with today's runner, across as many calls as it takes.
#
#   benchmarks/remeasure_full.sh [--dtype float32] [--hours H]
#
# Each call resumes benchmarks/results/cpu-full[-float32].MODEL.partial.jsonl (git
# ignores it; MODEL: this processor's model, as a slug) with `xlinalg bench --full
# --resume`, the committed run's command (docs/question.md, "Where these numbers come
# from"), and stops it cleanly with SIGTERM after H hours (default 2.5): every finished
# group is in the file, and the next call goes on from there. A stopped call also leaves
# the partial file compressed in benchmarks/results/in-progress/MODEL/ (the checkpoint),
# to be committed when a run takes more than one working session: a fresh clone on the
# same processor model resumes from it (or from the partial file, whichever holds more).
# A run resumes only on the processor it was measured on, so each model keeps its own
# checkpoints, and a session on either model goes on with its own pair.
#
# The report sets the float64 and float32 runs side by side, so they must come from one
# processor model (docs/benchmark.md, "One machine for a pair"): a finished run waits as
# its checkpoint, with a MODEL/NAME.finished mark, until its twin has finished on the
# same model; then both are compressed (xz -9) into cpu-full[-float32].jsonl.xz at once,
# and in-progress/ is removed (every model's: the committed pair is the newer one).
# Exit status: 0 finished (some cells may have failed: the committed runs have five
# cells past the time limit; the pair is in place, or this run waits for its twin: the
# last line says which), 75 stopped at the time limit (call again), anything else the
# bench's own (docs/benchmark.md, "Exit status").
#
# What it costs: about 2.5 h in float64 and 2.1 h in float32 on the 2-core machine
# (docs/benchmark.md, "What a full run costs"). The run goes in chunks of cases of
# about 20 minutes, one call each (full_run_cost.py --chunks), so that a stop loses
# at most the chunk under way; a chunk the time left cannot hold is not started.
#
# Environment: XLINALG, the command that runs xlinalg (default `python -m xlinalg`
# with the PYTHON on PATH); XL_COST, the cost estimate that cuts the chunks (default
# `python benchmarks/full_run_cost.py`); XL_RESULTS, the folder of the committed runs
# (default benchmarks/results beside this script); XL_CPU, the processor model
# (default: what `xlinalg info` records, xlinalg._machine.cpu_model()); XL_RESULTS_LIMIT,
# the bytes the committed results may hold in all (default 15 MiB, the limit of
# tests/bench/test_bench_compressed.py), over which a checkpoint's call warns.
set -euo pipefail

dtype=float64
hours=2.5
while [ $# -gt 0 ]; do
    case "$1" in
        --dtype) dtype="${2:?--dtype needs float64 or float32}"; shift 2 ;;
        --hours) hours="${2:?--hours needs a number}"; shift 2 ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
        *) echo "remeasure_full.sh: unknown argument '$1' (--dtype float32, --hours H)" >&2; exit 2 ;;
    esac
done
case "$dtype" in
    float64) name=cpu-full; twin=cpu-full-float32; twin_dtype=float32; dtype_args=() ;;
    float32) name=cpu-full-float32; twin=cpu-full; twin_dtype=float64; dtype_args=(--dtype float32) ;;
    *) echo "remeasure_full.sh: --dtype must be float64 or float32, got '$dtype'" >&2; exit 2 ;;
esac
if ! seconds=$(awk -v h="$hours" 'BEGIN { if (h + 0 > 0 && h + 0 < 1000) printf "%d", h * 3600; else exit 1 }'); then
    echo "remeasure_full.sh: --hours must be a positive number of hours, got '$hours'" >&2
    exit 2
fi

here="$(cd "$(dirname "$0")" && pwd)"
results="${XL_RESULTS:-$here/results}"
if ! cpu="${XL_CPU:-$(python -c 'from xlinalg._machine import cpu_model; print(cpu_model())')}"; then
    echo "remeasure_full.sh: could not read this processor's model (set XL_CPU)" >&2
    exit 2
fi
model=$(printf '%s' "$cpu" | tr 'A-Z' 'a-z' | tr -cs 'a-z0-9' '-' | sed 's/^-*//; s/-*$//')
if [ -z "$model" ]; then
    echo "remeasure_full.sh: the processor's model '$cpu' has no letter or digit (set XL_CPU)" >&2
    exit 2
fi
partial="$results/$name.$model.partial.jsonl"
held="$results/in-progress/$model"
checkpoint="$held/$name.partial.jsonl.xz"
final="$results/$name.jsonl.xz"
read -r -a xlinalg <<< "${XLINALG:-python -m xlinalg}"

if [ -f "$held/$name.finished" ]; then  # nothing to measure: its checkpoint stays as it is
    echo "remeasure_full.sh: $name is finished on this processor ($cpu) and waits for" \
         "$twin: run it with --dtype $twin_dtype" >&2
    exit 0
fi
if [ -f "$checkpoint" ]; then  # a run stopped in an earlier session (or clone)
    xz -dc "$checkpoint" > "$partial.ckpt"
    if [ "$(wc -c < "$partial.ckpt")" -gt "$(if [ -f "$partial" ]; then wc -c < "$partial"; else echo 0; fi)" ]; then
        mv "$partial.ckpt" "$partial"
        echo "remeasure_full.sh: resuming from the checkpoint $checkpoint" >&2
    else
        rm -f "$partial.ckpt"
    fi
fi
echo "remeasure_full.sh: $name ($dtype) on $cpu into $partial, for at most $hours h" >&2
deadline=$(( $(date +%s) + seconds ))
if [ -n "${XL_COST:-}" ]; then
    read -r -a cost <<< "$XL_COST"
else
    cost=(python "$here/full_run_cost.py")  # a path with spaces stays one word
fi

bench() {  # bench SECONDS [--cases LIST]: one resumed call, stopped after SECONDS
    timeout --signal=TERM --kill-after=300 "$1" "${xlinalg[@]}" bench --full "${dtype_args[@]}" \
        --backends numpy,torch-cpu,jax-cpu,dask,array-api-strict --time-limit 120 \
        --no-report --resume --out "$partial" "${@:2}" < /dev/null  # the chunk list is on stdin
}
stop() {  # stopped at the time limit: keep a checkpoint to commit, exit 75
    if [ -f "$partial" ]; then
        mkdir -p "$(dirname "$checkpoint")"
        xz -9 -c "$partial" > "$checkpoint.tmp"
        mv "$checkpoint.tmp" "$checkpoint"
        budget
    fi
    echo "remeasure_full.sh: stopped at the time limit; run it again to resume" \
         "(checkpoint: $checkpoint, commit it to resume in another clone)" >&2
    exit 75
}
budget() {  # warn when the checkpoints take the committed results over their limit
    local limit="${XL_RESULTS_LIMIT:-15728640}" total f
    total=$(find "$results" -type f ! -name '*.partial.jsonl' ! -name '*.tmp' ! -name '*.ckpt' \
        -printf '%s\n' | awk '{ s += $1 } END { printf "%d", s }')
    [ "$total" -gt "$limit" ] || return 0
    echo "remeasure_full.sh: warning: the committed results would hold $total bytes," \
         "$(( total - limit )) over the $limit allowed (tests/bench/test_bench_compressed.py);" \
         "before committing, remove (git rm) the checkpoint that holds the least measuring," \
         "e.g. another model's unfinished run (docs/benchmark.md, \"Room for the checkpoints\")." \
         "The checkpoints:" >&2
    for f in "$results"/in-progress/*/*.partial.jsonl.xz; do
        [ -f "$f" ] || continue
        echo "  ${f#"$results"/} $(wc -c < "$f") bytes$( [ -f "${f%.partial.jsonl.xz}.finished" ] \
            && echo ", finished")" >&2
    done
}
left() { echo $(( deadline - $(date +%s) )); }
call() {  # call [--cases LIST]: one bench call for the time left; stop or fail as it ends
    local rc secs
    secs=$(left)
    [ "$secs" -gt 0 ] || stop  # (timeout 0 would mean no limit at all)
    set +e
    bench "$secs" "$@"
    rc=$?
    set -e
    case $rc in
        0|1) ;;  # it finished (1: some cells failed or were wrong, all recorded)
        124|143) stop ;;  # timeout's 124, or the bench's own SIGTERM exit
        *) echo "remeasure_full.sh: xlinalg bench exited $rc; $partial is kept" >&2
           exit "$rc" ;;
    esac
}
todo() {  # what is left, as calls of about 20 minutes: "SECONDS CASES" per line
    "${cost[@]}" --full "$final" --chunks 20 --partial "$partial"
}

# One call per chunk of cases (benchmarks/full_run_cost.py --chunks): a call ends
# after every pass of its groups, so a stop loses at most the chunk under way (one
# call for the whole run would run every later pass after every first pass, and a
# stop would lose them all). A chunk that the time left cannot hold is not started.
chunked=1
if ! plan=$(todo); then
    echo "remeasure_full.sh: could not cut the run into chunks; one call for all of it" >&2
    chunked=0
    plan=""
fi
while read -r est cases; do
    [ -n "${cases:-}" ] || continue
    if [ "$(left)" -lt $(( est * 13 / 10 + 60 )) ]; then
        echo "remeasure_full.sh: $(left) s left, not enough for $cases (about $est s)" >&2
        stop
    fi
    echo "remeasure_full.sh: $cases (about $est s)" >&2
    call --cases "$cases"
done <<< "$plan"

# Finished when no chunk is left; else (no chunks, or cells no chunk held) the rest in one call.
if [ "$chunked" = 0 ] || [ -n "$(todo || echo failed)" ]; then
    call
fi
# Finished: kept as its checkpoint, marked, until its twin has finished on this model.
mkdir -p "$held"
xz -9 -c "$partial" > "$checkpoint.tmp"
mv "$checkpoint.tmp" "$checkpoint"
touch "$held/$name.finished"
rm -f "$partial"
budget
if [ ! -f "$held/$twin.finished" ]; then
    echo "remeasure_full.sh: $name finished on $cpu; it waits, as $checkpoint, for $twin" \
         "on the same processor model (the report sets the two side by side)" >&2
    exit 0
fi
for n in "$name" "$twin"; do  # the pair, each decompressed and checked before either moves
    xz -t "$held/$n.partial.jsonl.xz"
done
for n in "$name" "$twin"; do
    cp "$held/$n.partial.jsonl.xz" "$results/$n.jsonl.xz.tmp"
done
for n in "$name" "$twin"; do
    mv "$results/$n.jsonl.xz.tmp" "$results/$n.jsonl.xz"
done
rm -rf "$results/in-progress"
echo "remeasure_full.sh: finished; the pair $name and $twin, both measured on $cpu, is in" \
     "place. Next: the report (xlinalg report benchmarks/results/cpu-full.jsonl.xz" \
     "benchmarks/results/cpu-full-float32.jsonl.xz --out benchmarks/results/cpu-full-report)" \
     "and docs/question.md's figures" >&2
exit 0
