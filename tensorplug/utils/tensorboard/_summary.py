"""Summary protocol buffers for ``SummaryWriter``, one function per kind of record.

Each function takes NumPy data (``to_numpy`` turns tensors, numbers and NumPy scalars into it)
and returns a ``Summary`` laid out as PyTorch's writer lays it out, so that TensorBoard, and any
tool that reads PyTorch's logs, reads ours the same way.
"""
from __future__ import annotations

import functools
import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

import tensorplug as tp


def to_numpy(value) -> np.ndarray:
    """A tensor (any device), a NumPy array, or a number or NumPy scalar (as a 1-element array)."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, tp.Tensor):
        if value.dtype == tp.bfloat16:  # NumPy has no bfloat16: float16 holds its values
            value = value.to(tp.float16)
        return value.detach().cpu().numpy()
    if np.isscalar(value):
        return np.array([value])
    raise NotImplementedError(f"Got {type(value)}, but numpy array or tensor are expected.")


# Scalars

def scalar(tag: str, value, new_style: bool = False, double_precision: bool = False) -> Summary:
    """A scalar, as ``simple_value`` (the legacy field) or, with ``new_style``, a scalars-plugin
    tensor of float32 (or float64 with ``double_precision``)."""
    array = to_numpy(value).squeeze()
    if array.ndim != 0:
        raise ValueError(f"Tensor should contain one element (0 dimensions). Was given size: "
                         f"{array.size} and {array.ndim} dimensions.")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    if double_precision:
        proto = TensorProto(dtype="DT_DOUBLE", double_val=[number])
    else:
        proto = TensorProto(dtype="DT_FLOAT", float_val=[number])
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=metadata)])


# Histograms

@functools.cache
def tensorflow_bins() -> tuple[float, ...]:
    """TensorFlow's default bucket edges: 0 and +-1e-12 growing by 10% up to 1e20. Each edge is
    the previous one times 1.1 (not 1.1**k), as TensorFlow and PyTorch compute them, so that the
    edges agree to the last bit."""
    positive = []
    edge = 1e-12
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    return tuple([-e for e in reversed(positive)] + [0.0] + positive)


def histogram_proto(values: np.ndarray, bins, max_bins: int | None = None) -> HistogramProto:
    """Counts ``values`` into ``bins`` (anything ``np.histogram`` takes), merges neighbouring
    buckets down to ``max_bins`` and keeps the buckets from one before the first non-empty one to
    the last non-empty one: TensorBoard reads each bucket's right edge only, so the empty bucket
    on the left carries the histogram's left edge."""
    values = values.reshape(-1)
    if values.size == 0:
        raise ValueError("The input has no element.")
    counts, edges = np.histogram(values, bins=bins)
    if max_bins is not None and counts.size > max_bins:
        group = counts.size // max_bins
        padded = np.zeros(-(-counts.size // group) * group, dtype=counts.dtype)
        padded[:counts.size] = counts
        counts = padded.reshape(-1, group).sum(axis=1)
        edges = np.concatenate([edges[:-1:group], edges[-1:]])
    filled = np.flatnonzero(counts)
    if filled.size == 0:
        raise ValueError("The histogram is empty: no value falls inside the bins.")
    first, last = int(filled[0]), int(filled[-1])
    if first > 0:
        counts = counts[first - 1:last + 1]
    else:
        counts = np.concatenate([[0], counts[:last + 1]])
    edges = edges[first:last + 2]
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=edges.tolist(),
                          bucket=counts.tolist())


def histogram(tag: str, values, bins, max_bins: int | None = None) -> Summary:
    histo = histogram_proto(to_numpy(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=tag, histo=histo)])


def histogram_raw(tag: str, min, max, num, sum, sum_squares, bucket_limits,
                  bucket_counts) -> Summary:
    histo = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                           bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=tag, histo=histo)])


# Text

def text(tag: str, text_string: str) -> Summary:
    """A text-plugin string tensor, under ``<tag>/text_summary`` as PyTorch names it."""
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    proto = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    value = Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=proto)
    return Summary(value=[value])


# Images

