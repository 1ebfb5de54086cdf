#include "hw/tools/gemm_probe.h"

#include <algorithm>
#include <stdexcept>

#include "hw/tools/event_timer.h"
#include "hw/store/gpu_memory.h"
#include "hw/tools/tool_support.h"

#if defined(KVTIER_GPU_CUDA)
#include <cublas_v2.h>
#define KVTIER_HAVE_BLAS 1
#elif defined(KVTIER_HAVE_HIPBLAS)
#define HIPBLAS_V2
#include <hipblas/hipblas.h>
#define KVTIER_HAVE_BLAS 1
#endif

namespace kvtier::hw {

bool gemm_probe_available() {
#if defined(KVTIER_HAVE_BLAS)
  return true;
#else
  return false;
#endif
}

#if defined(KVTIER_HAVE_BLAS)
namespace {

#if defined(KVTIER_GPU_CUDA)
using BlasHandle = cublasHandle_t;
void check_blas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + " failed: " + cublasGetStatusString(status));
  }
}
void create_handle(BlasHandle* handle) {
  check_blas(cublasCreate(handle), "cublasCreate");
}
void destroy_handle(BlasHandle handle) {
  cublasDestroy(handle);
}
void set_stream(BlasHandle handle, gpuStream_t stream) {
  check_blas(cublasSetStream(handle, stream), "cublasSetStream");
}
// Column-major C[m x n] = A[m x k] * B[k x n], bf16 operands, fp32 accumulation.
void gemm_bf16(BlasHandle handle, const GemmShape& s, const void* a, const void* b, void* c) {
  const float alpha = 1.0f, beta = 0.0f;
  check_blas(
      cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, s.m, s.n, s.k, &alpha, a, CUDA_R_16BF, s.m, b,
                   CUDA_R_16BF, s.k, &beta, c, CUDA_R_16BF, s.m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "cublasGemmEx");
}
#else
using BlasHandle = hipblasHandle_t;
void check_blas(hipblasStatus_t status, const char* what) {
  if (status != HIPBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + " failed: " + hipblasStatusToString(status));
  }
}
void create_handle(BlasHandle* handle) {
  check_blas(hipblasCreate(handle), "hipblasCreate");
}
void destroy_handle(BlasHandle handle) {
  hipblasDestroy(handle);
}
void set_stream(BlasHandle handle, gpuStream_t stream) {
  check_blas(hipblasSetStream(handle, stream), "hipblasSetStream");
}
void gemm_bf16(BlasHandle handle, const GemmShape& s, const void* a, const void* b, void* c) {
  const float alpha = 1.0f, beta = 0.0f;
  check_blas(
      hipblasGemmEx(handle, HIPBLAS_OP_N, HIPBLAS_OP_N, s.m, s.n, s.k, &alpha, a, HIP_R_16BF, s.m, b,
                    HIP_R_16BF, s.k, &beta, c, HIP_R_16BF, s.m, HIPBLAS_COMPUTE_32F, HIPBLAS_GEMM_DEFAULT),
      "hipblasGemmEx");
}
#endif

}  // namespace

std::vector<GemmSample> measure_gemms(const std::string& model_name, const std::vector<GemmShape>& shapes) {
  BlasHandle handle;
  create_handle(&handle);
  gpu::Stream stream;
  std::vector<GemmSample> samples;
  try {
    set_stream(handle, stream.get());
    for (const GemmShape& shape : shapes) {
      MemoryRegion a = allocate_device_region(static_cast<uint64_t>(shape.m * shape.k * 2));
      MemoryRegion b = allocate_device_region(static_cast<uint64_t>(shape.k * shape.n * 2));
      MemoryRegion c = allocate_device_region(static_cast<uint64_t>(shape.m * shape.n * 2));
      fill_random_bf16_device(a.data(), a.bytes());
      fill_random_bf16_device(b.data(), b.bytes());
      const int repeats = 10;
      const double seconds = median_seconds(stream.get(), [&] {
        for (int i = 0; i < repeats; ++i) gemm_bf16(handle, shape, a.data(), b.data(), c.data());
      });
      samples.push_back({model_name, shape, seconds / repeats});
    }
  } catch (...) {
    destroy_handle(handle);
    throw;
  }
  destroy_handle(handle);
  return samples;
}

#else

std::vector<GemmSample> measure_gemms(const std::string&, const std::vector<GemmShape>&) {
  throw std::runtime_error("this build has no vendor BLAS (hipBLAS was not found at configure time)");
}

#endif

}  // namespace kvtier::hw
