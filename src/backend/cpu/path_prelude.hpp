// Included first (-include, CMakeLists.txt) in every object of a CPU kernel path: the sources
// of this folder are compiled once per path (x86: avx2, avx512; aarch64: neon, sve), each into
// its own inline namespace trident::cpu::<path> (TRIDENT_CPU_PATH), and cpu_ops_factory.cpp picks
// one at run time (cpu_path.hpp).
//
// A wider path is the baseline compilation plus a target pragma, not other -march flags: code
// that every object shares (the standard library's templates, trident's own headers) is
// included here, before the pragma, so each object's copy of it is baseline code and the copy
// the linker keeps runs everywhere. Only this folder's code, after the pragma and inside the
// path's namespace, gets the wider instructions. A header included by a kernel that is not
// listed here would be compiled wider in the wide path: tests/backend/check_cpu_paths.py finds
// that (a shared symbol whose code differs between paths).
#pragma once

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__)
// GCC 12 flags the intrinsics' own _mm512_undefined_* placeholders as maybe-uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "trident/backend/cpu_ops.hpp"
#include "trident/backend/cpu_path.hpp"
#include "trident/backend/ops.hpp"
#include "trident/core/dtype.hpp"
#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"
#include "trident/core/tensor.hpp"

// TRIDENT_CPU_AVX512: this path may use AVX-512 F/BW/CD/DQ/VL. TRIDENT_CPU_VECTOR_BYTES: the
// width of the kernels' explicit vectors (attention.hpp), one register of the path, of which it
// has TRIDENT_CPU_VECTOR_REGISTERS (32 zmm, 16 ymm, 32 NEON/SVE at 128 bits).
#if TRIDENT_CPU_PATH_AVX512
#pragma GCC target("avx512f,avx512bw,avx512cd,avx512dq,avx512vl,prefer-vector-width=512")
#define TRIDENT_CPU_AVX512 1
#elif TRIDENT_CPU_PATH_SVE
#pragma GCC target("+sve+bf16")
#define TRIDENT_CPU_AVX512 0
#elif TRIDENT_CPU_PATH_NATIVE && defined(__AVX512F__)
#define TRIDENT_CPU_AVX512 1
#else
#define TRIDENT_CPU_AVX512 0
#endif

#if TRIDENT_CPU_AVX512
#define TRIDENT_CPU_VECTOR_BYTES 64
#define TRIDENT_CPU_VECTOR_REGISTERS 32
#elif defined(__x86_64__)
#define TRIDENT_CPU_VECTOR_BYTES 32
#define TRIDENT_CPU_VECTOR_REGISTERS 16
#else
#define TRIDENT_CPU_VECTOR_BYTES 16
#define TRIDENT_CPU_VECTOR_REGISTERS 32
#endif
