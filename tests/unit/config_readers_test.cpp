// The readers of frameworks' configuration files (dsl/config/): what each
// entry holds and where, and every refusal in its exact words.
#include <catch2/catch.hpp>

#include "dsl/config/config.hpp"

using namespace dtplan::dsl;
using config::value;

namespace {

struct reading {
  source_manager sm;
  diagnostics diags;
  std::optional<config::document> doc;

  reading(std::string name, std::string text, std::optional<config::document> (*reader)(source_manager const&, std::uint32_t,
                                                                                   diagnostics&)) {
    auto id = sm.add(std::move(name), std::move(text));
    doc = reader(sm, id, diags);
  }
  [[nodiscard]] std::string errors() const { return format(diags, sm); }
  [[nodiscard]] std::string at(span s) const { return location(s, sm) + " " + std::string(sm.text(s)); }
};

}  // namespace

TEST_CASE("a torchtitan TOML reads to dotted keys with the spans of keys and values") {
  reading r("job.toml",
         "# NOTE: a preset\n"
         "[job]\n"
         "description = \"Llama 3 8B training\"\n"
         "\n"
         "[training]\n"
         "local_batch_size = 1\n"
         "seq_len = 8_192   # tokens\n"
         "max_norm = 1.0\n"
         "[compile]\n"
         "enable=false\n"
         "components = [\"model\",\n"
         "  \"loss\",  # trailing comma\n"
         "]\n"
         "[quantize.linear.float8]\n"
         "filter_fqns = ['output']\n"
         "lr = 3e-4\n",
         config::read_toml);
  REQUIRE(r.doc);
  CHECK(r.errors().empty());
  auto const& e = r.doc->entries;
  REQUIRE(e.size() == 8);
  CHECK(e[0].key == "job.description");
  CHECK(e[0].val->text == "Llama 3 8B training");
  CHECK(r.at(e[0].key_where) == "job.toml:3:1 description");
  CHECK(r.at(e[0].val->where) == "job.toml:3:15 \"Llama 3 8B training\"");
  CHECK(e[1].key == "training.local_batch_size");
  CHECK(e[1].val->k == value::kind::integer);
  CHECK(e[2].val->text == "8_192");
  CHECK(e[3].val->k == value::kind::real);
  CHECK(e[4].key == "compile.enable");
  CHECK(e[4].val->k == value::kind::boolean);
  CHECK(e[4].val->text == "false");
  CHECK(r.at(e[4].val->where) == "job.toml:10:8 false");
  CHECK(e[5].val->k == value::kind::array);
  REQUIRE(e[5].val->items.size() == 2);
  CHECK(e[5].val->items[1].text == "loss");
  CHECK(e[6].key == "quantize.linear.float8.filter_fqns");
  CHECK(e[6].val->items[0].text == "output");
  CHECK(e[7].val->text == "3e-4");
  CHECK(e[7].val->k == value::kind::real);
}

TEST_CASE("dotted and quoted keys join the table's path") {
  reading r("a.toml", "[parallelism]\nfsdp.\"degree\" = 2\n", config::read_toml);
  REQUIRE(r.doc);
  CHECK(r.doc->entries[0].key == "parallelism.fsdp.degree");
  CHECK(r.at(r.doc->entries[0].key_where) == "a.toml:2:1 fsdp.\"degree\"");
}

