"""The suite's reports: a versioned JSON document, a text summary table and an offline HTML page
(an op x dtype grid per category, each failure with its message and largest error)."""
from __future__ import annotations

import html
import json
import os
from collections import Counter, defaultdict

from ..backends.api import CONTRACT_VERSION, PRIMITIVES, REQUIRED_DTYPES
from .certificate import certificate, timestamp
from .opdb import ALL_DTYPES

SCHEMA = "tensorplug-conformance-report"
SCHEMA_VERSION = 1
_FAILING = ("fail", "error", "crash")


def build_report(records, device: str, backend=None, finished: float | None = None, fallback_ops=(), **extra) -> dict:
    """The JSON-ready report for ``records`` (the plugin's result records); ``fallback_ops`` are
    ops seen running through the CPU fallback during the run (``tp.backends.fallback_stats()``)."""
    import tensorplug

    items = [{k: r.get(k) for k in ("nodeid", "category", "op", "dtype", "level", "status", "message", "max_error", "duration", "sample")}
             for r in records]
    counts = Counter(i["status"] for i in items)
    required_failures = [i for i in items if i["status"] in _FAILING and i["level"] in ("required", "declared")]
    # A run restricted with --ops leaves out whole categories (copies, memory, random numbers): it
    # reports what it ran but never claims the certificate.
    partial = bool(extra.get("ops"))
    native = sorted(backend.kernels()) if backend is not None else []
    declared = sorted(getattr(backend, "dtypes", ()))
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "device": device,
        "tensorplug_version": tensorplug.__version__,
        "contract_version": CONTRACT_VERSION,
        "declared_dtypes": declared,
        "native_primitives": native,
        "created": timestamp(finished),
        "certificate": certificate(device, backend),
        **extra,
        "summary": {
            "total": len(items),
            "passed": counts["pass"],
            "failed": counts["fail"] + counts["error"],
            "crashed": counts["crash"],
            "not_supported": counts["not supported"],
            "required_failures": len(required_failures),
            "partial": partial,
            "conformant": not required_failures and not partial,
        },
        "conformance": conformance_level(items, declared, native, fallback_ops, partial, not required_failures),
        "by_category": _group(items, "category"),
        "by_dtype": _group(items, "dtype"),
        "items": items,
    }


def conformance_level(items, declared, native, fallback_ops, partial: bool, required_pass: bool) -> dict:
    """The machine-readable level: whether every required item passed, which declared optional
    dtypes pass fully, and which ops run only through the CPU fallback.

    ``level`` is "conformant" (every required and declared item passed in a full run),
    "required only" (required items pass, some declared optional dtype fails), "not conformant",
    or "partial" (an --ops run: no verdict).
    """
    optional = [d for d in declared if d not in REQUIRED_DTYPES]
    failing = {i["dtype"] for i in items if i["status"] in _FAILING}
    ran = {i["dtype"] for i in items if i["status"] != "not supported"}
    passing = [d for d in optional if d in ran and d not in failing]
    required_failing = any(i["status"] in _FAILING and i["level"] == "required" for i in items)
    # A primitive without a native kernel always runs through the fallback; other ops (fused or
    # composite kernels a backend registers for only some ops) are as observed during the run.
    fallback = sorted(set(PRIMITIVES) - set(native) | set(fallback_ops))
    if partial:
        level = "partial"
    elif required_pass:
        level = "conformant"
    elif not required_failing:
        level = "required only"
    else:
        level = "not conformant"
    return {
        "level": level,
        "required": not required_failing and not partial,
        "optional_dtypes_passing": passing,
        "optional_dtypes_failing": [d for d in optional if d in failing],
        "cpu_fallback_ops": fallback,
    }


def _group(items, key):
    groups = defaultdict(Counter)
    for i in items:
        groups[i[key]][i["status"]] += 1
    # "failed" means what the summary means by it (fail + error); crashes are counted apart.
    return {k: {"passed": c["pass"], "failed": c["fail"] + c["error"], "crashed": c["crash"], "not_supported": c["not supported"],
                "total": sum(c.values())} for k, c in groups.items()}


def _verdict(summary: dict) -> str:
    if summary.get("partial"):
        return "partial run (--ops): no verdict"
    return "conformant" if summary["conformant"] else "not conformant"


