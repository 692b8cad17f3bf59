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
import struct
import sys


def u16(b, at):
    return struct.unpack_from("<H", b, at)[0]


def u32(b, at):
    return struct.unpack_from("<I", b, at)[0]


def read_msf(path):
    b = open(path, "rb").read()
    bs, _, _, dir_bytes, _, block_map = struct.unpack_from("<6I", b, 32)
    n_dir = -(-dir_bytes // bs)
    dir_pages = struct.unpack_from(f"<{n_dir}I", b, block_map * bs)
    d = b"".join(b[p * bs:(p + 1) * bs] for p in dir_pages)[:dir_bytes]
    n = u32(d, 0)
    sizes = [u32(d, 4 + 4 * i) for i in range(n)]
    pos = 4 + 4 * n
    streams = []
    for size in sizes:
        if size == 0xFFFFFFFF:
            streams.append(None)
            continue
        np_ = -(-size // bs)
        pages = struct.unpack_from(f"<{np_}I", d, pos)
        pos += 4 * np_
        streams.append(b"".join(b[p * bs:(p + 1) * bs] for p in pages)[:size])
    return streams


def write_msf(path, streams, bs):
    """Streams written page by page, never held twice: page 0 the superblock, pages 1
    and 2 of every interval the free page maps (zero), then the data, the directory,
    and the page listing the directory's pages."""
    next_page = [3]

    def take():
        while next_page[0] % bs in (1, 2):
            next_page[0] += 1
        p = next_page[0]
        next_page[0] += 1
        return p

    sizes = b"".join(struct.pack("<I", 0xFFFFFFFF if s is None else len(s)) for s in streams)
    lists = bytearray()
    for s in streams:
        for _ in range(0, len(s or b""), bs):
            lists += struct.pack("<I", take())
    directory = struct.pack("<I", len(streams)) + sizes + bytes(lists)
    dir_pages = [take() for _ in range(0, len(directory), bs)]
    block_map = take()
    assert len(dir_pages) * 4 <= bs, "the directory's pages must fit one page"
    total = block_map + 1
    header = b"Microsoft C/C++ MSF 7.00\r\n\x1aDS\0\0\0" + struct.pack(
        "<6I", bs, 1, total, len(directory), 0, block_map)
    zero = bytes(bs)
    with open(path, "wb") as f:
        page = [0]

        def put(data):
            while page[0] % bs in (1, 2):
                f.write(zero)
                page[0] += 1
            f.write(data.ljust(bs, b"\0"))
            page[0] += 1

        f.write(header.ljust(bs, b"\0"))
        page[0] = 1
        for s in streams:
            s = s or b""
            for i in range(0, len(s), bs):
                put(s[i:i + bs])
        for i in range(0, len(directory), bs):
            put(directory[i:i + bs])
        put(b"".join(struct.pack("<I", p) for p in dir_pages))
        assert page[0] == total
    return total * bs


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
