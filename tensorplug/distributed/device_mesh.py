"""``DeviceMesh`` and ``init_device_mesh``: the world's ranks laid out as an n-dimensional array,
with one process group along each dimension (as ``torch.distributed.device_mesh``).

A 2-D mesh ``[[0, 1], [2, 3]]`` named ``("replicate", "shard")`` gives rank 1 the group {1, 3}
along "replicate" and {0, 1} along "shard": hybrid sharding shards within a row and replicates
down a column. Each dimension's groups are made in one collective (every rank of the world
calls the constructor); slicing a mesh by names (``mesh["shard"]``) makes no new group: the
sub-mesh reuses its parent's groups for the dimensions it keeps.
"""
from __future__ import annotations

import numpy as np

from .. import distributed as dist
from ..frontend import dtypes as _dt
from ..frontend.factories import tensor as _tensor
from ..frontend.tensor import Tensor

__all__ = ["DeviceMesh", "init_device_mesh"]


class DeviceMesh:
    """``DeviceMesh(device_type, mesh, mesh_dim_names=None)``: ``mesh`` (a tensor, an array or
    nested lists) holds distinct global ranks; its shape is the mesh's."""

    def __init__(self, device_type: str, mesh, *, mesh_dim_names: tuple[str, ...] | None = None,
                 backend_override=None, _groups: list | None = None):
        ranks = np.asarray(mesh.tolist() if isinstance(mesh, Tensor) else mesh, dtype=np.int64)
        if ranks.ndim == 0:
            raise ValueError(f"DeviceMesh: the mesh must have at least one dimension; got {ranks.tolist()}")
        if len(np.unique(ranks)) != ranks.size:
            raise RuntimeError(f"DeviceMesh: the mesh must hold distinct ranks; got {ranks.tolist()}")
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != ranks.ndim:
                raise RuntimeError(f"mesh_dim_names must have one name per mesh dimension: {len(mesh_dim_names)} names "
                                   f"for a mesh of shape {ranks.shape}")
            if len(set(mesh_dim_names)) != len(mesh_dim_names):
                raise RuntimeError(f"Each mesh_dim_name must be unique. Found repeated mesh_dim_name in mesh_dim_names "
                                   f"{mesh_dim_names}")
        self._device_type = _check_device_type(device_type)
        self._ranks = ranks
        self._names = mesh_dim_names
        where = np.argwhere(ranks == dist.get_rank())
        self._coordinate = tuple(int(c) for c in where[0]) if len(where) else None
        self._groups = _groups if _groups is not None else [_groups_along(ranks, d) for d in range(ranks.ndim)]

    # --- what PyTorch's DeviceMesh exposes -------------------------------------------------
    @property
    def device_type(self) -> str:
        return self._device_type

    @property
    def mesh(self) -> Tensor:
        """The ranks, as PyTorch 2.13 gives them (an int32 CPU tensor of the mesh's shape)."""
        return _tensor(self._ranks.tolist(), dtype=_dt.int32)

    @property
    def mesh_dim_names(self) -> tuple[str, ...] | None:
        return self._names

    @property
    def ndim(self) -> int:
        return self._ranks.ndim

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._ranks.shape)

    def size(self, mesh_dim: int | None = None) -> int:
        return int(self._ranks.size) if mesh_dim is None else int(self._ranks.shape[mesh_dim])

    def get_group(self, mesh_dim: int | str | None = None):
        """The process group along ``mesh_dim`` that holds this rank (the only one of a 1-D mesh)."""
        return self._groups[self._dim(mesh_dim, "get_group")]

    def get_all_groups(self) -> list:
        return list(self._groups)

    def get_rank(self) -> int:
        return dist.get_rank()

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This rank's coordinate along ``mesh_dim``."""
        dim = self._dim(mesh_dim, "get_local_rank")
        if self._coordinate is None:
            raise RuntimeError(f"get_local_rank: rank {dist.get_rank()} is not part of the mesh {self._ranks.tolist()}")
        return self._coordinate[dim]

    def get_coordinate(self) -> tuple[int, ...] | None:
        """This rank's position in the mesh (None where it is not part of it)."""
        return self._coordinate

    def __getitem__(self, mesh_dim_names: str | tuple[str, ...]) -> "DeviceMesh":
        """The sub-mesh along the named dimensions (in the order given) through this rank."""
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if self._names is None or any(n not in self._names for n in names) or len(set(names)) != len(names):
            valid = [] if self._names is None else list(self._names)
            raise KeyError(f"Invalid mesh_dim_names {names} specified. Valid mesh_dim_names are {valid}.")
        if names == self._names:
            return self
        if self._coordinate is None:
            raise RuntimeError(f"DeviceMesh: rank {dist.get_rank()} is not part of the mesh {self._ranks.tolist()}")
        dims = [self._names.index(n) for n in names]
        index = tuple(slice(None) if d in dims else c for d, c in enumerate(self._coordinate))
        kept = [d for d in range(self.ndim) if d in dims]  # the order the indexing leaves them in
        ranks = np.transpose(self._ranks[index], [kept.index(d) for d in dims])
        return DeviceMesh(self._device_type, ranks, mesh_dim_names=names, _groups=[self._groups[d] for d in dims])

    @staticmethod
    def from_group(group, device_type: str, mesh=None, *, mesh_dim_names: tuple[str, ...] | None = None) -> "DeviceMesh":
        """A 1-D mesh over an existing group (its ranks, in group order, unless ``mesh`` says)."""
        if isinstance(group, (list, tuple)):
            if mesh is None:
                raise ValueError("DeviceMesh.from_group: a list of groups needs the mesh (its ranks) too")
            return DeviceMesh(device_type, mesh, mesh_dim_names=mesh_dim_names, _groups=list(group))
        ranks = dist.get_process_group_ranks(group) if mesh is None else mesh
        return DeviceMesh(device_type, ranks, mesh_dim_names=mesh_dim_names, _groups=[group])

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DeviceMesh) and self._device_type == other._device_type
                and self._names == other._names and np.array_equal(self._ranks, other._ranks))

    def __hash__(self) -> int:
        return hash((self._device_type, self._names, self.shape, tuple(self._ranks.ravel().tolist())))

    def __repr__(self) -> str:
        sizes = self.shape if self._names is None else "(" + ", ".join(
            f"{n}={s}" for n, s in zip(self._names, self.shape)) + ")"
        return f"DeviceMesh({sizes}, '{self._device_type}', ranks={self._ranks.tolist()})"

    def _dim(self, mesh_dim: int | str | None, what: str) -> int:
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(f"{what}: found the DeviceMesh has {self.ndim} dimensions; the optional kwarg "
                                   "`mesh_dim` needs to be specified when device_mesh.ndim > 1 (get_all_groups() "
                                   "gives every group)")
            return 0
        if isinstance(mesh_dim, str):
            if self._names is None or mesh_dim not in self._names:
                raise KeyError(f"{what}: mesh dimension {mesh_dim!r} is not one of {self._names}")
            return self._names.index(mesh_dim)
        if not -self.ndim <= mesh_dim < self.ndim:
            raise IndexError(f"{what}: mesh_dim {mesh_dim} is out of range for a mesh of {self.ndim} dimensions")
        return mesh_dim % self.ndim


