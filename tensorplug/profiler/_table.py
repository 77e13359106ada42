"""The text table of ``EventList.table`` / ``key_averages().table``, laid out as PyTorch's."""
from __future__ import annotations

__all__ = ["build_table", "format_time", "SORT_KEYS"]

#: The columns a table can be sorted by (largest first); PyTorch's ``cuda_`` names are aliases.
SORT_KEYS = {
    "cpu_time": "cpu_time",
    "cpu_time_total": "cpu_time_total",
    "self_cpu_time_total": "self_cpu_time_total",
    "device_time": "device_time",
    "device_time_total": "device_time_total",
    "self_device_time_total": "self_device_time_total",
    "cuda_time": "device_time",
    "cuda_time_total": "device_time_total",
    "self_cuda_time_total": "self_device_time_total",
    "count": "count",
}


def format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _percent(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole > 0 else "0.00%"


def _count(row) -> int:
    return getattr(row, "count", 1)


def build_table(rows, *, sort_by, row_limit, name_width, header, top_level_events_only) -> str:
    rows = list(rows)
    if top_level_events_only:
        rows = [row for row in rows if getattr(row, "cpu_parent", None) is None]
    self_cpu_total = sum(row.self_cpu_time_total for row in rows)
    self_device_total = sum(row.self_device_time_total for row in rows)
    if sort_by is not None:
        if sort_by not in SORT_KEYS:
            raise ValueError(f"table(): cannot sort by {sort_by!r}; choose one of {', '.join(SORT_KEYS)}")
        attribute = SORT_KEYS[sort_by]
        rows.sort(key=lambda row: getattr(row, attribute) if attribute != "count" else _count(row), reverse=True)
    if row_limit is not None and row_limit >= 0:
        rows = rows[:row_limit]
    with_device = self_device_total > 0
    with_shapes = any(getattr(row, "input_shapes", None) is not None for row in rows)

    columns = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if with_device:
        columns += ["Self Device", "Self Device %", "Device total", "Device time avg"]
    columns += ["# of Calls", "Dispatched to"]
    if with_shapes:
        columns.append("Input Shapes")

    lines = []
    for row in rows:
        name = row.key if len(row.key) <= name_width else row.key[: name_width - 3] + "..."
        count = _count(row)
        cells = [
            name,
            _percent(row.self_cpu_time_total, self_cpu_total),
            format_time(row.self_cpu_time_total),
            _percent(row.cpu_time_total, self_cpu_total),
            format_time(row.cpu_time_total),
            format_time(row.cpu_time_total / count),
        ]
        if with_device:
            cells += [
                format_time(row.self_device_time_total),
                _percent(row.self_device_time_total, self_device_total),
                format_time(row.device_time_total),
                format_time(row.device_time_total / count),
            ]
        sources = getattr(row, "backend_sources", None)
        if sources is None:
            sources = [row.backend_source] if getattr(row, "backend_source", None) else []
        cells += [str(count), ", ".join(sources)]
        if with_shapes:
            cells.append(str(row.input_shapes) if row.input_shapes is not None else "")
        lines.append(cells)

    widths = [max(len(column), *(len(cells[i]) for cells in lines)) for i, column in enumerate(columns)]
    rule = "  ".join("-" * width for width in widths)

    def render(cells) -> str:
        # Names read left-aligned, numbers right-aligned, as in PyTorch's table.
        parts = [cells[0].ljust(widths[0])]
        parts += [cell.rjust(width) if column not in ("Dispatched to", "Input Shapes") else cell.ljust(width)
                  for cell, width, column in zip(cells[1:], widths[1:], columns[1:])]
        return "  ".join(parts).rstrip()

    out = [header] if header else []
    out += [rule, render(columns), rule, *(render(cells) for cells in lines), rule]
    out.append(f"Self CPU time total: {format_time(self_cpu_total)}")
    if with_device:
        out.append(f"Self Device time total: {format_time(self_device_total)}")
    return "\n".join(out) + "\n"
