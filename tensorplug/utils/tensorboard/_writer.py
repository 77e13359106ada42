"""``SummaryWriter`` and ``FileWriter``: PyTorch 2.13's TensorBoard writer API over TensorBoard's
own event-file writer (one events file per directory, written by a background thread)."""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime

import numpy as np

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import _summary


class FileWriter(EventFileWriter):
    """One run's events file (TensorBoard's own writer, its background thread and queue), with
    each event stamped with its step and wall time."""

    def add_event(self, event: Event, step=None, walltime=None) -> None:
        """Queue ``event`` at ``walltime`` (now when None) and ``step`` (unset when None)."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        super().add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None) -> None:
        self.add_event(Event(summary=summary), global_step, walltime)


def _not_supported(name: str, why: str):
    raise NotImplementedError(f"SummaryWriter.{name} is not supported by tensorplug: {why} "
                              "(docs/porting.md, 'TensorBoard logging')")


class SummaryWriter:
    """Writes TensorBoard event files into ``log_dir``, as PyTorch's ``SummaryWriter``.

    ``log_dir`` defaults to ``runs/<Mon>DD_HH-MM-SS_<hostname><comment>``. ``purge_step`` marks
    the file so that TensorBoard drops events at or after that step logged by an earlier, crashed
    run. Events are queued (``max_queue``) and written by a background thread at least every
    ``flush_secs`` seconds, and on ``flush()`` and ``close()``.

        writer = SummaryWriter("runs/exp1")
        writer.add_scalar("loss", loss, step)          # tensors on any device, numbers
        writer.add_histogram("fc.weight", model.fc.weight, step)
        writer.close()
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self._pending_purge_step = purge_step
        self._file_options = (max_queue, flush_secs, filename_suffix)  # EventFileWriter's own
        # Open events files by run directory: log_dir itself, and one per add_scalars key. They
        # are opened at first use, so logging after close() starts new files.
        self._open_runs: dict[str, FileWriter] = {}
        self._run(log_dir)

    def _run(self, run_dir=None) -> FileWriter:
        """The open events file of ``run_dir`` (``log_dir`` when None), opened if needed."""
        run_dir = self.log_dir if run_dir is None else run_dir
        writer = self._open_runs.get(run_dir)
        if writer is None:
            writer = self._open_runs[run_dir] = FileWriter(run_dir, *self._file_options)
            if run_dir == self.log_dir and self._pending_purge_step is not None:
                # TensorBoard reads a SessionLog START at step s as "discard what an earlier run
                # logged at or after s"; it is written once, into the first file.
                start = SessionLog(status=SessionLog.START)
                step, self._pending_purge_step = self._pending_purge_step, None
                writer.add_event(Event(step=step, file_version="brain.Event:2"))
                writer.add_event(Event(step=step, session_log=start))
        return writer

    @property
    def file_writer(self) -> FileWriter | None:
        """The events file of ``log_dir`` (None after ``close()``)."""
        return self._open_runs.get(self.log_dir)

    def get_logdir(self) -> str:
        """The directory the events files go to."""
        return self.log_dir

    # Scalars

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False) -> None:
        """Logs one number: a Python or NumPy number, or a one-element tensor on any device.
        ``new_style`` writes a scalars-plugin tensor (float64 with ``double_precision``) instead
        of the legacy ``simple_value``."""
        summary = _summary.scalar(tag, scalar_value, new_style, double_precision)
        self._run().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None) -> None:
        """Logs several numbers under one chart: each key gets its own run, the directory
        ``<log_dir>/<main_tag with / as _>_<key>``, with ``main_tag`` as the tag."""
        for key, value in tag_scalar_dict.items():
            run_dir = f"{self.log_dir}/{main_tag.replace('/', '_')}_{key}"
            self._run(run_dir).add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    # Histograms

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        """Logs the histogram of ``values`` (a tensor or array of any shape). ``bins`` is
        ``'tensorflow'`` (TensorFlow's exponential buckets) or anything ``np.histogram`` takes
        (``'auto'``, ``'fd'``, a count, edges)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = _summary.tensorflow_bins()
        summary = _summary.histogram(tag, values, bins, max_bins=max_bins)
        self._run().add_summary(summary, global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime=None) -> None:
        """Logs a histogram already counted: ``bucket_limits`` are the buckets' right edges."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        summary = _summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                         bucket_counts)
        self._run().add_summary(summary, global_step, walltime)

    # Text, images, figures

    def add_text(self, tag, text_string, global_step=None, walltime=None) -> None:
        """Logs a string (TensorBoard renders it as Markdown) under ``<tag>/text_summary``."""
        self._run().add_summary(_summary.text(tag, text_string), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None,
                  dataformats="CHW") -> None:
        """Logs one image: uint8 in [0, 255] or float in [0, 1], laid out as ``dataformats``
        says (``CHW``, ``HWC``, ``HW``); needs Pillow for the PNG encoding."""
        summary = _summary.image(tag, img_tensor, dataformats=dataformats)
        self._run().add_summary(summary, global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None,
                   dataformats="NCHW") -> None:
        """Logs a batch of images as one grid, eight to a row."""
        summary = _summary.image(tag, img_tensor, dataformats=dataformats)
        self._run().add_summary(summary, global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None) -> None:
        """Logs a matplotlib figure (or a list of them, as a grid), drawn with the Agg canvas."""
        if isinstance(figure, list):
            images = np.stack([_summary.figure_to_chw(f, close) for f in figure])
            self.add_image(tag, images, global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, _summary.figure_to_chw(figure, close), global_step, walltime,
                           dataformats="CHW")

    # Hyperparameters

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None) -> None:
        """Logs one run's hyperparameters and its metrics for TensorBoard's HPARAMS tab, in the
        sub-directory ``run_name`` (the current time when not given); each metric is also logged
        there as a scalar."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        if hparam_domain_discrete is not None and not isinstance(hparam_domain_discrete, dict):
            raise TypeError(
                "parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
        summaries = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        if not run_name:
            run_name = str(time.time())
        with SummaryWriter(log_dir=os.path.join(self.log_dir, run_name)) as run_writer:
            for summary in summaries:
                run_writer._run().add_summary(summary, global_step)
            for tag, value in metric_dict.items():
                run_writer.add_scalar(tag, value, global_step)

    # Writing

    def flush(self) -> None:
        """Writes every queued event to disk."""
        for writer in self._open_runs.values():
            writer.flush()

    def close(self) -> None:
        """Flushes and closes every events file; logging afterwards opens new ones."""
        for writer in self._open_runs.values():
            writer.close()  # flushes first
        self._open_runs.clear()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.close()

    # What tensorplug does not write (each raises NotImplementedError saying so)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True) -> None:
        """Not supported: PyTorch traces the model with the JIT tracer, which tensorplug lacks."""
        _not_supported("add_graph", "it needs a traced graph of the model (torch.jit.trace), and "
                       "tensorplug has no tracer")

    def add_onnx_graph(self, prototxt) -> None:
        """Not supported (it needs the onnx package and its graph conversion)."""
        _not_supported("add_onnx_graph", "it needs the onnx package's graph conversion")

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None) -> None:
        """Not supported: the projector's files are not written."""
        _not_supported("add_embedding", "the embedding projector's files are not written")

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100,
                  walltime=None) -> None:
        """Not supported: audio summaries are not written."""
        _not_supported("add_audio", "audio (WAV) summaries are not written")

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None) -> None:
        """Not supported: video summaries (GIFs through moviepy) are not written."""
        _not_supported("add_video", "video summaries (GIFs through moviepy) are not written")

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None,
                 walltime=None) -> None:
        """Not supported: mesh summaries are not written."""
        _not_supported("add_mesh", "mesh summaries are not written")

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127,
                     weights=None, walltime=None) -> None:
        """Not supported: precision-recall curves are not written."""
        _not_supported("add_pr_curve", "precision-recall curves are not written")

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step=None, num_thresholds=127, weights=None, walltime=None) -> None:
        """Not supported: precision-recall curves are not written."""
        _not_supported("add_pr_curve_raw", "precision-recall curves are not written")

    def add_custom_scalars(self, layout) -> None:
        """Not supported: custom-scalars layouts are not written."""
        _not_supported("add_custom_scalars", "custom-scalars layouts are not written")

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled") -> None:
        """Not supported: custom-scalars layouts are not written."""
        _not_supported("add_custom_scalars_multilinechart",
                       "custom-scalars layouts are not written")

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled") -> None:
        """Not supported: custom-scalars layouts are not written."""
        _not_supported("add_custom_scalars_marginchart", "custom-scalars layouts are not written")

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None, walltime=None,
                             rescale=1, dataformats="CHW", labels=None) -> None:
        """Not supported: drawing boxes onto images is not done (log the image with add_image)."""
        _not_supported("add_image_with_boxes", "boxes are not drawn; log the image with add_image")

    def add_tensor(self, tag, tensor, global_step=None, walltime=None) -> None:
        """Not supported: raw tensor summaries are not written."""
        _not_supported("add_tensor", "raw tensor summaries are not written")
