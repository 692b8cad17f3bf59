#!/usr/bin/env bash
# Benchmark: dump a large real binary with and without --inlines and report wall time and
# peak RSS (best of N runs), and the same for Mozilla's dump_syms when it is installed
# (`cargo install dump_syms`, or point MOZ_DUMP_SYMS at it).
#
#   bench/run.sh [BINARY] [RUNS]
#
# BINARY defaults to this project's own debug build (tens of MB of DWARF).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${2:-3}
cargo build --release --quiet
if [ -z "${1:-}" ]; then
    cargo build --quiet
    input=target/debug/dumpsyms
else
    input=$1
fi
ours=target/release/dumpsyms
moz=${MOZ_DUMP_SYMS:-$(command -v dump_syms || true)}
timer=/usr/bin/time
[ -x "$timer" ] || { echo "needs GNU time (apt-get install time)" >&2; exit 1; }

dwarf_bytes=0
while read -r size; do dwarf_bytes=$((dwarf_bytes + 16#$size)); done < <(
    readelf -SW "$input" | sed -n 's/.*\] \.debug_[a-z_]* *[A-Z_]* *[0-9a-f]* [0-9a-f]* \([0-9a-f]*\).*/\1/p')
dwarf_mb=$(awk "BEGIN { printf \"%.1f\", $dwarf_bytes / 1e6 }")
echo "input: $input ($(du -h "$input" | cut -f1), ${dwarf_mb} MB of DWARF), best of $runs runs, $(nproc) cores"
printf '%-40s %10s %12s %12s\n' "command" "wall (s)" "peak RSS MB" "output MB"

measure() { # label, command...
    local label=$1; shift
    local best_t="" best_m="" size=0
    for _ in $(seq "$runs"); do
        local out
        out=$("$timer" -f "%e %M" "$@" 2>&1 >/tmp/bench.sym | tail -1)
        local t=${out% *} m=${out#* }
        size=$(stat -c %s /tmp/bench.sym)
        if [ -z "$best_t" ] || awk "BEGIN { exit !($t < $best_t) }"; then best_t=$t; fi
        if [ -z "$best_m" ] || [ "$m" -lt "$best_m" ]; then best_m=$m; fi
    done
    printf '%-40s %10s %12.1f %12.1f\n' "$label" "$best_t" "$(awk "BEGIN { print $best_m / 1024 }")" \
        "$(awk "BEGIN { print $size / 1e6 }")"
}

measure "dumpsyms" "$ours" "$input"
measure "dumpsyms --inlines" "$ours" --inlines "$input"
measure "dumpsyms --jobs 1" "$ours" --jobs 1 "$input"
measure "dumpsyms -c (no CFI)" "$ours" -c "$input"
if [ -n "$moz" ]; then
    measure "mozilla dump_syms" "$moz" "$input"
    measure "mozilla dump_syms --inlines" "$moz" --inlines "$input"
else
    echo "(Mozilla dump_syms not installed: cargo install dump_syms)"
fi
