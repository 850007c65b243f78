"""Rewrites the README's parameter table (the block between the params-table markers) from
params.yaml and the params schema: run it after changing either.

    python scripts/params_table.py            # rewrites README.md in place
    python scripts/params_table.py --check    # exit 1 if README.md's table is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from membench.params_table import render, with_table

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    updated = with_table(text, render(yaml.safe_load((ROOT / "params.yaml").read_text())))
    if "--check" in argv:
        if updated != text:
            print("README.md's parameter table is stale: run python scripts/params_table.py")
            return 1
        return 0
    readme.write_text(updated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
