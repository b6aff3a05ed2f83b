#include "planner/lower/settings.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "planner/ir/keys.hpp"
#include "planner/lower/lower_values.hpp"

namespace dtplan::planner {

namespace ast = dsl::ast;

void apply_settings(std::vector<ast::block>& user, std::vector<ast::block>& builtin,
                    std::vector<ast::setting> const& settings, dsl::diagnostics& diags) {
  for (auto const& s : settings) {
    std::vector<ast::block*> targets;
    auto target_kind = block_kind_of(s.target.name);
    auto collect = [&](std::vector<ast::block>& blocks) {
      for (auto& b : blocks) {
        bool hit = target_kind ? b.kind.name == s.target.name : (b.name && b.name->name == s.target.name);
        if (hit && block_kind_of(b.kind.name)) targets.push_back(&b);
      }
    };
    collect(user);
    // A built-in block is changed only when the file does not define one:
    // `--set H100_SXM.reserved=6GiB`, or `--set gpu.reserved=6GiB` on a file
    // that names its gpu from the catalog.
    if (targets.empty()) collect(builtin);
    if (targets.empty()) {
      if (target_kind) {
        diags.error(s.target.where, fmt::format("no '{}' block for this setting to change", s.target.name));
      } else {
        std::vector<std::string> names = block_kind_names();
        for (auto const& b : user)
          if (b.name) names.push_back(b.name->name);
        auto near = lowering::suggest(s.target.name, names);
        diags.error(s.target.where, near.empty() ? fmt::format("unknown block '{}'", s.target.name)
                                                  : fmt::format("unknown block '{}'; did you mean '{}'?",
                                                                s.target.name, near));
      }
      continue;
    }
    auto k = *block_kind_of(targets.front()->kind.name);
    if (!find_key(k, s.key.name)) {
      auto near = lowering::suggest(s.key.name, key_names(k));
      diags.error(s.key.where,
                   near.empty() ? fmt::format("unknown key '{}' for a '{}' block", s.key.name, name(k))
                                : fmt::format("unknown key '{}' for a '{}' block; did you mean '{}'?", s.key.name,
                                              name(k), near));
      continue;
    }
    for (auto* b : targets) {
      ast::assignment replacement{s.where, s.key, s.rhs};
      auto it = std::find_if(b->body.begin(), b->body.end(),
                             [&](ast::assignment const& a) { return a.key.name == s.key.name; });
      if (it != b->body.end())
        *it = replacement;
      else
        b->body.push_back(replacement);
    }
  }
}

}  // namespace dtplan::planner
