"""Old parameter and attribute names of the public API, accepted for one release with a warning.

quiltpriv uses one word for each thing in every public signature: the network is ``theta``
(``model`` means only a GAP joint model), the record count is ``records``, the sensitive
attribute is ``sensitive``, the privacy parameter is ``epsilon`` and a time budget in seconds is
``time_limit`` (``tests/integration/test_vocabulary.py`` reads every signature). Where a public
name changed, the old one still works until :data:`quiltpriv._compat.REMOVED_IN`, with a
:class:`DeprecationWarning` naming the new one:

- :func:`renamed_keywords` for a function's keyword arguments;
- :func:`renamed_fields` for a frozen dataclass's fields (the old keyword of its constructor and
  a read-only property of the old name);
- :func:`reordered_arguments` for a class whose constructor's positional order changed;
- :func:`clock_deadline_keyword` for a function whose ``deadline=`` (a ``time.monotonic()``
  value) became ``time_limit=`` (seconds from the call);
- :func:`deprecated_constant` for a module constant that became a setting (a module's
  ``__getattr__`` returns its old value, with a warning naming the setting).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from quiltpriv.errors import ParameterError
from quiltpriv.utils.stack import caller_stacklevel, user_stacklevel

__all__ = ["clock_deadline_keyword", "deprecated_constant", "deprecated_name", "renamed_fields",
           "renamed_keywords", "reordered_arguments"]

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


def _removed_in() -> str:
    from quiltpriv._compat import REMOVED_IN

    return REMOVED_IN


def deprecated_name(where: str, old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn once per call site that ``old`` is the deprecated name of ``new`` in ``where``.

    Parameters
    ----------
    where : str
        The function or class whose name changed, as the user writes it.
    old, new : str
        The old and the new name.
    stacklevel : int
        Passed to :func:`warnings.warn`: the frame the warning names (the user's line).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     deprecated_name("plan", "model", "theta")
    >>> print(caught[0].message)
    plan: 'model' is deprecated, use 'theta' (the old name goes in quiltpriv 0.3.0)
    """
    warnings.warn(f"{where}: {old!r} is deprecated, use {new!r} (the old name goes in "
                  f"quiltpriv {_removed_in()})", DeprecationWarning, stacklevel=stacklevel)


def deprecated_constant(module: str, constants: dict[str, tuple[object, str]],
                        name: str) -> object:
    """A module constant that became a setting, for the module's ``__getattr__``: its old value,
    with a :class:`DeprecationWarning` naming what to use instead (the code no longer reads the
    constant, so assigning it changes nothing: the warning says so).

    Parameters
    ----------
    module : str
        The module's ``__name__``.
    constants : dict of str to (object, str)
        Old name -> (its value, the setting that replaced it).
    name : str
        The attribute asked for; AttributeError when it is not one of ``constants``.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     deprecated_constant("m", {"RATIO": (100, "Settings.ratio")}, "RATIO")
    100
    >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
    m.RATIO is deprecated: the code reads Settings.ratio, not this constant (the old name goes
    in quiltpriv 0.3.0)
    """
    if name not in constants:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    value, use = constants[name]
    warnings.warn(f"{module}.{name} is deprecated: the code reads {use}, not this constant (the "
                  f"old name goes in quiltpriv {_removed_in()})", DeprecationWarning,
                  stacklevel=user_stacklevel())
    return value


def _translate(where: str, renames: dict[str, str], kwargs: dict[str, Any]) -> None:
    """Move each old keyword of ``kwargs`` to its new name, warning; both given is an error."""
    for old, new in renames.items():
        if old in kwargs:
            if new in kwargs:
                raise ParameterError(f"{where}: give {new}= only ({old}= is its deprecated "
                                     "name)")
            deprecated_name(where, old, new, stacklevel=4)
            kwargs[new] = kwargs.pop(old)


