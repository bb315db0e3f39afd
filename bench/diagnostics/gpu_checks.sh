#!/usr/bin/env bash
# Every check the project has for a CUDA GPU, in one run (a lent GPU machine's time is short and each
# start costs minutes): the GPU tests, what a new input shape costs a CUDA session and whether padding to
# the max batch removes it, the demo CNN's variant space with its CUDA variants, and the pinned b1/b64
# SLO runs on CUDA and on the CPU. Each step has its own time limit and its own log; a failing step is
# reported and the next one runs. Prints what it saw; docs/benchmarks.md ("On a GPU") says how to read it.
#
#   PYTHON=.venv/bin/python OUT_DIR=var/bench/gpu bench/diagnostics/gpu_checks.sh
#
# Needs onnxruntime-gpu with the CUDA and cuDNN libraries it loads (`pip install -e '.[gpu]'`).
set -u
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then  # the comment above, without its #
    sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
    exit 0
fi
PY=${PYTHON:-.venv/bin/python}
OUT_DIR=${OUT_DIR:-var/bench/gpu}
mkdir -p "$OUT_DIR"
export ORT_DISABLE_TELEMETRY=${ORT_DISABLE_TELEMETRY:-1}
failed=()

step() {  # step NAME SECONDS COMMAND...: run it with a limit, tee its log, remember a failure
    local name=$1 limit=$2
    shift 2
    echo "=== $name ($(date -u +%H:%M:%S) UTC, limit ${limit} s)"
    local start=$SECONDS
    timeout --signal=INT --kill-after=10 "$limit" "$@" 2>&1 | tee "$OUT_DIR/$name.log"
    local rc=${PIPESTATUS[0]}
    echo "=== $name: rc $rc in $((SECONDS - start)) s"
    [ "$rc" -eq 0 ] || failed+=("$name (rc $rc)")
}

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
"$PY" -c 'import onnxruntime as o, sys; print("python", sys.version.split()[0], "onnxruntime", o.__version__)'

step gpu-tests 240 "$PY" -m pytest tests/gpu -q -p no:cacheprovider -rs
step first-shapes 180 "$PY" -m bench.diagnostics.cuda_first_shapes --repeats 3

# The whole suite on its embedded defaults, as `infaas run` starts it: one CUDA executor per GPU.
"$PY" -m infaas_cli.main run --no-demo >"$OUT_DIR/suite.log" 2>&1 &
suite=$!
trap 'kill -INT $suite 2>/dev/null; wait $suite 2>/dev/null' EXIT
for _ in $(seq 120); do
    "$PY" -c 'import httpx,sys; sys.exit(httpx.get("http://127.0.0.1:8080/v2/health/ready").status_code != 200)' \
        2>/dev/null && break
    sleep 1
done
step variants 300 "$PY" -m bench.diagnostics.variants --models digits-cnn --markdown --out "$OUT_DIR/variants.svg"
model=$(grep -o 'digits-cnn-bench-[0-9]*' "$OUT_DIR/variants.log" | head -1)
if [ -n "$model" ]; then
    for hw in cuda cpu; do
        step "slo-$hw" 200 "$PY" -m bench.diagnostics.overhead --model "$model" --slo-ms 20 --slo-hardware "$hw" \
            --slo-max-runs 5 --slo-duration 3 --slo-min-requests 300 --markdown
    done
else
    failed+=("slo (no registered model)")
fi
kill -INT $suite 2>/dev/null
wait $suite 2>/dev/null
trap - EXIT
echo "=== suite log tail"
tail -20 "$OUT_DIR/suite.log"
for log in var/logs/*.log; do  # a service that failed says why in its own log
    if grep -q -E 'Traceback|ERROR' "$log" 2>/dev/null; then
        echo "=== $log (last 40 lines)"
        tail -40 "$log"
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all GPU checks passed"
