// The forward pass's linear layers: y[tokens][out] = x[tokens][in] * w[out][in]^T, bf16 operands and
// output, fp32 accumulation, optionally adding into y (the residual add of the output and down projections
// rides on the GEMM's beta = 1 instead of a separate kernel).
//
// Two back ends, both NVIDIA's: cublasGemmEx, and cuBLASLt with the algorithm its heuristic ranks first for
// each shape (cached), which can pick kernels cublasGemmEx does not; the model benchmark times both on the
// forward pass's shapes. On HIP, hipBLAS's GemmEx serves either choice (where hipBLAS is installed).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "hw/gpu/vendor.h"

namespace kvtier::hw {

enum class GemmBackend { kBlas, kBlasLt };

const char* gemm_backend_name(GemmBackend backend);

class Gemm {
 public:
  Gemm(gpuStream_t stream, GemmBackend backend);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // Row-major x [tokens][in], w [out][in], y [tokens][out]; accumulate: y += x w^T instead of y = x w^T.
  // Throws std::runtime_error naming the library call that failed.
  void linear(const uint16_t* x, const uint16_t* w, uint16_t* y, int tokens, int in, int out, bool accumulate);

  GemmBackend backend() const { return backend_; }

 private:
  struct Handles;
  std::unique_ptr<Handles> handles_;
  gpuStream_t stream_;
  GemmBackend backend_;
};

}  // namespace kvtier::hw
