"""An independent numpy model of ml_dtypes' float32 <-> narrow-float conversions.

Written from ml_dtypes' documented semantics (its float8.h / mxfloat.h conversion routine,
versions 0.5-0.6, and Eigen's float -> bfloat16), not from lowp, and checked against ml_dtypes'
own output in ../shared/formats/ml_dtypes (test_ml_dtypes_bits.py): round to nearest even, not
saturating, computed here on exact integer significands. The rules per family:
  ieee   (e5m2, e4m3, e3m4, bfloat16): overflow -> +-Inf; NaN -> the quiet NaN with the input's sign
  fn     (e4m3fn): no Inf; overflow, +-Inf and NaN -> 0x7F with the value's sign bit (so 0xFF)
  fnuz   (e4m3fnuz, e5m2fnuz, e4m3b11fnuz): one NaN 0x80 for NaN, Inf and overflow; no -0
  e8m0   (float8_e8m0fnu): unsigned, no zero: NaN, Inf, zero and negative inputs -> 0xFF;
         the implicit leading 1 is the last kept bit, so a tie 1.5 * 2^k rounds up to 2^(k+1);
         float32 subnormal inputs above 2^-127 go to 2^-126 (rounded as if code 0 were zero)
  finite (float6_e2m3fn, float6_e3m2fn, float4_e2m1fn): overflow and +-Inf saturate to +-max;
         ml_dtypes' stand-in NaN is the sign-only code (-0), negated for a negative NaN (+0)
Decoding: NaN codes become a float32 quiet NaN with the code's sign bit (0xFF of e4m3fn and
0x80 of fnuz are -NaN; e8m0 has no sign).
"""
import numpy as np

# name: (exponent bits, mantissa bits, bias, family)
FORMATS = {
    "float8_e4m3fn": (4, 3, 7, "fn"),
    "float8_e4m3fnuz": (4, 3, 8, "fnuz"),
    "float8_e4m3b11fnuz": (4, 3, 11, "fnuz"),
    "float8_e5m2": (5, 2, 15, "ieee"),
    "float8_e5m2fnuz": (5, 2, 16, "fnuz"),
    "float8_e3m4": (3, 4, 3, "ieee"),
    "float8_e4m3": (4, 3, 7, "ieee"),
    "float8_e8m0fnu": (8, 0, 127, "e8m0"),
    "float6_e2m3fn": (2, 3, 1, "finite"),
    "float6_e3m2fn": (3, 2, 3, "finite"),
    "float4_e2m1fn": (2, 1, 1, "finite"),
    "bfloat16": (8, 7, 127, "ieee"),
}

F32_QNAN = 0x7FC00000


