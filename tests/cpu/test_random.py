"""Random numbers: reproducibility, distributions, generators, and the Philox4x32-10 mapping bit for bit.

The reference Philox4x32-10 below is written from the algorithm's definition (Salmon et al.,
"Parallel random numbers: as easy as 1, 2, 3"), independent of tensorplug's kernels.
"""
import math

import numpy as np
import pytest

import tensorplug as tp

N = 100_000
MASK32 = 0xFFFFFFFF


def philox4x32_10(counter, key):
    """One Philox4x32-10 block: four 32-bit words from a 4-word counter and a 2-word key."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for round_ in range(10):
        if round_:
            k0 = (k0 + 0x9E3779B9) & MASK32
            k1 = (k1 + 0xBB67AE85) & MASK32
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        hi0, lo0 = p0 >> 32, p0 & MASK32
        hi1, lo1 = p1 >> 32, p1 & MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def philox_block(seed, block):
    """The words of Philox block number ``block`` (offset + j) for ``seed``."""
    key = (seed & MASK32, (seed >> 32) & MASK32)
    return philox4x32_10((block & MASK32, (block >> 32) & MASK32, 0, 0), key)


def reference_uniform_float32(seed, count, first_block=0):
    """u = (w >> 8) * 2**-24 for element i from block first_block + i // 4, word i % 4."""
    out = []
    for i in range(count):
        word = philox_block(seed, first_block + i // 4)[i % 4]
        out.append((word >> 8) * 2.0**-24)
    return np.array(out, dtype=np.float32)


def reference_normal_float32(seed, count, first_block=0):
    """Box-Muller on word pairs (w0, w1), (w2, w3) of each block, in float64, cast to float32."""
    out = []
    for i in range(0, count, 2):
        block = philox_block(seed, first_block + i // 4)
        w_even, w_odd = block[i % 4], block[i % 4 + 1]
        u1 = ((w_even >> 8) + 1) * 2.0**-24
        u2 = (w_odd >> 8) * 2.0**-24
        r = math.sqrt(-2.0 * math.log(u1))
        out.extend([r * math.cos(2 * math.pi * u2), r * math.sin(2 * math.pi * u2)])
    return np.array(out[:count], dtype=np.float64).astype(np.float32)


def test_reference_philox_known_answer():
    """The reference Philox matches Random123's published known-answer vector (counter 0, key 0)."""
    assert philox4x32_10((0, 0, 0, 0), (0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)


@pytest.mark.parametrize("seed", [0, 1, 2**32 + 5, 123456789012345])
def test_rand_float32_is_philox_bit_exact(seed):
    """tp.rand after manual_seed(seed) is the reference Philox uniform mapping, bit for bit."""
    tp.manual_seed(seed)
    got = tp.rand(8).numpy()
    np.testing.assert_array_equal(got.view(np.uint32), reference_uniform_float32(seed, 8).view(np.uint32))


def test_rand_offset_advances_by_whole_blocks():
    """A call for 5 values uses 2 blocks; the next call starts at block 2."""
    tp.manual_seed(0)
    tp.rand(5)
    got = tp.rand(4).numpy()
    np.testing.assert_array_equal(got, reference_uniform_float32(0, 4, first_block=2))


def test_large_rand_is_philox_bit_exact_everywhere():
    """Elements of a 100k rand (the parallel path) match the reference at scattered positions."""
    tp.manual_seed(0)
    got = tp.rand(N).numpy()
    for i in (0, 1, 7, 32767, 32768, 40001, 77777, N - 1):
        block = philox_block(0, i // 4)
        assert got[i] == np.float32((block[i % 4] >> 8) * 2.0**-24), i


@pytest.mark.parametrize("seed", [0, 42])
def test_randn_float32_follows_the_box_muller_mapping(seed):
    """tp.randn is Box-Muller on the Philox words, equal to the float64 reference up to rounding."""
    tp.manual_seed(seed)
    got = tp.randn(8).numpy()
    np.testing.assert_allclose(got, reference_normal_float32(seed, 8), rtol=1e-5, atol=1e-6)


def test_randn_odd_count_and_offset():
    """An odd count uses the even element of the last pair; the next call starts on a new block."""
    tp.manual_seed(3)
    got = tp.randn(5).numpy()
    np.testing.assert_allclose(got, reference_normal_float32(3, 5), rtol=1e-5, atol=1e-6)
    after = tp.randn(4).numpy()
    np.testing.assert_allclose(after, reference_normal_float32(3, 4, first_block=2), rtol=1e-5, atol=1e-6)


def test_same_seed_same_numbers():
    """Re-seeding replays rand, randn and randint exactly."""
    draws = []
    for _ in range(2):
        tp.manual_seed(1234)
        draws.append((tp.rand(50).numpy(), tp.randn(3, 7).numpy(), tp.randint(0, 100, (20,)).numpy()))
    for first, second in zip(*draws):
        np.testing.assert_array_equal(first, second)


def test_different_seeds_differ():
    """Two seeds give different streams."""
    tp.manual_seed(1)
    a = tp.rand(100).numpy()
    tp.manual_seed(2)
    b = tp.rand(100).numpy()
    assert (a != b).mean() > 0.99


def test_consecutive_calls_differ():
    """Two calls without re-seeding give different numbers."""
    a, b = tp.rand(100).numpy(), tp.rand(100).numpy()
    assert (a != b).mean() > 0.99


def test_values_depend_only_on_position():
    """Counter-based: rand(4) is the prefix of rand(1000) from the same state."""
    tp.manual_seed(9)
    short = tp.rand(4).numpy()
    tp.manual_seed(9)
    long = tp.rand(1000).numpy()
    np.testing.assert_array_equal(short, long[:4])


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64, tp.float16], ids=lambda d: d.name)
def test_rand_range_and_moments(dtype):
    """rand is in [0, 1) with mean 1/2 and variance 1/12 (5-sigma bounds on 100k samples)."""
    x = tp.rand(N, dtype=dtype).numpy().astype(np.float64)
    assert x.min() >= 0.0
    assert x.max() < 1.0
    assert abs(x.mean() - 0.5) < 5 * math.sqrt(1 / 12 / N)
    assert abs(x.var() - 1 / 12) < 5 * math.sqrt((1 / 80 - 1 / 144) / N) + (2e-3 if dtype is tp.float16 else 0)


def test_float64_rand_uses_more_than_24_bits():
    """float64 rand has finer resolution than 2**-24 (a different mapping from float32's)."""
    x = tp.rand(1000, dtype=tp.float64).numpy()
    assert np.mean((x * 2.0**24) % 1 != 0) > 0.9
    assert x.min() >= 0 and x.max() < 1


@pytest.mark.parametrize("dtype", [tp.float32, tp.float64])
def test_randn_moments(dtype):
    """randn has mean 0, std 1, 68.3% within one sigma (5-sigma bounds on 100k samples)."""
    x = tp.randn(N, dtype=dtype).numpy().astype(np.float64)
    assert abs(x.mean()) < 5 / math.sqrt(N)
    assert abs(x.std() - 1) < 5 / math.sqrt(2 * N)
    within = np.mean(np.abs(x) < 1)
    assert abs(within - 0.682689) < 5 * math.sqrt(0.6827 * 0.3173 / N)
    assert np.all(np.isfinite(x))


def test_normal_and_uniform_with_parameters():
    """normal_(mean, std) and uniform_(a, b) shift and scale the distributions."""
    x = tp.empty(N).normal_(3.0, 2.0).numpy().astype(np.float64)
    assert abs(x.mean() - 3.0) < 5 * 2 / math.sqrt(N)
    assert abs(x.std() - 2.0) < 5 * 2 / math.sqrt(2 * N)
    u = tp.empty(N).uniform_(-2.0, 5.0).numpy()
    assert u.min() >= -2.0 and u.max() < 5.0
    assert abs(u.mean() - 1.5) < 5 * 7 * math.sqrt(1 / 12 / N)


def test_random_fill_of_a_non_contiguous_tensor():
    """uniform_ on a strided view fills only the view."""
    base = tp.zeros(4, 6)
    base[:, ::2].uniform_(1.0, 2.0)
    values = base.numpy()
    assert np.all(values[:, 1::2] == 0)
    assert np.all((values[:, ::2] >= 1) & (values[:, ::2] < 2))


@pytest.mark.parametrize("low, high", [(0, 10), (-5, 5), (3, 4), (0, 2**40)])
def test_randint_range_and_uniformity(low, high):
    """randint is int64 in [low, high); each of 10 values gets ~10% of 100k draws (5 sigma)."""
    x = tp.randint(low, high, (N,))
    assert x.dtype is tp.int64
    values = x.numpy()
    assert values.min() >= low and values.max() < high
    span = high - low
    if span <= 10:
        counts = np.bincount(values - low, minlength=span)
        p = 1 / span
        assert np.all(np.abs(counts - N * p) <= 5 * math.sqrt(N * p * (1 - p)))
    else:
        assert abs(values.mean() - (low + high - 1) / 2) < 5 * span / math.sqrt(12 * N)


def test_randint_forms_and_dtype():
    """randint(high, size) and randint(low, high, size, dtype=...) work."""
    x = tp.randint(5, (3, 4))
    assert x.shape == (3, 4) and x.numpy().max() < 5 and x.numpy().min() >= 0
    y = tp.randint(0, 100, (50,), dtype=tp.int16)
    assert y.dtype is tp.int16 and y.numpy().max() < 100


def test_generator_matches_global_seed():
    """A Generator seeded with s gives what the global generator gives after manual_seed(s)."""
    g = tp.Generator().manual_seed(7)
    tp.manual_seed(7)
    np.testing.assert_array_equal(tp.rand(16, generator=g).numpy(), tp.rand(16).numpy())


def test_generator_is_independent_of_the_global_one():
    """Drawing from a Generator does not advance the global generator, and vice versa."""
    tp.manual_seed(1)
    expected_global = tp.rand(8).numpy()
    g = tp.Generator().manual_seed(2)
    expected_g = tp.rand(8, generator=g).numpy()

    tp.manual_seed(1)
    g = tp.Generator().manual_seed(2)
    tp.rand(100, generator=g)
    np.testing.assert_array_equal(tp.rand(8).numpy(), expected_global)
    g2 = tp.Generator().manual_seed(2)
    tp.rand(100)
    np.testing.assert_array_equal(tp.rand(8, generator=g2).numpy(), expected_g)


def test_generator_state_round_trip():
    """get_state/set_state replay a generator's future numbers."""
    g = tp.Generator().manual_seed(5)
    tp.rand(3, generator=g)
    state = g.get_state()
    a = tp.randn(10, generator=g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(tp.randn(10, generator=g).numpy(), a)
    assert g.initial_seed() == 5


def test_random_argument_errors():
    """Invalid ranges raise RuntimeError; integer tensors refuse uniform_/normal_."""
    with pytest.raises(RuntimeError):
        tp.randint(5, 5, (3,))
    with pytest.raises(RuntimeError):
        tp.empty(3).uniform_(2.0, 1.0)
    with pytest.raises(RuntimeError):
        tp.empty(3).normal_(0.0, -1.0)
    with pytest.raises(TypeError):
        tp.zeros(3, dtype=tp.int64).uniform_()
