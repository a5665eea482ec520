#pragma once
// A minimal streaming JSON writer for --json output (no dependency needed for this much).
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace tessel {

class JsonWriter {
 public:
  JsonWriter &begin_object() { open('{'); return *this; }
  JsonWriter &end_object() { return close('}'); }
  JsonWriter &begin_array() { open('['); return *this; }
  JsonWriter &end_array() { return close(']'); }
  JsonWriter &key(const std::string &k) {
    separate();
    quote(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter &value(const std::string &v) { separate(); quote(v); return *this; }
  JsonWriter &value(const char *v) { return value(std::string(v)); }
  JsonWriter &value(int64_t v) { separate(); out_ += std::to_string(v); return *this; }
  JsonWriter &value(double v) {
    separate();
    if (!std::isfinite(v)) {  // JSON has no NaN or infinity
      out_ += "null";
      return *this;
    }
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", v);
    out_ += buf;
    return *this;
  }
  const std::string &str() const { return out_; }

 private:
  void open(char c) { separate(); out_ += c; first_.push_back(true); }
  JsonWriter &close(char c) { out_ += c; first_.pop_back(); return *this; }
  void separate() {
    if (after_key_) { after_key_ = false; return; }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  void quote(const std::string &s) {
    out_ += '"';
    for (char c : s) {
      if (c == '"' || c == '\\') { out_ += '\\'; out_ += c; }
      else if (static_cast<unsigned char>(c) < 0x20) { char b[8]; std::snprintf(b, sizeof(b), "\\u%04x", c); out_ += b; }
      else out_ += c;
    }
    out_ += '"';
  }
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace tessel
