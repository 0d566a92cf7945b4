// make_cpu_ops: the CpuOps of the kernel path compiled for the selected CPU level
// (cpu_path.hpp). Each path is the same sources (src/backend/cpu/) compiled for another
// instruction set into its own inline namespace, trident::cpu::<path> (CMakeLists.txt).
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <memory>
#include <mutex>

#include "trident/backend/cpu_ops.hpp"
#include "trident/backend/cpu_path.hpp"
#include "trident/core/error.hpp"

// Every path's factory; TRIDENT_CPU_PATH_<NAME> says which paths this build compiled.
#define TRIDENT_DECLARE_CPU_PATH(path) \
  namespace trident::cpu::path {       \
  std::unique_ptr<Ops> make_path_ops(bool bf16_taken_as_slower); \
  }
#if TRIDENT_CPU_PATH_AVX2
TRIDENT_DECLARE_CPU_PATH(avx2)
#endif
#if TRIDENT_CPU_PATH_AVX512
TRIDENT_DECLARE_CPU_PATH(avx512)
#endif
#if TRIDENT_CPU_PATH_NEON
TRIDENT_DECLARE_CPU_PATH(neon)
#endif
#if TRIDENT_CPU_PATH_SVE
TRIDENT_DECLARE_CPU_PATH(sve)
#endif
#if TRIDENT_CPU_PATH_NATIVE
TRIDENT_DECLARE_CPU_PATH(native)
#endif

namespace trident {
namespace {

// oneDNN dispatches its GEMMs by itself; a lowered level must lower it too, before its first
// primitive, so that a forced path reproduces a node's GEMMs as well as its kernels.
void limit_onednn(CpuPath path) {
#if defined(__x86_64__)
  if (path == detected_cpu_path()) return;
  const dnnl_cpu_isa_t isa = path == CpuPath::kAvx2         ? dnnl_cpu_isa_avx2
                             : path == CpuPath::kAvx512     ? dnnl_cpu_isa_avx512_core
                             : path == CpuPath::kAvx512Bf16 ? dnnl_cpu_isa_avx512_core_bf16
                                                            : dnnl_cpu_isa_all;
  TRIDENT_CHECK(dnnl_set_max_cpu_isa(isa) == dnnl_success, "oneDNN refused the CPU level ", cpu_path_name(path),
                " (it must be set before oneDNN's first primitive)");
#else
  (void)path;  // oneDNN's aarch64 kernels pick their own (NEON or SVE) at run time
#endif
}

std::unique_ptr<Ops> make_path_ops(CpuPath path, bool bf16_taken_as_slower) {
#if TRIDENT_CPU_PATH_NATIVE
  (void)path;
  return cpu::native::make_path_ops(bf16_taken_as_slower);
#elif defined(__aarch64__)
#if TRIDENT_CPU_PATH_SVE
  if (path == CpuPath::kSve) return cpu::sve::make_path_ops(bf16_taken_as_slower);
#endif
  return cpu::neon::make_path_ops(bf16_taken_as_slower);
#else
#if TRIDENT_CPU_PATH_AVX512
  if (path != CpuPath::kAvx2) return cpu::avx512::make_path_ops(bf16_taken_as_slower);
#endif
  return cpu::avx2::make_path_ops(bf16_taken_as_slower);
#endif
}

}  // namespace

std::unique_ptr<Ops> make_cpu_ops(int threads, bool bf16_taken_as_slower) {
  const CpuPath path = selected_cpu_path();
  static std::once_flag onednn_limited;
  std::call_once(onednn_limited, limit_onednn, path);
  if (threads > 0) omp_set_num_threads(threads);
  return make_path_ops(path, bf16_taken_as_slower);
}

}  // namespace trident
