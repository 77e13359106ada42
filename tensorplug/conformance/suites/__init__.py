"""The conformance suite's test modules (collected by pytest with the conformance plugin)."""


def cases(kind: str):
    """Parametrize a test's ``case`` argument with the plugin's items of ``kind``."""

    def mark(fn):
        fn.conformance_cases = kind
        return fn

    return mark


def item(category: str, op: str, dtype: str = "-", level: str = "required"):
    """Describe a non-database test as one report item."""

    def mark(fn):
        fn.conformance = {"category": category, "op": op, "dtype": dtype, "level": level}
        return fn

    return mark
