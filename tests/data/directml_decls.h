// directml_decls.h -- minimal, compilable subset of DirectML.h declarations
// needed to emit pooling / padding operator descriptors.
//
// ovpool's own re-typed declarations, used only by its tests to compile the C++ that
// `ovpool convert --to dml -o OUT.h` writes (g++ -std=c++17 -fsyntax-only). Sources:
//   * https://learn.microsoft.com/windows/win32/api/directml/ (the DML_*_OPERATOR_DESC,
//     DML_BUFFER_TENSOR_DESC, DML_TENSOR_DESC and DML_OPERATOR_DESC structure pages, the
//     DML_OPERATOR_TYPE, DML_TENSOR_DATA_TYPE, DML_PADDING_MODE and DML_FEATURE_LEVEL enum pages)
//   * https://learn.microsoft.com/windows/ai/directml/dml-feature-level-history
// Transcribed from the public DirectML.h:
//   * microsoft/DirectX-Headers  include/directx/DirectML.h  (stored commit 567cebcfa3eac08ab6a45e8d87f8928430004a42,
//     DML_TARGET_VERSION latest = 0x6200)
//   * a newer public copy of the same header (DML_TARGET_VERSION latest = 0x6400, DirectML 1.15;
//     identical for everything below except the 0x6300/0x6400 additions, which are guarded here exactly as in the header)
// Struct member order/names/types and pointer constness are copied verbatim; only SAL annotations are
// defined away, and Windows base typedefs are supplied below (no <windows.h>).
#ifndef OVPOOL_DIRECTML_DECLS_H
#define OVPOOL_DIRECTML_DECLS_H

// ---- Windows base types (as in minwindef.h / basetsd.h / winnt.h) ----
typedef unsigned int       UINT;
typedef int                INT;
typedef int                BOOL;
typedef float              FLOAT;
typedef double             DOUBLE;
typedef unsigned char      BYTE;
typedef signed char        INT8;
typedef unsigned char      UINT8;
typedef short              INT16;
typedef unsigned short     UINT16;
typedef int                INT32;
typedef unsigned int       UINT32;
typedef long long          INT64;   // Windows: signed __int64
typedef unsigned long long UINT64;  // Windows: unsigned __int64

// ---- SAL annotations used by DirectML.h: defined away ----
#define _Field_size_(x)
#define _Field_size_opt_(x)
#define _Maybenull_
#define _Inexpressible_(x)

// DirectML.h uses DEFINE_ENUM_FLAG_OPERATORS(DML_TENSOR_FLAGS) (winnt.h); not needed for aggregate init.
#define DEFINE_ENUM_FLAG_OPERATORS(T)

#ifndef DML_TARGET_VERSION
#define DML_TARGET_VERSION 0x6400
#endif

// ===================================================================================================================
//   Tensor descriptions
// ===================================================================================================================

enum DML_TENSOR_DATA_TYPE
{
    DML_TENSOR_DATA_TYPE_UNKNOWN,   // 0
    DML_TENSOR_DATA_TYPE_FLOAT32,   // 1
    DML_TENSOR_DATA_TYPE_FLOAT16,   // 2
    DML_TENSOR_DATA_TYPE_UINT32,    // 3
    DML_TENSOR_DATA_TYPE_UINT16,    // 4
    DML_TENSOR_DATA_TYPE_UINT8,     // 5
    DML_TENSOR_DATA_TYPE_INT32,     // 6
    DML_TENSOR_DATA_TYPE_INT16,     // 7
    DML_TENSOR_DATA_TYPE_INT8,      // 8
    DML_TENSOR_DATA_TYPE_FLOAT64,   // 9
    DML_TENSOR_DATA_TYPE_UINT64,    // 10
    DML_TENSOR_DATA_TYPE_INT64,     // 11
#if DML_TARGET_VERSION >= 0x6300
    DML_TENSOR_DATA_TYPE_UINT4,     // 12
    DML_TENSOR_DATA_TYPE_INT4,      // 13
#endif // DML_TARGET_VERSION >= 0x6300
};

enum DML_TENSOR_TYPE
{
    DML_TENSOR_TYPE_INVALID,        // 0

    DML_TENSOR_TYPE_BUFFER,         // 1
};

