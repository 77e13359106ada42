"""Worker batches through shared memory: the values (checked against NumPy), views, dtypes,
reuse of blocks, and no block left in /dev/shm however the iteration ends."""
import errno
import gc
import importlib.util
import os
import subprocess
import sys
import signal
import textwrap
import time

import numpy as np
import pytest

import tensorplug as tp
from tensorplug.utils.data import DataLoader
from tensorplug.utils.data._shared_memory import WorkerBlocks, new_prefix, shm_directory

from data_helpers import BigIterable, CachingCollate, Crashes, FailsAt, Images, OnDevice, image, views_collate


def _our_blocks():
    prefix = f"tensorplug_dl_{os.getpid()}_"
    return [name for name in os.listdir(shm_directory()) if name.startswith(prefix)]


def _expected_images(ids):
    return np.stack([image(i) for i in ids])


def test_batches_match_numpy_over_epochs_with_block_reuse():
    """Two persistent workers, three epochs: every batch equals the NumPy reference, both while
    all batches are held (no block may be reused under them) and when each is dropped at once
    (blocks are reused)."""
    loader = DataLoader(Images(96), batch_size=32, num_workers=2, persistent_workers=True)
    held = list(loader)
    mapped = []
    for _ in range(3):
        for k, (images, labels, masks) in enumerate(loader):
            ids = list(range(32 * k, 32 * k + 32))
            np.testing.assert_array_equal(images.numpy(), _expected_images(ids))
            assert labels.tolist() == ids and masks.dtype == tp.int16 and masks[:, 0, 0].tolist() == ids
        mapped.append(len(loader._persistent_iterator._source._blocks._mappings))
    for k, (images, labels, _) in enumerate(held):
        np.testing.assert_array_equal(images.numpy(), _expected_images(range(32 * k, 32 * k + 32)))
    assert mapped[2] <= mapped[1], f"blocks should be reused, not created for every batch: {mapped}"
    loader._persistent_iterator.close()
    del held, images, masks
    assert _our_blocks() == []


def test_views_dtypes_and_fresh_tensors_from_a_custom_collate():
    """Views of a shared batch keep their strides and offsets; tensors made in the worker outside
    shared memory, bfloat16 and int16 arrive equal to the reference; a tensor sent twice while
    the main process holds the first copy stays intact."""
    batch = next(iter(DataLoader(Images(32), batch_size=32, num_workers=1, collate_fn=views_collate)))
    expected = _expected_images(range(32))
    np.testing.assert_array_equal(batch["t"].numpy(), expected.transpose(0, 3, 2, 1))
    assert batch["t"].stride() == (768, 1, 16, 256)
    np.testing.assert_array_equal(batch["tail"].numpy(), expected[1:, 2])
    np.testing.assert_array_equal(batch["fresh"].numpy(), expected * 2)
    np.testing.assert_array_equal(batch["bf16"].float().numpy(), np.broadcast_to(np.arange(32.0).reshape(-1, 1, 1), (32, 64, 32)))
    assert batch["bf16"].dtype == tp.bfloat16 and batch["labels"].tolist() == list(range(32))

    first, second = list(DataLoader(Images(64), batch_size=32, num_workers=1, collate_fn=CachingCollate()))
    np.testing.assert_array_equal(first[0].numpy(), _expected_images(range(32)))
    np.testing.assert_array_equal(second[0].numpy(), _expected_images(range(32)))
    assert first[0].data_ptr() != second[0].data_ptr()


def test_iterable_dataset_without_auto_batching():
    """batch_size=None with an IterableDataset: each large sample travels through shared memory."""
    samples = list(DataLoader(BigIterable(4), batch_size=None, num_workers=2))
    np.testing.assert_array_equal(np.stack([s.numpy() for s in samples]), np.stack([image(i, (3, 64, 64)) for i in (0, 1, 2, 3)]))


