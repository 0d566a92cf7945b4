// Mapping parameters and optimizer moments to checkpoint pieces; save and resume.
#include "trident/train/checkpoint/checkpointer.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"
#include "trident/core/timer.hpp"
#include "trident/dist/agreement.hpp"
#include "trident/dist/mpi_session.hpp"

namespace trident::train {

namespace fs = std::filesystem;

namespace {

// The stored (global) shape: vocabulary padding rows are not part of the checkpoint, so any tp
// loads it.
Shape stored_shape(const model::Parameter& p) {
  Shape s = p.spec.global_shape;
  if (p.spec.init_rows >= 0 && s.ndim() == 2) s[0] = std::min<int64_t>(s[0], p.spec.init_rows);
  return s;
}

// A piece of parameter p covering its local elements [begin, end), with data as the values.
io::ShardPiece piece_of(const model::Parameter& p, const std::string& dataset, int64_t begin, int64_t end,
                        const Tensor& data, bool write) {
  io::ShardPiece piece;
  piece.dataset = dataset;
  piece.begin = begin;
  piece.end = end;
  piece.data = data;
  piece.write = write;
  const Shape& local = p.local_shape;
  if (local.ndim() == 1) {
    piece.local_cols = local[0];
    piece.col0 = p.spec.split_dim == 0 ? int64_t(p.spec.split_index) * local[0] : 0;
    piece.stored_rows = 1;
  } else {
    piece.local_cols = local[1];
    piece.row0 = p.spec.split_dim == 0 ? int64_t(p.spec.split_index) * local[0] : 0;
    piece.col0 = p.spec.split_dim == 1 ? int64_t(p.spec.split_index) * local[1] : 0;
    piece.stored_rows = stored_shape(p)[0];
  }
  return piece;
}

}  // namespace

Checkpointer::Checkpointer(const RunConfig& cfg, dist::Topology& topology, model::GPTModel& model, Ops& ops,
                           const Logger& log, AdamW* optimizer, RunHooks* hooks)
    : cfg_(cfg),
      topology_(topology),
      model_(model),
      ops_(ops),
      log_(log),
      optimizer_(optimizer),
      hooks_(hooks),
      key_(cfg.security.key ? &*cfg.security.key : nullptr),
      directory_(cfg.checkpoint.dir.empty() ? (fs::path(cfg.log.run_dir) / "checkpoints").string()
                                            : cfg.checkpoint.dir) {
  datasets_ = io::gather_datasets(topology.world().comm(), my_datasets());
  if (cfg.checkpoint.async) writer_ = std::make_unique<BackgroundWriter>(topology.world());
  if (keeps_snapshot()) allocate_snapshot();
  if (!cfg.checkpoint.local_dir.empty() && optimizer_)
    local_ = std::make_unique<LocalTier>(cfg.checkpoint.local_dir, cfg.checkpoint.local_replicas > 0,
                                         directory_.path(), local_key(), key_, topology, log);
}

std::string Checkpointer::local_key() const {
  // Everything that decides what a rank holds: another value, another layout of the state.
  const dist::Layout& L = topology_.layout();
  std::string text = detail::concat("world ", topology_.world_size(), " dp ", L.dp, " tp ", L.tp, " pp ", L.pp, " ep ",
                                    L.ep, " zero ", cfg_.zero, " comm ", dist::compression_name(compression_),
                                    " hierarchical ", int(cfg_.comm.hierarchical), " partition ",
                                    partition_name(cfg_.partition), " chunks ", cfg_.chunks_per_rank());
  for (const auto& [name, shape] : datasets_) {
    text += '\n';
    text += name;
    for (int i = 0; i < shape.ndim(); ++i) text += detail::concat(' ', shape[i]);
  }
  char key[24];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(rng_key(0, text)));
  return key;
}

bool Checkpointer::stage_through_host() const { return model_.params().flat_values().device() != Device::kCPU; }

