"""The catalog against the device: what the GPU that runs this reports, beside what widgets.hardware says.

Reads the CUDA runtime's device attributes (torch.cuda.get_device_properties, then
cudaDeviceGetAttribute through cuda-bindings or cupy for the ones torch does not expose) and compares
each with the catalog entry of this GPU (``catalog_name_for``) and its compute capability's record
(``ARCHS``): SM count, L2, memory, shared memory per SM and per block, the per-block reservation,
registers, resident threads and blocks per SM. Nothing is timed; it takes a few seconds.

    python benchmarks/h200/catalog_device_check.py                 # prints the table
    python benchmarks/h200/catalog_device_check.py --out FILE.json # and writes it (with provenance)

Every step fails soft: an attribute that cannot be read is recorded as null with the reason.
Exit status 0 when every readable figure matches the catalog (or there is no GPU), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from widgets import hardware  # noqa: E402

# cudaDeviceAttr values (CUDA 13.0 driver_types.h)
ATTRS = {
    "compute_capability_major": 75,
    "compute_capability_minor": 76,
    "multiprocessor_count": 16,
    "l2_cache_bytes": 38,
    "max_threads_per_multiprocessor": 39,
    "max_shared_memory_per_multiprocessor": 81,
    "max_registers_per_multiprocessor": 82,
    "max_shared_memory_per_block_optin": 97,
    "max_blocks_per_multiprocessor": 106,
    "reserved_shared_memory_per_block": 111,
}


def _attribute(code: int, device: int = 0):
    """(value, None) or (None, reason): cuda-bindings first, then cupy."""
    errors = []
    try:
        from cuda.bindings import runtime as rt

        err, value = rt.cudaDeviceGetAttribute(rt.cudaDeviceAttr(code), device)
        if int(err) == 0:
            return int(value), None
        errors.append(f"cuda-bindings: error {int(err)}")
    except Exception as exc:  # not installed, or an older binding
        errors.append(f"cuda-bindings: {type(exc).__name__}: {exc}")
    try:
        import cupy

        return int(cupy.cuda.runtime.deviceGetAttribute(code, device)), None
    except Exception as exc:
        errors.append(f"cupy: {type(exc).__name__}: {exc}")
    return None, "; ".join(errors)[:300]


def read_device(device: int = 0) -> dict:
    """What the runtime reports for ``device``: each figure, or null with ``errors[name]``."""
    import torch

    p = torch.cuda.get_device_properties(device)
    got = {
        "name": p.name,
        "compute_capability": f"{p.major}.{p.minor}",
        "total_memory_bytes": int(p.total_memory),
        "multiprocessor_count": int(p.multi_processor_count),
        "l2_cache_bytes": getattr(p, "L2_cache_size", None),
        "max_threads_per_multiprocessor": getattr(p, "max_threads_per_multi_processor", None),
        "max_shared_memory_per_multiprocessor": getattr(p, "shared_memory_per_multiprocessor", None),
        "max_shared_memory_per_block_optin": getattr(p, "shared_memory_per_block_optin", None),
        "max_registers_per_multiprocessor": getattr(p, "regs_per_multiprocessor", None),
    }
    errors = {}
    for name, code in ATTRS.items():
        if name.startswith("compute_capability"):
            continue
        if got.get(name) is None:
            got[name], why = _attribute(code, device)
            if why:
                errors[name] = why
    got["errors"] = errors
    return got


def compare(dev: dict) -> dict:
    """Rows (quantity, device, catalog, match) for the catalog entry of the device and its arch."""
    name = hardware.catalog_name_for(dev["name"])
    if name is None:
        return {"catalog_gpu": None, "rows": [], "note": f"{dev['name']!r} is not in the catalog"}
    g = hardware.get_gpu(name)
    a = g.arch_limits
    want = {
        "compute_capability": f"{a.compute_capability[0]}.{a.compute_capability[1]}" if a else None,
        "multiprocessor_count": g.sms,
        "l2_cache_bytes": g.l2_bytes,
        "total_memory_bytes": g.usable_memory_bytes,  # None when the catalog has no device report
        "max_threads_per_multiprocessor": a.max_threads_per_sm if a else None,
        "max_blocks_per_multiprocessor": a.max_blocks_per_sm if a else None,
        "max_shared_memory_per_multiprocessor": a.smem_per_sm_bytes if a else g.smem_per_sm_bytes,
        "max_shared_memory_per_block_optin": a.smem_per_block_optin_bytes if a else None,
        "reserved_shared_memory_per_block": a.smem_reserved_per_block_bytes if a else None,
        "max_registers_per_multiprocessor": a.regs_per_sm if a else g.registers_per_sm_bytes // 4,
    }
    rows = []
    for q, catalog in want.items():
        d = dev.get(q)
        match = None if d is None or catalog is None else (d == catalog)
        rows.append({"quantity": q, "device": d, "catalog": catalog, "match": match,
                     "why_null": dev["errors"].get(q) if d is None else None})
    return {"catalog_gpu": name, "arch": g.arch, "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the comparison (JSON, with provenance) here")
    ap.add_argument("--device", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("no torch: nothing to check")
        return 0
    if not torch.cuda.is_available():
        print("no CUDA GPU here: nothing to check (tests/test_catalog.py checks the catalog itself)")
        return 0
    try:
        dev = read_device(args.device)
        result = {"device": dev, **compare(dev)}
    except Exception as exc:  # fail soft: say what broke
        result = {"device": None, "rows": [], "error": f"{type(exc).__name__}: {exc}"}
    for r in result.get("rows", []):
        flag = {True: "ok", False: "MISMATCH", None: "n/a"}[r["match"]]
        print(f"{r['quantity']:>40}: device {r['device']!s:>14}  catalog {r['catalog']!s:>14}  {flag}")
    if result.get("error") or result.get("note"):
        print(result.get("error") or result.get("note"))
    if args.out:
        try:
            from widgets.experiments import harness

            result["provenance"] = harness.provenance("python benchmarks/h200/catalog_device_check.py --out " + args.out)
        except Exception as exc:
            result["provenance"] = {"error": f"{type(exc).__name__}: {exc}"}
        Path(args.out).write_text(json.dumps(result, indent=1, default=str) + "\n")
        print("wrote", args.out)
    return 1 if any(r["match"] is False for r in result.get("rows", [])) else 0


if __name__ == "__main__":
    sys.exit(main())