enum DML_TENSOR_FLAGS
{
    DML_TENSOR_FLAG_NONE = 0x0,
    DML_TENSOR_FLAG_OWNED_BY_DML = 0x1,
};

DEFINE_ENUM_FLAG_OPERATORS(DML_TENSOR_FLAGS)

struct DML_BUFFER_TENSOR_DESC
{
    DML_TENSOR_DATA_TYPE DataType;
    DML_TENSOR_FLAGS Flags;
    UINT DimensionCount;
    _Field_size_(DimensionCount) const UINT* Sizes;
    _Field_size_opt_(DimensionCount) const UINT* Strides;
    UINT64 TotalTensorSizeInBytes;
    UINT GuaranteedBaseOffsetAlignment;
};

struct DML_TENSOR_DESC
{
    DML_TENSOR_TYPE Type;
    _Field_size_(_Inexpressible_("Dependent on tensor type")) const void* Desc;
};

// ===================================================================================================================
//   Operator types (full enum, verbatim order; values are implicit in the real header)
// ===================================================================================================================

enum DML_OPERATOR_TYPE
{
    DML_OPERATOR_INVALID,

    DML_OPERATOR_ELEMENT_WISE_IDENTITY,
    DML_OPERATOR_ELEMENT_WISE_ABS,
    DML_OPERATOR_ELEMENT_WISE_ACOS,
    DML_OPERATOR_ELEMENT_WISE_ADD,
    DML_OPERATOR_ELEMENT_WISE_ASIN,
    DML_OPERATOR_ELEMENT_WISE_ATAN,
    DML_OPERATOR_ELEMENT_WISE_CEIL,
    DML_OPERATOR_ELEMENT_WISE_CLIP,
    DML_OPERATOR_ELEMENT_WISE_COS,
    DML_OPERATOR_ELEMENT_WISE_DIVIDE,
    DML_OPERATOR_ELEMENT_WISE_EXP,
    DML_OPERATOR_ELEMENT_WISE_FLOOR,
    DML_OPERATOR_ELEMENT_WISE_LOG,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_AND,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_EQUALS,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_NOT,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_OR,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_XOR,
    DML_OPERATOR_ELEMENT_WISE_MAX,
    DML_OPERATOR_ELEMENT_WISE_MEAN,
    DML_OPERATOR_ELEMENT_WISE_MIN,
    DML_OPERATOR_ELEMENT_WISE_MULTIPLY,
    DML_OPERATOR_ELEMENT_WISE_POW,
    DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW,
    DML_OPERATOR_ELEMENT_WISE_RECIP,
    DML_OPERATOR_ELEMENT_WISE_SIN,
    DML_OPERATOR_ELEMENT_WISE_SQRT,
    DML_OPERATOR_ELEMENT_WISE_SUBTRACT,
    DML_OPERATOR_ELEMENT_WISE_TAN,
    DML_OPERATOR_ELEMENT_WISE_THRESHOLD,
    DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR,
    DML_OPERATOR_ELEMENT_WISE_DEQUANTIZE_LINEAR,
    DML_OPERATOR_ACTIVATION_ELU,
    DML_OPERATOR_ACTIVATION_HARDMAX,
    DML_OPERATOR_ACTIVATION_HARD_SIGMOID,
    DML_OPERATOR_ACTIVATION_IDENTITY,
    DML_OPERATOR_ACTIVATION_LEAKY_RELU,
    DML_OPERATOR_ACTIVATION_LINEAR,
    DML_OPERATOR_ACTIVATION_LOG_SOFTMAX,
    DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU,
    DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS,
    DML_OPERATOR_ACTIVATION_RELU,
    DML_OPERATOR_ACTIVATION_SCALED_ELU,
    DML_OPERATOR_ACTIVATION_SCALED_TANH,
    DML_OPERATOR_ACTIVATION_SIGMOID,
    DML_OPERATOR_ACTIVATION_SOFTMAX,
    DML_OPERATOR_ACTIVATION_SOFTPLUS,
    DML_OPERATOR_ACTIVATION_SOFTSIGN,
    DML_OPERATOR_ACTIVATION_TANH,
    DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU,
    DML_OPERATOR_CONVOLUTION,
    DML_OPERATOR_GEMM,
    DML_OPERATOR_REDUCE,
    DML_OPERATOR_AVERAGE_POOLING,           // 56
    DML_OPERATOR_LP_POOLING,                // 57
    DML_OPERATOR_MAX_POOLING,               // 58
    DML_OPERATOR_ROI_POOLING,
    DML_OPERATOR_SLICE,
    DML_OPERATOR_CAST,
    DML_OPERATOR_SPLIT,
    DML_OPERATOR_JOIN,
    DML_OPERATOR_PADDING,                   // 64
    DML_OPERATOR_VALUE_SCALE_2D,
    DML_OPERATOR_UPSAMPLE_2D,
    DML_OPERATOR_GATHER,
    DML_OPERATOR_SPACE_TO_DEPTH,
    DML_OPERATOR_DEPTH_TO_SPACE,
    DML_OPERATOR_TILE,
    DML_OPERATOR_TOP_K,
    DML_OPERATOR_BATCH_NORMALIZATION,
    DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION,
    DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION,
    DML_OPERATOR_LP_NORMALIZATION,
    DML_OPERATOR_RNN,
    DML_OPERATOR_LSTM,
    DML_OPERATOR_GRU,

#if DML_TARGET_VERSION >= 0x2000
    DML_OPERATOR_ELEMENT_WISE_SIGN,
    DML_OPERATOR_ELEMENT_WISE_IS_NAN,
    DML_OPERATOR_ELEMENT_WISE_ERF,
    DML_OPERATOR_ELEMENT_WISE_SINH,
    DML_OPERATOR_ELEMENT_WISE_COSH,
    DML_OPERATOR_ELEMENT_WISE_TANH,
    DML_OPERATOR_ELEMENT_WISE_ASINH,
    DML_OPERATOR_ELEMENT_WISE_ACOSH,
    DML_OPERATOR_ELEMENT_WISE_ATANH,
    DML_OPERATOR_ELEMENT_WISE_IF,
    DML_OPERATOR_ELEMENT_WISE_ADD1,
    DML_OPERATOR_ACTIVATION_SHRINK,
    DML_OPERATOR_MAX_POOLING1,              // 91
    DML_OPERATOR_MAX_UNPOOLING,             // 92
    DML_OPERATOR_DIAGONAL_MATRIX,
    DML_OPERATOR_SCATTER_ELEMENTS,
    DML_OPERATOR_SCATTER = DML_OPERATOR_SCATTER_ELEMENTS, // Alias name for backwards compatibility.
    DML_OPERATOR_ONE_HOT,
    DML_OPERATOR_RESAMPLE,
#endif // DML_TARGET_VERSION >= 0x2000

#if DML_TARGET_VERSION >= 0x2100
    DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_LEFT,
    DML_OPERATOR_ELEMENT_WISE_BIT_SHIFT_RIGHT,
    DML_OPERATOR_ELEMENT_WISE_ROUND,
    DML_OPERATOR_ELEMENT_WISE_IS_INFINITY,
    DML_OPERATOR_ELEMENT_WISE_MODULUS_TRUNCATE,
    DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR,
    DML_OPERATOR_FILL_VALUE_CONSTANT,
    DML_OPERATOR_FILL_VALUE_SEQUENCE,
    DML_OPERATOR_CUMULATIVE_SUMMATION,
    DML_OPERATOR_REVERSE_SUBSEQUENCES,
    DML_OPERATOR_GATHER_ELEMENTS,
    DML_OPERATOR_GATHER_ND,
    DML_OPERATOR_SCATTER_ND,
    DML_OPERATOR_MAX_POOLING2,              // 110
    DML_OPERATOR_SLICE1,
    DML_OPERATOR_TOP_K1,
    DML_OPERATOR_DEPTH_TO_SPACE1,
    DML_OPERATOR_SPACE_TO_DEPTH1,
    DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1,
    DML_OPERATOR_RESAMPLE1,
    DML_OPERATOR_MATRIX_MULTIPLY_INTEGER,
    DML_OPERATOR_QUANTIZED_LINEAR_MATRIX_MULTIPLY,
    DML_OPERATOR_CONVOLUTION_INTEGER,
    DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION,
#endif // DML_TARGET_VERSION >= 0x2100

#if DML_TARGET_VERSION >= 0x3000
    DML_OPERATOR_ELEMENT_WISE_BIT_AND,
    DML_OPERATOR_ELEMENT_WISE_BIT_OR,
    DML_OPERATOR_ELEMENT_WISE_BIT_XOR,
    DML_OPERATOR_ELEMENT_WISE_BIT_NOT,
    DML_OPERATOR_ELEMENT_WISE_BIT_COUNT,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL,
    DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL,
    DML_OPERATOR_ACTIVATION_CELU,
    DML_OPERATOR_ACTIVATION_RELU_GRAD,
    DML_OPERATOR_AVERAGE_POOLING_GRAD,
    DML_OPERATOR_MAX_POOLING_GRAD,
    DML_OPERATOR_RANDOM_GENERATOR,
    DML_OPERATOR_NONZERO_COORDINATES,
    DML_OPERATOR_RESAMPLE_GRAD,
    DML_OPERATOR_SLICE_GRAD,
    DML_OPERATOR_ADAM_OPTIMIZER,
    DML_OPERATOR_ARGMIN,
    DML_OPERATOR_ARGMAX,
    DML_OPERATOR_ROI_ALIGN,
    DML_OPERATOR_GATHER_ND1,
#endif // DML_TARGET_VERSION >= 0x3000

#if DML_TARGET_VERSION >= 0x3100
    DML_OPERATOR_ELEMENT_WISE_ATAN_YX,
    DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD,
    DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE,
    DML_OPERATOR_LOCAL_RESPONSE_NORMALIZATION_GRAD,
    DML_OPERATOR_CUMULATIVE_PRODUCT,
    DML_OPERATOR_BATCH_NORMALIZATION_GRAD,
#endif // DML_TARGET_VERSION >= 0x3100

#if DML_TARGET_VERSION >= 0x4000
    DML_OPERATOR_ELEMENT_WISE_QUANTIZED_LINEAR_ADD,
    DML_OPERATOR_DYNAMIC_QUANTIZE_LINEAR,
    DML_OPERATOR_ROI_ALIGN1,
#endif // DML_TARGET_VERSION >= 0x4000

#if DML_TARGET_VERSION >= 0x4100
    DML_OPERATOR_ROI_ALIGN_GRAD,
    DML_OPERATOR_BATCH_NORMALIZATION_TRAINING,
    DML_OPERATOR_BATCH_NORMALIZATION_TRAINING_GRAD,
#endif // DML_TARGET_VERSION >= 0x4100

#if DML_TARGET_VERSION >= 0x5000
    DML_OPERATOR_ELEMENT_WISE_CLIP1,
    DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1,
    DML_OPERATOR_PADDING1,                  // 155
    DML_OPERATOR_ELEMENT_WISE_NEGATE,
#endif // DML_TARGET_VERSION >= 0x5000

#if DML_TARGET_VERSION >= 0x5100
    DML_OPERATOR_ACTIVATION_GELU,
    DML_OPERATOR_ACTIVATION_SOFTMAX1,
    DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1,
    DML_OPERATOR_ACTIVATION_HARDMAX1,
    DML_OPERATOR_RESAMPLE2,
    DML_OPERATOR_RESAMPLE_GRAD1,
    DML_OPERATOR_DIAGONAL_MATRIX1,
#endif // DML_TARGET_VERSION >= 0x5100

#if DML_TARGET_VERSION >= 0x6100
    DML_OPERATOR_MULTIHEAD_ATTENTION,
#endif // DML_TARGET_VERSION >= 0x6100

#if DML_TARGET_VERSION >= 0x6200
    DML_OPERATOR_LP_POOLING1,               // 165
    DML_OPERATOR_AVERAGE_POOLING1,          // 166
    DML_OPERATOR_ACTIVATION_SWISH,
    DML_OPERATOR_ACTIVATION_HARD_SWISH,
    DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING,
    DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT,
#endif // DML_TARGET_VERSION >= 0x6200

#if DML_TARGET_VERSION >= 0x6300
    DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2,
    DML_OPERATOR_MULTIHEAD_ATTENTION1,
    DML_OPERATOR_QUANTIZE,
    DML_OPERATOR_DEQUANTIZE,
#endif // DML_TARGET_VERSION >= 0x6300

#if DML_TARGET_VERSION >= 0x6400
    DML_OPERATOR_RESAMPLE3,
    DML_OPERATOR_FOLD,
    DML_OPERATOR_UNFOLD,
#endif // DML_TARGET_VERSION >= 0x6400
};