void Checkpointer::allocate_snapshot() {
  // Host buffers, allocated once: the flat parameters, this rank's moments, staged frozen values.
  const model::ParamStore& store = model_.params();
  const DType dtype = store.flat_values().dtype();
  snapshot_values_ = Tensor::zeros(store.flat_values().shape(), dtype);
  int64_t total = 0;
  for (size_t i = 0; optimizer_ && i < optimizer_->segments().size(); ++i) {
    moment_offsets_.push_back(total);
    total += optimizer_->exp_avg(i).numel();
  }
  snapshot_exp_avg_ = Tensor::zeros(Shape{std::max<int64_t>(total, 1)}, dtype);
  snapshot_exp_avg_sq_ = Tensor::zeros(Shape{std::max<int64_t>(total, 1)}, dtype);
  if (stage_through_host() && store.frozen_numel() > 0)
    snapshot_frozen_ = Tensor::zeros(Shape{store.frozen_numel()}, dtype);
}

Checkpointer::~Checkpointer() {
  // The writer joins first (its collectives finish on every rank): a write in flight uses local_,
  // which as a later member would otherwise go first (a rank failing while its writer thread
  // saved a local step crashed in LocalTier::save).
  writer_.reset();
}

std::map<std::string, Shape> Checkpointer::my_datasets() const {
  std::map<std::string, Shape> out;
  for (const auto& p : const_cast<model::GPTModel&>(model_).params().all()) {
    const Shape s = stored_shape(*p);
    out["/model/" + p->spec.name] = s;
    if (!p->trainable() || !optimizer_) continue;  // frozen: no optimizer state
    out["/optim/exp_avg/" + p->spec.name] = s;
    out["/optim/exp_avg_sq/" + p->spec.name] = s;
  }
  if (compressor_) out[comm_dataset()] = Shape{compressor_->state().numel()};
  return out;
}

void Checkpointer::set_compressor(dist::GradCompressor* compressor, dist::CompressionKind kind) {
  compressor_ = compressor;
  compression_ = kind;
  datasets_ = io::gather_datasets(topology_.world().comm(), my_datasets());
  if (compressor_ && keeps_snapshot()) snapshot_comm_ = Tensor::zeros(compressor_->state().shape(), DType::kF32);
  if (local_) local_->set_key(local_key());
}

std::string Checkpointer::comm_dataset() const {
  char name[40];
  std::snprintf(name, sizeof name, "/comm/state/rank_%05d", topology_.world_rank());
  return name;
}

io::ShardPiece Checkpointer::comm_piece(const Tensor& data) const {
  io::ShardPiece piece;
  piece.dataset = comm_dataset();
  piece.end = piece.local_cols = data.numel();
  piece.stored_rows = 1;
  piece.data = data;
  return piece;
}

bool Checkpointer::comm_state_resumable(const std::string& path) const {
  const io::CheckpointListing listing = io::list_checkpoint(path);
  const auto& n = listing.attributes.numbers;
  const auto& t = listing.attributes.texts;
  const dist::Layout& L = topology_.layout();
  auto same = [&](const char* key, double v) { return n.count(key) && n.at(key) == v; };
  bool ok = t.count("comm_compression") && t.at("comm_compression") == dist::compression_name(compression_) &&
            same("layout_dp", L.dp) && same("layout_tp", L.tp) && same("layout_pp", L.pp) && same("layout_zero", cfg_.zero);
  for (const auto& [name, shape] : datasets_)
    if (name.rfind("/comm/", 0) == 0) ok = ok && listing.datasets.count(name) && listing.datasets.at(name) == shape;
  return ok;
}

std::vector<io::ShardPiece> Checkpointer::live_pieces() {
  std::vector<io::ShardPiece> out =
      pieces([](const model::Parameter& p) { return p.value.flat(); },
             [&](size_t i, bool second) { return second ? optimizer_->exp_avg_sq(i) : optimizer_->exp_avg(i); });
  if (compressor_) out.push_back(comm_piece(compressor_->state()));
  return out;
}

Tensor Checkpointer::snapshot_value(const model::Parameter& p) const {
  const int64_t n = p.local_shape.numel();
  if (p.trainable()) return snapshot_values_.narrow(p.offset, p.offset + n);
  return stage_through_host() ? snapshot_frozen_.narrow(p.offset, p.offset + n) : p.value.flat();
}

Tensor Checkpointer::snapshot_moment(size_t i, bool second) const {
  const Tensor& buffer = second ? snapshot_exp_avg_sq_ : snapshot_exp_avg_;
  return buffer.narrow(moment_offsets_[i], moment_offsets_[i] + optimizer_->exp_avg(i).numel());
}

