"""The ``ndpool`` command line: a thin layer over the public API. ``main(argv) -> exit status``.

Subcommands: ``run`` (OpenVINO IR XML, or the spec documents' example layers), ``pool`` and ``adaptive``
(the functional API on ``.npy`` files), ``shape`` (shape inference without data), ``compare`` (one
configuration under every preset and every installed engine) and ``bench`` (the benchmark suite of a
source checkout). Every error exits with status 2 and one message; the engines are imported only by
``compare``, matplotlib only by ``bench --plot``.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from . import __version__, adaptive_max_pool, max_pool
from ._attributes import parse_input_shape
from ._dtypes import DTYPE_NAMES, dtype_name
from ._errors import PoolingError
from ._pyramid import add_pyramid_arguments, run_pyramid
from .spec import BUILTIN_EXAMPLES, IRModel, IRRun, parse_ir, read_ir, run_ir

__all__ = ["main"]


class CommandError(Exception):
    """A problem with the command's own arguments or files, reported in one line (exit status 2)."""


# --- files ----------------------------------------------------------------------------------------------------


def _load(path: str) -> np.ndarray | dict[str, np.ndarray]:
    """A ``.npy`` file's array, or a ``.npz`` file's arrays by name."""
    try:
        loaded = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise CommandError(f"no such file: {path}") from None
    except (OSError, ValueError, EOFError) as exc:
        raise CommandError(f"cannot read {path} as .npy or .npz: {exc}") from None
    if isinstance(loaded, np.ndarray):
        return loaded
    with loaded:
        return {name: loaded[name] for name in loaded.files}


def _load_array(path: str) -> np.ndarray:
    loaded = _load(path)
    if isinstance(loaded, dict):
        if len(loaded) != 1:
            raise CommandError(f"{path} holds {len(loaded)} arrays ({', '.join(loaded) or 'none'}); "
                               f"give a .npy file or a .npz with one array")
        return next(iter(loaded.values()))
    return loaded


def _save(path: str, array: np.ndarray) -> str:
    target = path if path.endswith(".npy") else path + ".npy"
    try:
        np.save(target, array, allow_pickle=False)
    except OSError as exc:
        raise CommandError(f"cannot write {target}: {exc}") from None
    return target


def _describe(array: np.ndarray) -> str:
    return f"{tuple(array.shape)} {dtype_name(array.dtype)}"


def _preview(array: np.ndarray, count: int = 4) -> str:
    flat = np.asarray(array).reshape(-1)[:count]
    if flat.dtype.kind in "iu":
        items = [str(int(v)) for v in flat]
    else:
        items = [f"{float(v):.4g}" for v in flat.astype(np.float64)]
    more = ", ..." if array.size > count else ""
    return "[" + ", ".join(items) + more + "]"


def _int_or_text(text: str) -> int | str:
    """``"3"`` -> 3 (the value for every spatial axis); ``"3,2"`` stays text for the library to parse."""
    try:
        return int(text)
    except ValueError:
        return text


# --- run ------------------------------------------------------------------------------------------------------


def _split_input(item: str) -> tuple[str | None, str]:
    name, sep, path = item.partition("=")
    if sep and name and not Path(item).exists():
        return name, path
    return None, item


def _read_inputs(items: Sequence[str], model: IRModel) -> dict[str, np.ndarray]:
    inputs: dict[str, np.ndarray] = {}
    for item in items:
        name, path = _split_input(item)
        loaded = _load(path)
        if name is None:
            if isinstance(loaded, dict):
                inputs.update(loaded)
                continue
            params = [p.name for p in model.parameters()]
            if len(params) != 1:
                raise CommandError(f"--input {item}: name the Parameter as NAME=PATH; the model has "
                                   f"{len(params)} ({', '.join(params) or 'none'})")
            inputs[params[0]] = loaded
        elif isinstance(loaded, dict):
            if name not in loaded and len(loaded) != 1:
                raise CommandError(f"--input {item}: {path} has no array named '{name}' "
                                   f"(it has {', '.join(loaded) or 'none'})")
            inputs[name] = loaded[name] if name in loaded else next(iter(loaded.values()))
        else:
            inputs[name] = loaded
    return inputs


