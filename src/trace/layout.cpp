#include "layout.hpp"

#include <array>
#include <string>
#include <string_view>

#include "function_table.hpp"
#include "gpucomm/core/error.hpp"

namespace gpucomm::trace::detail {
namespace {

Op parse_op(char c, std::string_view fn) {
  switch (c) {
    case 'i':
      return Op::i32;
    case 'h':
      return Op::u16;
    case 'b':
      return Op::u8;
    case 'q':
      return Op::i64;
    case 'A':
      return Op::int_array;
    case 'D':
      return Op::u16_array;
    case 'B':
      return Op::u8_array;
    case 'c':
      return Op::str;
    case 'C':
      return Op::str_array;
    case 'E':
      return Op::str_array2;
    case 'G':
      return Op::int_array2;
    case 's':
      return Op::statuses;
    case 'V':
      return Op::argv;
    case 'T':
      return Op::int_array_since_069;
    case 'K':
      return Op::int_array_since_068;
    default:
      break;
  }
  raise(Errc::internal, "trace layout", std::string("bad token '") + c + "' for " + std::string(fn));
}

Role parse_role(std::string_view r, std::string_view fn) {
  static constexpr std::pair<std::string_view, Role> kRoles[] = {
      {"count", Role::count},       {"datatype", Role::datatype},   {"peer", Role::peer},
      {"tag", Role::tag},           {"comm", Role::comm},           {"request", Role::request},
      {"count2", Role::count2},     {"datatype2", Role::datatype2}, {"peer2", Role::peer2},
      {"tag2", Role::tag2},         {"root", Role::root},           {"commrank", Role::commrank},
      {"commsize", Role::commsize}, {"flag", Role::flag},           {"index", Role::index},
      {"value", Role::value},       {"newcomm", Role::newcomm},     {"requests", Role::requests},
      {"indices", Role::indices},   {"statuses", Role::statuses},   {"counts", Role::counts},
      {"counts2", Role::counts2}};
  for (auto& [name, role] : kRoles)
    if (name == r) return role;
  raise(Errc::internal, "trace layout", "bad role '" + std::string(r) + "' for " + std::string(fn));
}

Layout compile(const FunctionRow& row) {
  Layout l;
  if (!row.layout) return l;
  l.known = true;
  std::string_view s = row.layout;
  while (!s.empty()) {
    size_t sp = s.find(' ');
    std::string_view tok = s.substr(0, sp);
    s = sp == std::string_view::npos ? std::string_view{} : s.substr(sp + 1);
    if (tok.empty()) continue;
    Step st{Op::i32, Role::none, false};
    if (tok.front() == '?') {
      st.root_only = true;
      tok.remove_prefix(1);
    }
    st.op = parse_op(tok.front(), row.name);
    if (tok.size() > 2 && tok[1] == ':') st.role = parse_role(tok.substr(2), row.name);
    l.steps.push_back(st);
  }
  return l;
}

}  // namespace

const Layout& layout_for(uint16_t id) {
  static const std::array<Layout, kFunctionRows> table = [] {
    std::array<Layout, kFunctionRows> t;
    for (int i = 0; i < kFunctionRows; ++i) t[i] = compile(function_rows()[i]);
    return t;
  }();
  static const Layout unknown;
  return id < kFunctionRows ? table[id] : unknown;
}

}  // namespace gpucomm::trace::detail
