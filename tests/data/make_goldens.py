"""Writes the OpenVINO-made golden models in this directory: ``python tests/data/make_goldens.py``.

Each model is built and saved with OpenVINO's own Python API, run on OpenVINO's CPU plugin
(``INFERENCE_PRECISION_HINT=f32``) on a fixed input with NaNs and ties, and its input and outputs are
stored beside it as ``<model>.npz`` (``input:<name>`` and ``output:<result name>``). test_ir.py runs
the models with ``ndpool run`` and checks the outputs against these, without OpenVINO.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _input(shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.integers(-4, 5, size=shape).astype(np.float32)  # small integers: many ties
    x.reshape(-1)[::11] = np.nan
    return x


def _save(name: str, model, x: np.ndarray) -> None:
    import openvino as ov

    ov.save_model(model, HERE / f"{name}.xml", compress_to_fp16=False)
    if (HERE / f"{name}.bin").stat().st_size == 0:
        (HERE / f"{name}.bin").unlink()  # no Const: no weights needed
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    request.infer([x])
    arrays = {"input:data": x}
    for i, result in enumerate(model.get_results()):
        arrays[f"output:{result.get_friendly_name()}"] = np.array(request.get_output_tensor(i).data, copy=True)
    np.savez(HERE / f"{name}.npz", **arrays)


def main() -> None:
    import openvino as ov
    from openvino import opset1, opset8, opset14

    # MaxPool-8 (ceil, asymmetric pads, i64 indices over N and C) feeding AdaptiveMaxPool-8 with a Const
    # output_size (i32 indices: the CPU plugin's only kind).
    x = _input((2, 3, 9, 9))
    data = opset1.parameter(list(x.shape), ov.Type.f32, name="data")
    pool = opset8.max_pool(data, [2, 2], [1, 1], [1, 0], [0, 1], [3, 3], "ceil", "explicit", "i64", 0,
                           name="pool8")
    size = opset1.constant(np.array([3, 4], np.int64), name="output_size")
    adaptive = opset8.adaptive_max_pool(pool.output(0), size, "i32", name="adaptive8")
    results = [opset1.result(pool.output(1), name="pool_indices"),
               opset1.result(adaptive.output(0), name="values"),
               opset1.result(adaptive.output(1), name="indices")]
    _save("maxpool8_adaptive8", ov.Model(results, [data], "maxpool8_adaptive8"), x)

    # The three MaxPool versions side by side on one input: MaxPool-1 same_upper, MaxPool-8 with dilations
    # and axis=2 (i32), MaxPool-14 ceil_torch.
    x = _input((1, 2, 10, 7))
    data = opset1.parameter(list(x.shape), ov.Type.f32, name="data")
    v1 = opset1.max_pool(data, [2, 2], [0, 0], [0, 0], [3, 2], "floor", "same_upper", name="pool1")
    v8 = opset8.max_pool(data, [1, 2], [2, 1], [1, 1], [1, 1], [2, 3], "floor", "explicit", "i32", 2,
                         name="pool8")
    v14 = opset14.max_pool(data, [3, 2], [1, 1], [1, 0], [1, 1], [3, 3], "ceil_torch", "explicit", "i64", 0,
                           name="pool14")
    results = [opset1.result(v1.output(0), name="values1"),
               opset1.result(v8.output(0), name="values8"), opset1.result(v8.output(1), name="indices8"),
               opset1.result(v14.output(0), name="values14"), opset1.result(v14.output(1), name="indices14")]
    _save("maxpool_versions", ov.Model(results, [data], "maxpool_versions"), x)


if __name__ == "__main__":
    main()
