"""``DEFECTS``: OpenVINO's ONNX frontend defects, one ``ovpool.defects.Defect`` row each (tool
``OpenVINO frontend``), in the order a node takes them (the first that applies)."""

from __future__ import annotations

from collections.abc import Callable

from onnx import NodeProto

from ovpool.defects import LATEST, OPENVINO_FRONTEND, Defect, VersionRange
from ovpool.ov import frontend_rewrites as rewrites
from ovpool.ov import value_fixes as values
from ovpool.ov.node_facts import Facts
from ovpool.ov.translate import conditions, lowerings
from ovpool.ov.translate.lowerings import Lowering

NEWEST = LATEST  # "every version from ``first`` on"


def _row(
    op_type: str,
    first: int,
    last: int,
    when: str,
    condition: Callable[[NodeProto, int, Facts], str | None],
    openvino: str,
    fix: str | None,
    lower: Lowering | None,
) -> Defect:
    """One defect: ``op_type`` at since-versions ``first..last`` when ``when`` (the README's words),
    that is when ``condition`` gives a text for the node (None: the node is fine); ``openvino``:
    what OpenVINO does; ``fix``: how ovpool computes the ONNX meaning (None: refused, and
    ``lower`` is None)."""
    return Defect(OPENVINO_FRONTEND, (op_type,), VersionRange(first, last), when, openvino, "", fix, condition, lower)


_RESIZE_FIX = (
    "one MatMul per resized axis with constant weights from ovpool's own Resize "
    "(needs static input dims and constant roi/scales/sizes, else refused)"
)

