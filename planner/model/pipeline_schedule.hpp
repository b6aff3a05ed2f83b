#pragma once
#include <cstdint>
#include <vector>

/// The pipeline schedule a plan runs: 1F1B, interleaved when each stage
/// holds several model chunks (Narayanan et al. 2021, section 2.2, as
/// Megatron-LM's forward_backward_pipelining_with_interleaving orders it).
/// A pure function of (stages, chunks per stage, micro-batches); the cost
/// model's bubble, the generated skeleton's step and its `--dry-run
/// --schedule` listing all come from it.
namespace dtplan::planner {

enum class pipe_pass { forward, backward };

/// One forward or backward of one model chunk for one micro-batch on one
/// stage. Model chunk `chunk * stages + stage` is the chunk's place in the
/// whole model: forward activations go to the next one (the next stage,
/// and from the last stage to stage 0 with interleaving), backward
/// gradients to the previous one.
struct pipe_op {
  pipe_pass pass = pipe_pass::forward;
  std::int64_t micro_batch = 0;
  std::int64_t chunk = 0;        ///< this stage's chunk, 0 .. virtual_stages - 1
  std::int64_t recv_from = -1;   ///< stage whose result this op needs first; -1: none (model input or loss)
  std::int64_t send_to = -1;     ///< stage this op's result goes to; -1: none
  /// When the op runs in the schedule's own time, forward 1 and backward 2
  /// units per chunk, transfers free: the order every stage agrees on for
  /// its point-to-point calls, and the count of the bubble.
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::int64_t recv_time = 0;    ///< when the needed result is sent (the producer's end); 0 without recv_from
  friend bool operator==(pipe_op const&, pipe_op const&) = default;
};

/// One point-to-point call of a stage: the send of op `op`'s result to
/// `peer`, or the receive of its input from `peer`.
struct pipe_transfer {
  bool send = false;
  std::int64_t op = 0;    ///< index into the stage's ops
  std::int64_t peer = 0;  ///< stage
  std::int64_t time = 0;  ///< when the producer finishes (the message's place in every stage's order)
  friend bool operator==(pipe_transfer const&, pipe_transfer const&) = default;
};

/// What a stage issues, in order: an op on the compute stream, or a group of
/// transfers (one ncclGroupStart/End) on the point-to-point stream.
struct pipe_step {
  bool compute = true;
  std::int64_t op = 0;                   ///< for compute
  std::vector<pipe_transfer> transfers;  ///< for a transfer group
};

struct pipeline_schedule {
  std::int64_t stages = 1;
  std::int64_t virtual_stages = 1;  ///< model chunks per stage
  std::int64_t micro_batches = 1;
  std::vector<std::vector<pipe_op>> ops;  ///< [stage], in the order the stage runs them
  std::int64_t makespan = 0;              ///< end of the last op, in the schedule's time units
  std::int64_t idle = 0;                  ///< time each stage waits: makespan minus its own ops (the same on every stage)

  /// Ops per stage: a forward and a backward of each chunk for each micro-batch.
  [[nodiscard]] std::int64_t slots() const { return 2 * micro_batches * virtual_stages; }
  /// Forwards stage `stage` runs before its first backward.
  [[nodiscard]] std::int64_t warmup(std::int64_t stage) const;
  /// Backwards stage `stage` runs after its last forward.
  [[nodiscard]] std::int64_t cooldown(std::int64_t stage) const;
  /// The bubble in forward+backward pairs of one chunk: idle / (1 + 2), stages - 1.
  [[nodiscard]] std::int64_t bubble_pairs() const { return idle / 3; }
  /// The bubble as a share of one micro-batch's forward and backward through
  /// a stage: (stages - 1) / virtual_stages, the cost model's bubble.
  [[nodiscard]] double bubble_micro_batches() const {
    return static_cast<double>(bubble_pairs()) / static_cast<double>(virtual_stages);
  }
  /// Sends of activations (forward) and of their gradients (backward) stage `stage` issues.
  [[nodiscard]] std::int64_t forward_sends(std::int64_t stage) const;
  [[nodiscard]] std::int64_t backward_sends(std::int64_t stage) const;
  /// Sends of every stage together.
  [[nodiscard]] std::int64_t sends() const;
};

/// The 1F1B schedule of `micro_batches` over `stages` stages of
/// `virtual_stages` chunks each: warm-up forwards, then one forward and one
/// backward at a time, then cool-down backwards. Warm-up is stages - stage - 1
/// forwards without interleaving; with it, Megatron's (stages - stage - 1) x 2
/// + (virtual_stages - 1) x stages chunk forwards (all of them when
/// micro_batches == stages), micro-batches taken in groups of `stages`.
/// Interleaving needs micro_batches to be a multiple of stages (the check's
/// rule). All arguments >= 1.
pipeline_schedule one_f_one_b(std::int64_t stages, std::int64_t virtual_stages, std::int64_t micro_batches);

/// The figures of one_f_one_b(stages, virtual_stages, micro_batches) that a
/// generated program checks its own schedule against, without building the
/// schedule: O(stages) memory and time, where the schedule is O(stages x
/// micro_batches x virtual_stages) (10^9 micro-batches per step would be
/// 256 GB of ops). Equal to the schedule's own figures (a test compares them
/// over many pipelines); a figure past 2^63 - 1, for a schedule of more than
/// 2^61 ops that no program could hold, saturates there.
struct schedule_counts {
  std::int64_t stages = 1;
  std::int64_t virtual_stages = 1;
  std::int64_t micro_batches = 1;
  std::int64_t slots = 0;         ///< pipeline_schedule::slots()
  std::int64_t makespan = 0;      ///< pipeline_schedule::makespan
  std::int64_t idle = 0;          ///< pipeline_schedule::idle
  std::int64_t bubble_pairs = 0;  ///< pipeline_schedule::bubble_pairs()
  std::int64_t sends = 0;         ///< pipeline_schedule::sends()
  /// Per stage: pipeline_schedule::warmup, cooldown, forward_sends and backward_sends.
  std::vector<std::int64_t> warmup, cooldown, forward_sends, backward_sends;
};
/// The counts of one_f_one_b(stages, virtual_stages, micro_batches), whose
/// preconditions they share.
schedule_counts counts_of(std::int64_t stages, std::int64_t virtual_stages, std::int64_t micro_batches);

/// The order stage `stage` issues its ops and transfers in: every receive
/// before the op that needs it, every send after the op that makes it, and
/// the transfers of all stages in one global order (producer's end, then
/// direction, micro-batch and model chunk), grouped when they fall at the same
/// time. Issued so, blocking NCCL sends and receives cannot deadlock: the
/// earliest unfinished transfer always has both of its ends ready.
std::vector<pipe_step> issue_order(pipeline_schedule const& s, std::int64_t stage);

}  // namespace dtplan::planner
