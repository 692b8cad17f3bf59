#!/usr/bin/env bash
# Benchmark on real inputs: dumpsyms against Mozilla's dump_syms (and Google Breakpad's,
# when BREAKPAD_DUMP_SYMS points at one), with and without --inlines.
#
#   bench/run.sh fetch        # download and unpack the inputs, install the peers (root, network)
#   bench/run.sh [RUNS]       # measure; RUNS paired runs per row (default 3), median reported
#   BASELINE_DUMPSYMS=OLD bench/run.sh [RUNS]
#                             # also measure another build of dumpsyms, in the same turns
#                             # (before/after a change, paired)
#   bench/run.sh pdb-check    # the real PDB's symbols against llvm-symbolizer (see duckdb)
#   ONLY=ceph-osd,libjvm bench/run.sh [RUNS]
#                             # only the inputs named
#
# Inputs (under $BENCH_DIR, default target/bench):
#   fixture   fixtures/bin/x86_64/cpp-gcc-O2-dwarf5              (a small C++ program)
#   libc      this machine's libc.so.6 with libc6-dbg's debug file (found by build ID)
#   mozilla   Mozilla's dump_syms, debug build (`cargo install --debug dump_syms`)
#   ceph-osd  Debian's ceph-osd with ceph-osd-dbg (zlib-compressed separate debug file)
#   libjvm    openjdk 17's libjvm.so with openjdk-17-dbg (from bench/tree.sh's tree)
#   vmlinux   Debian's linux-image-6.1.0-*-amd64-dbg vmlinux (uncompressed DWARF)
#   windows   a synthetic x86_64 PE with its PDB (bench/make-windows-input.sh); both
#             tools are given the image and find the PDB beside it. The DWARF MB
#             column has the PDB's size.
#   windows-huge  the windows input's PDB written past 4 GiB (4.7 GB: its modules 530
#             times over, in 8 KiB pages; bench/make-windows-huge.py), beside big.exe;
#             both tools are given the PDB and find the image beside it.
#             Not made by `fetch`: `bench/run.sh huge` makes it (about 2 minutes).
#   duckdb    DuckDB built as an x86_64 DLL with a CodeView PDB by clang and lld
#             (bench/make-windows-real.sh, about an hour); given as `windows`.
#             `bench/run.sh pdb-check` scores its symbols against llvm-symbolizer.
# dumpsyms is given the binary and finds its debug file (and reads .eh_frame from the
# binary: more work and more output than the peers, which are given the debug file).
#
# Printed per input and flags: wall, user+sys CPU and peak RSS (GNU time's %M) of each
# tool, as the median of RUNS runs taken in turns (ours, then each peer), the size of
# the symbol file it wrote, and our ratios to Mozilla's. Not run by CI: the inputs are ~1.5 GB to download.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${BENCH_DIR:-$root/target/bench}
mkdir -p "$work"

