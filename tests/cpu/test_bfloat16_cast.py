"""float32 -> bfloat16 casts on the CPU (sixteen lanes at a time on AVX-512, bf16_round.h; the
scalar loop elsewhere) round as PyTorch 2.13 does: to nearest even, NaN stays NaN, overflow goes to
infinity, subnormals and signed zeros are kept, in every lane of a vector and its masked tail."""
import numpy as np

import tensorplug as tp
from tests.torch_reference import torch_or_skip


def _edge_values() -> np.ndarray:
    bits = np.array([
        0x00000000, 0x80000000,              # signed zeros
        0x3f808000, 0x3f818000,              # ties: to even below, to even above
        0x3f808001, 0x3f807fff,              # just above and below a tie
        0x7f7fffff, 0xff7fffff, 0x7f7f8000,  # overflow to +-inf, a tie to the largest bf16
        0x7f800000, 0xff800000,              # infinities
        0x7fc00000, 0xffc00001, 0x7f800001,  # NaNs (the last a signalling one, rounding up into inf)
        0x00000001, 0x00008000, 0x0000c000,  # subnormals: rounds to 0, a tie, rounds up
        0x807fffff,                          # the largest negative subnormal, rounding to a normal
    ], dtype=np.uint32)
    return bits.view(np.float32)


def test_float32_to_bfloat16_matches_torch():
    torch = torch_or_skip()
    rng = np.random.default_rng(9)
    # 37 values: a 32-value step (two vectors, one store), edges in it, and a masked tail of 5
    values = np.concatenate([_edge_values(), rng.standard_normal(19).astype(np.float32) * 1e3])
    result = tp.tensor(values).to(tp.bfloat16)
    expected = torch.tensor(values).to(torch.bfloat16)
    got_bits = result.view(tp.int16).numpy()
    want_bits = expected.view(torch.int16).numpy()
    nan = np.isnan(values)
    np.testing.assert_array_equal(got_bits[~nan], want_bits[~nan])
    assert np.all(np.isnan(result.float().numpy()[nan]))
    # NaNs keep their sign
    np.testing.assert_array_equal(np.signbit(result.float().numpy()[nan]), np.signbit(values[nan]))
