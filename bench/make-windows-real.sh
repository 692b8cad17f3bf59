#!/usr/bin/env bash
# Builds the real Windows benchmark input: DuckDB as an x86_64 DLL with a CodeView PDB.
# DuckDB's C++ sources (about 830,000 lines with the libraries it vendors: RE2, zstd,
# mbedTLS, brotli, Thrift, Parquet, the Postgres parser) come from the libduckdb-sys
# crate, which ships them as duckdb.tar.gz with a manifest of its translation units.
# They are compiled as that crate's build compiles them (its default extensions:
# core_functions, json, parquet), by clang for the MinGW-w64 target with -O2 and
# -gcodeview, and linked by lld into duckdb.dll and duckdb.pdb.
#
#   bench/make-windows-real.sh DIR      # writes DIR/duckdb.dll and DIR/duckdb.pdb
#
# Needs: cargo (to fetch the crate from crates.io), clang, lld, llvm (llvm-objcopy),
# g++-mingw-w64-x86-64-posix (MinGW-w64's headers and libstdc++). Takes about 60
# minutes on 2 cores (`JOBS` sets the parallelism; default: every core).
#
# Why MinGW and not the MSVC target: no MSVC headers or STL can be installed here, and
# MinGW-w64's libstdc++ compiles DuckDB unchanged. The PDB is the same format lld
# writes for clang-cl (the same CodeView emitter); its names are Itanium-mangled
# publics and qualified CodeView names. The MinGW start-up objects carry DWARF, which
# is stripped from the image so that every reader (dumpsyms, Mozilla's dump_syms,
# llvm-symbolizer) reads the PDB.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
jobs=${JOBS:-$(nproc)}
version=1.10506.1 # DuckDB 1.5.6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The crate, through cargo: crates.io is reachable where its download host may not be.
mkdir -p "$work/fetch/src"
cat >"$work/fetch/Cargo.toml" <<EOF
[package]
name = "fetch-duckdb"
version = "0.0.0"
edition = "2021"
[dependencies]
libduckdb-sys = "=$version"
EOF
echo 'fn main() {}' >"$work/fetch/src/main.rs"
(cd "$work/fetch" && cargo fetch --quiet)
crate=$(cd "$work/fetch" && cargo metadata --format-version 1 --quiet |
    python3 -c 'import json, sys
m = json.load(sys.stdin)
print(next(p["manifest_path"] for p in m["packages"] if p["name"] == "libduckdb-sys"))')
# A fixed directory, so that the paths recorded in the PDB do not change between builds.
src=/tmp/dumpsyms-bench-duckdb
rm -rf "$src" && mkdir -p "$src"
tar -xzf "$(dirname "$crate")/duckdb.tar.gz" -C "$src"

gcc=$(ls -d /usr/lib/gcc/x86_64-w64-mingw32/*-posix | sort -V | tail -1)
# The include path spelled out: clang's MinGW driver does not recognise Debian's
# `12-posix` GCC directory and falls back to this machine's /usr/include, where
# `__has_include(<endian.h>)` (yyjson) then finds glibc's headers.
cxx=(clang++ --target=x86_64-w64-mingw32 -nostdinc -nostdinc++
    -isystem "$gcc/include/c++" -isystem "$gcc/include/c++/x86_64-w64-mingw32"
    -isystem "$gcc/include/c++/backward" -isystem "$(clang -print-resource-dir)/include"
    -isystem /usr/x86_64-w64-mingw32/include)
cd "$src"
# One line per translation unit: the file, then its include directories and defines.
python3 - >"$work/units" <<'PY'
import json
m = json.load(open("duckdb/manifest.json"))
exts = sorted(m["extensions"])
incs = set(m["base"]["include_dirs"])
files = set(m["base"]["cpp_files"])
for e in exts:
    incs |= set(m["extensions"][e]["include_dirs"])
    files |= set(m["extensions"][e]["cpp_files"])
flags = ["-Iduckdb"] + [f"-Iduckdb/{d}" for d in sorted(incs)]
flags += [f"-DDUCKDB_EXTENSION_{e.upper()}_LINKED=1" for e in exts]
flags += ["-DDUCKDB_EXTENSION_AUTOINSTALL_DEFAULT=1", "-DDUCKDB_EXTENSION_AUTOLOAD_DEFAULT=1",
          "-DNDEBUG", "-DDUCKDB_BUILD_LIBRARY"]
for i, f in enumerate(sorted(files)):
    print(f, f"{i}.o", " ".join(flags))
PY
mkdir -p obj
compile() { # <file> <object> <flags...>
    local file=$1 obj=$2
    shift 2
    "${cxx[@]}" -std=c++11 -O2 -g -gcodeview -femulated-tls -w "$@" -c "$file" -o "obj/$obj"
}
export -f compile
export cxx_line="${cxx[*]}"
start=$(date +%s)
# shellcheck disable=SC2016
xargs -P "$jobs" -L 1 bash -c 'cxx=($cxx_line); compile "$@"' _ <"$work/units"
"${cxx[@]}" -shared -fuse-ld=lld -L"$gcc" -Wl,--pdb="$out/duckdb.pdb" -Wl,--no-insert-timestamp \
    -o "$work/duckdb.dll" obj/*.o -lws2_32 -lrstrtmgr -lstdc++ -lpthread
llvm-objcopy --strip-debug "$work/duckdb.dll" "$out/duckdb.dll"
echo "built in $(( $(date +%s) - start )) s on $jobs jobs:" \
    "$(du -m "$out/duckdb.dll" | cut -f1) MB image, $(du -m "$out/duckdb.pdb" | cut -f1) MB PDB" >&2

# The oracle, scored by tests/it/windows.rs's ignored `real_pdb_matches_llvm_symbolizer`
# (bench/run.sh pdb-check).
bash "$(dirname "$0")/windows-real-oracle.sh" "$out"
