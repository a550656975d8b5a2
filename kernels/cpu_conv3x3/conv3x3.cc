// A direct 3x3 'SAME' convolution for x86-64 CPUs with AVX-512, as an XLA FFI custom call:
//
//   out[n, y, x, :] = act( sum_{i, j, c} (scale * z)[n, y + i - 1, x + j - 1, c] w[i, j, c, :] + add[n, y, x, :] )
//
// z, scale: [n, h, w, c] float32 (scale optional), w: [3, 3, c, o] (HWIO), add, out: [n, h, w, o]
// (add optional), o <= 16 (one AVX-512 vector of output channels), act: 0 identity, 1 softsign.
// With residual = 1 (c == o) the second result holds sum((out - z)^2) and sum(out^2), the terms of
// the fixed-point step's relative residual (float32 per image row, float64 across rows).
// Zero padding. One image row at a time: the three input rows (times scale) are in a ring of
// zero-padded row buffers (each input row copied once), then each block of PB output pixels
// accumulates PB vectors of o channels
// (a weight vector is loaded once per block and used PB times). Summation order per output: kernel
// row i, then column j, then input channel c (the order of XLA:CPU's own convolution).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int kBlock = 14;   // output pixels per register block (PB accumulators + 1 weight vector)

// The three zero-padded input rows around an output row: each input row of an image is copied
// (times scale, when given) once into the slot (yy + 1) % 3; column 0 and column w + 1 stay zero.
class RowRing {
 public:
  RowRing(const float* z, const float* scale, int64_t h, int64_t wd, int64_t c)
      : z_(z), scale_(scale), h_(h), wd_(wd), c_(c), stride_((wd + 2) * c), buf_(3 * stride_, 0.0f) {}

  // Loads rows -1 and 0 of image b; then `Advance(b, y)` before output row y loads row y + 1.
  void Start(int64_t b) {
    Load(b, -1);
    Load(b, 0);
  }
  void Advance(int64_t b, int64_t y) { Load(b, y + 1); }
  // Input row y + i - 1 (i = 0, 1, 2) for output row y, from its left padding column.
  const float* Row(int64_t y, int i) const { return buf_.data() + ((y + i) % 3) * stride_; }

 private:
  void Load(int64_t b, int64_t yy) {
    float* __restrict r = buf_.data() + ((yy + 1) % 3) * stride_ + c_;
    const int64_t count = wd_ * c_;
    if (yy < 0 || yy >= h_) {
      std::memset(r, 0, count * sizeof(float));
      return;
    }
    const int64_t off = (b * h_ + yy) * count;
    const float* __restrict z = z_ + off;
    if (scale_ == nullptr) {
      std::memcpy(r, z, count * sizeof(float));
    } else {
      const float* __restrict s = scale_ + off;
      for (int64_t t = 0; t < count; ++t) r[t] = s[t] * z[t];
    }
  }

  const float* z_;
  const float* scale_;
  int64_t h_, wd_, c_, stride_;
  std::vector<float> buf_;
};

template <int PB>
inline void Block(const float* const* rows, const float* w, int64_t c, __mmask16 mask,
                  int64_t x, int64_t o, const float* add, float* out, int act) {
  __m512 acc[PB];
  for (int p = 0; p < PB; ++p) acc[p] = _mm512_setzero_ps();
  for (int i = 0; i < 3; ++i) {
    const float* r = rows[i];
    for (int j = 0; j < 3; ++j) {
      const float* wij = w + (i * 3 + j) * c * o;
      const float* base = r + (x + j) * c;   // padded column (x + p) + j - 1 + 1
      for (int64_t k = 0; k < c; ++k) {
        const __m512 wv = _mm512_maskz_loadu_ps(mask, wij + k * o);
        for (int p = 0; p < PB; ++p) acc[p] = _mm512_fmadd_ps(_mm512_set1_ps(base[p * c + k]), wv, acc[p]);
      }
    }
  }
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int p = 0; p < PB; ++p) {
    __m512 v = acc[p];
    if (add != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, add + p * o));
    if (act == 1) v = _mm512_div_ps(v, _mm512_add_ps(one, _mm512_abs_ps(v)));
    _mm512_mask_storeu_ps(out + p * o, mask, v);
  }
}