def summary_table(report: dict) -> str:
    s = report["summary"]
    lines = [f"tensorplug conformance: device {report['device']!r}  "
             f"{_verdict(s).upper()}  "
             f"({s['passed']} passed, {s['failed']} failed, {s['crashed']} crashed, {s['not_supported']} not supported, of {s['total']})"]
    lines.extend(f"  {label:<17} {value}" for label, value in _certificate_rows(report)[1:])
    for title, key in (("category", "by_category"), ("dtype", "by_dtype")):
        lines.append(f"\n{title:<14} {'pass / run':>12} {'failed':>7} {'crashed':>8} {'n/s':>6}")
        for name, c in sorted(report[key].items(), key=lambda kv: _order(kv[0])):
            run = c["total"] - c["not_supported"]
            lines.append(f"{name:<14} {c['passed']:>5} / {run:<5} {c['failed']:>7} {c['crashed']:>8} {c['not_supported']:>6}")
    ops = defaultdict(set)
    for i in report["items"]:
        if i["category"] == "forward":
            ops[i["op"]].add(i["status"])
    passing = sum(1 for st in ops.values() if not st & set(_FAILING))
    lines.append(f"\nops passing (forward, all run dtypes): {passing} / {len(ops)}")
    failures = [i for i in report["items"] if i["status"] in _FAILING]
    if failures:
        lines.append(f"\nfailures ({len(failures)}):")
        for i in failures[:25]:
            message = " ".join((i["message"] or "").split())[:220]
            lines.append(f"  [{i['level']}] {i['category']} {i['op']} {i['dtype']}: {i['status']}: {message}")
        if len(failures) > 25:
            lines.append(f"  ... {len(failures) - 25} more in report.json / report.html")
    return "\n".join(lines)


def _order(name):
    from ._cases import CATEGORIES

    if name in CATEGORIES:
        return (0, CATEGORIES.index(name), name)
    if name in ALL_DTYPES:
        return (1, ALL_DTYPES.index(name), name)
    return (2, 0, name)