fetch() {
    cd "$work"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq time libc6-dbg binutils >/dev/null
    # An input the mirror no longer serves (ceph-osd-dbg answered 404 on 2026-11-27) is
    # named at the end; the others are still fetched, and measuring skips its rows.
    local missing=()
    if [ ! -e ceph/usr/lib/debug/.build-id ]; then # the debug file, not only ceph-osd
        if apt-get download ceph-osd ceph-osd-dbg; then
            mkdir -p ceph
            for deb in ceph-osd_*.deb ceph-osd-dbg_*.deb; do dpkg-deb -x "$deb" ceph; done
        else
            missing+=(ceph-osd)
        fi
        rm -f ceph-osd_*.deb ceph-osd-dbg_*.deb
    fi
    if ! ls kernel/usr/lib/debug/boot/vmlinux-6.1.0-* >/dev/null 2>&1; then
        local pkg
        pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64-dbg$' |
            awk '{print $1}' | sort -V | tail -1)
        if apt-get download "$pkg"; then
            mkdir -p kernel
            # Only vmlinux: the package also holds every module's debug file (5 GB).
            dpkg-deb --fsys-tarfile "$pkg"_*.deb | tar -x -C kernel --wildcards '*/vmlinux-*'
        else
            missing+=(vmlinux)
        fi
        rm -f "$pkg"_*.deb
    fi
    [ -e tree/.complete ] || bash "$root/bench/tree.sh" fetch || missing+=(tree)
    [ -e windows/big.pdb ] || bash "$root/bench/make-windows-input.sh" "$work/windows"
    [ -e windows-real/oracle.tsv ] ||
        bash "$root/bench/make-windows-real.sh" "$work/windows-real"
    [ -x moz/bin/dump_syms ] || cargo install --locked dump_syms --root "$work/moz"
    [ -x moz-debug/bin/dump_syms ] ||
        cargo install --debug --locked dump_syms --root "$work/moz-debug"
    if [ ${#missing[@]} -gt 0 ]; then
        echo "run.sh: not fetched: ${missing[*]} (see above)" >&2
        return 1
    fi
}

if [ "${1:-}" = fetch ]; then
    fetch
    exit 0
fi
# The PDB past 4 GiB (bench/make-windows-huge.py), from the windows input.
if [ "${1:-}" = huge ]; then
    [ -e "$work/windows/big.pdb" ] || bash "$root/bench/make-windows-input.sh" "$work/windows"
    mkdir -p "$work/windows-huge"
    cp "$work/windows/big.exe" "$work/windows-huge/big.exe"
    python3 "$root/bench/make-windows-huge.py" "$work/windows/big.pdb" "$work/windows-huge/big.pdb"
    exit 0
fi
# The real PDB's symbols against llvm-symbolizer's (bench/make-windows-real.sh).
if [ "${1:-}" = pdb-check ]; then
    cd "$root"
    DUMPSYMS_REAL_PDB=$work/windows-real exec cargo test --release --locked --test windows \
        -- --ignored real_pdb_matches_llvm_symbolizer --nocapture
fi
runs=${1:-3}

cd "$root"
cargo build --release --locked --quiet
ours=$root/target/release/dumpsyms
moz=${MOZ_DUMP_SYMS:-$work/moz/bin/dump_syms}
breakpad=${BREAKPAD_DUMP_SYMS:-}
baseline=${BASELINE_DUMPSYMS:-}
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)" >&2; exit 1; }
[ -x "$moz" ] || { echo "Mozilla's dump_syms is not installed: run bench/run.sh fetch" >&2; moz=; }

# name | what dumpsyms is given | the file holding the DWARF (given to the peers) | where
# dumpsyms looks for debug files besides /usr/lib/debug
inputs=()
add() {
    [ -z "${ONLY:-}" ] || [[ ",$ONLY," == *",$1,"* ]] || return 0
    [ -e "$2" ] && [ -e "$3" ] && inputs+=("$1|$2|$3|${4:-}") || echo "(skipped $1: $2 missing)" >&2
}
libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
libc_id=$(readelf -n "$libc" | awk '/Build ID/ {print $3}')
add fixture fixtures/bin/x86_64/cpp-gcc-O2-dwarf5 fixtures/bin/x86_64/cpp-gcc-O2-dwarf5
add libc "$libc" "/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug"
add mozilla "$work/moz-debug/bin/dump_syms" "$work/moz-debug/bin/dump_syms"
ceph_id=$(readelf -n "$work/ceph/usr/bin/ceph-osd" 2>/dev/null | awk '/Build ID/ {print $3}')
add ceph-osd "$work/ceph/usr/bin/ceph-osd" \
    "$work/ceph/usr/lib/debug/.build-id/${ceph_id:0:2}/${ceph_id:2}.debug" "$work/ceph/usr/lib/debug"
jvm=$work/tree/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so
jvm_id=$(readelf -n "$jvm" 2>/dev/null | awk '/Build ID/ {print $3}')
add libjvm "$jvm" "$work/tree/usr/lib/debug/.build-id/${jvm_id:0:2}/${jvm_id:2}.debug" \
    "$work/tree/usr/lib/debug"
# A missing kernel is no error: the inputs not fetched are left out.
vmlinux=$(ls "$work"/kernel/usr/lib/debug/boot/vmlinux-6.1.0-* 2>/dev/null | head -1 || true)
add vmlinux "${vmlinux:-/missing}" "${vmlinux:-/missing}"
add windows "$work/windows/big.exe" "$work/windows/big.exe"
# Given as the PDB: big.exe's CodeView record names windows/big.pdb, which would be read.
add windows-huge "$work/windows-huge/big.pdb" "$work/windows-huge/big.pdb"
add duckdb "$work/windows-real/duckdb.dll" "$work/windows-real/duckdb.dll"

