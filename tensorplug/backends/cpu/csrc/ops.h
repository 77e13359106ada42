// Op codes of the kernel families. The numbering is part of the Python-facing API: the module
// exports these tables as UNARY_OPS, BINARY_OPS, COMPARE_OPS, REDUCE_OPS (name -> code).
#pragma once

namespace tp {

enum UnaryOp : int {
    U_NEG = 0, U_ABS = 1, U_SIGN = 2, U_EXP = 3, U_EXP2 = 4, U_LOG = 5, U_LOG2 = 6, U_LOG10 = 7,
    U_LOG1P = 8, U_EXPM1 = 9, U_SQRT = 10, U_RSQRT = 11, U_SIN = 12, U_COS = 13, U_TAN = 14,
    U_ASIN = 15, U_ACOS = 16, U_ATAN = 17, U_SINH = 18, U_COSH = 19, U_TANH = 20, U_SIGMOID = 21,
    U_ERF = 22, U_FLOOR = 23, U_CEIL = 24, U_ROUND = 25, U_TRUNC = 26, U_RECIPROCAL = 27,
    U_SQUARE = 28, U_LOGICAL_NOT = 29, U_BITWISE_NOT = 30, U_ISNAN = 31, U_ISINF = 32,
    U_ISFINITE = 33, U_ERFINV = 34, U_RELU = 35,
    U_NUM_OPS = 36,
};

enum BinaryOp : int {
    B_ADD = 0, B_SUB = 1, B_MUL = 2, B_DIV = 3, B_FLOOR_DIVIDE = 4, B_REMAINDER = 5, B_FMOD = 6,
    B_POW = 7, B_MAXIMUM = 8, B_MINIMUM = 9, B_ATAN2 = 10, B_BITWISE_AND = 11, B_BITWISE_OR = 12,
    B_BITWISE_XOR = 13, B_LOGICAL_AND = 14, B_LOGICAL_OR = 15, B_LOGICAL_XOR = 16, B_COPYSIGN = 17,
    B_HYPOT = 18, B_LSHIFT = 19, B_RSHIFT = 20,
    B_RELU_BACKWARD = 21,  // the fused relu_backward(grad, output), not a primitive
    B_NUM_OPS = 22,
};

enum CompareOp : int { C_EQ = 0, C_NE = 1, C_LT = 2, C_LE = 3, C_GT = 4, C_GE = 5, C_NUM_OPS = 6 };

enum ReduceOp : int {
    R_SUM = 0, R_PROD = 1, R_AMAX = 2, R_AMIN = 3, R_ALL = 4, R_ANY = 5, R_ARGMAX = 6, R_ARGMIN = 7,
    R_MEAN = 8,
    R_NUM_OPS = 9,
};

enum CumulativeOp : int { CUM_SUM = 0, CUM_PROD = 1, CUM_NUM_OPS = 2 };

struct OpName {
    const char* name;
    int code;
};

extern const OpName kUnaryOpNames[U_NUM_OPS];
extern const OpName kBinaryOpNames[B_NUM_OPS];
extern const OpName kCompareOpNames[C_NUM_OPS];
extern const OpName kReduceOpNames[R_NUM_OPS];
extern const OpName kCumulativeOpNames[CUM_NUM_OPS];

}  // namespace tp
