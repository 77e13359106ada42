"""PyTorch's ``torch.nn.modules.*`` import paths that training code spells (issue 13, program
batch (e)): the private bases it tests with ``isinstance`` or subclasses, the ``_pair``-style
helpers, ``consume_prefix_in_state_dict_if_present``; and instance norm not being a batch norm
(``convert_sync_batchnorm`` turned InstanceNorm2d into SyncBatchNorm)."""
from collections import OrderedDict

import pytest

import tensorplug as tp
import tensorplug.nn as nn
from tensorplug.nn.modules.batchnorm import _BatchNorm, _NormBase
from tensorplug.nn.modules.conv import _ConvNd, _ConvTransposeNd
from tensorplug.nn.modules.instancenorm import _InstanceNorm
from tensorplug.nn.modules.loss import CrossEntropyLoss, _Loss, _WeightedLoss
from tensorplug.nn.modules.utils import (_list_with_default, _ntuple, _pair, _quadruple, _reverse_repeat_tuple,
                                         _single, _triple, consume_prefix_in_state_dict_if_present)

# Which module classes count as which base, as PyTorch 2.13 answers (checked against it below).
MEMBERSHIP = {
    "BatchNorm2d": (lambda: nn.BatchNorm2d(2), {"_BatchNorm": True, "_NormBase": True, "_InstanceNorm": False}),
    "SyncBatchNorm": (lambda: nn.SyncBatchNorm(2), {"_BatchNorm": True, "_NormBase": True, "_InstanceNorm": False}),
    "LazyBatchNorm1d": (lambda: nn.LazyBatchNorm1d(), {"_BatchNorm": True, "_NormBase": True, "_InstanceNorm": False}),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(2), {"_BatchNorm": False, "_NormBase": True, "_InstanceNorm": True}),
    "LazyInstanceNorm2d": (lambda: nn.LazyInstanceNorm2d(), {"_BatchNorm": False, "_NormBase": True,
                                                            "_InstanceNorm": True}),
    "LayerNorm": (lambda: nn.LayerNorm(2), {"_BatchNorm": False, "_NormBase": False, "_InstanceNorm": False}),
    "GroupNorm": (lambda: nn.GroupNorm(1, 2), {"_BatchNorm": False, "_NormBase": False, "_InstanceNorm": False}),
}
BASES = {"_BatchNorm": _BatchNorm, "_NormBase": _NormBase, "_InstanceNorm": _InstanceNorm}


@pytest.mark.parametrize("name", sorted(MEMBERSHIP))
def test_norm_layers_belong_to_pytorchs_bases(name):
    make, expected = MEMBERSHIP[name]
    module = make()
    assert {base: isinstance(module, BASES[base]) for base in expected} == expected


def test_norm_membership_matches_pytorch():
    torch = pytest.importorskip("torch")
    from torch.nn.modules import batchnorm, instancenorm

    theirs = {"_BatchNorm": batchnorm._BatchNorm, "_NormBase": batchnorm._NormBase,
              "_InstanceNorm": instancenorm._InstanceNorm}
    for name, (_, expected) in MEMBERSHIP.items():
        module = getattr(torch.nn, name)(*(() if name.startswith("Lazy") else (1, 2) if name == "GroupNorm" else (2,)))
        assert {base: isinstance(module, cls) for base, cls in theirs.items()} == expected, name


def test_convolution_and_loss_bases():
    assert all(isinstance(m, _ConvNd) for m in (nn.Conv1d(1, 1, 1), nn.Conv2d(1, 1, 1), nn.ConvTranspose2d(1, 1, 1)))
    assert isinstance(nn.ConvTranspose3d(1, 1, 1), _ConvTransposeNd) and not isinstance(nn.Conv2d(1, 1, 1), _ConvTransposeNd)
    assert isinstance(nn.CrossEntropyLoss(), _WeightedLoss) and isinstance(nn.MSELoss(), _Loss)
    assert not isinstance(nn.MSELoss(), _WeightedLoss)
    assert CrossEntropyLoss is nn.CrossEntropyLoss

    class FocalLoss(_WeightedLoss):
        def forward(self, input, target):
            return nn.functional.cross_entropy(input, target, weight=self.weight, reduction=self.reduction)

    loss = FocalLoss(weight=tp.tensor([1.0, 3.0]), reduction="sum")
    assert loss.reduction == "sum" and "weight" in dict(loss.named_buffers())


def test_convert_sync_batchnorm_leaves_instance_norm():
    model = nn.Sequential(nn.Conv2d(1, 2, 1), nn.InstanceNorm2d(2, affine=True), nn.BatchNorm2d(2))
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert [type(m).__name__ for m in converted] == ["Conv2d", "InstanceNorm2d", "SyncBatchNorm"]


def test_freezing_every_batch_norm_skips_instance_norm():
    model = nn.Sequential(nn.BatchNorm2d(2), nn.InstanceNorm2d(2, affine=True, track_running_stats=True))
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.eval()
            module.weight.requires_grad_(False)
    assert [m.training for m in model] == [False, True]
    assert model[1].weight.requires_grad


def test_tuple_helpers():
    assert _single(3) == (3,) and _pair(3) == (3, 3) and _triple(2) == (2, 2, 2) and _quadruple(0) == (0,) * 4
    assert _pair([1, 2]) == (1, 2) and _pair((4, 5)) == (4, 5) and _triple("ab") == ("a", "b")
    assert _ntuple(5)(1) == (1,) * 5 and _pair.__name__ == "_pair"
    assert _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1) and _reverse_repeat_tuple((3,), 3) == (3, 3, 3)
    assert _list_with_default([None, 3], [1, 2, 5, 6]) == [5, 3] and _list_with_default(4, [1]) == 4
    with pytest.raises(ValueError, match="Input dimension should be at least 3"):
        _list_with_default([1, 2], [3])


def test_consume_prefix_strips_the_data_parallel_prefix():
    wrapped = nn.Sequential(OrderedDict(module=nn.Sequential(nn.Linear(2, 2))))
    state = wrapped.state_dict()
    consume_prefix_in_state_dict_if_present(state, "module.")
    assert list(state) == ["0.weight", "0.bias"]
    assert "" in state._metadata and "0" in state._metadata and not any(k.startswith("module") for k in state._metadata)
    fresh = nn.Sequential(nn.Linear(2, 2))
    fresh.load_state_dict(state)
    assert tp.equal(fresh[0].weight, wrapped.module[0].weight)
    untouched = {"a.weight": tp.ones(1)}
    consume_prefix_in_state_dict_if_present(untouched, "module.")
    assert list(untouched) == ["a.weight"]
