#pragma once
#include <string_view>

/// The whole of dtplan's pipeline on one input, in memory, with oracles:
/// what the fuzz targets (fuzz_pipeline, fuzz_extreme) run on each input.
namespace dtplan::fuzz {

/// Parses `text` as a .dtp file named "fuzz.dtp" (its leading `#set
/// BLOCK.KEY=VALUE` comment lines are also taken as `--set` overrides),
/// dumps the syntax tree, lowers, dumps the IR, runs the session with
/// `--optimize --explain` under a small search bound (every fixed strategy
/// checked and costed, the free ones or the whole space searched), prints
/// the text, summary and JSON reports and generates the bundle's files for
/// the chosen plan and the first valid ones, all in memory. Prints nothing.
///
/// On a violated promise it prints what was violated and the offending
/// output to stderr and calls __builtin_trap(), so libFuzzer keeps the
/// input: a diagnostic outside a source or not printed as file:line:col, a
/// control character reaching the terminal, a report that is not JSON, a
/// number that is not finite or out of its range (negative bytes, an MFU
/// above 100 %), a generated file with a byte outside printable ASCII, an
/// exception from any stage. Crashes, leaks and undefined behaviour are the
/// sanitizers'.
void run_pipeline(std::string_view text);

/// A framework's job through `--from`: the first byte picks the format
/// (torchtitan, Megatron-LM, DeepSpeed, NeMo), the bytes up to the first NUL
/// are the job's file and the rest the file it names, read against a fixed
/// cluster and model, then costed and reported as run_pipeline does, with
/// the same promises.
void run_job(std::string_view bytes);

}  // namespace dtplan::fuzz