std::vector<io::ShardPiece> Checkpointer::snapshot_pieces() {
  std::vector<io::ShardPiece> out =
      pieces([&](const model::Parameter& p) { return snapshot_value(p); },
             [&](size_t i, bool second) { return optimizer_->active(i) ? snapshot_moment(i, second) : Tensor(); });
  if (compressor_) out.push_back(comm_piece(snapshot_comm_));
  return out;
}

std::vector<io::ShardPiece> Checkpointer::snapshot() {
  Tensor values = snapshot_values_;  // Ops::copy writes through a handle; this one shares the buffer
  ops_.copy(model_.params().flat_values(), values);
  for (size_t i = 0; i < optimizer_->segments().size(); ++i) {
    if (!optimizer_->active(i)) continue;  // idle under LISA
    Tensor exp_avg = snapshot_moment(i, false), exp_avg_sq = snapshot_moment(i, true);
    ops_.copy(optimizer_->exp_avg(i), exp_avg);
    ops_.copy(optimizer_->exp_avg_sq(i), exp_avg_sq);
  }
  if (compressor_) ops_.copy(compressor_->state(), snapshot_comm_);
  if (snapshot_frozen_.defined() && !snapshot_frozen_current_) {
    for (const auto& p : model_.params().all()) {
      if (p->trainable()) continue;
      Tensor frozen = snapshot_value(*p);
      ops_.copy(p->value.flat(), frozen);
    }
    snapshot_frozen_current_ = true;
  }
  return snapshot_pieces();
}

Tensor Checkpointer::zero_moments(int64_t n) {
  if (!zeros_.defined() || zeros_.numel() < n) zeros_ = Tensor::zeros(Shape{n}, model_.params().flat_values().dtype());
  return zeros_.narrow(0, n);
}

std::vector<io::ShardPiece> Checkpointer::pieces(const std::function<Tensor(const model::Parameter&)>& value,
                                                 const std::function<Tensor(size_t, bool)>& moment) {
  // Replicas: one rank of each group writes. Data-parallel replicas: dp rank 0 (every dp rank
  // for ZeRO-1 moments, which it alone holds); tensor-parallel replicas: tp rank 0; the tied
  // table's copy on the last pipeline stage: never (the first stage writes it).
  // Experts (expert parallelism) are replicated over the expert-data-parallel group only: its
  // rank 0 writes them, and ZeRO-1 shards their moments over it.
  const bool dp_writer = topology_.dp_rank() == 0, tp_writer = topology_.tp_rank() == 0;
  const bool expert_writer = topology_.edp_rank() == 0;
  const bool sharded_moments = cfg_.zero == 1 && topology_.layout().dp > 1;
  const bool sharded_expert_moments = cfg_.zero == 1 && topology_.edp().size() > 1;
  std::vector<io::ShardPiece> out;
  model::ParamStore& store = model_.params();
  for (const auto& p : store.all()) {
    const bool owner = p->spec.counted_in_norm && (p->spec.split_dim >= 0 || tp_writer);
    const bool writer = p->spec.expert ? expert_writer : dp_writer;
    out.push_back(piece_of(*p, "/model/" + p->spec.name, 0, p->local_shape.numel(), value(*p), owner && writer));
  }
  if (!optimizer_) return out;  // weights only
  const auto& segments = optimizer_->segments();
  for (size_t i = 0; i < segments.size(); ++i) {
    const OptimSegment& s = segments[i];
    for (const auto& p : store.all()) {
      const int64_t lo = s.begin - p->offset, hi = s.end - p->offset;
      if (!p->trainable() || lo < 0 || hi > p->local_shape.numel()) continue;
      const bool owner = p->spec.counted_in_norm && (p->spec.split_dim >= 0 || tp_writer);
      const bool write = owner && (p->spec.expert ? sharded_expert_moments || expert_writer
                                                  : sharded_moments || dp_writer);
      // Idle under LISA: no moments; zeros are written (one shared read-only buffer).
      auto or_zeros = [&](Tensor m) { return m.defined() ? m : zero_moments(s.end - s.begin); };
      out.push_back(piece_of(*p, "/optim/exp_avg/" + p->spec.name, lo, hi, or_zeros(moment(i, false)), write));
      out.push_back(piece_of(*p, "/optim/exp_avg_sq/" + p->spec.name, lo, hi, or_zeros(moment(i, true)), write));
      break;
    }
  }
  return out;
}

