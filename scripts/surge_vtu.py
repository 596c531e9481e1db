"""The layout of a surge VTU frame (binary, raw appended data, as crates/surge-io/src/vtu.rs
writes it), with the standard library alone: scripts/leak_probe.py and
scripts/frame_column.py read their arrays from it."""
import re

# The VTK type names surge writes, as `array` type codes and numpy dtype names.
TYPES = {"UInt32": ("I", "u4"), "UInt8": ("B", "u1"), "Float32": ("f", "f4"), "Float64": ("d", "f8"), "Int64": ("q", "i8")}


def layout(raw):
    """(number of points, [(name, VTK type, components, first byte, byte count)]) of the frame
    `raw` (its bytes), point data and Points only (not the cells)."""
    head_end = raw.index(b"<AppendedData")
    head = raw[:head_end].decode()
    n = int(re.search(r'NumberOfPoints="(\d+)"', head).group(1))
    start = raw.index(b"_", head_end) + 1
    out = []
    for m in re.finditer(r'<DataArray type="(\w+)" Name="(\w+)"(?: NumberOfComponents="(\d+)")? format="appended" offset="(\d+)"', head):
        ty, name, comps, off = m.group(1), m.group(2), int(m.group(3) or 1), int(m.group(4))
        if name in ("connectivity", "offsets", "types"):
            continue
        at = start + off  # a UInt64 byte count, then the data
        out.append((name, ty, comps, at + 8, int.from_bytes(raw[at:at + 8], "little")))
    return n, out