// ===================================================================================================================
//   Operator enumerations and structures (subset)
// ===================================================================================================================

enum DML_PADDING_MODE
{
    DML_PADDING_MODE_CONSTANT,      // 0
    DML_PADDING_MODE_EDGE,          // 1
    DML_PADDING_MODE_REFLECTION,    // 2

#if DML_TARGET_VERSION >= 0x3000
    DML_PADDING_MODE_SYMMETRIC,     // 3
#endif

#if DML_TARGET_VERSION >= 0x6400
    DML_PADDING_MODE_WRAP,          // 4
#endif
};

#if DML_TARGET_VERSION >= 0x2100

union DML_SCALAR_UNION
{
    BYTE   Bytes[8];
    INT8   Int8;
    UINT8  UInt8;
    INT16  Int16;
    UINT16 UInt16;
    INT32  Int32;
    UINT32 UInt32;
    INT64  Int64;
    UINT64 UInt64;
    FLOAT  Float32;
    DOUBLE Float64;
};

#endif // DML_TARGET_VERSION >= 0x2100

// ===================================================================================================================
//   Operator descriptions (subset)
// ===================================================================================================================

struct DML_OPERATOR_DESC
{
    DML_OPERATOR_TYPE Type;
    _Field_size_(_Inexpressible_("Dependent on operator type")) const void* Desc;
};