DEFECTS: tuple[Defect, ...] = (
    _row(
        "Softmax",
        11,
        12,
        "axis not the last",
        conditions.axis_not_last,
        "normalises over the one axis (opset 13's meaning) where ONNX flattens to 2-D at axis and "
        "normalises the whole trailing block",
        "Flatten at axis, Softmax over the last axis, Reshape back",
        lowerings.softmax_2d,
    ),
    _row(
        "Resize",
        18,
        NEWEST,
        "antialias=1, linear or cubic",
        conditions.antialias,
        "computes other values for the antialiased filter",
        _RESIZE_FIX,
        lowerings.resize_matrices,
    ),
    _row(
        "Resize",
        11,
        NEWEST,
        "cubic, exclude_outside=1",
        conditions.cubic_exclude_outside,
        "computes other weights where the cubic taps leave the input",
        _RESIZE_FIX,
        lowerings.resize_matrices,
    ),
    _row(
        "Resize",
        19,
        NEWEST,
        "half_pixel_symmetric",
        conditions.coordinates("half_pixel_symmetric"),
        "refuses it (not one of the coordinate transformation modes it knows)",
        _RESIZE_FIX,
        lowerings.resize_matrices,
    ),
    _row(
        "Resize",
        11,
        NEWEST,
        "tf_crop_and_resize",
        conditions.coordinates("tf_crop_and_resize"),
        "refuses it (not one of the coordinate transformation modes it knows)",
        _RESIZE_FIX,
        lowerings.resize_matrices,
    ),
    _row(
        "Resize",
        10,
        NEWEST,
        "an axis keeps its length, not its values",
        conditions.kept_axis_moves,
        "leaves an axis alone when its length does not change (scale 1.1 on 4 elements; tf_half_pixel_for_nn at scale 1)",
        _RESIZE_FIX,
        lowerings.resize_matrices,
    ),
    _row(
        "Upsample",
        7,
        9,
        "a scale that is not an integer",
        conditions.fractional_scales,
        "reads other input elements (nearest at scale 1.25 on 4 elements: 0, 1, 1, 2, 3 where ONNX "
        "floors x / 1.25 to 0, 0, 1, 2, 3)",
        _RESIZE_FIX,
        lowerings.resize_matrices,
    ),
    *(
        _row(
            op_type,
            first,
            last,
            "a scale on the batch or channel axis",
            conditions.resizes_batch_or_channel,
            "writes an Interpolate its CPU plugin does not compile (it resizes axes 2 on only)",
            _RESIZE_FIX,
            lowerings.resize_matrices,
        )
        for op_type, first, last in (("Upsample", 7, 9), ("Resize", 10, NEWEST))
    ),
    _row(
        "Resize",
        18,
        NEWEST,
        "keep_aspect_ratio_policy not_larger/not_smaller",
        conditions.aspect_policy,
        "interpolates each axis at its own output/input ratio instead of the common scale",
        _RESIZE_FIX,
        lowerings.resize_matrices,
    ),
    _row(
        "Resize",
        18,
        NEWEST,
        "negative axes",
        conditions.negative_axes,
        'refuses them ("All axes values should less than input rank")',
        "the same node with axes counted from 0 (needs the input rank)",
        lowerings.axes_normalised,
    ),
    _row(
        "Constant",
        12,
        12,
        "value_float(s), value_int(s), value_string(s)",
        conditions.value_attributes(*conditions.CONSTANT_ATTRIBUTES),
        'refuses it ("Any was not initialized")',
        "a Constant of the same value as a 'value' tensor",
        lowerings.constant_tensor,
    ),
    _row(
        "Constant",
        13,
        NEWEST,
        "value_string(s)",
        conditions.value_attributes("value_string", "value_strings"),
        'refuses it ("Invalid attribute type STRING expected: TENSOR")',
        "a Constant of the same value as a 'value' tensor",
        lowerings.constant_tensor,
    ),
    _row(
        "RoiAlign",
        10,
        NEWEST,
        "mode='max'",
        conditions.max_mode,
        "computes another maximum than the schema's (the largest bilinear sample of each bin); onnxruntime's differs from both",
        "the largest of each bin's samples: an average RoiAlign of one sample per bin on a grid "
        "sampling_ratio times finer, Reshape, ReduceMax (sampling_ratio > 0; 0 is refused)",
        lowerings.roi_align_max_by_samples,
    ),
    _row(
        "Div",
        7,
        NEWEST,
        "integer inputs",
        conditions.integer_inputs,
        'writes Divide with m_pythondiv="true", floor division by the IR specification (-7/2 = -4; '
        "its CPU plugin truncates anyway) where ONNX truncates (-3)",
        'Divide with m_pythondiv="false" (truncation, as ONNX and the CPU plugin compute)',
        lowerings.truncating_div,
    ),
    _row(
        "LRN",
        1,
        NEWEST,
        "a bias that is not a whole number",
        rewrites.fractional_bias,
        "writes LRN-1, whose CPU plugin truncates the bias to a whole number: bias 0.5 computes as 0 (x / (alpha / "
        "size * s) ** beta, 10 times ONNX's value or more), 1.5 as 1",
        "LRN with bias 1 and alpha / bias, times bias ** -beta (refused for a negative bias)",
        rewrites.lrn_unit_bias,
    ),
    _row(
        "HardSigmoid",
        6,
        NEWEST,
        "alpha=0 or beta=0",
        rewrites.zero_alpha_or_beta,
        "takes a zero alpha or beta for the default (0.2, 0.5): alpha=0, beta=0 gives 0.4 for -0.5 where ONNX gives 0",
        "the formula max(0, min(1, alpha * x + beta)) in Mul, Add, Clip",
        rewrites.hard_sigmoid_formula,
    ),
    _row(
        "LSTM",
        7,
        NEWEST,
        "peepholes (input P)",
        rewrites.peepholes,
        "drops P silently (its LSTMSequence has no peepholes)",
        None,
        None,
    ),
    _row(
        "LSTM",
        7,
        NEWEST,
        "input_forget=1",
        rewrites.input_forget,
        "drops input_forget silently (its LSTMSequence has no coupled input-forget gate)",
        None,
        None,
    ),
    *(
        _row(
            op_type,
            first,
            NEWEST,
            "integer inputs",
            values.input_kinds("iu", "integer inputs", unless=rewrites.reduce_of_dynamic_rank),
            f"{what} in the integer type (its CPU plugin rounds: {example})",
            "the node on the input cast to float32, the result cast back (truncation, as onnxruntime computes)",
            values.through_float32,
        )
        for op_type, first, what, example in (
            ("ReduceLogSum", 1, "takes the logarithm", "log(20) = 3 where ONNX truncates to 2"),
            ("ReduceLogSumExp", 1, "takes the logarithm", "log(exp(1) + exp(1)) = 2 where ONNX truncates to 1"),
            ("Shrink", 9, "subtracts the bias", "5 - 1e-6 = 5 where ONNX truncates to 4"),
        )
    ),
    *(
        _row(
            op_type,
            13,
            17,
            "the axes attribute",
            rewrites.axes_attribute,
            "ignores axes at opset 13 and reduces every axis (axes=[1] of [2, 3, 4] gives [1, 1, 1])",
            "the same node with axes as a constant second input, where the frontend's opset-13 rule reads them",
            rewrites.axes_as_input,
        )
        for op_type in ("ReduceL1", "ReduceLogSum", "ReduceLogSumExp")
    ),
    _row(
        "Range",
        11,
        NEWEST,
        "a range that is or may be empty",
        rewrites.maybe_empty_range,
        "counts abs(limit - start) / delta elements (5, 0, 1 gives 5 values where ONNX gives none)",
        "the limit moved to the start where the range is empty: Where(delta > 0, Max(limit, start), Min(limit, start))",
        rewrites.range_limit_clamped,
    ),
    _row(
        "Pad",
        11,
        NEWEST,
        "constant_value from a graph input",
        rewrites.runtime_pad_value,
        "pads with 0 instead of the value fed (7: [0, 1, 2, 0] where ONNX gives [7, 1, 2, 7])",
        "Where(a mask of ones padded with zeros, the input padded with 0, the value)",
        rewrites.pad_value_by_mask,
    ),
    _row(
        "ConvTranspose",
        1,
        NEWEST,
        "output_shape with group > 1",
        rewrites.grouped_output_shape,
        "computes other values (group=2, strides=[2], output_shape=[1] on [1, 6, 3]: -1.17 where ONNX gives -0.39)",
        "the same node with the pads the schema derives from output_shape (needs static input dims and kernel)",
        rewrites.output_shape_as_pads,
    ),
    *(
        _row(
            op_type,
            18,
            NEWEST,
            "noop_with_empty_axes=1, no axes",
            rewrites.noop_without_axes,
            "returns the input unchanged, where the schema keeps the elementwise step (abs(x), x * x, log x)",
            "the elementwise step: Abs, Sqrt(x * x), Mul(x, x), Log, or the input for ReduceLogSumExp",
            rewrites.elementwise_step,
        )
        for op_type in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")
    ),
    _row(
        "Gather",
        1,
        NEWEST,
        "empty indices",
        rewrites.empty_second_input("indices"),
        "gives a rank-0 result for constant ones (indices [0, 2] of a [4] tensor: [] where ONNX gives [0, 2]); "
        "from a graph input its CPU plugin's compile_model dies of SIGFPE",
        "Gather of zero indices of the shape with each zero dim made 1, then Slice to length 0 there",
        rewrites.gather_then_empty,
    ),
    _row(
        "Compress",
        9,
        NEWEST,
        "an empty condition",
        rewrites.empty_second_input("condition"),
        "its CPU plugin's compile_model dies of SIGFPE (Floating point exception)",
        "the data sliced to length 0 on axis (flattened first without one)",
        rewrites.compress_nothing,
    ),
    _row(
        "TopK",
        10,
        NEWEST,
        "K = 0",
        rewrites.k_zero,
        "writes a TopK its CPU plugin does not compile (K (0) must be positive); ONNX gives empty outputs",
        "the input sliced to length 0 on axis, and that cast to int64 for the indices",
        rewrites.top_nothing,
    ),
    _row(
        "Einsum",
        12,
        NEWEST,
        "a repeated index in one operand, the output implicit (trace 'ii', '...ii')",
        rewrites.repeated_index,
        "writes an Einsum its CPU plugin does not compile ('Input order must have shape [n]')",
        "the equation with its output written out ('ii' -> 'ii->', '...ii' -> '...ii->...')",
        rewrites.explicit_output,
    ),
    _row(
        "Attention",
        25,
        NEWEST,
        "a local window (left_window_size or right_window_size of 0 or more)",
        rewrites.attention_window,
        "ignores the window: every key the mask and is_causal allow is attended (test_attention_local_window: "
        "0.429 where ONNX gives 0.539)",
        "the window and causal frontier as a boolean mask (p - left <= j <= p + right, j <= p with is_causal, p the "
        "query's absolute position) composed into attn_mask, the node without them",
        rewrites.bounds_as_mask,
    ),
    _row(
        "Attention",
        23,
        NEWEST,
        "is_causal=1 with past_key, new keys not as many as the queries (static dims)",
        rewrites.causal_past_offset,
        "aligns the causal mask to the end of all keys, where ONNX offsets it by the past keys (query i sees keys "
        "up to i + 14, not i + 12, for 4 queries, 12 past and 6 new keys)",
        "the causal frontier as a boolean mask (j <= i + past) composed into attn_mask, is_causal=0",
        rewrites.bounds_as_mask,
    ),
    *(
        _row(
            op_type,
            first,
            NEWEST,
            "to STRING",
            rewrites.to_string,
            "writes a Convert to string its CPU plugin does not compile",
            None,
            None,
        )
        for op_type, first in (("Cast", 6), ("CastLike", 15))
    ),
    _row(
        "Squeeze",
        13,
        NEWEST,
        "axes from a graph input, more than one",
        rewrites.reduce_of_dynamic_rank,
        "writes a Squeeze of dynamic rank its CPU plugin does not compile",
        None,
        None,
    ),
    _row(
        "Unsqueeze",
        13,
        NEWEST,
        "axes from a graph input",
        rewrites.axes_from_graph_input,
        "writes an Unsqueeze of dynamic rank its CPU plugin does not compile",
        None,
        None,
    ),
    *(
        _row(
            op_type,
            first,
            NEWEST,
            "an activation other than Relu, Sigmoid, Tanh",
            rewrites.unsupported_activations,
            "writes a sequence its CPU plugin does not compile ('Unsupported activation function')",
            None,
            None,
        )
        for op_type, first in (("RNN", 7), ("GRU", 7), ("LSTM", 7))
    ),
    *(
        _row(
            op_type,
            13 if op_type == "ReduceSum" else 18,
            NEWEST,
            "keepdims=0, axes from a graph input",
            rewrites.reduce_of_dynamic_rank,
            "writes a reduction of dynamic rank its CPU plugin does not compile",
            None,
            None,
        )
        for op_type in (
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceMax",
            "ReduceMean",
            "ReduceMin",
            "ReduceProd",
            "ReduceSumSquare",
            "ReduceSum",
        )
    ),
    *(
        _row(
            op_type,
            first,
            NEWEST,
            "NaN operands",
            values.always("NaN operands"),
            f"its CPU plugin gives True for NaN {sign} 1 (ONNX: False)",
            f"{less}(b, a), which the CPU plugin gives False for NaN",
            values.swapped_comparison,
        )
        for op_type, first, sign, less in (("Greater", 7, ">", "Less"), ("GreaterOrEqual", 12, ">=", "LessOrEqual"))
    ),
    *(
        _row(
            op_type,
            first,
            NEWEST,
            "a float input to BOOL",
            values.float_to_bool,
            "its CPU plugin casts NaN to False (ONNX: True, NaN is not zero)",
            "Not(Equal(x, 0))",
            values.not_equal_zero,
        )
        for op_type, first in (("Cast", 6), ("CastLike", 15))
    ),
    *(
        _row(
            op_type,
            19,
            NEWEST,
            "a float input to FLOAT8E4M3FN or FLOAT8E5M2, saturate=1 (the default)",
            values.float8_saturation,
            "its Convert ignores saturate: NaN (E4M3FN) or +-inf (E5M2) beyond the largest finite value and for "
            "+-inf, where ONNX gives +-448 (+-57344)",
            "Where(IsNaN(x), x, Clip(x, -largest, largest)) cast",
            values.clipped_to_float8,
        )
        for op_type in ("Cast", "CastLike")
    ),
    *(
        _row(
            op_type,
            24,
            NEWEST,
            "a float input to FLOAT8E8M0",
            values.float8e8m0_rounding,
            "its Convert ignores round_mode and saturate: it rounds to the nearest power of two, ties down "
            "(1.1 -> 1 and 3 -> 2 where round_mode='up' gives 2 and 4), 0 -> 2^-127 and inf -> 2^127 without "
            "saturate, negative values -> 2^-127",
            "the power of two round_mode picks computed in float32 by comparisons, clipped (saturate=1) or NaN "
            "outside [2^-127, 2^127], then cast",
            values.powers_of_two,
        )
        for op_type in ("Cast", "CastLike")
    ),
    _row(
        "TopK",
        1,
        NEWEST,
        "equal values",
        values.always("equal values"),
        "writes a TopK without stable, which its CPU plugin orders otherwise (indices 1, 2, 0 for zeros and K from "
        "a graph input, where ONNX gives the lower index first: 0, 1, 2), and refuses a K of 0 fed at run time",
        "TopK-11 with stable=true, sorted by value; a K from an input taken as max(K, 1), the outputs sliced to K",
        values.as_ovpool,
    ),
    _row(
        "Hardmax",
        1,
        NEWEST,
        "equal maxima",
        values.non_empty("equal maxima"),
        "picks the maximum by a TopK without stable: not always the first (6 of 400 values on [5, 5, 4, 4])",
        "OneHot of the index a stable TopK of 1 gives (over the 2-D coercion before version 13)",
        values.as_ovpool,
    ),
    *(
        _row(
            op_type,
            1,
            NEWEST,
            "an axis of length 0 (static dims)",
            values.empty_reduction,
            f"its CPU plugin gives {cpu} for the reduction of no values (ONNX: {onnx_value})",
            "a constant of the output's shape holding ONNX's value",
            values.empty_fill,
        )
        for op_type, cpu, onnx_value in (
            ("ReduceMax", "-FLT_MAX or INT32_MIN", "-inf or the type's minimum"),
            ("ReduceMin", "FLT_MAX or INT32_MAX", "inf or the type's maximum"),
        )
    ),
    *(
        _row(
            op_type,
            1,
            NEWEST,
            f"float input, a reduced row of {infinity} only (opset 11+)",
            values.infinite_rows,
            f"its CPU plugin gives {cpu} for a row [{infinity}, {infinity}] (ONNX: {infinity}; Attention's function "
            "body then gives NaN for a fully masked row where ONNX gives 0)",
            f"Where(the same reduction of IsInf(x) is all true, {infinity}, the reduction)",
            values.infinity_kept,
        )
        for op_type, infinity, cpu in (("ReduceMax", "-inf", "-FLT_MAX"), ("ReduceMin", "+inf", "FLT_MAX"))
    ),
    _row(
        "Flatten",
        1,
        NEWEST,
        "an input with a zero dim (static dims)",
        values.empty_flatten,
        "writes Reshape [d0, -1] with special_zero (Flatten(axis=2) of [4, 1, 2, 0] gives [4, 1] where ONNX gives [4, 0])",
        "a Reshape to the static target [prod(dims[:axis]), prod(dims[axis:])] without special_zero",
        values.flatten_to_static,
    ),
    *(
        _row(
            op_type,
            first,
            NEWEST,
            "8-bit integers",
            values.input_kinds("iu", "8-bit integers", (1,)),
            "its CPU plugin saturates on overflow (int8 100 * 3 = 127) where ONNX wraps (44)",
            "the operation in int32, wrapped to 8 bits (floor_mod(v + 128, 256) - 128 for int8), converted back",
            values.as_ovpool,
        )
        for op_type, first in (("Add", 14), ("Sub", 14), ("Mul", 14))
    ),
    *(
        _row(
            op_type,
            6,
            NEWEST,
            "float16, three or more inputs",
            values.float16_chain,
            "writes a chain of float16 Adds, whose partial sums the IR's meaning rounds to float16 (its CPU plugin at "
            "f32 keeps them in f32: 0.1 + 1000 - 1000 is 0.0 by the IR, 0.09998 by the plugin and ONNX)",
            "the node on its inputs cast to float32, the result cast back to float16",
            values.in_float32,
        )
        for op_type in ("Sum", "Mean")
    ),
    _row(
        "Expand",
        8,
        NEWEST,
        "a rank-0 result",
        values.rank_0_expand,
        "writes a Broadcast whose CPU plugin gives shape [1] for the rank-0 result (ONNX: shape [])",
        "Identity (the input is the result)",
        values.identity,
    ),
    _row(
        "LpNormalization",
        1,
        NEWEST,
        "any input",
        values.always("the norm"),
        "divides by sqrt(sum(x * x) + eps): a single value on the axis gives 0.99993 where ONNX's x / abs(x) is 1",
        "x divided by its norm without eps (0 where the norm is 0)",
        values.as_ovpool,
    ),
    _row(
        "BitShift",
        11,
        NEWEST,
        "8, 16, 32-bit integers",
        values.input_kinds("iu", "integers", (1, 2, 4)),
        "multiplies or divides by Power(2, shift), which saturates (uint8 5 << 5 = 255 where ONNX keeps the low bits, "
        "160; int8 64 << 1 = 127 where ONNX-28 wraps to -128), divides by 0 for a shift by the type's width or more, "
        "and rounds a negative right shift toward 0 (int8 -1 >> 1 = 0 where ONNX-28 shifts arithmetically: -1)",
        "OpenVINO's bitwise shifts in int32: 0 for a shift by the width or more (the sign, -1 or 0, for a signed "
        "right shift), uint32's right shift masked to be logical, a signed left shift sign-extended from the width",
        values.as_ovpool,
    ),
    _row(
        "SpaceToDepth",
        28,
        NEWEST,
        "mode='CRD'",
        rewrites.crd_mode,
        "computes DCR whatever the mode (channel 1 of CRD, pixel (0, 1) of input channel 0, gets pixel (0, 0) of "
        "input channel 1)",
        "SpaceToDepth of each channel alone (reshaped to [N * C, 1, H, W], where DCR and CRD agree), reshaped to "
        "[N, C * b * b, H / b, W / b]",
        rewrites.space_to_depth_per_channel,
    ),
    *(
        _row(
            op_type,
            14,
            NEWEST,
            "layout=1",
            rewrites.batch_first,
            "computes other values for batch-first inputs (0.31 where ONNX gives 0.175 on GRU's batchwise case)",
            "Transposes to and from the node at layout=0",
            rewrites.sequence_first,
        )
        for op_type in ("RNN", "GRU", "LSTM")
    ),
    _row(
        "QuantizeLinear",
        10,
        NEWEST,
        "a scale or zero point not constant, float32 to 8 or 16-bit integers",
        values.runtime_quantization,
        "adds the zero point before rounding half to even (x / s = 1.5 at uint16 zero point 32767 gives "
        "round(32768.5) = 32768 where ONNX gives round(1.5) + 32767 = 32769)",
        "round(x / s) + zp saturated in float32 steps, cast to the type",
        values.quantize_by_formula,
    ),
    _row(
        "Tile",
        6,
        NEWEST,
        "repeats not a constant",
        values.runtime_repeats,
        "its CPU plugin leaves every value of a larger output uninitialised when the repeats are known only at run "
        "time (repeats [7, 6, 4, 2] of a [2, 3, 4, 5] input; constant repeats and small outputs are right)",
        "Broadcast of the input with a unit axis before each axis ([1, d0, 1, d1, ...] to [r0, d0, r1, d1, ...]), "
        "reshaped to [r0 * d0, r1 * d1, ...]",
        values.tile_by_broadcast,
    ),
    _row(
        "DFT",
        17,
        NEWEST,
        "an input of known rank",
        rewrites.known_rank,
        "ignores DFT-20's axis fed at run time (test_dft_axis: 450 where ONNX gives 45) and gives onesided outputs "
        "the wrong rank (DFT-20 rfft: [1, 6, 10, 1, 2] where ONNX gives [1, 6, 10, 2]; DFT-17 rfft of [1, 1, 1]: "
        "[1, 1, 1, 2] where ONNX gives [1, 1, 2])",
        "OpenVINO's DFT, IDFT, RDFT or IRDFT over the axis r - 2, the input's axis swapped there and back by "
        "Transposes of a permutation computed at run time",
        rewrites.dft_by_swapped_axis,
    ),
)