TEST_CASE("what TOML allows and torchtitan does not write is refused where it is written") {
  auto refused = [](std::string text) {
    reading r("bad.toml", std::move(text), config::read_toml);
    CHECK_FALSE(r.doc);
    return r.errors();
  };
  CHECK(refused("[job]\nx = {a = 1}\n") ==
        "bad.toml:2:5: error: inline tables ('{...}') are not read: write the keys under a '[table]' header\n"
        "    2 | x = {a = 1}\n"
        "      |     ^\n");
  CHECK(refused("[[layers]]\n") ==
        "bad.toml:1:1: error: arrays of tables ('[[...]]') are not read: torchtitan's configurations do not use "
        "them\n"
        "    1 | [[layers]]\n"
        "      | ^~\n");
  CHECK(refused("[training]\nsteps = 10\nsteps = 20\n") ==
        "bad.toml:3:1: error: the key 'training.steps' is written twice\n"
        "    3 | steps = 20\n"
        "      | ^~~~~\n"
        "bad.toml:2:1: note: it is first written here\n"
        "    2 | steps = 10\n"
        "      | ^~~~~\n");
  CHECK(refused("[a]\nb = 1\n[a]\n") ==
        "bad.toml:3:2: error: the table 'a' is written twice\n"
        "    3 | [a]\n"
        "      |  ^\n"
        "bad.toml:1:2: note: it is first written here\n"
        "    1 | [a]\n"
        "      |  ^\n");
  CHECK(refused("x = \"open\n") ==
        "bad.toml:1:5: error: this string is not closed on its line\n"
        "    1 | x = \"open\n"
        "      |     ^~~~~\n");
  CHECK(refused("seq_len 8192\n") ==
        "bad.toml:1:9: error: expected '=' after the key 'seq_len', got '8'\n"
        "    1 | seq_len 8192\n"
        "      |         ^\n");
  CHECK(refused("x = 0123\n") ==
        "bad.toml:1:5: error: a number cannot start with a leading zero\n"
        "    1 | x = 0123\n"
        "      |     ^~~~\n");
  CHECK(refused("x = 1979-05-27\n") ==
        "bad.toml:1:5: error: dates and times are not read\n"
        "    1 | x = 1979-05-27\n"
        "      |     ^~~~~\n");
  CHECK(refused("x = 1 2\n") ==
        "bad.toml:1:7: error: expected the end of the line after the value of 'x', got '2'\n"
        "    1 | x = 1 2\n"
        "      |       ^\n");
  CHECK(refused("x = [1,\n2\n") ==
        "bad.toml:3:1: error: expected ']' to close the array, got the end of the file\n"
        "    3 | \n"
        "      | ^\n"
        "bad.toml:1:5: note: the array opens here\n"
        "    1 | x = [1,\n"
        "      |     ^\n");
  CHECK(refused("x = 1\nx.y = 2\n") ==
        "bad.toml:2:1: error: 'x' is a value, not a table\n"
        "    2 | x.y = 2\n"
        "      | ^~~\n"
        "bad.toml:1:1: note: it is written here\n"
        "    1 | x = 1\n"
        "      | ^\n");
}

