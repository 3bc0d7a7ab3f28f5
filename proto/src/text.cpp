// Text format with located errors. Parse errors come from protobuf's parser
// (which names the field); later, semantic errors carry a field path that
// TextLocations maps back to a line through the parser's ParseInfoTree.

#include "carom/proto/text.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

namespace carom::proto {

namespace gp = google::protobuf;

struct TextLocations::Impl {
  gp::TextFormat::ParseInfoTree tree;
};

TextLocations::TextLocations() : impl_(std::make_unique<Impl>()) {}
TextLocations::~TextLocations() = default;
TextLocations::TextLocations(TextLocations&&) noexcept = default;
TextLocations& TextLocations::operator=(TextLocations&&) noexcept = default;

int TextLocations::line_of(const gp::Message& message, std::string_view path) const {
  const gp::Descriptor* type = message.GetDescriptor();
  const gp::TextFormat::ParseInfoTree* tree = &impl_->tree;
  int line = 0;
  while (!path.empty() && type != nullptr && tree != nullptr) {
    const std::size_t dot = path.find('.');
    std::string_view part = path.substr(0, dot);
    path = dot == std::string_view::npos ? std::string_view{} : path.substr(dot + 1);
    int index = -1;
    if (const std::size_t bracket = part.find('['); bracket != std::string_view::npos) {
      const std::string_view digits = part.substr(bracket + 1, part.size() - bracket - 2);
      std::from_chars(digits.data(), digits.data() + digits.size(), index);
      part = part.substr(0, bracket);
    }
    const gp::FieldDescriptor* field = type->FindFieldByName(std::string(part));
    if (field == nullptr) break;
    const auto loc = tree->GetLocation(field, field->is_repeated() ? std::max(index, 0) : -1);
    if (loc.line < 0) break;
    line = loc.line + 1;
    if (field->type() != gp::FieldDescriptor::TYPE_MESSAGE) break;
    tree = tree->GetTreeForNested(field, field->is_repeated() ? std::max(index, 0) : -1);
    type = field->message_type();
  }
  return line;
}

namespace {

class Collector : public gp::io::ErrorCollector {
 public:
  explicit Collector(std::string_view filename) : filename_(filename) {}
  void AddError(int line, gp::io::ColumnNumber column, const std::string& message) override {
    if (!first_.empty()) return;
    first_ = filename_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
  }
  void AddWarning(int, gp::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string filename_;
  std::string first_;
};

}  // namespace

bool parse_text(std::string_view text, std::string_view filename, gp::Message* message, std::string* error,
                TextLocations* locations) {
  Collector collector(filename);
  gp::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  if (locations != nullptr) parser.WriteLocationsTo(&locations->impl_->tree);
  if (parser.ParseFromString(std::string(text), message)) return true;
  if (error != nullptr) {
    *error = collector.first().empty() ? std::string(filename) + ": not valid text format" : collector.first();
  }
  return false;
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return false;
  *out = std::move(buffer).str();
  return true;
}

bool write_file_atomically(const std::string& path, const std::string& bytes, std::string* error) {
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) {
      *error = temp + ": cannot create: " + std::strerror(errno);
      return false;
    }
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      *error = temp + ": cannot write: " + std::strerror(errno);
      std::remove(temp.c_str());
      return false;
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    *error = path + ": cannot replace: " + std::strerror(errno);
    std::remove(temp.c_str());
    return false;
  }
  return true;
}

bool parse_text_file(const std::string& path, gp::Message* message, std::string* error,
                     TextLocations* locations) {
  std::string text;
  if (!read_file(path, &text)) {
    if (error != nullptr) *error = path + ": cannot read the file";
    return false;
  }
  return parse_text(text, path, message, error, locations);
}

}  // namespace carom::proto