# The DWARF a dump reads, in MB as inflated (compressed sections by their header's size).
dwarf_mb() {
    if [ "${1##*.}" = pdb ]; then
        echo $(( $(stat -c %s "$1") / 1000000 ))
        return
    fi
    if [ "$(head -c2 "$1")" = MZ ]; then
        echo $(( $(stat -c %s "${1%.*}.pdb") / 1000000 ))
        return
    fi
    python3 - "$1" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
shoff, = struct.unpack_from('<Q', d, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3a)
secs = [struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * shentsize) for i in range(shnum)]
strtab = secs[shstrndx]
total = 0
for name, typ, flags, addr, off, size, *_ in secs:
    n = d[strtab[4] + name:].split(b'\0', 1)[0]
    if not n.startswith((b'.debug_', b'.zdebug_')) or typ == 8:
        continue
    if flags & 0x800:  # SHF_COMPRESSED: Elf64_Chdr's ch_size
        size, = struct.unpack_from('<Q', d, off + 8)
    elif n.startswith(b'.zdebug_'):
        size, = struct.unpack_from('>Q', d, off + 4)
    total += size
print(f"{total / 1e6:.0f}")
EOF
}

# Runs a command once; prints "wall cpu rss_mib sym_mb" (the size of what it wrote).
sym=$(mktemp)
trap 'rm -f "$sym"' EXIT
measure() {
    local out
    out=$(/usr/bin/time -f "%e %U %S %M" "$@" 2>&1 >"$sym" | tail -1)
    awk -v o="$out" -v s="$(stat -c %s "$sym")" 'BEGIN { split(o, f, " ")
        printf "%.2f %.2f %.0f %.1f\n", f[1], f[2] + f[3], f[4] / 1024, s / 1e6 }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '| input | DWARF MB | flags | tool | wall s | CPU s | peak RSS MiB | .sym MB | wall vs Mozilla | CPU vs Mozilla | RSS vs Mozilla | .sym vs Mozilla |\n'
printf '| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n'
for entry in "${inputs[@]}"; do
    IFS='|' read -r name binary debug dirs <<<"$entry"
    ours_args=()
    [ -n "$dirs" ] && ours_args=(--debug-dir "$dirs")
    mb=$(dwarf_mb "$debug")
    for flags in "" "--inlines"; do
        tools=(ours)
        [ -n "$baseline" ] && tools+=(base)
        [ -n "$moz" ] && tools+=(moz)
        declare -A w=() c=() m=() z=()
        for r in $(seq "$runs"); do
            for t in "${tools[@]}"; do
                case $t in
                ours) read -r a b d e < <(measure "$ours" $flags "${ours_args[@]}" "$binary") ;;
                base) read -r a b d e < <(measure "$baseline" $flags "${ours_args[@]}" "$binary") ;;
                moz) read -r a b d e < <(measure "$moz" $flags "$debug") ;;
                esac
                w[$t]+="$a "; c[$t]+="$b "; m[$t]+="$d "; z[$t]=$e
            done
        done
        for t in "${tools[@]}"; do
            W=$(tr ' ' '\n' <<<"${w[$t]}" | grep . | median)
            C=$(tr ' ' '\n' <<<"${c[$t]}" | grep . | median)
            M=$(tr ' ' '\n' <<<"${m[$t]}" | grep . | median)
            Z=${z[$t]}
            eval "W_$t=$W C_$t=$C M_$t=$M Z_$t=$Z"
            label=dumpsyms
            [ "$t" = moz ] && label="Mozilla dump_syms"
            [ "$t" = base ] && label="dumpsyms (baseline)"
            printf '| %s | %s | %s | %s | %s | %s | %s | %s |' "$name" "$mb" "${flags:-default}" "$label" "$W" "$C" "$M" "$Z"
            if [ "$t" = moz ]; then
                awk -v w="$W_ours" -v W="$W" -v c="$C_ours" -v C="$C" -v m="$M_ours" -v M="$M" \
                    -v z="$Z_ours" -v Z="$Z" 'BEGIN {
                    ratio = "%.2f |"
                    if (W > 0) printf " " ratio, w / W; else printf " – |"
                    if (C > 0) printf " " ratio, c / C; else printf " – |"
                    printf " " ratio, m / M
                    if (Z > 0) printf " " ratio "\n", z / Z; else printf " – |\n" }'
            else
                printf '  |  |  |  |\n'
            fi
        done
        # Breakpad takes minutes on the large inputs: one run, default flags only.
        if [ -n "$breakpad" ] && [ -z "$flags" ]; then
            read -r a b d e < <(measure timeout 900 "$breakpad" "$debug" || echo "timeout - - -")
            printf '| %s | %s | %s | Breakpad dump_syms | %s | %s | %s | %s |  |  |  |  |\n' "$name" "$mb" default "$a" "$b" "$d" "$e"
        fi
        unset w c m z
    done
done
echo
echo "$(date -u +%Y-%m-%d), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), median of $runs paired runs"
