"""The ``ndpool`` command line: every subcommand and error path in-process (``main([...])``), plus the
installed console script in a subprocess."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ndpool
from ndpool import _compare, cli
from ndpool.cli import main

DATA = Path(__file__).resolve().parent / "data"
REPO = Path(__file__).resolve().parent.parent
Capsys = pytest.CaptureFixture[str]


def _run(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _fails(capsys: Capsys, *argv: str) -> str:
    """Run a command that must fail: status 2, nothing on stdout, one message on stderr, no traceback."""
    status, out, err = _run(capsys, *argv)
    assert status == 2, (out, err)
    assert "Traceback" not in err
    return err


# --- help -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "pool", "adaptive", "shape", "compare", "bench"])
def test_help_with_examples(capsys: Capsys, command: str) -> None:
    status, out, _ = _run(capsys, command, "--help")
    assert status == 0
    assert "examples:" in out and f"ndpool {command}" in out


def test_top_level_help_and_version(capsys: Capsys) -> None:
    status, out, _ = _run(capsys, "--help")
    assert status == 0 and all(c in out for c in ("run", "pool", "adaptive", "shape", "compare", "bench"))
    status, out, _ = _run(capsys, "--version")
    assert status == 0 and out.strip() == f"ndpool {ndpool.__version__}"


def test_usage_errors(capsys: Capsys) -> None:
    assert "required: COMMAND" in _fails(capsys)
    assert "invalid choice: 'frobnicate'" in _fails(capsys, "frobnicate")
    assert "required: --kernel" in _fails(capsys, "pool", "a.npy", "b.npy", "--strides", "2")


# --- run ------------------------------------------------------------------------------------------------------


def test_run_builtin_examples(capsys: Capsys, tmp_path: Path) -> None:
    status, out, err = _run(capsys, "run", "--output", str(tmp_path / "out"))
    assert status == 0 and err == ""
    assert "AdaptiveMaxPool-8, the example layer of the OpenVINO spec (000/001)" in out
    assert "openvino:AdaptiveMaxPool-8, semantics=openvino" in out
    assert "output: (1, 3, 16, 16) f32" in out and "indices: (1, 3, 16, 16) i64" in out
    assert "onednn:MaxPool-1, semantics=onednn" in out and "dst: (1, 16, 16, 3) f32" in out
    assert out.count("declared port dims agree with ndpool's shape inference") == 2
    saved = np.load(tmp_path / "out.npz")
    assert saved.files == ["AdaptiveMaxPool.output", "AdaptiveMaxPool.indices", "MaxPool.dst"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 32, 32), dtype=np.float32)
    np.testing.assert_array_equal(saved["AdaptiveMaxPool.output"],
                                  ndpool.adaptive_max_pool(x, [16, 16], semantics="openvino")[0])


def test_run_model_with_inputs(capsys: Capsys, tmp_path: Path) -> None:
    golden = np.load(DATA / "maxpool8_adaptive8.npz")
    x = golden["input:data"]
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "x.npz", data=x)
    np.savez(tmp_path / "other.npz", whatever=x)
    xml = str(DATA / "maxpool8_adaptive8.xml")
    for given in ([f"data={tmp_path / 'x.npy'}"], [str(tmp_path / "x.npy")], [str(tmp_path / "x.npz")],
                  [f"data={tmp_path / 'x.npz'}"], [f"data={tmp_path / 'other.npz'}"]):
        out_path = tmp_path / "out.npz"
        status, out, _ = _run(capsys, "run", xml, *[a for g in given for a in ("--input", g)],
                              "--output", str(out_path))
        assert status == 0
        assert "input data: (2, 3, 9, 9) f32 (given)" in out
        assert "result values: (2, 3, 3, 4) f32" in out and f"wrote {out_path}" in out
        saved = np.load(out_path)
        for name in saved.files:
            np.testing.assert_array_equal(saved[name], golden[f"output:{name}"])


def test_run_generated_and_semantics(capsys: Capsys) -> None:
    status, out, _ = _run(capsys, "run", str(DATA / "spec_000_adaptive_max_pool.xml"), "--semantics", "torch")
    assert status == 0
    assert "input data: (1, 3, 32, 32) f32 (generated, seed 0)" in out and "semantics=torch" in out


@pytest.mark.parametrize(("args", "message"), [
    (["nope.xml"], r"nope\.xml: cannot read the IR file"),
    (["{tmp}/bad.xml"], r"bad\.xml:3: malformed XML: mismatched tag"),
    (["{tmp}/m.xml"], r"m\.xml:\d+: missing weights file .*m\.bin, needed by layer 'output_size'"),
    (["{tmp}/conv.xml"], r"unsupported layer type 'Convolution' \(layer id 1, 'pool8'\)"),
    (["{tmp}/mismatch.xml"], (r"declared port dims disagree with ndpool's shape inference:\n  layer 'pool8' \(id 1, "
                              r"MaxPool\) output port 1 \(line \d+\): declared \[2, 3, 7, 5\], ndpool infers "
                              r"\[2, 3, 5, 5\]")),
    (["{data}/maxpool8_adaptive8.xml", "--input", "data={tmp}/small.npy"],
     r"wrong input shape for Parameter 'data': got \[1, 3, 9, 9\], the model declares \[2, 3, 9, 9\]"),
    (["{data}/maxpool8_adaptive8.xml", "--input", "x={tmp}/small.npy"], r"no Parameter named 'x'"),
    (["{data}/maxpool8_adaptive8.xml", "--input", "{tmp}/missing.npy"], r"no such file: .*missing\.npy"),
    (["{data}/maxpool8_adaptive8.xml", "--input", "{tmp}/bad.xml"], r"cannot read .*bad\.xml as \.npy or \.npz"),
    (["{data}/maxpool8_adaptive8.xml", "--input", "data={tmp}/two.npz"], r"two\.npz has no array named 'data'"),
    (["{data}/maxpool8_adaptive8.xml", "--semantics", "fast"], r"'semantics' must be one of"),
    (["--input", "{tmp}/small.npy"], r"--input needs an IR FILE"),
    (["{data}/spec_000_adaptive_max_pool.xml", "--output", "{tmp}/no/such/dir/out.npz"], r"cannot write"),
])
def test_run_errors(capsys: Capsys, tmp_path: Path, args: list[str], message: str) -> None:
    text = (DATA / "maxpool8_adaptive8.xml").read_text()
    (tmp_path / "bad.xml").write_text("<net>\n<layers>\n</net>\n")
    (tmp_path / "m.xml").write_text(text)
    (tmp_path / "conv.xml").write_text(text.replace('type="MaxPool"', 'type="Convolution"'))
    (tmp_path / "mismatch.xml").write_text(text.replace("<dim>5</dim>", "<dim>7</dim>", 1))
    (tmp_path / "mismatch.bin").write_bytes((DATA / "maxpool8_adaptive8.bin").read_bytes())
    np.save(tmp_path / "small.npy", np.zeros((1, 3, 9, 9), np.float32))
    np.savez(tmp_path / "two.npz", a=np.zeros(1), b=np.zeros(1))
    argv = [a.format(tmp=tmp_path, data=DATA) for a in args]
    err = _fails(capsys, "run", *argv)
    assert err.startswith("ndpool run: error: ")
    assert len(err.strip().splitlines()) == (2 if "\\n" in message else 1)
    assert re.search(message, err), err


def test_run_sole_parameter_needs_no_name_but_two_do(capsys: Capsys, tmp_path: Path) -> None:
    xml = (DATA / "maxpool_versions.xml").read_text()
    second = xml.replace('<layer id="0" name="data"', '<layer id="99" name="other" type="Parameter" version="opset1">'
                         '<data shape="1" element_type="f32"/><output><port id="0"><dim>1</dim></port></output>'
                         '</layer>\n<layer id="0" name="data"', 1)
    (tmp_path / "two.xml").write_text(second)
    np.save(tmp_path / "x.npy", np.zeros((1, 2, 10, 7), np.float32))
    err = _fails(capsys, "run", str(tmp_path / "two.xml"), "--input", str(tmp_path / "x.npy"))
    assert "name the Parameter as NAME=PATH; the model has 2 (other, data)" in err


# --- pool, adaptive -------------------------------------------------------------------------------------------


def test_pool(capsys: Capsys, tmp_path: Path) -> None:
    x = np.random.default_rng(1).standard_normal((2, 3, 9, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    status, out, _ = _run(capsys, "pool", str(tmp_path / "x.npy"), str(tmp_path / "y.npy"), "--kernel", "3",
                          "--strides", "2,1", "--pads-begin", "1", "--pads_end", "0,1", "--dilations", "1,2",
                          "--rounding-type", "ceil", "--data-format", "NCX", "--indices", str(tmp_path / "i"),
                          "--index-element-type", "i32", "--index-axis", "1", "--semantics", "openvino")
    assert status == 0
    values, indices = ndpool.max_pool(x, kernel=3, strides=(2, 1), pads_begin=1, pads_end=(0, 1), dilations=(1, 2),
                                      rounding_type="ceil", data_format="NCX", return_indices=True,
                                      index_element_type="i32", index_axis=1, semantics="openvino")
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), values)
    np.testing.assert_array_equal(np.load(tmp_path / "i.npy"), indices)
    assert f"-> {tmp_path / 'y.npy'} {values.shape} f32" in out and f"indices -> {tmp_path / 'i.npy'}" in out
    status, out, _ = _run(capsys, "pool", str(tmp_path / "x.npy"), str(tmp_path / "z.npy"), "--kernel", "2",
                          "--strides", "2", "--auto-pad", "same_upper")
    assert status == 0 and "indices" not in out
    np.testing.assert_array_equal(np.load(tmp_path / "z.npy"),
                                  ndpool.max_pool(x, kernel=2, strides=2, auto_pad="same_upper"))


def test_adaptive(capsys: Capsys, tmp_path: Path) -> None:
    x = np.random.default_rng(2).standard_normal((1, 5, 7, 2)).astype(np.float32)
    np.savez(tmp_path / "x.npz", only=x)
    status, _, _ = _run(capsys, "adaptive", str(tmp_path / "x.npz"), str(tmp_path / "y.npy"), "--output-size",
                        "3,4", "--data-format", "NXC", "--indices", str(tmp_path / "i.npy"),
                        "--index-element-type", "i32", "--semantics", "torch")
    assert status == 0
    values, indices = ndpool.adaptive_max_pool(x, [3, 4], data_format="NXC", index_element_type="i32",
                                               semantics="torch")
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), values)
    np.testing.assert_array_equal(np.load(tmp_path / "i.npy"), indices)
    status, out, _ = _run(capsys, "adaptive", str(tmp_path / "x.npz"), str(tmp_path / "w.npy"), "--output-size", "2")
    assert status == 0 and "indices" not in out and np.load(tmp_path / "w.npy").shape == (1, 5, 2, 2)


@pytest.mark.parametrize(("args", "message"), [
    (["pool", "{x}", "{y}", "--kernel", "2", "--strides", "0"],
     "ndpool pool: error: MaxPool: 'strides' must be positive integers (got (0, 0)) [input shape (1, 4, 4, 1)]"),
    (["pool", "{x}", "{y}", "--kernel", "2,2,2", "--strides", "1"], "'kernel' must have one entry per spatial axis"),
    (["pool", "{x}", "{y}", "--kernel", "9", "--strides", "1"], "'kernel' window extent (k-1)*d+1 must not exceed"),
    (["pool", "{x}", "{y}", "--kernel", "2", "--strides", "1", "--semantics", "fast"], "'semantics' must be one of"),
    (["pool", "{missing}", "{y}", "--kernel", "2", "--strides", "1"], "no such file"),
    (["pool", "{x}", "{tmp}/no/dir/y.npy", "--kernel", "2", "--strides", "1"], "cannot write"),
    (["pool", "{two}", "{y}", "--kernel", "2", "--strides", "1"], "holds 2 arrays (a, b)"),
    (["pool", "{x}", "{y}", "--kernel", "2", "--strides", "1", "--index-axis", "x"], "invalid int value: 'x'"),
    (["adaptive", "{x}", "{y}", "--output-size=-1,2"], "'output_size' must be non-negative integers"),
    (["adaptive", "{x}", "{y}", "--output-size", "2", "--index-element-type", "u8"], "'index_element_type'"),
    (["adaptive", "{rank2}", "{y}", "--output-size", "2"], "'data' must have rank 3, 4 or 5"),
])
def test_functional_errors(capsys: Capsys, tmp_path: Path, args: list[str], message: str) -> None:
    np.save(tmp_path / "x.npy", np.zeros((1, 4, 4, 1), np.float32))
    np.save(tmp_path / "rank2.npy", np.zeros((4, 4), np.float32))
    np.savez(tmp_path / "two.npz", a=np.zeros(1), b=np.zeros(1))
    names = {"x": tmp_path / "x.npy", "y": tmp_path / "y.npy", "missing": tmp_path / "missing.npy",
             "two": tmp_path / "two.npz", "rank2": tmp_path / "rank2.npy", "tmp": tmp_path}
    err = _fails(capsys, *[a.format(**names) for a in args])
    assert message in err


# --- shape ----------------------------------------------------------------------------------------------------


def test_shape_spec_op(capsys: Capsys) -> None:
    status, out, _ = _run(capsys, "shape", "--op", "openvino:MaxPool-8", "--input-shape", "1,3,32,32", "kernel=3,3",
                          "strides=2,2", "pads_begin=1,1", "pads_end=0,0", "dilations=1,1", "rounding_type=ceil",
                          "index_element_type=i32")
    assert status == 0
    assert out.splitlines() == [
        ("openvino:MaxPool-8 on input shape (1, 3, 32, 32) (NCX): kernel=3,3 strides=2,2 pads_begin=1,1 "
         "pads_end=0,0 dilations=1,1 rounding_type=ceil index_element_type=i32"),
        "  output:             (1, 3, 16, 16)",
        "  indices:            (1, 3, 16, 16) i32",
        "  pads_begin:         (1, 1)",
        "  pads_end:           (0, 0)",
        "  windows per axis:   (16, 16) (256 per (n, c) plane)",
    ]


def test_shape_plain_ops(capsys: Capsys) -> None:
    status, out, _ = _run(capsys, "shape", "--op", "max_pool", "--input-shape", "32,112,112,64", "kernel=3",
                          "strides=2", "auto_pad=same_upper")
    assert status == 0
    assert "  output:             (32, 56, 56, 64)" in out and "indices" not in out
    assert "  pads_begin:         (0, 0)" in out and "  pads_end:           (1, 1)" in out
    status, out, _ = _run(capsys, "shape", "--op", "max_pool", "--input-shape", "1,2,10", "kernel=3", "strides=3",
                          "return_indices=true", "data_format=NCX", "rounding_type=ceil_torch", "pads_begin=1",
                          "pads_end=1")
    assert status == 0 and "  indices:            (1, 2, 4) i64" in out
    status, out, _ = _run(capsys, "shape", "--op", "adaptive_max_pool", "--input-shape", "1,3,32,32",
                          "output_size=16,7", "index_element_type=i32")
    assert status == 0
    assert "  indices:            (1, 3, 16, 7) i32" in out and "none (adaptive bins)" in out
    assert "  windows per axis:   (16, 7) (112 per (n, c) plane)" in out
    status, out, _ = _run(capsys, "shape", "--op", "openvino:AdaptiveMaxPool-8", "--input-shape", "2,3,8,8,8",
                          "output_size=2,3,4", "output_type=i32")
    assert status == 0 and "  output:             (2, 3, 2, 3, 4)" in out and "(2, 3, 2, 3, 4) i32" in out


@pytest.mark.parametrize(("args", "message"), [
    (["--op", "MaxPool", "--input-shape", "1,1,4"], "ndpool: 'op' must be one of max_pool, adaptive_max_pool, onednn"),
    (["--op", "max_pool", "--input-shape", "1,1,4", "kernel"], "attributes are given as ATTR=VALUE (got 'kernel')"),
    (["--op", "max_pool", "--input-shape", "1,1,4", "kernel=2", "strides=1", "padding=1"],
     "max_pool: 'padding' is not an attribute of max_pool (valid: kernel, strides, pads_begin"),
    (["--op", "max_pool", "--input-shape", "1,1,x", "kernel=2", "strides=1"], "'input_shape' must be non-negative"),
    (["--op", "max_pool", "--input-shape", "1,4", "kernel=2", "strides=1"], "'data' must have rank 3, 4 or 5"),
    (["--op", "max_pool", "--input-shape", "1,1,4", "kernel=2"], "max_pool: 'strides' is required"),
    (["--op", "openvino:MaxPool-8", "--input-shape", "1,1,4", "kernel=2", "strides=1", "pads_begin=0",
      "pads_end=0"], "openvino:MaxPool-8: 'dilations' is a required attribute"),
    (["--op", "openvino:MaxPool-1", "--input-shape", "1,1,4", "kernel=5", "strides=1", "pads_begin=0",
      "pads_end=0"], "window extent (k-1)*d+1 must not exceed the padded input size"),
    (["--op", "openvino:AdaptiveMaxPool-8", "--input-shape", "1,1,4"], "'output_size' is a required input"),
    (["--op", "adaptive_max_pool", "--input-shape", "1,1,4"], "adaptive_max_pool: 'output_size' is required"),
    (["--op", "adaptive_max_pool", "--input-shape", "1,1,4", "output_size=2", "semantics=onnx"],
     "'semantics' must be one of spec, openvino, torch"),
    (["--op", "adaptive_max_pool", "--input-shape", "1,1,4", "output_size=2", "kernel=2"],
     "'kernel' is not an attribute of adaptive_max_pool"),
])
def test_shape_errors(capsys: Capsys, args: list[str], message: str) -> None:
    err = _fails(capsys, "shape", *args)
    assert err.startswith("ndpool shape: error: ") and message in err, err


# --- compare --------------------------------------------------------------------------------------------------


def _table(out: str) -> dict[str, list[str]]:
    """The comparison table's rows by runner: [output shape, values, indices, vs its preset] (or [n/a ...])."""
    rows = {}
    for line in out.splitlines():
        if line.startswith(("ndpool ", "OpenVINO ", "onnxruntime ", "torch ")):
            runner, *cells = re.split(r" {2,}", line)
            rows[runner] = cells
    return rows