def init_device_mesh(device_type: str, mesh_shape: tuple[int, ...], *, mesh_dim_names: tuple[str, ...] | None = None,
                     backend_override=None) -> DeviceMesh:
    """A mesh of ``mesh_shape`` over the world's ranks in order (row-major), initializing the
    default process group first if the program has not."""
    mesh_shape = tuple(int(s) for s in mesh_shape)
    if mesh_dim_names is not None and len(mesh_dim_names) != len(mesh_shape):
        raise RuntimeError(f"mesh_shape and mesh_dim_names should have same length! Found len(mesh_dim_names): "
                           f"{len(mesh_dim_names)} and len(mesh_shape):{len(mesh_shape)}.")
    _check_device_type(device_type)
    if not dist.is_initialized():
        dist.init_process_group()
    world = dist.get_world_size()
    if int(np.prod(mesh_shape)) != world:
        raise RuntimeError(f"init_device_mesh: a mesh of shape {mesh_shape} holds {int(np.prod(mesh_shape))} ranks, "
                           f"but the world has {world}")
    return DeviceMesh(device_type, np.arange(world).reshape(mesh_shape), mesh_dim_names=mesh_dim_names)


def _check_device_type(device_type) -> str:
    if not isinstance(device_type, str) or ":" in device_type:
        raise RuntimeError(f"Device type with index is not supported but got {device_type}. If you maintained a "
                           "'torch.device' object, it's recommended to pass in 'device.type'.")
    return device_type


def _groups_along(ranks: np.ndarray, dim: int):
    """This rank's group among the lines of ``ranks`` along ``dim`` (one collective for all lines)."""
    lines = np.moveaxis(ranks, dim, -1).reshape(-1, ranks.shape[dim])
    mine, _ = dist.new_subgroups_by_enumeration(lines.tolist())
    return mine