struct DML_AVERAGE_POOLING_OPERATOR_DESC
{
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT DimensionCount;
    _Field_size_(DimensionCount) const UINT* Strides;
    _Field_size_(DimensionCount) const UINT* WindowSize;
    _Field_size_(DimensionCount) const UINT* StartPadding;
    _Field_size_(DimensionCount) const UINT* EndPadding;
    BOOL IncludePadding;
};

struct DML_LP_POOLING_OPERATOR_DESC
{
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT DimensionCount;
    _Field_size_(DimensionCount) const UINT* Strides;
    _Field_size_(DimensionCount) const UINT* WindowSize;
    _Field_size_(DimensionCount) const UINT* StartPadding;
    _Field_size_(DimensionCount) const UINT* EndPadding;
    UINT P;
};

struct DML_MAX_POOLING_OPERATOR_DESC
{
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT DimensionCount;
    _Field_size_(DimensionCount) const UINT* Strides;
    _Field_size_(DimensionCount) const UINT* WindowSize;
    _Field_size_(DimensionCount) const UINT* StartPadding;
    _Field_size_(DimensionCount) const UINT* EndPadding;
};

struct DML_PADDING_OPERATOR_DESC
{
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    DML_PADDING_MODE PaddingMode;
    FLOAT PaddingValue;
    UINT DimensionCount;
    _Field_size_(DimensionCount) const UINT* StartPadding;
    _Field_size_(DimensionCount) const UINT* EndPadding;
};