io::CheckpointAttributes Checkpointer::attributes(int64_t steps_done, const RunScalars& scalars) const {
  io::CheckpointAttributes attrs;
  const dist::Layout& L = topology_.layout();
  attrs.numbers = {{"step", double(steps_done)},
                   {"tokens", scalars.tokens > 0 ? scalars.tokens
                                                 : double(steps_done) * cfg_.train.global_batch * cfg_.model.seq_len},
                   {"sampler_step", double(steps_done)},  // the data order is a function of (seed, step)
                   {"seed", double(cfg_.train.seed)},     // and so are initialisation and dropout masks
                   {"loss_scale", scalars.loss_scale > 0 ? scalars.loss_scale : 1.0},
                   {"elapsed_s", scalars.elapsed_s},
                   {"layout_dp", double(L.dp)},
                   {"layout_tp", double(L.tp)},
                   {"layout_pp", double(L.pp)},
                   {"layout_zero", double(cfg_.zero)}};
  for (const auto& [name, value] : scalars.privacy) attrs.numbers[name] = value;
  for (const auto& [name, value] : scalars.data) attrs.numbers[name] = value;
  attrs.texts = {{"config", cfg_.resolved_ini}};
  if (!scalars.data_mix.empty()) attrs.texts["data_mix"] = scalars.data_mix;
  if (compressor_) attrs.texts["comm_compression"] = dist::compression_name(compression_);
  return attrs;
}

void Checkpointer::write(int64_t steps_done, MPI_Comm comm, const std::vector<io::ShardPiece>& pieces,
                         const io::CheckpointAttributes& attributes) {
  Stopwatch watch;
  const std::string path = directory_.file(steps_done);
  const dist::WatchdogPhase phase(topology_.watchdog(), "writing checkpoint " + path);
  io::write_checkpoint(path, comm, datasets_, pieces, attributes, key_, [&] {
    if (hooks_) hooks_->checkpoint_written(path);
  });
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::exception_ptr error;
  if (rank == 0) {
    try {
      directory_.publish(steps_done, cfg_.checkpoint.keep);  // only after the file is complete
    } catch (...) {
      error = std::current_exception();
    }
  }
  dist::throw_if_any_failed(comm, error);
  last_write_s_ = watch.seconds();
}

std::exception_ptr Checkpointer::finish_background_write() { return writer_ ? writer_->finish() : nullptr; }

double Checkpointer::save(int64_t steps_done, const RunScalars& scalars) {
  TRIDENT_CHECK(optimizer_, "Checkpointer::save needs the optimizer");
  Stopwatch stall;
  // The previous asynchronous write's failure is reported after this save, which goes ahead.
  const std::exception_ptr earlier = finish_background_write();
  std::exception_ptr error;
  if (topology_.world_rank() == 0) {
    try {
      directory_.create();
    } catch (...) {
      error = std::current_exception();
    }
  }
  dist::throw_if_any_failed(topology_.world().comm(), error);
  io::CheckpointAttributes attrs = attributes(steps_done, scalars);
  if (!writer_) {
    write(steps_done, topology_.world().comm(), stage_through_host() ? snapshot() : live_pieces(), attrs);
  } else {  // snapshot the state, then write it in the background while training goes on
    writer_->start([this, steps_done, staged = snapshot(), attrs = std::move(attrs)](MPI_Comm comm) {
      write(steps_done, comm, staged, attrs);
    });
  }
  if (earlier) std::rethrow_exception(earlier);
  return stall.seconds();
}

double Checkpointer::save_local(int64_t steps_done, const RunScalars& scalars) {
  TRIDENT_CHECK(local_ && optimizer_, "Checkpointer::save_local needs checkpoint.local_dir and the optimizer");
  Stopwatch stall;
  // Asynchronous mode: snapshot, then write in the background (after the previous write, global
  // or local, which may still be reading the snapshot buffers); staged state likewise goes
  // through the snapshot.
  const bool staged = writer_ || stage_through_host();
  const std::exception_ptr earlier = finish_background_write();
  if (staged) snapshot();
  std::vector<io::LocalPiece> pieces = local_pieces(staged);
  io::CheckpointAttributes attrs = attributes(steps_done, scalars);
  attrs.numbers["format_version"] = io::kPlainFormatVersion;  // of the attributes (the file's own: its header)
  if (!writer_) {
    local_->save(steps_done, std::move(attrs), pieces, topology_.world().comm());
  } else {
    writer_->start([this, steps_done, attrs = std::move(attrs), pieces = std::move(pieces)](MPI_Comm comm) {
      local_->save(steps_done, attrs, pieces, comm);
    });
  }
  if (earlier) std::rethrow_exception(earlier);
  return stall.seconds();
}

