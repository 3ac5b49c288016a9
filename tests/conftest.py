"""Shared pytest hooks."""

import sys


def pytest_terminal_summary(terminalreporter):
    # Test modules that fuzz inputs keep a TRIED counter; report the totals in every run.
    lines = []
    for name, module in sorted(sys.modules.items()):
        tried = getattr(module, "TRIED", None)
        if name.split(".")[-1].startswith("test_") and isinstance(tried, dict) and tried:
            total = sum(v for v in tried.values() if isinstance(v, int))
            lines.append(f"{name.split('.')[-1]}: {total} hostile cases tried "
                         f"({', '.join(f'{k} {v}' for k, v in sorted(tried.items()))})")
    if lines:
        terminalreporter.write_sep("-", "hostile input")
        for line in lines:
            terminalreporter.write_line(line)
