"""Recurrent layers (RNN, LSTM, GRU) and single-step cells (RNNCell, LSTMCell, GRUCell) written with tensorplug ops: one matmul over the whole
sequence for the input projections, then the recurrence of each layer direction as one autograd
Function over two whole-sequence ops (``_lstm_sequence``, ``_gru_sequence``, ``_rnn_sequence``).
The per-step cells below remain for the single-step modules and for packed sequences, whose batch
shrinks from step to step (``_packed_rnn``).

An LSTM with ``proj_size`` (PyTorch's LSTM with projections: h = (o * tanh(c)) W_hr^T) runs its
recurrence step by step through the cell (the whole-sequence ops have no projection).

Parameter names, shapes, gate order and initialization are PyTorch's, so a torch state_dict
loads as is: ``weight_ih_l0`` is (4*hidden, input) for LSTM with gates (i, f, g, o) and
(3*hidden, input) for GRU with gates (r, z, n); the reverse direction adds ``_reverse``.

>>> import tensorplug as tp
>>> out, (h, c) = tp.nn.LSTM(4, 8, batch_first=True)(tp.randn(2, 5, 4))
>>> out.shape, h.shape
((2, 5, 8), (1, 2, 8))
"""
from __future__ import annotations

import math
import warnings

from ..frontend.factories import empty, zeros
from ..frontend.ops.joining import cat, stack
from ._gru_sequence import GRUSequence
from ._lstm_sequence import LSTMSequence
from ._rnn_sequence import RNNSequence
from ._packed_rnn import run_packed
from .utils.rnn import PackedSequence
from ..frontend.tensor import Tensor
from ..frontend.autocast_hook import autocast_function
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_HIDDEN_LABELS = {"hx": "hidden", "h_0": "hidden[0]", "c_0": "hidden[1]"}


# --- one time step, given the input projection x W_ih^T + b_ih (shared by layers and cells) -------
def _rnn_step(projected: Tensor, h: Tensor, w_hh, b_hh, nonlinearity: str) -> Tensor:
    pre = projected + F.linear(h, w_hh, b_hh)
    return F.tanh(pre) if nonlinearity == "tanh" else F.relu(pre)


def _lstm_step(projected: Tensor, h: Tensor, c: Tensor, w_hh, b_hh) -> tuple:
    gates = projected + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
    return F.sigmoid(o) * F.tanh(c), c


