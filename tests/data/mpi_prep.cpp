// mpi-ranks: 2 4
// prep under P ranks writes byte-identical shards to the one-process prep (JSONL files split
// among ranks in small pieces, duplicates spread across ranks, valid split, 3 shards); a
// malformed line read by one rank fails every rank with its file and line, writing nothing.
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>

#include "prep_test_util.hpp"
#include "temp_dir.hpp"
#include "trident/core/error.hpp"

namespace trident::data {
namespace {

namespace fs = std::filesystem;
using namespace prep_test;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// A directory made by rank 0 and known to all (one machine: the same /tmp).
class SharedDir {
 public:
  SharedDir() {
    if (world_rank() == 0) dir_ = std::make_unique<testing::TempDir>();
    std::string path = dir_ ? dir_->path.string() : std::string(64, ' ');
    path.resize(64, ' ');
    MPI_Bcast(path.data(), 64, MPI_CHAR, 0, MPI_COMM_WORLD);
    path_ = path.substr(0, path.find(' '));
  }
  ~SharedDir() { MPI_Barrier(MPI_COMM_WORLD); }
  std::string operator/(const std::string& leaf) const { return path_ + "/" + leaf; }

 private:
  std::unique_ptr<testing::TempDir> dir_;
  std::string path_;
};

std::vector<std::string> write_inputs(const SharedDir& dir) {
  std::vector<std::string> inputs;
  if (world_rank() == 0) {
    std::string a, b;
    for (int i = 0; i < 120; ++i) {
      a += "{\"input\": \"question " + std::to_string(i % 90) + "\", \"output\": \"answer " + std::to_string(i % 90) + "\"}\n";
      if (i % 10 == 0) a += "\n";
    }
    for (int i = 0; i < 40; ++i)
      b += R"({"messages": [{"role": "user", "content": "hi )" + std::to_string(i % 30) +
           R"("}, {"role": "assistant", "content": "hello   there"}]})" "\n";
    b += "{\"text\": \"answer 5   is a text file\"}\n";  // t1.txt's text: a duplicate, read by another rank
    write_file(dir / "a.jsonl", a);
    write_file(dir / "t1.txt", "answer 5 is a text file");
    write_file(dir / "b.jsonl", b);
    write_file(dir / "t2.txt", "a text of its own");
    write_file(dir / "t3.txt", "");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (const char* f : {"a.jsonl", "t1.txt", "b.jsonl", "t2.txt", "t3.txt"}) inputs.push_back(dir / f);
  return inputs;
}

TEST(MpiPrep, EveryRankCountWritesTheOneProcessShards) {
  SharedDir dir;
  PrepOptions o = options_for(write_inputs(dir), dir / "one");
  o.shards = 3;
  o.valid_permille = 200;
  o.jsonl_split_bytes = 300;  // many pieces per file
  PrepSummary alone;
  if (world_rank() == 0) alone = prep(o);
  MPI_Barrier(MPI_COMM_WORLD);
  o.output = dir / "many";
  const PrepSummary together = prepare_shards(o, byte_tokenizer(), PrepComm(MPI_COMM_WORLD));
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(together.ranks, size);
  if (world_rank() != 0) return;
  EXPECT_EQ(together.documents_in, alone.documents_in);
  EXPECT_EQ(together.duplicates_dropped, alone.duplicates_dropped);
  EXPECT_EQ(alone.duplicates_dropped, 30 + 10 + 1);
  EXPECT_EQ(together.empty_dropped, 1);
  EXPECT_EQ(together.train_tokens, alone.train_tokens);
  EXPECT_GT(together.valid_documents, 0);
  for (const std::string split : {"", "-valid"})
    for (int s = 0; s < 3; ++s)
      for (const char* ext : {".bin", ".idx"}) {
        const std::string one = shard_file_prefix(dir / ("one" + split), s, 3) + ext;
        const std::string many = shard_file_prefix(dir / ("many" + split), s, 3) + ext;
        ASSERT_TRUE(fs::exists(many)) << many;
        EXPECT_EQ(read_file(one), read_file(many)) << many;
      }
}

TEST(MpiPrep, ABadLineOnOneRankFailsEveryRank) {
  SharedDir dir;
  std::vector<std::string> inputs = write_inputs(dir);
  if (world_rank() == 0) write_file(dir / "z.jsonl", "{\"input\": \"x\", \"output\": \"y\"}\n{\"input\": }\n");
  MPI_Barrier(MPI_COMM_WORLD);
  inputs.push_back(dir / "z.jsonl");  // the last rank reads it
  PrepOptions o = options_for(inputs, dir / "out");
  o.jsonl_split_bytes = 300;
  try {
    prepare_shards(o, byte_tokenizer(), PrepComm(MPI_COMM_WORLD));
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "z.jsonl:2:"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "out.bin"));
  EXPECT_FALSE(fs::exists(dir / "out.bin.tmp"));
  o.skip_bad_lines = true;
  const PrepSummary s = prepare_shards(o, byte_tokenizer(), PrepComm(MPI_COMM_WORLD));
  EXPECT_EQ(s.bad_lines, 1);
}

}  // namespace
}  // namespace trident::data
