"""uv's flags for the package sources pip is configured with here, printed for `make install`.

`make install` installs requirements.txt with uv (``uv pip install``), which reads no pip
configuration: where pip is told to look for packages (its config files and PIP_* variables:
``index-url``, ``extra-index-url``, ``find-links``, ``constraint``), this prints the same for uv,
so both install the same versions from the same places. pip takes the best version found on any of
its indexes; uv, by default, only the first index that has the package: with more than one source,
``--index-strategy unsafe-best-match`` asks uv for pip's behaviour. Nothing configured, nothing printed.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint"}


def pip_config(python: str = sys.executable) -> dict[str, list[str]]:
    """{key: values} from ``pip config list`` (``global.``, ``install.`` and ``:env:.`` entries)."""
    out = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False).stdout
    return parse(out)


def parse(listing: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    index_url: dict[str, str] = {}
    for line in listing.splitlines():
        name, sep, value = line.partition("=")
        if not sep or "." not in name:
            continue
        section, key = name.rsplit(".", 1)
        if section not in ("global", "install", ":env:") or key not in FLAGS:
            continue
        values = shlex.split(value.strip().strip("'\""))
        if key == "index-url":  # one index: PIP_INDEX_URL over the files' install section over global
            index_url[section] = values[-1] if values else ""
            continue
        for v in values:
            if v not in found.setdefault(key, []):
                found[key].append(v)
    for section in (":env:", "install", "global"):
        if index_url.get(section):
            return {"index-url": [index_url[section]], **found}
    return found


def flags(config: dict[str, list[str]]) -> list[str]:
    out = [f for key, flag in FLAGS.items() for v in config.get(key, []) for f in (flag, v)]
    if config.get("extra-index-url") or config.get("find-links"):
        out += ["--index-strategy", "unsafe-best-match"]
    return out


if __name__ == "__main__":
    print(shlex.join(flags(pip_config())))