def _gru_step(projected: Tensor, h: Tensor, w_hh, b_hh) -> Tensor:
    x_r, x_z, x_n = projected.chunk(3, -1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r = F.sigmoid(x_r + h_r)
    z = F.sigmoid(x_z + h_z)
    n = F.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


def _both_biases(b_ih, b_hh):
    """The one bias of the input projection that carries both of an LSTM's or an Elman RNN's
    biases: their sum is one (gates,) add, where adding b_hh to the projection afterwards was a
    (T, B, gates) broadcast add (5 ms of a 16 ms LSTM forward on OpenCL, whose linear adds its
    bias inside the product)."""
    if b_hh is None:
        return b_ih
    return b_hh if b_ih is None else b_ih + b_hh


@autocast_function("lstm")
def _lstm_direction(x: Tensor, state: tuple, weights: tuple, reverse: bool) -> tuple:
    """The whole sequence through LSTMSequence: two dispatched ops and one graph node, which the
    CPU backend runs as two C++ calls and the OpenCL backend as a few kernels (the step-by-step
    loop below made ~15 ops per step)."""
    w_ih, w_hh, b_ih, b_hh = weights
    projected = F.linear(x, w_ih, _both_biases(b_ih, b_hh))
    if reverse:
        projected = projected.flip(0)
    hs, h_n, c_n = LSTMSequence.apply(projected, w_hh, state[0], state[1])
    return (hs.flip(0) if reverse else hs), (h_n, c_n)


@autocast_function("gru")
def _gru_direction(x: Tensor, state: tuple, weights: tuple, reverse: bool) -> tuple:
    """As ``_lstm_direction``, through GRUSequence. b_hh stays apart from the projection: r
    multiplies its n part (without bias, zeros take its place so that the ops have one form)."""
    w_ih, w_hh, b_ih, b_hh = weights
    projected = F.linear(x, w_ih, b_ih)
    if b_hh is None:
        b_hh = zeros(w_hh.shape[0], dtype=projected.dtype, device=projected.device)
    if reverse:
        projected = projected.flip(0)
    hs, h_n = GRUSequence.apply(projected, w_hh, b_hh, state[0])
    return (hs.flip(0) if reverse else hs), (h_n,)


@autocast_function("rnn")
def _rnn_direction(x: Tensor, state: tuple, weights: tuple, reverse: bool, nonlinearity: str) -> tuple:
    """As ``_lstm_direction``, through RNNSequence."""
    w_ih, w_hh, b_ih, b_hh = weights
    projected = F.linear(x, w_ih, _both_biases(b_ih, b_hh))
    if reverse:
        projected = projected.flip(0)
    hs, h_n = RNNSequence.apply(projected, w_hh, state[0], nonlinearity)
    return (hs.flip(0) if reverse else hs), (h_n,)


# The options a repr shows when they differ from these defaults, in PyTorch's order.
_LAYER_DEFAULTS = {"proj_size": 0, "num_layers": 1, "bias": True, "batch_first": False, "dropout": 0.0,
                   "bidirectional": False}
_CELL_DEFAULTS = {"bias": True, "nonlinearity": "tanh"}


def _sizes_and_changed_options(module: Module, defaults: dict) -> str:
    """``"input_size, hidden_size"`` followed by ``name=value`` for each option not at its default."""
    parts = [f"{module.input_size}, {module.hidden_size}"]
    for name, default in defaults.items():
        value = getattr(module, name, default)  # LSTMCell and GRUCell have no nonlinearity
        if value != default or type(value) is not type(default):
            parts.append(f"{name}={value}")
    return ", ".join(parts)


def _uniform_by_hidden_size(module: Module) -> None:
    """Draw every parameter from U(-k, k), k = 1 / sqrt(hidden_size): PyTorch's recurrent init."""
    bound = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0.0
    for parameter in module.parameters():
        init.uniform_(parameter, -bound, bound)


class RNNBase(Module):
    """Shared parameters, checks and layer/direction loop of RNN, LSTM and GRU."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None,
                 proj_size: int = 0):
        super().__init__()
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                stacklevel=3,
            )
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be a positive integer")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be a positive integer")
        if not isinstance(proj_size, int) or proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        # What h carries (and each layer passes on): the projection of o * tanh(c) when proj_size > 0.
        out_size = proj_size or hidden_size
        factory = {"device": device, "dtype": dtype}
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else out_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, out_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(empty(shape, **factory)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_by_hidden_size(self)

    def flatten_parameters(self) -> None:
        """Nothing to do: PyTorch packs weights into one buffer for cuDNN; tensorplug has no cuDNN."""

    @property
    def all_weights(self) -> list:
        group = (4 if self.bias else 2) + (1 if self.proj_size else 0)
        return [[getattr(self, name) for name in self._flat_weights_names[i:i + group]]
                for i in range(0, len(self._flat_weights_names), group)]

    def _layer_weights(self, layer: int, direction: int) -> tuple:
        """(w_ih, w_hh, b_ih, b_hh), and w_hr after them for an LSTM with projections."""
        suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
        w_ih, w_hh = getattr(self, "weight_ih" + suffix), getattr(self, "weight_hh" + suffix)
        biases = (getattr(self, "bias_ih" + suffix), getattr(self, "bias_hh" + suffix)) if self.bias else (None, None)
        projection = (getattr(self, "weight_hr" + suffix),) if self.proj_size else ()
        return (w_ih, w_hh, *biases, *projection)

    def _check_input(self, input) -> bool:
        """Checks the input's shape and returns whether it is batched."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{self._get_name()}: expected a Tensor input, got {type(input).__name__}")
        if input.ndim not in (2, 3):
            raise ValueError(
                f"{self._get_name()}({self.extra_repr()}): Expected input to be 2D or 3D, got {input.ndim}D instead "
                f"(shape {list(input.shape)})"
            )
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"{self._get_name()}({self.extra_repr()}): expected input with last dimension {self.input_size} "
                f"(input_size), got shape {list(input.shape)}"
            )
        return input.ndim == 3

    def _check_hidden(self, hx: Tensor, batch: int, name: str, size: int | None = None) -> None:
        expected = (self.num_layers * (2 if self.bidirectional else 1), batch, size or self.hidden_size)
        if tuple(hx.shape) != expected:
            label = _HIDDEN_LABELS.get(name, name)  # PyTorch's words for the state it checks
            raise RuntimeError(f"Expected {label} size {tuple(expected)}, got {list(hx.shape)}")

    def _run(self, x: Tensor, states: list) -> tuple:
        """x: (L, N, input); states: per (layer, direction) a tuple of (N, H) tensors.
        Returns the (L, N, D*H) output and the final states in the same order."""
        directions = 2 if self.bidirectional else 1
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                weights = self._layer_weights(layer, direction)
                out, final = self._run_direction(x, states[layer * directions + direction], weights, direction == 1)
                outputs.append(out)
                finals.append(final)
            x = outputs[0] if directions == 1 else cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, finals

    def _run_direction(self, x: Tensor, state: tuple, weights: tuple, reverse: bool) -> tuple:
        if self.mode == "LSTM":
            return _lstm_direction(x, state, weights, reverse)
        if self.mode == "GRU":
            return _gru_direction(x, state, weights, reverse)
        return _rnn_direction(x, state, weights, reverse, "tanh" if self.mode == "RNN_TANH" else "relu")

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return run_packed(self, input, hx)
        batched = self._check_input(input)
        x = input if batched else input.unsqueeze(1)
        if self.batch_first and batched:
            x = x.transpose(0, 1)
        if x.shape[0] == 0:
            # PyTorch's error; the whole-sequence ops return the last step's state, which needs one.
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        batch = x.shape[1]
        layers = self.num_layers * (2 if self.bidirectional else 1)
        hidden = self._initial_states(hx, batch, batched, layers, x)
        output, finals = self._run(x, hidden)
        if self.batch_first and batched:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(1)
        return output, self._pack_finals(finals, batched)

    def _zeros(self, layers: int, batch: int, x: Tensor, size: int | None = None) -> Tensor:
        return zeros(layers, batch, size or self.hidden_size, dtype=x.dtype, device=x.device)

    def _prepare(self, h: Tensor, batched: bool, batch: int, name: str, size: int | None = None) -> Tensor:
        if not batched:
            if h.ndim != 2:
                raise RuntimeError(f"For unbatched 2-D input, {name} should also be 2-D but got {h.ndim}-D tensor")
            h = h.unsqueeze(1)
        elif h.ndim != 3:
            raise RuntimeError(f"For batched 3-D input, {name} should also be 3-D but got {h.ndim}-D tensor")
        self._check_hidden(h, batch, name, size)
        return h

    def extra_repr(self) -> str:
        return _sizes_and_changed_options(self, _LAYER_DEFAULTS)


