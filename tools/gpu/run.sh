#!/usr/bin/env bash
# Issue 19: everything the GPU machine runs, in one prepared script (one device call).
#
#   On the device machine (OUT is set by the device tool; .whl carried):
#       bash tools/gpu/run.sh
#   Dry run here, on the CPU (passes, with every GPU step skipped and its reason printed):
#       OUT=$(mktemp -d) bash tools/gpu/run.sh
#
# Steps, each under its own time cap so that one slow step cannot eat the others'
# device time (caps in seconds, overridable): install what travels (T_*: none);
# versions and the GPU; pytest on the GPU backends (T_TESTS); the many-small-systems
# bench at 1e3-1e6 systems (T_BENCH_Q4); the unrolled solver against the native
# batched solve at 1e6 systems, the card's bandwidth and the GPU/CPU crossover batch
# (T_UNROLLED); `xlinalg bench` of the documents' other cases (T_BENCH); the reports.
# The whole script also keeps to T_TOTAL (seconds from its start): a step gets at
# most what is left of it, less a margin, and a step with too little left is skipped
# and says so, so the device call (timeout_s=540) never cuts the script off mid-write.
# The caps add up to 470 s. Everything lands in $OUT (at most 8 files come back from
# the device machine: logs, two results files, two report archives, the unrolled JSON).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$(mktemp -d)}
PY=${PYTHON:-python3}
T_TESTS=${T_TESTS:-100}
T_BENCH_Q4=${T_BENCH_Q4:-80}
T_UNROLLED=${T_UNROLLED:-140}
T_BENCH=${T_BENCH:-100}
T_REPORT=${T_REPORT:-25}
T_TOTAL=${T_TOTAL:-500}
START=$SECONDS
export PYTHONUNBUFFERED=1 JAX_ENABLE_X64=1
LOG=$OUT/log.txt
: >"$LOG"
say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
step() {  # step CAP NAME CMD...: run under a time cap, log, never stop the script
    local cap=$1 name=$2; shift 2
    local left=$((T_TOTAL - (SECONDS - START) - 15))  # 15 s: the kill-after and the listing
    if [ "$left" -lt 20 ]; then
        say "$name: skipped, ${left}s left of T_TOTAL=${T_TOTAL}s"
        return 0
    fi
    [ "$cap" -gt "$left" ] && cap=$left
    say "$name (cap ${cap}s): $*"
    timeout --signal=INT --kill-after=10 "$cap" "$@" >>"$LOG" 2>&1
    local rc=$?
    say "$name: exit $rc$([ $rc -eq 124 ] && echo ' (time cap reached)')"
    return 0
}

# 1. What travels: wheels of the packages the image lacks (tools/gpu/wheels.sh makes
#    them), and this project's source on PYTHONPATH (no build step needed there).
if compgen -G ".whl/*.whl" >/dev/null; then
    say "installing $(ls .whl/*.whl | wc -l) carried wheels into /tmp/site"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl >>"$LOG" 2>&1 || say "wheel install failed (see log)"
    export PYTHONPATH=$PWD/src:/tmp/site
else
    say "no .whl folder: using the installed packages"
    export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
fi

# 2. Versions and the GPU.
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1 \
    || echo "nvidia-smi: not found (no NVIDIA GPU here)"; } | tee -a "$LOG"
"$PY" -m xlinalg info 2>&1 | tee -a "$LOG"
GPUS=$("$PY" - <<'PY'
from xlinalg import backends
print(",".join(b for b in backends.BACKEND_NAMES
               if backends.get_backend(b).gpu and backends.get_backend(b).unavailable_reason() is None))
PY
)
CPUS=$("$PY" - <<'PY'
from xlinalg import backends
print(",".join(b for b in ("numpy", "torch-cpu") if backends.get_backend(b).unavailable_reason() is None))
PY
)
say "GPU backends available: ${GPUS:-none}; CPU backends beside them: ${CPUS:-none}"

# 3. The tests of the GPU backends (test ids carry the backend id; -ra prints every
#    skip with its reason, so a GPU backend that did not run says why).
#    Where no GPU backend is available (a dry run), a session in which none ran passes
#    (XLINALG_ALLOW_NO_BACKEND); on a GPU machine it fails, as it should.
step "$T_TESTS" "pytest (GPU backends)" env XLINALG_ALLOW_NO_BACKEND="$([ -z "$GPUS" ] && echo 1 || echo 0)" \
    "$PY" -m pytest -p no:cacheprovider -q -ra -k "cuda or cupy or gpu" tests

# 4. The benchmark: the many-small-systems cases at 1e3, 1e5 and 1e6 systems, then
#    the documents' other cases (Q1 loop, Q3 sweep, Q4 loop, A1-A13) at the quick
#    scale. Case names are read from --list-cases so renamed cases still match.
if [ -n "$GPUS" ]; then
    BACKENDS="$GPUS,$CPUS"
    CASES=$("$PY" -m xlinalg bench --list-cases 2>/dev/null | awk '/^[a-z]/{print $1}' \
        | grep -E '^(q1_|q3_|q4_loop|a([1-9]|1[0-3])_)' | paste -sd, -)
    step "$T_BENCH_Q4" "bench Q4 at 1e3/1e5/1e6 systems" "$PY" -m xlinalg bench --no-progress \
        --backends "$BACKENDS" --cases q4_batched,q4_unrolled --sizes 1000x5,100000x5,1000000x5 \
        --time-limit 60 --overwrite --no-report --out "$OUT/gpu-q4.jsonl"
    # The unrolled solver on the GPU: 1e6 systems (target >= 5x native), GB/s against
    # the measured bandwidth, and the batch size from which the GPU beats the CPU
    # (it saves its JSON after every row: a cut leaves what it measured).
    step "$T_UNROLLED" "unrolled --gpu" "$PY" benchmarks/unrolled.py --gpu --out "$OUT/unrolled-gpu.json"
    step "$T_BENCH" "bench the documents' cases" "$PY" -m xlinalg bench --no-progress --quick \
        --backends "$BACKENDS" --cases "q4_solve_many,$CASES" --time-limit 30 --overwrite \
        --no-report --out "$OUT/gpu-cases.jsonl"
else
    say "bench: no GPU backend here; a dry run of the plumbing on numpy instead"
    step 60 "bench (dry run, numpy)" "$PY" -m xlinalg bench --no-progress --quick \
        --backends numpy --cases q4_batched --time-limit 30 --overwrite --no-report --out "$OUT/gpu-q4.jsonl"
    step "$T_UNROLLED" "unrolled --gpu (dry run: no GPU backend, each says why)" \
        "$PY" benchmarks/unrolled.py --gpu --out "$OUT/unrolled-gpu.json"
fi
for f in "$OUT"/gpu-*.jsonl; do
    [ -s "$f" ] || continue
    name=$(basename "$f" .jsonl)
    step "$T_REPORT" "report $name" "$PY" -m xlinalg report "$f" --out "/tmp/$name-report"
    [ -d "/tmp/$name-report" ] && tar -C /tmp -czf "$OUT/$name-report.tar.gz" "$name-report"
done


say "done; files in $OUT:"
ls -la "$OUT" | tee -a "$LOG"
