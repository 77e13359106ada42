"""tp.utils.tensorboard.SummaryWriter writes event files that TensorBoard's own reader reads back,
with the records torch.utils.tensorboard writes for the same calls."""
import glob
import importlib
import io
import os
import sys

import numpy as np
import pytest

import tensorplug as tp

try:
    import tensorboard  # noqa: F401
except ImportError:
    pytest.skip("tensorboard is not installed (pip install -e '.[tensorboard]'): "
                "tp.utils.tensorboard needs it", allow_module_level=True)

from tensorboard.backend.event_processing import event_accumulator as ea  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader  # noqa: E402
from tensorboard.compat.proto import event_pb2  # noqa: E402

from tensorplug.utils.tensorboard import SummaryWriter  # noqa: E402

WALLTIME = 1000.0


def _accumulator(log_dir):
    """Every record of the one run in ``log_dir``, as TensorBoard loads it (0 = keep them all)."""
    guidance = {ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0, ea.TENSORS: 0}
    return ea.EventAccumulator(str(log_dir), size_guidance=guidance).Reload()


def _events(log_dir):
    """The raw events of every events file under ``log_dir``, by directory relative to it."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(str(log_dir), "**", "events.out.tfevents.*"),
                                 recursive=True)):
        run = os.path.relpath(os.path.dirname(path), str(log_dir))
        runs.setdefault(run, []).extend(event_pb2.Event.FromString(record)
                                        for record in RawEventFileLoader(path).Load())
    return runs


def test_scalars_from_every_kind_of_number(device, tmp_path):
    """0-d and 1-element tensors on the device, Python and NumPy numbers read back as written."""
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalar("loss", tp.tensor(0.5, device=device), 0)
        writer.add_scalar("loss", tp.tensor([0.25], device=device), 1)
        writer.add_scalar("loss", 2, 2)
        writer.add_scalar("loss", np.float32(0.125), 3)
        writer.add_scalar("loss", np.array(4.0), 4, walltime=WALLTIME)
        writer.add_scalar("acc", tp.tensor(0.75, dtype=tp.float64, device=device), 7,
                          new_style=True, double_precision=True)
    run = _accumulator(tmp_path)
    loss = run.Scalars("loss")
    assert [s.step for s in loss] == [0, 1, 2, 3, 4]
    assert [s.value for s in loss] == [0.5, 0.25, 2.0, 0.125, 4.0]
    assert loss[-1].wall_time == WALLTIME
    acc = run.Tensors("acc")
    assert acc[0].step == 7 and acc[0].tensor_proto.double_val == [0.75]


def test_scalar_rejects_more_than_one_element(tmp_path):
    """A tensor of several elements is not a scalar."""
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ValueError, match="one element"):
            writer.add_scalar("x", tp.ones(2), 0)


def test_add_scalars_writes_one_run_per_key(tmp_path):
    """add_scalars puts each key in <log_dir>/<main_tag>_<key> under the main tag."""
    with SummaryWriter(tmp_path) as writer:
        for step in range(3):
            writer.add_scalars("train/loss", {"a": float(step), "b": tp.tensor(10.0 * step)}, step)
    assert sorted(os.listdir(tmp_path / "train_loss_a")) != []
    b = _accumulator(tmp_path / "train_loss_b").Scalars("train/loss")
    assert [(s.step, s.value) for s in b] == [(0, 0.0), (1, 10.0), (2, 20.0)]


@pytest.mark.parametrize("bins", ["tensorflow", "auto", 7])
def test_histogram_buckets_match_numpy(device, tmp_path, bins):
    """Buckets are np.histogram's over the given edges, trimmed to the filled range plus the
    empty bucket left of it; min, max, num, sum and sum of squares are the values'."""
    values = np.random.randn(200).astype(np.float32)
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("w", tp.tensor(values, device=device), 5, bins=bins)
    histo = _accumulator(tmp_path).Histograms("w")[0]
    assert histo.step == 5
    h = histo.histogram_value
    data = values.astype(np.float64)
    counts, edges = np.histogram(data, bins=_tensorflow_bins() if bins == "tensorflow" else bins)
    filled = np.flatnonzero(counts)
    first, last = filled[0], filled[-1]
    expected = ([0] + list(counts[:last + 1])) if first == 0 else list(counts[first - 1:last + 1])
    assert list(h.bucket) == expected
    np.testing.assert_array_equal(h.bucket_limit, edges[first:last + 2])
    assert (h.min, h.max, h.num) == (data.min(), data.max(), 200)
    assert h.sum == pytest.approx(data.sum()) and h.sum_squares == pytest.approx(data @ data)


