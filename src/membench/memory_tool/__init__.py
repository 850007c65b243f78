"""Client-side store for Anthropic's memory tool (``memory_20250818``).

The model issues file commands against ``/memories``; ``MemoryToolHandler``
executes them inside a local root directory, refusing anything that could reach
outside it. See ``docs/memory-tool.md`` for guarantees and limits.
"""

from .errors import MemoryToolError
from .handler import TOOL_NAME, TOOL_TYPE, MemoryToolHandler, tool_definition
from .paths import MemoryPath, parse_memory_path, resolve_memory_path

__all__ = [
    "TOOL_NAME",
    "TOOL_TYPE",
    "MemoryPath",
    "MemoryToolError",
    "MemoryToolHandler",
    "parse_memory_path",
    "resolve_memory_path",
    "tool_definition",
]