ffi::Error Conv3x3Impl(ffi::Buffer<ffi::F32> z, ffi::Buffer<ffi::F32> w, ffi::Buffer<ffi::F32> scale,
                       ffi::Buffer<ffi::F32> add, ffi::ResultBuffer<ffi::F32> out,
                       ffi::ResultBuffer<ffi::F32> sums, int32_t act, int32_t use_scale, int32_t use_add,
                       int32_t residual) {
  const auto zd = z.dimensions();
  const auto wdims = w.dimensions();
  if (zd.size() != 4 || wdims.size() != 4 || wdims[0] != 3 || wdims[1] != 3 || wdims[2] != zd[3])
    return ffi::Error::InvalidArgument("conv3x3: expects z [n, h, w, c] and w [3, 3, c, o]");
  const int64_t n = zd[0], h = zd[1], wd = zd[2], c = zd[3], o = wdims[3];
  if (o < 1 || o > 16) return ffi::Error::InvalidArgument("conv3x3: o must be 1..16");
  if (act != 0 && act != 1) return ffi::Error::InvalidArgument("conv3x3: act must be 0 or 1");
  if (residual && o != c) return ffi::Error::InvalidArgument("conv3x3: the residual needs c == o");
  if (sums->element_count() != 2) return ffi::Error::InvalidArgument("conv3x3: sums must have 2 entries");
  double total_diff = 0.0, total_out = 0.0;
  const __mmask16 mask = static_cast<__mmask16>((1u << o) - 1u);
  const float* zp = z.typed_data();
  const float* sp = use_scale ? scale.typed_data() : nullptr;
  const float* ap = use_add ? add.typed_data() : nullptr;
  const float* wp = w.typed_data();
  float* op = out->typed_data();
  RowRing ring(zp, sp, h, wd, c);
  for (int64_t b = 0; b < n; ++b) {
    ring.Start(b);
    for (int64_t y = 0; y < h; ++y) {
      ring.Advance(b, y);
      const float* rows[3] = {ring.Row(y, 0), ring.Row(y, 1), ring.Row(y, 2)};
      const int64_t out_row = (b * h + y) * wd * o;
      int64_t x = 0;
      for (; x + kBlock <= wd; x += kBlock)
        Block<kBlock>(rows, wp, c, mask, x, o, ap ? ap + out_row + x * o : nullptr,
                      op + out_row + x * o, act);
      for (; x < wd; ++x)
        Block<1>(rows, wp, c, mask, x, o, ap ? ap + out_row + x * o : nullptr,
                 op + out_row + x * o, act);
      if (residual) {   // the row's residual terms, (out - z)^2 and out^2 (c == o), while it is in cache:
        // float32 per image row, float64 across rows
        const float* zin = zp + out_row;
        const float* orow = op + out_row;
        __m512 sq_diff = _mm512_setzero_ps(), sq_out = _mm512_setzero_ps();
        for (int64_t t = 0; t < wd; ++t) {
          const __m512 v = _mm512_maskz_loadu_ps(mask, orow + t * o);
          const __m512 dv = _mm512_sub_ps(v, _mm512_maskz_loadu_ps(mask, zin + t * o));
          sq_diff = _mm512_fmadd_ps(dv, dv, sq_diff);
          sq_out = _mm512_fmadd_ps(v, v, sq_out);
        }
        total_diff += _mm512_reduce_add_ps(sq_diff);
        total_out += _mm512_reduce_add_ps(sq_out);
      }
    }
  }
  sums->typed_data()[0] = static_cast<float>(total_diff);
  sums->typed_data()[1] = static_cast<float>(total_out);
  return ffi::Error::Success();
}

}  // namespace

