#!/usr/bin/env bash
# Seeds fuzz/corpus/<target> from the repository's fixtures (nothing is committed twice).
# Sections are cut out with llvm-objcopy (ELF and Mach-O) or GNU objcopy (ELF only).
set -euo pipefail
cd "$(dirname "$0")"
fixtures=../fixtures
# llvm-objcopy reads Mach-O too; GNU objcopy (binutils) is enough for the ELF seeds.
objcopy=$(command -v llvm-objcopy || command -v objcopy || true)
mkdir -p corpus/{dump,unwind_section,dwarf_expression,compact_unwind,link_sections,debug_info_stream,line_program,exidx,pe_unwind,pdb,msfz,demangle,demangle_swift,symbol_file,report,report_frames,report_maps,report_ips,cabinet,archive_zip,archive_tar,archive_deb,archive_rpm,archive_cpio,archive_squashfs,archive_apk}

tmp=$(mktemp)
out=$(mktemp)
trap 'rm -f "$tmp" "$out"' EXIT

# A section's bytes, or nothing.
section() {
    [ -n "$objcopy" ] || return 0
    rm -f "$tmp"
    "$objcopy" --dump-section "$2=$tmp" "$1" "$out" 2>/dev/null && cat "$tmp" || true
}

# Whole files: every fixture binary and regression input up to 256 KiB.
find "$fixtures/bin" "$fixtures/extra" "$fixtures/regress" "$fixtures/macho" "$fixtures/ehabi" "$fixtures/windows" -type f -size -256k |
    while read -r f; do
        case "$f" in *.sh | *.tsv | *.cfi | *.uuid | *.unwind | *.txt | *.py | *.readelf | *.llvm-readobj | *.dmp | *.nm | *.fpo | *.sym | *.cpp) continue ;; esac
        cp "$f" "corpus/dump/$(echo "${f#$fixtures/}" | tr / _)"
    done

# Unwind sections with the architecture byte the target expects (see fuzzing.rs).
for arch_dir in "$fixtures"/bin/*; do
    case "$(basename "$arch_dir")" in
        x86_64) pick=0 ;; i686) pick=2 ;; aarch64) pick=4 ;; ppc) pick=6 ;; ppc64 | ppc64le) pick=8 ;;
        arm) pick=10 ;; riscv64) pick=12 ;; mips*) pick=14 ;;
        *) continue ;;
    esac
    for f in "$arch_dir"/*; do
        name=$(basename "$arch_dir")-$(basename "$f")
        { printf "\\x$(printf %02x $pick)"; section "$f" .eh_frame; } > "corpus/unwind_section/$name-eh"
        { printf "\\x$(printf %02x $((pick + 1)))"; section "$f" .debug_frame; } > "corpus/unwind_section/$name-debug"
        section "$f" .debug_info > "corpus/debug_info_stream/$name"
    done
done
find corpus/unwind_section corpus/debug_info_stream -size -2c -delete

# Line programs: the byte the target expects (bit 0 big-endian, bit 1 32-bit, from the
# ELF header's class and data bytes), then .debug_line.
for f in "$fixtures"/bin/*/*; do
    [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = 177ELF ] || continue
    read -r class data < <(od -An -tu1 -j4 -N2 "$f") || continue
    pick=$(( (data == 2) | ((class == 1) << 1) ))
    { printf "\\x$(printf %02x $pick)"; section "$f" .debug_line; } \
        > "corpus/line_program/$(basename "$(dirname "$f")")-$(basename "$f")"
done
find corpus/line_program -size -2c -delete

# ARM EHABI tables: the length of .ARM.exidx (two bytes, little-endian), it, .ARM.extab.
for f in "$fixtures"/ehabi/*-gcc-* "$fixtures"/ehabi/*-clang-* "$fixtures"/bin/arm/*; do
    case "$(basename "$f")" in *.*) continue ;; esac
    section "$f" .ARM.exidx > "$out.exidx"
    n=$(stat -c %s "$out.exidx")
    [ "$n" -gt 0 ] && [ "$n" -lt 65536 ] || continue
    { printf "\\x$(printf %02x $((n & 255)))\\x$(printf %02x $((n >> 8)))"; cat "$out.exidx"; section "$f" .ARM.extab; } \
        > "corpus/exidx/$(basename "$(dirname "$f")")-$(basename "$f")"
    rm -f "$out.exidx"
done

# Compact unwind from the Mach-O fixtures.
for f in "$fixtures"/macho/mac-*-O[02]; do
    section "$f" __TEXT,__unwind_info > "corpus/compact_unwind/$(basename "$f")"
done
find corpus/compact_unwind -size 0 -delete

# Companion-file links.
section "$fixtures/extra/debuglink/c-gcc-O2-dwarf5" .gnu_debuglink > corpus/link_sections/debuglink
section "$fixtures/extra/dwz4/cpp-gcc-O2-dwarf4" .gnu_debugaltlink > corpus/link_sections/altlink
section "$fixtures/extra/dwz5/cpp-gcc-O2-dwarf5" .debug_sup > corpus/link_sections/sup
find corpus/link_sections -size 0 -delete

# Expressions real tables use: x86_64's PLT rule, a stack realignment, a register rule.
printf '\x00\x77\x08\x80\x00\x3f\x1a\x3b\x2a\x33\x24\x22' > corpus/dwarf_expression/plt
printf '\x01\x75\x00\x06' > corpus/dwarf_expression/deref
printf '\x02\x70\x10\x06\x23\x08' > corpus/dwarf_expression/arm64

# Windows unwind tables: a byte for the architecture and the .pdata length (in entries,
# up to 127), then .pdata and the section holding the unwind information, re-based at
# RVA 0x2000 the way the target reads it, cut out with Python (objcopy knows no RVAs).
for f in "$fixtures"/windows/*/app.exe "$fixtures"/windows/*/app.dll; do
    [ -f "$f" ] || continue
    python3 - "$f" "corpus/pe_unwind/$(basename "$(dirname "$f")")" <<'PY' || true
import struct, sys
data = open(sys.argv[1], "rb").read()
pe = struct.unpack_from("<I", data, 0x3C)[0]
machine, nsec = struct.unpack_from("<HH", data, pe + 4)
opt = struct.unpack_from("<H", data, pe + 20)[0]
sections = {}
for i in range(nsec):
    h = pe + 24 + opt + 40 * i
    name = data[h:h + 8].rstrip(b"\0").decode()
    vsize, rva, rsize, raw = struct.unpack_from("<IIII", data, h + 8)
    sections[name] = (rva, data[raw:raw + rsize])
if ".pdata" not in sections:
    sys.exit(0)
arm64 = machine == 0xAA64
size = 8 if arm64 else 12
pdata = sections[".pdata"][1]
count = min(len(pdata) // size, 127)
entries = bytearray()
unwind = sections.get(".xdata") or sections.get(".rdata")
if unwind is None:
    sys.exit(0)
shift = unwind[0] - 0x2000
for i in range(count):
    e = bytearray(pdata[i * size:(i + 1) * size])
    word_at = 4 if arm64 else 8
    word = struct.unpack_from("<I", e, word_at)[0]
    if not arm64 or word & 3 == 0:
        struct.pack_into("<I", e, word_at, (word - shift) & 0xFFFFFFFF)
    entries += e
open(sys.argv[2], "wb").write(bytes([count << 1 | arm64]) + bytes(entries) + unwind[1])
PY
done

# MSFZ PDBs made by Microsoft's pdbtool, less their 32-byte signature (the msfz target
# puts it back).
for f in "$fixtures"/windows/msfz/*/app.pdb; do
    tail -c +33 "$f" > "corpus/msfz/$(basename "$(dirname "$f")")"
done
# Whole PDBs, less their 32-byte magic (the pdb target puts it back).
for f in "$fixtures"/windows/*/*.pdb; do
    tail -c +33 "$f" > "corpus/pdb/$(basename "$(dirname "$f")")"
done

# Names for each demangler: a scheme-and-repeat byte, then prefix|fragment|suffix.
printf '\x00f@ns@@YAHH@Z||' > corpus/demangle/msvc
printf '\x05?f@@YAXV|?$A@V|H@@@Z' > corpus/demangle/msvc-templates
printf '\x01N3foo3barEi||' > corpus/demangle/itanium
printf '\x061fP|PK|i' > corpus/demangle/itanium-pointers
printf '\x02NvCs123_5crate3foo||' > corpus/demangle/rust-v0
printf '\x03N3std2io5stdio6_print17h0123456789abcdefE||' > corpus/demangle/rust-legacy

# Symbol files as a store holds them, and reports of each format symbolize reads.
find "$fixtures/golden" -name '*.sym' -size -256k -exec cp {} corpus/symbol_file/ \;
for f in "$fixtures"/symbolize/*/report.txt "$fixtures"/symbolize/ondevice/trace.json \
    "$fixtures"/symbolize/coredump/coredump.txt "$fixtures"/symbolize/stackwalk/stackwalk.txt \
    "$fixtures"/symbolize/field/*.txt; do
    seed="$(basename "$(dirname "$f")")-$(basename "$f")"
    cp "$f" "corpus/report/$seed"
    cp "$f" "corpus/report_frames/$seed"
done
# Module maps and absolute frames (every text fixture), and .ips bodies (the target
# puts the header line before them).
for f in "$fixtures"/symbolize/*/report.txt "$fixtures"/symbolize/*/crash.txt "$fixtures"/symbolize/field/*.txt; do
    cp "$f" "corpus/report_maps/$(basename "$(dirname "$f")")-$(basename "$f")"
done
for f in "$fixtures"/symbolize/apple/report.ips "$fixtures"/symbolize/field/ips.txt; do
    tail -n +2 "$f" > "corpus/report_ips/$(basename "$(dirname "$f")")-$(basename "$f")"
done
printf '%s\n' '*** *** ***' 'backtrace:' \
    '      #00 pc 000000000004c7d0  /system/lib64/libc.so (abort+164) (BuildId: 0a1b2c3d)' \
    '11-24 12:00:00.000  1234  1234 F DEBUG   :       #01 pc 00001231  /data/app/~~x==/base.apk!libn.so (offset 0x1000)' \
    './app(+0x1234)[0x55d1c2b3a234]' './nopie[0x401180]' 'libfoo.so+0x10' \
    '4929ac8cb3c174c113cafc7250efe12eee45cd25+0x1f877c' > corpus/report/tombstone-and-lines

# Cabinets as symbol servers answer: LZX (the fixture) and MSZIP (gcab's, if it is here).
cp "$fixtures/windows/lzx/app.pd_" corpus/cabinet/lzx
if command -v gcab >/dev/null; then
    gcab -c -z -n corpus/cabinet/mszip "$fixtures/windows/msvc-i686/app.pdb"
fi

# Archives of a binary and its debug file, as a store run is given them: ZIP, tar in
# each compression the tar target's first byte picks (0 none, 1 gzip, 2 xz, 4 bzip2),
# and a Debian package (ar holding a gzip'd data.tar).
python3 - "$fixtures/extra/debuglink" <<'PY'
import io, sys, tarfile, zipfile, os
src = sys.argv[1]
names = ["app", "app.debug"]
with zipfile.ZipFile("corpus/archive_zip/debuglink.zip", "w", zipfile.ZIP_DEFLATED) as z:
    for n in names:
        z.write(os.path.join(src, n), "lib/" + n)
for pick, mode in [(0, "w"), (1, "w:gz"), (2, "w:xz"), (4, "w:bz2")]:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as t:
        for n in names:
            t.add(os.path.join(src, n), "./usr/lib/" + n)
    open(f"corpus/archive_tar/debuglink-{pick}", "wb").write(bytes([pick]) + buf.getvalue())
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as t:
    t.add(os.path.join(src, "app"), "./usr/bin/app")
data = buf.getvalue()
def member(name, body):
    head = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(body):<10}`\n".encode()
    return head + body + (b"\n" if len(body) % 2 else b"")
deb = b"!<arch>\n" + member("debian-binary", b"2.0\n") + member("data.tar.gz", data)
open("corpus/archive_deb/app.deb", "wb").write(deb)
PY

# Packages as the distributions' tools make them: the RPM fixtures (rpmbuild), their
# cpio payloads (rpm2cpio, if it is here), the snap images (mksquashfs), and an Alpine
# package's three gzip streams (signature, control, data).
for f in "$fixtures"/packages/rpm/*/*.rpm; do
    cp "$f" "corpus/archive_rpm/$(basename "$(dirname "$f")")-$(basename "$f")"
done
if command -v rpm2cpio >/dev/null; then
    for f in "$fixtures"/packages/rpm/xz/*.rpm; do
        rpm2cpio "$f" >"corpus/archive_cpio/$(basename "$f" .rpm).cpio"
    done
fi
cp "$fixtures"/packages/snap/*.snap corpus/archive_squashfs/
python3 - "$fixtures/extra/debuglink" <<'PY'
import io, sys, tarfile, os
src = sys.argv[1]
def segment(members, cut):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    while cut and raw.endswith(b"\0" * 512):
        raw = raw[:-512]
    out = io.BytesIO()
    import gzip
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as g:
        g.write(raw)
    return out.getvalue()
app = open(os.path.join(src, "app"), "rb").read()
apk = segment([(".SIGN.RSA.key.rsa.pub", b"Z" * 256)], True)
apk += segment([(".PKGINFO", b"pkgname = app\n")], True)
apk += segment([("usr/bin/app", app)], False)
open("corpus/archive_apk/app.apk", "wb").write(apk)
PY

for t in corpus/*; do echo "$(basename "$t"): $(ls "$t" | wc -l) seeds"; done

# Swift names: every mangling of Swift's own test suite in fixtures/swift/manglings.txt,
# as a prefix-picking byte (see fuzzing.rs) and the rest of the name.
python3 - "$fixtures/swift/manglings.txt" corpus/demangle_swift <<'PY'
import hashlib, sys
prefixes = ["$s", "_$s", "$S", "_T0", "$e"]
for line in open(sys.argv[1], encoding="utf-8"):
    name = line.split(" ", 1)[0]
    for i, prefix in enumerate(prefixes):
        if name.startswith(prefix):
            data = bytes([i]) + name[len(prefix):].encode()
            with open(f"{sys.argv[2]}/{hashlib.sha1(data).hexdigest()}", "wb") as out:
                out.write(data)
            break
PY
