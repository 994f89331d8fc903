// RepoPath: a path inside the source tree (TENSORMEM_SOURCE_DIR), for tests
// that read the project's own data or examples.
//
//   ReadBufferSetCsv(RepoPath("data/models/resnet18.buffers.csv"));
#ifndef TENSORMEM_TESTS_REPO_PATH_H_
#define TENSORMEM_TESTS_REPO_PATH_H_

#include <string>
#include <string_view>

namespace tensormem {

inline std::string RepoPath(std::string_view relative) {
  return std::string(TENSORMEM_SOURCE_DIR) + "/" + std::string(relative);
}

}  // namespace tensormem

#endif  // TENSORMEM_TESTS_REPO_PATH_H_