class Format:
    def __init__(self, name):
        self.name = name
        self.e, self.m, self.bias, self.family = FORMATS[name]
        e, m = self.e, self.m
        self.bits = e + m + (0 if self.family == "e8m0" else 1)
        self.sign = 0 if self.family == "e8m0" else 1 << (e + m)
        allmag = (1 << (e + m)) - 1
        if self.family == "ieee":
            self.inf = ((1 << e) - 1) << m
            self.nan = self.inf | (1 << (m - 1))
            self.max_code = self.inf - 1
        elif self.family == "fn":
            self.nan, self.max_code = allmag, allmag - 1
        elif self.family == "fnuz":
            self.nan, self.max_code = self.sign, allmag
        elif self.family == "finite":
            self.nan, self.max_code = self.sign, allmag  # the stand-in NaN: the code of -0
        else:  # e8m0
            self.nan, self.max_code = 0xFF, 0xFE
        self.dtype = np.uint16 if self.bits > 8 else np.uint8

    # ---- decode: code -> float32 bit pattern ----
    def decode_bits(self, codes):
        with np.errstate(over="ignore"):  # Inf codes: float64 inf -> float32 inf
            return self._decode_bits(np.asarray(codes, dtype=np.int64))

    def _decode_bits(self, c):
        if self.family == "e8m0":
            v = np.ldexp(1.0, (c - 127).astype(np.int32)).astype(np.float32).view(np.uint32).astype(np.int64)
            return np.where(c == 0xFF, F32_QNAN, v).astype(np.uint32)
        m, bias = self.m, self.bias
        neg = (c & self.sign) != 0
        mag = c & (self.sign - 1)
        E, M = mag >> m, mag & ((1 << m) - 1)
        val = np.where(E == 0, np.ldexp(M.astype(np.float64), 1 - bias - m),
                       np.ldexp((M + (1 << m)).astype(np.float64), (E - bias - m).astype(np.int32)))
        if self.family == "ieee":
            special = E == (1 << self.e) - 1
            val = np.where(special & (M == 0), np.inf, val)
            nan = special & (M != 0)
        elif self.family == "fn":
            nan = mag == self.sign - 1
        elif self.family == "fnuz":
            nan = c == self.sign
        else:
            nan = np.zeros(c.shape, bool)
        val = np.where(neg, -val, val)
        bits = val.astype(np.float32).view(np.uint32).astype(np.int64)
        qnan = F32_QNAN | (neg.astype(np.int64) << 31)
        return np.where(nan, qnan, bits).astype(np.uint32)

    # ---- encode: float32 -> code ----
    def encode(self, x):
        u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
        s = u >> 31
        a = u & 0x7FFFFFFF
        isnan, isinf, iszero = a > 0x7F800000, a == 0x7F800000, a == 0
        b, f = a >> 23, a & 0x7FFFFF
        if self.family == "e8m0":
            return self._encode_e8m0(s, a, b, f).astype(self.dtype)
        m, sign = self.m, self.sign
        sig = np.where(b > 0, f | (1 << 23), f)
        exp2 = np.where(b > 0, b - 150, -149)  # |x| = sig * 2^exp2
        length = np.frexp(np.maximum(sig, 1).astype(np.float64))[1]  # bit length of sig
        top = length - 1 + exp2  # floor(log2 |x|)
        emin = 1 - self.bias
        qexp = np.where(top < emin, emin - m, top - m)  # exponent of the target's quantum
        sh = np.clip(qexp - exp2, 0, 40)  # >= 0 for every format here (none is wider than float32)
        q = sig >> sh
        rem = sig - (q << sh)
        half = np.where(sh > 0, np.left_shift(1, np.maximum(sh - 1, 0)), 1 << 40)
        q = q + ((rem > half) | ((rem == half) & ((q & 1) == 1)))
        mag = np.where(top < emin, q, ((top - emin + 1) << m) + q - (1 << m))
        over = mag > self.max_code
        fam = self.family
        if fam == "ieee":
            ovf = self.inf | (s * sign)
        elif fam == "fn":
            ovf = self.nan | (s * sign)
        elif fam == "fnuz":
            ovf = np.full_like(s, self.nan)
        else:
            ovf = self.max_code | (s * sign)
        zero_code = 0 if fam == "fnuz" else s * sign
        code = np.where(mag == 0, zero_code, mag | (s * sign))
        code = np.where(over, ovf, code)
        code = np.where(iszero, zero_code, code)
        if fam == "ieee":
            inf_code = self.inf | (s * sign)
        else:
            inf_code = ovf  # fn: signed NaN, fnuz: the NaN, finite: +-max
        code = np.where(isinf, inf_code, code)
        if fam in ("ieee", "fn"):
            nan_code = self.nan | (s * sign)
        elif fam == "fnuz":
            nan_code = np.full_like(s, self.nan)
        else:
            nan_code = self.nan ^ (s * sign)  # -0 for +NaN, +0 for -NaN
        code = np.where(isnan, nan_code, code)
        return code.astype(self.dtype)

    @staticmethod
    def _encode_e8m0(s, a, b, f):
        up = f >= (1 << 22)  # the significand 1.f rounds at its implicit bit: ties (f = 2^22) go up
        code = b + up
        sub = np.where(f > (1 << 22), 1, 0)  # float32 subnormals, as ml_dtypes rounds them
        code = np.where(b == 0, sub, code)
        code = np.where(code > 0xFE, 0xFF, code)
        bad = (s == 1) | (a == 0) | (a >= 0x7F800000)  # negative, zero, Inf, NaN
        return np.where(bad, 0xFF, code)

    def finite_values(self):
        """Every finite value of the format, as float64, ascending (one zero)."""
        codes = np.arange(1 << self.bits)
        v = self.decode_bits(codes).view(np.float32).astype(np.float64)
        return np.unique(v[np.isfinite(v)])
