"""Reading the small files of a checkpoint folder someone else made: configs, tokenizer files,
preprocessor configs, manifests.

Each is opened as a regular file only (a FIFO would block the exporter forever, /dev/zero would
be read until the kernel kills it) and read up to a bound checked before reading; every failure
is a FileError whose message names the file and says what is wrong in words, never a bare
"[Errno 40]" or RecursionError.

    config = files.read_json(os.path.join(folder, "config.json"))   # FileError on any problem
    files.copy_regular(src, dst)
"""
import errno
import json
import os
import stat

# Far above any real one: Florence-2's tokenizer.json is 2 MB, its configs a few KB.
MAX_JSON_BYTES = 64 << 20
MAX_TOKENIZER_BYTES = 64 << 20


class FileError(Exception):
    """A file that cannot be read as asked, with a message naming it."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a file"
    return "is not a regular file"


def os_error_message(path: str, e: OSError) -> str:
    """An OSError in words, naming `path` (never "[Errno 40] Too many levels of symbolic
    links")."""
    if e.errno == errno.ENOENT:
        return f"{path} is missing"
    if e.errno == errno.ELOOP:
        return f"{path} is a link that leads back to itself (a link loop)"
    if e.errno == errno.EISDIR:
        return f"{path} is a folder, not a file"
    if e.errno in (errno.EACCES, errno.EPERM):
        return f"{path} cannot be read (permission denied)"
    return f"{path} cannot be read ({e.strerror or type(e).__name__})"


def open_regular(path: str, max_bytes: int):
    """A binary file object for `path` if it is (or a link leads to) a regular file of at most
    `max_bytes`; else FileError. Never blocks: opened non-blocking, the type checked on the open
    descriptor, so swapping in a FIFO between a check and the open does not help."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise FileError(os_error_message(path, e)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileError(f"{path} {_kind(st.st_mode)}")
        if st.st_size > max_bytes:
            raise FileError(f"{path} is {st.st_size} bytes, more than the {max_bytes} the "
                            "exporter reads")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str, max_bytes: int) -> bytes:
    """The whole of a regular file of at most `max_bytes` (also if it grows while read)."""
    with open_regular(path, max_bytes) as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise FileError(os_error_message(path, e)) from None
    if len(data) > max_bytes:
        raise FileError(f"{path} grew past {max_bytes} bytes while it was read")
    return data


def read_json(path: str, max_bytes: int = MAX_JSON_BYTES):
    """The JSON document of a regular file of at most `max_bytes`."""
    data = read_bytes(path, max_bytes)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise FileError(f"{path} is not valid JSON (not UTF-8 text at byte {e.start})") from None
    except RecursionError:
        raise FileError(f"{path} is not a usable JSON file (nested too deeply)") from None
    except ValueError as e:
        raise FileError(f"{path} is not valid JSON ({e})") from None


def copy_regular(src: str, dst: str, max_bytes: int = MAX_TOKENIZER_BYTES) -> None:
    """Copies a regular file of at most `max_bytes` (shutil.copyfile would open a FIFO and wait,
    or copy a device without end)."""
    data = read_bytes(src, max_bytes)
    with open(dst, "wb") as f:
        f.write(data)
