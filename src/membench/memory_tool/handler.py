"""Executing memory tool commands against a local directory.

``MemoryToolHandler`` is the client side of Anthropic's memory tool
(``memory_20250818``): the model sends file commands on ``/memories``, the
handler runs them inside one root directory and returns the strings the
Anthropic SDK's local-filesystem helper would return. Every failure is a
``MemoryToolError`` whose message goes back to the model as an error result.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from . import messages
from .atomic import write_file
from .dirfd import (
    MissingPathError,
    lstat_at,
    open_directory,
    open_node,
    open_root,
    opened_path,
    prepare_root,
)
from .editing import insert_text, render_file, replace_unique
from .errors import MemoryToolError
from .listing import render_directory
from .locking import root_lock
from .params import CommandParams
from .paths import MAX_DEPTH, MemoryPath, parse_memory_path, quote_for_message
from .tree import remove_entry, tree_height

TOOL_TYPE = "memory_20250818"
TOOL_NAME = "memory"
_READ_CHUNK = 1 << 20


def tool_definition() -> dict[str, str]:
    """The entry to put in the Messages API ``tools`` list."""
    return {"type": TOOL_TYPE, "name": TOOL_NAME}


class MemoryToolHandler:
    """Runs memory commands inside ``root``, which stands in for ``/memories``.

    Safe to share between threads and to use from several processes at once on
    the same root: commands are serialised by a lock file in the root.
    """

    def __init__(self, root: str | os.PathLike[str], *, create_root: bool = True,
                 durable: bool = True) -> None:
        """durable=False keeps every write atomic but skips the fsyncs that make it
        survive a power cut: for a scratch root read back by its own process."""
        self.root = prepare_root(root, create=create_root)
        self._sync: Callable[[int], None] = os.fsync if durable else _no_sync
        self._commands: dict[str, Callable[[CommandParams], str]] = {
            "view": self._view,
            "create": self._create,
            "str_replace": self._str_replace,
            "insert": self._insert,
            "delete": self._delete,
            "rename": self._rename,
        }

    def execute(self, command: object) -> str:
        """Run one command (the tool_use ``input`` dict) and return its result text.

        Raises MemoryToolError, and nothing else, for any failure.
        """
        name = "memory"
        try:
            params = CommandParams(command)
            name = params.name
            run = self._commands.get(name)
            if run is None:
                raise MemoryToolError(messages.UNKNOWN_COMMAND.format(command=name))
            return run(params)
        except MemoryToolError:
            raise
        except OSError as err:
            raise MemoryToolError(
                messages.OS_FAILURE.format(
                    action=name, path=_path_for_message(command), reason=err.strerror or str(err)
                )
            ) from err
        except Exception as err:  # last resort: the model must get a message, not a crash
            raise MemoryToolError(
                messages.INTERNAL_FAILURE.format(
                    command=name, detail=f"{type(err).__name__}: {err}"
                )
            ) from err

    def tool_result(self, tool_use_id: str, tool_input: object) -> dict[str, object]:
        """A ready ``tool_result`` content block for one ``tool_use`` of the memory tool."""
        try:
            content, is_error = self.execute(tool_input), False
        except MemoryToolError as err:
            content, is_error = err.message, True
        return {
            "type": "tool_result",
            "tool_use_id": tool_use_id,
            "content": content,
            "is_error": is_error,
        }

    # --- plumbing -------------------------------------------------------------

    @contextmanager
    def _locked_root(self, *, exclusive: bool) -> Iterator[int]:
        with open_root(self.root) as root_fd, root_lock(root_fd, exclusive=exclusive):
            yield root_fd

    @contextmanager
    def _parent_of(self, root_fd: int, path: MemoryPath, *, create: bool = False) -> Iterator[int]:
        with open_directory(
            root_fd, self.root, path.parent_parts, display=path.text, create=create
        ) as dir_fd:
            yield dir_fd

    @staticmethod
    def _file_path(params: CommandParams) -> MemoryPath:
        path = parse_memory_path(params.text("path"))
        if path.trailing_slash:
            raise MemoryToolError(
                messages.NOT_A_DIRECTORY_PATH.format(path=path.text, command=params.name)
            )
        return path

    @staticmethod
    def _read_text(dir_fd: int, fd: int, info: os.stat_result, path: MemoryPath) -> str:
        """The file's text, refused if it is (or was, while we read) linked from elsewhere.

        The link count checked after opening can be raced: a co-tenant links an outside
        file in, we open it, the co-tenant unlinks it again and the count is back to 1.
        So after reading, the very name we opened must not have been removed since (the
        kernel marks it deleted), the name must still name this inode with a link count of 1
        and the inode must be unchanged. The first check closes the gap the others leave:
        unlink lowers the count before it removes the name, so a name can read as the only
        link of an inode that has another outside the root for as long as the unlinking
        process is preempted; _wait_for_removals lets any such unlink finish first.
        """
        if stat.S_ISDIR(info.st_mode):
            raise MemoryToolError(messages.NOT_A_FILE.format(path=path.text))
        if not stat.S_ISREG(info.st_mode):
            raise MemoryToolError(messages.UNSUPPORTED_FILE_TYPE.format(path=path.text))
        if info.st_nlink > 1:
            raise MemoryToolError(messages.HARD_LINKED.format(path=path.text))
        chunks = []
        while chunk := os.read(fd, _READ_CHUNK):
            chunks.append(chunk)
        _wait_for_removals(dir_fd)
        named = lstat_at(dir_fd, path.name)
        after = os.fstat(fd)
        if (
            _name_was_removed(fd)
            or named is None
            or (named.st_dev, named.st_ino) != (info.st_dev, info.st_ino)
            or named.st_nlink != 1
            or after.st_nlink != 1
            or after.st_ctime_ns != info.st_ctime_ns
        ):
            raise MemoryToolError(messages.HARD_LINKED.format(path=path.text))
        try:
            return b"".join(chunks).decode("utf-8")
        except UnicodeDecodeError:
            raise MemoryToolError(messages.NOT_UTF8.format(path=path.text)) from None

    def _edit(self, path: MemoryPath, transform: Callable[[str], tuple[str, str]]) -> str:
        """Read-modify-write of one file under the exclusive lock; returns the result text."""
        if path.is_root:
            raise MemoryToolError(messages.NOT_A_FILE.format(path=path.text))
        with self._locked_root(exclusive=True) as root_fd, self._parent_of(root_fd, path) as dir_fd:
            with open_node(dir_fd, path.name, display=path.text) as (fd, info):
                content = self._read_text(dir_fd, fd, info, path)
            new_content, result = transform(content)
            write_file(dir_fd, path.name, new_content.encode("utf-8"), overwrite=True,
                       sync=self._sync)
        return result

    # --- commands -------------------------------------------------------------

    def _view(self, params: CommandParams) -> str:
        path = parse_memory_path(params.text("path"))
        view_range = params.view_range()
        with self._locked_root(exclusive=False) as root_fd:
            if path.is_root:
                return render_directory(root_fd, os.fstat(root_fd).st_size, path.text, path.display)
            with (
                self._parent_of(root_fd, path) as dir_fd,
                open_node(dir_fd, path.name, display=path.text) as (fd, info),
            ):
                if stat.S_ISDIR(info.st_mode):
                    return render_directory(fd, info.st_size, path.text, path.display)
                return render_file(self._read_text(dir_fd, fd, info, path), path.text, view_range)

    def _create(self, params: CommandParams) -> str:
        path = self._file_path(params)
        data = params.text("file_text").encode("utf-8")
        if path.is_root:
            raise MemoryToolError(messages.ALREADY_EXISTS.format(path=path.text))
        _check_depth(path, len(path.parts))
        with (
            self._locked_root(exclusive=True) as root_fd,
            self._parent_of(root_fd, path, create=True) as dir_fd,
        ):
            try:
                write_file(dir_fd, path.name, data, overwrite=False, sync=self._sync)
            except FileExistsError:
                raise MemoryToolError(messages.ALREADY_EXISTS.format(path=path.text)) from None
        return messages.CREATED.format(path=path.text)

    def _str_replace(self, params: CommandParams) -> str:
        path = self._file_path(params)
        old_str = params.text("old_str")
        new_str = params.text("new_str")
        return self._edit(path, lambda content: replace_unique(content, old_str, new_str, path.text))

    def _insert(self, params: CommandParams) -> str:
        path = self._file_path(params)
        line = params.integer("insert_line")
        text = params.text("insert_text")
        done = messages.INSERTED.format(path=path.text)
        return self._edit(path, lambda content: (insert_text(content, line, text), done))

    def _delete(self, params: CommandParams) -> str:
        path = parse_memory_path(params.text("path"))
        if path.is_root:
            raise MemoryToolError(messages.DELETE_ROOT)
        with self._locked_root(exclusive=True) as root_fd, ExitStack() as stack:
            dir_fd = self._enter_existing_parent(stack, root_fd, path)
            if lstat_at(dir_fd, path.name) is None:
                raise _not_found(path)
            remove_entry(dir_fd, path.name)
            self._sync(dir_fd)
        return messages.DELETED.format(path=path.text)

    def _rename(self, params: CommandParams) -> str:
        old = parse_memory_path(params.text("old_path"))
        new = parse_memory_path(params.text("new_path"))
        if old.is_root:
            raise MemoryToolError(messages.RENAME_ROOT)
        if new.is_root:
            raise MemoryToolError(messages.DESTINATION_EXISTS.format(path=new.text))
        with self._locked_root(exclusive=True) as root_fd, ExitStack() as stack:
            old_dir = self._enter_existing_parent(stack, root_fd, old)
            if lstat_at(old_dir, old.name) is None:
                raise _not_found(old)
            self._move(root_fd, old_dir, old, new)
        return messages.RENAMED.format(old_path=old.text, new_path=new.text)

    def _enter_existing_parent(self, stack: ExitStack, root_fd: int, path: MemoryPath) -> int:
        """Open ``path``'s parent for delete/rename, which word "missing" the SDK's short way."""
        try:
            return stack.enter_context(self._parent_of(root_fd, path))
        except MissingPathError:
            raise _not_found(path) from None

    def _move(self, root_fd: int, old_dir: int, old: MemoryPath, new: MemoryPath) -> None:
        if old.parts == new.parts:
            raise MemoryToolError(messages.DESTINATION_EXISTS.format(path=new.text))
        if old.contains(new):
            raise MemoryToolError(
                messages.RENAME_INTO_ITSELF.format(old_path=old.text, new_path=new.text)
            )
        height = tree_height(old_dir, old.name, limit=MAX_DEPTH + 1)
        _check_depth(new, len(new.parts) - 1 + height)
        with self._parent_of(root_fd, new, create=True) as new_dir:
            if lstat_at(new_dir, new.name) is not None:
                raise MemoryToolError(messages.DESTINATION_EXISTS.format(path=new.text))
            os.rename(old.name, new.name, src_dir_fd=old_dir, dst_dir_fd=new_dir)
            self._sync(new_dir)
            self._sync(old_dir)


def _no_sync(fd: int) -> None:
    """A scratch root's writes: atomic, not flushed to disk."""


