"""Result and error strings shown to the model.

Strings marked SDK are the ones Anthropic's Python SDK uses in its local
filesystem memory tool (``BetaLocalFilesystemMemoryTool``), so a model tuned on
that helper sees the same wording here. The rest cover cases the SDK does not
check (bad parameter types, unsafe names, hard links) and follow its tone.
"""

from __future__ import annotations

MEMORY_ROOT = "/memories"

# --- SDK: results -----------------------------------------------------------
DIR_VIEW_HEADER = (
    "Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
)
FILE_VIEW_HEADER = "Here's the content of {path} with line numbers:"
CREATED = "File created successfully at: {path}"
STR_REPLACED = (
    "The memory file has been edited. Here is the snippet showing the change (with line numbers):"
)
INSERTED = "The file {path} has been edited."
DELETED = "Successfully deleted {path}"
RENAMED = "Successfully renamed {old_path} to {new_path}"

# --- SDK: errors -----------------------------------------------------------
PATH_PREFIX = "Path must start with /memories, got: {path}"
PATH_ESCAPES = "Path {path} would escape /memories directory"
SYMLINK_ESCAPES = "Path would escape /memories directory via symlink"
NOT_FOUND_FOR_VIEW = "The path {path} does not exist. Please provide a valid path."
NOT_FOUND = "The path {path} does not exist"
NOT_A_FILE = "The path {path} is not a file."
UNSUPPORTED_FILE_TYPE = "Unsupported file type for {path}"
TOO_MANY_LINES = "File {path} exceeds maximum line limit of 999,999 lines."
ALREADY_EXISTS = "File {path} already exists"
NO_MATCH = "No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."
MULTIPLE_MATCHES = (
    "No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
    "{lines}. Please ensure it is unique"
)
INVALID_INSERT_LINE = (
    "Invalid `insert_line` parameter: {insert_line}. It should be within the range [0, {count}]."
)
DELETE_ROOT = "Cannot delete the /memories directory itself"
DESTINATION_EXISTS = "The destination {path} already exists"
UNKNOWN_COMMAND = "Unknown command: {command}"

# --- Not in the SDK --------------------------------------------------------
MISSING_COMMAND = (
    "Missing required parameter `command`; expected one of: "
    "view, create, str_replace, insert, delete, rename."
)
COMMAND_NOT_OBJECT = "The memory command must be a JSON object, got {kind}."
MISSING_PARAMETER = "Missing required parameter `{name}` for command `{command}`."
WRONG_PARAMETER_TYPE = "Parameter `{name}` must be {expected}, got {actual}."
NOT_UNICODE_TEXT = "Parameter `{name}` is not valid Unicode text (it contains lone surrogates)."
INVALID_VIEW_RANGE = (
    "Invalid `view_range` parameter: {view_range}. It should be a list of two integers."
)
INVALID_PATH = "Invalid memory path {path}: {reason}"
NOT_A_DIRECTORY_PATH = "The path {path} ends with '/', but `{command}` needs a file path."
RENAME_ROOT = "Cannot rename the /memories directory itself"
RENAME_INTO_ITSELF = "Cannot move {old_path} into itself ({new_path})"
HARD_LINKED = (
    "The file {path} has more than one hard link; refusing to read it, because its content "
    "may belong to a file outside /memories."
)
TOO_DEEP = (
    "The path {path} would put files {depth} levels below /memories; the memory tool allows "
    "at most {limit}."
)
INVALID_VIEW_RANGE_END = (
    "Invalid `view_range` parameter: {view_range}. The end must be a line number or -1 "
    "(to the end of the file)."
)
NOT_UTF8 = "The file {path} is not valid UTF-8 text."
OS_FAILURE = "Could not {action} {path}: {reason}"
INTERNAL_FAILURE = "Internal error while running `{command}`: {detail}"
ROOT_UNUSABLE = "The memory root directory {root} cannot be used: {reason}"
