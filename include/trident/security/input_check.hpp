// security.inputs (docs/design.md section 12): an input another user could have changed, that
// is a file or its directory writable by others (a sticky directory such as /tmp excepted), or
// a symlink that leads out of its own directory, is an error under strict and a warning under
// warn, before anything is read from it.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "trident/security/security_config.hpp"

namespace trident::security {

// What is wrong with one input ("" when nothing is; a missing file is left to its reader).
std::string input_problem(const std::string& path);

// Checks inputs = (what it is, path) pairs: strict throws one ConfigError listing every problem
// with the path and its mode; warn calls warn(problem) for each; off checks nothing.
void check_inputs(const std::vector<std::pair<std::string, std::string>>& inputs, InputCheck mode,
                  const std::function<void(const std::string&)>& warn);

}  // namespace trident::security