#if DML_TARGET_VERSION >= 0x2000

struct DML_MAX_POOLING1_OPERATOR_DESC
{
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    _Maybenull_ const DML_TENSOR_DESC* OutputIndicesTensor;
    UINT DimensionCount;
    _Field_size_(DimensionCount) const UINT* Strides;
    _Field_size_(DimensionCount) const UINT* WindowSize;
    _Field_size_(DimensionCount) const UINT* StartPadding;
    _Field_size_(DimensionCount) const UINT* EndPadding;
};

struct DML_MAX_UNPOOLING_OPERATOR_DESC
{
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* IndicesTensor;
    const DML_TENSOR_DESC* OutputTensor;
};

#endif // DML_TARGET_VERSION >= 0x2000

#if DML_TARGET_VERSION >= 0x2100

struct DML_MAX_POOLING2_OPERATOR_DESC
{
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    _Maybenull_ const DML_TENSOR_DESC* OutputIndicesTensor;
    UINT DimensionCount;
    _Field_size_(DimensionCount) const UINT* Strides;
    _Field_size_(DimensionCount) const UINT* WindowSize;
    _Field_size_(DimensionCount) const UINT* StartPadding;
    _Field_size_(DimensionCount) const UINT* EndPadding;
    _Field_size_(DimensionCount) const UINT* Dilations;
};

