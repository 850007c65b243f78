"""What part of a database page a byte offset falls in, read from the page's own header
(pure: bytes in). SQLite b-tree pages (the file format's section 1.6) and PostgreSQL heap
pages (bufpage.h, htup_details.h) keep deleted content in place until something
overwrites it; these say whether a found value is in a live record, a deleted one, or the
page's unallocated space."""

from __future__ import annotations

import struct

LIVE_CELL, DEAD_TUPLE, UNALLOCATED = "live", "dead", "unallocated"
SQLITE_BTREE_TYPES = {2: 12, 5: 12, 10: 8, 13: 8}  # page type -> header size
PG_PAGE = 8192
_PG_HEADER = 24
_HEAP_XMAX_INVALID, _HEAP_XMAX_LOCK_ONLY = 0x0800, 0x0080


def sqlite_page_size(database: bytes) -> int:
    size = struct.unpack(">H", database[16:18])[0]
    return 65536 if size == 1 else size


def sqlite_free_pages(database: bytes) -> frozenset[int]:
    """Page numbers (from 1) on an SQLite database file's freelist: trunk and leaf pages
    (the file format's header: page size at offset 16, first trunk page at 32)."""
    if len(database) < 100 or not database.startswith(b"SQLite format 3\0"):
        return frozenset()
    page_size = sqlite_page_size(database)
    free: set[int] = set()
    trunk = struct.unpack(">I", database[32:36])[0]
    while trunk and trunk not in free and trunk * page_size <= len(database):
        free.add(trunk)
        base = (trunk - 1) * page_size
        following, count = struct.unpack(">II", database[base:base + 8])
        free.update(struct.unpack(f">{count}I", database[base + 8:base + 8 + 4 * count]))
        trunk = following
    return frozenset(free)


def sqlite_page(database: bytes, offset: int) -> int:
    return offset // sqlite_page_size(database) + 1


def sqlite_region(database: bytes, offset: int) -> str:
    """LIVE_CELL or UNALLOCATED for a byte of a b-tree page (unallocated: between the cell
    pointer array and the cell content area, or on the page's freeblock list). A page
    that is not a b-tree page (an overflow page of a live cell) counts as live."""
    size = sqlite_page_size(database)
    start = offset - offset % size
    header = start + (100 if start == 0 else 0)
    header_size = SQLITE_BTREE_TYPES.get(database[header])
    if header_size is None:
        return LIVE_CELL
    first_free, cells, content = struct.unpack(">HHH", database[header + 1:header + 7])
    within = offset - start
    pointers_end = header - start + header_size + 2 * cells
    if pointers_end <= within < (content or 65536):
        return UNALLOCATED
    block, seen = first_free, set()
    while block and block not in seen and block + 4 <= size:
        seen.add(block)
        following, length = struct.unpack(">HH", database[start + block:start + block + 4])
        if block <= within < block + length:
            return UNALLOCATED
        block = following
    return LIVE_CELL


def postgres_region(relation: bytes, offset: int) -> str:
    """LIVE_CELL, DEAD_TUPLE (deleted or updated away: xmax set, not a lock) or
    UNALLOCATED (on no line pointer: space VACUUM freed, or never used) for a byte of a
    heap page."""
    start = offset - offset % PG_PAGE
    page = relation[start:start + PG_PAGE]
    if len(page) < _PG_HEADER:
        return UNALLOCATED
    lower = struct.unpack_from("<H", page, 12)[0]
    within = offset - start
    for pointer in range(_PG_HEADER, min(lower, len(page)), 4):
        word = struct.unpack_from("<I", page, pointer)[0]
        item, flags, length = word & 0x7FFF, (word >> 15) & 3, word >> 17
        if flags != 1 or not item <= within < item + length:
            continue
        xmax = struct.unpack_from("<I", page, item + 4)[0]
        infomask = struct.unpack_from("<H", page, item + 20)[0]
        deleted = xmax != 0 and not infomask & (_HEAP_XMAX_INVALID | _HEAP_XMAX_LOCK_ONLY)
        return DEAD_TUPLE if deleted else LIVE_CELL
    return UNALLOCATED
