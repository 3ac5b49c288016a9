"""Data files shipped with quiltpriv (see README.md in this folder for sources and licences)."""
