"""The text table of ``EventList.table`` / ``key_averages().table``, laid out as PyTorch's."""
from __future__ import annotations

__all__ = ["build_table", "format_memory", "format_time", "SORT_KEYS"]

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
    "cpu_memory_usage": "cpu_memory_usage",
    "self_cpu_memory_usage": "self_cpu_memory_usage",
    "device_memory_usage": "device_memory_usage",
    "self_device_memory_usage": "self_device_memory_usage",
    "cuda_memory_usage": "device_memory_usage",
    "self_cuda_memory_usage": "self_device_memory_usage",
    "flops": "flops",
}


def format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def format_memory(nbytes: int) -> str:
    """Bytes as PyTorch's tables show them (binary units, two decimals; negative for frees)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _flops_unit(rows) -> tuple[str, float]:
    """The FLOPs column's unit for the largest count in ``rows`` (FLOPs, KFLOPs, ... PFLOPs)."""
    largest = max((getattr(row, "flops", 0) or 0 for row in rows), default=0)
    units = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")
    index = 0
    while index + 1 < len(units) and largest >= 1000 ** (index + 1):
        index += 1
    return units[index], float(1000 ** index)


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
        rows.sort(key=lambda row: (getattr(row, attribute) or 0) if attribute != "count" else _count(row), reverse=True)
    if row_limit is not None and row_limit >= 0:
        rows = rows[:row_limit]
    with_device = self_device_total > 0
    with_shapes = any(getattr(row, "input_shapes", None) is not None for row in rows)
    with_cpu_memory = any(getattr(row, "cpu_memory_usage", 0) or getattr(row, "self_cpu_memory_usage", 0) for row in rows)
    with_device_memory = any(getattr(row, "device_memory_usage", 0) or getattr(row, "self_device_memory_usage", 0)
                             for row in rows)
    with_flops = any(getattr(row, "flops", 0) for row in rows)
    # Stacks show for averages grouped by them (key_averages(group_by_stack_n=...)), as in PyTorch.
    with_stack = any(isinstance(getattr(row, "backend_sources", None), list) and getattr(row, "stack", None)
                     for row in rows)
    flops_unit, flops_scale = _flops_unit(rows)

    columns = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if with_device:
        columns += ["Self Device", "Self Device %", "Device total", "Device time avg"]
    if with_cpu_memory:
        columns += ["CPU Mem", "Self CPU Mem"]
    if with_device_memory:
        columns += ["Device Mem", "Self Device Mem"]
    columns += ["# of Calls", "Dispatched to"]
    if with_flops:
        columns.append(f"Total {flops_unit}")
    if with_shapes:
        columns.append("Input Shapes")
    if with_stack:
        columns.append("Source Location")

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
        if with_cpu_memory:
            cells += [format_memory(row.cpu_memory_usage), format_memory(row.self_cpu_memory_usage)]
        if with_device_memory:
            cells += [format_memory(row.device_memory_usage), format_memory(row.self_device_memory_usage)]
        sources = getattr(row, "backend_sources", None)
        if sources is None:
            sources = [row.backend_source] if getattr(row, "backend_source", None) else []
        cells += [str(count), ", ".join(sources)]
        if with_flops:
            cells.append(f"{row.flops / flops_scale:.3f}" if getattr(row, "flops", 0) else "--")
        if with_shapes:
            cells.append(str(row.input_shapes) if row.input_shapes is not None else "")
        stack = list(getattr(row, "stack", None) or []) if with_stack else []
        if with_stack:
            cells.append(stack[0] if stack else "")
        lines.append(cells)
        for frame in stack[1:]:  # the further frames on lines of their own, as PyTorch prints them
            lines.append([""] * (len(columns) - 1) + [frame])

    widths = [max(len(column), *(len(cells[i]) for cells in lines)) for i, column in enumerate(columns)]
    rule = "  ".join("-" * width for width in widths)

    def render(cells) -> str:
        # Names read left-aligned, numbers right-aligned, as in PyTorch's table.
        parts = [cells[0].ljust(widths[0])]
        parts += [cell.rjust(width) if column not in ("Dispatched to", "Input Shapes", "Source Location") else cell.ljust(width)
                  for cell, width, column in zip(cells[1:], widths[1:], columns[1:])]
        return "  ".join(parts).rstrip()

    out = [header] if header else []
    out += [rule, render(columns), rule, *(render(cells) for cells in lines), rule]
    out.append(f"Self CPU time total: {format_time(self_cpu_total)}")
    if with_device:
        out.append(f"Self Device time total: {format_time(self_device_total)}")
    return "\n".join(out) + "\n"
