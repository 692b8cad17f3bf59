#!/usr/bin/env python3
"""Writes a PDB past 4 GiB from the synthetic Windows input (make-windows-input.sh's
big.pdb, 13 MB): its modules listed COPIES times over (530: 64,660 modules, near the
65,535 a module's stream number allows), each copy a module stream of its own (the same
bytes), in MSF pages of 8 KiB (`/PDBPAGESIZE:8192`, what a linker must use
past 4 GiB). The streams together pass 4 GiB, as Chromium's, Electron's and Unreal's
PDBs do; the image (big.exe) still matches it (GUID and age are big.pdb's). Every copy's
procedures lie at the same addresses as the original's, so the dump is the original's
functions, each met COPIES times: what is measured is reading the streams (the first
4 GiB past which a page number times the page size needs 64 bits), not writing.

    python3 bench/make-windows-huge.py DIR/big.pdb OUT.pdb [COPIES]   # default 530
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "fixtures", "windows"))
from msf import read_msf, u16, u32, write_msf  # noqa: E402


def mod_infos(buf):
    """Each ModInfo record of the DBI's module substream, as bytes."""
    at, out = 0, []
    while at < len(buf):
        end = at + 64
        end = buf.index(b"\0", end) + 1  # module name
        end = buf.index(b"\0", end) + 1  # object file name
        end = (end + 3) & ~3
        out.append(buf[at:end])
        at = end
    return out


def main():
    src, out = sys.argv[1], sys.argv[2]
    copies = int(sys.argv[3]) if len(sys.argv) > 3 else 530
    streams = read_msf(src)
    dbi = streams[3]
    (mod_size, contrib_size, map_size, source_size, tsm_size, _, opt_size,
     ec_size) = struct.unpack_from("<iiiiiIii", dbi, 24)
    at = 64
    mods_buf = dbi[at:at + mod_size]
    at += mod_size
    rest_before_source = dbi[at:at + contrib_size + map_size]
    at += contrib_size + map_size
    source = dbi[at:at + source_size]
    at += source_size
    tail = dbi[at:]

    mods = mod_infos(mods_buf)
    new_mods = list(mods)
    for _ in range(copies - 1):
        for m in mods:
            stream = u16(m, 34)
            m = bytearray(m)
            if stream != 0xFFFF:
                streams.append(streams[stream])
                struct.pack_into("<H", m, 34, len(streams) - 1)
            new_mods.append(bytes(m))
    assert len(new_mods) < 0x10000 and len(streams) < 0x10000

    # The source-file list, per module, replicated with the modules.
    n_mods = u16(source, 0)
    counts = [u16(source, 4 + 2 * n_mods + 2 * i) for i in range(n_mods)]
    files_at = 4 + 4 * n_mods
    offsets = [u32(source, files_at + 4 * i) for i in range(sum(counts))]
    names = source[files_at + 4 * sum(counts):]
    all_counts = counts * copies
    all_offsets = offsets * copies
    first, starts = 0, []
    for c in all_counts:
        starts.append(first & 0xFFFF)
        first += c
    new_source = struct.pack("<HH", len(all_counts), len(all_offsets) & 0xFFFF)
    new_source += b"".join(struct.pack("<H", s) for s in starts)
    new_source += b"".join(struct.pack("<H", c) for c in all_counts)
    new_source += b"".join(struct.pack("<I", o) for o in all_offsets)
    new_source += names
    new_source = new_source.ljust((len(new_source) + 3) & ~3, b"\0")

    mods_out = b"".join(new_mods)
    header = bytearray(dbi[:64])
    struct.pack_into("<i", header, 24, len(mods_out))
    struct.pack_into("<i", header, 36, len(new_source))
    streams[3] = bytes(header) + mods_out + rest_before_source + new_source + tail
    size = write_msf(out, streams, 8192)
    total = sum(len(s or b"") for s in streams)
    print(f"{out}: {size} bytes, {len(streams)} streams of {total} bytes, "
          f"{len(new_mods)} modules")


if __name__ == "__main__":
    main()