def _tensorflow_bins():
    edges, edge = [], 1e-12
    while edge < 1e20:
        edges.append(edge)
        edge *= 1.1
    return [-e for e in reversed(edges)] + [0.0] + edges


def test_histogram_max_bins_merges_neighbours(tmp_path):
    """max_bins sums neighbouring buckets: 100 buckets become 10 of ten edges each."""
    values = np.linspace(0.0, 1.0, 1000)
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("w", values, 0, bins=100, max_bins=10)
        with pytest.raises(ValueError, match="no element"):
            writer.add_histogram("empty", np.zeros(0), 0)
    h = _accumulator(tmp_path).Histograms("w")[0].histogram_value
    assert list(h.bucket) == [0] + [100] * 10
    np.testing.assert_allclose(h.bucket_limit, np.linspace(0.0, 1.0, 11))


def test_text(tmp_path):
    """add_text writes a text-plugin string under <tag>/text_summary."""
    with SummaryWriter(tmp_path) as writer:
        writer.add_text("notes", "**lr** = 0.1, ünïcode", 3)
    text = _accumulator(tmp_path).Tensors("notes/text_summary")[0]
    assert text.step == 3
    assert text.tensor_proto.string_val == ["**lr** = 0.1, ünïcode".encode()]


def test_images_decode_to_what_was_logged(device, tmp_path):
    """Float CHW in [0, 1] is scaled to [0, 255]; uint8 HWC is kept; a batch becomes a grid."""
    Image = pytest.importorskip("PIL.Image", reason="add_image encodes PNG through Pillow")
    chw = np.random.rand(3, 4, 5).astype(np.float32)
    hwc = np.random.randint(0, 256, (6, 2, 3), dtype=np.uint8)
    batch = np.random.rand(3, 1, 2, 2).astype(np.float32)
    with SummaryWriter(tmp_path) as writer:
        writer.add_image("chw", tp.tensor(chw, device=device), 0)
        writer.add_image("hwc", tp.tensor(hwc, device=device), 1, dataformats="HWC")
        writer.add_images("batch", tp.tensor(batch, device=device), 2)
    run = _accumulator(tmp_path)

    def decoded(tag):
        event = run.Images(tag)[0]
        return np.asarray(Image.open(io.BytesIO(event.encoded_image_string)))

    np.testing.assert_array_equal(decoded("chw"), (chw.transpose(1, 2, 0) * 255).astype(np.uint8))
    np.testing.assert_array_equal(decoded("hwc"), hwc)
    grid = decoded("batch")
    assert grid.shape == (2, 6, 3)
    np.testing.assert_array_equal(grid[:, 2:4, 0], (batch[1, 0] * 255).astype(np.uint8))


def test_figure(tmp_path):
    """add_figure logs a matplotlib figure as an RGB image of its pixel size."""
    pytest.importorskip("matplotlib", reason="add_figure draws with matplotlib")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    with SummaryWriter(tmp_path) as writer:
        writer.add_figure("plot", figure, 0, close=False)
    image = _accumulator(tmp_path).Images("plot")[0]
    assert (image.width, image.height) == (100, 50)


def test_hparams(tmp_path):
    """add_hparams writes the experiment, session start and end into the run's sub-directory,
    and each metric as a scalar there."""
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    with SummaryWriter(tmp_path) as writer:
        writer.add_hparams({"lr": 0.1, "bs": 32, "opt": "adam", "skip": None}, {"hp/acc": 0.9},
                           run_name="trial")
        with pytest.raises(TypeError, match="dictionary"):
            writer.add_hparams([("lr", 0.1)], {})
    run = _accumulator(tmp_path / "trial")
    assert [(s.step, pytest.approx(s.value)) for s in run.Scalars("hp/acc")] == [(0, 0.9)]
    content = run.PluginTagToContent("hparams")
    experiment = HParamsPluginData.FromString(content["_hparams_/experiment"]).experiment
    assert [h.name for h in experiment.hparam_infos] == ["lr", "bs", "opt"]
    assert [m.name.tag for m in experiment.metric_infos] == ["hp/acc"]
    start = HParamsPluginData.FromString(content["_hparams_/session_start_info"]).session_start_info
    assert start.hparams["bs"].number_value == 32 and start.hparams["opt"].string_value == "adam"


