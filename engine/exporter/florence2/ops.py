"""Loads Florence Studio's operator library (libflorence_ops.so) into this Python process.

    from florence2 import ops
    ops.load_library()      # or ops.load_library("/usr/lib/florence-studio/ops/libflorence_ops.so")
    torch.ops.florence.linear_rows(x, weight, bias)
    torch.ops.florence.attend_one(q, k, v, mask)
    torch.ops.florence.attend_many(q, k, v, mask)
    torch.ops.florence.attend_windows(qkv, heads, scale)
    torch.ops.florence.attend_channels(qkv, groups, scale)
    torch.ops.florence.conv_tokens(x, h, w, weight, bias, stride, padding)
    torch.ops.florence.residual_dwconv(x, h, w, weight, bias)

The exported model calls these operators (see model.py's linear() and attend()), so scripting the
model and loading a package written by the exporter both need them. The library is built with the
C++ engine (engine/ops/) and installed in lib/florence-studio/ops/, next to share/florence-studio/
where these tools live; the programs pass the file they loaded themselves with --ops-library.
"""
import glob
import os
from typing import Optional

import torch

ENV = "FLORENCE_OPS_LIBRARY"
NAME = "libflorence_ops.so"
HERE = os.path.dirname(os.path.abspath(__file__))


class OpsLibraryError(Exception):
    pass


def _candidates() -> list:
    # The programs' data folder ($FLORENCE_STUDIO_DATA, as engine/platform/Paths.cpp reads it), then the
    # one these tools are in (PREFIX/share/florence-studio/tools/florence2, installed or built),
    # then a source checkout's build/ (tools/run-app.sh and run-tests.sh build there).
    data_dirs = [os.environ.get("FLORENCE_STUDIO_DATA"), os.path.join(HERE, "..", "..")]
    prefixes = [os.path.join(d, "..", "..") for d in data_dirs if d]
    prefixes.append(os.path.join(HERE, "..", "..", "..", "build"))
    found = []
    for prefix in prefixes:
        for pattern in ("lib*/florence-studio/ops/" + NAME, "lib/*/florence-studio/ops/" + NAME):
            found += sorted(glob.glob(os.path.join(os.path.normpath(prefix), pattern)))
    return found


def loaded() -> bool:
    """Whether this process has loaded the operator library (from any file)."""
    return has("linear_rows")


def has(name: str) -> bool:
    """Whether this process has the operator florence::NAME (a library built before an
    operator was added lacks it)."""
    try:
        getattr(torch.ops.florence, name)
        return True
    except (RuntimeError, AttributeError):
        return False


# What model.py calls; a library without one of them cannot script the model.
OPERATORS = ("linear_rows", "attend_one", "linear_int8", "attend_windows", "linear_int8_gelu",
             "attend_many", "attend_channels", "conv_tokens", "residual_dwconv")


def _check_operators(lib: str) -> None:
    missing = [name for name in OPERATORS if not has(name)]
    if missing:
        raise OpsLibraryError(
            f"{lib or 'the operator library this process loaded'} does not register "
            + ", ".join("florence::" + name for name in missing)
            + " (built from older sources? rebuild it with the engine)")


def find_library(path: Optional[str] = None) -> str:
    """PATH, else $FLORENCE_OPS_LIBRARY, else PREFIX/lib/florence-studio/ops/ of the layout of
    $FLORENCE_STUDIO_DATA or of these tools (build tree or installation), else build/ of the
    source checkout these tools are in."""
    if path:
        if not os.path.isfile(path):
            raise OpsLibraryError(f"{path} does not exist (--ops-library)")
        return path
    env = os.environ.get(ENV)
    if env:
        if not os.path.isfile(env):
            raise OpsLibraryError(f"{env} does not exist (${ENV})")
        return env
    found = _candidates()
    if not found:
        raise OpsLibraryError(
            f"cannot find {NAME}, the operator library built with Florence Studio's engine "
            f"(build/lib/florence-studio/ops/ or PREFIX/lib/florence-studio/ops/); pass "
            f"--ops-library PATH or set {ENV}")
    return found[0]


def load_library(path: Optional[str] = None) -> str:
    """Loads the library (see find_library) unless the operators are already there (a second
    copy could not register them again); returns the file loaded, or "" when none was needed."""
    if loaded():
        # A second copy could not register the operators again.
        _check_operators("")
        return ""
    lib = find_library(path)
    try:
        torch.ops.load_library(lib)
    except OSError as e:
        raise OpsLibraryError(f"cannot load {lib}: {e}") from None
    _check_operators(lib)
    return lib


def try_load_library() -> bool:
    """load_library() for readers of packages that may predate the operators: True when the
    operators are there afterwards, never raises."""
    try:
        load_library()
    except OpsLibraryError:
        pass
    return loaded()