def _print_run(run: IRRun, title: str) -> None:
    print(title)
    for name, array in run.inputs.items():
        origin = "generated, seed 0" if name in run.generated else "given"
        print(f"  input {name}: {_describe(array)} ({origin})")
    for layer_run in run.layers:
        print(f"  {layer_run.layer.describe()}: {layer_run.op}, semantics={layer_run.semantics}")
        for name, array in layer_run.outputs:
            print(f"    {name}: {_describe(array)} {_preview(array)}")
    if not run.model.single_layer:
        for name, array in run.outputs.items():
            print(f"  result {name}: {_describe(array)}")
    print("  declared port dims agree with ndpool's shape inference")


def _cmd_run(args: argparse.Namespace) -> int:
    jobs: list[tuple[str, IRModel, dict[str, np.ndarray]]]
    if args.file is None:
        if args.input:
            raise CommandError("--input needs an IR FILE; the built-in examples run on generated data")
        jobs = [(f"{ex.title} [built-in example '{ex.name}']", parse_ir(ex.xml, source=f"<built-in {ex.name}>"), {})
                for ex in BUILTIN_EXAMPLES]
    else:
        model = read_ir(args.file)
        jobs = [(args.file, model, _read_inputs(args.input, model))]
    outputs: dict[str, np.ndarray] = {}
    for title, model, inputs in jobs:
        run = run_ir(model, inputs, semantics=args.semantics)
        _print_run(run, title)
        outputs.update(run.outputs)
    if args.output:
        target = args.output if args.output.endswith(".npz") else args.output + ".npz"
        try:
            np.savez(target, **outputs)  # type: ignore[arg-type]  # numpy's stub types **kwds too narrowly
        except OSError as exc:
            raise CommandError(f"cannot write {target}: {exc}") from None
        print(f"wrote {target}: {', '.join(outputs)}")
    return 0


# --- pool, adaptive -------------------------------------------------------------------------------------------


def _cmd_pool(args: argparse.Namespace) -> int:
    x = _load_array(args.input)
    result = max_pool(
        x, kernel=_int_or_text(args.kernel), strides=_int_or_text(args.strides),
        pads_begin=_int_or_text(args.pads_begin), pads_end=_int_or_text(args.pads_end),
        dilations=_int_or_text(args.dilations), rounding_type=args.rounding_type, auto_pad=args.auto_pad,
        data_format=args.data_format, return_indices=args.indices is not None,
        index_element_type=args.index_element_type, index_axis=args.index_axis, semantics=args.semantics)
    values, indices = result if args.indices is not None else (result, None)
    _report(args.input, x, args.output, values, args.indices, indices)
    return 0


def _cmd_adaptive(args: argparse.Namespace) -> int:
    x = _load_array(args.input)
    values, indices = adaptive_max_pool(x, _int_or_text(args.output_size),
                                        index_element_type=args.index_element_type,
                                        data_format=args.data_format, semantics=args.semantics)
    _report(args.input, x, args.output, values, args.indices, indices if args.indices else None)
    return 0


def _report(in_path: str, x: np.ndarray, out_path: str, values: np.ndarray, indices_path: str | None,
            indices: np.ndarray | None) -> None:
    written = _save(out_path, values)
    print(f"{in_path} {_describe(x)} -> {written} {_describe(values)}")
    if indices_path is not None and indices is not None:
        print(f"indices -> {_save(indices_path, indices)} {_describe(indices)}")


# --- shape, compare -------------------------------------------------------------------------------------------


