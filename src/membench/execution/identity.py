"""What a process runs: membench's source and the versions of what it depends on.

Sent to every worker of an existing cluster by value (cloudpickle), so a worker without
membench, or with another one, answers instead of failing to unpickle the check."""

from __future__ import annotations


def process_identity() -> dict[str, str]:
    """Python's minor version, membench's version and a digest of its source files, and
    the installed version of each of membench's own dependencies."""
    import re
    import sys
    from importlib import metadata
    from importlib.util import find_spec
    from pathlib import Path

    found = {"python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    try:
        found["membench"] = metadata.version("membench")
        requires = metadata.requires("membench") or []
    except metadata.PackageNotFoundError:
        found["membench"] = "not installed"
        return found
    try:  # where the package and its stage commands are, without importing them
        roots = [Path(next(iter(find_spec(name).submodule_search_locations)))
                 for name in ("membench", "membench.stages")]
    except (ImportError, AttributeError, TypeError, StopIteration) as error:
        found["membench"] = f"not importable ({error})"
        return found
    found["membench source"] = _digest_of(roots)
    for requirement in requires:
        if "extra ==" in requirement:
            continue
        name = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def _digest_of(roots: list) -> str:
    import hashlib

    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def source_digest() -> str | None:
    """The digest of membench's source files as they are now (None if not found)."""
    from importlib.util import find_spec
    from pathlib import Path

    try:
        return _digest_of([Path(next(iter(find_spec(name).submodule_search_locations)))
                           for name in ("membench", "membench.stages")])
    except (ImportError, AttributeError, TypeError, StopIteration, OSError):
        return None


def mismatch(ours: dict[str, str], theirs: dict[str, str]) -> str | None:
    """The first difference, as `name theirs (this client: ours)`, or None."""
    for name, version in ours.items():
        other = theirs.get(name, "not installed")
        if other != version:
            return f"{name} {other} (this client: {version})"
    return None
