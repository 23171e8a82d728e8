#!/usr/bin/env bash
# Runs the fuzz targets built in Fuzz/.build/release (see Fuzz/README.md):
#
#   Fuzz/run.sh SECONDS [TARGET...]      (default: every target)
#
# For each target: replays its regression inputs (Fuzz/regressions/<target>/), then fuzzes for
# SECONDS over a scratch copy of its seed corpus (Fuzz/.build/fuzz-run/<target>/corpus) and
# prints executions per second, corpus size before and after, and crashes. An input that crashes,
# hangs (more than FUZZ_TIMEOUT seconds) or runs out of memory is kept in Fuzz/findings/<target>/
# and makes the script exit with status 1.
set -uo pipefail
cd "$(dirname "$0")"

SECONDS_EACH=${1:?usage: Fuzz/run.sh SECONDS [TARGET...]}
shift
TIMEOUT=${FUZZ_TIMEOUT:-10}
BIN=.build/release
WORK=.build/fuzz-run
if [ $# -gt 0 ]; then TARGETS=("$@"); else mapfile -t TARGETS < <(cd Targets && ls -d fuzz-*); fi

# The Swift runtime's backtracer would wait on a crashing target; libFuzzer and AddressSanitizer
# report crashes themselves.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:handle_abort=1}

dictionary() {
    case "$1" in
        fuzz-xml|fuzz-tcx|fuzz-gpx|fuzz-applehealth) echo "-dict=dict/xml.dict" ;;
        fuzz-syncjson|fuzz-exec|fuzz-socket) echo "-dict=dict/json.dict" ;;
    esac
}

count() { find "$1" -type f 2>/dev/null | wc -l; }

failed=()
printf '%-14s %10s %10s %8s %8s %8s  %s\n' target runs exec/s corpus0 corpus1 crashes findings
for target in "${TARGETS[@]}"; do
    exe=$BIN/$target
    [ -x "$exe" ] || { echo "$exe is not built: run make fuzz-build" >&2; exit 2; }
    findings=findings/$target
    mkdir -p "$findings" "$WORK/$target"
    log=$WORK/$target/log

    # Every input that once crashed must run clean now.
    crashes=0
    if [ -n "$(ls -A "regressions/$target" 2>/dev/null)" ]; then
        if ! "$exe" -timeout="$TIMEOUT" -rss_limit_mb=2048 regressions/"$target"/* >"$log.regressions" 2>&1; then
            echo "$target: a regression input fails again, see Fuzz/$log.regressions" >&2
            crashes=1
        fi
    fi

    rm -rf "$WORK/$target/corpus"
    cp -r "corpus/$target" "$WORK/$target/corpus"
    before=$(count "$WORK/$target/corpus")
    # shellcheck disable=SC2046
    "$exe" "$WORK/$target/corpus" $(dictionary "$target") -max_total_time="$SECONDS_EACH" -timeout="$TIMEOUT" \
        -rss_limit_mb=2048 -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1
    status=$?
    after=$(count "$WORK/$target/corpus")
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    if [ "$status" -ne 0 ]; then crashes=$((crashes + 1)); fi
    printf '%-14s %10s %10s %8s %8s %8s  %s\n' "$target" "${runs:--}" "${rate:--}" "$before" "$after" "$crashes" \
        "$( [ "$status" -ne 0 ] && echo "Fuzz/$findings (log Fuzz/$log)")"
    [ "$crashes" -eq 0 ] || failed+=("$target")
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "crashes in: ${failed[*]}" >&2
    exit 1
fi