def _cmd_shape(args: argparse.Namespace) -> int:
    from . import _compare

    config = _compare.resolve(args.op, args.input_shape, _compare.parse_assignments(args.attributes, args.op))
    print(_compare.format_shape(config))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from . import (
        _compare,  # the engines are imported inside it, only when a comparison runs
    )

    if args.input is None and args.input_shape is None:
        raise CommandError("give --input-shape (generated data) or --input PATH")
    x = _load_array(args.input) if args.input is not None else None
    shape = args.input_shape if x is None else tuple(x.shape)
    config = _compare.resolve(args.op, shape, _compare.parse_assignments(args.attributes, args.op))
    if x is None:
        x = _compare.generate(config.input_shape, args.dtype)
        origin = f"generated ({'N(0, 1)' if x.dtype.kind == 'f' else 'integers'}, seed 0)"
    else:
        if args.input_shape is not None and parse_input_shape(args.op, args.input_shape) != x.shape:
            raise CommandError(f"wrong input shape: {args.input} has {x.shape}, --input-shape says "
                               f"{args.input_shape}")
        origin = f"from {args.input}"
    rows = _compare.compare(config, x)
    print(_compare.format_comparison(config, x, rows, origin))
    return 0


# --- bench ----------------------------------------------------------------------------------------------------


def _find_benchmarks(explicit: str | None) -> Path:
    """The benchmarks/ directory: given, or beside src/ in a source checkout, or in the working directory."""
    here = Path(__file__).resolve().parent
    candidates = [Path(explicit)] if explicit else [here.parent.parent / "benchmarks", Path.cwd() / "benchmarks"]
    for candidate in candidates:
        if (candidate / "suite.py").is_file():
            return candidate
    looked = ", ".join(str(c) for c in dict.fromkeys(candidates))
    raise CommandError(f"cannot find the benchmark suite benchmarks/suite.py (looked in {looked}); "
                       f"`ndpool bench` runs from a source checkout of ndpool, or pass --benchmarks DIR")