// The weight gradient dw[i, j, c, :] = sum_{n, y, x} z[n, y + i - 1, x + j - 1, c] g[n, y, x, :]
// (zero padding), g: [n, h, w, o], o <= 16. Per image row and kernel tap, C accumulator vectors of o
// channels (one per input channel) run over the row's pixels in registers; the rows' sums add up
// per image in float32, and the images' in float64.
template <int C>
void WeightGradRows(const float* zp, const float* gp, int64_t n, int64_t h, int64_t wd, int64_t o,
                    __mmask16 mask, double* total) {
  RowRing ring(zp, nullptr, h, wd, C);
  std::vector<__m512> image_acc(9 * C);   // float32 sums over one image, then into float64 totals
  alignas(64) float lanes[16];
  for (int64_t b = 0; b < n; ++b) {
    for (auto& v : image_acc) v = _mm512_setzero_ps();
    ring.Start(b);
    for (int64_t y = 0; y < h; ++y) {
      ring.Advance(b, y);
      const float* grow = gp + (b * h + y) * wd * o;
      for (int i = 0; i < 3; ++i) {
        const float* r = ring.Row(y, i);
        for (int j = 0; j < 3; ++j) {
          __m512 acc[C];
          for (int k = 0; k < C; ++k) acc[k] = _mm512_setzero_ps();
          for (int64_t x = 0; x < wd; ++x) {
            const __m512 gv = _mm512_maskz_loadu_ps(mask, grow + x * o);
            const float* base = r + (x + j) * C;
            for (int k = 0; k < C; ++k) acc[k] = _mm512_fmadd_ps(_mm512_set1_ps(base[k]), gv, acc[k]);
          }
          __m512* t = image_acc.data() + (i * 3 + j) * C;
          for (int k = 0; k < C; ++k) t[k] = _mm512_add_ps(t[k], acc[k]);
        }
      }
    }
    for (int tap = 0; tap < 9; ++tap) {
      for (int k = 0; k < C; ++k) {
        _mm512_store_ps(lanes, image_acc[tap * C + k]);
        double* t = total + (tap * C + k) * o;
        for (int64_t q = 0; q < o; ++q) t[q] += lanes[q];
      }
    }
  }
}

ffi::Error WeightGradImpl(ffi::Buffer<ffi::F32> z, ffi::Buffer<ffi::F32> g, ffi::ResultBuffer<ffi::F32> dw) {
  const auto zd = z.dimensions();
  const auto gd = g.dimensions();
  if (zd.size() != 4 || gd.size() != 4 || zd[0] != gd[0] || zd[1] != gd[1] || zd[2] != gd[2])
    return ffi::Error::InvalidArgument("conv3x3 weight gradient: expects z [n, h, w, c] and g [n, h, w, o]");
  const int64_t n = zd[0], h = zd[1], wd = zd[2], c = zd[3], o = gd[3];
  if (o < 1 || o > 16 || c < 1 || c > 16)
    return ffi::Error::InvalidArgument("conv3x3 weight gradient: c and o must be 1..16");
  const __mmask16 mask = static_cast<__mmask16>((1u << o) - 1u);
  std::vector<double> total(9 * c * o, 0.0);
  switch (c) {
#define JAXML_CASE(C) \
    case C: WeightGradRows<C>(z.typed_data(), g.typed_data(), n, h, wd, o, mask, total.data()); break;
    JAXML_CASE(1) JAXML_CASE(2) JAXML_CASE(3) JAXML_CASE(4) JAXML_CASE(5) JAXML_CASE(6) JAXML_CASE(7)
    JAXML_CASE(8) JAXML_CASE(9) JAXML_CASE(10) JAXML_CASE(11) JAXML_CASE(12) JAXML_CASE(13)
    JAXML_CASE(14) JAXML_CASE(15) JAXML_CASE(16)
#undef JAXML_CASE
  }
  float* out = dw->typed_data();
  for (int64_t t = 0; t < 9 * c * o; ++t) out[t] = static_cast<float>(total[t]);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxmlConv3x3WeightGrad, WeightGradImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxmlConv3x3, Conv3x3Impl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<int32_t>("act")
                                  .Attr<int32_t>("use_scale")
                                  .Attr<int32_t>("use_add")
                                  .Attr<int32_t>("residual"));
