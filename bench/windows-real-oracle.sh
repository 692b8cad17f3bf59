#!/usr/bin/env bash
# The oracle for the real PDB of bench/make-windows-real.sh: llvm-symbolizer from
# LLVM 19 (LLVM 14 reads inline-site line annotations one line late) at 20,000
# addresses of .text drawn with a fixed seed, written as DIR/oracle.tsv in
# fixtures/windows/make.sh's .tsv format. Names are read undemangled and demangled by
# GNU c++filt, as every other oracle of ours is: LLVM's demangler spells lambdas,
# function-pointer arguments and decltype otherwise than GNU's (and ours).
#
#   bench/windows-real-oracle.sh DIR     # DIR holds duckdb.dll and duckdb.pdb
set -euo pipefail
out=$1
symbolizer=$(command -v llvm-symbolizer-19 || echo /usr/lib/llvm-19/bin/llvm-symbolizer)
python3 - "$out/duckdb.dll" "$symbolizer" >"$out/oracle.tsv.tmp" <<'PY'
import json, random, subprocess, sys
image, symbolizer = sys.argv[1], sys.argv[2]
base, text = None, None
for line in subprocess.run(["llvm-objdump", "-h", image], capture_output=True,
                           text=True, check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) >= 4 and parts[1] == ".text":
        text = (int(parts[3], 16), int(parts[2], 16))
for line in subprocess.run(["llvm-readobj", "--file-headers", image], capture_output=True,
                           text=True, check=True).stdout.splitlines():
    if line.strip().startswith("ImageBase:"):
        base = int(line.split()[1], 16)
start, size = text
rng = random.Random(1)
addrs = sorted(rng.sample(range(start, start + size), 20000))
out = subprocess.run([symbolizer, "--obj=" + image, "--inlines", "--no-demangle",
                      "--output-style=JSON"],
                     input="\n".join(hex(a) for a in addrs), capture_output=True, text=True,
                     check=True).stdout
rows = []
for a, line in zip(addrs, out.splitlines()):
    frames = json.loads(line)["Symbol"]
    if not frames or not frames[0]["FunctionName"] or frames[0]["Line"] == 0:
        continue
    rows.append((a, frames))
names = sorted({f["FunctionName"] for _, frames in rows for f in frames})
filt = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                      check=True).stdout.splitlines()
assert len(filt) == len(names), "c++filt gave a line count other than its input's"
demangled = dict(zip(names, filt))
for a, frames in rows:
    row = [format(a - base, "x"), str(len(frames))]
    for f in frames:
        row += [demangled[f["FunctionName"]], f["FileName"], str(f["Line"])]
    print("\t".join(row))
PY
mv "$out/oracle.tsv.tmp" "$out/oracle.tsv"
echo "oracle: $(wc -l <"$out/oracle.tsv") addresses" >&2