def test_writer_lifecycle(tmp_path, monkeypatch):
    """The default log_dir is runs/<date>_<host><comment>; purge_step writes the START marker;
    flush makes events readable; logging after close opens a new file."""
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_exp", purge_step=4)
    log_dir = writer.get_logdir()
    assert log_dir.startswith("runs" + os.sep) and log_dir.endswith("_exp")
    writer.add_scalar("x", 1.0, 5)
    writer.flush()
    events = _events(log_dir)["."]
    assert events[2].session_log.status == event_pb2.SessionLog.START and events[2].step == 4
    assert events[3].summary.value[0].simple_value == 1.0
    writer.close()
    writer.add_scalar("x", 2.0, 6)
    writer.close()
    assert len(glob.glob(os.path.join(log_dir, "events.out.tfevents.*"))) == 2
    assert [s.value for s in _accumulator(log_dir).Scalars("x")] == [1.0, 2.0]


@pytest.mark.parametrize("method", ["add_graph", "add_embedding", "add_audio", "add_video",
                                    "add_mesh", "add_pr_curve"])
def test_unsupported_methods_say_so(tmp_path, method):
    """The methods tensorplug does not write raise NotImplementedError naming themselves."""
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(NotImplementedError, match=method):
            getattr(writer, method)("tag", tp.zeros(1), tp.zeros(1))


def test_import_without_tensorboard_says_to_install_it(monkeypatch):
    """Without the tensorboard package the import fails with PyTorch's message and the fix."""
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    for name in [n for n in sys.modules if n.startswith("tensorplug.utils.tensorboard")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match="requires TensorBoard.*pip install tensorboard"):
        importlib.import_module("tensorplug.utils.tensorboard")


def _log_everything(writer, lib):
    """The same calls for tensorplug's and torch's writer; ``lib`` makes the tensors."""
    values = np.random.RandomState(0).randn(50)
    image = np.random.RandomState(1).rand(3, 4, 5).astype(np.float32)
    writer.add_scalar("s", lib.tensor(1.5), 1, walltime=WALLTIME)
    writer.add_scalar("s_new", 2.5, 2, walltime=WALLTIME, new_style=True)
    writer.add_scalar("s_double", np.float64(0.1), 2, walltime=WALLTIME, new_style=True,
                      double_precision=True)
    writer.add_scalars("group/x", {"a": 1.0, "b": lib.tensor([2.0])}, 3, walltime=WALLTIME)
    writer.add_histogram("h", lib.tensor(values), 4, walltime=WALLTIME)
    writer.add_histogram("h_auto", lib.tensor(values), 4, bins="auto", walltime=WALLTIME)
    writer.add_histogram("h_max", values, 4, bins=40, max_bins=7, walltime=WALLTIME)
    writer.add_text("t", "hello", 5, walltime=WALLTIME)
    writer.add_image("img", lib.tensor(image), 6, walltime=WALLTIME)
    writer.add_images("imgs", lib.tensor(image[:, None]), 6, walltime=WALLTIME)
    writer.add_hparams({"lr": 0.1, "bs": 32, "opt": "adam"}, {"m": 0.5},
                       hparam_domain_discrete={"opt": ["adam", "sgd"]}, run_name="hp",
                       global_step=7)


def _comparable(runs):
    """Events without their wall time (only the header's and hparams' are not given), with the
    hparams plugin's maps serialised in key order."""
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    for events in runs.values():
        for event in events:
            event.ClearField("wall_time")
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == "hparams":
                    data = HParamsPluginData.FromString(value.metadata.plugin_data.content)
                    value.metadata.plugin_data.content = data.SerializeToString(deterministic=True)
    return runs


def test_files_match_torch(tmp_path):
    """Every record, in every run directory, is the one torch's SummaryWriter writes."""
    torch = pytest.importorskip("torch", reason="the comparison needs PyTorch as the reference")
    pytest.importorskip("PIL", reason="add_image encodes PNG through Pillow")
    from torch.utils.tensorboard import SummaryWriter as TorchSummaryWriter

    with SummaryWriter(tmp_path / "ours", purge_step=1) as ours:
        _log_everything(ours, tp)
    with TorchSummaryWriter(tmp_path / "torch", purge_step=1) as theirs:
        _log_everything(theirs, torch)
    expected = _comparable(_events(tmp_path / "torch"))
    actual = _comparable(_events(tmp_path / "ours"))
    assert sorted(actual) == sorted(expected) == [".", "group_x_a", "group_x_b", "hp"]
    for run in expected:
        assert len(actual[run]) == len(expected[run]) > 1, run
        assert actual[run] == expected[run], run
