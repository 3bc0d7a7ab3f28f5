// Text format with located errors. Parse errors come from protobuf's parser
// (which names the field); later, semantic errors carry a field path that
// TextLocations maps back to a line through the parser's ParseInfoTree.

#include "carom/proto/text.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
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
  auto fail = [&](const std::string& what, bool remove_temp) {
    *error = what + ": " + std::strerror(errno);
    if (remove_temp) std::remove(temp.c_str());
    return false;
  };
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(temp + ": cannot create", false);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return fail(temp + ": cannot write", true);
    }
    done += static_cast<std::size_t>(n);
  }
  // The bytes reach the disk before the name points at them, and the rename
  // reaches it before we say the save is done.
  if (::fsync(fd) != 0) {
    ::close(fd);
    return fail(temp + ": cannot sync", true);
  }
  if (::close(fd) != 0) return fail(temp + ": cannot close", true);
  if (std::rename(temp.c_str(), path.c_str()) != 0) return fail(path + ": cannot replace", true);
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return fail(dir.string() + ": cannot open the directory to sync it", false);
  const bool synced = ::fsync(dfd) == 0;
  ::close(dfd);
  if (!synced) return fail(dir.string() + ": cannot sync the directory", false);
  return true;
}

int remove_stale_temporaries(const std::string& path) {
  const std::filesystem::path p(path);
  const std::filesystem::path dir = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
  const std::string prefix = p.filename().string() + ".tmp.";
  std::error_code ec;
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    long pid = 0;
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size();
    const auto [end, err] = std::from_chars(first, last, pid);
    if (err != std::errc{} || end != last || pid <= 0) continue;
    // A save still under way in a live process is left alone.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    if (std::filesystem::remove(entry.path(), ec)) ++removed;
  }
  return removed;
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