def _grid(images: np.ndarray, columns: int = 8) -> np.ndarray:
    """N images (N, C, H, W) with 1 or 3 channels laid out in rows of ``columns`` as one CHW image
    (PyTorch's layout for ``add_images``)."""
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, axis=1)
    if images.shape[1] != 3:
        raise ValueError(f"add_images takes images with 1 or 3 channels, got {images.shape[1]}")
    count, _, height, width = images.shape
    columns = min(count, columns)
    rows = -(-count // columns)
    canvas = np.zeros((3, height * rows, width * columns), dtype=images.dtype)
    for i in range(count):
        row, column = divmod(i, columns)
        canvas[:, row * height:(row + 1) * height, column * width:(column + 1) * width] = images[i]
    return canvas


def to_hwc(array: np.ndarray, dataformats: str) -> np.ndarray:
    """An image (CHW, HWC, HW, in any order of those letters) or a batch (NCHW, NHWC, ...) as one
    HWC image with 3 channels (or 4, RGBA, when given so)."""
    dataformats = dataformats.upper()
    if len(set(dataformats)) != len(dataformats):
        raise ValueError(f"dataformats {dataformats!r} repeats a letter")
    if array.ndim != len(dataformats):
        raise ValueError(f"dataformats {dataformats!r} has {len(dataformats)} letters but the "
                         f"image has {array.ndim} dimensions (shape {tuple(array.shape)})")
    if len(dataformats) == 4:
        nchw = array.transpose([dataformats.find(c) for c in "NCHW"])
        return _grid(nchw).transpose(1, 2, 0)
    if len(dataformats) == 3:
        hwc = array.transpose([dataformats.find(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc] * 3, axis=2)
        return hwc
    if len(dataformats) == 2:
        hw = array.transpose([dataformats.find(c) for c in "HW"])
        return np.stack([hw] * 3, axis=2)
    raise ValueError(f"dataformats must have 2, 3 or 4 letters, got {dataformats!r}")


def _encode_png(hwc: np.ndarray) -> bytes:
    try:
        from PIL import Image
    except ImportError as error:
        raise ImportError("add_image/add_images/add_figure encode PNG through Pillow: "
                          "pip install pillow") from error
    buffer = io.BytesIO()
    Image.fromarray(hwc).save(buffer, format="PNG")
    return buffer.getvalue()


def image(tag: str, value, dataformats: str = "CHW") -> Summary:
    """An image summary: uint8 data as it is, any other dtype read as [0, 1] and scaled to
    [0, 255] (clipped), PNG-encoded."""
    hwc = to_hwc(to_numpy(value), dataformats)
    scale = 1 if hwc.dtype == np.uint8 else 255
    hwc = (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    height, width, channels = hwc.shape
    proto = Summary.Image(height=height, width=width, colorspace=channels,
                          encoded_image_string=_encode_png(hwc))
    return Summary(value=[Summary.Value(tag=tag, image=proto)])


def figure_to_chw(figure, close: bool = True) -> np.ndarray:
    """A matplotlib figure drawn with the Agg canvas, as a uint8 CHW RGB array."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    width, height = figure.canvas.get_width_height()
    rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(height, width, 4)
    chw = np.ascontiguousarray(np.moveaxis(rgba[:, :, :3], 2, 0))
    if close:
        import matplotlib.pyplot as plt

        plt.close(figure)
    return chw


# Hyperparameters

_HPARAMS_PLUGIN = "hparams"


def _hparams_summary(tag: str, plugin_data) -> Summary:
    content = plugin_data.SerializeToString()
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=_HPARAMS_PLUGIN,
                                                                      content=content))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata)])


def hparams(hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None):
    """The three hparams-plugin summaries (experiment, session start, session end) for one run.

    Numbers (bools included, as PyTorch reads them) and one-element tensors are FLOAT64
    hyperparameters, strings STRING; None values are left out."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams import api_pb2
    from tensorboard.plugins.hparams.plugin_data_pb2 import (HParamsPluginData, SessionEndInfo,
                                                             SessionStartInfo)

    domains = hparam_domain_discrete or {}
    for name, domain in domains.items():
        if name not in hparam_dict or not isinstance(domain, list) or not all(
                isinstance(d, type(hparam_dict[name])) for d in domain):
            raise TypeError(f"parameter: hparam_domain_discrete[{name}] should be a list of same "
                            f"type as hparam_dict[{name}].")
    infos = []
    start = SessionStartInfo()
    for name, value in hparam_dict.items():
        if value is None:
            continue
        if isinstance(value, tp.Tensor):
            value = to_numpy(value).reshape(-1)[0]
        if isinstance(value, (int, float, np.number)):
            start.hparams[name].number_value = float(value)
            data_type, field = "DATA_TYPE_FLOAT64", "number_value"
        elif isinstance(value, str):
            start.hparams[name].string_value = value
            data_type, field = "DATA_TYPE_STRING", "string_value"
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        domain = None
        if name in domains:
            domain = struct_pb2.ListValue(
                values=[struct_pb2.Value(**{field: d}) for d in domains[name]])
        infos.append(api_pb2.HParamInfo(name=name, type=api_pb2.DataType.Value(data_type),
                                        domain_discrete=domain))
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=tag)) for tag in metric_dict]
    experiment = api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)
    end = SessionEndInfo(status=api_pb2.Status.Value("STATUS_SUCCESS"))
    return (_hparams_summary("_hparams_/experiment",
                             HParamsPluginData(experiment=experiment, version=0)),
            _hparams_summary("_hparams_/session_start_info",
                             HParamsPluginData(session_start_info=start, version=0)),
            _hparams_summary("_hparams_/session_end_info",
                             HParamsPluginData(session_end_info=end, version=0)))
