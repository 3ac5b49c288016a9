"""The version of quiltpriv, in a module of its own so that any module can read it without
importing the package's top level."""

__version__ = "0.2.0"