def _not_found(path: MemoryPath) -> MemoryToolError:
    return MemoryToolError(messages.NOT_FOUND.format(path=path.text))


def _check_depth(path: MemoryPath, depth: int) -> None:
    """Refuse to put anything deeper than MAX_DEPTH levels below /memories.

    Without a bound the model alone can build a tree (create a deep path, rename it below
    another deep path, again and again) too deep for other tools to walk or delete.
    """
    if depth > MAX_DEPTH:
        raise MemoryToolError(messages.TOO_DEEP.format(path=path.text, depth=depth,
                                                       limit=MAX_DEPTH))


def _path_for_message(command: object) -> str:
    if isinstance(command, dict):
        for key in ("path", "old_path"):
            value = command.get(key)
            if isinstance(value, str):
                return quote_for_message(value)
    return "the requested path"


def _name_was_removed(fd: int) -> bool:
    """True once the directory entry ``fd`` was opened through has been unlinked."""
    where = opened_path(fd)
    return where is not None and where.endswith(" (deleted)")


def _wait_for_removals(dir_fd: int) -> None:
    """Block until every unlink already under way in this directory has finished.

    Removing a name holds the directory's inode lock from before the link count drops
    until the name is gone; removing a name that does not exist takes the same lock,
    so it returns only after those removals complete (and changes nothing)."""
    try:
        os.unlink(f".membench-barrier-{secrets.token_hex(16)}", dir_fd=dir_fd)
    except FileNotFoundError:
        pass
