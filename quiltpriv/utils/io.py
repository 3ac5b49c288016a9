"""Output helpers: files are written atomically so a failure never leaves a partial file.

An output is written only to a regular file (replaced, keeping its permission bits) or to a
new name in an existing, writable folder: :func:`check_output_path` refuses directories and
special files, because the atomic rename would replace a named pipe, a device or a socket
with a regular file (as root, even ``/dev/full``). A symbolic link is followed, so the file
it points to is replaced and the link stays.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from quiltpriv.errors import ParameterError

_SPECIAL = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_output_path(path: str | os.PathLike[str], option: str = "output") -> Path:
    """Return the file to write for ``path``, or raise if writing there would destroy something.

    Parameters
    ----------
    path : str or path
        Where an output should go.
    option : str
        How the caller names it (``"-o"`` on the command line), for the message.

    Returns
    -------
    Path
        ``path`` with symbolic links resolved: an existing regular file or a new name whose
        folder exists and is writable.

    Raises
    ------
    ParameterError
        An empty path, a directory, a special file (FIFO, device, socket), a folder that does
        not exist or cannot be written.
    """
    if isinstance(path, bytes) or not isinstance(path, str | os.PathLike):
        raise ParameterError(f"{option}: the output path must be a file name (str or path), "
                             f"got {type(path).__name__}")
    text = os.fspath(path)
    if not text:
        raise ParameterError(f"{option}: the output path is empty")
    target = Path(os.path.realpath(text))
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise ParameterError(f"{option} {text}: a part of the path is not a folder") from None
    except OSError as exc:
        raise ParameterError(f"{option} {text}: cannot use it ({exc.strerror or exc})") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise ParameterError(f"{option} {text}: is a folder; give a file name")
        for test, kind in _SPECIAL:
            if test(st.st_mode):
                raise ParameterError(f"{option} {text}: is {kind}, not a regular file; outputs "
                                     "are written only to regular files (it would be replaced)")
        if not stat.S_ISREG(st.st_mode):
            raise ParameterError(f"{option} {text}: not a regular file")
    folder = target.parent
    if not folder.is_dir():
        raise ParameterError(f"{option} {text}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ParameterError(f"{option} {text}: folder {folder} is not writable")
    return target


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and a rename.

    ``path`` is checked by :func:`check_output_path` first (again, if the caller did: the
    file system may have changed since).
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ParameterError(f"data must be bytes, got {type(data).__name__}")
    target = check_output_path(path)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)  # replacing a file keeps its permissions
    except FileNotFoundError:
        # mkstemp creates 0600; give a new file the mode an ordinary open() would (umask).
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` atomically."""
    if not isinstance(text, str):
        raise ParameterError(f"text must be a str, got {type(text).__name__}")
    write_bytes_atomic(path, text.encode("utf-8"))