def test_compare_spec_op_engines_match_their_presets(capsys: Capsys, tmp_path: Path) -> None:
    x = np.random.default_rng(5).integers(-3, 4, size=(2, 3, 9, 9)).astype(np.float32)
    x.reshape(-1)[::7] = np.nan
    np.save(tmp_path / "x.npy", x)
    status, out, _ = _run(capsys, "compare", "--op", "openvino:MaxPool-8", "--input", str(tmp_path / "x.npy"),
                          "kernel=3,3", "strides=2,2", "pads_begin=1,1", "pads_end=0,0", "dilations=1,1",
                          "rounding_type=ceil")
    assert status == 0
    rows = _table(out)
    assert f"from {tmp_path / 'x.npy'}" in out and "baseline: ndpool openvino" in out
    assert rows["ndpool openvino"] == ["(2, 3, 5, 5)", "baseline", "baseline", "-"]
    assert rows["ndpool onednn"] == ["(2, 3, 5, 5)", "same", "same", "-"]
    assert rows["OpenVINO 2026.4.1"][-1] == "= ndpool openvino"
    assert rows["onnxruntime 1.32.0"][-1] == "= ndpool onnx"
    assert rows["torch 2.13.0+cpu"][0].startswith("n/a (torch takes only symmetric pads of at most kernel // 2")
    assert "disagreements (first positions" in out and "ndpool spec values vs ndpool openvino: " in out
    assert "index scopes:" in out


