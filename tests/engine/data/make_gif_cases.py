#!/usr/bin/env python3
"""Writes the two GIF test files (no dependencies): a normal 16x12 four-colour picture and a
"bomb" whose 30-byte header declares a 65535x65535 canvas. The program refuses GIF, so both
must give the same clear error without any decoder seeing them."""
import struct


def lzw_pixels(indices, min_code_size=2):
    # Uncompressed LZW: a clear code before every pixel pair keeps the code width at 3 bits.
    clear, end = 1 << min_code_size, (1 << min_code_size) + 1
    width = min_code_size + 1
    codes = []
    for i in range(0, len(indices), 2):
        codes.append(clear)
        codes.extend(indices[i:i + 2])
    codes.append(end)
    bits, nbits, out = 0, 0, bytearray()
    for c in codes:
        bits |= c << nbits
        nbits += width
        while nbits >= 8:
            out.append(bits & 0xff)
            bits >>= 8
            nbits -= 8
    if nbits:
        out.append(bits & 0xff)
    blocks = bytearray([min_code_size])
    for i in range(0, len(out), 255):
        chunk = out[i:i + 255]
        blocks += bytes([len(chunk)]) + chunk
    return bytes(blocks + b"\x00")


def gif(screen_w, screen_h, frame_w, frame_h):
    palette = bytes([255, 0, 0, 0, 160, 0, 0, 0, 255, 255, 255, 255])  # red, green, blue, white
    head = b"GIF89a" + struct.pack("<HHBBB", screen_w, screen_h, 0x81, 0, 0) + palette
    frame = b"," + struct.pack("<HHHHB", 0, 0, frame_w, frame_h, 0)
    pixels = [(x // 4 + y // 6) % 4 for y in range(frame_h) for x in range(frame_w)]
    return head + frame + lzw_pixels(pixels) + b";"


if __name__ == "__main__":
    with open("small.gif", "wb") as f:
        f.write(gif(16, 12, 16, 12))
    with open("bomb.gif", "wb") as f:
        f.write(gif(65535, 65535, 2, 2))
