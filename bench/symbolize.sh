#!/usr/bin/env bash
# `dumpsyms symbolize` on a real store entry: ceph-osd's symbol file (with inlined
# calls, ~160 MB), and 1,000,000 addresses spread over its functions.
#
#   bench/symbolize.sh [RUNS]      # after `bench/run.sh fetch`; RUNS runs each (default 3)
#
# Printed, as the median of RUNS: the time and peak memory to load the entry (a report of
# one address), the same for 1,000,000 addresses (text and --json), lookups per second
# (the extra addresses over the extra time), and what reading the same file costs
# rust-minidump's breakpad-symbols, a stack walker's reader (examples/parse_sym.rs),
# and our reader alone: loading an entry must cost no more than parsing it once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${BENCH_DIR:-$root/target/bench}
runs=${1:-3}
ceph=$work/ceph/usr/bin/ceph-osd
[ -e "$ceph" ] || { echo "no $ceph: run bench/run.sh fetch first" >&2; exit 1; }
cd "$root"
cargo build --release --quiet
cargo build --release --quiet --example parse_sym
bin=$root/target/release/dumpsyms
parse=$root/target/release/examples/parse_sym
store=$work/symbolize/store
reports=$work/symbolize
mkdir -p "$store"
if ! ls "$store"/ceph-osd/*/ceph-osd.sym >/dev/null 2>&1; then
    "$bin" -q --inlines --no-debuginfod --store "$store" "$ceph" --debug-dir "$work/ceph/usr/lib/debug"
fi
sym=$(ls "$store"/ceph-osd/*/ceph-osd.sym)
# Addresses drawn (seeded, so the same every run) from inside the FUNC records, as
# crash addresses land: each line `ceph-osd+0xOFFSET`.
if [ ! -s "$reports/1m.txt" ]; then
    python3 - "$sym" "$reports" <<'PY'
import random, sys
sym, out = sys.argv[1], sys.argv[2]
funcs = []
with open(sym, "rb") as f:
    for line in f:
        if line.startswith(b"FUNC "):
            p = line.split(b" ")
            if p[1] == b"m":
                p = p[1:]
            funcs.append((int(p[1], 16), max(int(p[2], 16), 1)))
rng = random.Random(23)
with open(f"{out}/1m.txt", "w") as f:
    for _ in range(1_000_000):
        a, n = funcs[rng.randrange(len(funcs))]
        f.write(f"ceph-osd+{a + rng.randrange(n):#x}\n")
with open(f"{out}/1.txt", "w") as f:
    a, n = funcs[0]
    f.write(f"ceph-osd+{a:#x}\n")
PY
fi
echo "store entry: $sym ($(($(stat -c %s "$sym") / 1000000)) MB)"

# Median wall seconds and peak RSS (MiB) of RUNS runs of a command.
measure() {
    local t=() m=() i out
    for ((i = 0; i < runs; i++)); do
        /usr/bin/time -o "$reports/time" -f '%e %M' "$@" >/dev/null 2>&1
        out=$(tail -1 "$reports/time")
        t+=("${out% *}")
        m+=("${out#* }")
    done
    printf '%s %s\n' "$(printf '%s\n' "${t[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")" \
        "$(($(printf '%s\n' "${m[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p") / 1024))"
}
read -r load_s load_m < <(measure "$bin" symbolize --no-debuginfod --store "$store" "$reports/1.txt")
read -r all_s all_m < <(measure "$bin" symbolize --no-debuginfod --store "$store" "$reports/1m.txt")
read -r json_s json_m < <(measure "$bin" symbolize --no-debuginfod --json --store "$store" "$reports/1m.txt")
read -r ours_s ours_m < <(measure "$parse" ours "$sym")
read -r bs_s bs_m < <(measure "$parse" breakpad-symbols "$sym")
printf '%-44s %8s %9s\n' "" "wall s" "peak MiB"
printf '%-44s %8s %9s\n' "load the entry (1 address)" "$load_s" "$load_m"
printf '%-44s %8s %9s\n' "1,000,000 addresses, text" "$all_s" "$all_m"
printf '%-44s %8s %9s\n' "1,000,000 addresses, --json" "$json_s" "$json_m"
printf '%-44s %8s %9s\n' "our reader alone (parse_sym ours)" "$ours_s" "$ours_m"
printf '%-44s %8s %9s\n' "breakpad-symbols parses it once" "$bs_s" "$bs_m"
python3 -c "import sys; d=float(sys.argv[2])-float(sys.argv[1]); print(f'lookups per second (text, after loading): {1e6/d:,.0f}' if d>0 else 'too fast to tell')" "$load_s" "$all_s"
