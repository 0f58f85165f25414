#pragma once
// A minimal streaming JSON writer for the benchmark's output file.
#include <string>
#include <vector>

namespace gpucomm::bench {

class JsonWriter {
 public:
  JsonWriter& begin_object(const char* key = nullptr);
  JsonWriter& end_object();
  JsonWriter& begin_array(const char* key = nullptr);
  JsonWriter& end_array();
  JsonWriter& field(const char* key, const std::string& v);
  JsonWriter& field(const char* key, const char* v) { return field(key, std::string(v)); }
  JsonWriter& field(const char* key, double v);
  JsonWriter& field(const char* key, long long v);
  JsonWriter& field(const char* key, bool v);
  JsonWriter& null_field(const char* key);
  JsonWriter& value(double v);
  const std::string& text() const { return out_; }

 private:
  void key(const char* k);
  void comma();
  std::string out_;
  std::vector<bool> first_{true};
};

std::string json_escape(const std::string& s);

}  // namespace gpucomm::bench