def test_compare_plain_max_pool_nxc(capsys: Capsys) -> None:
    status, out, _ = _run(capsys, "compare", "--op", "max_pool", "--input-shape", "1,8,8,2", "kernel=3",
                          "strides=2", "pads_begin=1", "pads_end=1", "return_indices=true", "dilations=2")
    assert status == 0
    rows = _table(out)
    assert "generated (N(0, 1), seed 0)" in out and "baseline: ndpool spec" in out
    assert rows["ndpool spec"] == ["(1, 3, 3, 2)", "baseline", "baseline", "-"]
    for engine, preset in (("OpenVINO 2026.4.1", "openvino"), ("onnxruntime 1.32.0", "onnx"),
                           ("torch 2.13.0+cpu", "torch")):
        assert rows[engine][-1] == f"= ndpool {preset}", rows[engine]


def test_compare_shape_differences_show(capsys: Capsys) -> None:
    # ceil without the torch correction: OpenVINO's shape; onnxruntime and torch drop the last window.
    status, out, _ = _run(capsys, "compare", "--op", "max_pool", "--input-shape", "1,1,5", "kernel=2", "strides=2",
                          "pads_begin=1", "pads_end=1", "rounding_type=ceil", "data_format=NCX", "--dtype", "f64")
    assert status == 0
    rows = _table(out)
    assert rows["ndpool spec"] == ["(1, 1, 4)", "baseline", "-", "-"]
    assert rows["OpenVINO 2026.4.1"] == ["(1, 1, 4)", "1 differ", "-", "= ndpool openvino"]  # f32's lowest
    for engine in ("onnxruntime 1.32.0", "torch 2.13.0+cpu"):
        assert rows[engine] == ["(1, 1, 3)", "shape differs", "-", "shape differs"]
    assert "torch 2.13.0+cpu vs ndpool spec: shape (1, 1, 3) vs (1, 1, 4)" in out
    assert "OpenVINO 2026.4.1 values vs ndpool spec: 1 of 4 differ; first at (0, 0, 3): -3.4028234663852886e+38 vs -inf" in out