void Checkpointer::wait() {
  if (const std::exception_ptr error = finish_background_write()) std::rethrow_exception(error);
}

io::CheckpointAttributes Checkpointer::read(const std::string& path,
                                            const std::function<bool(const std::string&)>& wanted) {
  std::map<std::string, Shape> expected = datasets_;
  std::erase_if(expected, [&](const auto& d) { return !wanted(d.first); });
  auto select = [&](std::vector<io::ShardPiece> all) {
    std::erase_if(all, [&](const io::ShardPiece& p) { return !wanted(p.dataset); });
    return all;
  };
  std::vector<io::ShardPiece> live = select(live_pieces());
  if (!stage_through_host()) return io::read_checkpoint(path, topology_.world().comm(), expected, live, key_);
  // The same pieces in the same order, in host memory: read there, then copied up one by one.
  std::vector<io::ShardPiece> staged = select(snapshot_pieces());
  io::CheckpointAttributes attributes = io::read_checkpoint(path, topology_.world().comm(), expected, staged, key_);
  copy_up(staged, live);
  return attributes;
}

void Checkpointer::copy_up(const std::vector<io::ShardPiece>& staged, const std::vector<io::ShardPiece>& live) {
  for (size_t i = 0; i < live.size(); ++i) {
    TRIDENT_CHECK(staged[i].dataset == live[i].dataset && staged[i].begin == live[i].begin,
                  "checkpoint staging: piece ", i, " is ", staged[i].dataset, " on the host but ", live[i].dataset);
    Tensor target = live[i].data;
    ops_.copy(staged[i].data, target);
  }
  snapshot_frozen_current_ = false;  // the next save copies the loaded frozen values down again
}

int64_t Checkpointer::load_model(const std::string& path, bool adapters) {
  const io::CheckpointAttributes attributes = read(path, [adapters](const std::string& name) {
    return name.rfind("/model/", 0) == 0 && (adapters || name.find(".lora_") == std::string::npos);
  });
  return io::checkpoint_state(attributes, path).step;
}

std::string Checkpointer::load_first(const std::function<void(const std::string&)>& load) {
  const std::vector<std::string> candidates = directory_.resume_candidates(cfg_.checkpoint.resume);
  for (size_t i = 0; i < candidates.size(); ++i) {
    try {
      load(candidates[i]);  // collective; its failures are every rank's
      return candidates[i];
    } catch (const io::CheckpointKeyError&) {
      throw;  // no older checkpoint opens without the key either
    } catch (const ConfigError& e) {
      if (cfg_.checkpoint.resume != "auto") throw;
      log_.warn("checkpoint.resume = auto: skipping ", candidates[i], ": ", e.what(),
                i + 1 < candidates.size() ? "; trying the next older one" : "");
    }
  }
  TRIDENT_CONFIG_CHECK(candidates.empty(), "checkpoint.resume = auto: none of the ", candidates.size(),
                       " checkpoints in ", directory_.path(), " is intact (see the warnings above); give checkpoint.resume = "
                       "PATH, or none to start afresh");
  return "";
}

int64_t Checkpointer::load_resume_model(bool adapters, std::string* path) {
  int64_t step = 0;
  *path = load_first([&](const std::string& p) { step = load_model(p, adapters); });
  return step;
}

Resumed Checkpointer::resume() {
  TRIDENT_CHECK(optimizer_, "Checkpointer::resume needs the optimizer");
  if (local_ && cfg_.checkpoint.resume == "auto")
    if (Resumed local = resume_local(); local.step > 0) return local;
  io::CheckpointState state;
  const std::string path = load_first([&](const std::string& p) { state = load_training_state(p); });
  if (path.empty()) return {};  // nothing to resume: a fresh run
  log_.info("resumed from ", path, ": ", state.step, " steps done (written by dp ", state.layout_dp, " tp ",
            state.layout_tp, " pp ", state.layout_pp, ")");
  return restored(state);
}

