"""Promotion with uint16/32/64 and the float8 types: PyTorch 2.13 refuses most pairs; the table
here is written out by hand, then compared with torch.promote_types where torch is installed."""
import pytest

import tensorplug as tp

EXTRA = ["uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]
OTHERS = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128"]
REAL_FLOATS = {"float16", "bfloat16", "float32", "float64"}


def expected(a: str, b: str):
    """The promoted dtype's name, or None where PyTorch 2.13 has no rule."""
    if a == b:
        return a
    if a.startswith("float8") or b.startswith("float8"):
        return None
    for wide, other in ((a, b), (b, a)):
        if wide in ("uint16", "uint32", "uint64"):
            return other if other in REAL_FLOATS else None
    raise AssertionError("not a pair with an extra dtype")


PAIRS = [(a, b) for a in EXTRA for b in EXTRA + OTHERS] + [(b, a) for a in EXTRA for b in OTHERS]


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types(a, b):
    want = expected(a, b)
    if want is None:
        with pytest.raises(RuntimeError, match=f"Promotion for .* is not supported, attempted to promote {a} and {b}"):
            tp.promote_types(getattr(tp, a), getattr(tp, b))
    else:
        assert tp.promote_types(getattr(tp, a), getattr(tp, b)) is getattr(tp, want)


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_against_torch(a, b):
    torch = pytest.importorskip("torch")
    try:
        theirs = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).replace("torch.", "")
    except RuntimeError:
        theirs = None
    assert expected(a, b) == theirs


def test_operands_of_lower_priority_keep_the_tensor_dtype():
    u = tp.tensor([1, 2, 65535], dtype=tp.uint16)
    assert (u * 2).dtype is tp.uint16 and (u * 2).tolist() == [2, 4, 65534]
    assert (u * True).dtype is tp.uint16
    assert (u * tp.tensor(3)).dtype is tp.uint16  # a zero-dim int64 tensor: same category
    assert (u * 2.5).dtype is tp.float32 and (u * 2.5).tolist() == [2.5, 5.0, 163837.5]
    assert (u * tp.tensor(3.0)).dtype is tp.float32
    assert (u / 2).dtype is tp.float32
    f = tp.tensor([1.5, -2.0], dtype=tp.float8_e4m3fn)
    assert (f * 2.0).dtype is tp.float8_e4m3fn and (f * 2.0).float().tolist() == [3.0, -4.0]
    assert (f * tp.tensor(2.0)).dtype is tp.float8_e4m3fn


def test_binary_ops_refuse_pairs_without_a_rule():
    u = tp.tensor([1, 2], dtype=tp.uint16)
    with pytest.raises(RuntimeError, match="attempted to promote uint16 and int64"):
        u * tp.tensor([3, 4])
    with pytest.raises(RuntimeError, match="attempted to promote uint16 and int64"):
        tp.cat([u, tp.tensor([1])])
    f = tp.tensor([1.0], dtype=tp.float8_e5m2)
    with pytest.raises(RuntimeError, match="Promotion for float8 types is not supported"):
        f * tp.tensor([2.0])


def test_result_type_matches_torch():
    torch = pytest.importorskip("torch")
    for name in EXTRA:
        ours = tp.zeros(2, dtype=getattr(tp, name))
        theirs = torch.zeros(2, dtype=getattr(torch, name))
        for other in (2, 2.5, True):
            assert str(tp.result_type(ours, other)).split(".")[-1] == str(torch.result_type(theirs, other)).split(".")[-1]