def _load_suite(directory: Path) -> ModuleType:
    path = (directory / "suite.py").resolve()
    existing = sys.modules.get("suite")
    if existing is not None and Path(getattr(existing, "__file__", "") or "").resolve() == path:
        return existing
    spec = importlib.util.spec_from_file_location("suite", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["suite"] = module  # suite's sibling modules import it by this name
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - a broken or half-written suite: one message, not a traceback
        del sys.modules["suite"]
        if existing is not None:
            sys.modules["suite"] = existing
        raise CommandError(f"cannot import {path}: {type(exc).__name__}: {exc}") from None
    missing = [name for name in ("WORKLOADS", "run_suite", "format_table") if not hasattr(module, name)]
    if missing:
        raise CommandError(f"{path} lacks {', '.join(missing)}")
    return module


def _progress(total: int | None) -> tuple[Callable[[str], None], Callable[[], None]]:
    """A progress callback for run_suite and a closer: a tqdm bar if tqdm is installed, else stderr lines."""
    try:
        from tqdm import tqdm
    except ImportError:
        return (lambda message: print(message, file=sys.stderr, flush=True)), (lambda: None)
    bar = tqdm(total=total, file=sys.stderr, unit="workload", leave=True)
    started: list[bool] = []

    def step(message: str) -> None:
        if started:
            bar.update(1)
        started.append(True)
        bar.set_description(message.split("] ", 1)[-1])

    def close() -> None:
        if started:
            bar.update(1)
        bar.close()

    return step, close


def _plot(rows: list[dict[str, Any]], path: str) -> None:
    """A horizontal bar chart of ndpool's time over each peer's, per workload (log scale; < 1: ndpool faster)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peers = sorted({peer for row in rows for peer in row.get("peers", {})})
    height = 0.8 / max(len(peers), 1)
    fig, ax = plt.subplots(figsize=(10, 1.5 + 0.3 * len(rows) * max(len(peers), 1)))
    plotted = False
    for j, peer in enumerate(peers):
        ys, ratios = [], []
        for i, row in enumerate(rows):
            entry = row.get("peers", {}).get(peer)
            if row.get("ndpool_ms") and entry and entry.get("ms"):
                ys.append(i + j * height)
                ratios.append(row["ndpool_ms"] / entry["ms"])
        if ratios:
            ax.barh(ys, ratios, height, label=f"vs {peer}")
            plotted = True
    if plotted:
        ax.set_xscale("log")
        ax.legend()
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks([i + height * (len(peers) - 1) / 2 for i in range(len(rows))],
                  [row["workload"] for row in rows])
    ax.invert_yaxis()
    ax.set_xlabel("ndpool time / peer time (below 1: ndpool is faster)")
    ax.set_title("ndpool against each peer engine")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100)
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc}") from None
    finally:
        plt.close(fig)


def _cmd_bench(args: argparse.Namespace) -> int:
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise CommandError("--plot needs matplotlib: pip install 'ndpool[plot]'")
    suite = _load_suite(_find_benchmarks(args.benchmarks))
    total = None
    if hasattr(suite, "select") and hasattr(suite, "quick_workloads"):
        total = len(suite.select(suite.quick_workloads() if args.quick else suite.WORKLOADS, args.filter))
        if total == 0:
            raise CommandError(f"no workload matches --filter {args.filter!r}")
    repeat = args.repeat or getattr(suite, "QUICK_REPEAT" if args.quick else "DEFAULT_REPEAT", 5)
    step, close = _progress(total)
    extra = {"quick": True} if args.quick else {}
    try:
        rows = suite.run_suite(repeat, args.filter, progress=step, **extra)
    finally:
        close()
    print(suite.format_table(rows))
    if args.plot:
        _plot(rows, args.plot)
        print(f"wrote {args.plot}")
    return 0


# --- the parser -----------------------------------------------------------------------------------------------

_EXAMPLES = {
    "pyramid": """examples:
  ndpool pyramid volume.zarr pyramid.zarr --levels 4              # 2x per spatial axis per level
  ndpool pyramid labels.zarr labels_ms.zarr --levels 3 --factor 1,2,2
""",
    "run": """examples:
  ndpool run                                   # the spec documents' example layers, generated data
  ndpool run model.xml                         # a whole IR model (model.bin beside it), generated data
  ndpool run model.xml --input data=x.npy --output out.npz --semantics spec
  ndpool run layer.xml --input x.npz           # a single <layer>; .npz arrays named after the Parameters""",
    "pool": """examples:
  ndpool pool x.npy y.npy --kernel 3 --strides 2 --pads-begin 1 --pads-end 1
  ndpool pool x.npy y.npy --kernel 2,2 --strides 2,2 --data-format NCX --indices i.npy --index-element-type i32""",
    "adaptive": """examples:
  ndpool adaptive x.npy y.npy --output-size 16,16
  ndpool adaptive x.npy y.npy --output-size 7 --indices i.npy --semantics torch""",
    "shape": """examples:
  ndpool shape --op openvino:MaxPool-8 --input-shape 1,3,32,32 kernel=3,3 strides=2,2 pads_begin=1,1 \\
      pads_end=1,1 dilations=1,1 rounding_type=ceil
  ndpool shape --op max_pool --input-shape 32,112,112,64 kernel=3 strides=2 auto_pad=same_upper
  ndpool shape --op openvino:AdaptiveMaxPool-8 --input-shape 1,3,32,32 output_size=16,16""",
    "compare": """examples:
  ndpool compare --op openvino:MaxPool-8 --input-shape 1,3,9,9 kernel=3,3 strides=2,2 pads_begin=1,1 \\
      pads_end=0,0 dilations=1,1 rounding_type=ceil
  ndpool compare --op max_pool --input x.npy kernel=3 strides=2 pads_begin=1 pads_end=1 return_indices=true
  ndpool compare --op adaptive_max_pool --input-shape 1,3,9,9 --dtype f16 output_size=4,4""",
    "bench": """examples:
  ndpool bench                                 # the whole suite (minutes)
  ndpool bench --quick --plot ratios.png       # tiny shapes, and a chart (needs ndpool[plot])
  ndpool bench --filter stem --repeat 3""",
}


