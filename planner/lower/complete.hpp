#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "planner/ir/ir.hpp"
#include "planner/ir/keys.hpp"

/// What makes a block whole once its keys are set, shared by lowering and
/// the C++ API so both say the same words: the required keys of the key
/// table, the derived defaults (kv_heads = heads, ffn = 4 x hidden, the fp8
/// and fp32 peaks, a cluster's links from its gpu) and the rules between
/// keys (hidden a multiple of heads, reserved below memory, sizes dtplan
/// plans).
namespace dtplan::planner {

/// A rule a block breaks. Lowering reports `message` at `key`, or at
/// `other` when only that one was written in the user's file, or at the
/// block's header when neither was (or `key` is empty); the C++ API throws
/// the first problem's message.
struct block_problem {
  std::string message;
  std::string_view key;
  std::string_view other;
};

/// The block's required keys (the key table's) that `present` lacks, as one
/// problem: "model 'm' is missing required keys 'hidden' and 'vocab'".
std::vector<block_problem> missing_keys(block_kind k, key_spans const& present, std::string const& called);

/// `called` is how messages name the block ("model 'm'"). Each returns the
/// problems in the order lowering reports them; when a required key is
/// missing that is the only one.
std::vector<block_problem> complete(model& m, std::string const& called);
std::vector<block_problem> complete(gpu& g, std::string const& called);
/// After the cluster's gpu is known (`c.device`).
std::vector<block_problem> complete(cluster& c, std::string const& called);
std::vector<block_problem> complete(training& t, std::string const& called);
std::vector<block_problem> complete(framework& f, std::string const& called);

/// The run's behaviours from its framework: each behaviour key (the key
/// table's `behaviour` rows) the training block does not write (`t.keys`)
/// takes `f`'s value, and `t.framework` names `f`.
void use_framework(training& t, framework const& f);
/// `attention_backend = auto` resolved for `g`'s generation
/// (resolved_attention); any other kernel is left as it is.
void resolve_auto(training& t, gpu const& g);

}  // namespace dtplan::planner
