#!/usr/bin/env python3
"""PNG checks and trimming for report screenshots, with the standard library only.

usage: png_tool.py info PNG   prints "WIDTH HEIGHT COLOURS CONTENT_HEIGHT" (COLOURS: distinct
                              pixel values seen, capped at 1000; CONTENT_HEIGHT: rows above
                              the run of rows identical to the last one)
       png_tool.py trim PNG   crops that trailing run (keeping a small margin), in place

Reads 8-bit RGB or RGBA, non-interlaced PNGs: what Chromium writes.
"""
import struct
import sys
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chunks(data):
    pos = len(SIGNATURE)
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        yield kind, data[pos + 8:pos + 8 + length]
        pos += 12 + length


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != SIGNATURE:
        raise SystemExit(f"{path}: not a PNG file")
    idat = b""
    header = None
    for kind, body in chunks(data):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    if header is None:
        raise SystemExit(f"{path}: no IHDR chunk")
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise SystemExit(f"{path}: only 8-bit RGB/RGBA non-interlaced PNGs are supported")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, previous, pos = [], bytearray(stride), 0
    for _ in range(height):
        kind = raw[pos]
        line = bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + (left + previous[i]) // 2) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, bpp, rows


def write(path, width, bpp, rows):
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, len(rows), 8, 2 if bpp == 3 else 6, 0, 0, 0)
    raw = b"".join(b"\x00" + row for row in rows)
    with open(path, "wb") as f:
        f.write(SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def content_height(rows):
    last = len(rows)
    while last > 1 and rows[last - 1] == rows[-1]:
        last -= 1
    return last


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("info", "trim"):
        raise SystemExit(__doc__)
    width, height, bpp, rows = read(sys.argv[2])
    if sys.argv[1] == "info":
        colours = set()
        for row in rows[::max(1, height // 200)]:
            for i in range(0, len(row), bpp * 7):
                colours.add(row[i:i + bpp])
            if len(colours) >= 1000:
                break
        print(width, height, len(colours), content_height(rows))
    else:
        keep = min(height, content_height(rows) + 24)
        write(sys.argv[2], width, bpp, rows[:keep])


if __name__ == "__main__":
    main()