@pytest.mark.skipif(importlib.util.find_spec("tensorplug_npdev") is None, reason="the npdev example plugin is not installed")
def test_tensors_on_another_device_come_back_on_that_device():
    """A batch made on a non-CPU device crosses through host shared memory and arrives on the
    same device, as CUDA batches do in PyTorch."""
    (batch,) = list(DataLoader(OnDevice(32, "npdev"), batch_size=32, num_workers=1))
    assert batch.device.type == "npdev"
    np.testing.assert_array_equal(batch.cpu().numpy(), _expected_images(range(32)))


def test_no_blocks_left_after_full_iteration_and_after_break():
    """Non-persistent workers: nothing of ours in /dev/shm after an epoch, nor after leaving the
    loop early with batches still in flight."""
    loader = DataLoader(Images(256), batch_size=32, num_workers=2)
    assert len(list(loader)) == 8
    gc.collect()
    assert _our_blocks() == []
    for images, _, _ in loader:
        break
    gc.collect()
    assert _our_blocks() == []
    np.testing.assert_array_equal(images.numpy(), _expected_images(range(32)))  # still readable


def test_no_blocks_left_after_a_worker_error_or_crash():
    """A worker's exception reaches the caller; once the iterator is dropped no block remains.
    A worker that dies outright is reported and its blocks are removed at once."""
    def first_error():
        with pytest.raises(ValueError, match="sample 40 is broken"):
            for _ in DataLoader(FailsAt(64, bad=40), batch_size=8, num_workers=2, timeout=60):
                pass

    first_error()
    gc.collect()
    assert _our_blocks() == []
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(DataLoader(Crashes(), batch_size=16, num_workers=2, timeout=60))
    assert _our_blocks() == []


def test_unguarded_main_script_gets_a_clear_error(tmp_path):
    """A script that iterates over a DataLoader with workers at import time, without the
    `if __name__ == "__main__":` guard, fails with a message that says to add the guard."""
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent("""
        import tensorplug as tp
        from tensorplug.utils.data import DataLoader, TensorDataset
        print(list(DataLoader(TensorDataset(tp.arange(4.0)), batch_size=2, num_workers=1, timeout=60)))
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode != 0
    assert 'if __name__ == "__main__":' in done.stderr and "exited unexpectedly" not in done.stderr
    # The main process raises it (after its traceback), not only the worker that printed it.
    main_error = done.stderr[done.stderr.rindex("Traceback (most recent call last)"):]
    assert "RuntimeError: DataLoader worker processes could not start: the main script" in main_error
    assert str(script) in main_error


def test_full_shared_memory_is_a_clear_error(monkeypatch):
    """When /dev/shm has no room for a block, the worker raises an error that names the cause
    and the fixes (instead of dying of SIGBUS on first write), and leaves no file behind."""
    def no_space(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", no_space, raising=False)
    with pytest.raises(RuntimeError, match=r"could not allocate 4096 bytes of shared memory .*--shm-size"):
        WorkerBlocks(new_prefix(), 0).empty((1024,), tp.float32)
    assert _our_blocks() == []


def test_workers_of_a_killed_main_process_exit_and_remove_their_blocks(tmp_path):
    """SIGKILL the main process mid-epoch (no cleanup can run there): its workers notice within
    a few seconds, exit, and remove the block files they had made."""
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent("""
        import os, time
        import tensorplug as tp
        from tensorplug.utils.data import DataLoader, TensorDataset
        if __name__ == "__main__":
            it = iter(DataLoader(TensorDataset(tp.zeros(256, 3, 32, 32)), batch_size=32, num_workers=2))
            next(it)
            print(os.getpid(), flush=True)
            time.sleep(120)
    """))
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        pid = child.stdout.readline().strip()
        prefix = f"tensorplug_dl_{pid}_"
        leftover = lambda: [n for n in os.listdir(shm_directory()) if n.startswith(prefix)]  # noqa: E731
        deadline = time.monotonic() + 10
        while not leftover() and time.monotonic() < deadline:  # the workers prefetch into new blocks
            time.sleep(0.1)
        assert leftover(), "expected blocks in flight while the main process sleeps"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
    deadline = time.monotonic() + 15
    while leftover() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert leftover() == []
