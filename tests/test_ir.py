"""IR XML reading and running (ndpool.spec._ir): goldens, every error path, and round trips through OpenVINO.

Goldens in tests/data: the spec documents' AdaptiveMaxPool-8 example layer verbatim (000 and 001), the
built-in oneDNN Graph MaxPool example, and two models written by OpenVINO's own serializer with the
outputs OpenVINO's CPU plugin gave on a fixed input with NaNs and ties (made by data/make_goldens.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset8, opset14

import ndpool
from ndpool.cli import main
from ndpool.spec import (
    BUILTIN_EXAMPLES,
    IRError,
    parse_ir,
    read_ir,
    run_ir,
    spec_op_geometry,
)
from ndpool.spec._ir import op_for_layer

DATA = Path(__file__).resolve().parent / "data"


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def _layer(body: str, *, type_: str = "MaxPool", version: str = "opset8", extra: str = "") -> str:
    return f'<layer id="3" name="p" type="{type_}" version="{version}" {extra}>{body}</layer>'


def _ports(inputs: list[list[int]], outputs: list[list[int]]) -> str:
    def port(i: int, dims: list[int]) -> str:
        return f'<port id="{i}">' + "".join(f"<dim>{d}</dim>" for d in dims) + "</port>"

    ins = "".join(port(i, d) for i, d in enumerate(inputs))
    outs = "".join(port(len(inputs) + i, d) for i, d in enumerate(outputs))
    return f"<input>{ins}</input><output>{outs}</output>"


POOL8 = ('<data strides="2,2" dilations="1,1" pads_begin="0,0" pads_end="0,0" kernel="2,2" '
         'rounding_type="floor" auto_pad="explicit" index_element_type="i64" axis="0"/>')


def _net(layers: str, edges: str) -> str:
    return f'<?xml version="1.0"?>\n<net name="t" version="11">\n<layers>\n{layers}\n</layers>\n<edges>\n{edges}\n</edges>\n</net>\n'


PARAM = ('<layer id="0" name="data" type="Parameter" version="opset1"><data shape="1,1,4,4" element_type="f32"/>'
         '<output><port id="0" precision="FP32" names="data"><dim>1</dim><dim>1</dim><dim>4</dim><dim>4</dim>'
         '</port></output></layer>')


def _result(layer_id: int, dims: list[int]) -> str:
    return (f'<layer id="{layer_id}" name="r{layer_id}" type="Result" version="opset1"><input><port id="0">'
            + "".join(f"<dim>{d}</dim>" for d in dims) + "</port></input></layer>")


def _edge(a: int, ap: int, b: int, bp: int) -> str:
    return f'<edge from-layer="{a}" from-port="{ap}" to-layer="{b}" to-port="{bp}"/>'


def _simple_net(pool_dims: list[int] | None = None, data: str = POOL8, result_dims: list[int] | None = None,
                input_dims: list[int] | None = None) -> str:
    dims = pool_dims or [1, 1, 2, 2]
    pool = _layer(data + _ports([input_dims or [1, 1, 4, 4]], [dims, dims])).replace('id="3"', 'id="1"')
    return _net(PARAM + pool + _result(2, result_dims or dims) + _result(3, result_dims or dims),
                _edge(0, 0, 1, 0) + _edge(1, 1, 2, 0) + _edge(1, 2, 3, 0))


# --- the spec documents' examples -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["spec_000_adaptive_max_pool.xml", "spec_001_adaptive_max_pool.xml"])
def test_spec_adaptive_example_runs_verbatim(name: str) -> None:
    model = read_ir(DATA / name)
    assert model.single_layer
    run = run_ir(model)
    x = run.inputs["data"]
    assert x.shape == (1, 3, 32, 32) and x.dtype == np.float32 and run.generated == ("data",)
    values, indices = run.outputs["AdaptiveMaxPool.output"], run.outputs["AdaptiveMaxPool.indices"]
    expected = ndpool.adaptive_max_pool(x, [16, 16], semantics="openvino")
    np.testing.assert_array_equal(values, expected[0])
    np.testing.assert_array_equal(indices, expected[1])
    assert indices.dtype == np.int64  # output_type="i64", the documents' alias of index_element_type
    assert run.layers[0].op == "openvino:AdaptiveMaxPool-8" and run.layers[0].semantics == "openvino"


def test_builtin_examples_are_the_goldens() -> None:
    by_name = {ex.name: ex for ex in BUILTIN_EXAMPLES}
    assert _lines(by_name["spec-adaptive-max-pool"].xml) == _lines((DATA / "spec_000_adaptive_max_pool.xml").read_text())
    assert _lines(by_name["spec-max-pool"].xml) == _lines((DATA / "onednn_max_pool_nxc.xml").read_text())


def test_onednn_example_is_nxc_max_pool() -> None:
    run = run_ir(read_ir(DATA / "onednn_max_pool_nxc.xml"))
    x = run.inputs["src"]
    assert x.shape == (1, 32, 32, 3)
    expected = ndpool.max_pool(x, kernel=3, strides=2, pads_begin=1, pads_end=1, semantics="onednn")
    np.testing.assert_array_equal(run.outputs["MaxPool.dst"], expected)
    assert run.layers[0].op == "onednn:MaxPool-1"


def test_semantics_override_reaches_every_layer() -> None:
    run = run_ir(read_ir(DATA / "spec_000_adaptive_max_pool.xml"), semantics="spec")
    assert run.layers[0].semantics == "spec"
    with pytest.raises(IRError, match=r"layer 'AdaptiveMaxPool' .*'semantics' must be one of spec, openvino, torch"):
        run_ir(read_ir(DATA / "spec_000_adaptive_max_pool.xml"), semantics="onnx")


# --- models written by OpenVINO, with OpenVINO's outputs ----------------------------------------------------------


@pytest.mark.parametrize("name", ["maxpool8_adaptive8", "maxpool_versions"])
def test_openvino_goldens(name: str) -> None:
    golden = np.load(DATA / f"{name}.npz")
    run = run_ir(read_ir(DATA / f"{name}.xml"), {"data": golden["input:data"]})
    expected = {key.split(":", 1)[1]: golden[key] for key in golden.files if key.startswith("output:")}
    assert list(run.outputs) == list(expected)
    for key, want in expected.items():
        got = run.outputs[key]
        assert got.dtype == want.dtype, key
        np.testing.assert_array_equal(got, want, err_msg=key)
    assert run.generated == ()


def test_versions_map_to_spec_ops() -> None:
    model = read_ir(DATA / "maxpool_versions.xml")
    ops = {lr.layer.name: lr.op for lr in run_ir(model).layers}
    assert ops == {"pool1": "openvino:MaxPool-1", "pool8": "openvino:MaxPool-8", "pool14": "openvino:MaxPool-14"}


@pytest.mark.parametrize(("type_", "version", "op"), [
    ("MaxPool", "opset1", "openvino:MaxPool-1"), ("MaxPool", "opset3", "openvino:MaxPool-1"),
    ("MaxPool", "opset8", "openvino:MaxPool-8"), ("MaxPool", "opset13", "openvino:MaxPool-8"),
    ("MaxPool", "opset14", "openvino:MaxPool-14"), ("MaxPool", "onednn", "onednn:MaxPool-1"),
    ("MaxPool", None, "openvino:MaxPool-1"), ("AdaptiveMaxPool", "opset8", "openvino:AdaptiveMaxPool-8"),
    ("AdaptiveMaxPool", None, "openvino:AdaptiveMaxPool-8"), ("Parameter", "opset1", None),
])
def test_op_for_layer(type_: str, version: str | None, op: str | None) -> None:
    attr = f' version="{version}"' if version else ""
    model = parse_ir(_net(f'<layer id="0" name="x" type="{type_}"{attr}/>', ""))
    spec = op_for_layer(model.layers[0], "t")
    assert (spec.name if spec else None) == op


@pytest.mark.parametrize(("type_", "version", "match"), [
    ("AdaptiveMaxPool", "opset7", r"unsupported version 'opset7' of AdaptiveMaxPool .* exists from opset8 on"),
    ("MaxPool", "custom", r"unsupported version 'custom' of MaxPool .* or version=\"onednn\""),
    ("Convolution", "opset1", r"unsupported layer type 'Convolution' \(layer id 0, 'x'\)"),
])
def test_unsupported_layers(type_: str, version: str, match: str) -> None:
    model = parse_ir(_net(f'<layer id="0" name="x" type="{type_}" version="{version}"/>', ""), source="m.xml")
    with pytest.raises(IRError, match=match) as info:
        run_ir(model)
    assert str(info.value).startswith("m.xml:4: ")


# --- round trips: models built and saved by OpenVINO, run by `ndpool run`, equal to OpenVINO's results ---------------


def _openvino_outputs(model: ov.Model, x: np.ndarray) -> dict[str, np.ndarray]:
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    request.infer([x])
    return {r.get_friendly_name(): np.array(request.get_output_tensor(i).data, copy=True)
            for i, r in enumerate(model.get_results())}


def _roundtrip(tmp_path: Path, model: ov.Model, x: np.ndarray, capsys: pytest.CaptureFixture[str]) -> None:
    xml = tmp_path / "model.xml"
    ov.save_model(model, xml)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out.npz"
    assert main(["run", str(xml), "--input", f"data={tmp_path / 'x.npy'}", "--output", str(out),
                 "--semantics", "openvino"]) == 0
    assert "declared port dims agree" in capsys.readouterr().out
    got = np.load(out)
    want = _openvino_outputs(model, x)
    assert sorted(got.files) == sorted(want)
    for key, expected in want.items():
        assert got[key].dtype == expected.dtype, key
        np.testing.assert_array_equal(got[key], expected, err_msg=key)


def test_roundtrip_maxpool8_adaptive8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, size=(2, 3, 11, 10)).astype(np.float32)
    x.reshape(-1)[::13] = np.nan
    data = opset1.parameter(list(x.shape), ov.Type.f32, name="data")
    pool = opset8.max_pool(data, [2, 1], [1, 2], [1, 0], [1, 1], [3, 2], "ceil", "explicit", "i32", 1, name="pool")
    size = opset1.constant(np.array([4, 3], np.int32), name="output_size")
    adaptive = opset8.adaptive_max_pool(pool.output(0), size, "i32", name="adaptive")
    model = ov.Model([opset1.result(pool.output(0), name="pooled"), opset1.result(pool.output(1), name="pool_idx"),
                      opset1.result(adaptive.output(0), name="values"),
                      opset1.result(adaptive.output(1), name="indices")], [data], "roundtrip")
    _roundtrip(tmp_path, model, x, capsys)


def test_roundtrip_adaptive8_on_nan_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # AdaptiveMaxPool-8 straight on data with NaNs and ties: OpenVINO's "first valid" rule, i32 and i64 sizes.
    x = np.random.default_rng(6).integers(-2, 3, size=(2, 2, 7, 5, 6)).astype(np.float32)
    x.reshape(-1)[::5] = np.nan
    data = opset1.parameter(list(x.shape), ov.Type.f32, name="data")
    adaptive = opset8.adaptive_max_pool(data, opset1.constant(np.array([3, 2, 4], np.int64), name="size"), "i32",
                                        name="adaptive")
    model = ov.Model([opset1.result(adaptive.output(0), name="values"),
                      opset1.result(adaptive.output(1), name="indices")], [data], "adaptive")
    _roundtrip(tmp_path, model, x, capsys)


def test_roundtrip_maxpool1_and_14(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x = np.random.default_rng(4).standard_normal((1, 2, 7, 9, 6)).astype(np.float32)
    data = opset1.parameter(list(x.shape), ov.Type.f32, name="data")
    v1 = opset1.max_pool(data, [2, 2, 2], [0, 0, 0], [0, 0, 0], [2, 3, 2], "ceil", "same_lower", name="p1")
    v14 = opset14.max_pool(data, [2, 3, 1], [1, 1, 1], [1, 1, 0], [0, 1, 0], [3, 3, 2], "ceil_torch", "explicit",
                           "i64", 0, name="p14")
    model = ov.Model([opset1.result(v1.output(0), name="v1"), opset1.result(v14.output(0), name="v14"),
                      opset1.result(v14.output(1), name="i14")], [data], "versions")
    _roundtrip(tmp_path, model, x, capsys)


# --- reading errors -----------------------------------------------------------------------------------------------


def test_malformed_xml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.xml"
    path.write_text('<?xml version="1.0"?>\n<net>\n<layers>\n<layer id="0" type="Parameter"\n</layers>\n</net>\n')
    with pytest.raises(IRError, match=r"bad\.xml:5: malformed XML: not well-formed \(invalid token\)"):
        read_ir(path)


def test_elisions_keep_line_numbers() -> None:
    text = '<layer ... type="AdaptiveMaxPool"\n ...\n ... >\n<data output_type="i64"/>\n<input>\n</oops>\n'
    with pytest.raises(IRError, match=r"^x:6: malformed XML: mismatched tag"):
        parse_ir(text, source="x")


@pytest.mark.parametrize(("text", "match"), [
    ("", r"malformed XML: no element found"),
    ("<model/>", r"expected a <net> or a <layer> element, got <model>"),
    ("<net/>", r"<net> has no <layers>"),
    ('<!DOCTYPE net [<!ENTITY a "aaaa">]><net><layers/></net>', r"entity declarations are not allowed"),
    ('<net><layers><layer id="0"/></layers></net>', r"a <layer> has no type"),
    ('<net><layers><layer type="Const"/></layers></net>', r"a <layer> has no id"),
    ('<net><layers><layer id="0" type="Result"/><layer id="0" type="Result"/></layers></net>', r"two layers have id 0"),
    ('<net><layers/><edges><edge from-layer="0"/></edges></net>', r"an <edge> lacks from-port, to-layer, to-port"),
    ('<net><layers/><edges><edge from-layer="0" from-port="x" to-layer="1" to-port="0"/></edges></net>',
     r"from-port must be an integer \(got 'x'\)"),
    ('<layer type="MaxPool"><input><port><dim>1</dim></port></input></layer>', r"a <port> has no id"),
    ('<layer type="MaxPool"><input><port id="0"><dim>two</dim></port></input></layer>', r"a <dim> must be an integer"),
    ('<layer type="MaxPool"><input><port id="0"><dim>-3</dim></port></input></layer>', r"a <dim> must be >= 0 or -1"),
    ('<layer type="MaxPool"><input><port id="0" precision="BOOL"/></input></layer>', r"unsupported element type 'BOOL'"),
    ('<layer type="Result"/>', r"a single <layer> must be a pooling layer, got type 'Result'"),
    ('<layer type="MaxPool"/>', r"declares 0 input port\(s\); openvino:MaxPool-1 takes 1 \(data\)"),
    (('<layer type="AdaptiveMaxPool"><input><port id="0"/><port id="1"/></input><output><port id="2"><dim>1</dim>'
      '</port></output></layer>'), r"output_size is taken from its first output port's dims"),
])
def test_parse_errors(text: str, match: str) -> None:
    with pytest.raises(IRError, match=match):
        parse_ir(text)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(IRError, match=r"missing\.xml: cannot read the IR file"):
        read_ir(tmp_path / "missing.xml")
    (tmp_path / "latin.xml").write_bytes(b"<net>\xff</net>")
    with pytest.raises(IRError, match=r"latin\.xml: cannot read the IR file"):
        read_ir(tmp_path / "latin.xml")


def test_missing_bin(tmp_path: Path) -> None:
    xml = tmp_path / "m.xml"
    xml.write_text((DATA / "maxpool8_adaptive8.xml").read_text())
    with pytest.raises(IRError, match=r"m\.xml:\d+: missing weights file .*m\.bin, needed by layer 'output_size'"):
        run_ir(read_ir(xml))


def test_bin_too_short(tmp_path: Path) -> None:
    xml = tmp_path / "m.xml"
    xml.write_text((DATA / "maxpool8_adaptive8.xml").read_text())
    (tmp_path / "m.bin").write_bytes(b"\0" * 8)
    with pytest.raises(IRError, match=r"offset 0 and size 16 do not fit a i64 tensor of shape \[2\] .*\(8 bytes\)"):
        run_ir(read_ir(xml))


def test_model_without_const_needs_no_bin() -> None:
    assert not (DATA / "maxpool_versions.bin").exists()
    run_ir(read_ir(DATA / "maxpool_versions.xml"))


# --- graph and shape errors ---------------------------------------------------------------------------------------


def test_declared_dims_are_checked_per_layer_and_port() -> None:
    model = parse_ir(_simple_net([1, 1, 3, 2], result_dims=[1, 1, 2, 2]), source="m.xml")
    with pytest.raises(IRError) as info:
        run_ir(model)
    message = str(info.value)
    assert message.startswith("m.xml: declared port dims disagree with ndpool's shape inference:")
    assert "layer 'p' (id 1, MaxPool) output port 1 (line 4): declared [1, 1, 3, 2], ndpool infers [1, 1, 2, 2]" in message
    assert "layer 'p' (id 1, MaxPool) output port 2" in message
    assert "Result" not in message  # downstream layers see ndpool's shapes, which their declared dims match
    with pytest.raises(IRError, match=r"layer 'r2' \(id 2, Result\) input port 0 \(line 4\): declared \[1, 1, 3, 2\]"):
        run_ir(parse_ir(_simple_net(result_dims=[1, 1, 3, 2])))


def test_dynamic_dims_match_anything() -> None:
    text = _simple_net([-1, 1, 2, 2], input_dims=[-1, 1, 4, 4]).replace('shape="1,1,4,4"', 'shape="?,1,4,4"')
    text = text.replace("<dim>1</dim><dim>1</dim><dim>4</dim>", "<dim>-1</dim><dim>1</dim><dim>4</dim>", 1)
    x = np.arange(32, dtype=np.float32).reshape(2, 1, 4, 4)
    run = run_ir(parse_ir(text), {"data": x})
    np.testing.assert_array_equal(run.outputs["r2"], ndpool.max_pool(x, kernel=2, strides=2, data_format="NCX"))
    with pytest.raises(IRError, match=r"Parameter 'data' has dynamic dims \[\?, 1, 4, 4\]: give its data as an input"):
        run_ir(parse_ir(text))


@pytest.mark.parametrize(("edges", "match"), [
    (_edge(0, 0, 1, 0) + _edge(1, 1, 2, 0), r"layer 'r3' \(id 3, Result\) input port 0 is not connected"),
    (_edge(0, 0, 1, 0) + _edge(1, 1, 2, 0) + _edge(1, 2, 3, 0) + _edge(0, 0, 3, 0), r"has two incoming edges"),
    (_edge(0, 0, 9, 0), r"an <edge> names layer id 9, which does not exist"),
    (_edge(0, 5, 1, 0), r"an <edge> names output port 5 of layer 'data' \(id 0, Parameter\), which has no such port"),
])
def test_edge_errors(edges: str, match: str) -> None:
    text = _simple_net()
    text = text[:text.index("<edges>") + 8] + edges + "\n</edges>\n</net>\n"
    with pytest.raises(IRError, match=match):
        run_ir(parse_ir(text))


def test_cycle() -> None:
    pool = lambda i: _layer(POOL8 + _ports([[1, 1, 4, 4]], [[1, 1, 2, 2]] * 2)).replace('id="3"', f'id="{i}"')
    text = _net(pool(1) + pool(2), _edge(1, 1, 2, 0) + _edge(2, 1, 1, 0))
    with pytest.raises(IRError, match=r"the graph has a cycle through layer 'p' \(id 1, MaxPool\)"):
        run_ir(parse_ir(text))


def test_bad_attribute_names_the_layer() -> None:
    text = _simple_net(data=POOL8.replace('strides="2,2"', 'strides="2,0"'))
    with pytest.raises(IRError, match=r"^t:4: layer 'p' \(id 1, MaxPool\): openvino:MaxPool-8: 'strides' must be "
                                      r"positive integers \(got \(2, 0\)\)"):
        run_ir(parse_ir(text, source="t"))
    with pytest.raises(IRError, match=r"'rounding_type' must be one of floor, ceil \(got 'ceil_torch'\)"):
        run_ir(parse_ir(_simple_net(data=POOL8.replace('"floor"', '"ceil_torch"'))))
    with pytest.raises(IRError, match=r"'group' is not an attribute of openvino:MaxPool-8"):
        run_ir(parse_ir(_simple_net(data=POOL8.replace("<data ", '<data group="1" '))))


def test_output_port_count_is_checked() -> None:
    pool = _layer(POOL8 + _ports([[1, 1, 4, 4]], [[1, 1, 2, 2]])).replace('id="3"', 'id="1"')
    with pytest.raises(IRError, match=r"declares 1 output port\(s\); openvino:MaxPool-8 has 2 \(output, indices\)"):
        run_ir(parse_ir(_net(PARAM + pool + _result(2, [1, 1, 2, 2]), _edge(0, 0, 1, 0) + _edge(1, 1, 2, 0))))


def test_output_size_must_be_known() -> None:
    adaptive = ('<layer id="2" name="a" type="AdaptiveMaxPool" version="opset8"><data index_element_type="i32"/>'
                + _ports([[1, 1, 4, 4], [1, 1, 2, 2]], [[1, 1, 2, 2]] * 2) + "</layer>")
    pool = _layer(POOL8 + _ports([[1, 1, 4, 4]], [[1, 1, 2, 2]] * 2)).replace('id="3"', 'id="1"')
    text = _net(PARAM + pool + adaptive, _edge(0, 0, 1, 0) + _edge(0, 0, 2, 0) + _edge(1, 1, 2, 1))
    with pytest.raises(IRError, match=r"layer 'a' \(id 2, AdaptiveMaxPool\): output_size must come from a Const"):
        run_ir(parse_ir(text))


def test_inputs_are_checked() -> None:
    model = parse_ir(_simple_net())
    with pytest.raises(IRError, match=r"no Parameter named 'x' \(the model's Parameters: data\)"):
        run_ir(model, {"x": np.zeros((1, 1, 4, 4), np.float32)})
    with pytest.raises(IRError, match=r"wrong input shape for Parameter 'data': got \[1, 4, 4\], the model declares "
                                      r"\[1, 1, 4, 4\]"):
        run_ir(model, {"data": np.zeros((1, 4, 4), np.float32)})
    with pytest.raises(IRError, match=r"wrong input element type for Parameter 'data': got float64, the model "
                                      r"declares float32"):
        run_ir(model, {"data": np.zeros((1, 1, 4, 4))})


def test_generated_data_is_deterministic_per_type() -> None:
    text = _simple_net().replace('element_type="f32"', 'element_type="i8"')
    first, second = run_ir(parse_ir(text)), run_ir(parse_ir(text))
    assert first.inputs["data"].dtype == np.int8
    np.testing.assert_array_equal(first.inputs["data"], second.inputs["data"])
    np.testing.assert_array_equal(first.outputs["r2"], second.outputs["r2"])


def test_ir_error_is_a_pooling_error() -> None:
    err = IRError("boom", source="a.xml", line=3)
    assert isinstance(err, ndpool.PoolingError) and isinstance(err, ValueError)
    assert str(err) == "a.xml:3: boom" and str(IRError("boom")) == "boom"


def test_spec_op_geometry() -> None:
    geom = spec_op_geometry(ndpool.get_op("openvino:MaxPool-8"), (1, 3, 32, 32),
                            {"kernel": "3, 3", "strides": "2, 2", "pads_begin": "0, 0", "pads_end": "0, 0",
                             "dilations": "1, 1", "auto_pad": "same_upper"})
    assert geom.output_shape == (1, 3, 16, 16) and geom.pads_begin == (0, 0) and geom.pads_end == (1, 1)
    adaptive = ndpool.get_op("openvino:AdaptiveMaxPool-8")
    assert spec_op_geometry(adaptive, (1, 3, 32, 32), {"output_type": "i32"}, output_size=[5, 7]).output_shape == (
        1, 3, 5, 7)
    with pytest.raises(ndpool.PoolingError, match=r"'output_size' is a required input"):
        spec_op_geometry(adaptive, (1, 3, 32, 32), {})