class _SingleStateRNN(RNNBase):
    """RNN and GRU: one hidden state ``h``."""

    def _initial_states(self, hx, batch, batched, layers, x) -> list:
        h = self._zeros(layers, batch, x) if hx is None else self._prepare(hx, batched, batch, "hx")
        return [(h[i],) for i in range(layers)]

    def _pack_finals(self, finals: list, batched: bool):
        h = stack([state[0] for state in finals], 0)
        return h if batched else h.squeeze(1)


class RNN(_SingleStateRNN):
    """Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh", bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device, dtype)
        self.nonlinearity = nonlinearity

    def _cell(self, projected, state, w_hh, b_hh):
        return (_rnn_step(projected, state[0], w_hh, b_hh, self.nonlinearity),)


class LSTM(RNNBase):
    """Long short-term memory; returns ``output, (h_n, c_n)``. Gates (i, f, g, o):
    ``c' = f * c + i * g``, ``h' = o * tanh(c')``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device, dtype,
                         proj_size)

    def _initial_states(self, hx, batch, batched, layers, x) -> list:
        h_size = self.proj_size or self.hidden_size
        if hx is None:
            h, c = self._zeros(layers, batch, x, h_size), self._zeros(layers, batch, x)
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError("LSTM: hx must be a tuple (h_0, c_0)")
            h = self._prepare(hx[0], batched, batch, "h_0", h_size)
            c = self._prepare(hx[1], batched, batch, "c_0")
        return [(h[i], c[i]) for i in range(layers)]

    def _run_direction(self, x: Tensor, state: tuple, weights: tuple, reverse: bool) -> tuple:
        if not self.proj_size:
            return _lstm_direction(x, state, weights, reverse)
        # With projections the recurrence goes step by step: the whole-sequence op has no
        # projection (PyTorch's fused kernels have none either; its CPU path loops too).
        w_ih, w_hh, b_ih, b_hh, w_hr = weights
        projected = F.linear(x, w_ih, _both_biases(b_ih, b_hh))
        steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
        outputs = [None] * x.shape[0]
        for t in steps:
            state = self._cell(projected[t], state, w_hh, None, w_hr)
            outputs[t] = state[0]
        return stack(outputs, 0), state

    def _pack_finals(self, finals: list, batched: bool):
        h = stack([state[0] for state in finals], 0)
        c = stack([state[1] for state in finals], 0)
        return (h, c) if batched else (h.squeeze(1), c.squeeze(1))

    def _cell(self, projected, state, w_hh, b_hh, w_hr=None):
        h, c = _lstm_step(projected, state[0], state[1], w_hh, b_hh)
        return (h if w_hr is None else F.linear(h, w_hr)), c


