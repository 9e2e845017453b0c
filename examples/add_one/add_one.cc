// add_one: y = x + 1 on 1-D float32 CPU tensors, exported through the TVM FFI C ABI.
//
// TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_cpu, ...) exports the symbol __tvm_ffi_add_one_cpu.
// Built with TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1 (the default below; build.py passes it
// explicitly) the library also exports __tvm_ffi__metadata_add_one_cpu (the JSON type schema)
// and __tvm_ffi__doc_add_one_cpu (the docstring), which tvmffi_runtime reads with
// Module.function_metadata / Module.function_doc.
#ifndef TVM_FFI_DLL_EXPORT_INCLUDE_METADATA
#define TVM_FFI_DLL_EXPORT_INCLUDE_METADATA 1
#endif

#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <cstdint>

namespace add_one {

void AddOne(tvm::ffi::TensorView x, tvm::ffi::TensorView y) {
  const DLDataType f32{kDLFloat, 32, 1};
  TVM_FFI_CHECK(x.ndim() == 1, ValueError) << "x must be a 1-D tensor, got ndim=" << x.ndim();
  TVM_FFI_CHECK(y.ndim() == 1, ValueError) << "y must be a 1-D tensor, got ndim=" << y.ndim();
  TVM_FFI_CHECK(x.dtype() == f32, TypeError) << "x must be float32, got " << x.dtype();
  TVM_FFI_CHECK(y.dtype() == f32, TypeError) << "y must be float32, got " << y.dtype();
  TVM_FFI_CHECK(x.shape()[0] == y.shape()[0], ValueError)
      << "x and y must have the same shape, got (" << x.shape()[0] << ",) and (" << y.shape()[0]
      << ",)";
  TVM_FFI_CHECK(x.device().device_type == kDLCPU && y.device().device_type == kDLCPU, ValueError)
      << "add_one_cpu needs CPU tensors";
  // Honour strides (in elements) and byte offsets: non-contiguous views work too.
  const float* src = reinterpret_cast<const float*>(static_cast<const char*>(x.data_ptr()) +
                                                    x.byte_offset());
  float* dst = reinterpret_cast<float*>(static_cast<char*>(y.data_ptr()) + y.byte_offset());
  const int64_t n = x.shape()[0];
  const int64_t sx = x.strides()[0];
  const int64_t sy = y.strides()[0];
  for (int64_t i = 0; i < n; ++i) {
    dst[i * sy] = src[i * sx] + 1.0f;
  }
}

}  // namespace add_one

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_cpu, add_one::AddOne);
TVM_FFI_DLL_EXPORT_TYPED_FUNC_DOC(add_one_cpu, R"(Write x + 1 into y.

Parameters
----------
x : Tensor
    1-D float32 CPU tensor (read).
y : Tensor
    1-D float32 CPU tensor with the shape of x (written).)");
