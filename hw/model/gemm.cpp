#include "hw/model/gemm.h"

#include <stdexcept>
#include <string>

#include "hw/gpu/check.h"

#if defined(KVTIER_GPU_CUDA)
#include <cublasLt.h>
#include <cublas_v2.h>
#else
#define HIPBLAS_V2
#include <hipblas/hipblas.h>
#endif

namespace kvtier::hw {
namespace {

#if defined(KVTIER_GPU_CUDA)
void check_blas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + cublasGetStatusString(status));
}
constexpr size_t kLtWorkspaceBytes = size_t{64} << 20;
#else
void check_blas(hipblasStatus_t status, const char* what) {
  if (status != HIPBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + " failed: " + hipblasStatusToString(status));
}
#endif

}  // namespace

const char* gemm_backend_name(GemmBackend backend) { return backend == GemmBackend::kBlas ? "blas" : "blaslt"; }

#if defined(KVTIER_GPU_CUDA)

// cuBLAS sees the row-major product column-major: y^T [out x tokens] = w [in x out]^T * x^T [in x tokens],
// i.e. op(A) = transpose of w stored with leading dimension in, op(B) = x as stored ("TN").
struct Gemm::Handles {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  std::map<std::tuple<int, int, int>, Plan> plans;

  ~Handles() {
    for (auto& [shape, plan] : plans) {
      cublasLtMatrixLayoutDestroy(plan.a);
      cublasLtMatrixLayoutDestroy(plan.b);
      cublasLtMatrixLayoutDestroy(plan.c);
      cublasLtMatmulDescDestroy(plan.desc);
    }
    if (workspace != nullptr) (void)gpuFree(workspace);
    if (lt != nullptr) cublasLtDestroy(lt);
    if (blas != nullptr) cublasDestroy(blas);
  }

  const Plan& plan(int tokens, int in, int out) {
    const auto key = std::make_tuple(tokens, in, out);
    if (auto found = plans.find(key); found != plans.end()) return found->second;
    Plan p;
    check_blas(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t transpose = CUBLAS_OP_T;
    check_blas(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)),
               "cublasLtMatmulDescSetAttribute");
    check_blas(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, in, out, in), "cublasLtMatrixLayoutCreate");
    check_blas(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, in, tokens, in), "cublasLtMatrixLayoutCreate");
    check_blas(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_16BF, out, tokens, out), "cublasLtMatrixLayoutCreate");
    cublasLtMatmulPreference_t preference = nullptr;
    check_blas(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    check_blas(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &kLtWorkspaceBytes, sizeof(kLtWorkspaceBytes)),
               "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.a, p.b, p.c, p.c, preference, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(preference);
    check_blas(status, "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) throw std::runtime_error("cublasLtMatmulAlgoGetHeuristic: no algorithm for this shape");
    p.algo = result.algo;
    return plans.emplace(key, p).first->second;
  }
};

Gemm::Gemm(gpuStream_t stream, GemmBackend backend)
    : handles_(std::make_unique<Handles>()), stream_(stream), backend_(backend) {
  check_blas(cublasCreate(&handles_->blas), "cublasCreate");
  check_blas(cublasSetStream(handles_->blas, stream), "cublasSetStream");
  check_blas(cublasLtCreate(&handles_->lt), "cublasLtCreate");
  KVTIER_GPU_CHECK(gpuMalloc(&handles_->workspace, kLtWorkspaceBytes));
}

Gemm::~Gemm() = default;

void Gemm::linear(const uint16_t* x, const uint16_t* w, uint16_t* y, int tokens, int in, int out, bool accumulate) {
  if (tokens == 0) return;
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  if (backend_ == GemmBackend::kBlas) {
    check_blas(cublasGemmEx(handles_->blas, CUBLAS_OP_T, CUBLAS_OP_N, out, tokens, in, &alpha, w, CUDA_R_16BF, in, x,
                            CUDA_R_16BF, in, &beta, y, CUDA_R_16BF, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
    return;
  }
  const Handles::Plan& p = handles_->plan(tokens, in, out);
  check_blas(cublasLtMatmul(handles_->lt, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo,
                            handles_->workspace, kLtWorkspaceBytes, stream_),
             "cublasLtMatmul");
}

#else

struct Gemm::Handles {
  hipblasHandle_t blas = nullptr;
  ~Handles() {
    if (blas != nullptr) hipblasDestroy(blas);
  }
};

Gemm::Gemm(gpuStream_t stream, GemmBackend backend)
    : handles_(std::make_unique<Handles>()), stream_(stream), backend_(backend) {
  check_blas(hipblasCreate(&handles_->blas), "hipblasCreate");
  check_blas(hipblasSetStream(handles_->blas, stream), "hipblasSetStream");
}

Gemm::~Gemm() = default;

void Gemm::linear(const uint16_t* x, const uint16_t* w, uint16_t* y, int tokens, int in, int out, bool accumulate) {
  if (tokens == 0) return;
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  check_blas(hipblasGemmEx(handles_->blas, HIPBLAS_OP_T, HIPBLAS_OP_N, out, tokens, in, &alpha, w, HIP_R_16BF, in, x,
                           HIP_R_16BF, in, &beta, y, HIP_R_16BF, out, HIPBLAS_COMPUTE_32F, HIPBLAS_GEMM_DEFAULT),
             "hipblasGemmEx");
}

#endif

}  // namespace kvtier::hw
