"""Run every experiment on the current device and write one JSON record per topic.

    python -m widgets.measure                      # all topics
    python -m widgets.measure --topic memory_hierarchy --out widgets/data/h200

Each record holds the results and their provenance (GPU, driver, CUDA, torch and Triton
versions, date, command). Records committed under ``widgets/data/h200/`` are the book's
reference results.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from pathlib import Path

from .experiments import TOPICS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m widgets.measure", description=__doc__.splitlines()[0])
    parser.add_argument("--topic", action="append", choices=TOPICS, help="topic to run (repeatable); default all")
    parser.add_argument("--out", default="measurements", help="folder for <topic>.json records")
    args = parser.parse_args(argv)
    from .experiments import harness

    command = "python -m widgets.measure " + " ".join(argv if argv is not None else sys.argv[1:])
    failures = 0
    for topic in args.topic or TOPICS:
        try:
            module = importlib.import_module(f"widgets.experiments.{topic}")
        except ModuleNotFoundError as exc:
            if exc.name == f"widgets.experiments.{topic}":
                print(f"[skip] {topic}: no experiment module yet")
                continue
            raise
        print(f"[run ] {topic}: {harness.describe_run(topic)}", flush=True)
        t0 = time.time()
        try:
            results = module.run_all()
        except Exception:
            failures += 1
            traceback.print_exc()
            continue
        path = harness.write_record(harness.record(topic, results, command.strip()), Path(args.out) / f"{topic}.json")
        print(f"[done] {topic} in {time.time() - t0:.1f} s -> {path}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
