// [security] (docs/design.md section 12): modes parsed as octal, the group resolved and this
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

gid_t group_id(const std::string& key, const std::string& name) {
  const struct group* g = ::getgrnam(name.c_str());
  TRIDENT_CONFIG_CHECK(g != nullptr, key, ": no group named '", name, "' on this host");
  if (::geteuid() == 0 || ::getegid() == g->gr_gid) return g->gr_gid;
  std::vector<gid_t> groups(static_cast<size_t>(std::max(::getgroups(0, nullptr), 0)));
  const int n = ::getgroups(static_cast<int>(groups.size()), groups.data());
  for (int i = 0; i < n; ++i)
    if (groups[size_t(i)] == g->gr_gid) return g->gr_gid;
  throw ConfigError(detail::concat(key, " = ", name, ": this user is not a member of it, so files cannot be given to it "
                                   "(see `id`)"));
}

}  // namespace

FilePolicy file_policy_from(const std::string& group, const std::string& file_mode, const std::string& dir_mode,
                            const std::string& key_prefix) {
  FilePolicy p;
  p.group_name = group;
  if (!group.empty()) p.group = group_id(key_prefix + "group", group);
  p.file_mode = parse_file_mode(key_prefix + "file_mode", file_mode);
  p.dir_mode = parse_file_mode(key_prefix + "dir_mode", dir_mode);
  TRIDENT_CONFIG_CHECK((p.file_mode & 0600) == 0600 && (p.file_mode & 07000) == 0, key_prefix,
                       "file_mode must let the owner read and write (0600 at least) and set no special bits");
  TRIDENT_CONFIG_CHECK((p.dir_mode & 0700) == 0700 && (p.dir_mode & 05000) == 0, key_prefix,
                       "dir_mode must let the owner in (0700 at least); of the special bits only setgid (02000)");
  return p;
}

security::SecurityConfig read_security_section(const Values& v) {
  security::SecurityConfig s;
  s.files = file_policy_from(v.str("security.group"), v.str("security.file_mode"), v.str("security.dir_mode"),
                             "security.");
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
