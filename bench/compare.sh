#!/usr/bin/env bash
# Do two builds of dumpsyms write the same bytes? For refactors that must not change
# output (issue 20): every input below is dumped by both builds with each flag set
# (none, --inlines, -c, -i, -m -a) at --jobs 1 and --jobs 2, and the symbol files, exit
# codes and warnings (-v) are compared; then each build fills a --store from the whole
# fixture tree and the two stores are compared file by file.
#
#   bench/compare.sh OLD_BINARY NEW_BINARY [INPUT...]
#
# Without INPUTs: every file under fixtures/ that either build dumps (ELF on twelve
# architectures, Mach-O and dSYMs, PE with PDBs beside them, MinGW, the crafted and
# hostile inputs), and the bench inputs under $BENCH_DIR (target/bench) that
# `bench/run.sh fetch` and `bench/tree.sh fetch` (libjvm) unpacked. A debug directory
# given to bench/run.sh is given here too. Prints one line per difference and a count;
# exits 1 on any difference in a symbol file or an exit code. A difference in warnings
# only is printed and counted apart (their wording may change; what they say may not
# be lost).
set -euo pipefail
# Nothing from the network: the same local files for both builds.
unset DEBUGINFOD_URLS _NT_SYMBOL_PATH
root=$(cd "$(dirname "$0")/.." && pwd)
old=$(realpath "$1")
new=$(realpath "$2")
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

inputs=()
if [ $# -gt 0 ]; then
    inputs=("$@")
else
    # Object files by their magic (ELF, Mach-O thin and universal, PE, PDB); the
    # oracle answers, sources and captures beside them are passed over.
    while IFS= read -r -d '' f; do
        case "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" in
        7f454c46 | cefaedfe | cffaedfe | feedface | feedfacf | cafebabe | 4d5a* | 4d696372) ;;
        *) continue ;;
        esac
        inputs+=("$f")
    done < <(find "$root/fixtures" -type f -size +0 -print0 | sort -z)
    bench=${BENCH_DIR:-$root/target/bench}
    for f in "$bench"/ceph/usr/bin/ceph-osd "$bench"/kernel/usr/lib/debug/boot/vmlinux-* \
        "$bench"/tree/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so \
        "$bench"/moz-debug/bin/dump_syms "$bench"/windows/big.exe; do
        [ -e "$f" ] && inputs+=("$f")
    done
fi

# Extra arguments a bench input needs (its debug directory).
extra_args() {
    case "$1" in
    */ceph/usr/bin/ceph-osd) echo "${1%/usr/bin/ceph-osd}/usr/lib/debug" ;;
    */tree/usr/lib/jvm/*/libjvm.so) echo "${1%/usr/lib/jvm/*}/usr/lib/debug" ;;
    esac
}

same=0
differ=0
warn_differ=0
for input in "${inputs[@]}"; do
    for flags in "" "--inlines" "-c" "-i" "-m -a"; do
        for jobs in 1 2; do
            for build in old new; do
                bin=$old
                [ $build = new ] && bin=$new
                status=0
                # shellcheck disable=SC2086,SC2046
                "$bin" -v --jobs "$jobs" $flags "$input" $(extra_args "$input") \
                    >"$work/$build.sym" 2>"$work/$build.err" || status=$?
                echo "$status" >"$work/$build.status"
                # The warnings name the binary's own path the same way in both builds.
                sed "s|$bin|BIN|g" "$work/$build.err" >"$work/$build.err.n"
            done
            what="${input#"$root"/} [${flags:-no flags}, --jobs $jobs]"
            if ! cmp -s "$work/old.status" "$work/new.status"; then
                echo "exit code differs: $what: $(cat "$work/old.status") -> $(cat "$work/new.status")"
                differ=$((differ + 1))
            elif ! cmp -s "$work/old.sym" "$work/new.sym"; then
                echo "symbol file differs: $what"
                differ=$((differ + 1))
            else
                same=$((same + 1))
                if ! cmp -s "$work/old.err.n" "$work/new.err.n"; then
                    echo "warnings differ: $what"
                    { diff "$work/old.err.n" "$work/new.err.n" || true; } | head -6 | sed 's/^/    /'
                    warn_differ=$((warn_differ + 1))
                fi
            fi
        done
    done
done

# The batch mode: the whole fixture tree into a store, by each build. On one thread:
# fixtures that are different files with the same name and id (crafted PEs with a zero
# id, say) share a place in the store, and with more threads which is written last
# depends on timing.
for build in old new; do
    bin=$old
    [ $build = new ] && bin=$new
    "$bin" -q --jobs 1 --store "$work/store-$build" "$root/fixtures" >/dev/null 2>&1 || true
done
if diff -r "$work/store-old" "$work/store-new" >"$work/store.diff"; then
    echo "store of fixtures/: $(find "$work/store-new" -type f | wc -l) symbol files, identical"
else
    echo "store of fixtures/ differs:"
    head -20 "$work/store.diff" | sed 's/^/    /'
    differ=$((differ + 1))
fi

echo "${#inputs[@]} inputs: $same runs identical, $differ differing, $warn_differ with other warnings"
[ "$differ" -eq 0 ]
