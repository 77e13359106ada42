"""ChainDataset (streams one after another, ``a + b`` of IterableDatasets) and StackDataset
(datasets side by side, samples as tuples or dicts), against hand-written samples and torch."""
import pytest

import tensorplug as tp
from tensorplug.utils.data import ChainDataset, DataLoader, IterableDataset, StackDataset, TensorDataset


class CountingStream(IterableDataset):
    """The integers start..stop-1, with a length."""

    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self):
        return self.stop - self.start


class LengthlessStream(IterableDataset):
    def __iter__(self):
        return iter([7, 8])


class BatchReading:
    """A map-style dataset that also reads batches, recording each batch it is asked for."""

    def __init__(self, values, answer_size=None):
        self.values, self.batches, self.answer_size = values, [], answer_size

    def __len__(self):
        return len(self.values)

    def __getitem__(self, index):
        return self.values[index]

    def __getitems__(self, indices):
        self.batches.append(list(indices))
        samples = [self.values[index] for index in indices]
        return samples if self.answer_size is None else samples[:self.answer_size]


def test_adding_streams_chains_them():
    """``a + b`` of streams is a ChainDataset reading a, then b, every epoch; len adds up."""
    a, b = CountingStream(0, 3), CountingStream(10, 12)
    both = a + b
    assert isinstance(both, ChainDataset) and both.datasets == [a, b]
    assert list(both) == [0, 1, 2, 10, 11] and list(both) == [0, 1, 2, 10, 11]
    assert len(both) == 5
    three = both + CountingStream(20, 21)
    assert list(three) == [0, 1, 2, 10, 11, 20] and three.datasets[0] is both


def test_chain_of_an_iterable_reads_every_epoch():
    """Parts given as a one-shot iterator are kept, so the second epoch is not empty."""
    chain = ChainDataset(iter([CountingStream(0, 2), CountingStream(5, 6)]))
    assert list(chain) == [0, 1, 5] and list(chain) == [0, 1, 5] and len(chain) == 3
    empty = ChainDataset([])
    assert list(empty) == [] and len(empty) == 0


def test_chain_refuses_map_style_parts():
    """A map-style part is refused with TypeError naming its position and class."""
    with pytest.raises(TypeError, match="ChainDataset only supports IterableDataset.*part 1 is TensorDataset"):
        ChainDataset([CountingStream(0, 1), TensorDataset(tp.arange(3))])
    with pytest.raises(TypeError, match="part 1 is TensorDataset"):
        CountingStream(0, 1) + TensorDataset(tp.arange(3))


def test_chain_len_needs_every_part_len():
    """A part without __len__ makes len() raise Python's TypeError; iterating still works."""
    chain = CountingStream(0, 2) + LengthlessStream()
    assert list(chain) == [0, 1, 7, 8]
    with pytest.raises(TypeError, match="LengthlessStream"):
        len(chain)


def test_chain_through_dataloader():
    """A DataLoader batches across the parts' boundary as one stream."""
    batches = [batch.tolist() for batch in DataLoader(CountingStream(0, 3) + CountingStream(10, 12), batch_size=2)]
    assert batches == [[0, 1], [2, 10], [11]]


def test_chain_matches_torch():
    """Samples and length as torch's ChainDataset."""
    torch = pytest.importorskip("torch")

    class TorchStream(torch.utils.data.IterableDataset):
        def __init__(self, start, stop):
            self.start, self.stop = start, stop

        def __iter__(self):
            return iter(range(self.start, self.stop))

        def __len__(self):
            return self.stop - self.start

    ours = CountingStream(0, 3) + CountingStream(10, 12) + CountingStream(4, 4)
    theirs = TorchStream(0, 3) + TorchStream(10, 12) + TorchStream(4, 4)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_stack_positional_gives_tuples():
    """Positional datasets give tuples of their samples; len is their common length."""
    stacked = StackDataset(TensorDataset(tp.arange(3)), [10, 11, 12])
    assert len(stacked) == 3 and isinstance(stacked.datasets, tuple)
    first, second = stacked[1]
    assert first[0].item() == 1 and second == 11
    assert stacked[-1][1] == 12


def test_stack_keywords_give_dicts():
    """Keyword datasets give dicts, in the order the keywords were given."""
    stacked = StackDataset(label=[0, 1, 1], image=["a", "b", "c"])
    assert stacked[2] == {"label": 1, "image": "c"} and list(stacked[0]) == ["label", "image"]
    assert stacked.datasets == {"label": [0, 1, 1], "image": ["a", "b", "c"]}


def test_stack_bad_arguments():
    """Mixed forms, no dataset, or unequal lengths raise torch's ValueErrors; out-of-range indices
    raise the part's IndexError."""
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset([1], y=[2])
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match=r"Size mismatch between datasets: lengths \[3, 2\]"):
        StackDataset([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(x=[1, 2, 3], y=[1, 2])
    with pytest.raises(IndexError):
        StackDataset([1, 2, 3])[3]


def test_stack_getitems_reads_batches_at_once():
    """__getitems__ passes the whole index list to parts that read batches and checks their answer."""
    batch_reader = BatchReading([100, 200, 300])
    stacked = StackDataset(batch_reader, ["a", "b", "c"])
    assert stacked.__getitems__([2, 0]) == [(300, "c"), (100, "a")]
    assert batch_reader.batches[-1] == [2, 0]
    as_dict = StackDataset(number=batch_reader, letter=["a", "b", "c"])
    assert as_dict.__getitems__([1]) == [{"number": 200, "letter": "b"}]
    assert stacked.__getitems__([]) == []
    with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2, got 1"):
        StackDataset(BatchReading([1, 2, 3], answer_size=1), [4, 5, 6]).__getitems__([0, 1])


def test_stack_through_dataloader():
    """The DataLoader reads a StackDataset's batches through __getitems__ and collates tuples/dicts."""
    x = tp.arange(6.0).reshape(3, 2)
    batches = list(DataLoader(StackDataset(x=TensorDataset(x), y=[10, 11, 12]), batch_size=2))
    assert batches[0]["x"][0].tolist() == [[0.0, 1.0], [2.0, 3.0]] and batches[0]["y"].tolist() == [10, 11]
    assert batches[1]["x"][0].tolist() == [[4.0, 5.0]] and batches[1]["y"].tolist() == [12]
    pairs = list(DataLoader(StackDataset([1, 2, 3], [4, 5, 6]), batch_size=3))
    assert [column.tolist() for column in pairs[0]] == [[1, 2, 3], [4, 5, 6]]


def test_stack_matches_torch():
    """Items, batches and length as torch's StackDataset on the same plain data."""
    torch = pytest.importorskip("torch")
    columns = ([1, 2, 3, 4], ["a", "b", "c", "d"])
    ours, theirs = StackDataset(*columns), torch.utils.data.StackDataset(*columns)
    assert len(ours) == len(theirs)
    assert [ours[i] for i in range(4)] == [theirs[i] for i in range(4)]
    assert ours.__getitems__([3, 1]) == theirs.__getitems__([3, 1])
    ours, theirs = StackDataset(n=columns[0], s=columns[1]), torch.utils.data.StackDataset(n=columns[0], s=columns[1])
    assert ours[2] == theirs[2] and ours.__getitems__([0, 3]) == theirs.__getitems__([0, 3])