#endif // DML_TARGET_VERSION >= 0x2100

#if DML_TARGET_VERSION >= 0x5000

struct DML_PADDING1_OPERATOR_DESC
{
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    DML_PADDING_MODE PaddingMode;
    DML_TENSOR_DATA_TYPE PaddingValueDataType;
    DML_SCALAR_UNION PaddingValue;
    UINT DimensionCount;
    _Field_size_(DimensionCount) const UINT* StartPadding;
    _Field_size_(DimensionCount) const UINT* EndPadding;
};

#endif // DML_TARGET_VERSION >= 0x5000

#if DML_TARGET_VERSION >= 0x6200

struct DML_LP_POOLING1_OPERATOR_DESC
{
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT DimensionCount;
    _Field_size_(DimensionCount) const UINT* Strides;
    _Field_size_(DimensionCount) const UINT* WindowSize;
    _Field_size_(DimensionCount) const UINT* StartPadding;
    _Field_size_(DimensionCount) const UINT* EndPadding;
    _Field_size_(DimensionCount) const UINT* Dilations;
    UINT P;
};

struct DML_AVERAGE_POOLING1_OPERATOR_DESC
{
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT DimensionCount;
    _Field_size_(DimensionCount) const UINT* Strides;
    _Field_size_(DimensionCount) const UINT* WindowSize;
    _Field_size_(DimensionCount) const UINT* StartPadding;
    _Field_size_(DimensionCount) const UINT* EndPadding;
    _Field_size_(DimensionCount) const UINT* Dilations;
    BOOL IncludePadding;
};

struct DML_QUANTIZED_LINEAR_AVERAGE_POOLING_OPERATOR_DESC
{
    const DML_TENSOR_DESC* InputTensor;
    const DML_TENSOR_DESC* InputScaleTensor;
    _Maybenull_ const DML_TENSOR_DESC* InputZeroPointTensor;
    const DML_TENSOR_DESC* OutputScaleTensor;
    _Maybenull_ const DML_TENSOR_DESC* OutputZeroPointTensor;
    const DML_TENSOR_DESC* OutputTensor;
    UINT DimensionCount;
    _Field_size_(DimensionCount) const UINT* Strides;
    _Field_size_(DimensionCount) const UINT* WindowSize;
    _Field_size_(DimensionCount) const UINT* StartPadding;
    _Field_size_(DimensionCount) const UINT* EndPadding;
    _Field_size_(DimensionCount) const UINT* Dilations;
    BOOL IncludePadding;
};

#endif // DML_TARGET_VERSION >= 0x6200

// ===================================================================================================================
//   DML feature support queries (subset)
// ===================================================================================================================

#if DML_TARGET_VERSION >= 0x2000

enum DML_FEATURE_LEVEL
{
    DML_FEATURE_LEVEL_1_0 = 0x1000,
    DML_FEATURE_LEVEL_2_0 = 0x2000,
    DML_FEATURE_LEVEL_2_1 = 0x2100,
    DML_FEATURE_LEVEL_3_0 = 0x3000,
    DML_FEATURE_LEVEL_3_1 = 0x3100,
    DML_FEATURE_LEVEL_4_0 = 0x4000,
    DML_FEATURE_LEVEL_4_1 = 0x4100,
    DML_FEATURE_LEVEL_5_0 = 0x5000,
    DML_FEATURE_LEVEL_5_1 = 0x5100,
    DML_FEATURE_LEVEL_5_2 = 0x5200,
    DML_FEATURE_LEVEL_6_0 = 0x6000,
    DML_FEATURE_LEVEL_6_1 = 0x6100,
    DML_FEATURE_LEVEL_6_2 = 0x6200,
    DML_FEATURE_LEVEL_6_3 = 0x6300,   // present in the 0x6400 header only
    DML_FEATURE_LEVEL_6_4 = 0x6400,   // present in the 0x6400 header only
};

#endif // DML_TARGET_VERSION >= 0x2000

// Constants from the same header.
static const UINT DML_TENSOR_DIMENSION_COUNT_MAX = 5;
#if DML_TARGET_VERSION >= 0x3000
static const UINT DML_TENSOR_DIMENSION_COUNT_MAX1 = 8;
#endif
static const UINT DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16;

#endif // OVPOOL_DIRECTML_DECLS_H
