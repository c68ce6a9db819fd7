// Internal: what the block quantizer's per-target row kernels (quantize-inl.h and the quantize_*-inl.h and
// dequantize-inl.h files it includes) need to know about a scheme's element type, made once per call by quantize.cc.
// The kernels are declared only where they are defined, per target; quantize.cc exports and dispatches them. Each one
// does, lane by lane, exactly what the scalar rules of minifloat/scale.h do, so results are bit-identical to src/ref.
#pragma once

#include "element_codec.h"
#include "minifloat/scheme.h"

namespace mf::cpu {

// What the lanes of the block quantizer need to know about an element type (integer or float).
struct QuantizeElement {
  const Scheme* scheme;  // for the scalar tails (element_code / element_value)
  bool is_int;
  int bits;            // element width
  float max;           // largest magnitude
  ElementCodec codec;  // float elements: the element codec's traits (round to nearest even, saturate)
};
QuantizeElement quantize_element(const Scheme& s);

}  // namespace mf::cpu
