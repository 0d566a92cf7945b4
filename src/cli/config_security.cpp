// [security] (docs/design.md section 13): modes parsed as octal, the group resolved and this
// user's membership checked, the key file loaded (its own mode and owner checked there).
#include <grp.h>
#include <unistd.h>

#include <vector>

#include "config_values.hpp"
#include "trident/security/crypto.hpp"

namespace trident::cli {

unsigned parse_file_mode(const std::string& key, const std::string& text) {
  bool ok = !text.empty() && text.size() <= 5;
  unsigned mode = 0;
  for (char ch : text) {
    ok = ok && ch >= '0' && ch <= '7';
    mode = mode * 8 + unsigned(ch - '0');
  }
  TRIDENT_CONFIG_CHECK(ok && mode <= 07777, key, " must be an octal mode such as 0640 (got '", text, "')");
  return mode;
}

namespace {

void check_group(const std::string& name) {
  const struct group* g = ::getgrnam(name.c_str());
  TRIDENT_CONFIG_CHECK(g != nullptr, "security.group: no group named '", name, "' on this host");
  if (::geteuid() == 0 || ::getegid() == g->gr_gid) return;
  std::vector<gid_t> groups(static_cast<size_t>(std::max(::getgroups(0, nullptr), 0)));
  const int n = ::getgroups(static_cast<int>(groups.size()), groups.data());
  for (int i = 0; i < n; ++i)
    if (groups[size_t(i)] == g->gr_gid) return;
  throw ConfigError(detail::concat("security.group = ", name, ": this user is not a member of it, so files cannot be "
                                   "given to it (see `id`)"));
}

}  // namespace

security::SecurityConfig read_security_section(const Values& v) {
  security::SecurityConfig s;
  s.group = v.str("security.group");
  if (!s.group.empty()) check_group(s.group);
  s.file_mode = parse_file_mode("security.file_mode", v.str("security.file_mode"));
  s.dir_mode = parse_file_mode("security.dir_mode", v.str("security.dir_mode"));
  TRIDENT_CONFIG_CHECK((s.file_mode & 0600) == 0600 && (s.file_mode & 07000) == 0,
                       "security.file_mode must let the owner read and write (0600 at least) and set no special bits");
  TRIDENT_CONFIG_CHECK((s.dir_mode & 0700) == 0700 && (s.dir_mode & 05000) == 0,
                       "security.dir_mode must let the owner in (0700 at least); of the special bits only setgid (02000)");
  const std::string inputs = v.str("security.inputs");
  TRIDENT_CONFIG_CHECK(inputs == "strict" || inputs == "warn" || inputs == "off",
                       "security.inputs must be strict, warn or off (got '", inputs, "')");
  s.inputs = inputs == "strict" ? security::InputCheck::kStrict
             : inputs == "warn" ? security::InputCheck::kWarn
                                : security::InputCheck::kOff;
  s.key_file = v.str("security.key_file");
  if (!s.key_file.empty()) s.key = security::load_key_file(s.key_file);
  s.audit = v.boolean("security.audit");
  return s;
}

}  // namespace trident::cli
