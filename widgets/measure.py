"""Run every experiment on the current device and write one JSON record per topic.

    python -m widgets.measure                      # all topics
    python -m widgets.measure --topic memory_hierarchy --out widgets/data/h200
    python -m widgets.measure --merge room/alice room/bob widgets/data/h200 --out room/merged

Each record holds the results and their provenance (GPU, driver, CUDA, torch and Triton
versions, git commit, date, command). Records committed under ``widgets/data/h200/`` are the
book's reference results.

``--out`` is checked before anything is measured (a file, or a folder that cannot be created or
written, ends the run at once with one line and exit status 2). Each record is written atomically.
A topic that fails (import, run or write) does not stop the others; the run then ends with one
line per failure and exit status 1.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from .experiments import TOPICS

PROG = "python -m widgets.measure"


def check_out_dir(out: str) -> Path:
    """The ``--out`` folder, created if missing; ``ValueError`` with one sentence if it is a file,
    cannot be created, or cannot be written (checked by writing and removing a probe file)."""
    if not isinstance(out, str) or not out.strip():
        raise ValueError(f"--out must name a folder, got {out!r}")
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--out {out} cannot be created ({exc.strerror or exc})") from None
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-probe-", dir=p)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ValueError(f"--out {out} is not writable ({exc.strerror or exc})") from None
    return p


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--topic", action="append", choices=TOPICS, help="topic to run (repeatable); default all")
    parser.add_argument("--out", default=None, help="folder for <topic>.json records (default measurements); with --merge, for merged.*")
    parser.add_argument("--merge", nargs="+", metavar="DIR", help="merge records (folders or files) into one table and plot; measures nothing")
    args = parser.parse_args(argv)
    if args.merge:  # the workshop's closing discussion (widgets/merge.py)
        from .merge import main as merge_main

        return merge_main(args.merge, args.out or ".")
    args.out = args.out or "measurements"
    try:
        out = check_out_dir(args.out)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    from .experiments import harness

    command = (PROG + " " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    failures: list[str] = []
    topics = list(dict.fromkeys(args.topic or TOPICS))
    for topic in topics:
        name = f"widgets.experiments.{topic}"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                print(f"[skip] {topic}: no experiment module yet", flush=True)
                continue
            traceback.print_exc()
            failures.append(f"{topic}: import failed: {_one_line(exc)}")
            continue
        except Exception as exc:  # noqa: BLE001 - one topic's bug must not stop the others
            traceback.print_exc()
            failures.append(f"{topic}: import failed: {_one_line(exc)}")
            continue
        print(f"[run ] {topic}: {harness.describe_run(topic)}", flush=True)
        t0 = time.time()
        try:
            results = module.run_all()
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            failures.append(f"{topic}: run_all() failed after {time.time() - t0:.1f} s: {_one_line(exc)}")
            continue
        try:
            path = harness.write_record(harness.record(topic, results, command), out / f"{topic}.json")
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            failures.append(f"{topic}: measured, but the record was not written: {_one_line(exc)}")
            continue
        print(f"[done] {topic} in {time.time() - t0:.1f} s -> {path}", flush=True)
    if failures:
        sys.stdout.flush()
        print(f"{PROG}: {len(failures)} of {len(topics)} topic(s) failed:", file=sys.stderr)
        for line in failures:
            print(f"[FAIL] {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
