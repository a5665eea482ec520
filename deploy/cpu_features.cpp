#include "deploy/cpu_features.h"

namespace tessel::deploy {

namespace {

struct Feature {
  const char *name;
  bool (*supported)();
};

// __builtin_cpu_supports only takes a string literal, so each name gets its own call.
#define TESSEL_CPU_FEATURE(literal) Feature{literal, [] { return __builtin_cpu_supports(literal) != 0; }}

#if defined(__x86_64__) || defined(__i386__)
const Feature kFeatures[] = {
    TESSEL_CPU_FEATURE("cmov"),         TESSEL_CPU_FEATURE("mmx"),          TESSEL_CPU_FEATURE("popcnt"),
    TESSEL_CPU_FEATURE("sse"),          TESSEL_CPU_FEATURE("sse2"),         TESSEL_CPU_FEATURE("sse3"),
    TESSEL_CPU_FEATURE("ssse3"),        TESSEL_CPU_FEATURE("sse4.1"),       TESSEL_CPU_FEATURE("sse4.2"),
    TESSEL_CPU_FEATURE("avx"),          TESSEL_CPU_FEATURE("avx2"),         TESSEL_CPU_FEATURE("sse4a"),
    TESSEL_CPU_FEATURE("fma4"),         TESSEL_CPU_FEATURE("xop"),          TESSEL_CPU_FEATURE("fma"),
    TESSEL_CPU_FEATURE("bmi"),          TESSEL_CPU_FEATURE("bmi2"),         TESSEL_CPU_FEATURE("aes"),
    TESSEL_CPU_FEATURE("pclmul"),       TESSEL_CPU_FEATURE("avx512f"),      TESSEL_CPU_FEATURE("avx512vl"),
    TESSEL_CPU_FEATURE("avx512bw"),     TESSEL_CPU_FEATURE("avx512dq"),     TESSEL_CPU_FEATURE("avx512cd"),
    TESSEL_CPU_FEATURE("avx512er"),     TESSEL_CPU_FEATURE("avx512pf"),     TESSEL_CPU_FEATURE("avx512vbmi"),
    TESSEL_CPU_FEATURE("avx512ifma"),   TESSEL_CPU_FEATURE("avx5124vnniw"), TESSEL_CPU_FEATURE("avx5124fmaps"),
    TESSEL_CPU_FEATURE("avx512vpopcntdq"), TESSEL_CPU_FEATURE("avx512vbmi2"), TESSEL_CPU_FEATURE("gfni"),
    TESSEL_CPU_FEATURE("vpclmulqdq"),   TESSEL_CPU_FEATURE("avx512vnni"),   TESSEL_CPU_FEATURE("avx512bitalg"),
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
    // Names GCC learned later (Halide's f16c, avxvnni and Sapphire Rapids features among them).
    TESSEL_CPU_FEATURE("avx512bf16"),   TESSEL_CPU_FEATURE("avx512vp2intersect"), TESSEL_CPU_FEATURE("f16c"),
    TESSEL_CPU_FEATURE("avxvnni"),      TESSEL_CPU_FEATURE("avx512fp16"),   TESSEL_CPU_FEATURE("movbe"),
    TESSEL_CPU_FEATURE("amx-tile"),     TESSEL_CPU_FEATURE("amx-int8"),     TESSEL_CPU_FEATURE("amx-bf16"),
    TESSEL_CPU_FEATURE("sha"),          TESSEL_CPU_FEATURE("lzcnt"),        TESSEL_CPU_FEATURE("adx"),
    TESSEL_CPU_FEATURE("rdrnd"),        TESSEL_CPU_FEATURE("rdseed"),       TESSEL_CPU_FEATURE("xsave"),
    TESSEL_CPU_FEATURE("osxsave"),      TESSEL_CPU_FEATURE("x86-64"),       TESSEL_CPU_FEATURE("x86-64-v2"),
    TESSEL_CPU_FEATURE("x86-64-v3"),    TESSEL_CPU_FEATURE("x86-64-v4"),
#endif
};
#else
// Not an x86 build: no feature can be checked, so every name is unknown (and refused).
const Feature kFeatures[] = {{"", nullptr}};
#endif

#undef TESSEL_CPU_FEATURE

std::string join(const std::vector<std::string> &names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

}  // namespace

std::optional<bool> cpu_supports(const std::string &name) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();  // needed only before main(), harmless after
#endif
  for (const Feature &f : kFeatures)
    if (f.supported && name == f.name) return f.supported();
  return std::nullopt;
}

std::vector<std::string> known_cpu_features() {
  std::vector<std::string> names;
  for (const Feature &f : kFeatures)
    if (f.supported) names.push_back(f.name);
  return names;
}

Result<void> check_cpu_features(const std::vector<std::string> &names) {
  std::vector<std::string> unknown, missing;
  for (const std::string &name : names) {
    std::optional<bool> has = cpu_supports(name);
    if (!has) unknown.push_back(name);
    else if (!*has) missing.push_back(name);
  }
  if (unknown.empty() && missing.empty()) return {};
  std::string message;
  if (!missing.empty()) message = "this CPU lacks required feature" + std::string(missing.size() > 1 ? "s " : " ") + join(missing);
  if (!unknown.empty()) {
    if (!message.empty()) message += "; ";
    message += "unknown CPU feature name" + std::string(unknown.size() > 1 ? "s " : " ") + join(unknown) +
               " (not a __builtin_cpu_supports name this runtime knows)";
  }
  return make_error(ErrorKind::Unsupported, message);
}

}  // namespace tessel::deploy
