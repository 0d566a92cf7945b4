// checkpoint_state / checkpoint_format_version: a checkpoint's root attributes validated before a
// resume uses them (no file needed: the attributes as read).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "trident/core/error.hpp"
#include "trident/io/checkpoint_file.hpp"

namespace trident::io {
namespace {

CheckpointAttributes written() {  // as Checkpointer::attributes writes them, plus the version
  CheckpointAttributes a;
  a.numbers = {{"format_version", 1}, {"step", 12},       {"tokens", 768},   {"sampler_step", 12},
               {"seed", 1234},        {"loss_scale", 1024}, {"layout_dp", 2}, {"layout_tp", 1},
               {"layout_pp", 4},      {"layout_zero", 1}};
  a.texts = {{"config", "[model]\nlayers = 2\n"}};
  return a;
}

std::string rejection(const CheckpointAttributes& a) {
  try {
    (void)checkpoint_state(a, "ck.h5");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointState, ReadsWhatTridentWrites) {
  const CheckpointState s = checkpoint_state(written(), "ck.h5");
  EXPECT_EQ(s.format_version, 1);
  EXPECT_EQ(s.step, 12);
  EXPECT_EQ(s.tokens, 768);
  EXPECT_EQ(s.sampler_step, 12);
  EXPECT_EQ(s.seed, 1234u);
  EXPECT_EQ(s.loss_scale, 1024);
  EXPECT_EQ(s.layout_dp, 2);
  EXPECT_EQ(s.layout_pp, 4);
  EXPECT_EQ(s.layout_zero, 1);
  EXPECT_EQ(s.config, "[model]\nlayers = 2\n");
}

TEST(CheckpointState, OptionalAttributesMayBeAbsent) {  // as trident convert writes them
  CheckpointAttributes a = written();
  for (const char* name : {"tokens", "sampler_step", "seed", "loss_scale", "layout_zero"}) a.numbers.erase(name);
  a.texts.clear();
  const CheckpointState s = checkpoint_state(a, "ck.h5");
  EXPECT_EQ(s.loss_scale, 0);
  EXPECT_EQ(s.config, "");
}

TEST(CheckpointState, RejectsMissingRequiredAttributes) {
  for (const char* name : {"format_version", "step", "layout_dp", "layout_tp", "layout_pp"}) {
    CheckpointAttributes a = written();
    a.numbers.erase(name);
    EXPECT_NE(rejection(a).find(name), std::string::npos) << name;
  }
}

TEST(CheckpointState, RejectsValuesOutOfRange) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const struct {
    const char* name;
    double value;
  } cases[] = {{"step", nan},         {"step", 1e300},         {"step", -1},          {"step", 2.5},
               {"tokens", -5},        {"sampler_step", inf},   {"seed", 0x1p64},      {"seed", -1},
               {"layout_dp", 0},      {"layout_tp", 1e10},     {"layout_pp", nan},    {"layout_zero", 2},
               {"loss_scale", 0},     {"loss_scale", -1},      {"loss_scale", inf},   {"loss_scale", nan}};
  for (const auto& c : cases) {
    CheckpointAttributes a = written();
    a.numbers[c.name] = c.value;
    EXPECT_NE(rejection(a).find(c.name), std::string::npos) << c.name << " = " << c.value;
  }
}

TEST(CheckpointState, FormatVersion) {
  CheckpointAttributes a = written();
  a.numbers["format_version"] = kCheckpointFormatVersion + 1;
  EXPECT_NE(rejection(a).find("upgrade trident"), std::string::npos);
  for (double bad : {0.0, -3.0, 0.5, std::numeric_limits<double>::quiet_NaN()}) {
    a.numbers["format_version"] = bad;
    EXPECT_NE(rejection(a).find("is not a format version"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace trident::io
