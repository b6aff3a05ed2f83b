// Every key an exported job writes exists in the framework's own source at
// the recorded version, with a value of its type: the records in
// tests/data/framework_keys/ name the repository, version, commit and the
// file (and line) each key comes from. The jobs are those of every plan of
// plans/ and its variants (framework_jobs.hpp), and the launch lines.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "codegen/framework_export.hpp"
#include "dsl/config/config.hpp"
#include "framework_jobs.hpp"

using namespace dtplan;
using json = nlohmann::json;
using dsl::config::value;

namespace {

json record(planner::job_format f) {
  std::ifstream in(fmt::format("{}/tests/data/framework_keys/{}.json", DTPLAN_SOURCE_DIR, planner::name(f)));
  REQUIRE(in);
  return json::parse(in);
}

bool whole(std::string const& w) {
  if (w.empty()) return false;
  std::size_t i = w[0] == '-' ? 1 : 0;
  return i < w.size() && w.find_first_not_of("0123456789", i) == std::string::npos;
}

bool number(std::string const& w) {
  char* end = nullptr;
  std::strtod(w.c_str(), &end);
  return !w.empty() && end == w.c_str() + w.size();
}

// Why `e` does not fit its row of the record, or "".
std::string misfit(json const& keys, dsl::config::entry const& e, dsl::config::document::syntax syntax) {
  if (!keys.contains(e.key)) return "not a key of the record";
  auto const& row = keys.at(e.key);
  auto const type = row.at("type").get<std::string>();
  std::set<std::string> choices;
  if (row.contains("choices"))
    for (auto const& c : row.at("choices")) choices.insert(c.is_string() ? c.get<std::string>() : c.dump());
  auto in_choices = [&](std::string const& v) { return choices.empty() || choices.count(v); };
  using kind = value::kind;
  if (syntax == dsl::config::document::syntax::arguments) {
    if (type == "flag") return e.val ? "a flag written with a value" : "";
    if (!e.val) return "a " + type + " option written without a value";
    if (e.val->unexpanded || row.contains("nargs")) return "";  // the shell's, or several words
    if (e.val->k == kind::array) return "several words for one " + type;
    auto const& w = e.val->text;
    if (type == "int") return whole(w) ? "" : "'" + w + "' is not an int";
    if (type == "float") return number(w) ? "" : "'" + w + "' is not a float";
    return in_choices(w) ? "" : "'" + w + "' is not one of its choices";
  }
  auto const& v = *e.val;
  if (type == "int") return v.k == kind::integer && in_choices(v.text) ? "" : "not an int of its choices";
  if (type == "float") return v.k == kind::integer || v.k == kind::real ? "" : "not a float";
  if (type == "bool") return v.k == kind::boolean ? "" : "not a bool";
  if (type == "str") return v.k == kind::string && in_choices(v.text) ? "" : "not a str of its choices";
  if (type == "list[str]") {
    if (v.k != kind::array) return "not a list";
    for (auto const& item : v.items)
      if (item.k != kind::string || !in_choices(item.text)) return "an item is not a str of its choices";
    return "";
  }
  return "a type the test does not know: " + type;
}

// The launcher's command in a launch script: from `exec` to the end of the
// command (line continuations joined).
std::string launch_command(std::string const& script) {
  auto at = script.find("\nexec ");
  REQUIRE(at != std::string::npos);
  return script.substr(at + 6);
}

}  // namespace

