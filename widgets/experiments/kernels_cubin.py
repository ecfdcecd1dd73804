"""Reading and patching a cubin: a cubin is an ELF file; each kernel's SASS lives in the section
``.text.<kernel>`` as 16-byte instructions (sm_70 and later), and a 32-bit floating-point immediate
of an ``FMUL``/``FADD``/``FFMA`` sits in bytes 4-7 of its instruction (bits 32-63, little-endian);
the upper 8 bytes hold the rest of the encoding and, in their top 23 bits, the scheduling control
bits (operand reuse, wait mask, read and write barriers, yield, stall count).
NVIDIA does not document the encoding: this follows the reverse-engineering of Jia et al.,
"Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking" (arXiv:1804.06826, 2018), section 2,
and was checked on the H200 record (``FMUL R7, R2, 3`` at 0xe0 is ``0x4040000002077820``). The scan
matches any instruction whose bytes 4-7 equal the value, so a patch demands exactly one match.

Pure Python (``struct``): no GPU, no CUDA tools. ``benchmarks/h200/kernels_binary.py`` uses it to
patch ``x * 3.0f`` into ``x * 5.0f`` and load the result on the GPU; tests check it on a cubin
built by nvcc where nvcc exists.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

INSTRUCTION_BYTES = 16  # Volta and later: one 128-bit word per SASS instruction


@dataclass(frozen=True)
class Section:
    """One ELF section header: name, type, file offset and size [B]."""

    name: str
    type: int
    offset: int
    size: int


def elf_sections(data: bytes) -> list[Section]:
    """The section headers of a 64-bit little-endian ELF file (a cubin), by name.

    Raises ``ValueError`` if ``data`` is not one.
    """
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise ValueError("data is not an ELF file (no \\x7fELF magic): a cubin is an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ValueError(f"only 64-bit little-endian ELF is read here (class {data[4]}, data {data[5]})")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff + shnum * shentsize > len(data) or shstrndx >= shnum:
        raise ValueError("ELF section table lies outside the file")
    raw = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    str_off = raw[shstrndx][4]

    def name(o: int) -> str:
        end = data.index(b"\0", str_off + o)
        return data[str_off + o:end].decode(errors="replace")

    return [Section(name(n), t, off, size) for n, t, _flags, _addr, off, size in raw]


def kernel_text(data: bytes, kernel: str) -> Section:
    """The ``.text.<kernel>`` section of a cubin (``ValueError`` naming the kernels present if absent)."""
    secs = elf_sections(data)
    for s in secs:
        if s.name == f".text.{kernel}":
            return s
    have = [s.name[6:] for s in secs if s.name.startswith(".text.")]
    raise ValueError(f"kernel {kernel!r} has no .text section in this cubin; kernels present: {have}")


@dataclass(frozen=True)
class Immediate:
    """Where a 32-bit immediate sits: the instruction's offset in the kernel's code (as
    ``cuobjdump -sass`` prints it, ``/*00e0*/``), its byte offset in the file, and the instruction."""

    instruction_offset: int
    file_offset: int
    instruction_hex: str


def find_float_immediates(data: bytes, kernel: str, value: float) -> list[Immediate]:
    """Every instruction of ``kernel`` whose bytes 4-7 hold the fp32 ``value``."""
    text = kernel_text(data, kernel)
    want = struct.pack("<f", value)
    code = data[text.offset:text.offset + text.size]
    found = []
    for i in range(0, len(code) - INSTRUCTION_BYTES + 1, INSTRUCTION_BYTES):
        ins = code[i:i + INSTRUCTION_BYTES]
        if ins[4:8] == want:
            found.append(Immediate(i, text.offset + i + 4, ins.hex()))
    return found


def patch_float_immediate(data: bytes, kernel: str, old: float, new: float) -> tuple[bytes, Immediate]:
    """``data`` with the one fp32 immediate ``old`` of ``kernel`` replaced by ``new`` (4 bytes
    changed, nothing else); ``ValueError`` unless exactly one instruction holds ``old``."""
    hits = find_float_immediates(data, kernel, old)
    if len(hits) != 1:
        raise ValueError(f"expected one instruction of {kernel} with the immediate {old}, found {len(hits)}")
    hit = hits[0]
    out = bytearray(data)
    out[hit.file_offset:hit.file_offset + 4] = struct.pack("<f", new)
    return bytes(out), hit
