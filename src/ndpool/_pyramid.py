"""``ndpool.pyramid``: a multiscale max pyramid, written to zarr in the OME-Zarr layout.

Level 0 is the input. Level ``k + 1`` is ``ndpool.max_pool`` of level ``k`` read back from the store,
with ``kernel = strides = factor`` on the spatial axes and ``pads_end = (-size) % factor``, so a
partial window at the far edge still makes a pixel: ``ceil(size / factor)`` outputs per axis, each the
maximum of the pixels it covers (padded taps never win). Max pooling never rounds and never invents a
value, so it suits label images (a pixel keeps one of its labels) as well as intensities.

Each level is one dask computation (levels 0 and 1 share one, reading the input once) whose tasks
hold a zarr chunk or two at a time, so the pyramid of an array larger than memory is built in bounded
memory. The OME-Zarr ``multiscales`` metadata (0.5 on zarr v3 by default, or 0.4 on zarr v2) gives
every level a ``scale`` transform (the level-0 pixel size times ``factor**k``) and a ``translation``
to the centre of the pixels a level-``k`` pixel covers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from ._dtypes import DTYPE_NAMES
from ._errors import PoolingError
from ._ops import max_pool

if TYPE_CHECKING:
    import dask.array as da
    import zarr

__all__ = ["add_pyramid_arguments", "pyramid", "pyramid_command", "run_pyramid"]

OP = "pyramid"
AXIS_TYPES = {"t": "time", "c": "channel", "z": "space", "y": "space", "x": "space"}
DEFAULT_AXES = {2: "yx", 3: "zyx", 4: "czyx", 5: "tczyx"}
OME_VERSIONS: dict[str, Literal[2, 3]] = {"0.4": 2, "0.5": 3}  # OME-Zarr version -> zarr format
_U64_SIGN = np.uint64(1 << 63)


def pyramid(array: Any, levels: int, factor: int | Sequence[int] = 2, *, store: Any,
            axes: str | Sequence[str] | None = None, chunks: Sequence[int] | None = None,
            scale: Sequence[float] | None = None, translation: Sequence[float] | None = None,
            units: Mapping[str, str] | None = None, name: str | None = None, ome_version: str = "0.5",
            overwrite: bool = False, progress: bool = False,
            zarr_array_kwargs: Mapping[str, Any] | None = None) -> list[da.Array]:
    """Write a multiscale max pyramid of ``array`` to ``store`` as an OME-Zarr image.

    Parameters
    ----------
    array : array_like, dask array or zarr array
        2 to 5 axes in OME-Zarr order, ``[t][c][z]yx`` (see ``axes``). Any element type: the ones
        ndpool pools natively, and bool, int16, uint16, uint32, uint64, which are pooled through an
        exact order-preserving map to a wider or signed type and back.
    levels : int
        The number of levels written, level 0 (a copy of ``array``) included: ``levels >= 1``.
    factor : int or sequence of int
        Downsampling per spatial axis (an int for all), ``>= 1``; 1 keeps an axis (anisotropic data).
    store : str, pathlib.Path or zarr store
        Where the image group is written.
    axes : str or sequence of str, optional
        Axis names from ``t``, ``c``, ``z``, ``y``, ``x`` in that order, with 2 or 3 spatial axes.
        Default by rank: ``yx``, ``zyx``, ``czyx``, ``tczyx``.
    chunks : sequence of int, optional
        The zarr chunk shape of level 0 (each level uses it, clipped to its shape). Default: the
        chunks of a dask or zarr ``array`` (its first chunk per axis), else dask's automatic chunks.
    scale, translation : sequence of float, optional
        Level 0's pixel size and origin per axis (default 1 and 0).
    units : mapping, optional
        Axis name -> unit, e.g. ``{"x": "micrometer", "y": "micrometer"}``.
    name : str, optional
        The ``multiscales`` name.
    ome_version : {"0.5", "0.4"}
        OME-Zarr 0.5 (zarr format 3, metadata under ``"ome"``) or 0.4 (zarr format 2).
    overwrite : bool
        Replace an existing group at ``store``; otherwise an existing one is an error.
    progress : bool
        Show a progress bar per computation: dask's (``distributed.progress`` under a distributed
        client).
    zarr_array_kwargs : mapping, optional
        More arguments for ``zarr.Group.create_array`` of every level, e.g. ``compressors=None``.

    Returns
    -------
    list of dask.array.Array
        The written levels, read back lazily from the store.

    Notes
    -----
    Spatial size of level ``k + 1``: ``ceil(size_k / factor)``. Memory per task: one input chunk of
    the level being read plus its pooled output, or one output chunk being assembled for writing.

    Examples
    --------
    >>> import numpy as np, ndpool, tempfile, os
    >>> labels = np.zeros((6, 5), np.uint16); labels[1:3, 2:5] = 7
    >>> tmp = tempfile.TemporaryDirectory()
    >>> levels = ndpool.pyramid(labels, 3, store=os.path.join(tmp.name, "labels.zarr"), chunks=(4, 4))
    >>> [level.shape for level in levels]
    [(6, 5), (3, 3), (2, 2)]
    >>> levels[1].compute()
    array([[0, 7, 7],
           [0, 7, 7],
           [0, 0, 0]], dtype=uint16)
    >>> tmp.cleanup()
    """
    try:  # optional dependencies: imported only when used
        import dask.array as da
        import zarr
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(f"ndpool.pyramid needs dask and zarr: pip install 'ndpool[dask]' "
                                  f"({exc})") from exc

    names = _axes(axes, array.ndim if hasattr(array, "ndim") else np.ndim(array))
    spatial = [i for i, a in enumerate(names) if AXIS_TYPES[a] == "space"]
    factors = _factors(factor, len(spatial))
    if not isinstance(levels, (int, np.integer)) or isinstance(levels, bool) or levels < 1:
        raise PoolingError(OP, "levels", "must be an int >= 1 (level 0 included)", levels)
    if ome_version not in OME_VERSIONS:
        raise PoolingError(OP, "ome_version", f"must be one of {', '.join(OME_VERSIONS)}", ome_version)
    base_scale = _per_axis("scale", scale, names, 1.0)
    base_translation = _per_axis("translation", translation, names, 0.0)
    x = _as_dask(array)
    to_pool, pool_dtype, from_pool = _poolable(x.dtype)
    write_chunks = tuple(int(c) for c in chunks) if chunks is not None else tuple(c[0] for c in x.chunks)
    if len(write_chunks) != x.ndim or any(c < 1 for c in write_chunks):
        raise PoolingError(OP, "chunks", "must be positive, one per axis", chunks)
    x = x.rechunk(write_chunks)  # type: ignore[no-untyped-call]  # whole zarr chunks per write

    shapes = [x.shape]
    for _ in range(levels - 1):
        shapes.append(tuple(-(-s // factors[spatial.index(i)]) if i in spatial else s
                            for i, s in enumerate(shapes[-1])))
    zarr_format = OME_VERSIONS[ome_version]
    group = zarr.open_group(store, mode="w" if overwrite else "w-", zarr_format=zarr_format)
    targets = [_create_level(group, str(k), shape, write_chunks, x.dtype, names, zarr_format,
                             zarr_array_kwargs or {}) for k, shape in enumerate(shapes)]

    def down(level: da.Array) -> da.Array:
        mapped = da.map_blocks(to_pool, level, dtype=pool_dtype)  # type: ignore[no-untyped-call]
        pooled = _downsample(mapped, spatial, factors)
        restored = da.map_blocks(from_pool, pooled, dtype=x.dtype)  # type: ignore[no-untyped-call]
        # Pooled blocks are chunks / factor: merged back to whole zarr chunks for writing.
        result: da.Array = restored.rechunk(_clip(write_chunks, pooled.shape))
        return result

    sources = [x] if levels == 1 else [x, down(x)]
    _compute(da.store(sources, targets[: len(sources)], lock=False, compute=False),  # type: ignore[arg-type]
             progress, "levels 0-1" if levels > 1 else "level 0")
    for k in range(2, levels):
        previous: da.Array = da.from_zarr(targets[k - 1])  # type: ignore[no-untyped-call]
        _compute(da.store(down(previous), targets[k], lock=False, compute=False),  # type: ignore[arg-type]
                 progress, f"level {k}")

    group.attrs.update(_metadata(names, shapes, spatial, factors, base_scale, base_translation,
                                 units or {}, name, ome_version))
    return [da.from_zarr(target) for target in targets]  # type: ignore[no-untyped-call]


# --- Pieces ------------------------------------------------------------------------------------------


def _axes(axes: str | Sequence[str] | None, ndim: int) -> list[str]:
    if axes is None:
        if ndim not in DEFAULT_AXES:
            raise PoolingError(OP, "array", "must have 2 to 5 axes ([t][c][z]yx)", ndim)
        return list(DEFAULT_AXES[ndim])
    names = [str(a).lower() for a in axes]
    order = "tczyx"
    ok = (len(names) == ndim and all(a in AXIS_TYPES for a in names) and len(set(names)) == ndim
          and names == sorted(names, key=order.index)
          and 2 <= sum(AXIS_TYPES[a] == "space" for a in names) <= 3)
    if not ok:
        raise PoolingError(OP, "axes", f"must name the array's {ndim} axes from t, c, z, y, x in that "
                                       "order, with 2 or 3 spatial axes (OME-Zarr)", axes)
    return names


def _factors(factor: int | Sequence[int], n: int) -> tuple[int, ...]:
    values = [factor] * n if isinstance(factor, (int, np.integer)) else list(factor)
    if (len(values) != n or not all(isinstance(f, (int, np.integer)) and not isinstance(f, bool)
                                    for f in values) or any(f < 1 for f in values)):
        raise PoolingError(OP, "factor", f"must be positive integers, one per spatial axis ({n})", factor)
    return tuple(int(f) for f in values)


def _per_axis(attribute: str, values: Sequence[float] | None, names: list[str],
              default: float) -> tuple[float, ...]:
    if values is None:
        return (default,) * len(names)
    if len(values) != len(names):
        raise PoolingError(OP, attribute, f"must have one entry per axis ({len(names)})", values)
    return tuple(float(v) for v in values)


def _as_dask(array: Any) -> da.Array:
    import dask.array as da
    import zarr

    result: da.Array
    if isinstance(array, da.Array):
        result = array
    elif isinstance(array, zarr.Array):
        result = da.from_zarr(array)  # type: ignore[no-untyped-call]
    else:
        result = da.from_array(np.asarray(array))  # type: ignore[no-untyped-call]
    return result


def _poolable(dtype: np.dtype[Any]) -> tuple[Callable[[np.ndarray], np.ndarray], np.dtype[Any],
                                             Callable[[np.ndarray], np.ndarray]]:
    """A map to a type ndpool pools, that type, and the map back: exact and order-preserving, so
    max pooling commutes with them."""
    if dtype in DTYPE_NAMES:
        return _same, dtype, _same
    wider = {np.dtype(np.bool_): np.uint8, np.dtype(np.int16): np.int32, np.dtype(np.uint16): np.int32,
             np.dtype(np.uint32): np.int64}
    if dtype in wider:
        target = np.dtype(wider[dtype])
        return _Cast(target), target, _Cast(dtype)
    if dtype == np.uint64:  # flip the top bit: u64 order becomes i64 order
        return _u64_to_i64, np.dtype(np.int64), _i64_to_u64
    raise PoolingError(OP, "array", "dtype must be a boolean, integer or floating-point type", str(dtype))


def _same(a: np.ndarray) -> np.ndarray:
    return a


class _Cast:
    """A picklable cast to one dtype."""

    def __init__(self, dtype: np.dtype[Any]) -> None:
        self.dtype = dtype

    def __call__(self, a: np.ndarray) -> np.ndarray:
        return a.astype(self.dtype)


def _u64_to_i64(a: np.ndarray) -> np.ndarray:
    return (a ^ _U64_SIGN).view(np.int64)


def _i64_to_u64(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint64) ^ _U64_SIGN


def _clip(chunks: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(max(1, min(c, s)) for c, s in zip(chunks, shape, strict=True))


def _downsample(level: da.Array, spatial: list[int], factors: tuple[int, ...]) -> da.Array:
    """One pyramid step: MaxPool with kernel = strides = factor, end-padded to cover every pixel."""
    lead = spatial[0]  # t and c become N and C (unit axes where absent); NCX needs no transposition
    view = level[(slice(None),) * lead + (None,) * (2 - lead)]
    pads_end = [(-level.shape[i]) % f for i, f in zip(spatial, factors, strict=True)]
    pooled = max_pool(view, kernel=list(factors), strides=list(factors), pads_end=pads_end,
                      data_format="NCX")
    result: da.Array = pooled[(slice(None),) * lead + (0,) * (2 - lead)]
    return result


def _create_level(group: zarr.Group, path: str, shape: tuple[int, ...], chunks: tuple[int, ...],
                  dtype: np.dtype[Any], names: list[str], zarr_format: int,
                  kwargs: Mapping[str, Any]) -> zarr.Array[Any]:
    layout: dict[str, Any] = ({"dimension_names": names} if zarr_format == 3 else
                              {"chunk_key_encoding": {"name": "v2", "separator": "/"}})  # 0.4: nested
    return group.create_array(path, shape=shape, chunks=_clip(chunks, shape), dtype=dtype,
                              **{**kwargs, **layout})


def _metadata(names: list[str], shapes: list[tuple[int, ...]], spatial: list[int],
              factors: tuple[int, ...], scale: tuple[float, ...], translation: tuple[float, ...],
              units: Mapping[str, str], name: str | None, version: str) -> dict[str, Any]:
    axes = []
    for a in names:
        entry = {"name": a, "type": AXIS_TYPES[a]}
        if a in units:
            entry["unit"] = units[a]
        axes.append(entry)
    datasets = []
    for k in range(len(shapes)):
        step = [factors[spatial.index(i)] ** k if i in spatial else 1 for i in range(len(names))]
        transforms: list[dict[str, Any]] = [
            {"type": "scale", "scale": [s * f for s, f in zip(scale, step, strict=True)]}]
        # A level-k pixel covers step level-0 pixels: its centre is (step - 1) / 2 pixels further on.
        shift = [t + s * (f - 1) / 2 for t, s, f in zip(translation, scale, step, strict=True)]
        if any(shift):
            transforms.append({"type": "translation", "translation": shift})
        datasets.append({"path": str(k), "coordinateTransformations": transforms})
    multiscale: dict[str, Any] = {"axes": axes, "datasets": datasets, "type": "max", "metadata": {
        "method": "ndpool.max_pool", "kernel": list(factors), "strides": list(factors),
        "pads_end": "(-size) % factor (every pixel covered)"}}
    if name is not None:
        multiscale["name"] = name
    if version == "0.4":
        return {"multiscales": [{"version": version, **multiscale}]}
    return {"ome": {"version": version, "multiscales": [multiscale]}}


def _compute(stored: Any, show: bool, label: str) -> None:
    """Run one computation (``da.store(..., compute=False)``'s result); with ``show``, under dask's
    progress bar, or distributed's when a distributed client is the default scheduler."""
    from dask.base import compute

    if not show:
        compute(stored)  # type: ignore[no-untyped-call]
        return
    print(f"ndpool pyramid: {label}", file=sys.stderr)
    client = _distributed_client()
    if client is None:
        from dask.diagnostics.progress import ProgressBar

        with ProgressBar(out=sys.stderr):  # type: ignore[no-untyped-call]
            compute(stored)  # type: ignore[no-untyped-call]
        return
    from distributed import progress

    futures = client.compute(stored)
    progress(futures)  # type: ignore[no-untyped-call]  # blocks until done, outside a notebook
    client.gather(futures)


def _distributed_client() -> Any:
    if "distributed" not in sys.modules:
        return None
    from distributed import default_client

    try:
        return default_client()  # type: ignore[no-untyped-call]
    except ValueError:
        return None


# --- Command line ------------------------------------------------------------------------------------


def add_pyramid_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``ndpool pyramid``, for the ``ndpool`` command line's subparser."""
    parser.add_argument("source", metavar="IN.zarr", help="a zarr array, or an OME-Zarr image (its level 0)")
    parser.add_argument("target", metavar="OUT.zarr", help="the OME-Zarr image to write")
    parser.add_argument("--levels", type=int, required=True, help="levels written, level 0 included")
    parser.add_argument("--factor", default="2", help="downsampling per spatial axis: 2 (default), or 1,2,2")
    parser.add_argument("--axes", help="axis names of IN in OME order, e.g. czyx (default: IN's own, or by rank)")
    parser.add_argument("--chunks", help="zarr chunk shape of every level, e.g. 1,64,256,256 (default: IN's)")
    parser.add_argument("--ome-version", default="0.5", choices=sorted(OME_VERSIONS),
                        help="0.5 (zarr v3, default) or 0.4 (zarr v2)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run_pyramid(args: argparse.Namespace) -> int:
    """Run ``ndpool pyramid`` on parsed arguments; errors are one line on stderr and status 2."""
    try:
        array, meta = _open_source(args.source)
        factor: int | list[int] = (int(args.factor) if "," not in args.factor
                                   else [int(f) for f in args.factor.split(",")])
        chunks = [int(c) for c in args.chunks.split(",")] if args.chunks else None
        levels = pyramid(array, args.levels, factor, store=args.target,
                         axes=args.axes or meta.get("axes"), chunks=chunks, scale=meta.get("scale"),
                         translation=meta.get("translation"), units=meta.get("units"),
                         ome_version=args.ome_version, overwrite=args.overwrite,
                         progress=not args.no_progress)
    except (PoolingError, ValueError, OSError, ModuleNotFoundError) as exc:  # zarr's errors are ValueErrors
        print(f"ndpool pyramid: error: {exc}", file=sys.stderr)
        return 2
    shapes = ", ".join("x".join(map(str, level.shape)) for level in levels)
    print(f"ndpool pyramid: wrote {len(levels)} levels to {args.target}: {shapes}")
    return 0


def pyramid_command(argv: Sequence[str]) -> int:
    """``ndpool pyramid IN.zarr OUT.zarr --levels N [--factor F] ...`` on its own: the exit status.

    IN is a zarr array, or an OME-Zarr image group (its level 0 is read, with its axes, pixel size,
    origin and units). OUT receives an OME-Zarr image; a progress bar goes to stderr.
    """
    parser = argparse.ArgumentParser(prog="ndpool pyramid",
                                     description="Write a multiscale max pyramid as an OME-Zarr image.")
    add_pyramid_arguments(parser)
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # --help (0), or a usage error already printed by argparse (2)
        return exc.code if isinstance(exc.code, int) else 2
    return run_pyramid(args)


def _open_source(path: str) -> tuple[Any, dict[str, Any]]:
    """A zarr array, or level 0 of an OME-Zarr image with its axes and level-0 transforms."""
    try:
        import zarr
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(f"ndpool pyramid needs dask and zarr: pip install 'ndpool[dask]' "
                                  f"({exc})") from exc

    node = zarr.open(path, mode="r")
    if isinstance(node, zarr.Array):
        dims = [str(d).lower() for d in getattr(node.metadata, "dimension_names", None) or ()]
        named = bool(dims) and all(d in AXIS_TYPES for d in dims)
        return node, {"axes": dims} if named else {}
    attrs = cast(dict[str, Any], node.attrs.asdict())
    multiscales = attrs.get("ome", attrs).get("multiscales")
    if not multiscales:
        raise ValueError(f"{path} is a zarr group without OME-Zarr multiscales metadata")
    image = multiscales[0]
    axes = [a if isinstance(a, str) else a["name"] for a in image.get("axes", [])] or None
    meta: dict[str, Any] = {"axes": axes}
    units = {a["name"]: a["unit"] for a in image.get("axes", []) if isinstance(a, dict) and "unit" in a}
    if units:
        meta["units"] = units
    for transform in image["datasets"][0].get("coordinateTransformations", []):
        if transform.get("type") in ("scale", "translation") and transform["type"] in transform:
            meta[transform["type"]] = transform[transform["type"]]
    return node[image["datasets"][0]["path"]], meta