TEST_CASE("every key of every exported job is in the framework's source at the recorded version") {
  std::map<planner::job_format, json> records;
  for (auto f : planner::job_formats) records[f] = record(f);
  CHECK(records[planner::job_format::torchtitan]["version"] == "v0.2.0");
  CHECK(records[planner::job_format::torchtitan]["commit"] == "29624e37fa6dd319fd671b009338651b5c665da2");
  CHECK(records[planner::job_format::megatron]["version"] == "core_v0.13.0");
  CHECK(records[planner::job_format::megatron]["commit"] == "c550cf6c41c31cd3ec72e05c25ea0c979f2b6631");
  CHECK(records[planner::job_format::deepspeed]["version"] == "v0.17.5");
  CHECK(records[planner::job_format::deepspeed]["commit"] == "047a7599d24622dfb37fa5e5a32c671b1bb44233");

  std::map<std::string, std::set<std::string>> written;  // file -> keys seen
  int jobs = 0;
  for (auto const& c : test::framework_cases()) {
    if (!c.plan.valid || codegen::export_refusal(c.format, *c.program, c.plan)) continue;
    dsl::diagnostics warnings;
    auto files = codegen::export_job(c.format, *c.program, c.plan, warnings);
    ++jobs;
    auto const& rec = records[c.format]["files"];
    for (auto const& file : files) {
      INFO(c.label << " " << file.name);
      REQUIRE(rec.contains(file.name));
      auto const& keys = rec.at(file.name).at("keys");
      dsl::source_manager sources;
      dsl::diagnostics diags;
      std::optional<dsl::config::document> doc;
      if (file.name == "job.toml") {
        doc = dsl::config::read_toml(sources, sources.add(file.name, file.text), diags);
      } else if (file.name == "ds_config.json") {
        doc = dsl::config::read_json(sources, sources.add(file.name, file.text), diags);
      } else if (file.name == "args.txt") {
        doc = dsl::config::read_arguments(sources, sources.add(file.name, file.text), diags);
      } else {
        doc = dsl::config::read_arguments(sources, sources.add(file.name, launch_command(file.text)), diags);
      }
      INFO(dsl::format(diags, sources));
      REQUIRE(doc);
      // A launch line's options before the script are the launcher's; after
      // it, the script's (checked against args.txt's record).
      auto const& options = file.name == "launch.sh" && !doc->launcher.empty() ? doc->launcher : doc->entries;
      for (auto const& e : options) {
        INFO(e.key);
        if (file.name == "launch.sh" && (e.key == "-m" || e.key == "--module")) continue;  // its value is the module
        if (file.name == "launch.sh" && rec.at(file.name).contains("script_arguments") &&
            rec.at(file.name).at("script_arguments").contains(e.key))
          continue;
        CHECK(misfit(keys, e, doc->format) == "");
        written[std::string(planner::name(c.format)) + "/" + file.name].insert(e.key);
      }
      if (file.name == "launch.sh" && !doc->launcher.empty())
        for (auto const& e : doc->entries) {
          INFO(e.key);
          CHECK(rec.at("args.txt").at("keys").contains(e.key));
        }
    }
  }
  CHECK(jobs == 80);  // (the 405B plan's Llama 3 split is no DeepSpeed job: framework_roundtrip_test)
  // The keys the jobs use, so a change that stops writing one shows here.
  CHECK(written["torchtitan/job.toml"].size() == 30);  // with fsdp_reshard_after_forward, the cp rotate method,
  // the mixture's expert_parallel_degree and expert_tensor_parallel_degree (mixtral_8x7b_4node_h100)
  CHECK(written["megatron/args.txt"].size() == 77);  // with --account-for-embedding/loss-in-pipeline-split
  // (405b_1024_h100, 405b_gb200_nvl72), --decoder-first/last-pipeline-num-layers (deepseek_v3_megatron), RMSNorm, rope, --cp-comm-type,
  // --use-tp-pp-dp-mapping and --num-virtual-stages-per-pipeline-rank (405b_gb200_nvl72),
  // --fp4-format and --fp4-recipe (its fp4 variant), the mixture's four (mixtral_8x7b_4node_h100), and
  // --moe-ffn-hidden-size and --moe-shared-expert-intermediate-size (qwen_moe_a2_7b_torchtitan), --moe-grouped-gemm, --moe-permute-fusion,
  // --moe-shared-expert-overlap, --moe-layer-freq (llama4_maverick_megatron), --kv-channels, --qk-layernorm,
  // --expert-tensor-parallel-size (qwen3_30b_a3b_megatron: etp 1), --multi-latent-attention and its five widths,
  // --recompute-modules, --mtp-num-layers, --moe-router-num-groups, --moe-router-group-topk and --moe-enable-deepep
  // (deepseek_v3_megatron)
  CHECK(written["deepspeed/ds_config.json"].size() == 19);  // with zero_optimization.contiguous_gradients
  CHECK(written["deepspeed/args.txt"].size() == 30);  // with --kv-channels
}

TEST_CASE("a plan costed with every launch blocking launches its framework's job so") {
  std::vector<test::framework_case> cases;
  test::add_cases(cases, std::string(DTPLAN_SOURCE_DIR) + "/plans/7b_2node.dtp", {"training.cuda_launch_blocking=true"},
                  {}, false);
  std::size_t exported = 0;
  for (auto const& c : cases) {
    if (codegen::export_refusal(c.format, *c.program, c.plan)) continue;
    INFO(c.label);
    dsl::diagnostics warnings;
    std::string launch;
    for (auto const& file : codegen::export_job(c.format, *c.program, c.plan, warnings))
      if (file.name == "launch.sh") launch = file.text;
    CHECK(launch.find("# The plan was costed with every kernel launch blocking (training.cuda_launch_blocking).\n"
                      "export CUDA_LAUNCH_BLOCKING=1\n") != std::string::npos);
    ++exported;
  }
  CHECK(exported == 2);  // megatron and deepspeed (torchtitan runs no ZeRO-1: 'current' is not valid there)
}

TEST_CASE("a gradient reduced in another precision than it is kept in: DeepSpeed says it, Megatron-LM cannot") {
  std::vector<test::framework_case> cases;
  test::add_cases(cases, std::string(DTPLAN_SOURCE_DIR) + "/plans/7b_2node.dtp",
                  {"training.grad_precision=fp32", "training.grad_comm_precision=bf16"}, {}, false);
  std::size_t checked = 0;
  for (auto const& c : cases) {
    if (codegen::export_refusal(c.format, *c.program, c.plan)) continue;
    INFO(c.label);
    dsl::diagnostics warnings;
    auto const files = codegen::export_job(c.format, *c.program, c.plan, warnings);
    std::vector<std::string> messages;
    for (auto const& d : warnings.list()) messages.push_back(d.message);
    auto const said = [&](std::string const& key) {
      return std::any_of(messages.begin(), messages.end(),
                         [&](std::string const& m) { return m.rfind("the plan was costed with " + key + " = ", 0) == 0; });
    };
    if (c.format == planner::job_format::deepspeed) {
      for (auto const& f : files)
        if (f.name == "ds_config.json") CHECK(f.text.find("\"communication_data_type\": \"bf16\"") != std::string::npos);
      CHECK_FALSE(said("grad_comm_precision"));
      CHECK(said("grad_precision"));  // ZeRO-1 keeps the model's bf16 gradients
    } else {
      CHECK(said("grad_comm_precision"));
    }
    ++checked;
  }
  CHECK(checked == 2);
}