Resumed Checkpointer::resume_local() {
  // The global tier's newest step, as rank 0 sees the shared directory.
  double global = 0;
  if (topology_.world_rank() == 0) {
    const std::vector<std::string> candidates = directory_.resume_candidates(cfg_.checkpoint.resume);
    if (!candidates.empty()) global = std::stod(fs::path(candidates.front()).filename().string().substr(5, 8));
  }
  topology_.world().broadcast(&global, sizeof global, 0);
  int64_t seen = -1;
  const std::vector<int64_t> steps = local_->complete_steps(int64_t(global), &seen);
  if (steps.empty() && seen > 0)
    log_.info("local tier: step ", seen, " is not complete on every rank (a node lost without its copies?); the ",
              "global tier resumes");
  for (const int64_t step : steps) {
    std::exception_ptr error;
    std::string path;
    try {
      path = local_->restore(step);  // collective; fails on every rank together
      int key_error = 0;
      try {
        io::verify_local_state(path, local_pieces(stage_through_host()), key_);
      } catch (const io::CheckpointKeyError&) {
        error = std::current_exception();
        key_error = 1;
      } catch (...) {  // a corrupt file, or an I/O or OpenSSL failure: agreed on below, never one rank's alone
        error = std::current_exception();
      }
      // No key, or another key: not a corrupt file to skip (the global tier needs the key too, and
      // a fresh start would prune these files): every rank stops with a CheckpointKeyError.
      MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &key_error, 1, MPI_INT, MPI_MAX, topology_.world().comm()));
      if (key_error) {
        try {
          dist::throw_if_any_failed(topology_.world().comm(), error);
        } catch (const ConfigError& e) {
          throw io::CheckpointKeyError(e.what());
        }
      }
      dist::throw_if_any_failed(topology_.world().comm(), error);
    } catch (const io::CheckpointKeyError&) {
      throw;
    } catch (const std::exception& e) {
      if (topology_.world_rank() == 0)
        log_.warn("local checkpoint of step ", step, " not resumed: ", e.what(), "; trying the next older one");
      continue;
    }
    // Every rank's file is intact: only now does any tensor change (a failure here is an I/O
    // error mid-read, which ends the run rather than resume from mixed state).
    const io::CheckpointState state = load_local(path);
    log_.info("resumed from the local tier (", cfg_.checkpoint.local_dir, "): ", state.step, " steps done",
              global > 0 ? detail::concat("; the global tier's newest has ", int64_t(global)) : std::string());
    return restored(state);
  }
  return {};
}

std::vector<io::LocalPiece> Checkpointer::local_pieces(bool snapshot_buffers) {
  std::vector<io::LocalPiece> pieces;
  for (const io::ShardPiece& p : snapshot_buffers ? snapshot_pieces() : live_pieces())
    pieces.push_back({p.dataset, p.begin, p.data});
  return pieces;
}

io::CheckpointState Checkpointer::load_local(const std::string& path) {
  io::CheckpointAttributes attrs;
  try {
    attrs = io::read_local_state(path, local_pieces(stage_through_host()), key_);
  } catch (const ConfigError& e) {
    throw Error(detail::concat("local checkpoint: ", e.what(), " while loading a verified file"));
  }
  if (stage_through_host()) copy_up(snapshot_pieces(), live_pieces());
  return io::checkpoint_state(attrs, path);
}

Resumed Checkpointer::restored(const io::CheckpointState& state) {
  optimizer_->set_steps_taken(state.step);
  return {state.step, {state.loss_scale, state.elapsed_s, double(state.tokens), state.privacy, state.data, state.data_mix}};
}

io::CheckpointState Checkpointer::load_training_state(const std::string& path) {
  const bool comm_resumable = !compressor_ || comm_state_resumable(path);
  const io::CheckpointState state = io::checkpoint_state(
      read(path, [&](const std::string& name) { return comm_resumable || name.rfind("/comm/", 0) != 0; }), path);
  if (!comm_resumable) {
    // Another layout or compression wrote it: the residuals belong to other ranks' gradients.
    compressor_->reset_state();
    log_.info("warning: ", path, " holds no gradient-compression state for this layout and comm.compression; ",
              "error-feedback residuals start at zero");
  }
  return state;
}

}  // namespace trident::train