class GRU(_SingleStateRNN):
    """Gated recurrent unit; returns ``output, h_n``. Gates (r, z, n):
    ``n = tanh(x_n + r * (h W_hn^T + b_hn))``, ``h' = (1 - z) * n + z * h``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, device, dtype)

    def _cell(self, projected, state, w_hh, b_hh):
        return (_gru_step(projected, state[0], w_hh, b_hh),)


# --- cells: one time step, the caller loops ---------------------------------------------------------
class RNNCellBase(Module):
    """Parameters and checks shared by RNNCell, LSTMCell and GRUCell (PyTorch's names and shapes:
    ``weight_ih`` (gates*hidden, input), ``weight_hh`` (gates*hidden, hidden), ``bias_ih``, ``bias_hh``)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be a positive integer")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        factory = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **factory))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **factory))
        if bias:
            self.bias_ih = Parameter(empty((num_chunks * hidden_size,), **factory))
            self.bias_hh = Parameter(empty((num_chunks * hidden_size,), **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_by_hidden_size(self)

    def extra_repr(self) -> str:
        return _sizes_and_changed_options(self, _CELL_DEFAULTS)

    def _batched_input(self, input) -> tuple:
        """(input as 2-D, whether it was batched), after PyTorch's checks."""
        if not isinstance(input, Tensor):
            raise TypeError(f"{self._get_name()}: expected a Tensor input, got {type(input).__name__}")
        if input.ndim not in (1, 2):
            raise ValueError(f"{self._get_name()}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{self._get_name()}({self.extra_repr()}): expected input with last dimension "
                               f"{self.input_size} (input_size), got shape {list(input.shape)}")
        return (input, True) if input.ndim == 2 else (input.unsqueeze(0), False)

    def _state(self, hx, x: Tensor, batched: bool, name: str) -> Tensor:
        if hx is None:
            return zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
        if not isinstance(hx, Tensor):
            raise TypeError(f"{self._get_name()}: {name} must be a Tensor, got {type(hx).__name__}")
        if hx.ndim != (2 if batched else 1):
            raise RuntimeError(f"{self._get_name()}: Expected {name} to be {2 if batched else 1}D for "
                               f"{2 if batched else 1}D input, got {hx.ndim}D instead")
        h = hx if batched else hx.unsqueeze(0)
        if tuple(h.shape) != (x.shape[0], self.hidden_size):
            raise RuntimeError(f"{self._get_name()}: expected {name} of shape {[x.shape[0], self.hidden_size]}, "
                               f"got {list(hx.shape)}")
        return h


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input, hx=None):
        x, batched = self._batched_input(input)
        h = self._state(hx, x, batched, "hx")
        h = _rnn_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh, self.nonlinearity)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns ``(h', c')``. Gates (i, f, g, o), as LSTM."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, batched = self._batched_input(input)
        if hx is None:
            h = c = self._state(None, x, batched, "hx")
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"LSTMCell: hx must be a tuple (h_0, c_0), got {type(hx).__name__}")
            h, c = self._state(hx[0], x, batched, "h_0"), self._state(hx[1], x, batched, "c_0")
        h, c = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step. Gates (r, z, n), as GRU."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, batched = self._batched_input(input)
        h = self._state(hx, x, batched, "hx")
        h = _gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)
