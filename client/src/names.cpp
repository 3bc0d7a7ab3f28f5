// Enum names from the protobuf descriptors: the value's name without its
// prefix, lower case; the zero value (UNSPECIFIED or AUTO) keeps its place.

#include "carom/client/names.hpp"

#include <google/protobuf/descriptor.h>

#include <cctype>

namespace carom::client {
namespace {

namespace gp = google::protobuf;

std::string short_name(const gp::EnumValueDescriptor& v, std::string_view prefix) {
  std::string name(v.name());
  if (name.rfind(prefix, 0) == 0) name.erase(0, prefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string name_of(const gp::EnumDescriptor* e, std::string_view prefix, int value, const char* unknown) {
  const gp::EnumValueDescriptor* v = e->FindValueByNumber(value);
  return v == nullptr ? unknown : short_name(*v, prefix);
}

// Names of the values numbered from `first` on.
std::vector<std::string> names_of(const gp::EnumDescriptor* e, std::string_view prefix, int first) {
  std::vector<std::string> out;
  for (int k = 0; k < e->value_count(); ++k)
    if (e->value(k)->number() >= first) out.push_back(short_name(*e->value(k), prefix));
  return out;
}

template <class Enum>
bool parse_of(const gp::EnumDescriptor* e, std::string_view prefix, int first, std::string_view name, Enum* out) {
  for (int k = 0; k < e->value_count(); ++k) {
    const gp::EnumValueDescriptor& v = *e->value(k);
    if (v.number() >= first && short_name(v, prefix) == name) {
      *out = static_cast<Enum>(v.number());
      return true;
    }
  }
  return false;
}

}  // namespace

std::string solver_name(v1::Solver solver) {
  return name_of(v1::Solver_descriptor(), "SOLVER_", solver, "unspecified");
}
std::vector<std::string> solver_names() { return names_of(v1::Solver_descriptor(), "SOLVER_", 1); }
bool parse_solver(std::string_view name, v1::Solver* out) {
  return parse_of(v1::Solver_descriptor(), "SOLVER_", 1, name, out);
}

std::string gravity_method_name(v1::GravityMethod method) {
  return name_of(v1::GravityMethod_descriptor(), "GRAVITY_", method, "auto");
}
std::vector<std::string> gravity_method_names() { return names_of(v1::GravityMethod_descriptor(), "GRAVITY_", 0); }
bool parse_gravity_method(std::string_view name, v1::GravityMethod* out) {
  return parse_of(v1::GravityMethod_descriptor(), "GRAVITY_", 0, name, out);
}

}  // namespace carom::client
