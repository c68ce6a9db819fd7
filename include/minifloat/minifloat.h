// minifloat/minifloat.h: everything public, in one include.
#pragma once

#include "minifloat/checkpoint_ops.h"
#include "minifloat/checkpoint_tensors.h"
#include "minifloat/codec.h"
#include "minifloat/describe.h"
#include "minifloat/format.h"
#include "minifloat/gemm.h"
#include "minifloat/kv.h"
#include "minifloat/random.h"
#include "minifloat/scale_layout.h"
#include "minifloat/text.h"
