"""Malformed or hostile safetensors files raise clear ValueErrors, never crash or over-allocate."""
import io
import json
import struct

import pytest

import tensorplug as tp


def _file(header, data=b"", length=None, pad=True):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    if pad:
        raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def _load(blob):
    return tp.load(io.BytesIO(blob))


def test_valid_handmade_file_loads():
    """The handmade format used below is right: a correct file loads."""
    out = _load(_file({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, struct.pack("<2f", 1.0, 2.0)))
    assert out["x"].tolist() == [1.0, 2.0]


@pytest.mark.parametrize("blob", [b"", b"\x08\x00\x00", b"\x01"], ids=["empty", "3-bytes", "1-byte"])
def test_shorter_than_length_prefix(blob):
    """Files shorter than the 8-byte length are truncated."""
    with pytest.raises(ValueError, match="truncated"):
        _load(blob)


def test_truncated_header():
    """A header length past the end of the file is refused."""
    blob = _file({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0\0\0\0")
    with pytest.raises(ValueError, match="truncated"):
        _load(blob[:20])


def test_truncated_data():
    """Data offsets past the end of the data are refused."""
    blob = _file({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 16)
    with pytest.raises(ValueError, match="beyond the 8 bytes of data"):
        _load(blob[:-8])


def test_absurd_header_length():
    """A header length over 100 MB is refused before anything is read or allocated."""
    with pytest.raises(ValueError, match="limit"):
        _load(struct.pack("<Q", 2**62) + b"{}")
    with pytest.raises(ValueError, match="limit"):
        _load(struct.pack("<Q", 200_000_000) + b"{}")


def test_header_longer_than_file():
    """A header length below the limit but beyond the file size is refused."""
    with pytest.raises(ValueError, match="has only 2 bytes"):
        _load(struct.pack("<Q", 50_000_000) + b"{}")


def test_header_length_without_seek():
    """On a stream that cannot seek, a too-long header is reported as truncated."""

    class Stream(io.RawIOBase):
        def __init__(self, data):
            self._inner = io.BytesIO(data)

        def readable(self):
            return True

        def read(self, n=-1):
            return self._inner.read(n)

    with pytest.raises(ValueError, match="truncated"):
        tp.load(Stream(struct.pack("<Q", 1000) + b"{}"))


@pytest.mark.parametrize("header", [b"\xff\xfe{}", b"{not json", b"[1, 2]", b"\"x\""], ids=["utf8", "json", "list", "string"])
def test_bad_header_json(header):
    """Headers that are not a UTF-8 JSON object are refused."""
    with pytest.raises(ValueError, match="header"):
        _load(_file(header))


def test_overlapping_offsets():
    """Two tensors whose bytes overlap are refused."""
    header = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}
    with pytest.raises(ValueError, match="overlapping"):
        _load(_file(header, b"\0" * 12))


@pytest.mark.parametrize("offsets", [[8, 4], [-4, 0], [0, 2**70], "0,4", [0], [0.0, 4.0], [True, 4]])
def test_invalid_offsets(offsets):
    """Reversed, negative, huge or ill-typed data_offsets are refused."""
    with pytest.raises(ValueError, match="data_offsets"):
        _load(_file({"x": {"dtype": "U8", "shape": [4], "data_offsets": offsets}}, b"\0" * 8))


@pytest.mark.parametrize("dtype", ["F8_E8M0", "F4", "complex64", None, 3, [1], {"a": 1}])
def test_unknown_dtype(dtype):
    """dtype names tensorplug does not have are refused by name."""
    with pytest.raises(ValueError, match="does not support"):
        _load(_file({"x": {"dtype": dtype, "shape": [1], "data_offsets": [0, 1]}}, b"\0"))


@pytest.mark.parametrize("shape", [[3], [2**40, 2**40], [-1], [1.5], "4", [True]])
def test_shape_not_matching_bytes(shape):
    """A shape whose byte size differs from the offsets' span (or is invalid) is refused without allocating."""
    with pytest.raises(ValueError, match="shape"):
        _load(_file({"x": {"dtype": "F32", "shape": shape, "data_offsets": [0, 8]}}, b"\0" * 8))


def test_entry_not_an_object():
    """A tensor entry that is not an object is refused."""
    with pytest.raises(ValueError, match="must be an object"):
        _load(_file({"x": [1, 2]}))


def test_metadata_must_be_strings():
    """__metadata__ must map strings to strings."""
    with pytest.raises(ValueError, match="__metadata__"):
        _load(_file({"__metadata__": {"a": 1}}))


def test_structure_refers_to_missing_tensor():
    """Structure metadata naming a tensor the file lacks is refused."""
    structure = json.dumps({"t": "dict", "keys": [{"t": "value", "v": "w"}], "values": [{"t": "tensor", "name": "ghost"}]})
    with pytest.raises(ValueError, match="'ghost'"):
        _load(_file({"__metadata__": {"tensorplug.structure": structure}}))


@pytest.mark.parametrize(
    "structure",
    ["{not json", json.dumps({"t": "set"}), json.dumps([1]), json.dumps({"t": "dict", "keys": [], "values": [1]}),
     json.dumps({"t": "int", "v": "x"}), json.dumps({"t": "value", "v": [1]}), "[" * 100000 + "]" * 100000],
    ids=["json", "unknown", "not-node", "dict-lengths", "int", "value", "deep"],
)
def test_malformed_structure(structure):
    """Malformed or absurdly deep structure metadata is a ValueError."""
    with pytest.raises(ValueError, match="structure metadata"):
        _load(_file({"__metadata__": {"tensorplug.structure": structure}}))


def test_deeply_nested_structure_nodes():
    """Deep nesting of valid nodes stops at a clear limit instead of exhausting the stack."""
    text = '{"t":"list","items":[' * 600 + '{"t":"value","v":null}' + "]}" * 600
    with pytest.raises(ValueError, match="structure metadata"):
        _load(_file({"__metadata__": {"tensorplug.structure": text}}))


# --- the same checks when loading from a path, by reading (mmap=False) and by mapping (mmap=True) ---
HOSTILE_FILES = {
    "empty": (b"", "truncated"),
    "short-prefix": (b"\x08\x00\x00", "truncated"),
    "header-past-end": (struct.pack("<Q", 64) + b"{}", "has only 2 bytes"),
    "data-past-end": (_file({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8), "beyond the 8 bytes"),
    "offsets-past-2**63": (_file({"x": {"dtype": "U8", "shape": [4], "data_offsets": [2**63, 2**63 + 4]}}, b"\0" * 4), "beyond"),
    "overlap": (_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                       "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12), "overlapping"),
    "nested-overlap": (_file({"a": {"dtype": "U8", "shape": [12], "data_offsets": [0, 12]},
                              "b": {"dtype": "U8", "shape": [2], "data_offsets": [4, 6]}}, b"\0" * 12), "overlapping"),
    "shape-mismatch": (_file({"x": {"dtype": "F64", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8), "needs 16 bytes"),
}


@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mmap"])
@pytest.mark.parametrize("name", list(HOSTILE_FILES))
def test_hostile_files_on_disk(tmp_path, name, mmap):
    """Files on disk get the same clear errors whether they are read or mapped."""
    blob, message = HOSTILE_FILES[name]
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(blob)
    with pytest.raises(ValueError, match=message):
        tp.load(path, mmap=mmap)
    assert path.read_bytes() == blob


@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mmap"])
def test_trailing_bytes_after_the_data_are_ignored(tmp_path, mmap):
    """Bytes after the last tensor (as some writers leave) are not an error and are not loaded."""
    path = tmp_path / "trailing.safetensors"
    path.write_bytes(_file({"x": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x02" + b"\xff" * 100))
    assert tp.load(path, mmap=mmap)["x"].tolist() == [1, 2]


def test_directory_is_not_a_file(tmp_path):
    """A directory is an OS error from open(), before any mapping is tried."""
    with pytest.raises(IsADirectoryError):
        tp.load(tmp_path, mmap=True)


def test_stream_shorter_than_it_claims():
    """A stream that reports more bytes than it delivers (a file shrinking while read) is a clear error."""

    class Shrinking(io.BytesIO):
        def seek(self, offset, whence=io.SEEK_SET):
            position = super().seek(offset, whence)
            return position + 64 if whence == io.SEEK_END else position

    blob = _file({"x": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}}, b"\0" * 8)
    with pytest.raises(ValueError, match="truncated.*ended 24 bytes early"):
        tp.load(Shrinking(blob))