def write_reports(report: dict, directory: str) -> tuple[str, str]:
    os.makedirs(directory, exist_ok=True)
    json_path = os.path.join(directory, "report.json")
    html_path = os.path.join(directory, "report.html")
    with open(json_path, "w") as f:
        json.dump(report, f, indent=1)
    with open(html_path, "w") as f:
        f.write(render_html(report))
    return json_path, html_path


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#1d232a;background:#fafbfc}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dee4;padding-bottom:4px}
.meta{color:#57606a;margin-bottom:14px}
.badge{display:inline-block;padding:3px 10px;border-radius:12px;font-weight:600;color:#fff}
.ok{background:#1a7f37}.bad{background:#cf222e}
.cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.card{background:#fff;border:1px solid #d8dee4;border-radius:6px;padding:8px 14px;min-width:110px}
.card b{display:block;font-size:20px}
table{border-collapse:collapse;background:#fff}
th,td{border:1px solid #d8dee4;padding:2px 6px;text-align:center;font-size:12px}
th{background:#f3f5f7;position:sticky;top:0} td.op{text-align:left;font-family:ui-monospace,Menlo,monospace;white-space:nowrap}
td.pass{background:#dafbe1;color:#1a7f37} td.fail,td.error{background:#ffd7d5;color:#a40e26;font-weight:700}
td.crash{background:#e9d5ff;color:#6b21a8;font-weight:700} td.ns{background:#eef0f2;color:#8c959f} td.none{background:#fff}
td a{color:inherit;text-decoration:none}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #d8dee4;font-size:12px}
.fail-list div{background:#fff;border:1px solid #d8dee4;border-left:4px solid #cf222e;margin:6px 0;padding:6px 10px}
.fail-list code{font-family:ui-monospace,Menlo,monospace;font-size:12px;white-space:pre-wrap;word-break:break-word}
.grid-wrap{overflow-x:auto;border:1px solid #d8dee4;display:inline-block;max-width:100%}
table.cert{margin:6px 0 14px} table.cert th{text-align:left;position:static} table.cert td{text-align:left;font-size:13px}
@media print{.grid-wrap{overflow:visible;max-width:none;border:0} th{position:static}}
"""

def _certificate_rows(report: dict) -> list[tuple[str, str]]:
    """(label, value) rows naming what was certified: device, driver, package, software, time."""
    cert = report.get("certificate") or {}
    plugin = cert.get("plugin") or {}
    package = plugin.get("distribution") or "unknown package"
    if plugin.get("version"):
        package += f" {plugin['version']}"
    run = ["quick mode (large samples skipped)" if report.get("quick") else "all samples"]
    if report.get("ops"):
        run.append(f"ops {report['ops']} (partial)")
    if report.get("duration_s") is not None:
        run.append(f"{report['duration_s']} s")
    return [
        ("device", report["device"]),
        ("devices / driver", "; ".join(cert.get("devices") or []) or "not described by the backend"),
        ("plugin package", package),
        ("entry point", plugin.get("entry_point") or "-"),
        ("tensorplug", f"{report['tensorplug_version']}, backend contract v{report['contract_version']}"),
        ("Python / NumPy", f"{cert.get('python_version', '?')} ({cert.get('python_implementation', '?')}) / {cert.get('numpy_version', '?')}"),
        ("OS / CPU", f"{cert.get('os', '?')} / {cert.get('cpu_model') or cert.get('machine') or '?'}"),
        ("declared dtypes", ", ".join(report["declared_dtypes"])),
        ("conformance level", _level_text(report)),
        ("finished", report["created"]),
        ("run", ", ".join(run)),
    ]


def _level_text(report: dict) -> str:
    level = report.get("conformance")
    if not level:
        return "-"
    passing = ", ".join(level["optional_dtypes_passing"]) or "none"
    fallback = ", ".join(level["cpu_fallback_ops"]) or "none"
    return f"{level['level']}; optional dtypes passing: {passing}; ops only through the CPU fallback: {fallback}"


def _certificate_html(report: dict) -> str:
    rows = "".join(f"<tr><th>{html.escape(label)}</th><td>{html.escape(str(value))}</td></tr>"
                   for label, value in _certificate_rows(report))
    return f"<table class='cert'>{rows}</table>"


_MARK = {"pass": "\u2713", "fail": "\u2717", "error": "\u2717", "crash": "\u2620", "not supported": "n/s"}


def render_html(report: dict) -> str:
    """One self-contained page: no scripts, fonts or images from outside."""
    s = report["summary"]
    items = report["items"]
    failures = [i for i in items if i["status"] in _FAILING]
    anchor = {id(i): f"f{k}" for k, i in enumerate(failures)}
    out = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>tensorplug conformance: {html.escape(report['device'])}</title><style>{_CSS}</style></head><body>",
        f"<h1>tensorplug conformance report: <code>{html.escape(report['device'])}</code> "
        f"<span class='badge {'ok' if s['conformant'] else 'bad'}'>{_verdict(s)}</span></h1>",
        _certificate_html(report),
        "<div class='cards'>",
    ]
    for label, value in (("items", s["total"]), ("passed", s["passed"]), ("failed", s["failed"]), ("crashed", s["crashed"]),
                         ("not supported", s["not_supported"]), ("required failures", s["required_failures"])):
        out.append(f"<div class='card'>{label}<b>{value}</b></div>")
    out.append("</div><div class='legend'><span class='pass' style='background:#dafbe1'>\u2713 pass</span>"
               "<span style='background:#ffd7d5'>\u2717 fail</span><span style='background:#e9d5ff'>\u2620 crash</span>"
               "<span style='background:#eef0f2'>n/s not supported (optional dtype not declared)</span>"
               "<span>blank: the op does not take this dtype</span></div>")
    out.append("<h2>Summary by category</h2><table><tr><th>category</th><th>passed</th><th>run</th><th>failed</th><th>crashed</th><th>not supported</th></tr>")
    for name, c in sorted(report["by_category"].items(), key=lambda kv: _order(kv[0])):
        out.append(f"<tr><td class='op'>{html.escape(name)}</td><td>{c['passed']}</td><td>{c['total'] - c['not_supported']}</td>"
                   f"<td class='{'fail' if c['failed'] else 'pass'}'>{c['failed']}</td>"
                   f"<td class='{'crash' if c['crashed'] else 'pass'}'>{c['crashed']}</td><td>{c['not_supported']}</td></tr>")
    out.append("</table>")
    by_category = defaultdict(list)
    for i in items:
        by_category[i["category"]].append(i)
    for category in sorted(by_category, key=_order):
        group = by_category[category]
        dtypes = sorted({i["dtype"] for i in group}, key=_order)
        # Ops with a failure first, so a long grid does not hide them.
        failing_ops = {i["op"] for i in group if i["status"] in _FAILING}
        ops = sorted(dict.fromkeys(i["op"] for i in group), key=lambda op: op not in failing_ops)
        cells = {(i["op"], i["dtype"]): i for i in group}
        out.append(f"<h2>{html.escape(category)} ({sum(1 for i in group if i['status'] == 'pass')} / "
                   f"{sum(1 for i in group if i['status'] != 'not supported')} passed)</h2><div class='grid-wrap'><table><tr><th>op</th>")
        out.extend(f"<th>{html.escape(d)}</th>" for d in dtypes)
        out.append("</tr>")
        for op in ops:
            out.append(f"<tr><td class='op'>{html.escape(op)}</td>")
            for d in dtypes:
                i = cells.get((op, d))
                if i is None:
                    out.append("<td class='none'></td>")
                    continue
                cls = {"not supported": "ns"}.get(i["status"], i["status"])
                title = html.escape((i["message"] or i["status"])[:300], quote=True)
                mark = _MARK.get(i["status"], "?")
                if id(i) in anchor:
                    mark = f"<a href='#{anchor[id(i)]}'>{mark}</a>"
                out.append(f"<td class='{cls}' title='{title}'>{mark}</td>")
            out.append("</tr>")
        out.append("</table></div>")
    out.append(f"<h2>Failures ({len(failures)})</h2><div class='fail-list'>")
    for i in failures:
        err = "" if i["max_error"] is None else f" &middot; max error {i['max_error']:.3g}"
        out.append(f"<div id='{anchor[id(i)]}'><b>{html.escape(i['category'])} &middot; {html.escape(i['op'])} &middot; "
                   f"{html.escape(i['dtype'])}</b> ({html.escape(i['level'])}, {i['status']}{err})<br>"
                   f"<code>{html.escape(i['message'] or '')}</code></div>")
    if not failures:
        out.append("<p>None.</p>")
    out.append("</div></body></html>")
    return "\n".join(out)
