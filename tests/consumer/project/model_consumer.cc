// A program outside the tree reading an ONNX model with the installed
// tensormem::model: prints the number of intermediate buffers.
#include <iostream>

#include "tensormem/model/onnx_model.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto model = tensormem::LoadOnnxModel(argv[1], {});
  if (!model.ok()) {
    std::cerr << model.status().message() << "\n";
    return 1;
  }
  std::cout << "model buffers "
            << tensormem::ModelBufferSet(*model).buffers.size() << "\n";
  return 0;
}
