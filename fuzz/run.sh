#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each, two at a time (the machine has two cores), after
# seeding the corpus from the test fixtures; prints each target's executions and findings.
#
#   fuzz/run.sh 600            # ten minutes per target
#   TARGETS="sse_anthropic markdown" fuzz/run.sh 60
#   FEATURES=sse TARGETS="sse_openai_chat sse_anthropic" fuzz/run.sh 60   # build less
#
# Only stable Rust is installed here, so RUSTC_BOOTSTRAP=1 lets it take the nightly-only
# flags cargo-fuzz passes (-Zsanitizer, sancov passes). SANITIZER defaults to `none`: the
# targets are safe Rust, and an AddressSanitizer build of the whole tree costs more time
# than two shared cores have; set SANITIZER=address to use it.
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_PER_TARGET=${1:?usage: fuzz/run.sh SECONDS}
SANITIZER=${SANITIZER:-none}
export RUSTC_BOOTSTRAP=1
TARGETS=${TARGETS:-$(cargo fuzz list)}
BUILD=(--sanitizer "$SANITIZER")
if [ -n "${FEATURES:-}" ]; then
    BUILD+=(--no-default-features --features "$FEATURES")
fi

python3 seed.py >/dev/null
cargo fuzz build "${BUILD[@]}" >&2
mkdir -p logs

run_one() {
    local target=$1
    mkdir -p "corpus/$target" "artifacts/$target"
    # -fork would hide the per-run stats; one process per target, one core each.
    cargo fuzz run "${BUILD[@]}" "$target" -- \
        -max_total_time="$SECONDS_PER_TARGET" -print_final_stats=1 -rss_limit_mb=1024 \
        >"logs/$target.log" 2>&1 || true
}

set -- $TARGETS
while [ $# -gt 0 ]; do
    run_one "$1" &
    first=$!
    second=
    if [ $# -gt 1 ]; then
        run_one "$2" &
        second=$!
    fi
    wait "$first"
    [ -n "$second" ] && wait "$second"
    shift $(( $# > 1 ? 2 : 1 ))
done

printf '%-18s %8s %14s %8s  %s\n' target seconds executions exec/s findings
for target in $TARGETS; do
    log=logs/$target.log
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    crashes=$(find "artifacts/$target" -type f | wc -l)
    printf '%-18s %8s %14s %8s  %s crash file(s) in artifacts/%s\n' \
        "$target" "$SECONDS_PER_TARGET" "$runs" "$rate" "$crashes" "$target"
done