def renamed_keywords(**renames: str) -> Callable[[F], F]:
    """Decorator: the function also accepts each old keyword (``old="new"``), with a warning.

    The wrapped function keeps its signature (``inspect.signature`` shows the new names only).
    Giving both the old and the new keyword raises :class:`~quiltpriv.errors.ParameterError`.

    Parameters
    ----------
    **renames : str
        Old keyword name -> new keyword name.

    Examples
    --------
    >>> import warnings
    >>> @renamed_keywords(eps="epsilon")
    ... def scale(sensitivity, epsilon):
    ...     return sensitivity / epsilon
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     scale(2.0, eps=0.5)
    4.0
    >>> caught[0].category.__name__
    'DeprecationWarning'
    """

    def decorate(func: F) -> F:
        where = func.__qualname__

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                _translate(where, renames, kwargs)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def clock_deadline_keyword(by_deadline: Callable[..., Any]) -> Callable[[F], F]:
    """Decorator: the function, which takes ``time_limit=`` (seconds), also accepts its old
    ``deadline=`` (a ``time.monotonic()`` value), with a warning.

    A call with ``deadline=`` goes to ``by_deadline``, which takes the same arguments with
    ``deadline`` for ``time_limit``: the old meaning is kept exactly (a deadline already past
    stops at the first check, which no positive ``time_limit`` says). Giving both raises
    :class:`~quiltpriv.errors.ParameterError`. Put it below :func:`renamed_keywords`, so that
    old keywords are translated first and every warning names the caller's line.

    Parameters
    ----------
    by_deadline : callable
        The function's form with ``deadline=`` in place of ``time_limit=``.

    Examples
    --------
    >>> import time, warnings
    >>> def wait(seconds, *, deadline=None):
    ...     return deadline
    >>> @clock_deadline_keyword(wait)
    ... def wait_for(seconds, *, time_limit=None):
    ...     return None if time_limit is None else time.monotonic() + time_limit
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     wait_for(1.0, deadline=123.0)
    123.0
    >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
    wait_for: 'deadline' (a time.monotonic() value) is deprecated, use 'time_limit' (seconds
    from the call) (the old name goes in quiltpriv 0.3.0)
    """

    def decorate(func: F) -> F:
        where = func.__qualname__

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if "deadline" not in kwargs:
                return func(*args, **kwargs)
            if kwargs.pop("time_limit", None) is not None:
                raise ParameterError(f"{where}: give time_limit= only (deadline= is its "
                                     "deprecated form)")
            warnings.warn(f"{where}: 'deadline' (a time.monotonic() value) is deprecated, use "
                          f"'time_limit' (seconds from the call) (the old name goes in "
                          f"quiltpriv {_removed_in()})", DeprecationWarning,
                          stacklevel=caller_stacklevel(_this_module))
            return by_deadline(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _this_module(filename: str) -> bool:
    """Whether a frame of ``filename`` is this module's (the frames a deprecated keyword's
    warning steps over: only these, so that a deprecated call inside the package names the
    package's line, where it must be fixed)."""
    return filename == __file__


def renamed_fields(**renames: str) -> Callable[[C], C]:
    """Class decorator for a (frozen) dataclass whose fields were renamed (``old="new"``).

    The constructor accepts each old keyword with a warning, and the instance has a read-only
    property of each old name that returns the new field, with a warning. JSON written by
    ``to_dict`` is the class's own business (files keep their keys).

    Parameters
    ----------
    **renames : str
        Old field name -> new field name.

    Examples
    --------
    >>> import dataclasses, warnings
    >>> @renamed_fields(node="sensitive")
    ... @dataclasses.dataclass(frozen=True)
    ... class Row:
    ...     sensitive: str
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     row = Row(node="income")
    ...     old = row.node
    >>> (row.sensitive, old, len(caught))
    ('income', 'income', 2)
    """

    def decorate(cls: C) -> C:
        init = cls.__init__  # type: ignore[misc]
        where = cls.__name__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if kwargs:
                _translate(where, renames, kwargs)
            init(self, *args, **kwargs)

        cls.__init__ = __init__  # type: ignore[misc]
        for old, new in renames.items():
            setattr(cls, old, _old_property(where, old, new))
        return cls

    return decorate


def reordered_arguments(old_order: tuple[str, ...], positional: int) -> Callable[[C], C]:
    """Class decorator: a constructor that took ``old_order`` positionally now takes only its
    first ``positional`` arguments so; a call with more is read in the old order, with a warning.

    Parameters
    ----------
    old_order : tuple of str
        The old constructor's parameters, in their old positional order.
    positional : int
        How many leading arguments the new constructor takes positionally (the rest are
        keyword-only), so that a call with more positional arguments is an old call.

    Examples
    --------
    >>> import dataclasses, warnings
    >>> @reordered_arguments(("attribute", "lower", "upper", "records"), 2)
    ... @dataclasses.dataclass(frozen=True)
    ... class Sum:
    ...     attribute: str
    ...     records: int
    ...     lower: float = dataclasses.field(kw_only=True)
    ...     upper: float = dataclasses.field(kw_only=True)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old = Sum("x", 0.0, 1.0, 10)
    >>> old == Sum("x", 10, lower=0.0, upper=1.0), caught[0].category.__name__
    (True, 'DeprecationWarning')
    """

    def decorate(cls: C) -> C:
        init = cls.__init__  # type: ignore[misc]
        where = cls.__name__
        new = ", ".join(old_order[:positional])

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if len(args) > positional:
                if len(args) > len(old_order):
                    raise ParameterError(f"{where}: at most {positional} positional arguments "
                                         f"({new}), got {len(args)}")
                named = dict(zip(old_order, args, strict=False))
                if clash := sorted(set(named) & set(kwargs)):
                    raise ParameterError(f"{where}: {', '.join(clash)} given twice")
                warnings.warn(
                    f"{where}: positional arguments in the old order ({', '.join(old_order)}) "
                    f"are deprecated; pass {new} positionally and the rest by keyword (the old "
                    f"order goes in quiltpriv {_removed_in()})", DeprecationWarning, stacklevel=2)
                args, kwargs = (), {**named, **kwargs}
            init(self, *args, **kwargs)

        cls.__init__ = __init__  # type: ignore[misc]
        return cls

    return decorate


def _old_property(where: str, old: str, new: str) -> property:
    def get(self: Any) -> Any:
        deprecated_name(where, old, new)
        return getattr(self, new)

    get.__doc__ = f"Deprecated name of :attr:`{new}`."
    get.__deprecated_alias__ = True  # type: ignore[attr-defined]  # for the vocabulary test
    return property(get)
