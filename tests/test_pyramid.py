# Needs the optional extra (pyproject.toml):
#   dask = ["dask[array]>=2025.2", "distributed>=2025.2", "zarr>=3.0.8"]
# and, for the tests only, "ome-zarr>=0.12" (its reader, and the ome-zarr-models schemas it brings).
"""ndpool.pyramid and ``ndpool pyramid``: levels, shapes, dtypes, OME-Zarr metadata, and every level
equal to in-memory pooling of the level before; the result read back by ome-zarr-py's reader."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import dask.array as da
import numpy as np
import pytest
import zarr
from cases import bits

import ndpool
from ndpool.cli import main


def _pool_in_memory(level: np.ndarray, factors: tuple[int, ...], nsp: int) -> np.ndarray:
    """One pyramid step in memory: ndpool.max_pool, kernel = strides = factor, end-padded."""
    lead = level.ndim - nsp
    view = level[(slice(None),) * lead + (None,) * (2 - lead)]
    pads_end = [(-s) % f for s, f in zip(level.shape[lead:], factors, strict=True)]
    pooled = ndpool.max_pool(view, kernel=factors, strides=factors, pads_end=pads_end, data_format="NCX")
    return pooled[(slice(None),) * lead + (0,) * (2 - lead)]


def _block_max(level: np.ndarray, factors: tuple[int, ...], nsp: int) -> np.ndarray:
    """The same step with plain NumPy (types ndpool does not pool natively): pad with the type's
    minimum, split into factor-sized blocks, take each block's maximum."""
    lead = level.ndim - nsp
    low = np.iinfo(level.dtype).min if level.dtype != bool else False
    pad = [(0, 0)] * lead + [(0, (-s) % f) for s, f in zip(level.shape[lead:], factors, strict=True)]
    padded = np.pad(level, pad, constant_values=low)
    split = padded.shape[:lead] + tuple(x for s, f in zip(padded.shape[lead:], factors, strict=True)
                                        for x in (s // f, f))
    return padded.reshape(split).max(axis=tuple(lead + 2 * i + 1 for i in range(nsp)))


def _data(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt == bool:
        return rng.random(shape) < 0.2
    if dt.kind in "iu":
        info = np.iinfo(dt)  # labels: few values, and the type's extremes
        return rng.choice(np.array([info.min, 0, 1, 5, info.max], dtype=dt), size=shape)
    x = rng.standard_normal(shape).astype(dt)
    x[rng.random(shape) < 0.05] = np.nan  # NaN propagates under the spec preset
    return x


NATIVE = ("float32", "float64", "float16", "int8", "uint8", "int32", "int64")
MAPPED = ("bool", "int16", "uint16", "uint32", "uint64")


@pytest.mark.parametrize("dtype", NATIVE + MAPPED)
def test_levels_shapes_dtypes_and_values(tmp_path: Path, dtype: str) -> None:
    rng = np.random.default_rng(len(dtype))
    x = _data(dtype, (2, 11, 19, 10), rng)
    source = zarr.create_array(tmp_path / "in.zarr", shape=x.shape, chunks=(1, 4, 7, 5), dtype=x.dtype)
    source[:] = x
    factors = (1, 2, 3)  # anisotropic: z kept
    levels = ndpool.pyramid(source, 4, factors, store=tmp_path / "out.zarr")
    assert [level.shape for level in levels] == [(2, 11, 19, 10), (2, 11, 10, 4), (2, 11, 5, 2),
                                                 (2, 11, 3, 1)]
    group = zarr.open_group(tmp_path / "out.zarr", mode="r")
    assert sorted(group.array_keys()) == ["0", "1", "2", "3"]
    want = x
    for k, level in enumerate(levels):
        got = np.asarray(group[str(k)])
        assert got.dtype == x.dtype and level.dtype == x.dtype
        assert group[str(k)].chunks == tuple(min(c, s) for c, s in zip((1, 4, 7, 5), got.shape, strict=True))
        if k:
            want = (_pool_in_memory if dtype in NATIVE else _block_max)(want, factors, 3)
        if dtype in NATIVE:  # bit for bit: NaN payloads and signed zeros too
            got, want_bits = bits(got), bits(want)
        else:
            want_bits = want
        np.testing.assert_array_equal(got, want_bits)


def test_ome_zarr_metadata(tmp_path: Path) -> None:
    x = np.arange(5 * 9 * 8, dtype=np.uint16).reshape(5, 9, 8)
    ndpool.pyramid(x, 3, (1, 2, 2), store=tmp_path / "img.zarr", chunks=(2, 4, 4), scale=(3.0, 0.5, 0.5),
                   units={"z": "micrometer", "y": "micrometer", "x": "micrometer"}, name="cells")
    attrs = zarr.open_group(tmp_path / "img.zarr", mode="r").attrs.asdict()
    assert attrs["ome"]["version"] == "0.5"
    (image,) = attrs["ome"]["multiscales"]
    assert image["name"] == "cells" and image["type"] == "max"
    assert image["axes"] == [{"name": a, "type": "space", "unit": "micrometer"} for a in "zyx"]
    assert [d["path"] for d in image["datasets"]] == ["0", "1", "2"]
    assert [d["coordinateTransformations"] for d in image["datasets"]] == [
        [{"type": "scale", "scale": [3.0, 0.5, 0.5]}],
        [{"type": "scale", "scale": [3.0, 1.0, 1.0]},
         {"type": "translation", "translation": [0.0, 0.25, 0.25]}],
        [{"type": "scale", "scale": [3.0, 2.0, 2.0]},
         {"type": "translation", "translation": [0.0, 0.75, 0.75]}],
    ]


@pytest.mark.parametrize("version", ["0.5", "0.4"])
def test_read_back_by_ome_zarr(tmp_path: Path, version: str, caplog: pytest.LogCaptureFixture) -> None:
    from ome_zarr.io import parse_url
    from ome_zarr.reader import Reader
    from ome_zarr_models.v04.image import Image as Image04
    from ome_zarr_models.v05.image import Image as Image05

    rng = np.random.default_rng(5)
    x = rng.integers(0, 50, (3, 17, 12), dtype=np.int32)  # c, y, x
    path = tmp_path / "img.zarr"
    ours = ndpool.pyramid(da.from_array(x, chunks=(1, 8, 5)), 4, store=path, axes="cyx",
                          ome_version=version)
    # ome-zarr logs (not warns) that it expected its newest format when it reads a 0.4 image.
    with caplog.at_level(logging.ERROR, logger="ome_zarr"):
        nodes = list(Reader(parse_url(str(path)))())
    (node,) = nodes
    assert node.metadata["axes"] == [{"name": "c", "type": "channel"}, {"name": "y", "type": "space"},
                                     {"name": "x", "type": "space"}]
    transforms = node.metadata["coordinateTransformations"]
    assert len(node.data) == len(transforms) == 4
    for k, (theirs, mine, transform) in enumerate(zip(node.data, ours, transforms, strict=True)):
        assert transform[0] == {"type": "scale", "scale": [1.0, 2.0**k, 2.0**k]}
        np.testing.assert_array_equal(np.asarray(theirs), mine.compute())
    assert [a.shape for a in node.data] == [(3, 17, 12), (3, 9, 6), (3, 5, 3), (3, 3, 2)]
    # And the metadata passes the OME-Zarr schema of its version.
    (Image05 if version == "0.5" else Image04).from_zarr(zarr.open_group(path, mode="r"))


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``ndpool pyramid`` through the ``ndpool`` command line's own entry point."""
    x = np.random.default_rng(1).integers(0, 9, (20, 30), dtype=np.uint8)
    source = zarr.create_array(tmp_path / "in.zarr", shape=x.shape, chunks=(8, 8), dtype=x.dtype)
    source[:] = x
    out = tmp_path / "out.zarr"
    assert main(["pyramid", str(tmp_path / "in.zarr"), str(out), "--levels", "3", "--factor", "2"]) == 0
    captured = capsys.readouterr()
    assert "100% Completed" in captured.err  # dask's progress bar
    assert "wrote 3 levels" in captured.out and "20x30, 10x15, 5x8" in captured.out
    got = zarr.open_group(out, mode="r")
    np.testing.assert_array_equal(got["1"], _pool_in_memory(x, (2, 2), 2))
    # An OME-Zarr image as input: its level 0, axes and pixel size carry over.
    again = tmp_path / "again.zarr"
    assert main(["pyramid", str(out), str(again), "--levels", "2", "--factor", "3",
                            "--ome-version", "0.4", "--no-progress"]) == 0
    capsys.readouterr()
    image = zarr.open_group(again, mode="r").attrs.asdict()["multiscales"][0]
    assert image["datasets"][1]["coordinateTransformations"][0] == {"type": "scale", "scale": [3.0, 3.0]}
    # Errors (one line, status 2): an existing output, a missing input, a bad factor; and --help.
    assert main(["pyramid", str(tmp_path / "in.zarr"), str(out), "--levels", "2"]) == 2
    assert "ndpool pyramid: error:" in capsys.readouterr().err
    assert main(["pyramid", str(tmp_path / "missing.zarr"), str(tmp_path / "x.zarr"), "--levels", "2"]) == 2
    assert "ndpool pyramid: error:" in capsys.readouterr().err
    assert main(["pyramid", str(tmp_path / "in.zarr"), str(out), "--levels", "2", "--overwrite",
                            "--factor", "0"]) == 2
    assert "'factor' must be positive integers" in capsys.readouterr().err
    assert main(["pyramid", "--help"]) == 0
    assert "--levels" in capsys.readouterr().out
    assert main(["pyramid", str(out)]) == 2  # usage error, printed by argparse
    capsys.readouterr()


def test_progress_under_a_distributed_client(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With a distributed client as the default scheduler, the bar is distributed's and the work
    runs on the client's workers (here threads in this process: a cheap cluster)."""
    from distributed import Client

    x = np.random.default_rng(2).standard_normal((9, 14)).astype(np.float32)
    with Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None):
        levels = ndpool.pyramid(x, 3, store=tmp_path / "p.zarr", chunks=(4, 4), progress=True)
        got = [level.compute() for level in levels]
    captured = capsys.readouterr()
    assert "ndpool pyramid: level 2" in captured.err
    assert "[########################################] | 100%" in captured.out + captured.err
    np.testing.assert_array_equal(bits(got[1]), bits(_pool_in_memory(x, (2, 2), 2)))


def test_pyramid_errors(tmp_path: Path) -> None:
    x = np.zeros((4, 4), np.float32)
    with pytest.raises(ndpool.PoolingError, match="pyramid: 'levels' must be an int >= 1"):
        ndpool.pyramid(x, 0, store=tmp_path / "a.zarr")
    with pytest.raises(ndpool.PoolingError, match="pyramid: 'axes' must name the array's 2 axes"):
        ndpool.pyramid(x, 2, store=tmp_path / "a.zarr", axes="xy")
    with pytest.raises(ndpool.PoolingError, match="'array' must have 2 to 5 axes"):
        ndpool.pyramid(np.zeros(4), 2, store=tmp_path / "a.zarr")
    with pytest.raises(ndpool.PoolingError, match="'factor' must be positive integers"):
        ndpool.pyramid(x, 2, (2, 2, 2), store=tmp_path / "a.zarr")
    with pytest.raises(ndpool.PoolingError, match="'array' dtype must be a boolean, integer or floating"):
        ndpool.pyramid(x.astype(np.complex64), 2, store=tmp_path / "a.zarr")
    with pytest.raises(ndpool.PoolingError, match="'ome_version' must be one of 0.4, 0.5"):
        ndpool.pyramid(x, 2, store=tmp_path / "a.zarr", ome_version="0.3")
    assert not (tmp_path / "a.zarr").exists()  # nothing is written before the arguments are checked
    assert math.prod(ndpool.pyramid(x, 1, store=tmp_path / "b.zarr")[0].shape) == 16