TEST_CASE("a ds_config.json reads to dotted keys; arrays keep their items") {
  reading r("ds_config.json",
         "{\n"
         "  \"train_batch_size\": 32,\n"
         "  \"zero_optimization\": {\"stage\": 0, \"reduce_bucket_size\": 5e8},\n"
         "  \"bf16\": {\"enabled\": true},\n"
         "  \"optimizer\": {\"params\": {\"betas\": [0.9, 0.95], \"name\": \"a\\u00e9\\ud83d\\ude00\"}},\n"
         "  \"list\": [{\"a\": 1}, null],\n"
         "  \"empty\": {}\n"
         "}\n",
         config::read_json);
  REQUIRE(r.doc);
  auto const& e = r.doc->entries;
  REQUIRE(e.size() == 7);
  CHECK(e[0].key == "train_batch_size");
  CHECK(r.at(e[0].key_where) == "ds_config.json:2:3 \"train_batch_size\"");
  CHECK(r.at(e[0].val->where) == "ds_config.json:2:23 32");
  CHECK(e[1].key == "zero_optimization.stage");
  CHECK(e[2].val->k == value::kind::real);
  CHECK(e[2].val->text == "5e8");
  CHECK(e[3].key == "bf16.enabled");
  CHECK(e[4].key == "optimizer.params.betas");
  CHECK(e[4].val->items.size() == 2);
  CHECK(e[5].val->text == "a\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(e[6].val->items[0].k == value::kind::object);
  CHECK(e[6].val->items[1].k == value::kind::null);
}

TEST_CASE("JSON is read strictly") {
  auto refused = [](std::string text) {
    reading r("ds.json", std::move(text), config::read_json);
    CHECK_FALSE(r.doc);
    return r.errors();
  };
  CHECK(refused("{\"a\": 1,}") ==
        "ds.json:1:9: error: expected a key after ',' (JSON has no trailing commas), got '}'\n"
        "    1 | {\"a\": 1,}\n"
        "      |         ^\n");
  CHECK(refused("{\"a\": 1, \"a\": 2}") ==
        "ds.json:1:10: error: the key 'a' is written twice in this object\n"
        "    1 | {\"a\": 1, \"a\": 2}\n"
        "      |          ^~~\n"
        "ds.json:1:2: note: it is first written here\n"
        "    1 | {\"a\": 1, \"a\": 2}\n"
        "      |  ^~~\n");
  CHECK(refused("[1]") ==
        "ds.json:1:1: error: expected a JSON object ('{'), got '['\n"
        "    1 | [1]\n"
        "      | ^\n");
  CHECK(refused("{\"a\": 01}") ==
        "ds.json:1:7: error: a JSON number cannot start with a leading zero\n"
        "    1 | {\"a\": 01}\n"
        "      |       ^~\n");
  CHECK(refused("{\"a\": tru}") ==
        "ds.json:1:7: error: expected a JSON value, got 't'\n"
        "    1 | {\"a\": tru}\n"
        "      |       ^\n");
  CHECK(refused("{} x") ==
        "ds.json:1:4: error: expected the end of the file after the object, got 'x'\n"
        "    1 | {} x\n"
        "      |    ^\n");
  CHECK(refused(std::string(100, '[')).starts_with("ds.json:1:1: error: expected a JSON object"));
  std::string deep = "{\"a\": ";
  for (int i = 0; i < 70; ++i) deep += "[";
  CHECK(refused(deep) ==
        "ds.json:1:70: error: objects and arrays nested deeper than 64 are not read\n"
        "    1 | {\"a\": " + std::string(70, '[') + "\n"
        "      |                                                                      ^\n");
  CHECK(config::looks_like_json("\n  {\"a\": 1}"));
  CHECK_FALSE(config::looks_like_json("--bf16\n"));
}

TEST_CASE("an argument list: one per line, or a command line with its launcher") {
  reading one("args.txt",
           "# GPT model\n"
           "--num-layers 96\n"
           "--attention-backend auto # Can use (flash/fused/unfused/local)\n"
           "--rampup-batch-size 16 16 5859375\n"
           "--fp16\n"
           "--data-path $DATA_PATH\n"
           "--lr=6.0e-5\n"
           "--foo -1\n",
           config::read_arguments);
  REQUIRE(one.doc);
  auto const& e = one.doc->entries;
  REQUIRE(e.size() == 7);
  CHECK(e[0].key == "--num-layers");
  CHECK(one.at(e[0].key_where) == "args.txt:2:1 --num-layers");
  CHECK(one.at(e[0].val->where) == "args.txt:2:14 96");
  CHECK(e[1].val->text == "auto");
  CHECK(e[2].val->k == value::kind::array);
  CHECK(e[2].val->items.size() == 3);
  CHECK(one.at(e[2].val->where) == "args.txt:4:21 16 16 5859375");
  CHECK_FALSE(e[3].val);
  CHECK(e[4].val->unexpanded);
  CHECK(e[5].key == "--lr");
  CHECK(one.at(e[5].key_where) == "args.txt:7:1 --lr");
  CHECK(one.at(e[5].val->where) == "args.txt:7:6 6.0e-5");
  CHECK(e[6].val->text == "-1");
  CHECK(one.doc->words.empty());

  reading cmd("run.sh",
           "CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node 8 --nnodes 2 \\\n"
           "    pretrain_gpt.py --micro-batch-size 1 \\\n"
           "    --data-path 'a b' \"c\\\"d\" --x=\"1 2\" | tee log\n",
           config::read_arguments);
  REQUIRE(cmd.doc);
  REQUIRE(cmd.doc->launcher.size() == 2);
  CHECK(cmd.doc->launcher[0].key == "--nproc_per_node");
  REQUIRE(cmd.doc->words.size() == 3);
  CHECK(cmd.doc->words[0].text == "CUDA_DEVICE_MAX_CONNECTIONS=1");
  CHECK(cmd.doc->words[2].text == "pretrain_gpt.py");
  auto const& c = cmd.doc->entries;
  REQUIRE(c.size() == 3);
  CHECK(c[0].key == "--micro-batch-size");
  CHECK(c[1].val->items[0].text == "a b");
  CHECK(c[1].val->items[1].text == "c\"d");
  CHECK(c[2].key == "--x");
  CHECK(c[2].val->text == "1 2");
  CHECK(cmd.errors() ==
        "run.sh:3:40: warning: the rest of the command after '|' is not read\n"
        "    3 |     --data-path 'a b' \"c\\\"d\" --x=\"1 2\" | tee log\n"
        "      |                                        ^\n"
        "note: dtplan reads one command's arguments\n");

  reading bad("bad.txt", "--data-path 'open\n", config::read_arguments);
  CHECK_FALSE(bad.doc);
  CHECK(bad.errors() ==
        "bad.txt:1:13: error: this quote (') is not closed\n"
        "    1 | --data-path 'open\n"
        "      |             ^~~~~\n");
}

TEST_CASE("a redirection's descriptor is not an argument") {
  reading r("run.sh", "torchrun pretrain_gpt.py --seq-length 4096 2>&1 | tee log\n", config::read_arguments);
  REQUIRE(r.doc);
  REQUIRE(r.doc->entries.size() == 1);
  CHECK(r.doc->entries[0].val->text == "4096");
  CHECK(r.errors().starts_with("run.sh:1:45: warning: the rest of the command after '>' is not read\n"));
}

TEST_CASE("quoted digits before a redirection are an argument, in both readers") {
  // bash: `"4096">log` passes the word 4096 and sends stdout to log; only
  // unquoted digits name a descriptor.
  reading args("run.sh", "torchrun pretrain_gpt.py --seq-length \"4096\">log\n", config::read_arguments);
  REQUIRE(args.doc);
  REQUIRE(args.doc->entries.size() == 1);
  REQUIRE(args.doc->entries[0].val);
  CHECK(args.doc->entries[0].val->text == "4096");
  reading script("run.sh",
                 "A=(--seq-length)\n"
                 "torchrun pretrain_gpt.py \"${A[@]}\" \"4096\">log\n",
                 config::read_arguments);
  REQUIRE(script.doc);
  REQUIRE(script.doc->entries.size() == 1);
  REQUIRE(script.doc->entries[0].val);
  CHECK(script.doc->entries[0].val->text == "4096");
}

TEST_CASE("a launch script's arrays and variables expand into its Python command's arguments, each where written") {
  // Megatron-LM's examples (core_v0.13.0 examples/*/train_*.sh): arrays of
  // arguments, defaults for positional parameters, tests on variables.
  reading r("train.sh",
            "#!/bin/bash\n"
            "N=8\n"
            "TOK=${1:-\"MOCK\"}\n"
            "BASE=(\n"
            "    --num-layers 32   # a comment\n"
            "    --hidden-size=4096\n"
            ")\n"
            "EXTRA=()\n"
            "if [[ \"$TOK\" == \"MOCK\" ]] || [[ -z \"$TOK\" ]]; then\n"
            "  EXTRA+=(\"--vocab-size 128256\" \"--mock-data\")\n"
            "else\n"
            "  EXTRA+=(--tokenizer-model $TOK)\n"
            "fi\n"
            "if [ -f wandb.key ]; then\n"
            "  EXTRA+=(--wandb-project x)\n"
            "fi\n"
            "FLAGS=\"--bf16 --use-flash-attn\"\n"
            "ALL=(\"${BASE[@]}\" \"${EXTRA[@]}\")\n"
            "CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nproc_per_node $N pretrain_gpt.py ${ALL[@]} $FLAGS \\\n"
            "    \"--seq-length\" 4096 2>&1 | tee log.txt\n"
            "python other.py --x 1\n",
            config::read_arguments);
  REQUIRE(r.doc);
  std::vector<std::string> got;
  for (auto const& e : r.doc->entries)
    got.push_back(r.at(e.key_where) + (e.val ? " = " + r.at(e.val->where) : ""));
  CHECK(got == std::vector<std::string>{
      "train.sh:5:5 --num-layers = train.sh:5:18 32", "train.sh:6:5 --hidden-size = train.sh:6:19 4096",
      "train.sh:10:12 --vocab-size = train.sh:10:25 128256", "train.sh:10:34 --mock-data",
      "train.sh:17:8 --bf16", "train.sh:17:15 --use-flash-attn", "train.sh:20:6 --seq-length = train.sh:20:20 4096"});
  REQUIRE(r.doc->launcher.size() == 1);
  CHECK(r.at(r.doc->launcher[0].val->where) == "train.sh:2:3 8");
  CHECK(r.errors() ==
        "train.sh:20:26: warning: the rest of the command after '>' is not read\n"
        "   20 |     \"--seq-length\" 4096 2>&1 | tee log.txt\n"
        "      |                          ^\n"
        "note: dtplan reads one command's arguments\n"
        "train.sh:15:3: warning: the words this line gives the array are not read: it runs in a branch dtplan "
        "cannot decide\n"
        "   15 |   EXTRA+=(--wandb-project x)\n"
        "      |   ^~~~~~~\n"
        "train.sh:21:1: warning: a second command starts a Python script: dtplan reads the first one's arguments\n"
        "   21 | python other.py --x 1\n"
        "      | ^~~~~~\n");

  reading none("none.sh", "A=(--x 1)\necho ${A[@]}\n", config::read_arguments);
  CHECK_FALSE(none.doc);
  CHECK(none.errors() ==
        "none.sh:1:1: error: no command of this script starts a Python script (a word ending in '.py'): dtplan "
        "reads that command's arguments\n"
        "    1 | A=(--x 1)\n"
        "      | ^~~~~~~~~\n");
  reading open("open.sh", "A=(--x 1\ntorchrun pretrain_gpt.py ${A[@]}\n", config::read_arguments);
  CHECK_FALSE(open.doc);
  CHECK(open.errors() ==
        "open.sh:1:3: error: this '(' is not closed\n"
        "    1 | A=(--x 1\n"
        "      |   ^\n");
  reading branch("branch.sh", "A=(--x 1)\nif [ -f a ]; then\n  python pretrain_gpt.py ${A[@]}\nfi\n",
                 config::read_arguments);
  CHECK_FALSE(branch.doc);
  CHECK(branch.errors().starts_with(
      "branch.sh:3:3: error: the command that starts the Python script runs in a branch dtplan cannot decide"));
}

TEST_CASE("a launch script's here-documents are data, its tests decided where bash's words are known") {
  reading r("ds.sh",
            "A=1\n"
            "cat <<EOT > cfg.json\n"
            "{ \"x\": \"$A\" ( }\n"
            "python fake.py\n"
            "EOT\n"
            "if [ \"$A\" = \"1\" ]; then X=\"--fp16\"; fi\n"
            "if [ $A -eq 1 ]; then Y=\"--bf16\"; fi\n"
            "python pretrain_gpt.py --lr 1 $X 7 $Y --micro-batch-size $MBS --seq-length ${SEQ:-4096}\n",
            config::read_arguments);
  REQUIRE(r.doc);
  std::vector<std::string> got;
  for (auto const& e : r.doc->entries) got.push_back(e.key + (e.val ? " " + e.val->text : ""));
  // `[ "$A" = "1" ]` is decided; `[ $A -eq 1 ]`, whose unquoted word bash
  // would split, is not: $Y stays unexpanded, and as a second word after
  // --fp16 it is no value of it.
  // $MBS, set nowhere in the script, is the environment's: unresolved, as
  // bash's empty word would hide; ${SEQ:-4096} says its default.
  CHECK(got == std::vector<std::string>{"--lr 1", "--fp16 7", "--micro-batch-size $MBS", "--seq-length 4096"});
  CHECK(r.doc->entries[2].val->unexpanded);
  CHECK(r.errors() ==
        "ds.sh:8:36: warning: '$Y' is a shell expansion dtplan cannot resolve: the arguments it gives are not read\n"
        "    8 | python pretrain_gpt.py --lr 1 $X 7 $Y --micro-batch-size $MBS --seq-length ${SEQ:-4096}\n"
        "      |                                    ^~\n");
}

TEST_CASE("a configuration that is not text is refused as a .dtp file is") {
  reading r("x.toml", std::string("a = 1\n\0", 7), config::read_toml);
  CHECK_FALSE(r.doc);
  CHECK(r.errors().starts_with("x.toml:2:1: error: file is not text: NUL byte at line 2, column 1"));
}

namespace {

std::optional<config::document> shell_alone(source_manager const& sm, std::uint32_t id, diagnostics& diags) {
  return config::read_shell(sm, id, {}, diags);
}

}  // namespace

TEST_CASE("a shell script reads to the variables it leaves set, each where its value is written") {
  reading r("config.sh",
            "# DL params\n"
            "export MINIBS=\"${MINIBS:=128}\"   # the default, set\n"
            "export TP=4 PP='8'\n"
            ": \"${EMPTY:=\"\"}\"\n"
            "export PATHLIKE=\"/load/\"$EMPTY\n"
            "COPY=${TP}\n"
            "export GONE=1\n"
            "unset GONE\n"
            "export LATE=${UNSET:-x}y\n"
            "export TP=2\n"
            "if [[ \"${VERSION:-}\" == \"v31\" ]]; then\n"
            "  export PP=1\n"
            "elif [[ $MINIBS -eq 128 ]]; then export CHOSEN=elif\n"
            "else\n"
            "  export CHOSEN=else\n"
            "fi\n"
            "export WHEN=$(date) NEXT=$(( 1 + 2 ))\n"
            "if [ $MINIBS -eq 128 ]; then\n"
            "  export BOOST=1\n"
            "fi\n"
            "A=1 echo hi | tee log\n",
            shell_alone);
  REQUIRE(r.doc);
  CHECK(r.errors().empty());
  std::vector<std::string> got;
  for (auto const& e : r.doc->entries)
    got.push_back(e.key + "=" + e.val->text + " @" + r.at(e.val->where));
  CHECK(got == std::vector<std::string>{
      "MINIBS=128 @config.sh:2:26 128", "PP=8 @config.sh:3:17 8", "EMPTY= @config.sh:4:13 \"\"",
      "PATHLIKE=/load/ @config.sh:5:18 /load/", "COPY=4 @config.sh:3:11 4", "LATE=xy @config.sh:9:13 ${UNSET:-x}y",
      "TP=2 @config.sh:10:11 2", "CHOSEN=elif @config.sh:13:48 elif"});
  std::vector<std::string> not_run;
  for (auto const& e : r.doc->unevaluated) not_run.push_back(e.key + " @" + r.at(e.key_where) + " " + e.val->text);
  CHECK(not_run == std::vector<std::string>{"WHEN @config.sh:17:8 WHEN $(date)", "NEXT @config.sh:17:21 NEXT $(( 1 + 2 ))",
                                            "BOOST @config.sh:19:10 BOOST 1",
                                            // a pipeline is not run: what it might set is recorded
                                            "A @config.sh:21:1 A 1"});
}

TEST_CASE("a shell script saved with a byte-order mark reads from after it, as every reader") {
  reading r("config.sh", "\xef\xbb\xbf"
                         "export TP=4\n", shell_alone);
  INFO(r.errors());
  REQUIRE(r.doc);
  CHECK(r.errors().empty());
  REQUIRE(r.doc->entries.size() == 1);
  CHECK(r.doc->entries.front().key == "TP");
  CHECK(r.at(r.doc->entries.front().val->where) == "config.sh:1:11 4");
}

TEST_CASE("a shell script's unclosed quote is an error; a 'source' without a way to open files too") {
  reading quote("config.sh", "export A=\"open\n", shell_alone);
  CHECK_FALSE(quote.doc);
  CHECK(quote.errors() == "config.sh:1:10: error: this quote (\") is not closed\n"
                          "    1 | export A=\"open\n"
                          "      |          ^~~~~\n");
  reading source("config.sh", "source $(dirname ${BASH_SOURCE[0]})/other.sh\n", shell_alone);
  CHECK_FALSE(source.doc);
  CHECK(source.errors() == "config.sh:1:8: error: cannot read 'other.sh': no file this script sources can be opened "
                           "here\n"
                           "    1 | source $(dirname ${BASH_SOURCE[0]})/other.sh\n"
                           "      |        ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n");
}

TEST_CASE("a script whose values double on every line is refused at the line that passes the bound") {
  // Forty doublings would hold a terabyte: the reader stops at a megabyte.
  std::string grow = "X=ab\n";
  for (int i = 0; i < 40; ++i) grow += "X=\"$X$X\"\n";
  reading text("grow.sh", grow, shell_alone);
  CHECK_FALSE(text.doc);
  CHECK(text.errors() ==
        "grow.sh:21:6: error: this expansion makes a value of more than 1048576 bytes: not a configuration dtplan "
        "reads\n"
        "   21 | X=\"$X$X\"\n"
        "      |      ^~\n");
  std::string words = "A=(a b)\n";
  for (int i = 0; i < 40; ++i) words += "A+=(\"${A[@]}\")\n";
  words += "python pretrain_gpt.py ${A[@]}\n";
  reading array("grow.sh", words, config::read_arguments);
  CHECK_FALSE(array.doc);
  CHECK(array.errors() ==
        "grow.sh:17:1: error: this array holds more than 65536 words or 1048576 bytes: not a configuration dtplan "
        "reads\n"
        "   17 | A+=(\"${A[@]}\")\n"
        "      | ^~~\n");
}

TEST_CASE("a launch script's here-document written to a file is kept, expanded unless its delimiter is quoted") {
  reading r("ds.sh",
            "B=8\n"
            "CFG=./tmp/ds.json\n"
            "cat <<EOT > $CFG\n"
            "{ \"train_batch_size\": $B }\n"
            "EOT\n"
            "cat <<'EOT' > raw.json\n"
            "{ \"x\": \"$B\" }\n"
            "EOT\n"
            "python pretrain_gpt.py --deepspeed_config $CFG\n",
            config::read_arguments);
  REQUIRE(r.doc);
  REQUIRE(r.doc->written.size() == 2);
  CHECK(r.doc->written[0].path == "./tmp/ds.json");
  CHECK(r.doc->written[0].text == "{ \"train_batch_size\": 8 }\n");
  CHECK(r.at(r.doc->written[0].where).starts_with("ds.sh:4:1 {"));
  CHECK(r.doc->written[1].path == "raw.json");
  CHECK(r.doc->written[1].text == "{ \"x\": \"$B\" }\n");
  CHECK(r.errors().empty());
}
