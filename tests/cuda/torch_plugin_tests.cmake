# The PyTorch CUDA plug-in, called as CUDAPluggableAllocator calls it.
# Included by tests/cuda/CMakeLists.txt when the library target exists.
tensormem_cuda_test(cuda_torch_plugin_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/cuda_torch_plugin_test.cc
  DEPS tensormem_cuda tensormem_trace nlohmann_json::nlohmann_json ${CMAKE_DL_LIBS})
target_compile_definitions(cuda_torch_plugin_test PRIVATE
    TENSORMEM_CUDA_TORCH_LIBRARY="$<TARGET_FILE:tensormem_cuda_torch>")
add_dependencies(cuda_torch_plugin_test tensormem_cuda_torch)

# The Python side, without PyTorch: options and the two exported functions.
find_program(TENSORMEM_CUDA_PYTHON NAMES python3)
if(TENSORMEM_CUDA_PYTHON AND NOT TENSORMEM_SANITIZER)
  add_test(NAME cuda.python_plugin_checks
           COMMAND ${TENSORMEM_CUDA_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/cuda_plugin_checks.py)
  set_tests_properties(cuda.python_plugin_checks PROPERTIES
      ENVIRONMENT "TENSORMEM_CUDA_DRIVER=$<TARGET_FILE:tensormem_fake_cuda>;TENSORMEM_CUDA_TORCH_LIBRARY=$<TARGET_FILE:tensormem_cuda_torch>"
      TIMEOUT 60)
endif()

# The plug-in's options and instances, linked in (no global state).
tensormem_cuda_test(cuda_plugin_options_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/cuda_plugin_options_test.cc
  DEPS tensormem_cuda_torch_plugin)