def _subparser(sub: Any, name: str, help_text: str, description: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=help_text, description=description, epilog=_EXAMPLES[name],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser


def _pool_options(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--kernel", required=True, help="window size: one int for every spatial axis, or a list like 3,3")
    add("--strides", required=True, help="window step, e.g. 2 or 2,2")
    add("--pads-begin", "--pads_begin", dest="pads_begin", default="0", help="pads before each axis (default 0)")
    add("--pads-end", "--pads_end", dest="pads_end", default="0", help="pads after each axis (default 0)")
    add("--dilations", default="1", help="tap spacing, 1 = none (default 1)")
    add("--rounding-type", "--rounding_type", dest="rounding_type", default="floor",
        help="floor (default), ceil or ceil_torch")
    add("--auto-pad", "--auto_pad", dest="auto_pad", default="none",
        help="none/explicit (default), same_upper, same_lower or valid")
    add("--data-format", "--data_format", dest="data_format", default="NXC", help="NXC (default) or NCX")
    add("--index-element-type", "--index_element_type", dest="index_element_type", default="i64",
        help="i64 (default) or i32")
    add("--index-axis", "--index_axis", dest="index_axis", type=int, default=None,
        help="OpenVINO MaxPool-8's axis: indices modulo prod(shape[axis:]) (default: the preset's)")
    add("--semantics", default="spec", help="spec (default), openvino, onednn, torch or onnx")
    add("--indices", metavar="PATH", help="also write the argmax indices to PATH (.npy)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ndpool", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="N-dimensional max pooling (MaxPool, AdaptiveMaxPool-8) with exact engine semantics.",
        epilog="examples:\n  ndpool run\n  ndpool shape --op max_pool --input-shape 1,32,32,3 kernel=3 strides=2\n"
               "  ndpool <command> --help     # each command's options and examples")
    parser.add_argument("--version", action="version", version=f"ndpool {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = _subparser(sub, "run", "run OpenVINO IR XML (default: the spec documents' example layers)",
                   "Read OpenVINO IR XML (a single <layer>, or a <net> with its .bin), check every declared port "
                   "dim against ndpool's shape inference, run the layers in graph order and print a summary. "
                   "Layers: Parameter, Const, MaxPool (opset1/8/14, version=\"onednn\" for oneDNN Graph), "
                   "AdaptiveMaxPool (opset8), Result. Without FILE, runs the built-in examples.")
    p.add_argument("file", nargs="?", metavar="FILE.xml", help="the IR file (default: the built-in examples)")
    p.add_argument("--input", action="append", default=[], metavar="[NAME=]PATH",
                   help="a Parameter's data (.npy or .npz); repeatable. A .npz without NAME= gives one "
                        "Parameter per array name. Parameters without data get generated data (seed 0)")
    p.add_argument("--output", metavar="PATH.npz", help="write every output to PATH.npz")
    p.add_argument("--semantics", metavar="PRESET", default=None,
                   help="override each op's engine preset (openvino; onednn for oneDNN Graph's MaxPool)")
    p.set_defaults(func=_cmd_run)

    p = _subparser(sub, "pool", "ndpool.max_pool on a .npy file",
                   "Max pooling of IN.npy into OUT.npy (ndpool.max_pool; every attribute as an option).")
    p.add_argument("input", metavar="IN.npy")
    p.add_argument("output", metavar="OUT.npy")
    _pool_options(p)
    p.set_defaults(func=_cmd_pool)

    p = _subparser(sub, "adaptive", "ndpool.adaptive_max_pool on a .npy file",
                   "Adaptive max pooling of IN.npy into OUT.npy (ndpool.adaptive_max_pool).")
    p.add_argument("input", metavar="IN.npy")
    p.add_argument("output", metavar="OUT.npy")
    p.add_argument("--output-size", "--output_size", dest="output_size", required=True,
                   help="bins per spatial axis, e.g. 16,16 (one int: every axis)")
    p.add_argument("--index-element-type", "--index_element_type", dest="index_element_type", default="i64",
                   help="i64 (default) or i32")
    p.add_argument("--data-format", "--data_format", dest="data_format", default="NCX", help="NCX (default) or NXC")
    p.add_argument("--semantics", default="spec", help="spec (default), openvino or torch")
    p.add_argument("--indices", metavar="PATH", help="also write the argmax indices to PATH (.npy)")
    p.set_defaults(func=_cmd_adaptive)

    op_help = "a get_op name (openvino:MaxPool-8, ...; IR attribute names) or max_pool / adaptive_max_pool " \
              "(keyword names)"
    p = _subparser(sub, "shape", "output shapes, resolved pads and windows, without data",
                   "Shape inference: the output shape(s), the resolved pads and the window count per spatial "
                   "axis of one op on one input shape. No data is read or made.")
    p.add_argument("--op", required=True, metavar="NAME", help=op_help)
    p.add_argument("--input-shape", "--input_shape", dest="input_shape", required=True, metavar="N,C,...",
                   help="the input shape, e.g. 1,3,32,32 (in the op's data_format)")
    p.add_argument("attributes", nargs="*", metavar="ATTR=VALUE",
                   help="the op's attributes, e.g. kernel=3,3 strides=2,2 (output_size=16,16 for AdaptiveMaxPool)")
    p.set_defaults(func=_cmd_shape)

    p = _subparser(sub, "compare", "one configuration under every preset and every installed engine",
                   "Run one configuration under each of ndpool's presets and on every installed engine "
                   "(OpenVINO, onnxruntime, torch), each the way a converted model would, and print a table of "
                   "output shapes and of where values and indices disagree, with the first disagreeing "
                   "positions. For 'my converted model gives different numbers'.")
    p.add_argument("--op", required=True, metavar="NAME", help=op_help)
    p.add_argument("--input-shape", "--input_shape", dest="input_shape", metavar="N,C,...",
                   help="shape of the generated data (not needed with --input)")
    p.add_argument("--input", metavar="PATH", help="the data (.npy, or .npz with one array)")
    p.add_argument("--dtype", default="f32", choices=list(DTYPE_NAMES.values()),
                   help="element type of the generated data (default f32)")
    p.add_argument("attributes", nargs="*", metavar="ATTR=VALUE",
                   help="the op's attributes; semantics=PRESET sets the baseline (default spec, or the op's)")
    p.set_defaults(func=_cmd_compare)

    p = _subparser(sub, "bench", "the benchmark suite (source checkout), with a progress bar",
                   "Run benchmarks/suite.py of a source checkout: ndpool against the installed peer engines. "
                   "Prints the suite's table; --plot draws ndpool's time over each peer's per workload.")
    p.add_argument("--plot", metavar="PATH.png", help="also draw the ratios (needs matplotlib: ndpool[plot])")
    p.add_argument("--quick", action="store_true", help="tiny shapes: a smoke run of every workload")
    p.add_argument("--filter", metavar="SUBSTR", help="only workloads whose name contains SUBSTR")
    p.add_argument("--repeat", type=int, metavar="N",
                   help="timing rounds, each a few calls in a row per engine (default: the suite's)")
    p.add_argument("--benchmarks", metavar="DIR", help="the benchmarks/ directory (default: found beside src/)")
    p.set_defaults(func=_cmd_bench)

    p = _subparser(sub, "pyramid", "a multiscale max pyramid written as OME-Zarr (needs ndpool[dask])",
                   "Pool a zarr array level by level (each level from the previous one) and write an "
                   "OME-Zarr image with its multiscales metadata; a progress bar goes to stderr.")
    add_pyramid_arguments(p)
    p.set_defaults(func=run_pyramid)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``ndpool`` command line on ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        status: int = args.func(args)
    except (PoolingError, CommandError) as exc:
        print(f"ndpool {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `ndpool ... | head`: the reader left; stop quietly (Python's documented recipe)
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, io.UnsupportedOperation):
            pass
        return 1
    return status
