"""The report as JUnit XML, the format CI systems (Jenkins, GitLab, GitHub actions, Azure) read.

One ``<testsuite>`` per category, one ``<testcase>`` per report item: a failed check is a
``<failure>``, an error outside the check and a crash are ``<error>``\\ s (a crash's message
names the sample that was running), and an item on a dtype the backend did not declare is
``<skipped>``. The certificate fields are ``<properties>`` of the enclosing ``<testsuites>``'
first suite, so a CI artifact still says what was tested.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict

__all__ = ["junit_xml", "write_junit"]

_KIND = {"fail": "failure", "error": "error", "crash": "error", "not supported": "skipped"}
#: Characters XML 1.0 cannot hold at all (a kernel's error message may carry any byte).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _clean(text) -> str:
    return _NOT_XML.sub("\ufffd", "" if text is None else str(text))


def _properties(report: dict) -> list[tuple[str, str]]:
    cert = report.get("certificate") or {}
    plugin = cert.get("plugin") or {}
    summary = report["summary"]
    level = report.get("conformance") or {}
    pairs = [
        ("device", report["device"]),
        ("devices", "; ".join(cert.get("devices") or [])),
        ("plugin.distribution", plugin.get("distribution")),
        ("plugin.version", plugin.get("version")),
        ("plugin.entry_point", plugin.get("entry_point")),
        ("tensorplug_version", report.get("tensorplug_version")),
        ("contract_version", report.get("contract_version")),
        ("python_version", cert.get("python_version")),
        ("numpy_version", cert.get("numpy_version")),
        ("os", cert.get("os")),
        ("cpu_model", cert.get("cpu_model")),
        ("created", report.get("created")),
        ("conformant", summary["conformant"]),
        ("partial", summary.get("partial", False)),
        ("conformance_level", level.get("level")),
    ]
    return [(k, _clean(v)) for k, v in pairs]


def junit_xml(report: dict) -> ET.ElementTree:
    by_category = defaultdict(list)
    for item in report["items"]:
        by_category[item["category"]].append(item)
    root = ET.Element("testsuites", name=f"tensorplug conformance: {report['device']}")
    totals = defaultdict(int)
    for index, (category, items) in enumerate(by_category.items()):
        counts = defaultdict(int)
        for item in items:
            counts[_KIND.get(item["status"], "passed")] += 1
        suite = ET.SubElement(root, "testsuite", name=f"{report['device']}.{category}", tests=str(len(items)),
                              failures=str(counts["failure"]), errors=str(counts["error"]), skipped=str(counts["skipped"]),
                              time=f"{sum(i['duration'] or 0.0 for i in items):.3f}", timestamp=str(report.get("created", "")))
        if index == 0:
            props = ET.SubElement(suite, "properties")
            for name, value in _properties(report):
                ET.SubElement(props, "property", name=name, value=value)
        for item in items:
            _testcase(suite, report["device"], item)
        for kind in ("failure", "error", "skipped"):
            totals[kind] += counts[kind]
        totals["tests"] += len(items)
    root.set("tests", str(totals["tests"]))
    root.set("failures", str(totals["failure"]))
    root.set("errors", str(totals["error"]))
    root.set("skipped", str(totals["skipped"]))
    return ET.ElementTree(root)


def _testcase(suite: ET.Element, device: str, item: dict) -> None:
    name = item["op"] if item["dtype"] in ("-", None) else f"{item['op']} [{item['dtype']}]"
    case = ET.SubElement(suite, "testcase", classname=f"tensorplug.conformance.{device}.{item['category']}", name=_clean(name),
                         time=f"{item['duration'] or 0.0:.4f}")
    kind = _KIND.get(item["status"])
    if kind is None:
        return
    message = _clean(item.get("message") or item["status"])
    if kind == "skipped":
        ET.SubElement(case, "skipped", message=message)
        return
    detail = ET.SubElement(case, kind, message=message.splitlines()[0][:500] if message else "",
                           type="crash" if item["status"] == "crash" else item["status"])
    lines = [f"level: {item['level']}", f"node: {item['nodeid']}", message]
    if item.get("max_error") is not None:
        lines.insert(0, f"max error: {item['max_error']:.6g}")
    detail.text = "\n".join(lines)


def write_junit(report: dict, path: str) -> str:
    tree = junit_xml(report)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return path