def test_compare_adaptive_and_unsupported_types(capsys: Capsys) -> None:
    status, out, _ = _run(capsys, "compare", "--op", "openvino:AdaptiveMaxPool-8", "--input-shape", "1,2,9,7",
                          "output_size=4,3", "--dtype", "i8")
    assert status == 0
    rows = _table(out)
    assert "generated (integers, seed 0)" in out
    assert rows["OpenVINO 2026.4.1"][-1] == "= ndpool openvino"
    assert rows["onnxruntime 1.32.0"] == ["n/a (ONNX has no AdaptiveMaxPool)"]
    assert rows["torch 2.13.0+cpu"][0].startswith("n/a (engine error: ")  # torch's adaptive pooling: floats only
    status, out, _ = _run(capsys, "compare", "--op", "onednn:MaxPool-1", "--input-shape", "1,4,4,2", "kernel=2",
                          "strides=2", "pads_begin=0", "pads_end=0", "--dtype", "i32")
    assert status == 0
    assert "n/a (onnxruntime's MaxPool has no i32 kernel)" in out and "indices" in out


def test_compare_reports_absent_engines(capsys: Capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(_compare.importlib.util, "find_spec",
                        lambda name, *a: None if name in ("torch", "onnx") else real(name, *a))
    status, out, _ = _run(capsys, "compare", "--op", "max_pool", "--input-shape", "1,4,4,1", "kernel=2", "strides=2")
    assert status == 0
    assert "torch" in out and "absent (not installed)" in out
    assert "n/a (the onnx package, needed to build the model, is not installed)" in out


@pytest.mark.parametrize(("args", "message"), [
    (["--op", "max_pool", "kernel=2", "strides=2"], "give --input-shape (generated data) or --input PATH"),
    (["--op", "max_pool", "--input", "{x}", "--input-shape", "1,4,4,2", "kernel=2", "strides=2"],
     "wrong input shape: {x} has (1, 4, 4, 1), --input-shape says 1,4,4,2"),
    (["--op", "max_pool", "--input", "{x}", "kernel=2", "strides=0"], "'strides' must be positive integers"),
    (["--op", "max_pool", "--input-shape", "1,4,4,1", "--dtype", "f8", "kernel=2", "strides=2"],
     "invalid choice: 'f8'"),
    (["--op", "conv", "--input-shape", "1,4,4,1"], "'op' must be one of"),
])
def test_compare_errors(capsys: Capsys, tmp_path: Path, args: list[str], message: str) -> None:
    np.save(tmp_path / "x.npy", np.zeros((1, 4, 4, 1), np.float32))
    x = str(tmp_path / "x.npy")
    err = _fails(capsys, "compare", *[a.format(x=x) for a in args])
    assert message.format(x=x) in err, err


def test_engines_are_imported_only_by_compare() -> None:
    code = ("import sys, ndpool, ndpool.cli, ndpool._compare, ndpool.spec\n"
            "from ndpool.cli import main\n"
            "assert main(['shape', '--op', 'max_pool', '--input-shape', '1,4,4,1', 'kernel=2', 'strides=2']) == 0\n"
            "loaded = [m for m in ('openvino', 'onnxruntime', 'onnx', 'torch', 'matplotlib', 'tqdm') if m in sys.modules]\n"
            "assert not loaded, loaded\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


# --- bench ----------------------------------------------------------------------------------------------------


def test_bench_quick_with_plot(capsys: Capsys, tmp_path: Path) -> None:
    suite = cli._load_suite(REPO / "benchmarks")
    smallest = min(suite.WORKLOADS, key=lambda w: (int(np.prod(w.shape)), w.name)).name  # one quick workload
    plot = tmp_path / "ratios.png"
    status, out, err = _run(capsys, "bench", "--quick", "--filter", smallest, "--repeat", "1", "--plot", str(plot))
    assert status == 0, err
    assert smallest in out and "ndpool" in out and f"wrote {plot}" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "workload" in err  # the progress bar (tqdm) or its fallback lines


def test_bench_errors(capsys: Capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    err = _fails(capsys, "bench", "--benchmarks", str(tmp_path))
    assert "cannot find the benchmark suite benchmarks/suite.py" in err and "source checkout" in err
    err = _fails(capsys, "bench", "--quick", "--filter", "no such workload")
    assert "no workload matches --filter 'no such workload'" in err
    (tmp_path / "suite.py").write_text("raise RuntimeError('half written')\n")
    err = _fails(capsys, "bench", "--benchmarks", str(tmp_path))
    assert "cannot import" in err and "RuntimeError: half written" in err
    (tmp_path / "suite.py").write_text("WORKLOADS = []\n")
    assert "lacks run_suite, format_table" in _fails(capsys, "bench", "--benchmarks", str(tmp_path))
    real = importlib.util.find_spec
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert "--plot needs matplotlib: pip install 'ndpool[plot]'" in _fails(capsys, "bench", "--plot", "x.png")


def test_bench_times_calls_in_bursts() -> None:
    # Round-robin: every runner is called `burst` times in a row per round at least, a fast one until
    # BURST_MIN_S has passed (at most BURST_MAX calls), and keeps its fastest call.
    suite = cli._load_suite(REPO / "benchmarks")
    calls: list[str] = []

    def slow() -> None:  # three calls last longer than BURST_MIN_S
        calls.append("s")
        time.sleep(suite.BURST_MIN_S / 2)

    best = suite.time_round_robin({"a": lambda: calls.append("a"), "s": slow}, 2, burst=3)
    assert calls == (["a"] * suite.BURST_MAX + ["s"] * 3) * 2
    assert set(best) == {"a", "s"} and 0 <= best["a"] < suite.BURST_MIN_S / 2 <= best["s"] < 1


def _bench_row(name: str, ratio: float, *, dtype: str = "f32", indices: str | None = None, ndpool_ms: float = 1.0,
               peer_ms: float = 2.0, floor_ms: float | None = None, roofline: float = 0.9) -> dict[str, Any]:
    layout = name.split()[-1] if not indices else name.split()[-2]
    return {"workload": name, "op": "max_pool", "shape": [1, 2, 3, 4], "dtype": dtype, "layout": layout,
            "kernel": [3, 3], "indices": indices, "ndpool_ms": ndpool_ms, "ratio": ratio, "roofline": roofline,
            "fastest_peer": "torch", "peers": {"torch": {"ms": peer_ms, "layout": "NXC"}}, "floor_ms": floor_ms}


def test_bench_targets() -> None:
    cli._load_suite(REPO / "benchmarks")  # (its directory on sys.path, as run.py has it)
    spec = importlib.util.spec_from_file_location("targets", REPO / "benchmarks" / "targets.py")
    assert spec is not None and spec.loader is not None
    targets = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(targets)
    rows = [_bench_row("stem-k3s2p1 f32 NXC", 0.6, ndpool_ms=2.0, roofline=0.8),
            _bench_row("stem-k3s2p1 f16 NXC", 0.3, dtype="f16", ndpool_ms=2.9),
            _bench_row("stem-k3s2p1 bf16 NXC", 0.3, dtype="bf16", ndpool_ms=3.1),
            _bench_row("k2s2 f32 NCX", 0.7, roofline=0.45, peer_ms=2.0, floor_ms=1.9),  # (a peer at the floor)
            _bench_row("spp-k13s1p6 f32 NXC", 0.19),
            _bench_row("spp-k13s1p6 f32 NXC idx-i64", 0.3, indices="i64"),
            # torch at 4.0 ms against a floor of 3.5 (within 1.25x): no engine could make 0.8x of it
            _bench_row("stem-k3s2p1 f32 NCX idx-i64", 0.86, indices="i64", peer_ms=4.0, floor_ms=3.5),
            _bench_row("adaptive 8x64x100x100->13x17 NCX idx-i64", 0.9, indices="i64", peer_ms=0.7, floor_ms=0.2)]
    verdicts = dict(targets.check_targets(rows, {"warm_mb": 0.0, "output_mb": 24.5}))
    every, large, large_idx, roof, narrow, rss = verdicts.values()
    assert every == ("MISSED: stem-k3s2p1 f32 NCX idx-i64 0.86 floor-limited; "
                     "adaptive 8x64x100x100->13x17 NCX idx-i64 0.90")
    assert large == "held (worst 0.19, spp-k13s1p6 f32 NXC)"
    assert large_idx == "held (worst 0.30, spp-k13s1p6 f32 NXC idx-i64)"
    assert roof == "MISSED: k2s2 f32 NCX 45%"  # (the floor concerns the ratios to peers only)
    assert narrow == "MISSED: stem-k3s2p1 bf16 NXC 1.55"  # 3.1 ms against f32's 2.0; f16's 1.45 holds
    assert rss.startswith("held (0.0 MB")
    rows[2]["ndpool_ms"] = 2.9
    assert list(dict(targets.check_targets(rows)).values())[4] == "held (worst 1.45, stem-k3s2p1 f16 NXC)"
    # Without floors the table says how to get them; a row kind the run lacks is "not measured".
    alone = targets.format_targets(rows[:1])
    assert "not measured (no such row in this run)" in alone and "run.py --floor" in alone
    assert "run.py --floor" not in targets.format_targets(rows)


def test_bench_floor_in_the_same_rounds() -> None:
    suite = cli._load_suite(REPO / "benchmarks")
    w = suite.quick_workloads()[0]
    row = suite.run_workload(w, 1, floor=True)
    assert row["floor_ms"] > 0 and "floor_read" not in row["peers"]
    table = suite.format_table([row])
    header, _, line = table.splitlines()[:3]
    assert header.endswith("floor ms") and line.split()[-1] == suite._ms(row["floor_ms"])


def test_bench_finds_the_checkout() -> None:
    assert cli._find_benchmarks(None) == REPO / "benchmarks"


def test_progress_without_tqdm(capsys: Capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm now raises ImportError
    step, close = cli._progress(2)
    step("[1/2] a")
    step("[2/2] b")
    close()
    assert capsys.readouterr().err == "[1/2] a\n[2/2] b\n"


def test_progress_with_tqdm(capsys: Capsys) -> None:
    step, close = cli._progress(2)
    step("[1/2] first")
    step("[2/2] second")
    close()
    err = capsys.readouterr().err
    assert "2/2" in err and "second" in err


# --- the installed console script -------------------------------------------------------------------------------


def test_console_script() -> None:
    """The installed ``ndpool`` script of this interpreter's environment (``python -m ndpool`` if it has none)."""
    script = shutil.which("ndpool", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ndpool"]
    done = subprocess.run([*command, "run"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "AdaptiveMaxPool-8, the example layer of the OpenVINO spec" in done.stdout
    done = subprocess.run([*command, "shape", "--op", "max_pool", "--input-shape", "1,4,4,1", "kernel=2",
                           "strides=0"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == ("ndpool shape: error: MaxPool: 'strides' must be positive integers (got (0, 0)) "
                                   "[input shape (1, 4, 4, 1)]")


def test_broken_pipe_is_quiet(capsys: Capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    def closed(*args: object) -> str:
        raise BrokenPipeError

    monkeypatch.setattr(_compare, "format_shape", closed)
    status, out, err = _run(capsys, "shape", "--op", "max_pool", "--input-shape", "1,4,4,1", "kernel=2", "strides=2")
    assert (status, out, err) == (1, "", "")


def test_kernel_ab_evicted_timing_calls_each_version_alike_and_keeps_its_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    """kernel_ab --evict: every version is called rounds x 5 times, alternated, each call after the
    eviction write (untimed), and its fastest call is kept."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import kernel_ab
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    monkeypatch.setattr(kernel_ab, "EVICT_BYTES", 1 << 16)
    calls: list[str] = []

    def version(tag: str, seconds: float) -> Any:
        def run() -> None:
            calls.append(tag)
            time.sleep(seconds if len(calls) > 2 else 3 * seconds)  # (the first calls slower)
        return run

    best = kernel_ab.time_evicted({"base": version("base", 0.002), "tree": version("tree", 0.004)}, 2)
    assert calls == ["base", "tree"] * 10
    assert list(best) == ["base", "tree"]
    assert 0.002 <= best["base"] < 0.004 <= best["tree"] < 0.012


def test_kernel_ab_loads_a_kernel_module_as_it_is_and_reads_cases() -> None:
    """benchmarks/kernel_ab.py (kernel before/after in one process): a kernel module's source loads as a
    module of its own whose imports reach the package (its kernel is the same function, not the package's
    object), and --case calls parse into ndpool calls or are refused with the form they need."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import kernel_ab
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    from ndpool._kernels import _tiles

    copy = kernel_ab.load_version("_tiles", (REPO / "src/ndpool/_kernels/_tiles.py").read_text(), "test")
    assert copy.pool_tiles is not _tiles.pool_tiles
    assert copy.pool_tiles.py_func.__code__.co_code == _tiles.pool_tiles.py_func.__code__.co_code
    assert copy.tiles_scratch.__module__ != _tiles.__name__
    name, call = kernel_ab.parse_case("max_pool((1, 2, 6, 6), kernel=2, strides=2, data_format='NCX', dtype='float16')")
    assert call().shape == (1, 2, 3, 3) and call().dtype == np.float16
    with pytest.raises(SystemExit, match="expected max_pool"):
        kernel_ab.parse_case("print('x')")


def test_floor_reads_every_input_element_and_writes_every_output_byte() -> None:
    """benchmarks/floor.py (each workload's memory floor): its read pass reaches every element of each
    thread's part (a NaN in the last one is seen), its write pass every output word, and a row of a
    small workload gives both times."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import floor
        import suite
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    x = np.zeros(1001, np.float32)
    x[-1] = np.nan
    assert floor._read(x, 0, x.size) != 0 and floor._read(x, 0, x.size - 1) == 0
    out = np.zeros(7, np.uint64)
    floor._split(floor._write, out)
    assert np.array_equal(out, np.arange(7, dtype=np.uint64))
    for w in suite.quick_workloads()[:2]:
        row = floor.floor_row(w, 1)
        assert row["read_ms"] > 0 and row["write_ms"] > 0, (w.name, row)


def test_handoff_measures_each_way_with_the_whole_job_done() -> None:
    """benchmarks/handoff.py (what handing parts of a call to other threads costs): each way's job
    reaches every element (measure() checks it, and raises otherwise) and every figure is a time."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import handoff
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    figures = handoff.measure(20)
    assert set(figures) == {"executor", "crew", "inline"} and min(figures.values()) > 0, figures


def test_benchmark_can_keep_freed_memory_for_every_engine() -> None:
    """benchmarks/run.py --keep-freed-memory: glibc (the CI's and these machines' libc) accepts both
    mallopt settings, and a run with the flag says so in its environment line."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import run
        import suite
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    assert suite.keep_freed_memory()
    env = suite.environment() | {"keep_freed_memory": True}
    assert "glibc keeps freed memory" in suite.format_environment(env)
    assert run.parse_args(["--keep-freed-memory"]).keep_freed_memory
