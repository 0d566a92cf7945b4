// Parsing the fault-injection variables and acting them out.
#include "fault_injection.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>

#include "trident/core/error.hpp"

namespace trident::cli {

FaultInjection FaultInjection::from_environment(int world_rank) {
  FaultInjection f;
  f.world_rank_ = world_rank;
  if (const char* preempt = std::getenv("TRIDENT_TEST_PREEMPT"); preempt && *preempt) {
    char* end = nullptr;
    f.preempt_after_ = std::strtoll(preempt, &end, 10);
    TRIDENT_CONFIG_CHECK(*end == '\0' && f.preempt_after_ >= 1, "TRIDENT_TEST_PREEMPT='", preempt,
                         "': expected a step number >= 1");
  }
  if (const char* spec = std::getenv("TRIDENT_TEST_NONFINITE"); spec && *spec) {
    long long step = -1, count = 1;
    char value[8] = "nan";
    const int fields = std::sscanf(spec, "rank=%d,step=%lld,count=%lld,value=%3s", &f.nan_rank_, &step, &count, value);
    const std::string v = value;
    TRIDENT_CONFIG_CHECK(fields >= 2 && f.nan_rank_ >= 0 && step >= 1 && count >= 1 && (v == "nan" || v == "inf"),
                         "TRIDENT_TEST_NONFINITE='", spec, "': expected rank=R,step=S[,count=C[,value=nan|inf]]");
    f.nan_step_ = step;
    f.nan_count_ = count;
    f.nan_value_ = v == "inf" ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  }
  if (const char* hang = std::getenv("TRIDENT_TEST_HANG"); hang && *hang) {
    long long step = -1;
    TRIDENT_CONFIG_CHECK(std::sscanf(hang, "rank=%d,step=%lld", &f.hang_rank_, &step) == 2 && f.hang_rank_ >= 0 &&
                             step >= 1,
                         "TRIDENT_TEST_HANG='", hang, "': expected rank=R,step=S");
    f.hang_step_ = step;
  }
  if (const char* delay = std::getenv("TRIDENT_TEST_CHECKPOINT_DELAY"); delay && *delay) {
    const std::string spec = delay;
    const size_t colon = spec.find(':');
    TRIDENT_CONFIG_CHECK(colon != std::string::npos && colon > 0, "TRIDENT_TEST_CHECKPOINT_DELAY='", spec,
                         "': expected SECONDS:FILE_NAME");
    f.checkpoint_delay_s_ = std::atof(spec.substr(0, colon).c_str());
    f.checkpoint_delayed_ = spec.substr(colon + 1);
  }
  if (const char* text = std::getenv("TRIDENT_TEST_FAIL"); text && *text) {
    long long step = -1;
    TRIDENT_CONFIG_CHECK(std::sscanf(text, "rank=%d,step=%lld", &f.fail_rank_, &step) == 2 && f.fail_rank_ >= 0 &&
                             step >= 1,
                         "TRIDENT_TEST_FAIL='", text, "': expected rank=R,step=S");
    f.fail_step_ = step;
  }
  if (const char* text = std::getenv("TRIDENT_TEST_SLOW"); text && *text) {
    long long ms = -1, from = 1;
    const int fields = std::sscanf(text, "rank=%d,ms=%lld,from=%lld", &f.slow_rank_, &ms, &from);
    TRIDENT_CONFIG_CHECK(fields >= 2 && f.slow_rank_ >= 0 && ms >= 0 && from >= 1, "TRIDENT_TEST_SLOW='", text,
                         "': expected rank=R,ms=M[,from=S]");
    f.slow_ms_ = ms;
    f.slow_from_ = from;
  }
  if (const char* text = std::getenv("TRIDENT_TEST_BITFLIP"); text && *text) {
    long long step = -1;
    int expert = 0;
    const int fields = std::sscanf(text, "rank=%d,step=%lld,expert=%d", &f.flip_rank_, &step, &expert);
    TRIDENT_CONFIG_CHECK(fields >= 2 && f.flip_rank_ >= 0 && step >= 1 && (expert == 0 || expert == 1),
                         "TRIDENT_TEST_BITFLIP='", text, "': expected rank=R,step=S[,expert=1]");
    f.flip_step_ = step;
    f.flip_expert_ = expert == 1;
  }
  return f;
}

void FaultInjection::step_starting(int64_t step) {
  TRIDENT_CHECK(!(fail_rank_ == world_rank_ && fail_step_ == step), "injected failure (TRIDENT_TEST_FAIL) on rank ",
                world_rank_, " at step ", step);
  if (hang_rank_ == world_rank_ && hang_step_ == step)
    std::this_thread::sleep_for(std::chrono::hours(1));  // a rank that stops responding
}

void FaultInjection::gradients_zeroed(int64_t step, Ops& ops, Tensor grads) {
  // count: gradient passes, so that a re-run of the step (train.rerun_bad_steps) is one more.
  if (nan_rank_ != world_rank_ || step < nan_step_ || nan_injected_ >= nan_count_) return;
  ++nan_injected_;
  Tensor first = grads.narrow(0, 1);  // backward accumulates into it; the reductions spread it
  ops.fill(first, nan_value_);
}

void FaultInjection::computing(int64_t step) {
  if (slow_rank_ == world_rank_ && step >= slow_from_) std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms_));
}

void FaultInjection::parameters_updated(int64_t step, Ops& ops, model::ParamStore& params) {
  if (flip_rank_ != world_rank_ || flip_step_ != step) return;
  for (const auto& p : params.all()) {
    if (p->spec.expert != flip_expert_ || !p->spec.trainable) continue;
    Tensor first = p->value.flat().narrow(0, 1);
    Tensor host = Tensor::zeros(Shape{1}, first.dtype());
    ops.copy(first, host);
    static_cast<unsigned char*>(host.raw())[1] ^= 0x10;  // a low mantissa bit: a small, silent change
    ops.copy(host, first);
    return;
  }
  TRIDENT_CHECK(false, "TRIDENT_TEST_BITFLIP: no ", flip_expert_ ? "expert " : "", "parameter on rank ", world_rank_);
}

void FaultInjection::checkpoint_written(const std::string& path) {
  if (!checkpoint_delayed_.empty() && std::filesystem::path(path).filename() == checkpoint_delayed_)
    ::usleep(useconds_t(checkpoint_delay_s_ * 1e6));
}

}  // namespace trident::cli
