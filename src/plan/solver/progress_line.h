// ProgressLine: the optimal planner's status line on stderr (best total,
// bound, gap, nodes per second), at most twice a second, and a newline
// after it when it was printed.
//
//   ProgressLine progress(options.progress, start);
//   progress.Report(best, bound, nodes);  // each round
#ifndef TENSORMEM_PLAN_SOLVER_PROGRESS_LINE_H_
#define TENSORMEM_PLAN_SOLVER_PROGRESS_LINE_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>

namespace tensormem::solver_internal {

class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;
  ProgressLine(bool enabled, Clock::time_point start)
      : enabled_(enabled), start_(start) {}
  ~ProgressLine() {
    if (printed_) std::fputc('\n', stderr);
  }
  void Report(uint64_t best, uint64_t bound, uint64_t nodes) {
    if (!enabled_ || Seconds(last_) < 0.5) return;
    last_ = Clock::now();
    const double seconds = std::max(Seconds(start_), 1e-9);
    std::fprintf(
        stderr, "\roptimal: best %llu  bound %llu  gap %.2f%%  %.0f nodes/s   ",
        static_cast<unsigned long long>(best),
        static_cast<unsigned long long>(bound),
        bound == 0 ? 0.0 : 100.0 * (best - bound) / bound, nodes / seconds);
    printed_ = true;
  }

 private:
  static double Seconds(Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
  }

  bool enabled_;
  Clock::time_point start_;
  Clock::time_point last_{};  // the clock's epoch: the first report prints
  bool printed_ = false;
};

}  // namespace tensormem::solver_internal

#endif  // TENSORMEM_PLAN_SOLVER_PROGRESS_LINE_H_
